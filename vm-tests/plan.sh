# shellcheck shell=bash
# `gpu-preflight plan` against the boots: before each boot (the first and
# each closed-loop one), plan is asked about the same VM, given as flags and,
# for scenarios with plan_as=yes, as a Proxmox VM config and a libvirt domain
# XML built here on a fake host tree; after the boot its prediction is set
# beside what the guest kernel did with the stand-ins' BARs (guest/report-init
# and guest/e2e-report send /sys/bus/pci/devices/*/resource of each).
#
# Files in a boot's directory:
#   plan/<source>.json   plan's report (source: flags, proxmox, libvirt)
#   plan/<source>.err    its stderr; plan/<source>.rc its exit status
#   plan/unexpressed     why plan's flags cannot describe the VM (a switch):
#                        plan is not asked, and the comparison says so
#   plan-host/           the fake host tree (plan_as=yes)
#   plan-compare         one line per source: source, predicted ok and
#                        count, observed ok and count,
#                        match|count|MISS|n/a|unexpressed, and a note
# The VM comes from vm.sh (vt_vm_from_scenario), its flags from
# vt_vm_plan_flags. Sourced by vm-tests/run after lib.sh and vm.sh.

# vt_plan_host NAME DIR: a fake host tree in DIR holding the scenario's VM as
# Proxmox config 900 and libvirt domain NAME, with the stand-ins as host
# functions 0000:41:00.0, 0000:42:00.0, ...: BAR 0 256 bytes (32-bit), BAR 2
# the stand-in's size (64-bit prefetchable), as ivshmem-plain has them. Their
# class is a 3D controller's: passed through, they are the GPUs.
vt_plan_host() {
    local n=$1 h=$2 i bdf dev start bytes cpu_pve feats='' hostdevs='' fwattr='' pcihole='' qemucl='' args
    local fw fwver model bits flags vendor count size ram hole64 mmio64 f
    vt_vm_from_scenario "$n"
    vt_vm_facts
    # The fake host holds what it can say: single stand-ins on q35's root
    # ports, as Proxmox's pcie=1 and libvirt's default place them.
    [ "${VF[family]}:${VF[topology]}:$(vm standin single)" = q35:root-ports:single ] ||
        vt_die "scenario $n: plan_as=yes needs single stand-ins on q35 root ports"
    fw=$(vm fw seabios) fwver=$(vt_vm_firmware) model=${VF[model]} bits=${VF[bits]} flags=${VF[flags]}
    case $fwver in *:*) fwver=${fwver#*:} ;; *) fwver='' ;; esac
    vendor=${VF[vendor]} count=${VF[count]} size=${VF[size]} ram=$(vm ram 1G)
    hole64=${VF[hole64]} mmio64=${VF[mmio64]} args=$(vt_vm_host_args)
    rm -rf "$h"
    mkdir -p "$h/etc/pve/qemu-server" "$h/etc/libvirt/qemu" "$h/proc" "$h/var/lib/dpkg" "$h/sys/bus/pci/devices"
    bytes=$(vt_size_bytes "$size")
    for ((i = 0; i < count; i++)); do
        bdf=$(printf '0000:%02x:00.0' $((0x41 + i)))
        dev=$h/sys/devices/pci0000:40/0000:40:$(printf '%02x' $((i + 1))).0/$bdf
        mkdir -p "$dev"
        echo 0x1af4 >"$dev/vendor"
        echo 0x1110 >"$dev/device"
        echo 0x030200 >"$dev/class"
        start=$(((0x100 + i * (bytes >> 30)) << 30))
        {
            printf '0x%016x 0x%016x 0x%016x\n' $((0xfe000000 + i * 4096)) $((0xfe000000 + i * 4096 + 255)) 0x40200
            printf '0x%016x 0x%016x 0x%016x\n' 0 0 0
            printf '0x%016x 0x%016x 0x%016x\n' "$start" $((start + bytes - 1)) 0x14220c
            for f in 3 4 5 6; do printf '0x%016x 0x%016x 0x%016x\n' 0 0 0; done
        } >"$dev/resource"
        ln -s "../../../devices/pci0000:40/0000:40:$(printf '%02x' $((i + 1))).0/$bdf" "$h/sys/bus/pci/devices/$bdf"
        echo "hostpci$i: $bdf,pcie=1" >>"$h/hostpci"
        hostdevs+="    <hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='$(printf '0x%02x' $((0x41 + i)))' slot='0x00' function='0x0'/></source></hostdev>
"
    done
    # KVM shows the guest the host's vendor; the host has bits to spare.
    printf 'processor\t: 0\nvendor_id\t: %s\nflags\t\t: fpu pae pse36 lm pdpe1gb\naddress sizes\t: 46 bits physical, 57 bits virtual\n\n' \
        "$([ "$vendor" = intel ] && echo GenuineIntel || echo AuthenticAMD)" >"$h/proc/cpuinfo"
    printf 'Package: %s\nStatus: install ok installed\nVersion: %s\n\n' "$([ "$fw" = ovmf ] && echo ovmf || echo seabios)" "$fwver" >"$h/var/lib/dpkg/status"
    # Proxmox: cpu: MODEL[,flags=+A;+B][,phys-bits=N]; QEMU arguments in args:.
    cpu_pve=$model
    for f in $flags; do feats+=";+$f"; done
    [ -z "$feats" ] || cpu_pve+=",flags=${feats#;}"
    [ -z "$bits" ] || cpu_pve+=",phys-bits=$bits"
    {
        echo "bios: $fw"
        echo "cpu: $cpu_pve"
        cat "$h/hostpci" 2>/dev/null
        echo "machine: q35"
        echo "memory: $(($(vt_size_bytes "$ram") >> 20))"
        echo "name: $n"
        [ -z "$args" ] || echo "args: $args"
    } >"$h/etc/pve/qemu-server/900.conf"
    # libvirt: the same VM.
    [ "$fw" = ovmf ] && fwattr=" firmware='efi'"
    feats=''
    for f in $flags; do feats+="<feature policy='require' name='$f'/>"; done
    [ -z "$bits" ] || feats+="<maxphysaddr mode='emulate' bits='$bits'/>"
    [ -z "$hole64" ] && pcihole='' || pcihole="<pcihole64 unit='KiB'>$(($(vt_size_bytes "$hole64") >> 10))</pcihole64>"
    [ -z "$mmio64" ] || qemucl="  <qemu:commandline><qemu:arg value='-fw_cfg'/><qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,string=$mmio64'/></qemu:commandline>
"
    cat >"$h/etc/libvirt/qemu/$n.xml" <<XML
<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$n</name>
  <memory unit='KiB'>$(($(vt_size_bytes "$ram") >> 10))</memory>
  <os$fwattr><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
  <cpu mode='custom' match='exact' check='none'><model fallback='forbid'>$model</model>$feats</cpu>
  <devices>
    <controller type='pci' index='0' model='pcie-root'>$pcihole</controller>
$hostdevs  </devices>
$qemucl</domain>
XML
}

# vt_plan NAME DIR: plan's predictions for scenario NAME before its boot.
# In a dry run (VT_DRY_RUN) the calls are printed and nothing is written.
vt_plan() {
    local n=$1 d=$2 src why rc dry=${VT_DRY_RUN-} args=()
    [ -n "$dry" ] || mkdir -p "$d/plan"
    vt_vm_from_scenario "$n"
    vt_vm_facts
    [ "${VF[count]}" = 0 ] && return 0
    why=$(vt_vm_unexpressed)
    if [ -n "$why" ]; then
        # Said in the comparison, never put into flags plan does not have.
        if [ -n "$dry" ]; then echo "plan: none: $why" >>"$dry"; else echo "$why" >"$d/plan/unexpressed"; fi
        return 0
    fi
    # GPU-shaped stand-ins (standin=gpu) have several BARs per GPU and are
    # judged against plan by vm-tests/campaign, whose records keep each
    # function's BARs.
    [ "$(vm standin single)" = gpu ] && return 0
    mapfile -t args < <(vt_vm_plan_flags full)
    rc=$(vt_plan_exec plan "$d/plan/flags.json" "$d/plan/flags.err" "${args[@]}" --format json)
    [ -n "$dry" ] || echo "$rc" >"$d/plan/flags.rc"
    case $(sc "$n" plan_as) in yes | libvirt) ;; *) return 0 ;; esac
    [ -n "$dry" ] || vt_plan_host "$n" "$d/plan-host"
    # Only guest-side settings come as flags: pci=realloc is the guest's.
    args=()
    [ -z "${VF[realloc]}" ] || args+=(--realloc)
    for src in proxmox libvirt; do
        [ $src = proxmox ] && [ "$(sc "$n" plan_as)" = libvirt ] && continue
        if [ $src = proxmox ]; then
            set -- --proxmox 900
        else
            set -- --libvirt "$d/plan-host/etc/libvirt/qemu/$n.xml"
        fi
        rc=$(vt_plan_exec plan "$d/plan/$src.json" "$d/plan/$src.err" --root "$d/plan-host" "$@" "${args[@]}" --format json)
        [ -n "$dry" ] || echo "$rc" >"$d/plan/$src.rc"
    done
}

# vt_plan_compare NAME DIR [REPORT]: set each prediction in DIR/plan beside
# what the boot showed (REPORT, default DIR/report: its standins file, "BDF
# START END FLAGS" of each stand-in's BAR 2; START 0 is a BAR the guest
# kernel left unassigned). Writes DIR/plan-compare; returns 1 when a
# prediction was wrong: `ok`, or the count unless the scenario's plan_miss
# explains why.
vt_plan_compare() {
    local n=$1 d=$2 r=${3:-$2/report} f fn src rc pok pn ook='' on='' total want res bad=0
    : >"$d/plan-compare"
    [ -d "$d/plan" ] || return 0
    want=$(sc "$n" gpus 0)
    want=${want%%x*}
    if [ -f "$r/standins" ]; then
        # A GPU-shaped stand-in is counted by its function 0 (the VRAM).
        fn=.
        [ "$(sc "$n" standin)" = gpu ] && fn='^[^ ]*\.0 '
        total=$(grep -c -- "$fn" "$r/standins")
        on=$(grep -- "$fn" "$r/standins" | awk '$2 ~ /^0x0+$/' | grep -c .)
        if [ "$total" = "$want" ]; then
            ook=$([ "$on" = 0 ] && echo true || echo false)
        else
            ook="saw-$total-of-$want"
        fi
    fi
    if [ -s "$d/plan/unexpressed" ]; then
        printf 'flags\t-\t-\t%s\t%s\tunexpressed\t%s\n' "${ook:--}" "${on:--}" "$(cat "$d/plan/unexpressed")" >>"$d/plan-compare"
    fi
    for f in "$d"/plan/*.rc; do
        [ -e "$f" ] || continue
        src=$(basename "$f" .rc)
        rc=$(cat "$f")
        if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
            printf '%s\t-\t-\t%s\t%s\tMISS\tplan exit %s: %s\n' "$src" "${ook:--}" "${on:--}" "$rc" "$(head -n 1 "$d/plan/$src.err")" >>"$d/plan-compare"
            bad=1
            continue
        fi
        pok=$(jq -r '.predicted.ok' "$d/plan/$src.json")
        pn=$(jq -r '.predicted.unassigned_gpus' "$d/plan/$src.json")
        if [ -z "$ook" ]; then
            res=n/a
        elif [ "$pok" != "$ook" ]; then
            res=MISS
            bad=1
        elif [ "$pn" != "$on" ]; then
            res=count
            [ -n "$(sc "$n" plan_miss)" ] || bad=1
        else
            res=match
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$src" "$pok" "$pn" "${ook:--}" "${on:--}" "$res" >>"$d/plan-compare"
    done
    return $bad
}
