# vLLM stub server and its unit tests; included by the top-level Makefile.
# Uses its $(BUILD), $(CC), $(CFLAGS), $(LDFLAGS) and its pattern rule
# $(BUILD)/%.o: %.c. To build alone from the top directory:
#   make -f Makefile -f contrib/stub/stub.mk build/vllm-stub build/test_engine

STUB_DIR      = contrib/stub
LDLIBS_EV    ?= -lev
LDLIBS_JSON  ?= -lcjson
LDLIBS_M     ?= -lm

# Pure modules (no sockets, no clock, no globals): engine.c is also meant
# for the cluster simulator, http.c and api.c are fuzzable.
STUB_ENGINE_OBJ = $(BUILD)/$(STUB_DIR)/engine.o $(BUILD)/$(STUB_DIR)/engine_config.o \
                  $(BUILD)/$(STUB_DIR)/handles.o \
                  $(BUILD)/$(STUB_DIR)/prefix_cache.o
STUB_HTTP_OBJ   = $(BUILD)/$(STUB_DIR)/http.o
STUB_API_OBJ    = $(BUILD)/$(STUB_DIR)/api.o $(BUILD)/$(STUB_DIR)/buf.o \
                  $(BUILD)/$(STUB_DIR)/prefix_cache.o $(BUILD)/$(STUB_DIR)/prom.o
# The command line's numbers are read by the agent's own numparse.o.
STUB_MAIN_OBJ   = $(BUILD)/$(STUB_DIR)/main.o $(BUILD)/agent/numparse.o

STUB_BINS  = $(BUILD)/vllm-stub
STUB_TESTS = $(BUILD)/test_engine $(BUILD)/test_engine_cache $(BUILD)/test_prefix_cache $(BUILD)/test_http \
             $(BUILD)/test_api $(BUILD)/test_prom

$(BUILD)/vllm-stub: $(STUB_MAIN_OBJ) $(STUB_ENGINE_OBJ) $(STUB_HTTP_OBJ) $(STUB_API_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_engine: $(BUILD)/$(STUB_DIR)/test_engine.o $(STUB_ENGINE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_engine_cache: $(BUILD)/$(STUB_DIR)/test_engine_cache.o $(STUB_ENGINE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_prefix_cache: $(BUILD)/$(STUB_DIR)/test_prefix_cache.o \
		$(BUILD)/$(STUB_DIR)/prefix_cache.o
	$(CC) $(LDFLAGS) -o $@ $^

$(BUILD)/test_prom: $(BUILD)/$(STUB_DIR)/test_prom.o $(BUILD)/$(STUB_DIR)/prom.o \
		$(BUILD)/$(STUB_DIR)/buf.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_http: $(BUILD)/$(STUB_DIR)/test_http.o $(STUB_HTTP_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_M)

$(BUILD)/test_api: $(BUILD)/$(STUB_DIR)/test_api.o $(STUB_API_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
