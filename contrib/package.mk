# What an operator installs and looks at; included by the top-level
# Makefile.
#
#   the status page   agent/status_page.html, compiled into dbucket-spoa
#                     as a C string (contrib/embed.awk) and served at GET /
#   the error files   haproxy/errors/*.http, compiled into the launcher the
#                     same way, which writes them beside its haproxy.cfg
#   make deb          the Debian package (debian/), built from a copy of the
#                     tree in a temporary directory, so the tree itself is
#                     never written to; the package and lintian's report
#                     land in build/deb/
#   make rules-test   promtool on the Prometheus alert rules (also run by
#                     tests/run as $(BUILD)/test_prometheus_rules)

# -- the status page (agent/status_page.c is in libdbk-agent.a with the
# other agent/ modules)
$(BUILD)/gen/status_page.inc: agent/status_page.html contrib/embed.awk
	@mkdir -p $(dir $@)
	awk -f contrib/embed.awk $< >$@.tmp && mv -f $@.tmp $@

# Its object in the build, and again in tests/fuzz/fuzz.mk's instrumented
# copy of libdbk-agent.a (compiled with FUZZ_CFLAGS).
STATUS_PAGE_OBJS = $(BUILD)/agent/status_page.o $(BUILD)/fuzz/obj/agent/status_page.o
$(STATUS_PAGE_OBJS): $(BUILD)/gen/status_page.inc
$(STATUS_PAGE_OBJS): CFLAGS += -I$(BUILD)/gen
$(STATUS_PAGE_OBJS): FUZZ_CFLAGS += -I$(BUILD)/gen

# -- the Prometheus rules' tests, as one more unit-test program
all: $(BUILD)/test_prometheus_rules

# A wrapper, so that the script finds its rules wherever BUILD is.
$(BUILD)/test_prometheus_rules: contrib/prometheus/test-rules.sh
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec "%s/%s" "$$@"\n' "$(CURDIR)" "$<" >$@.tmp
	chmod 0755 $@.tmp && mv -f $@.tmp $@

.PHONY: rules-test deb
rules-test: $(BUILD)/test_prometheus_rules
	@$(BUILD)/test_prometheus_rules

# -- the Debian package
DEB_DIR = $(BUILD)/deb

deb:
	@contrib/build-deb.sh $(DEB_DIR)

# -- HAProxy's own error answers (haproxy/errors/*.http), compiled into
# the launcher (contrib/launcher/render_errors.c), which writes them
# beside the haproxy.cfg it generates: one { "NNN", "text" } a file.
ERROR_FILES = $(sort $(wildcard haproxy/errors/*.http))
$(BUILD)/gen/error_files.inc: $(ERROR_FILES) contrib/embed.awk
	@mkdir -p $(dir $@)
	for f in $(ERROR_FILES); do \
		n=$${f##*/}; printf '{ "%s",\n' "$${n%.http}"; awk -f contrib/embed.awk "$$f"; printf '},\n'; \
	done >$@.tmp && mv -f $@.tmp $@

ERROR_FILES_OBJS = $(BUILD)/contrib/launcher/render_errors.o \
                   $(BUILD)/fuzz/obj/contrib/launcher/render_errors.o
$(ERROR_FILES_OBJS): $(BUILD)/gen/error_files.inc
$(ERROR_FILES_OBJS): CFLAGS += -I$(BUILD)/gen
$(ERROR_FILES_OBJS): FUZZ_CFLAGS += -I$(BUILD)/gen
