# dbucket: an HAProxy SPOE agent that balances vLLM fleets by request length.
#
#   make            build everything into build/
#   make test       install missing packages, build, run unit + e2e tests
#   make sanitize   the same tests with ASan + UBSan binaries (build/san/)
#   make fuzz       libFuzzer on every parser (FUZZ_SECONDS=60 each)
#   make demo       stub vLLM servers + agent + HAProxy, requests routed
#                   (KEEP=1 leaves it running until Ctrl-C)
#   make bench      routing policies live on trace slices (BENCH_ARGS=--quick)
#   make install   PREFIX=/usr/local DESTDIR= (binaries, man pages, unit)
#   make clean

# The included contrib/*.mk files define targets too: `make` alone must
# still mean `make all`.
.DEFAULT_GOAL := all

CC       ?= cc
BUILD    ?= build
CSTD      = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN      = -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes
OPT      ?= -O2 -g
SANFLAGS ?=
CFLAGS   += $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iagent -Itests/unit -MMD -MP
LDFLAGS  += $(SANFLAGS)
LDLIBS_EV   = -lev
LDLIBS_JSON = -lcjson
LDLIBS_M    = -lm
LDLIBS_CURL := $(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl)

# Pure modules: no sockets, no clock, no globals.
CORE_SRC  = agent/spop.c agent/balancer.c agent/leases.c agent/estimate.c agent/completion.c \
            agent/histo.c agent/strbuf.c agent/runtime.c agent/tune.c agent/numparse.c \
            agent/vllm_metrics.c
AGENT_SRC = agent/main.c agent/agent.c agent/report.c agent/config.c agent/log.c agent/net.c \
            agent/spoa.c agent/route.c agent/events.c agent/admin.c agent/listener.c \
            agent/runtime_client.c agent/sync.c agent/scrape.c agent/scrape_report.c agent/policy.c \
            contrib/stub/http.c

# The ttft policy (predict.h): the predictor, its prefix index and the
# body sample's prefix keys; pure, linked by the agent and the simulator.
POLICY_SRC = agent/predict.c agent/prefix_index.c agent/prefix_key.c
POLICY_OBJ = $(POLICY_SRC:%.c=$(BUILD)/%.o)
CORE_SRC  += $(POLICY_SRC)
POLICY_TESTS = $(BUILD)/test_predict $(BUILD)/test_prefix_index $(BUILD)/test_prefix_key

CORE_OBJ  = $(CORE_SRC:%.c=$(BUILD)/%.o)
AGENT_OBJ = $(AGENT_SRC:%.c=$(BUILD)/%.o)

BINS  = $(BUILD)/dbucket-spoa $(BUILD)/dbucket-parity
TESTS = $(BUILD)/test_spop $(BUILD)/test_balancer $(BUILD)/test_estimate \
        $(BUILD)/test_config $(BUILD)/test_route $(BUILD)/test_spoa \
        $(BUILD)/test_completion $(BUILD)/test_runtime $(BUILD)/test_tune \
        $(BUILD)/test_numparse $(BUILD)/test_vllm_metrics $(BUILD)/test_scrape \
        $(POLICY_TESTS)
# Tools the e2e tests drive (not run by tests/run as unit tests).
E2E_TOOLS = $(BUILD)/dbk-test-flood

include contrib/stub/stub.mk
include contrib/bench/bench.mk
include contrib/sim/sim.mk
include contrib/spopbench/spopbench.mk
include contrib/launcher/launcher.mk
include contrib/install.mk
include contrib/package.mk
include tests/fuzz/fuzz.mk

.PHONY: all deps test unit e2e sanitize demo bench clean
all: $(BINS) $(TESTS) $(STUB_BINS) $(STUB_TESTS) $(BENCH_BINS) $(BENCH_TESTS) \
     $(SIM_BINS) $(SIM_TESTS) $(SPOPBENCH_BINS) $(SPOPBENCH_TESTS) \
     $(LAUNCHER_BINS) $(LAUNCHER_TESTS) $(E2E_TOOLS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/dbucket-spoa: $(AGENT_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_CURL) $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/dbucket-parity: $(BUILD)/agent/parity.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_spop: $(BUILD)/tests/unit/test_spop.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_balancer: $(BUILD)/tests/unit/test_balancer.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_estimate: $(BUILD)/tests/unit/test_estimate.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_completion: $(BUILD)/tests/unit/test_completion.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_runtime: $(BUILD)/tests/unit/test_runtime.o $(BUILD)/agent/runtime_client.o $(BUILD)/agent/net.o \
		$(BUILD)/agent/log.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_tune: $(BUILD)/tests/unit/test_tune.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_predict: $(BUILD)/tests/unit/test_predict.o $(POLICY_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)
$(BUILD)/test_prefix_index: $(BUILD)/tests/unit/test_prefix_index.o $(BUILD)/agent/prefix_index.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/test_prefix_key: $(BUILD)/tests/unit/test_prefix_key.o $(BUILD)/agent/prefix_key.o
	$(CC) $(LDFLAGS) -o $@ $^

$(BUILD)/test_numparse: $(BUILD)/tests/unit/test_numparse.o $(BUILD)/agent/numparse.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)
$(BUILD)/test_vllm_metrics: $(BUILD)/tests/unit/test_vllm_metrics.o $(BUILD)/agent/vllm_metrics.o \
		$(BUILD)/agent/strbuf.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_scrape: $(BUILD)/tests/unit/test_scrape.o $(BUILD)/agent/scrape.o $(BUILD)/agent/scrape_report.o \
		$(BUILD)/agent/net.o $(BUILD)/agent/log.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_CURL) $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_config: $(BUILD)/tests/unit/test_config.o $(BUILD)/agent/config.o $(BUILD)/agent/log.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
$(BUILD)/test_route: $(BUILD)/tests/unit/test_route.o $(BUILD)/tests/unit/frames.o $(BUILD)/agent/route.o \
		$(BUILD)/agent/policy.o $(BUILD)/agent/log.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_spoa: $(BUILD)/tests/unit/test_spoa.o $(BUILD)/tests/unit/frames.o $(BUILD)/agent/spoa.o $(BUILD)/agent/net.o $(BUILD)/agent/listener.o \
		$(BUILD)/agent/route.o $(BUILD)/agent/log.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/dbk-test-flood: $(BUILD)/tests/e2e/flood.o $(BUILD)/tests/unit/frames.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

deps:
	@contrib/install-deps.sh

test: deps
	@$(MAKE) --no-print-directory all
	@tests/run $(BUILD)

unit: all
	@tests/run --unit-only $(BUILD)

sanitize: deps
	@$(MAKE) --no-print-directory all BUILD=build/san CC=clang OPT="-O1 -g" \
		SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	@tests/run build/san

demo: deps
	@$(MAKE) --no-print-directory all
	@contrib/demo.sh $(if $(KEEP),--keep)

bench: deps
	@$(MAKE) --no-print-directory all
	@contrib/bench-policies.sh $(BENCH_ARGS)

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
