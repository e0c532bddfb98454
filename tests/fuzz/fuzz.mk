# libFuzzer targets for the pure parsers; included by the top-level
# Makefile. Uses its $(BUILD) (default build), and its $(CSTD)/$(WARN)
# when set. To use alone from the top directory:
#   make -f Makefile -f tests/fuzz/fuzz.mk fuzz-build
#
#   make fuzz-build   build the targets into $(BUILD)/fuzz/
#   make fuzz         build, then run each target FUZZ_SECONDS (60) on a
#                     copy of its seed corpus (tests/fuzz/run)
#   make fuzz-seeds   regenerate tests/fuzz/corpus/ from gen_seeds.c
#
# Every object is compiled here again, with clang and the fuzzer's
# coverage instrumentation plus ASan/UBSan, into $(BUILD)/fuzz/obj/, so
# the sanitizers see inside the parsers and the normal build is left alone.

ifndef DBK_FUZZ_MK_INCLUDED
DBK_FUZZ_MK_INCLUDED := 1

BUILD        ?= build
FUZZ_DIR      = tests/fuzz
FUZZ_OUT      = $(BUILD)/fuzz
FUZZ_OBJDIR   = $(FUZZ_OUT)/obj
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_ARGS    ?=

CSTD         ?= -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN         ?= -Wall -Wextra -Werror
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = $(CSTD) $(WARN) -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
                -Iagent -Icontrib/stub -I$(FUZZ_DIR) -MMD -MP
FUZZ_LDFLAGS  = $(FUZZ_SAN) -fsanitize=fuzzer
FUZZ_LIBS     = -lcjson -lm

FUZZ_TARGETS  = fuzz_spop_frame fuzz_notify fuzz_completion fuzz_runtime \
                fuzz_estimate fuzz_stub_http fuzz_vllm_metrics \
                fuzz_tune fuzz_prefix_key
FUZZ_BINS     = $(FUZZ_TARGETS:%=$(FUZZ_OUT)/%)

# The sources each target needs, compiled instrumented.
FUZZ_SRC_fuzz_spop_frame = agent/spop.c
FUZZ_SRC_fuzz_notify     = agent/spop.c agent/route.c agent/balancer.c agent/leases.c \
                           agent/predict.c agent/prefix_index.c agent/prefix_key.c \
                           agent/estimate.c agent/log.c
FUZZ_SRC_fuzz_completion = agent/completion.c
FUZZ_SRC_fuzz_runtime    = agent/runtime.c agent/strbuf.c
FUZZ_SRC_fuzz_estimate   = agent/estimate.c agent/balancer.c agent/leases.c
FUZZ_SRC_fuzz_vllm_metrics = agent/vllm_metrics.c agent/strbuf.c
FUZZ_SRC_fuzz_prefix_key = agent/prefix_key.c agent/predict.c agent/prefix_index.c
FUZZ_SRC_fuzz_stub_http  = contrib/stub/http.c contrib/stub/api.c contrib/stub/buf.c \
                           contrib/stub/prefix_cache.c
FUZZ_SRC_fuzz_tune       = agent/tune.c agent/numparse.c agent/balancer.c agent/leases.c \
                           agent/strbuf.c agent/estimate.c

.PHONY: fuzz fuzz-build fuzz-seeds fuzz-regress

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@BUILD=$(BUILD) $(FUZZ_DIR)/run --no-build $(FUZZ_ARGS) $(FUZZ_SECONDS)

# Replays tests/fuzz/crashes/ (inputs that once failed) through the targets.
fuzz-regress: fuzz-build
	@BUILD=$(BUILD) $(FUZZ_DIR)/run --no-build --regress

$(FUZZ_OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# One link rule per target, from its own object and its sources' objects.
define FUZZ_TARGET_RULE
$(FUZZ_OUT)/$(1): $(FUZZ_OBJDIR)/$(FUZZ_DIR)/$(1).o $(FUZZ_SRC_$(1):%.c=$(FUZZ_OBJDIR)/%.o)
	$$(FUZZ_CC) $$(FUZZ_LDFLAGS) -o $$@ $$^ $$(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_TARGET_RULE,$(t))))

# The seed generator is an ordinary program over the agent's writer.
$(FUZZ_OUT)/gen_seeds: $(FUZZ_DIR)/gen_seeds.c agent/spop.c agent/spop.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -g -O1 -Iagent -o $@ $(FUZZ_DIR)/gen_seeds.c agent/spop.c

fuzz-seeds: $(FUZZ_OUT)/gen_seeds
	$(FUZZ_OUT)/gen_seeds $(FUZZ_DIR)/corpus tests/unit/fixtures

-include $(shell find $(FUZZ_OBJDIR) -name '*.d' 2>/dev/null)

endif
