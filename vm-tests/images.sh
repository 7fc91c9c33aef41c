# Building what the VM tests boot: the release binary, the staged install,
# initramfs images from both generators, and the test root disk.
# Sourced by bash after lib.sh.
# shellcheck shell=bash

VT_BIN_PATH=${VT_BIN_PATH:-$VT_REPO/target/x86_64-unknown-linux-gnu/release/gpu-preflight}

# vt_build_binary: the static release binary (what the images carry).
vt_build_binary() {
    if [ -n "${VT_SKIP_BUILD-}" ]; then
        [ -x "$VT_BIN_PATH" ] || vt_die "VT_SKIP_BUILD set but $VT_BIN_PATH is missing"
        return 0
    fi
    command -v cargo >/dev/null 2>&1 || vt_die "cargo is needed to build the binary (see README)"
    (cd "$VT_REPO" && cargo build --release --quiet) >&2 || vt_die "cargo build --release failed"
    [ -x "$VT_BIN_PATH" ] || vt_die "cargo build did not produce $VT_BIN_PATH"
}

# vt_stage DIR: the project installed under DIR with `make install`, as a
# package would. Prints nothing; DIR is empty when there is no install rule.
vt_stage() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ -f "$VT_REPO/Makefile" ] && grep -q '^install:' "$VT_REPO/Makefile"; then
        make -s -C "$VT_REPO" install DESTDIR="$dir" PREFIX=/usr >&2 ||
            vt_die "make install DESTDIR=$dir PREFIX=/usr failed"
    else
        vt_log "no 'install' rule in Makefile: the images will lack the boot integration"
    fi
    # VT_STAGE_OVERLAY=DIR: files laid over the staged install, to try a
    # change to the boot integration without touching the tree.
    if [ -n "${VT_STAGE_OVERLAY-}" ]; then
        cp -a "$VT_STAGE_OVERLAY/." "$dir/" || vt_die "cannot copy $VT_STAGE_OVERLAY into $dir"
    fi
}

# vt_stage_floor DIR: the boot step's floor (guest/floor/) laid into the
# staged tree DIR: a static program that does nothing (gcc -static -O2) at
# /usr/lib/vm-tests/boot-floor, and for each generator a hook that runs it
# right after gpu-preflight's, the same way (README.md, "The boot step and
# its floor"). For the suite's images only; never part of an install.
vt_stage_floor() {
    local dir=$1 src=$VT_DIR/guest/floor mod
    mkdir -p "$dir/usr/lib/vm-tests"
    gcc -static -O2 -o "$dir/usr/lib/vm-tests/boot-floor" "$src/boot-floor.c" ||
        vt_die "cannot build the floor program ($src/boot-floor.c)"
    mod=$dir/usr/lib/dracut/modules.d/51gpu-preflight-floor
    install -D -m 0755 "$src/dracut-module-setup.sh" "$mod/module-setup.sh"
    install -D -m 0755 "$src/floor-hook.sh" "$mod/floor-hook.sh"
    install -D -m 0755 "$src/itools-hook" "$dir/etc/initramfs-tools/hooks/gpu-preflight-floor"
    install -D -m 0755 "$src/itools-script" "$dir/etc/initramfs-tools/scripts/init-premount/gpu-preflight-floor"
}

# vt_staged_binary DIR: path of the installed binary inside a staged tree.
vt_staged_binary() {
    local f
    for f in usr/bin/gpu-preflight usr/sbin/gpu-preflight usr/libexec/gpu-preflight/gpu-preflight; do
        if [ -e "$1/$f" ]; then
            printf '%s' "$1/$f"
            return 0
        fi
    done
    return 1
}

# The sysfs file the readhang fault blocks: the host bridge's class, which
# the check reads first thing and the test root's init does not read.
VT_STUCK_FILE=/sys/bus/pci/devices/0000:00:00.0/class

# vt_plant_fault TREE FAULT: plant one boot-path fault in an unpacked image.
#   missing   the binary is gone from the image
#   crash     the binary itself dies of SIGSEGV at once (the hook's line)
#   readhang  a read of the check never returns: just before gpu-preflight's
#             hook, a FIFO nobody writes to is bind-mounted over
#             VT_STUCK_FILE (static busybox, copied in), and unmounted just
#             after it (the binary's own deadline must end the check)
#   confifo   /etc/gpu-preflight.conf is a FIFO nobody writes to (the
#             binary's parent must not wait on it)
#   nofwcfg   the kernel's qemu_fw_cfg module is not in the image (the
#             check assumes what fw_cfg would say)
#   badconf   /etc/gpu-preflight.conf is garbage
# Done on a built image rather than on the install: with the binary missing
# from the install, the generators rightly leave the hook out altogether,
# and the hooks copy the binary and configuration verbatim anyway. (A
# binary replaced by one that hangs is no fault the boot is guarded
# against: the binary keeps the deadline, docs/boot.md.)
vt_plant_fault() {
    local tree=$1 fault=$2 bin=$1/usr/bin/gpu-preflight
    [ -e "$bin" ] || { vt_log "the image has no usr/bin/gpu-preflight"; return 1; }
    case $fault in
    missing) rm -f "$bin" ;;
    crash) printf '#!/bin/sh\nkill -SEGV $$\n' >"$bin" ;;
    readhang) vt_plant_readhang "$tree" || return 1 ;;
    confifo)
        rm -f "$tree/etc/gpu-preflight.conf"
        mkfifo "$tree/etc/gpu-preflight.conf"
        ;;
    nofwcfg)
        [ -n "$(find "$tree" -name 'qemu_fw_cfg.ko*')" ] || {
            vt_log "the image has no qemu_fw_cfg module to take out"
            return 1
        }
        find "$tree" -name 'qemu_fw_cfg.ko*' -delete
        ;;
    badconf)
        printf '%s\n' 'this is not a configuration' 'mode=sometimes' 'expect=eight' \
            'timeout=-5' 'match=zz:yy' '[section]' 'gpu_preflight.remediate=maybe' >"$tree/etc/gpu-preflight.conf"
        printf '\001\377\376 binary junk\n' >>"$tree/etc/gpu-preflight.conf"
        ;;
    *) vt_die "unknown fault $fault" ;;
    esac
    [ -e "$bin" ] && chmod 0755 "$bin"
    return 0
}

# vt_plant_readhang TREE: the readhang fault's two scripts, around
# gpu-preflight's hook: dracut's pre-udev at priorities 05 and 15 (ours is
# 10), or initramfs-tools' init-premount ORDER with them before and after
# ours.
vt_plant_readhang() {
    local tree=$1 bb=/usr/lib/vm-tests/busybox on off dir
    install -D -m 0755 /bin/busybox "$tree$bb"
    # The scripts' bodies: sourced by dracut, run by initramfs-tools.
    on="$bb mkfifo /run/vmtest-stuck && $bb mount --bind /run/vmtest-stuck $VT_STUCK_FILE &&
    echo '<6>vm-tests: a FIFO nobody writes to is mounted over $VT_STUCK_FILE' >/dev/kmsg"
    off="$bb umount -l $VT_STUCK_FILE && echo '<6>vm-tests: the FIFO is unmounted' >/dev/kmsg"
    if [ -d "$tree/usr/lib/dracut/hooks/pre-udev" ]; then
        dir=$tree/usr/lib/dracut/hooks/pre-udev
        printf '# vm-tests fault: readhang\n%s\n' "$on" >"$dir/05-vmtest-readhang.sh"
        printf '# vm-tests fault: readhang\n%s\n' "$off" >"$dir/15-vmtest-readhang.sh"
    elif [ -f "$tree/scripts/init-premount/ORDER" ]; then
        dir=$tree/scripts/init-premount
        # shellcheck disable=SC2016 # the scripts' own "$1"
        printf '#!/bin/sh\n[ "$1" = prereqs ] && exit 0\n%s\nexit 0\n' "$on" >"$dir/vmtest-readhang-on"
        # shellcheck disable=SC2016
        printf '#!/bin/sh\n[ "$1" = prereqs ] && exit 0\n%s\nexit 0\n' "$off" >"$dir/vmtest-readhang-off"
        chmod 0755 "$dir/vmtest-readhang-on" "$dir/vmtest-readhang-off"
        # shellcheck disable=SC2016 # "$@" belongs in ORDER, unexpanded
        awk '$1 == "/scripts/init-premount/gpu-preflight" {
                print "/scripts/init-premount/vmtest-readhang-on \"$@\""
                print
                print "/scripts/init-premount/vmtest-readhang-off \"$@\""
                next
            }
            { print }' "$dir/ORDER" >"$dir/ORDER.new" && mv "$dir/ORDER.new" "$dir/ORDER"
        grep -q vmtest-readhang-off "$dir/ORDER" || {
            vt_log "no gpu-preflight line in $dir/ORDER"
            return 1
        }
    else
        vt_log "neither a dracut nor an initramfs-tools image"
        return 1
    fi
}

# vt_image_fault IMAGE OUT FAULT: OUT is IMAGE with FAULT planted in its
# main archive; early (microcode) archives are kept in front, uncompressed,
# as the kernel wants them.
vt_image_fault() {
    local img=$1 out=$2 fault=$3 tmp part e
    tmp=$(mktemp -d "$VT_WORK/unpack.XXXXXX")
    if ! unmkinitramfs "$img" "$tmp"; then
        rm -rf "$tmp"
        return 1
    fi
    part=$tmp
    [ -d "$tmp/main" ] && part=$tmp/main
    if ! vt_plant_fault "$part" "$fault"; then
        rm -rf "$tmp"
        return 1
    fi
    {
        for e in "$tmp"/early "$tmp"/early[0-9]*; do
            [ -d "$e" ] || continue
            (cd "$e" && find . | LC_ALL=C sort | cpio -o -H newc --quiet)
        done
        (cd "$part" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1)
    } >"$out.tmp" && mv "$out.tmp" "$out"
    rm -rf "$tmp"
    [ -s "$out" ]
}

# vt_in_stage STAGE CMD...: run CMD in a private mount namespace where the
# staged tree is laid over /usr and /etc (read-only overlays), so generators
# find the project's hooks, module and binary where a package puts them,
# and the host's own files stay untouched.
vt_in_stage() {
    local stage=$1
    shift
    # shellcheck disable=SC2016 # the inner script expands its own arguments
    unshare -m /bin/bash -c '
        stage=$1; shift
        set -e
        mount --make-rprivate /
        for d in usr etc; do
            if [ -d "$stage/$d" ]; then
                mount -t overlay "vm-tests-$d" -o "lowerdir=$stage/$d:/$d" "/$d"
            fi
        done
        set +e
        exec "$@"
    ' vt-stage "$stage" "$@"
}

# vt_itools_conf DIR STAGE: a private initramfs-tools configuration
# directory (mkinitramfs -d), never /etc/initramfs-tools.
vt_itools_conf() {
    local dir=$1 stage=$2 sub
    rm -rf "$dir"
    mkdir -p "$dir/hooks" "$dir/scripts" "$dir/conf.d"
    cat >"$dir/initramfs.conf" <<'EOF'
MODULES=most
BUSYBOX=y
COMPRESS=gzip
RESUME=none
FSTYPE=auto
RUNSIZE=10%
EOF
    : >"$dir/modules"
    # Files a package would put in /etc/initramfs-tools belong here.
    for sub in hooks scripts conf.d; do
        if [ -d "$stage/etc/initramfs-tools/$sub" ]; then
            cp -a "$stage/etc/initramfs-tools/$sub/." "$dir/$sub/"
        fi
    done
}

# vt_build_image GEN STAGE OUT: an initramfs for the test kernel built by
# GEN (itools: mkinitramfs; dracut) from the host's generator with the
# staged project installed. Output and logs go next to OUT.
vt_build_image() {
    local gen=$1 stage=$2 out=$3 kver rc
    kver=$(vt_kver)
    rm -f "$out"
    case $gen in
    itools)
        vt_itools_conf "$out.conf" "$stage"
        vt_in_stage "$stage" mkinitramfs -d "$out.conf" -o "$out" "$kver" >"$out.log" 2>&1
        rc=$?
        ;;
    dracut)
        mkdir -p "$out.confdir"
        # --conf/--confdir: nothing from the host's dracut configuration.
        vt_in_stage "$stage" dracut --force --no-hostonly --no-hostonly-cmdline \
            --conf /dev/null --confdir "$out.confdir" --compress gzip \
            --kver "$kver" "$out" >"$out.log" 2>&1
        rc=$?
        ;;
    *) vt_die "unknown generator $gen" ;;
    esac
    if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
        vt_log "building the $gen image $out failed (status $rc); log tail:"
        tail -n 20 "$out.log" >&2
        rm -f "$out"
        return 1
    fi
}

# vt_root_disk OUT: a small ext4 root file system (built without mounting)
# whose /sbin/init reports what the boot left behind (guest/report-init).
vt_root_disk() {
    local out=$1 tree a
    tree=$(mktemp -d "$VT_WORK/rootfs.XXXXXX")
    mkdir -p "$tree/bin" "$tree/sbin" "$tree/dev" "$tree/proc" "$tree/sys" "$tree/run" \
        "$tree/tmp" "$tree/etc" "$tree/usr/lib"
    cp /bin/busybox "$tree/bin/busybox"
    for a in sh mount grep cat dmesg ls tar gzip base64 cp mkdir sync sleep poweroff echo; do
        ln -s busybox "$tree/bin/$a"
    done
    cp "$VT_DIR/guest/report-init" "$tree/sbin/init"
    chmod 0755 "$tree/sbin/init"
    # systemd's switch-root wants an OS tree.
    printf 'ID=vmtest\nNAME="gpu-preflight test root"\n' >"$tree/usr/lib/os-release"
    ln -s ../usr/lib/os-release "$tree/etc/os-release"
    : >"$tree/etc/fstab"
    rm -f "$out"
    mke2fs -q -t ext4 -L vmroot -d "$tree" "$out" 32M >/dev/null || vt_die "mke2fs of $out failed"
    rm -rf "$tree"
}
