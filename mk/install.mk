# install.mk — `make install` / `make uninstall`: the binaries, the systemd units and their
# configuration, for VMs and bare metal (docs/install-vm.md). It installs what build/bin already
# holds and never builds: the top-level Makefile's `install` depends on `all` first.
#   make install [PREFIX=/usr/local] [DESTDIR=] [BINDIR=] [SYSTEMD_DIR=] [SYSUSERS_DIR=]
#
# Where the units go: $(PREFIX)/lib/systemd/system, where systemd looks for units that software
# installed under /usr or /usr/local, rather than /etc/systemd/system, which is the
# administrator's: drop-ins and units of the same name there (`systemctl edit`) take precedence
# over ours, and uninstalling ours leaves them alone. Those are the only two vendor locations
# systemd searches, so any other PREFIX (e.g. /opt/kmesh) puts the units in /etc/systemd/system
# and the sysusers file in /etc/sysusers.d instead. Each directory can be set on the command line.
#
# With DESTDIR empty on a machine booted with systemd, install also creates the user kmesh
# (systemd-sysusers) and reloads systemd; it starts nothing (systemctl enable --now kmesh.target).

SHELL   := /bin/bash
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
ifneq ($(filter /usr /usr/local,$(PREFIX)),)
SYSTEMD_DIR  ?= $(PREFIX)/lib/systemd/system
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d
else
SYSTEMD_DIR  ?= /etc/systemd/system
SYSUSERS_DIR ?= /etc/sysusers.d
endif
# The units name /etc/kmesh/kmesh.env, so this directory is fixed.
CONF_DIR := /etc/kmesh

BINS  := kmesh-map-writer kmesh-xds-agent kmesh-ipsec-agent kmesh-tunnel kmesh-cni kmeshctl
UNITS := kmesh-map-writer.service kmesh-xds-agent.service kmesh-ipsec-agent.service \
         kmesh-tunnel.service kmesh.target
SRC   := deploy/systemd

# systemd is PID 1 (sd_booted()'s test) and this installs into the running system
LIVE = [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]

.PHONY: install uninstall
install:
	@for b in $(BINS); do [ -x build/bin/$$b ] || { echo "build/bin/$$b is missing: run make first" >&2; exit 1; }; done
	install -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMD_DIR) $(DESTDIR)$(SYSUSERS_DIR) $(DESTDIR)$(CONF_DIR)
	install -m 0755 $(addprefix build/bin/,$(BINS)) $(DESTDIR)$(BINDIR)/
	@set -e; for u in $(UNITS); do \
		echo "sed 's|@BINDIR@|$(BINDIR)|g' $(SRC)/$$u >$(DESTDIR)$(SYSTEMD_DIR)/$$u"; \
		sed 's|@BINDIR@|$(BINDIR)|g' $(SRC)/$$u >$(DESTDIR)$(SYSTEMD_DIR)/$$u.tmp; \
		chmod 0644 $(DESTDIR)$(SYSTEMD_DIR)/$$u.tmp; \
		mv -f $(DESTDIR)$(SYSTEMD_DIR)/$$u.tmp $(DESTDIR)$(SYSTEMD_DIR)/$$u; \
	done
	install -m 0644 $(SRC)/kmesh.sysusers $(DESTDIR)$(SYSUSERS_DIR)/kmesh.conf
	@# the configuration is the administrator's once installed: never overwritten
	@set -e; for f in kmesh.env:$(SRC)/kmesh.env mesh.json:demo/mesh.json; do \
		dst=$(DESTDIR)$(CONF_DIR)/$${f%%:*}; \
		if [ -e $$dst ]; then echo "$$dst exists: kept"; \
		else echo "install -m 0644 $${f#*:} $$dst"; install -m 0644 $${f#*:} $$dst; fi; \
	done
	@if $(LIVE); then \
		echo "systemd-sysusers $(SYSUSERS_DIR)/kmesh.conf && systemctl daemon-reload"; \
		systemd-sysusers $(SYSUSERS_DIR)/kmesh.conf && systemctl daemon-reload; \
		echo "installed; configure /etc/kmesh/kmesh.env, then: systemctl enable --now kmesh.target"; \
	fi

# Removes what install put in place, except the configuration in /etc/kmesh and the user kmesh.
# On the running system it first stops the units. That leaves the programs attached and the
# tables pinned: docs/install-vm.md says how to detach them first.
uninstall:
	@if $(LIVE); then \
		echo "systemctl disable --now kmesh.target"; \
		systemctl disable --now kmesh.target || true; \
		systemctl stop kmesh-tunnel.service kmesh-ipsec-agent.service kmesh-xds-agent.service \
			kmesh-map-writer.service || true; \
	fi
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(BINS))
	rm -f $(addprefix $(DESTDIR)$(SYSTEMD_DIR)/,$(UNITS))
	rm -f $(DESTDIR)$(SYSUSERS_DIR)/kmesh.conf
	@if $(LIVE); then echo "systemctl daemon-reload"; systemctl daemon-reload; fi
	@echo "kept: $(DESTDIR)$(CONF_DIR) (configuration, IPsec key) and the user kmesh"
