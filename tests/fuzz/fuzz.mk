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
                -Iagent -Icontrib -Itests/unit -I$(FUZZ_DIR) -MMD -MP
FUZZ_LDFLAGS  = $(FUZZ_SAN) -fsanitize=fuzzer
FUZZ_LIBS     = -Wl,--as-needed -lev -lcjson -lz -lm

# Every tests/fuzz/fuzz_NAME.c is a target (tests/fuzz/run finds them alike).
FUZZ_TARGETS  = $(patsubst $(FUZZ_DIR)/%.c,%,$(wildcard $(FUZZ_DIR)/fuzz_*.c))
FUZZ_BINS     = $(FUZZ_TARGETS:%=$(FUZZ_OUT)/%)

# Every target links the instrumented shared layer, the model library,
# the agent's modules, the stub's, the benchmark's, the simulator's and
# the launcher's (the linker takes only what the target calls).
FUZZ_ARCHIVES = $(FUZZ_OBJDIR)/libdbk-sim.a $(FUZZ_OBJDIR)/libdbk-launcher.a \
                $(FUZZ_OBJDIR)/libdbk-bench.a $(FUZZ_OBJDIR)/libdbk-stub.a \
                $(FUZZ_OBJDIR)/libdbk-agent.a $(FUZZ_OBJDIR)/libdbk-model.a $(FUZZ_OBJDIR)/libdbk.a
# The Makefile's libraries, from the same folders less the same mains.
$(FUZZ_OBJDIR)/libdbk.a: $(call dbk_objs,agent/lib,,$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-model.a: $(call dbk_objs,agent/model,,$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-agent.a: $(call dbk_objs,agent,$(AGENT_MAINS),$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-stub.a: $(call dbk_objs,contrib/stub,$(stub_MAINS),$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-bench.a: $(call dbk_objs,contrib/bench,$(bench_MAINS),$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-sim.a: $(call dbk_objs,contrib/sim,$(sim_MAINS),$(FUZZ_OBJDIR))
$(FUZZ_OBJDIR)/libdbk-launcher.a: $(call dbk_objs,contrib/launcher,$(launcher_MAINS),$(FUZZ_OBJDIR))

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

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OBJDIR)/$(FUZZ_DIR)/fuzz_%.o $(FUZZ_ARCHIVES)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $< -Wl,--start-group $(FUZZ_ARCHIVES) -Wl,--end-group $(FUZZ_LIBS)

# The seed generator is an ordinary program over the agent's writer.
$(FUZZ_OUT)/gen_seeds: $(FUZZ_DIR)/gen_seeds.c agent/lib/spop_codec.c agent/lib/spop_codec.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -g -O1 -Iagent -o $@ $(FUZZ_DIR)/gen_seeds.c agent/lib/spop_codec.c

fuzz-seeds: $(FUZZ_OUT)/gen_seeds
	$(FUZZ_OUT)/gen_seeds $(FUZZ_DIR)/corpus tests/unit/fixtures

-include $(shell find $(FUZZ_OBJDIR) -name '*.d' -type f 2>/dev/null)

endif
