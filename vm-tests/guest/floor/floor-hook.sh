#!/bin/sh
# vm-tests only: the floor beside gpu-preflight's boot step. Sourced by
# dracut (pre-udev, priority 11: right after gpu-preflight's 10) and run by
# initramfs-tools (init-premount, after gpu-preflight); it does what
# gpu-preflight-lib.sh's gpu_preflight_run does around the binary, with a
# program that does nothing (boot-floor.c).
{ printf '<7>gpu-preflight-floor: hook start\n' >>/dev/kmsg; } 2>/dev/null || :
/usr/lib/vm-tests/boot-floor boot </dev/null
{ printf '<7>gpu-preflight-floor: hook end\n' >>/dev/kmsg; } 2>/dev/null || :
