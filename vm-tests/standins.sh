# shellcheck shell=bash
# GPU-shaped stand-ins: what a datacenter GPU shows the firmware, made of
# QEMU devices, in the topologies Proxmox and libvirt produce. Per GPU, one
# multifunction slot:
#
#   fn 0  ivshmem-plain (1af4:1110): BAR 0 256 B, BAR 2 the VRAM, 64-bit
#         prefetchable, as large as its sparse backing file
#   fn 1  ivshmem-plain: BAR 2 32 MiB, 64-bit prefetchable (NVIDIA's BAR 3)
#   fn 2  qxl (1b36:0100): BAR 0 32 MiB and BAR 1 16 MiB, 32-bit
#         non-prefetchable (NVIDIA's BAR 0 is a 16-32 MiB 32-bit register
#         BAR). qxl rather than secondary-vga: a VGA's 32-bit BAR is
#         prefetchable, and one 32-bit prefetchable BAR behind a bridge
#         makes SeaBIOS and OVMF give the whole bridge a 32-bit
#         prefetchable window, which no GPU does
#   fn 3  ich9-intel-hda: BAR 0 16 KiB (the GPU's audio function)
#
# Topologies (VT_TOPOLOGY):
#   root-ports  one pcie-root-port per GPU on pcie.0 (Proxmox pcie=1,
#               libvirt's default on q35)
#   bridge      every GPU behind one pci-bridge, behind an i82801b11-bridge
#               on pcie.0 (Proxmox pcie=0 on q35)
#   bus0        every GPU on bus 0 (i440fx, -M pc: Proxmox's default)
# Empty hot-plug ports (pcie-root-port, q35 only) come after the GPUs.
#
# The single-BAR stand-ins of vm-tests/scenarios.sh (vt_qemu_args in
# lib.sh) are unchanged.

# shellcheck disable=SC2034 # read by the campaign
VT_GPU_BAR64_SMALL=32M
# The 32-bit BARs of each GPU, as plan's --bar32 takes them.
# shellcheck disable=SC2034
VT_GPU_BAR32='32M 16M'

# vt_gpu_devices TOPOLOGY COUNT VRAM PORTS DIR [single]: appends to the
# array VT_QEMU the objects and devices of COUNT GPU-shaped stand-ins with
# VRAM BARs of VRAM bytes (128G) and PORTS empty hot-plug root ports.
# Sparse backing files go in DIR. "single": function 0 alone (one
# ivshmem-plain, its BAR 2 the only 64-bit BAR), in the same places.
vt_gpu_devices() {
    local topo=$1 count=$2 vram=$3 ports=$4 dir=$5 single=${6-} i bus addr chassis=1 slot
    case $topo in
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
        truncate -s "$vram" "$dir/gpu$i.mem"
        VT_QEMU+=(-object "memory-backend-file,id=v$i,size=$vram,mem-path=$dir/gpu$i.mem,share=on")
        if [ "$single" != single ]; then
            truncate -s "$VT_GPU_BAR64_SMALL" "$dir/gpu$i.bar3.mem"
            VT_QEMU+=(-object "memory-backend-file,id=s$i,size=$VT_GPU_BAR64_SMALL,mem-path=$dir/gpu$i.bar3.mem,share=on")
        fi
        case $topo in
        root-ports)
            VT_QEMU+=(-device "pcie-root-port,id=gp$i,chassis=$chassis,slot=$chassis,bus=pcie.0")
            chassis=$((chassis + 1))
            bus=gp$i slot=0
            ;;
        bridge) bus=pb0 slot=$((i + 1)) ;;
        bus0) bus=pci.0 slot=$((i + 0x10)) ;;
        esac
        addr=$(printf '%x' "$slot")
        if [ "$single" = single ]; then
            VT_QEMU+=(-device "ivshmem-plain,memdev=v$i,bus=$bus,addr=$addr.0")
            continue
        fi
        VT_QEMU+=(-device "ivshmem-plain,memdev=v$i,bus=$bus,addr=$addr.0,multifunction=on"
            -device "ivshmem-plain,memdev=s$i,bus=$bus,addr=$addr.1"
            -device "qxl,bus=$bus,addr=$addr.2,ram_size_mb=32,vram_size_mb=16"
            -device "ich9-intel-hda,bus=$bus,addr=$addr.3")
    done
    [ "$topo" = bus0 ] && ports=0
    for ((i = 0; i < ports; i++)); do
        VT_QEMU+=(-device "pcie-root-port,id=ep$i,chassis=$chassis,slot=$chassis,bus=pcie.0")
        chassis=$((chassis + 1))
    done
}
