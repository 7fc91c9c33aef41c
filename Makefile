# gpu-preflight: build, install, package.
#
#   make                       build the static release binary
#   make install DESTDIR= PREFIX=/usr
#   make uninstall DESTDIR= PREFIX=/usr
#   make deb                   target/deb/gpu-preflight_VERSION_amd64.deb
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

# Build-time scripts learn where the binary and library were put.
SUBST_DIRS  := sed -e 's|^gpu_preflight_bindir=.*|gpu_preflight_bindir=$(BINDIR)|' \
                   -e 's|^gpu_preflight_libdir=.*|gpu_preflight_libdir=$(LIBDIR)|'

.PHONY: all build install uninstall deb clean-deb

all: build

build:
	$(CARGO) build --release

install: build
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
	@# An edited configuration is kept.
	if [ ! -e $(F_CONF) ]; then install -D -m 0644 etc/gpu-preflight.conf $(F_CONF); fi

uninstall:
	rm -f $(F_BIN) $(F_LIB) $(F_DRACUT) $(F_HOOK) $(F_SCRIPT) $(F_UNIT) $(F_CONF) $(F_VMHOOK)
	-rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DRACUTDIR) $(DESTDIR)$(SHAREDIR) 2>/dev/null

deb: build
	rm -rf $(DEBDIR)
	$(MAKE) install DESTDIR=$(CURDIR)/$(DEBROOT) PREFIX=/usr
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
