# The launcher `dbucket` (the reference proxy's command line in front of
# HAProxy and dbucket-spoa) and its unit tests; included by the top-level
# Makefile. Uses its $(BUILD), $(CC), $(CFLAGS), $(LDFLAGS) and its pattern
# rule $(BUILD)/%.o: %.c. To build alone from the top directory:
#   make -f Makefile -f contrib/launcher/launcher.mk build/dbucket
#
# No library beyond libc: the launcher only parses, writes files and
# supervises two processes (it takes agent/net.c from the shared layer to
# find a free loopback port for the completion lines).

LAUNCHER_DIR = contrib/launcher

# Pure modules (no I/O beyond the FILE they are given, no globals).
LAUNCHER_CORE_OBJ = $(BUILD)/$(LAUNCHER_DIR)/flags.o $(BUILD)/$(LAUNCHER_DIR)/pyval.o \
                    $(BUILD)/$(LAUNCHER_DIR)/render.o
LAUNCHER_OBJ      = $(BUILD)/$(LAUNCHER_DIR)/main.o $(BUILD)/$(LAUNCHER_DIR)/supervise.o \
                    $(BUILD)/agent/net.o $(LAUNCHER_CORE_OBJ)

LAUNCHER_BINS  = $(BUILD)/dbucket
LAUNCHER_TESTS = $(BUILD)/test_launcher_flags $(BUILD)/test_launcher_render

$(BUILD)/dbucket: $(LAUNCHER_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^

$(BUILD)/test_launcher_flags: $(BUILD)/$(LAUNCHER_DIR)/test_flags.o $(LAUNCHER_CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

$(BUILD)/test_launcher_render: $(BUILD)/$(LAUNCHER_DIR)/test_render.o $(LAUNCHER_CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ -lm
