#!/bin/sh
# gpu-preflight dracut hook: pre-udev, priority 10.
#
# Why pre-udev: the kernel has enumerated PCI and assigned (or failed to
# assign) BARs before the initramfs starts, /run and /dev/kmsg are there,
# and no GPU driver has been loaded yet. It is the earliest hook that runs
# the same way in both of dracut's initramfs flavours: sourced by init in
# the shell-based one, by dracut-pre-udev.service (ordered before
# systemd-udevd) in the systemd-based one.
#
# This file is sourced by dracut: no `exit`, no `set -e`. The binary keeps
# its own deadline (the `timeout` setting) and is run once, in the
# foreground; whatever happens to its check, the boot goes on, except when
# it reports a failed check in strict mode (exit 4).

if [ -r /usr/lib/gpu-preflight/gpu-preflight-lib.sh ]; then
    # shellcheck source=shell/gpu-preflight-lib.sh
    . /usr/lib/gpu-preflight/gpu-preflight-lib.sh
    gpu_preflight_run /usr/bin/gpu-preflight
    if [ -n "$gpu_preflight_msg" ]; then
        gpu_preflight_kmsg 4 "$gpu_preflight_msg"
    fi
    if [ "$gpu_preflight_rc" = 4 ]; then
        # dracut's own way to hold the boot: an emergency shell (or a halt
        # with rd.shell=0). Leaving the shell lets the boot continue.
        emergency_shell -n gpu-preflight "$gpu_preflight_stop_msg"
    fi
    gpu_preflight_cleanup
    unset gpu_preflight_rc gpu_preflight_msg
else
    { echo "<4>gpu-preflight: /usr/lib/gpu-preflight/gpu-preflight-lib.sh missing from the initramfs: GPU BARs not checked this boot; boot continues" >/dev/kmsg; } 2>/dev/null || :
fi
