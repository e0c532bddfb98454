# dbucket: an HAProxy SPOE agent that balances vLLM fleets by request length.
#
# `make help` prints the lines below that start with "make".
#   make              build everything into build/ (BUILD=dir elsewhere)
#   make help         this list
#   make unit         build, run the unit tests
#   make e2e          build, run the end-to-end tests (bats, HAProxy on loopback)
#   make test         install missing packages, build, run unit + e2e tests
#   make sanitize     the same tests with ASan + UBSan binaries (build/san/)
#   make fuzz         libFuzzer on every parser (FUZZ_SECONDS=60 each)
#   make fuzz-build   build the fuzz targets only (tests/fuzz/fuzz.mk)
#   make demo         stub vLLM servers + agent + HAProxy, requests routed (KEEP=1 stays up)
#   make bench        routing policies live on trace slices (BENCH_ARGS=--quick)
#   make install      binaries, man pages, unit (PREFIX=/usr/local DESTDIR=)
#   make format       clang-format every C file in place (.clang-format)
#   make deb          the Debian package into build/deb/ (contrib/package.mk)
#   make rules-test   promtool on the Prometheus alert rules
#   make clean        remove build/

# The included .mk files define targets too: `make` alone must still mean
# `make all`.
.DEFAULT_GOAL := all

CC       ?= cc
AR       ?= ar
BUILD    ?= build
CSTD      = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN      = -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes
OPT      ?= -O2 -g
SANFLAGS ?=
# Headers are named from these roots: "lib/net.h" (the shared layer),
# "model/engine.h" (the model library), "balancer.h" (the agent),
# "stub/api.h" (a program's module, from a test), "check.h" (the
# unit-test macros).
CFLAGS   += $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iagent -Icontrib -Itests/unit -MMD -MP
# Every program links the same -l list; --as-needed keeps the libraries a
# program does not use out of its dependencies (zlib: the session hint's
# CRC-32, agent/session_hint.c, wherever the agent's routing is linked).
LDFLAGS  += $(SANFLAGS) -Wl,--as-needed
LDLIBS   += -lev -lcjson -lz -lm

# The layers, one static library each (see CONTRIBUTING.md):
#   libdbk.a          agent/lib/: sockets, listeners, buffer, list, HTTP/1,
#                     numbers, logging, clock, the SPOP codec and server
#   libdbk-model.a    agent/model/: the pure models the programs share (the
#                     vLLM engine and its prefix cache, GPU profiles, traces,
#                     the bench's prompts)
#   libdbk-agent.a    agent/: the balancer, policies and the agent's modules
#   libdbk-<prog>.a   contrib/<prog>/: one program's modules
# A program is its main file over its folder's library and the ones below
# it (one line in "The programs" below); a unit test is test_*.c over the
# same. Adding a module to a folder needs no change here.
# Objects reached through pattern rules (tests' mains) are intermediate
# to make, which would delete them after each build and so rebuild them
# every time: keep them.
.SECONDARY:

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

LINK = $(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) \
       -Wl,--start-group $(filter %.a,$^) -Wl,--end-group $(LDLIBS)

# $(call dbk_objs,DIR,MAINS[,OBJDIR]): the objects (in OBJDIR, default
# $(BUILD)) of DIR's modules, its mains and tests left out. The fuzz
# build (tests/fuzz/fuzz.mk) makes the same libraries in its own OBJDIR.
dbk_objs = $(patsubst %.c,$(or $(3),$(BUILD))/%.o,$(filter-out $(2) $(1)/test_%.c,$(wildcard $(1)/*.c)))

LIBDBK       = $(BUILD)/libdbk.a
LIBDBK_MODEL = $(BUILD)/libdbk-model.a
LIBDBK_AGENT = $(BUILD)/libdbk-agent.a
$(LIBDBK): $(call dbk_objs,agent/lib)
$(LIBDBK_MODEL): $(call dbk_objs,agent/model)
AGENT_MAINS  = agent/main.c agent/parity.c
$(LIBDBK_AGENT): $(call dbk_objs,agent,$(AGENT_MAINS))

# $(call dbk_bin,NAME,MAIN,LIBS): the program $(BUILD)/NAME, MAIN.c's
# object over LIBS.
define dbk_bin
BINS += $$(BUILD)/$(1)
$$(BUILD)/$(1): $$(BUILD)/$(2).o $(3)
	$$(LINK)
endef

# $(call dbk_program,NAME,DIR,LIBS,BIN:MAIN...): libdbk-NAME.a from DIR's
# modules; each BIN from DIR/MAIN.c over it and LIBS; $(BUILD)/test_NAME_X
# from DIR/test_X.c over the same.
define dbk_program
$(1)_MAINS = $(foreach b,$(4),$(2)/$(word 2,$(subst :, ,$(b))).c)
$(1)_LIBS  = $$(BUILD)/libdbk-$(1).a $(3)
$(1)_TESTS = $$(patsubst $(2)/test_%.c,$$(BUILD)/test_$(1)_%,$$(wildcard $(2)/test_*.c))
$$(BUILD)/libdbk-$(1).a: $$(call dbk_objs,$(2),$$($(1)_MAINS))
$$(BUILD)/test_$(1)_%: $$(BUILD)/$(2)/test_%.o $$($(1)_LIBS)
	$$(LINK)
TESTS += $$($(1)_TESTS)
$(foreach b,$(4),$$(eval $$(call dbk_bin,$(word 1,$(subst :, ,$(b))),$(2)/$(word 2,$(subst :, ,$(b))),$$($(1)_LIBS))))
endef

# The programs: adding one is one line here.
BINS       =
TESTS      =
AGENT_LIBS = $(LIBDBK_AGENT) $(LIBDBK_MODEL) $(LIBDBK)
$(eval $(call dbk_bin,dbucket-spoa,agent/main,$(AGENT_LIBS)))
# libcurl (https scrapes: agent/lib/curl_*.c) only where the scraper is
# linked, so no other program depends on it.
$(BUILD)/dbucket-spoa $(BUILD)/test_scrape: LDLIBS += -lcurl
$(eval $(call dbk_bin,dbucket-parity,agent/parity,$(AGENT_LIBS)))
$(eval $(call dbk_program,stub,contrib/stub,$(LIBDBK_MODEL) $(LIBDBK),vllm-stub:main))
$(eval $(call dbk_program,bench,contrib/bench,$(LIBDBK_MODEL) $(LIBDBK),dbucket-bench:main))
$(eval $(call dbk_program,sim,contrib/sim,$(AGENT_LIBS),dbucket-sim:main))
$(eval $(call dbk_program,spopbench,contrib/spopbench,$(AGENT_LIBS),dbucket-null-agent:null_agent dbucket-spop-load:load))
$(eval $(call dbk_program,launcher,contrib/launcher,$(LIBDBK),dbucket:main))

# The unit tests of agent/, agent/lib/ and agent/model/ (tests/unit/test_X.c
# -> test_X) share frames.o; one that checks programs against each other
# names their libraries below.
UNIT_TESTS = $(patsubst tests/unit/test_%.c,$(BUILD)/test_%,$(wildcard tests/unit/test_*.c))
TESTS     += $(UNIT_TESTS)
$(BUILD)/test_%: $(BUILD)/tests/unit/test_%.o $(BUILD)/tests/unit/frames.o $(AGENT_LIBS)
	$(LINK)
# The simulator keys a prompt as the stub does.
$(BUILD)/test_prompt_keys: $(BUILD)/libdbk-sim.a $(BUILD)/libdbk-stub.a

# Tools the e2e tests drive (not run by tests/run as unit tests).
E2E_TOOLS = $(BUILD)/dbk-test-flood
$(BUILD)/dbk-test-flood: $(BUILD)/tests/e2e/flood.o $(BUILD)/tests/unit/frames.o $(AGENT_LIBS)
	$(LINK)

include contrib/install.mk
include contrib/package.mk
include tests/fuzz/fuzz.mk

.PHONY: all help deps test unit e2e sanitize demo bench format clean
all: $(BINS) $(TESTS) $(E2E_TOOLS)

deps:
	@contrib/install-deps.sh

test: deps
	@$(MAKE) --no-print-directory all
	@tests/run $(BUILD)

unit: all
	@tests/run --unit-only $(BUILD)

e2e: all
	@tests/run --e2e-only $(BUILD)

help:
	@sed -n 's/^#   make/make/p' $(firstword $(MAKEFILE_LIST))

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

# The tree is kept formatted: run before committing C. Files not yet
# added are formatted too (the check in tests/run reads every tracked
# one, so a new file committed unformatted fails it).
format:
	git ls-files --cached --others --exclude-standard '*.c' '*.h' | xargs clang-format -i --style=file

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
