# shellcheck shell=bash
# The stand-ins for GPUs, made of QEMU devices, in the topologies Proxmox
# and libvirt produce. Two kinds (vm.sh's `standin`):
#
#   single  one ivshmem-plain (1af4:1110) per GPU: BAR 2 64-bit
#           prefetchable, as large as its sparse backing file
#   gpu     what a datacenter GPU shows the firmware, one multifunction
#           slot per GPU:
#     fn 0  ivshmem-plain (1af4:1110): BAR 0 256 B, BAR 2 the VRAM, 64-bit
#           prefetchable, as large as its sparse backing file
#     fn 1  ivshmem-plain: BAR 2 32 MiB, 64-bit prefetchable (NVIDIA's BAR 3)
#     fn 2  qxl (1b36:0100): BAR 0 32 MiB and BAR 1 16 MiB, 32-bit
#           non-prefetchable (NVIDIA's BAR 0 is a 16-32 MiB 32-bit register
#           BAR). qxl rather than secondary-vga: a VGA's 32-bit BAR is
#           prefetchable, and one 32-bit prefetchable BAR behind a bridge
#           makes SeaBIOS and OVMF give the whole bridge a 32-bit
#           prefetchable window, which no GPU does
#     fn 3  ich9-intel-hda: BAR 0 16 KiB (the GPU's audio function)
#
# Topologies (vm.sh's `topology`), for either kind:
#   root-ports  one pcie-root-port per GPU on pcie.0 (Proxmox pcie=1,
#               libvirt's default on q35)
#   bridge      every GPU behind one pci-bridge, behind an i82801b11-bridge
#               on pcie.0 (Proxmox pcie=0 on q35)
#   bus0        every GPU on bus 0 (i440fx, -M pc: Proxmox's default)
#   switch      every GPU below one emulated PCIe switch: an x3130-upstream
#               on one root port, an xio3130-downstream per GPU with the
#               GPU at its device 0 (the GPUs are then PXB apart as NCCL
#               classifies a path, not PHB: docs/p2p.md)
# Empty hot-plug ports (pcie-root-port, q35 only) and the NIC's port come
# after the GPUs.
#
# Proxmox's own layouts, as qemu-server makes them (PVE/QemuServer/PCI.pm
# get_pci_addr_map, get_pcie_addr_map, print_pcie_root_port;
# usr/pve-q35-4.0.cfg; QemuServer.pm config_to_command's bridges; read at
# qemu-server 9.2.6), GPU i being hostpci<i>:
#   pve-bridge  q35, pcie=0: the `pcidmi` i82801b11-bridge at 1e.0 with four
#               pci-bridges behind it, pci.0 to pci.3 at 1.0-4.0 (always
#               there, from pve-q35-4.0.cfg), hostpci0-3 on pci.0 at 0x10,
#               0x11, 0x1b, 0x1c and hostpci4-15 on pci.2 from 0xd; the four
#               ich9-pcie-port-1..4 at 1c.0-1c.3, empty
#   pve-ports   q35, pcie=1: the same buses, hostpci<i> on
#               ich9-pcie-port-<i+1> (1-4 at 1c.0-1c.3 from the cfg, 5 and
#               later made at 10.0-10.7, 11.0-11.3); the ports no hostpci
#               takes stay empty
#   pve-bus0    i440fx (pcie is ignored there): hostpci0-3 on bus 0 at 0x10,
#               0x11, 0x1b, 0x1c; the pci-bridges pci.1 at 0x1e and pci.2 at
#               0x1f (always added for machine types 2.3 and later),
#               hostpci4-15 on pci.2 from 0xd
# There the NIC (nic=virtio) is net0, on pci.0 at 0x12: behind pcidmi on
# q35, on bus 0 on i440fx; on bus0 it is on bus 0 too (0x18, after the
# GPUs); elsewhere it
# has a root port of its own. The `ports` count is not used by the pve-*
# layouts: their empty ports are Proxmox's.

# shellcheck disable=SC2034 # read by vm.sh
VT_GPU_BAR64_SMALL=32M
# The 32-bit BARs of each GPU, as plan's --bar32 takes them.
# shellcheck disable=SC2034
VT_GPU_BAR32='32M 16M'

# vt_standins KIND TOPOLOGY COUNT SIZE PORTS NIC DIR: appends to VT_QEMU the
# objects and devices of COUNT stand-ins of KIND whose large BAR is SIZE
# (128G), PORTS empty hot-plug root ports and the NIC (none | virtio), and
# to VT_VM_FILES the sparse backing files ("SIZE PATH", in DIR).
#
# Root ports are numbered as each kind's fixtures and records were made
# with: a single stand-in's port has slot=INDEX and the empty ports
# slot=CHASSIS-1; a GPU's and every port after it slot=CHASSIS.
vt_standins() {
    local kind=$1 topo=$2 count=$3 size=$4 ports=$5 nic=$6 dir=$7 i bus addr chassis=1 slot port pslot back
    case $topo in
    pve-*)
        vt_standins_pve "$kind" "$topo" "$count" "$size" "$nic" "$dir"
        return
        ;;
    esac
    case $topo in
    switch)
        [ "$kind" = gpu ] && slot=1 || slot=0
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-device "pcie-root-port,id=swp,chassis=$chassis,slot=$slot,bus=pcie.0"
            -device "x3130-upstream,id=swup,bus=swp")
        chassis=2
        ;;
    bridge)
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-device i82801b11-bridge,id=dmi,bus=pcie.0
            -device pci-bridge,id=pb0,chassis_nr=1,bus=dmi)
        chassis=2
        ;;
    root-ports | bus0) ;;
    *) vt_die "unknown topology $topo" ;;
    esac
    for ((i = 0; i < count; i++)); do
        # Sparse: a stand-in's BAR costs neither RAM nor disk.
        if [ "$kind" = gpu ]; then
            VT_VM_FILES+=("$size $dir/gpu$i.mem" "$VT_GPU_BAR64_SMALL $dir/gpu$i.bar3.mem")
            VT_QEMU+=(-object "memory-backend-file,id=v$i,size=$size,mem-path=$dir/gpu$i.mem,share=on"
                -object "memory-backend-file,id=s$i,size=$VT_GPU_BAR64_SMALL,mem-path=$dir/gpu$i.bar3.mem,share=on")
            port=gp$i pslot=$chassis
        else
            VT_VM_FILES+=("$size $dir/gpu$i.mem")
            VT_QEMU+=(-object "memory-backend-file,id=m$i,size=$size,mem-path=$dir/gpu$i.mem,share=on")
            port=rp$i pslot=$i
        fi
        # The GPU's own port (root-ports, switch) at its device 0, or its
        # slot on a shared bus.
        case $topo in
        root-ports) VT_QEMU+=(-device "pcie-root-port,id=$port,chassis=$chassis,slot=$pslot,bus=pcie.0") ;;
        switch) VT_QEMU+=(-device "xio3130-downstream,id=$port,chassis=$chassis,slot=$pslot,bus=swup") ;;
        esac
        case $topo in
        root-ports | switch) bus=$port addr='' chassis=$((chassis + 1)) ;;
        bridge) bus=pb0 addr=$(printf '%x' $((i + 1))) ;;
        bus0) bus=pci.0 addr=$(printf '%x' $((i + 0x10))) ;;
        esac
        if [ "$kind" = gpu ]; then
            addr=${addr:-0}
            VT_QEMU+=(-device "ivshmem-plain,memdev=v$i,bus=$bus,addr=$addr.0,multifunction=on"
                -device "ivshmem-plain,memdev=s$i,bus=$bus,addr=$addr.1"
                -device "qxl,bus=$bus,addr=$addr.2,ram_size_mb=32,vram_size_mb=16"
                -device "ich9-intel-hda,bus=$bus,addr=$addr.3")
        else
            VT_QEMU+=(-device "ivshmem-plain,memdev=m$i,bus=$bus${addr:+,addr=$addr}")
        fi
    done
    # The ports after the GPUs: slot=CHASSIS, or CHASSIS-1 beside single
    # stand-ins.
    [ "$kind" = gpu ] && back=0 || back=1
    for ((i = 0; i < ports; i++)); do
        VT_QEMU+=(-device "pcie-root-port,id=ep$i,chassis=$chassis,slot=$((chassis - back)),bus=pcie.0")
        chassis=$((chassis + 1))
    done
    case $nic:$topo in
    none:*) ;;
    virtio:bus0)
        # After the GPUs' 0x10-0x17: at 0x12 it took the third GPU's slot,
        # and QEMU refused every such VM with three GPUs or more.
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0,bus=pci.0,addr=0x18)
        ;;
    virtio:*)
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-device "pcie-root-port,id=nicp,chassis=$chassis,slot=$((chassis - back)),bus=pcie.0"
            -netdev user,id=n0 -device virtio-net-pci,netdev=n0,bus=nicp)
        ;;
    *) vt_die "unknown nic $nic" ;;
    esac
}

# vt_standin KIND I BUS ADDR SIZE DIR: GPU I's devices at BUS, device ADDR
# (hex, or empty: QEMU's choice), appended to VT_QEMU with their backing
# files.
vt_standin() {
    local kind=$1 i=$2 bus=$3 addr=$4 size=$5 dir=$6
    if [ "$kind" = gpu ]; then
        VT_VM_FILES+=("$size $dir/gpu$i.mem" "$VT_GPU_BAR64_SMALL $dir/gpu$i.bar3.mem")
        VT_QEMU+=(-object "memory-backend-file,id=v$i,size=$size,mem-path=$dir/gpu$i.mem,share=on"
            -object "memory-backend-file,id=s$i,size=$VT_GPU_BAR64_SMALL,mem-path=$dir/gpu$i.bar3.mem,share=on")
        addr=${addr:-0}
        VT_QEMU+=(-device "ivshmem-plain,memdev=v$i,bus=$bus,addr=$addr.0,multifunction=on"
            -device "ivshmem-plain,memdev=s$i,bus=$bus,addr=$addr.1"
            -device "qxl,bus=$bus,addr=$addr.2,ram_size_mb=32,vram_size_mb=16"
            -device "ich9-intel-hda,bus=$bus,addr=$addr.3")
    else
        VT_VM_FILES+=("$size $dir/gpu$i.mem")
        VT_QEMU+=(-object "memory-backend-file,id=m$i,size=$size,mem-path=$dir/gpu$i.mem,share=on"
            -device "ivshmem-plain,memdev=m$i,bus=$bus${addr:+,addr=$addr}")
    fi
}

# The devices of hostpci0-3 on pci.0 (pcie=0) or bus 0 (i440fx), in
# qemu-server's get_pci_addr_map; hostpci4 and later on pci.2 from 0xd.
VT_PVE_HOSTPCI_ADDR=(10 11 1b 1c)

# vt_pve_port I: ich9-pcie-port-<I+1>'s address on pcie.0 (pve-q35-4.0.cfg
# for 1-4, print_pcie_root_port for 5-16).
vt_pve_port() {
    local i=$1
    if [ "$i" -lt 4 ]; then
        printf '1c.%d' "$i"
    elif [ "$i" -lt 12 ]; then
        printf '10.%d' $((i - 4))
    else
        printf '11.%d' $((i - 12))
    fi
}

# vt_standins_pve KIND TOPOLOGY COUNT SIZE NIC DIR: Proxmox's layouts (the
# pve-* topologies above).
vt_standins_pve() {
    local kind=$1 topo=$2 count=$3 size=$4 nic=$5 dir=$6 i n bus addr
    [ "$count" -le 16 ] || vt_die "Proxmox has hostpci0 to hostpci15, not $count"
    case $topo in
    pve-bridge | pve-ports)
        # pve-q35-4.0.cfg: the four root ports, pcidmi and pci.0-pci.3.
        for ((n = 1; n <= 4; n++)); do
            VT_QEMU+=(-device "pcie-root-port,id=ich9-pcie-port-$n,addr=$(vt_pve_port $((n - 1))),x-speed=16,x-width=32,multifunction=on,bus=pcie.0,port=$n,chassis=$n")
        done
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-device i82801b11-bridge,id=pcidmi,bus=pcie.0,addr=1e.0)
        for ((n = 0; n <= 3; n++)); do
            VT_QEMU+=(-device "pci-bridge,id=pci.$n,chassis_nr=$((n + 1)),bus=pcidmi,addr=$((n + 1)).0")
        done
        ;;
    pve-bus0)
        # config_to_command: pci.2 then pci.1, each unshifted in front.
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-device pci-bridge,id=pci.1,chassis_nr=1,bus=pci.0,addr=0x1e
            -device pci-bridge,id=pci.2,chassis_nr=2,bus=pci.0,addr=0x1f)
        ;;
    *) vt_die "unknown Proxmox topology $topo" ;;
    esac
    for ((i = 0; i < count; i++)); do
        if [ "$topo" = pve-ports ]; then
            if [ "$i" -ge 4 ]; then
                VT_QEMU+=(-device "pcie-root-port,id=ich9-pcie-port-$((i + 1)),addr=$(vt_pve_port "$i"),x-speed=16,x-width=32,multifunction=on,bus=pcie.0,port=$((i + 1)),chassis=$((i + 1))")
            fi
            bus=ich9-pcie-port-$((i + 1)) addr=0
        elif [ "$i" -lt 4 ]; then
            bus=pci.0 addr=${VT_PVE_HOSTPCI_ADDR[$i]}
        else
            bus=pci.2 addr=$(printf '%x' $((0xd + i - 4)))
        fi
        vt_standin "$kind" "$i" "$bus" "$addr" "$size" "$dir"
    done
    case $nic in
    none) ;;
    virtio)
        # net0: pci.0 at 0x12 (get_pci_addr_map).
        # shellcheck disable=SC2054 # commas belong to QEMU's syntax
        VT_QEMU+=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0,bus=pci.0,addr=0x12)
        ;;
    *) vt_die "unknown nic $nic" ;;
    esac
}
