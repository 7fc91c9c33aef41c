# The full-disk end-to-end test's images: Debian bookworm from debootstrap
# (cached under vm-tests/cache/), the project's package installed, and one
# of three boot paths (a "flavour", LOADER-GEN):
#   grub-itools   an EFI system partition with a GRUB that reads the root's
#                 own grub.cfg; the initramfs from initramfs-tools
#   grub-dracut   the same, the initramfs from dracut (dracut-core, which
#                 installs beside initramfs-tools; `dracut` would remove it)
#   sdboot-itools systemd-boot (bootctl) on the ESP, mounted at /boot/efi,
#                 its entries written by kernel-install from /etc/kernel/cmdline
# The disk is assembled from partition images made by mke2fs -d and mtools:
# nothing is loop-mounted. Sourced by bash after lib.sh and images.sh.
# shellcheck shell=bash

VT_SUITE=${VT_SUITE:-bookworm}
VT_MIRROR=${VT_MIRROR:-http://deb.debian.org/debian}
VT_DEB_PKGS=linux-image-amd64,systemd-sysv,udev,kmod,initramfs-tools,grub-efi-amd64-bin,grub2-common,e2fsprogs

# vt_debian_tar [EXTRA]: print the path of a cached tarball of a minimal
# Debian root with kernel, systemd and GRUB, and the comma-separated EXTRA
# packages (dracut-core, systemd-boot), making it when missing.
vt_debian_tar() {
    local key tar dir pkgs=$VT_DEB_PKGS${1:+,$1}
    key=$(printf '%s %s %s' "$VT_SUITE" "$VT_MIRROR" "$pkgs" | md5sum | cut -c1-10)
    tar=$VT_CACHE/debian-$VT_SUITE-$key.tar
    if [ -s "$tar" ]; then
        printf '%s' "$tar"
        return 0
    fi
    vt_need debootstrap:debootstrap
    mkdir -p "$VT_CACHE"
    dir=$VT_WORK/debootstrap.$key
    rm -rf "$dir"
    vt_log "debootstrap $VT_SUITE with $pkgs (cached afterwards in $tar)"
    if ! debootstrap --variant=minbase --include="$pkgs" "$VT_SUITE" "$dir" "$VT_MIRROR" \
        >"$VT_WORK/debootstrap.$key.log" 2>&1; then
        tail -n 20 "$VT_WORK/debootstrap.$key.log" >&2
        rm -rf "$dir"
        vt_die "debootstrap failed (log: $VT_WORK/debootstrap.$key.log)"
    fi
    # The package cache is not needed in the image.
    rm -rf "$dir"/var/cache/apt/archives/*.deb
    tar -C "$dir" --numeric-owner -cf "$tar.tmp" . || vt_die "cannot write $tar"
    mv "$tar.tmp" "$tar"
    rm -rf "$dir"
    printf '%s' "$tar"
}

# vt_e2e_deb: build the project's .deb once (target/deb), before the disks
# are built side by side; prints nothing, fails when there is no package.
vt_e2e_deb() {
    grep -q '^deb:' "$VT_REPO/Makefile" 2>/dev/null || return 0
    make -s -C "$VT_REPO" deb >&2 || vt_die "make deb failed"
}

# vt_e2e_extra FLAVOUR: the packages the flavour's Debian root adds to
# VT_DEB_PKGS (comma-separated, maybe none).
vt_e2e_extra() {
    case $1 in
    grub-itools) ;;
    grub-dracut) echo dracut-core ;;
    sdboot-itools) echo systemd-boot ;;
    *) vt_die "unknown end-to-end disk flavour $1" ;;
    esac
}

# vt_e2e_disk OUT [FLAVOUR]: a raw GPT disk (ESP + ext4 root) with Debian,
# the project's package (or `make install`), and vm-tests-report.service,
# booted the FLAVOUR's way (grub-itools by default; see the top of this
# file). Settings of the project come from VT_E2E_CONF (the text of
# /etc/gpu-preflight.conf) and VT_E2E_CMDLINE (kernel command line in
# /etc/default/grub, or /etc/kernel/cmdline for systemd-boot).
vt_e2e_disk() {
    local out=$1 flavour=${2:-grub-itools} tar dir kver uuid unit units after deb esp_mb=64 root_mb=2048
    local loader=${flavour%-*} gen=${flavour#*-} extra work espdir vfat_id
    extra=$(vt_e2e_extra "$flavour") || return 1
    # systemd-boot's ESP holds a copy of each kernel and initramfs.
    [ "$loader" = sdboot ] && esp_mb=256
    tar=$(vt_debian_tar "$extra") || return 1
    vt_need mkfs.fat:dosfstools mcopy:mtools sfdisk:fdisk grub-mkstandalone:grub-efi-amd64-bin \
        /usr/lib/grub/x86_64-efi/linux.mod:grub-efi-amd64-bin
    work=$VT_WORK/e2e-$flavour
    dir=$work/rootfs
    rm -rf "$work"
    mkdir -p "$dir"
    tar -C "$dir" --numeric-owner -xf "$tar" || vt_die "cannot unpack $tar"
    kver=$(find "$dir/boot" -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
    [ -n "$kver" ] || vt_die "no kernel in the debootstrap root"
    uuid=$(cat /proc/sys/kernel/random/uuid)
    # The ESP's volume id, which fstab names as UUID=XXXX-XXXX.
    vfat_id=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
    espdir=$dir/boot/efi
    if [ "$loader" = sdboot ]; then
        # The ESP is mounted at /boot/efi; systemd-boot and the entries go
        # there below, after the initramfs.
        mkdir -p "$espdir"
        printf '%s /boot/efi vfat umask=0077 0 1\n' "UUID=${vfat_id:0:4}-${vfat_id:4:4}" >"$work/fstab-esp"
        # The command line every entry gets (kernel-install's 90-loaderentry).
        mkdir -p "$dir/etc/kernel"
        printf 'root=UUID=%s ro %s\n' "$uuid" "${VT_E2E_CMDLINE-}" >"$dir/etc/kernel/cmdline"
    fi
    # The package, installed as a user would: the .deb through dpkg (its
    # postinst enables the unit and rebuilds the initramfs), or `make
    # install` where there is no package rule.
    if grep -q '^deb:' "$VT_REPO/Makefile" 2>/dev/null; then
        # Built once by vt_e2e_deb (vm-tests/run), or here.
        deb=$(find "$VT_REPO/target/deb" -maxdepth 1 -name 'gpu-preflight_*_amd64.deb' 2>/dev/null | head -n 1)
        [ -n "$deb" ] || vt_e2e_deb
        deb=$(find "$VT_REPO/target/deb" -maxdepth 1 -name 'gpu-preflight_*_amd64.deb' | head -n 1)
        [ -n "$deb" ] || vt_die "make deb left no package in target/deb"
        cp "$deb" "$dir/tmp/gpu-preflight.deb"
        vt_chroot "$dir" dpkg -i /tmp/gpu-preflight.deb >"$work/dpkg.log" 2>&1 ||
            { tail -n 20 "$work/dpkg.log" >&2; vt_die "dpkg -i of the package failed in the disk root"; }
        rm -f "$dir/tmp/gpu-preflight.deb"
    elif [ -f "$VT_REPO/Makefile" ] && grep -q '^install:' "$VT_REPO/Makefile"; then
        make -s -C "$VT_REPO" install DESTDIR="$dir" PREFIX=/usr >&2 || vt_die "make install into the disk root failed"
    else
        mkdir -p "$dir/usr/bin"
        cp "$VT_BIN_PATH" "$dir/usr/bin/gpu-preflight"
    fi
    if [ -n "${VT_STAGE_OVERLAY-}" ]; then
        cp -a "$VT_STAGE_OVERLAY/." "$dir/"
    fi
    # The settings go into the image too: written before it is rebuilt below.
    printf '%s\n' "${VT_E2E_CONF-}" >"$dir/etc/gpu-preflight.conf"

    echo vmtest >"$dir/etc/hostname"
    printf 'UUID=%s / ext4 errors=remount-ro 0 1\n' "$uuid" >"$dir/etc/fstab"
    [ "$loader" = sdboot ] && cat "$work/fstab-esp" >>"$dir/etc/fstab"
    [ "$loader" = grub ] && cat >"$dir/etc/default/grub" <<GRUB
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="${VT_E2E_CMDLINE-}"
GRUB_TERMINAL=console
GRUB_DISABLE_OS_PROBER=true
GRUB
    # The first grub.cfg, written here because grub-mkconfig would probe
    # this host's disks; the guest's own update-grub replaces it.
    [ "$loader" = grub ] && mkdir -p "$dir/boot/grub" && cat >"$dir/boot/grub/grub.cfg" <<CFG
set timeout=0
search --no-floppy --fs-uuid --set=root $uuid
menuentry 'Debian GNU/Linux' {
    insmod part_gpt
    insmod ext2
    linux /boot/vmlinuz-$kver root=UUID=$uuid ro ${VT_E2E_CMDLINE-}
    initrd /boot/initrd.img-$kver
}
CFG

    # The reporter runs after everything of ours that is enabled.
    install -m 0755 "$VT_DIR/guest/e2e-report" "$dir/usr/local/sbin/vm-tests-report"
    units=
    for unit in "$dir"/usr/lib/systemd/system/gpu-preflight*.service "$dir"/lib/systemd/system/gpu-preflight*.service; do
        [ -f "$unit" ] || continue
        units="$units ${unit##*/}"
    done
    # shellcheck disable=SC2086 # one unit name per word
    after=$(printf '%s\n' $units | sort -u | tr '\n' ' ')
    cat >"$dir/etc/systemd/system/vm-tests-report.service" <<UNIT
[Unit]
Description=vm-tests: send this boot's results over the second serial port
After=multi-user.target $after

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vm-tests-report
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
UNIT
    systemctl --root="$dir" enable vm-tests-report.service >&2
    for unit in $after; do
        # What the package's own postinst would enable.
        grep -q '^\[Install\]' "$dir/usr/lib/systemd/system/$unit" 2>/dev/null &&
            systemctl --root="$dir" enable "$unit" >&2
    done

    # The initramfs, with the hook, made by the guest system's own tools.
    case $gen in
    itools)
        vt_chroot "$dir" update-initramfs -u -k "$kver" >"$work/initramfs.log" 2>&1 ||
            vt_chroot "$dir" update-initramfs -c -k "$kver" >>"$work/initramfs.log" 2>&1 ||
            { tail -n 20 "$work/initramfs.log" >&2; vt_die "update-initramfs in the disk root failed"; }
        vt_chroot "$dir" lsinitramfs "/boot/initrd.img-$kver" 2>/dev/null | grep -q 'usr/bin/gpu-preflight$' ||
            vt_die "the disk's initramfs has no usr/bin/gpu-preflight: the hook did not run"
        ;;
    dracut)
        # dracut in place of initramfs-tools' image, at the name GRUB's
        # scripts look for. Not host-only: in a chroot dracut would take
        # this host's devices for the guest's; root= comes from GRUB.
        vt_chroot "$dir" dracut --force --no-hostonly --no-hostonly-cmdline --kver "$kver" \
            "/boot/initrd.img-$kver" >"$work/initramfs.log" 2>&1 ||
            { tail -n 20 "$work/initramfs.log" >&2; vt_die "dracut in the disk root failed"; }
        vt_chroot "$dir" lsinitrd "/boot/initrd.img-$kver" 2>/dev/null | grep -q 'usr/bin/gpu-preflight$' ||
            vt_die "the disk's dracut image has no usr/bin/gpu-preflight: the module was not included"
        ;;
    esac
    if [ "$loader" = sdboot ]; then
        # systemd-boot as bootctl installs it, and the entry as Debian's
        # kernel and initramfs hooks write it, on an ESP that is a file
        # system of its own (a tmpfs in the chroot's mount namespace, copied
        # out into the FAT image below): bootctl wants the root of a file
        # system, and kernel-install names the entry's files relative to the
        # ESP's mount point (`stat -c %m`). Relaxed checks for a tmpfs, no
        # EFI variables: OVMF boots the removable-media path bootctl writes.
        mkdir -p "$work/esp-tree"
        # shellcheck disable=SC2016 # the inner shell expands its own arguments
        vt_chroot "$dir" /bin/sh -c '
            set -e
            mount -t tmpfs vt-esp /boot/efi
            SYSTEMD_RELAX_ESP_CHECKS=1 bootctl install --esp-path=/boot/efi --no-variables --make-entry-directory=yes
            printf "timeout 0\n" >/boot/efi/loader/loader.conf
            kernel-install --verbose add "$1" "/boot/vmlinuz-$1"
            mkdir -p /var/tmp/vt-esp
            cp -R /boot/efi/. /var/tmp/vt-esp/
        ' vt-esp "$kver" >"$work/kernel-install.log" 2>&1 ||
            { tail -n 20 "$work/kernel-install.log" >&2; vt_die "bootctl install or kernel-install add in the disk root failed"; }
        rm -rf "$work/esp-tree"
        mv "$dir/var/tmp/vt-esp" "$work/esp-tree"
        grep -q "^linux *//*[0-9a-f]*/$kver/linux\$" "$work"/esp-tree/loader/entries/*-"$kver".conf ||
            vt_die "kernel-install wrote no entry for $kver with its files on the ESP (log: $work/kernel-install.log)"
    fi

    local esp=$work/esp.img root=$work/root.img early=$work/early.cfg
    rm -f "$esp"
    mkfs.fat -F 32 -i "$vfat_id" -C "$esp" $((esp_mb * 1024)) >/dev/null || vt_die "mkfs.fat failed"
    if [ "$loader" = sdboot ]; then
        # What bootctl and kernel-install put on the ESP, moved into the FAT
        # image; the root keeps /boot/efi as the empty mount point.
        mcopy -s -i "$esp" "$work/esp-tree"/* ::/ || vt_die "mtools could not fill the ESP"
    else
        # A standalone GRUB (modules in its memdisk) at the removable-media
        # path, so OVMF boots it without boot entries; it reads the root's
        # grub.cfg, the one update-grub maintains.
        # shellcheck disable=SC2016 # $root is GRUB's variable
        printf 'search --no-floppy --fs-uuid --set=root %s\nconfigfile ($root)/boot/grub/grub.cfg\n' "$uuid" >"$early"
        grub-mkstandalone -O x86_64-efi -o "$work/BOOTX64.EFI" \
            --modules="part_gpt ext2 fat search search_fs_uuid configfile linux normal echo test" \
            "boot/grub/grub.cfg=$early" || vt_die "grub-mkstandalone failed"
        if ! mmd -i "$esp" ::/EFI ::/EFI/BOOT || ! mcopy -i "$esp" "$work/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI; then
            vt_die "mtools could not fill the ESP"
        fi
    fi
    rm -f "$root"
    mke2fs -q -t ext4 -U "$uuid" -L vmroot -d "$dir" "$root" "${root_mb}M" >/dev/null || vt_die "mke2fs of the root failed"

    rm -f "$out"
    truncate -s $((1 + esp_mb + root_mb + 1))M "$out"
    sfdisk -q "$out" <<PARTS || vt_die "sfdisk failed"
label: gpt
start=1MiB, size=${esp_mb}MiB, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=esp
start=$((1 + esp_mb))MiB, size=${root_mb}MiB, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=root
PARTS
    dd if="$esp" of="$out" bs=1M seek=1 conv=notrunc,sparse status=none
    dd if="$root" of="$out" bs=1M seek=$((1 + esp_mb)) conv=notrunc,sparse status=none
    rm -f "$esp" "$root"
    rm -rf "$dir"
}

# vt_chroot DIR CMD...: run CMD inside DIR with /proc, /sys and /dev
# mounted in a private mount namespace (gone when CMD ends).
vt_chroot() {
    local dir=$1
    shift
    # shellcheck disable=SC2016 # the inner script expands its own arguments
    unshare -m -f /bin/bash -c '
        d=$1; shift
        mount --make-rprivate /
        mount -t proc proc "$d/proc" && mount -t sysfs sysfs "$d/sys" &&
            mount --rbind /dev "$d/dev" || exit 1
        exec chroot "$d" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
    ' vt-chroot "$dir" "$@"
}

# vt_e2e_boot NAME DISK DIR: one boot of the end-to-end disk (qcow2 overlay
# DISK) under the scenario's machine; results unpacked in DIR/report. In a
# dry run (VT_DRY_RUN) only the command line is printed.
vt_e2e_boot() {
    local name=$1 disk=$2 d=$3 limit
    [ -n "${VT_DRY_RUN-}" ] || mkdir -p "$d/report"
    vt_vm_from_scenario "$name"
    vt_vm_qemu "$d"
    # shellcheck disable=SC2054 # commas belong to QEMU's syntax
    VT_QEMU+=(-drive "file=$disk,if=none,id=disk,format=qcow2"
        -device ide-hd,drive=disk,bus=ide.0
        -serial "file:$d/console.log" -serial "file:$d/report.b64")
    limit=$(sc "$name" timeout 300)
    if [ -n "${VT_DRY_RUN-}" ]; then
        vt_vm_boot "$d" "$limit" >/dev/null
        return 0
    fi
    vt_fmt_cmd "${VT_QEMU[@]}" >"$d/qemu-cmdline"
    vt_vm_boot "$d" "$limit" >"$d/seconds"
    if [ -s "$d/report.b64" ]; then
        vt_serial_payload "$d/report.b64" REPORT-BEGIN REPORT-END | tar -xz -C "$d/report" 2>/dev/null
    fi
}

# vt_e2e_run NAME RESULTS_DIR BASE_DISK [FLAVOUR]: the boots of one
# end-to-end scenario on its own copy-on-write disk, judged boot by boot.
#   expect=fix    boot 1 fails firmware_left_unassigned and the remediation
#                 puts pci=realloc into grub.cfg (GRUB: our grub.d
#                 fragment; systemd-boot: our kernel-install plugin and the
#                 entry it rewrote); boot 2 has it on the command line
#                 (through the boot loader) and passes; boot 3 changes
#                 nothing on the disk.
#   expect=nofix  boot 1 fails window_too_small; boot 2 still fails, the disk
#                 is as boot 1 left it, and the host-side hints are in the
#                 journal.
# Writes RESULTS_DIR/result and RESULTS_DIR/why as vm-tests/run expects.
vt_e2e_run() {
    local n=$1 d=$2 base=$3 flavour=${4:-grub-itools} disk boots i why=() obs=() total=0 b prev json
    local expect loader=${flavour%-*}
    expect=$(sc "$n" expect fix)
    boots=$(sc "$n" boots 3)
    mkdir -p "$d"
    : >"$d/why"
    disk=$d/disk.qcow2
    qemu-img create -q -f qcow2 -F raw -b "$base" "$disk" || vt_die "qemu-img create failed"
    for ((i = 1; i <= boots; i++)); do
        b=$d/boot$i
        vt_e2e_boot "$n" "$disk" "$b"
        total=$((total + $(cat "$b/seconds")))
        # The console log of the last boot is the one shown on failure.
        cp "$b/console.log" "$d/console.log" 2>/dev/null
        json=$b/report/run-gpu-preflight/report.json
        if [ ! -f "$b/report/complete" ]; then
            why+=("boot $i: the guest did not report (no vm-tests-report run; see $b/console.log)")
            # Never an empty field: run's tab-separated result reading
            # would shift the seconds into it.
            obs+=("b$i:no-report")
            break
        fi
        local verdict diag cmd un
        verdict=$(jq -r .verdict "$json" 2>/dev/null)
        diag=$(jq -r .diagnosis "$json" 2>/dev/null)
        un=$(jq -r '[.unassigned[]?.bdf] | unique | length' "$json" 2>/dev/null)
        cmd=$(cat "$b/report/cmdline")
        obs+=("b$i:${verdict:-none}/${diag:-none}")
        grep -q 'gpu-preflight:' "$b/report/kernel.log" ||
            why+=("boot $i: no 'gpu-preflight:' line in journalctl -k")
        if [ "$loader" = sdboot ] && ! grep -q '^systemd-boot' "$b/report/loader-info" 2>/dev/null; then
            why+=("boot $i: not started by systemd-boot (LoaderInfo: $(cat "$b/report/loader-info" 2>/dev/null || echo none))")
        fi
        case $expect:$i in
        fix:1)
            [ "$verdict/$diag" = fail/firmware_left_unassigned ] ||
                why+=("boot 1: $verdict/$diag, expected fail/firmware_left_unassigned")
            if [ "$loader" = sdboot ]; then
                [ -f "$b/report/disk/install.d/95-gpu-preflight.install" ] ||
                    why+=("boot 1: no /etc/kernel/install.d/95-gpu-preflight.install after the remediation")
                grep -q ' pci=realloc' "$b/report/disk/entry-options" ||
                    why+=("boot 1: no systemd-boot entry has pci=realloc after the remediation: $(tr '\n' ' ' <"$b/report/disk/entry-options")")
                [ -e "$b/report/disk/grub.d/99-gpu-preflight.cfg" ] &&
                    why+=("boot 1: the GRUB fragment was written on a systemd-boot system")
            else
                grep -q 'pci=realloc' "$b/report/disk/grub-linux-lines" ||
                    why+=("boot 1: grub.cfg has no pci=realloc after the remediation")
                [ -f "$b/report/disk/grub.d/99-gpu-preflight.cfg" ] ||
                    why+=("boot 1: no /etc/default/grub.d/99-gpu-preflight.cfg after the remediation")
            fi
            ;;
        fix:2)
            case " $cmd " in *" pci=realloc "*) ;; *) why+=("boot 2: pci=realloc not on /proc/cmdline: $cmd") ;; esac
            [ "$verdict/$diag/$un" = ok/ok/0 ] || why+=("boot 2: $verdict/$diag with $un unassigned, expected ok/ok/0")
            ;;
        fix:*)
            [ "$verdict/$diag" = ok/ok ] || why+=("boot $i: $verdict/$diag, expected ok/ok")
            cmp -s "$prev/report/disk/sha256" "$b/report/disk/sha256" ||
                why+=("boot $i changed the boot configuration: $(diff "$prev/report/disk/sha256" "$b/report/disk/sha256" | grep '^[<>]' | tr '\n' ' ')")
            ;;
        nofix:1)
            [ "$verdict/$diag" = fail/window_too_small ] ||
                why+=("boot 1: $verdict/$diag, expected fail/window_too_small")
            # pci=realloc cannot grow the root window: nothing to write.
            if [ -e "$b/report/disk/grub.d/99-gpu-preflight.cfg" ] || grep -q 'pci=realloc' "$b/report/disk/grub-linux-lines"; then
                why+=("boot 1: pci=realloc was added although it cannot fix window_too_small")
            fi
            ;;
        nofix:*)
            [ "$verdict" = fail ] || why+=("boot $i: verdict $verdict, expected fail")
            cmp -s "$prev/report/disk/sha256" "$b/report/disk/sha256" ||
                why+=("boot $i changed the boot configuration: $(diff "$prev/report/disk/sha256" "$b/report/disk/sha256" | grep '^[<>]' | tr '\n' ' ')")
            grep -q 'qemu-pci-hole64-size' "$b/report/journal.log" ||
                why+=("boot $i: the host-side hint qemu-pci-hole64-size is not in the journal")
            ;;
        esac
        prev=$b
    done
    if [ ${#why[@]} -eq 0 ]; then
        printf 'pass\t%s\t%s\n' "${obs[*]}" "$total" >"$d/result"
    else
        printf '%s\n' "${why[@]}" >"$d/why"
        printf 'fail\t%s\t%s\n' "${obs[*]}" "$total" >"$d/result"
    fi
}
