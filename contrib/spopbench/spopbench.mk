# dbucket-null-agent (an SPOP agent that decides nothing: the ceiling of
# the overhead benchmark), dbucket-spop-load (an SPOP load client playing
# HAProxy toward an agent) and their unit test; included by the top-level
# Makefile. Uses its $(BUILD), $(CC), $(CFLAGS), $(LDFLAGS) and its pattern
# rule $(BUILD)/%.o: %.c. To build alone from the top directory:
#   make -f Makefile -f contrib/spopbench/spopbench.mk build/dbucket-null-agent build/dbucket-spop-load
#
# Both reuse the agent's own SPOP codec (agent/spop.c), so the frames they
# exchange are the ones dbucket-spoa reads and writes; the null agent also
# reuses its listeners (agent/listener.c, agent/net.c, agent/log.c).

SPOPBENCH_DIR = contrib/spopbench
LDLIBS_EV    ?= -lev
LDLIBS_JSON  ?= -lcjson
LDLIBS_M     ?= -lm

SPOPBENCH_CFLAGS = -I$(SPOPBENCH_DIR)
$(BUILD)/$(SPOPBENCH_DIR)/%.o: CFLAGS += $(SPOPBENCH_CFLAGS)

# Pure: frames as HAProxy writes them, checks of the agent's answers,
# completion lines, latency histogram.
SPOPBENCH_PURE_OBJ = $(BUILD)/$(SPOPBENCH_DIR)/spb.o $(BUILD)/agent/spop.o
SPOPBENCH_NET_OBJ  = $(BUILD)/agent/listener.o $(BUILD)/agent/net.o $(BUILD)/agent/log.o

SPOPBENCH_BINS  = $(BUILD)/dbucket-null-agent $(BUILD)/dbucket-spop-load
SPOPBENCH_TESTS = $(BUILD)/test_spopbench

$(BUILD)/dbucket-null-agent: $(BUILD)/$(SPOPBENCH_DIR)/null_agent.o $(SPOPBENCH_NET_OBJ) \
		$(BUILD)/agent/spop.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV)

$(BUILD)/dbucket-spop-load: $(BUILD)/$(SPOPBENCH_DIR)/load.o $(SPOPBENCH_PURE_OBJ) \
		$(BUILD)/agent/net.o $(BUILD)/agent/numparse.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_M)

# Checked against the agent's own decoders: HELLO, NOTIFY, the body's
# JSON (estimate.c) and completion lines.
$(BUILD)/test_spopbench: $(BUILD)/$(SPOPBENCH_DIR)/test_spopbench.o $(SPOPBENCH_PURE_OBJ) \
		$(BUILD)/agent/completion.o $(BUILD)/agent/estimate.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
