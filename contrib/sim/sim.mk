# Cluster simulator and its unit tests; included by the top-level Makefile.
# Uses its $(BUILD), $(CC), $(CFLAGS), $(LDFLAGS) and its pattern rule
# $(BUILD)/%.o: %.c. To build alone from the top directory:
#   make -f Makefile -f contrib/sim/sim.mk build/dbucket-sim
#
# The balancer, the engine model and the trace reader are linked from
# their own objects (agent/balancer.o, agent/leases.o, agent/numparse.o,
# contrib/stub/engine.o, engine_config.o, handles.o and prefix_cache.o,
# contrib/bench/trace.o, and contrib/bench/request.o, whose prompt text the
# simulator keys as the stub does): one module each, shared with the
# agent, the stub and dbucket-bench, never copied.

SIM_DIR      = contrib/sim
LDLIBS_JSON ?= -lcjson
LDLIBS_M    ?= -lm

SIM_SHARED_OBJ = $(BUILD)/agent/balancer.o $(BUILD)/agent/leases.o $(BUILD)/agent/numparse.o \
                 $(BUILD)/contrib/stub/engine.o $(BUILD)/contrib/stub/engine_config.o \
                 $(BUILD)/contrib/stub/handles.o $(BUILD)/contrib/stub/prefix_cache.o \
                 $(BUILD)/contrib/bench/trace.o $(BUILD)/contrib/bench/request.o \
                 $(BUILD)/contrib/stub/buf.o
# Pure modules (no I/O, no clock, no globals).
SIM_CORE_OBJ = $(addprefix $(BUILD)/$(SIM_DIR)/, events.o metrics.o \
                 sim.o policy.o policy_bal.o policy_clairvoyant.o predict.o \
                 u64map.o snapshot.o prompt.o radix.o blockindex.o slo.o \
                 policy_cache_aware.o policy_p2.o policy_chash.o policy_llmd.o \
                 policy_prefixaware.o)
SIM_OBJ      = $(SIM_CORE_OBJ) $(BUILD)/$(SIM_DIR)/report.o $(SIM_SHARED_OBJ)

SIM_BINS  = $(BUILD)/dbucket-sim
SIM_TESTS = $(BUILD)/test_sim_events $(BUILD)/test_sim_metrics \
            $(BUILD)/test_sim_predict $(BUILD)/test_sim_cluster $(BUILD)/test_sim_cache \
            $(BUILD)/test_sim_routers $(BUILD)/test_sim_peers

$(BUILD)/dbucket-sim: $(BUILD)/$(SIM_DIR)/main.o $(BUILD)/$(SIM_DIR)/opts.o $(SIM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_sim_events: $(BUILD)/$(SIM_DIR)/test_sim_events.o $(BUILD)/$(SIM_DIR)/events.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_sim_metrics: $(BUILD)/$(SIM_DIR)/test_sim_metrics.o $(BUILD)/$(SIM_DIR)/metrics.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_sim_predict: $(BUILD)/$(SIM_DIR)/test_sim_predict.o $(BUILD)/$(SIM_DIR)/predict.o \
		$(BUILD)/contrib/stub/engine.o $(BUILD)/contrib/stub/engine_config.o \
		$(BUILD)/contrib/stub/handles.o $(BUILD)/contrib/stub/prefix_cache.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_sim_cluster: $(BUILD)/$(SIM_DIR)/test_sim_cluster.o $(SIM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_sim_cache: $(BUILD)/$(SIM_DIR)/test_sim_cache.o $(SIM_OBJ) \
		$(BUILD)/contrib/stub/api.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_sim_routers: $(BUILD)/$(SIM_DIR)/test_sim_routers.o $(SIM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_sim_peers: $(BUILD)/$(SIM_DIR)/test_sim_peers.o $(SIM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
