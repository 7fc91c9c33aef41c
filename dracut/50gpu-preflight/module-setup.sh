#!/bin/bash
# gpu-preflight dracut module: installs the static binary, its shell library,
# the configuration and the pre-udev hook (see gpu-preflight-hook.sh for why
# pre-udev).
#
# Sources come from where `make install` put them; GPU_PREFLIGHT_DESTDIR
# points at a staging tree instead (image builders, tests). In the image
# the files always have the same paths, whatever the install prefix.

# Rewritten by `make install` to its BINDIR and LIBDIR.
gpu_preflight_bindir=/usr/bin
gpu_preflight_libdir=/usr/lib/gpu-preflight

_gpu_preflight_src() {
    printf '%s%s' "${GPU_PREFLIGHT_DESTDIR-}" "$1"
}

# 0: include by default, hostonly or not: the check is about this machine's
# PCI layout, which any image booted here needs. 1 without the binary, so a
# half-removed install does not break image builds.
check() {
    [ -x "$(_gpu_preflight_src "$gpu_preflight_bindir/gpu-preflight")" ] || return 1
    return 0
}

# The hook needs only dracut-lib, which the base module installs.
depends() {
    return 0
}

# The kernel's qemu_fw_cfg driver, where it is a module (Debian's kernels):
# the check loads it to read what the host set in fw_cfg (X-PciMmio64Mb,
# SeaBIOS's pci64, the e820 map). Optional: a kernel without it, or with it
# built in, gives an image without it, and the check assumes those values.
# Not host-only: the machine that builds the image need not have the
# driver loaded (it is a guest's, not the build host's).
installkernel() {
    hostonly='' instmods qemu_fw_cfg
}

install() {
    _gp_bin=$(_gpu_preflight_src "$gpu_preflight_bindir/gpu-preflight")
    _gp_lib=$(_gpu_preflight_src "$gpu_preflight_libdir/gpu-preflight-lib.sh")
    _gp_conf=$(_gpu_preflight_src /etc/gpu-preflight.conf)
    # dracut ignores install()'s status. The binary is there (check() said
    # so): failing to copy it or its library is a broken package or a full
    # disk, and an image silently without the check is worse than a failed
    # build that says why. This runs in dracut at build time, not at boot.
    if ! inst_simple "$_gp_bin" /usr/bin/gpu-preflight; then
        dfatal "gpu-preflight: cannot install $_gp_bin into the image"
        exit 1
    fi
    if ! inst_simple "$_gp_lib" /usr/lib/gpu-preflight/gpu-preflight-lib.sh; then
        dfatal "gpu-preflight: cannot install $_gp_lib into the image (incomplete installation?)"
        exit 1
    fi
    # The configuration is optional: without it the defaults apply.
    if [ -e "$_gp_conf" ]; then
        inst_simple "$_gp_conf" /etc/gpu-preflight.conf
    fi
    # shellcheck disable=SC2154 # moddir is set by dracut
    inst_hook pre-udev 10 "$moddir/gpu-preflight-hook.sh"
    unset _gp_bin _gp_lib _gp_conf
}
