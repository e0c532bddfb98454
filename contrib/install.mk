# `make install` and `make uninstall`; included by the top-level Makefile:
#   make install DESTDIR=/tmp/pkg PREFIX=/usr
#
#   PREFIX   /usr/local by default; DESTDIR is prepended to every path.
#   UNITDIR  where the unit goes, $(PREFIX)/lib/systemd/system by default
#            (Debian 12's package: /lib/systemd/system).
#   UNIT_USER  the user the unit runs the agent as, for the man page:
#            haproxy as contrib/systemd's unit says (the package's
#            drop-in makes it dbucket).
#
# The man pages are written for the default install (/usr/local, user
# haproxy) and installed with this install's paths and user in their
# place, so that the pages a package installs describe that package.
#
# What goes where:
#   $(PREFIX)/sbin/dbucket-spoa                      the agent (a daemon: section 8)
#   $(PREFIX)/bin/dbucket                            the launcher
#   $(PREFIX)/share/dbucket/haproxy.cfg              sample configuration (never /etc:
#   $(PREFIX)/share/dbucket/dbucket.spoe.conf         an install must not touch HAProxy's)
#   $(PREFIX)/share/dbucket/errors/NNN.http          HAProxy's own answers as JSON
#                                                    (the sample's DBK_ERRORS_DIR)
#   $(PREFIX)/share/dbucket/dbucket-priority.lua     the class into vLLM's priority
#                                                    (the sample's DBK_PRIORITY_LUA)
#   $(PREFIX)/share/dbucket/haproxy.service.d/dbucket.conf  drop-in example
#   $(PREFIX)/share/man/man8/dbucket-spoa.8, man1/dbucket.1
#   $(PREFIX)/lib/systemd/system/dbucket-spoa.service (ExecStart in $(PREFIX)/sbin)

PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL ?= install

INSTALL_BINDIR  = $(PREFIX)/bin
INSTALL_SBINDIR = $(PREFIX)/sbin
INSTALL_DATADIR = $(PREFIX)/share/dbucket
INSTALL_MANDIR  = $(PREFIX)/share/man
UNITDIR   ?= $(PREFIX)/lib/systemd/system
UNIT_USER ?= haproxy
INSTALL_UNITDIR = $(UNITDIR)

# What the pages say of the default install, and what this one has.
MAN_SUBST = -e 's|/usr/local/share/dbucket|$(INSTALL_DATADIR)|g' \
            -e 's|/usr/local/lib/systemd/system|$(INSTALL_UNITDIR)|g' \
            -e 's|as user haproxy|as user $(UNIT_USER)|g'

ERROR_FILE_NAMES = $(notdir $(wildcard haproxy/errors/*.http))

INSTALL_FILES = $(INSTALL_SBINDIR)/dbucket-spoa \
                $(INSTALL_BINDIR)/dbucket \
                $(INSTALL_DATADIR)/haproxy.cfg \
                $(INSTALL_DATADIR)/dbucket.spoe.conf \
                $(INSTALL_DATADIR)/dbucket-priority.lua \
                $(addprefix $(INSTALL_DATADIR)/errors/,$(ERROR_FILE_NAMES)) \
                $(INSTALL_DATADIR)/haproxy.service.d/dbucket.conf \
                $(INSTALL_MANDIR)/man8/dbucket-spoa.8 \
                $(INSTALL_MANDIR)/man1/dbucket.1 \
                $(INSTALL_UNITDIR)/dbucket-spoa.service

.PHONY: install uninstall

install: $(BUILD)/dbucket-spoa $(BUILD)/dbucket
	$(INSTALL) -d $(DESTDIR)$(INSTALL_BINDIR) $(DESTDIR)$(INSTALL_SBINDIR) \
		$(DESTDIR)$(INSTALL_DATADIR)/haproxy.service.d $(DESTDIR)$(INSTALL_DATADIR)/errors \
		$(DESTDIR)$(INSTALL_MANDIR)/man1 $(DESTDIR)$(INSTALL_MANDIR)/man8 \
		$(DESTDIR)$(INSTALL_UNITDIR)
	$(INSTALL) -m 0755 $(BUILD)/dbucket-spoa $(DESTDIR)$(INSTALL_SBINDIR)/dbucket-spoa
	$(INSTALL) -m 0755 $(BUILD)/dbucket $(DESTDIR)$(INSTALL_BINDIR)/dbucket
	$(INSTALL) -m 0644 haproxy/haproxy.cfg haproxy/dbucket.spoe.conf haproxy/dbucket-priority.lua \
		$(DESTDIR)$(INSTALL_DATADIR)/
	$(INSTALL) -m 0644 $(addprefix haproxy/errors/,$(ERROR_FILE_NAMES)) $(DESTDIR)$(INSTALL_DATADIR)/errors/
	$(INSTALL) -m 0644 contrib/systemd/haproxy.service.d/dbucket.conf \
		$(DESTDIR)$(INSTALL_DATADIR)/haproxy.service.d/dbucket.conf
	sed $(MAN_SUBST) contrib/man/dbucket-spoa.8 >$(DESTDIR)$(INSTALL_MANDIR)/man8/dbucket-spoa.8
	sed $(MAN_SUBST) contrib/man/dbucket.1 >$(DESTDIR)$(INSTALL_MANDIR)/man1/dbucket.1
	chmod 0644 $(DESTDIR)$(INSTALL_MANDIR)/man8/dbucket-spoa.8 \
		$(DESTDIR)$(INSTALL_MANDIR)/man1/dbucket.1
	# The unit names the agent where this PREFIX put it (the file says
	# /usr/local/sbin, the default).
	sed 's|/usr/local/sbin/dbucket-spoa|$(INSTALL_SBINDIR)/dbucket-spoa|' \
		contrib/systemd/dbucket-spoa.service >$(DESTDIR)$(INSTALL_UNITDIR)/dbucket-spoa.service.tmp
	chmod 0644 $(DESTDIR)$(INSTALL_UNITDIR)/dbucket-spoa.service.tmp
	mv -f $(DESTDIR)$(INSTALL_UNITDIR)/dbucket-spoa.service.tmp \
		$(DESTDIR)$(INSTALL_UNITDIR)/dbucket-spoa.service

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES))
	-rmdir $(DESTDIR)$(INSTALL_DATADIR)/haproxy.service.d $(DESTDIR)$(INSTALL_DATADIR)/errors \
		$(DESTDIR)$(INSTALL_DATADIR) 2>/dev/null
