# gpu-preflight: build, install, package.
#
#   make                       build the static release binary
#   make install DESTDIR= PREFIX=/usr
#   make uninstall DESTDIR= PREFIX=/usr
#   make deb                   target/deb/gpu-preflight_VERSION_amd64.deb
#   make rpm                   target/rpm/gpu-preflight-VERSION-1.x86_64.rpm (rpmbuild)
#   make docs                  target/docs: manual pages and shell completions
#
# `make install` does not rebuild initramfs images: run update-initramfs -u
# (or dracut -f) afterwards. The Debian package does that itself.

PREFIX      ?= /usr
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib/gpu-preflight
DRACUTDIR   ?= $(PREFIX)/lib/dracut/modules.d/50gpu-preflight
# initramfs-tools only looks here, whatever the prefix.
INITRAMFSDIR ?= /usr/share/initramfs-tools
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR  ?= /etc
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# Debian's zsh reads vendor-completions; Fedora's, site-functions.
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d

CARGO       ?= cargo
TARGET      := x86_64-unknown-linux-gnu
BIN         := target/$(TARGET)/release/gpu-preflight
VERSION     := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DEBDIR      := target/deb
DEBROOT     := $(DEBDIR)/root
DEB         := $(DEBDIR)/gpu-preflight_$(VERSION)_amd64.deb
# The GRUB fragment `remediate` writes; its first line is how postrm knows
# the file at that path is ours.
FRAGMENT    := src/remediate/99-gpu-preflight.cfg

# Installed files, for install and uninstall alike.
F_BIN       := $(DESTDIR)$(BINDIR)/gpu-preflight
F_LIB       := $(DESTDIR)$(LIBDIR)/gpu-preflight-lib.sh
F_DRACUT    := $(DESTDIR)$(DRACUTDIR)/module-setup.sh $(DESTDIR)$(DRACUTDIR)/gpu-preflight-hook.sh
F_HOOK      := $(DESTDIR)$(INITRAMFSDIR)/hooks/gpu-preflight
F_SCRIPT    := $(DESTDIR)$(INITRAMFSDIR)/scripts/init-premount/gpu-preflight
F_UNIT      := $(DESTDIR)$(UNITDIR)/gpu-preflight-publish.service
F_CONF      := $(DESTDIR)$(SYSCONFDIR)/gpu-preflight.conf
# The host-side hook (Proxmox hookscript, libvirt hook): shipped, not
# enabled; README "Before you boot: plan" says where to put it.
SHAREDIR    ?= $(PREFIX)/share/gpu-preflight
F_VMHOOK    := $(DESTDIR)$(SHAREDIR)/gpu-preflight-vm-hook
# Prometheus alerting rules: shipped for the monitoring server to load.
F_RULES     := $(DESTDIR)$(SHAREDIR)/prometheus/gpu-preflight.rules.yml
# A GPU count check that tells configuration from hardware: an example to
# adapt, and what it keys on (contrib/COUNT-CHECKS.md).
F_COUNT     := $(DESTDIR)$(SHAREDIR)/prometheus/gpu-count.rules.example.yml
F_COUNTDOC  := $(DESTDIR)$(SHAREDIR)/COUNT-CHECKS.md
# node-problem-detector: the plugin, its monitor config, the kustomization.
NPDDIR      := $(SHAREDIR)/node-problem-detector
NPD_DATA    := gpu-preflight-monitor.json daemonset.yaml rbac.yaml kustomization.yaml
F_NPD       := $(DESTDIR)$(NPDDIR)/gpu-preflight-npd.sh $(foreach f,$(NPD_DATA),$(DESTDIR)$(NPDDIR)/$(f))

# The manual pages and completions, generated from the clap definitions by
# examples/gen_docs.rs (a dev-dependency: the boot binary does not grow).
DOCDIR_OUT  := target/docs
MAN_PAGES   := gpu-preflight gpu-preflight-check gpu-preflight-explain gpu-preflight-boot \
               gpu-preflight-remediate gpu-preflight-publish gpu-preflight-plan
F_MAN       := $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man8/$(p).8.gz)
F_COMP      := $(DESTDIR)$(BASHCOMPDIR)/gpu-preflight $(DESTDIR)$(ZSHCOMPDIR)/_gpu-preflight \
               $(DESTDIR)$(FISHCOMPDIR)/gpu-preflight.fish

# Build-time scripts learn where the binary and library were put.
SUBST_DIRS  := sed -e 's|^gpu_preflight_bindir=.*|gpu_preflight_bindir=$(BINDIR)|' \
                   -e 's|^gpu_preflight_libdir=.*|gpu_preflight_libdir=$(LIBDIR)|'

RPMDIR      := target/rpm

.PHONY: all build docs install uninstall deb clean-deb rpm

all: build

build:
	$(CARGO) build --release

docs:
	rm -rf $(DOCDIR_OUT)
	$(CARGO) run --locked --quiet --example gen_docs -- $(DOCDIR_OUT)
	@# A subcommand added without its page here would go uninstalled.
	test "$$(ls $(DOCDIR_OUT)/man | sort)" = "$$(printf '%s.8\n' $(MAN_PAGES) | sort)" || \
	{ echo "$(DOCDIR_OUT)/man does not hold exactly MAN_PAGES: update the Makefile" >&2; exit 1; }

install: build docs
	install -D -m 0755 $(BIN) $(F_BIN)
	install -D -m 0644 shell/gpu-preflight-lib.sh $(F_LIB)
	install -d $(DESTDIR)$(DRACUTDIR)
	$(SUBST_DIRS) dracut/50gpu-preflight/module-setup.sh > $(DESTDIR)$(DRACUTDIR)/module-setup.sh
	chmod 0755 $(DESTDIR)$(DRACUTDIR)/module-setup.sh
	install -m 0755 dracut/50gpu-preflight/gpu-preflight-hook.sh $(DESTDIR)$(DRACUTDIR)/gpu-preflight-hook.sh
	install -d $(dir $(F_HOOK)) $(dir $(F_SCRIPT))
	$(SUBST_DIRS) initramfs-tools/hooks/gpu-preflight > $(F_HOOK)
	chmod 0755 $(F_HOOK)
	install -m 0755 initramfs-tools/scripts/init-premount/gpu-preflight $(F_SCRIPT)
	install -d $(dir $(F_UNIT))
	sed -e 's|/usr/bin/gpu-preflight|$(BINDIR)/gpu-preflight|' systemd/gpu-preflight-publish.service > $(F_UNIT)
	chmod 0644 $(F_UNIT)
	install -d $(dir $(F_VMHOOK))
	sed -e 's|^binary=.*|binary=$(BINDIR)/gpu-preflight|' contrib/gpu-preflight-vm-hook > $(F_VMHOOK)
	chmod 0755 $(F_VMHOOK)
	install -d $(DESTDIR)$(MANDIR)/man8
	for p in $(MAN_PAGES); do gzip -9n < $(DOCDIR_OUT)/man/$$p.8 > $(DESTDIR)$(MANDIR)/man8/$$p.8.gz; done
	chmod 0644 $(F_MAN)
	install -D -m 0644 $(DOCDIR_OUT)/completions/gpu-preflight.bash $(DESTDIR)$(BASHCOMPDIR)/gpu-preflight
	install -D -m 0644 $(DOCDIR_OUT)/completions/_gpu-preflight $(DESTDIR)$(ZSHCOMPDIR)/_gpu-preflight
	install -D -m 0644 $(DOCDIR_OUT)/completions/gpu-preflight.fish $(DESTDIR)$(FISHCOMPDIR)/gpu-preflight.fish
	install -D -m 0644 contrib/prometheus/gpu-preflight.rules.yml $(F_RULES)
	install -D -m 0644 contrib/prometheus/gpu-count.rules.example.yml $(F_COUNT)
	install -D -m 0644 contrib/COUNT-CHECKS.md $(F_COUNTDOC)
	install -D -m 0755 contrib/node-problem-detector/gpu-preflight-npd.sh $(DESTDIR)$(NPDDIR)/gpu-preflight-npd.sh
	for f in $(NPD_DATA); do install -m 0644 contrib/node-problem-detector/$$f $(DESTDIR)$(NPDDIR)/$$f; done
	@# An edited configuration is kept.
	if [ ! -e $(F_CONF) ]; then install -D -m 0644 etc/gpu-preflight.conf $(F_CONF); fi

uninstall:
	rm -f $(F_BIN) $(F_LIB) $(F_DRACUT) $(F_HOOK) $(F_SCRIPT) $(F_UNIT) $(F_CONF) $(F_VMHOOK) \
	    $(F_MAN) $(F_COMP) $(F_RULES) $(F_COUNT) $(F_COUNTDOC) $(F_NPD)
	-rmdir $(DESTDIR)$(SHAREDIR)/prometheus $(DESTDIR)$(NPDDIR) 2>/dev/null
	-rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DRACUTDIR) $(DESTDIR)$(SHAREDIR) 2>/dev/null

deb: build
	rm -rf $(DEBDIR)
	$(MAKE) install DESTDIR=$(CURDIR)/$(DEBROOT) PREFIX=/usr
	install -D -m 0644 packaging/deb/copyright $(DEBROOT)/usr/share/doc/gpu-preflight/copyright
	gzip -9n < packaging/deb/changelog > $(DEBROOT)/usr/share/doc/gpu-preflight/changelog.gz
	chmod 0644 $(DEBROOT)/usr/share/doc/gpu-preflight/changelog.gz
	install -d $(DEBROOT)/DEBIAN
	sed -e 's|@VERSION@|$(VERSION)|' \
	    -e "s|@SIZE@|$$(du -sk --exclude=DEBIAN $(DEBROOT) | cut -f1)|" \
	    packaging/deb/control > $(DEBROOT)/DEBIAN/control
	install -m 0755 packaging/deb/postinst $(DEBROOT)/DEBIAN/
	@# postrm gets the fragment's header verbatim, inside single quotes:
	@# refuse a header that sed or those quotes would change.
	header=$$(head -n 1 $(FRAGMENT)) && \
	case $$header in \
	'' | *[\'\\\|\&]*) echo "$(FRAGMENT): first line empty or has ' \\ | &: cannot put it in postrm" >&2; exit 1 ;; \
	esac && \
	sed -e "s|@HEADER@|$$header|" packaging/deb/postrm > $(DEBROOT)/DEBIAN/postrm
	chmod 0755 $(DEBROOT)/DEBIAN/postrm
	echo /etc/gpu-preflight.conf > $(DEBROOT)/DEBIAN/conffiles
	dpkg-deb --root-owner-group -Zxz --build $(DEBROOT) $(DEB)
	@echo "built $(DEB)"

clean-deb:
	rm -rf $(DEBDIR)

# The RHEL family: the same staged tree, Fedora's zsh directory, without
# initramfs-tools (packaging/rpm/gpu-preflight.spec).
rpm: build
	rm -rf $(RPMDIR)
	$(MAKE) install DESTDIR=$(CURDIR)/$(RPMDIR)/stage PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/site-functions
	rpmbuild -bb --quiet \
	    --define "_topdir $(CURDIR)/$(RPMDIR)/build" \
	    --define "_rpmdir $(CURDIR)/$(RPMDIR)" \
	    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
	    --define "stagedir $(CURDIR)/$(RPMDIR)/stage" \
	    --define "pkgversion $(VERSION)" \
	    packaging/rpm/gpu-preflight.spec
	@echo "built $(RPMDIR)/gpu-preflight-$(VERSION)-1.x86_64.rpm"
