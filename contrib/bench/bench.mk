# dbucket-bench (trace replay load generator) and its unit tests; included
# by the top-level Makefile. Uses its $(BUILD), $(CC), $(CFLAGS), $(LDFLAGS)
# and its pattern rule $(BUILD)/%.o: %.c. To build alone from the top
# directory:
#   make -f Makefile -f contrib/bench/bench.mk build/dbucket-bench

BENCH_DIR    = contrib/bench
LDLIBS_EV   ?= -lev
LDLIBS_JSON ?= -lcjson
LDLIBS_M    ?= -lm

# Pure modules (no sockets, no clock, no globals): trace readers, metrics,
# HTTP response and SSE decoding, stream interpretation, request building,
# reports. buf.o is the stub's growable buffer.
BENCH_BUF_OBJ    = $(BUILD)/contrib/stub/buf.o
BENCH_TRACE_OBJ  = $(BUILD)/$(BENCH_DIR)/trace.o
BENCH_STATS_OBJ  = $(BUILD)/$(BENCH_DIR)/stats.o
BENCH_STREAM_OBJ = $(BUILD)/$(BENCH_DIR)/resp.o $(BUILD)/$(BENCH_DIR)/sse.o \
                   $(BUILD)/$(BENCH_DIR)/stream.o $(BENCH_BUF_OBJ)
BENCH_REQ_OBJ    = $(BUILD)/$(BENCH_DIR)/request.o $(BENCH_BUF_OBJ)
BENCH_REPORT_OBJ = $(BUILD)/$(BENCH_DIR)/report.o $(BENCH_STATS_OBJ)
# The command line's numbers are read by the agent's own numparse.o.
BENCH_MAIN_OBJ   = $(BUILD)/$(BENCH_DIR)/main.o $(BUILD)/$(BENCH_DIR)/client.o \
                   $(BUILD)/agent/numparse.o

BENCH_BINS  = $(BUILD)/dbucket-bench
BENCH_TESTS = $(BUILD)/test_bench_trace $(BUILD)/test_bench_stats \
              $(BUILD)/test_bench_stream $(BUILD)/test_bench_request

$(BUILD)/dbucket-bench: $(BENCH_MAIN_OBJ) $(BENCH_TRACE_OBJ) $(BENCH_REPORT_OBJ) \
		$(BENCH_STREAM_OBJ) $(BENCH_REQ_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EV) $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_bench_trace: $(BUILD)/$(BENCH_DIR)/test_trace.o $(BENCH_TRACE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_bench_stats: $(BUILD)/$(BENCH_DIR)/test_stats.o $(BENCH_REPORT_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_bench_stream: $(BUILD)/$(BENCH_DIR)/test_stream.o $(BENCH_STREAM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)

$(BUILD)/test_bench_request: $(BUILD)/$(BENCH_DIR)/test_request.o $(BENCH_REQ_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_JSON) $(LDLIBS_M)
