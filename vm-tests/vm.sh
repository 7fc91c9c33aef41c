# shellcheck shell=bash
# One description of a VM, and everything made from it: QEMU's command line,
# `gpu-preflight plan`'s flags, the host-side arguments a hypervisor config
# carries, and the boot itself. vm-tests/run fills it from a scenario
# (vt_vm_from_scenario), vm-tests/campaign from a drawn configuration
# (vt_cfg_vm there); both boot it with vt_vm_boot. Sourced after lib.sh,
# matrix.sh and standins.sh.
#
# The description is the associative array VM; every key may be left
# empty for its default:
#   qemu      the QEMU build (vm-tests/matrix.sh): qemu-7.2 (default, the
#             system's) | qemu-10.0.2
#   machine   q35 (default) | pc | a versioned type (pc-q35-7.0,
#             pc-i440fx-7.0)
#   fw        seabios (default) | ovmf
#   build     a firmware build of the matrix (seabios-1.16.3); empty: the
#             system's package (SeaBIOS: QEMU's own, OVMF: -bios $VT_OVMF)
#   cpu       the -cpu value (default qemu64): model, then vendor=,
#             phys-bits=, +FLAG as QEMU takes them
#   ram       guest RAM (default 1G); any other size is a sparse file
#   maxmem, slots   memory hot-plug (-m RAM,slots=N,maxmem=SIZE)
#   standin   single (default): one ivshmem-plain per GPU, its BAR 2 the
#             size; gpu: the GPU-shaped stand-ins of standins.sh
#   gpus      COUNTxSIZE (8x128G); 0 (default) for none
#   topology  root-ports | bridge | bus0 | switch, or Proxmox's own
#             layouts pve-bridge | pve-ports (q35) | pve-bus0 (pc)
#             (standins.sh); default root-ports on q35, bus0 on pc
#   ports     empty pcie-root-ports after the stand-ins (default 0; the
#             pve-* layouts have Proxmox's instead)
#   nic       none (default) | virtio: a virtio-net behind one more root
#             port, on bus 0 (bus0), or on Proxmox's pci.0 (pve-*)
#   vga       none (default) | std
#   global    QEMU globals, DRIVER.PROP=VALUE, space separated (-global)
#   fw_cfg    fw_cfg strings, NAME=VALUE, space separated (-fw_cfg)
#   smbios    SMBIOS entries, each a -smbios value, separated by `|` (the
#             values may hold spaces: type=1,manufacturer=OpenStack Foundation)
#   host      further QEMU arguments, word-split, last on the command line
#   guest     the guest kernel's own command line words (mem=1G pci=realloc)

declare -gA VM=()
# Facts derived from VM by vt_vm_facts (and only there).
declare -gA VF=()

# The firmware builds QEMU boots when a VM names no build: Debian's ovmf
# and seabios packages.
vt_pkg_version() {
    dpkg-query -W -f='${Version}' "$1" 2>/dev/null
}
VT_OVMF_VERSION=${VT_OVMF_VERSION:-$(vt_pkg_version ovmf)}
VT_SEABIOS_VERSION=${VT_SEABIOS_VERSION:-$(vt_pkg_version seabios)}
# Clock ticks a second, for QEMU's CPU time in /proc/PID/stat.
VT_CLK_TCK=${VT_CLK_TCK:-$(getconf CLK_TCK 2>/dev/null || echo 100)}

# The keys of VM (and of a scenario's VM).
VT_VM_KEYS='qemu machine fw build cpu ram maxmem slots standin gpus topology ports nic vga global fw_cfg smbios host guest'

# vm KEY [DEFAULT]: a field of the description.
vm() {
    local v=${VM[$1]-}
    printf '%s' "${v:-${2-}}"
}

# vt_vm_from_scenario NAME: VM from the scenario's fields (the scenario
# keys of the same names).
vt_vm_from_scenario() {
    local k
    VM=()
    [ -z "$(sc "$1" topo)" ] || vt_die "scenario $1: 'topo' is gone; say topology=root-ports|bridge|bus0|switch"
    for k in $VT_VM_KEYS; do
        VM[$k]=$(sc "$1" "$k")
    done
}

# vt_vm_facts: checks the description and fills VF with what the command
# line and plan's flags are made of; dies, saying why, on a VM that cannot
# be built as described.
#   family      q35 | pc (the machine type's chipset)
#   pcihost     its host bridge's QEMU type (for pci-hole64-size)
#   count size  the stand-ins
#   model vendor bits flags   the vCPU (vendor: amd | intel)
#   hole64 mmio64 realloc guest_mem   what the globals, fw_cfg and guest say
#   ports       empty root ports as plan counts them (the NIC's port too)
vt_vm_facts() {
    local w words=() model
    VF=()
    case $(vm machine q35) in
    q35 | pc-q35-*) VF[family]=q35 VF[pcihost]=q35-pcihost ;;
    pc | pc-i440fx-*) VF[family]=pc VF[pcihost]=i440FX-pcihost ;;
    *) vt_die "unknown machine $(vm machine)" ;;
    esac
    case $(vm fw seabios) in
    seabios | ovmf) ;;
    *) vt_die "unknown firmware $(vm fw)" ;;
    esac
    case $(vm build) in
    '' | "$(vm fw seabios)"-*) ;;
    *) vt_die "firmware build $(vm build) is not $(vm fw seabios)" ;;
    esac
    case $(vm gpus 0) in
    0) VF[count]=0 VF[size]='' ;;
    [1-9]*x[1-9]*) VF[count]=${VM[gpus]%%x*} VF[size]=${VM[gpus]#*x} ;;
    *) vt_die "gpus=$(vm gpus): not COUNTxSIZE" ;;
    esac
    case $(vm standin single) in
    single | gpu) ;;
    *) vt_die "unknown stand-in kind $(vm standin)" ;;
    esac
    VF[topology]=$(vm topology "$([ "${VF[family]}" = pc ] && echo bus0 || echo root-ports)")
    case ${VF[family]}:${VF[topology]} in
    q35:root-ports | q35:bridge | q35:switch | pc:bus0 | q35:pve-bridge | q35:pve-ports | pc:pve-bus0) ;;
    q35:bus0 | pc:root-ports | pc:bridge | pc:switch | pc:pve-bridge | pc:pve-ports | q35:pve-bus0)
        vt_die "topology ${VF[topology]} needs machine=$(case ${VF[topology]} in *bus0) echo pc ;; *) echo q35 ;; esac)" ;;
    *) vt_die "unknown topology ${VF[topology]} (root-ports, bridge, bus0, switch, pve-bridge, pve-ports, pve-bus0)" ;;
    esac
    case $(vm nic none) in
    none | virtio) ;;
    *) vt_die "unknown nic $(vm nic)" ;;
    esac
    # Empty root ports as plan counts them. The NIC is a further 64-bit
    # device wherever it sits (VF[dev64]: the sizes of their 64-bit
    # prefetchable BARs, for --device64; a virtio-pci device's modern BAR
    # is 16 KiB: hw/virtio/virtio-pci.c virtio_pci_device_plugged, four
    # 4 KiB regions): on bus 0, on Proxmox's pci.0, or on a root port of
    # its own, which is then not empty (campaign seed 20261203 record
    # 0829: OVMF's 32 GiB window, no hot-plug padding, gives the NIC's
    # port a 1 MiB window, and a second 16 GiB GPU no longer fits; told
    # the port was empty, plan placed two).
    VF[dev64]=''
    case ${VF[topology]} in
    pve-*)
        [ -z "$(vm ports)" ] || [ "$(vm ports)" = 0 ] || vt_die "topology ${VF[topology]} has Proxmox's ports, not ports=$(vm ports)"
        case ${VF[topology]} in
        pve-ports) VF[ports]=$((VF[count] < 4 ? 4 - VF[count] : 0)) ;;
        pve-bridge) VF[ports]=4 ;;
        pve-bus0) VF[ports]=0 ;;
        esac
        [ "$(vm nic none)" = none ] || VF[dev64]=16K
        ;;
    bus0)
        VF[ports]=$(vm ports 0)
        [ "$(vm nic none)" = none ] || VF[dev64]=16K
        ;;
    *)
        VF[ports]=$(vm ports 0)
        [ "$(vm nic none)" = none ] || VF[dev64]=16K
        ;;
    esac
    [ "${VF[family]}" = q35 ] || [ "${VF[ports]}" = 0 ] || vt_die "empty root ports need machine=q35"

    # The vCPU. A model's vendor is what QEMU gives it unless vendor= says
    # otherwise (target/i386/cpu.c, builtin_x86_defs: qemu64 and EPYC are
    # AuthenticAMD, Skylake-* and Icelake-* GenuineIntel); any other model
    # must say vendor=, so that plan is never told a guess.
    IFS=, read -r -a words <<<"$(vm cpu qemu64)"
    model=${words[0]}
    VF[model]=$model VF[bits]='' VF[flags]='' VF[vendor]=''
    for w in "${words[@]:1}"; do
        case $w in
        phys-bits=*) VF[bits]=${w#phys-bits=} ;;
        vendor=GenuineIntel) VF[vendor]=intel ;;
        vendor=AuthenticAMD) VF[vendor]=amd ;;
        vendor=*) vt_die "-cpu $(vm cpu): vendor ${w#vendor=} is neither AMD nor Intel" ;;
        +*) VF[flags]+="${VF[flags]:+ }${w#+}" ;;
        esac
    done
    if [ -z "${VF[vendor]}" ]; then
        case $model in
        qemu64 | EPYC*) VF[vendor]=amd ;;
        Skylake-* | Icelake-*) VF[vendor]=intel ;;
        *) vt_die "-cpu $(vm cpu): say vendor= (the model's own vendor is not known here)" ;;
        esac
    fi

    # Host side: the hole64 QEMU's host bridge gets and OVMF's aperture.
    VF[hole64]='' VF[mmio64]=''
    for w in $(vm global); do
        case $w in
        "${VF[pcihost]}.pci-hole64-size="*) VF[hole64]=${w#*=} ;;
        esac
    done
    for w in $(vm fw_cfg); do
        case $w in
        opt/ovmf/X-PciMmio64Mb=*) VF[mmio64]=${w#*=} ;;
        esac
    done
    VF[realloc]='' VF[guest_mem]=''
    for w in $(vm guest); do
        case $w in
        pci=realloc) VF[realloc]=1 ;;
        mem=*) VF[guest_mem]=${w#mem=} ;;
        esac
    done
}

# vt_vm_host_args: the QEMU arguments of the host-side settings (globals,
# fw_cfg, further arguments), as one line: a Proxmox config's args:.
vt_vm_host_args() {
    local w out=''
    for w in $(vm global); do out+=" -global $w"; done
    for w in $(vm fw_cfg); do out+=" -fw_cfg name=${w%%=*},string=${w#*=}"; done
    [ -z "$(vm host)" ] || out+=" $(vm host)"
    printf '%s' "${out# }"
}

# vt_vm_qemu DIR: fills the array VT_QEMU with the VM's QEMU command line
# (the caller adds disks, kernel and serial ports) and VT_VM_FILES with the
# sparse backing files it names, "SIZE PATH" (made by vt_vm_boot, in DIR).
# Touches nothing: the dry run prints what this makes.
vt_vm_qemu() {
    local dir=$1 ram mem w entries
    vt_vm_facts
    VT_QEMU=()
    VT_VM_FILES=()
    # The campaign runs QEMU under nice (VT_QEMU_NICE=5).
    [ -z "${VT_QEMU_NICE-}" ] || VT_QEMU+=(nice -n "$VT_QEMU_NICE")
    # The matrix's QEMU: a wrapper with its own data and modules.
    VT_QEMU+=("$(vt_matrix_qemu "$(vm qemu qemu-7.2)")")
    ram=$(vm ram 1G)
    mem=$ram
    [ -z "$(vm maxmem)" ] || mem+=",slots=$(vm slots),maxmem=$(vm maxmem)"
    if [ "$ram" != 1G ]; then
        # Guest RAM backed by a sparse file: the firmware sees all of it in
        # the e820 map, the guest (booted with mem=1G) touches one GiB.
        VT_VM_FILES+=("$ram $dir/ram.mem")
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-object "memory-backend-file,id=ram0,size=$ram,mem-path=$dir/ram.mem,share=on"
            -machine "$(vm machine q35),memory-backend=ram0" -m "$mem")
    else
        VT_QEMU+=(-machine "$(vm machine q35)" -m "$mem")
    fi
    VT_QEMU+=(-accel tcg -cpu "$(vm cpu qemu64)" -smp 1 -nodefaults -display none -vga "$(vm vga none)" -no-reboot)
    if [ -n "$(vm build)" ]; then
        VT_QEMU+=(-bios "$(vt_matrix_file "$(vm build)")")
    elif [ "$(vm fw seabios)" = ovmf ]; then
        VT_QEMU+=(-bios "$VT_OVMF")
    fi
    for w in $(vm global); do VT_QEMU+=(-global "$w"); done
    for w in $(vm fw_cfg); do VT_QEMU+=(-fw_cfg "name=${w%%=*},string=${w#*=}"); done
    if [ -n "$(vm smbios)" ]; then
        IFS='|' read -r -a entries <<<"$(vm smbios)"
        for w in "${entries[@]}"; do VT_QEMU+=(-smbios "$w"); done
    fi
    vt_standins "$(vm standin single)" "${VF[topology]}" "${VF[count]}" "${VF[size]}" "$(vm ports 0)" "$(vm nic none)" "$dir"
    if [ -n "$(vm host)" ]; then
        # Word splitting is intended: host holds QEMU arguments.
        # shellcheck disable=SC2207
        VT_QEMU+=($(vm host))
    fi
}

# vt_vm_cmdline WORDS...: the guest kernel's command line: the boot's own
# WORDS (console, root), then the VM's guest words, then the caller's
# last words (what the guest's init or check is told) as further WORDS
# after a lone "--".
vt_vm_cmdline() {
    local pre=() post=() a
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        pre+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    post=("$@")
    a="${pre[*]} $(vm guest) ${post[*]}"
    tr -s ' ' <<<"$a" | sed 's/^ //; s/ $//'
}

# vt_vm_firmware [base]: plan's --firmware for the VM: the matrix build's
# version, or the Debian package's. "base": OVMF 2025.02 as the first
# binaries knew it, without the Debian revision.
vt_vm_firmware() {
    local fw b
    fw=$(vm fw seabios)
    b=$(vm build)
    case $b in
    '')
        if [ "$fw" = ovmf ]; then b=$VT_OVMF_VERSION; else b=$VT_SEABIOS_VERSION; fi
        printf '%s%s' "$fw" "${b:+:$b}"
        ;;
    ovmf-2025.02)
        if [ -n "${1-}" ]; then echo ovmf:2025.02; else echo ovmf:2025.02-8+deb13u1; fi
        ;;
    ovmf-2022.02 | ovmf-2024.02)
        # Ubuntu's builds, as plan reads them from an Ubuntu host's
        # package (the version carries its patches).
        if [ -n "${1-}" ]; then echo "ovmf:${b#ovmf-}"; else echo "ovmf:$(vt_matrix_version "$b")"; fi
        ;;
    *) printf '%s:%s\n' "$fw" "${b#"$fw"-}" ;;
    esac
}

# vt_vm_unexpressed: why plan's flags cannot describe the VM (nothing when
# they can).
vt_vm_unexpressed() {
    vt_vm_facts
    [ "${VF[topology]}" != switch ] || echo "plan has no switch topology (--topology: root-ports, bridge, bus0)"
}

# vt_vm_plan_flags full|base: plan's arguments for the VM, one a line.
# "base": only the flags plan has had from the start (QEMU, topology,
# guest memory, 32-bit BARs, hot-plug memory and the machine's version
# left out), for a binary that refuses the others. Dies when the VM cannot
# be said in flags (vt_vm_unexpressed).
vt_vm_plan_flags() {
    local base='' f why
    case $1 in
    full) ;;
    base) base=1 ;;
    *) vt_die "vt_vm_plan_flags: full or base, not $1" ;;
    esac
    vt_vm_facts
    why=$(vt_vm_unexpressed)
    [ -z "$why" ] || vt_die "$why"
    printf '%s\n' --gpus "${VF[count]}" --bar "${VF[size]}"
    if [ "$(vm standin single)" = gpu ]; then
        # The small BAR sits in the stand-in's function 1 (standins.sh),
        # which OVMF can reject, or keep, apart from the VRAM (D3).
        if [ -n "$base" ]; then f=$VT_GPU_BAR64_SMALL; else f=$VT_GPU_BAR64_SMALL@1; fi
        printf '%s\n' --bar "$f"
    fi
    # The base flags name the chipset, not its version.
    if [ -n "$base" ]; then f=${VF[family]}; else f=$(vm machine q35); fi
    printf '%s\n' --ram "$(vm ram 1G)" --firmware "$(vt_vm_firmware "$base")" --machine "$f" \
        --cpu "${VF[model]}" --cpu-vendor "${VF[vendor]}"
    [ -z "${VF[bits]}" ] || printf '%s\n' --phys-bits "${VF[bits]}"
    for f in ${VF[flags]}; do printf '%s\n' --cpu-flag "$f"; done
    [ -z "${VF[hole64]}" ] || printf '%s\n' --hole64 "${VF[hole64]}"
    [ -z "${VF[mmio64]}" ] || printf '%s\n' --mmio64 "${VF[mmio64]}M"
    [ -z "${VF[realloc]}" ] || echo --realloc
    [ "${VF[ports]}" = 0 ] || printf '%s\n' --empty-ports "${VF[ports]}"
    [ -n "$base" ] && return 0
    f=$(vm qemu qemu-7.2)
    # Every boot here runs under TCG: a named model keeps its own vendor
    # and no GuestPhysBits comes from KVM.
    case ${VF[topology]} in
    pve-*)
        # Proxmox's buses; the GPUs are hostpci0, 1, ... with pcie=1 on
        # q35's ports (pve-ports), pcie=0 (pve-bridge), or on i440fx.
        case ${VF[topology]} in
        pve-ports) f=root-ports ;; pve-bridge) f=bridge ;; pve-bus0) f=bus0 ;;
        esac
        printf '%s\n' --qemu "$(vm qemu qemu-7.2 | sed 's/^qemu-//')" --layout proxmox --topology "$f" --accel tcg
        ;;
    *) printf '%s\n' --qemu "${f#qemu-}" --topology "${VF[topology]}" --accel tcg ;;
    esac
    for f in ${VF[dev64]}; do printf '%s\n' --device64 "$f"; done
    [ -z "${VF[guest_mem]}" ] || printf '%s\n' --guest-mem "${VF[guest_mem]}"
    if [ "$(vm standin single)" = gpu ]; then
        for f in $VT_GPU_BAR32; do printf '%s\n' --bar32 "$f"; done
    fi
    [ -z "$(vm maxmem)" ] || printf '%s\n' --maxmem "$(vm maxmem)" --mem-slots "$(vm slots)"
}

# vt_plan_exec LABEL OUT ERR ARGS...: runs `$VT_BIN_PATH plan ARGS`
# (stdout to OUT, stderr to ERR) and prints its exit status; in a dry run
# (VT_DRY_RUN=FILE) appends "LABEL: plan ARGS" to FILE instead and prints
# nothing.
vt_plan_exec() {
    local label=$1 out=$2 err=$3
    shift 3
    if [ -n "${VT_DRY_RUN-}" ]; then
        printf '%s: %s\n' "$label" "$(vt_fmt_cmd plan "$@")" >>"$VT_DRY_RUN"
        return 0
    fi
    "$VT_BIN_PATH" plan "$@" >"$out" 2>"$err"
    echo $?
}

# vt_vm_boot DIR LIMIT [OPTION...]: makes the sparse files of VT_VM_FILES,
# runs VT_QEMU (stdout and stderr to DIR/qemu.log) for at most LIMIT wall
# seconds, and removes the files again. Prints the seconds taken and
# returns QEMU's status (124 on the wall limit; the callers judge the
# guest by what it sent, never by this). Options:
#   --until RE        once the console (DIR/console.log) matches the
#                     extended RE, 3 s more and stop (a boot held at an
#                     emergency shell waits for a key that never comes)
#   --done FILE MARK  stop as soon as a line of FILE starts with MARK (the
#                     guest has said everything)
#   --fw-deadline N   stop when QEMU has had N CPU seconds and the console
#                     shows no kernel yet: the firmware hung (the guest's
#                     own time, so a loaded machine does not make hangs)
#   --cpu-limit N     stop when QEMU has had N CPU seconds
# Writes DIR/secs, DIR/kernel_secs (wall seconds to the kernel's banner,
# or -), DIR/cpu_secs ("CPU-at-banner CPU-at-end"), DIR/qemu.rc and
# DIR/stopped (until | done | firmware_deadline | cpu_limit | wall_limit,
# or empty). In a dry run (VT_DRY_RUN=FILE) appends "qemu: ARGV" to FILE
# and prints 0.
vt_vm_boot() {
    local d=$1 limit=$2 until='' donef='' donem='' fwdl='' cpulim='' f start pid qpid='' rc t
    local kt='' kcpu=- cpu=0 stopped=''
    shift 2
    while [ $# -gt 0 ]; do
        case $1 in
        --until) until=$2; shift ;;
        --done) donef=$2 donem=$3; shift 2 ;;
        --fw-deadline) fwdl=$2; shift ;;
        --cpu-limit) cpulim=$2; shift ;;
        *) vt_die "vt_vm_boot: unknown option $1" ;;
        esac
        shift
    done
    if [ -n "${VT_DRY_RUN-}" ]; then
        printf 'qemu: %s\n' "$(vt_fmt_cmd "${VT_QEMU[@]}")" >>"$VT_DRY_RUN"
        echo 0
        return 0
    fi
    for f in "${VT_VM_FILES[@]}"; do
        # Sparse: a stand-in's BAR or the guest's RAM costs neither RAM
        # nor disk.
        truncate -s "${f%% *}" "${f#* }"
    done
    start=$(date +%s)
    timeout -k 10 "$limit" "${VT_QEMU[@]}" </dev/null >"$d/qemu.log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        t=$(($(date +%s) - start))
        # QEMU is timeout's child (nice and the matrix's wrapper exec it):
        # its CPU time is the guest's clock for the deadlines.
        [ -n "$qpid" ] || qpid=$(pgrep -P "$pid" | head -n 1)
        if [ -n "$qpid" ] && [ -r "/proc/$qpid/stat" ]; then
            cpu=$(awk -v hz="$VT_CLK_TCK" '{ sub(/^.*\) /, ""); print int(($12 + $13) / hz) }' "/proc/$qpid/stat" 2>/dev/null || echo "$cpu")
        fi
        if [ -z "$kt" ] && grep -aq 'Linux version' "$d/console.log" 2>/dev/null; then
            kt=$t kcpu=$cpu
        fi
        if [ -n "$fwdl" ] && [ -z "$kt" ] && [ "${cpu:-0}" -ge "$fwdl" ]; then
            stopped=firmware_deadline
            echo "stopped by vm-tests: no kernel output within $fwdl CPU seconds (${t}s wall)" >>"$d/qemu.log"
        elif [ -n "$cpulim" ] && [ "${cpu:-0}" -ge "$cpulim" ]; then
            stopped=cpu_limit
            echo "stopped by vm-tests: the boot took $cpulim CPU seconds" >>"$d/qemu.log"
        elif [ -n "$donef" ] && [ -s "$donef" ] && grep -aq "^$donem" "$donef"; then
            stopped='done'
        elif [ -n "$until" ] && [ -f "$d/console.log" ] && tr -d '\r' <"$d/console.log" | grep -Eaq -- "$until"; then
            sleep 3
            stopped=until
            echo "stopped by vm-tests: the console matched /$until/" >>"$d/qemu.log"
        fi
        if [ -n "$stopped" ]; then
            kill "$pid" 2>/dev/null
            break
        fi
        sleep 0.5
    done
    wait "$pid"
    rc=$?
    t=$(($(date +%s) - start))
    for f in "${VT_VM_FILES[@]}"; do rm -f "${f#* }"; done
    if [ -z "$stopped" ] && [ "$rc" -eq 124 ]; then
        stopped=wall_limit
        echo "qemu stopped by the ${limit}s timeout" >>"$d/qemu.log"
    fi
    echo "$t" >"$d/secs"
    echo "${kt:--}" >"$d/kernel_secs"
    echo "$kcpu $cpu" >"$d/cpu_secs"
    echo "$rc" >"$d/qemu.rc"
    echo "$stopped" >"$d/stopped"
    echo "$t"
    return "$rc"
}
