# shellcheck shell=bash
# The VM scenarios, in one place. Sourced by bash (vm-tests/lib.sh defines
# `scenario`). Each call names a scenario and sets its fields as key=value.
#
# The VM (vm-tests/vm.sh says each key in full; run, capture-fixtures and
# plan.sh make QEMU's command line and plan's flags from these alone):
#   machine   q35 (default) | pc (i440fx: the test root on PIIX's IDE)
#   fw        seabios | ovmf (OVMF via -bios OVMF.fd)
#   build     a firmware build of the matrix (vm-tests/matrix.sh,
#             seabios-1.16.3); qemu  the matrix's QEMU (qemu-10.0.2)
#   cpu       the -cpu value; qemu64 without phys-bits advertises 40 bits
#   gpus      COUNTxSIZE of stand-ins (8x128G); 0 for none
#   standin   single (default): one ivshmem-plain per GPU, BAR 2 of SIZE;
#             gpu: GPU-shaped stand-ins (vm-tests/standins.sh)
#   topology  where the stand-ins sit, for either kind (standins.sh):
#             root-ports (default on q35): each on its own pcie-root-port;
#             bridge: all behind one pci-bridge; bus0 (default on pc): all
#             on bus 0; switch: all below one emulated switch (x3130-upstream
#             on one root port, an xio3130-downstream each)
#   vga       none (default) | std: std keeps QEMU's emulated VGA 1234:1111
#             at 00:01.0, which a real guest has and which is not a GPU
#   ports     extra empty pcie-root-ports after the stand-ins (I/O-window noise)
#   nic       virtio: a virtio-net behind one more root port; none (default)
#   ram       guest RAM backed by a sparse file (512G); the guest kernel
#             then needs mem=1G in `guest`. Default: 1G of real RAM
#   maxmem, slots  memory hot-plug (-m RAM,slots=N,maxmem=SIZE)
#   global    QEMU globals, DRIVER.PROP=VALUE, space separated (-global)
#   fw_cfg    fw_cfg strings, NAME=VALUE, space separated (-fw_cfg)
#   smbios    SMBIOS entries (-smbios values separated by `|`): a management
#             layer's default DMI strings; smbios_source names where they
#             come from (written into the fixture's scenario.txt)
#   host      further QEMU arguments (none of the scenarios needs one)
#   guest     extra guest kernel command line
#   observed  what docs/lab.md records for this setup
#   capture   yes: tests/fixtures/<name>/ is captured from this scenario
#
# Fields for the boot-time check (vm-tests/run):
#   args      gpu_preflight.* keys added to the guest command line
#   verdict   ok | fail, from report.json
#   diagnosis the report's diagnosis
#   unassigned  BDFs (DDDD:BB:DD.F) the report must list as unassigned,
#             comma-separated; "-" for none
#   hints     hint ids that must be present, comma-separated; "-" for none
#   p2p_path  the report's p2p.p2p_path (PIX, PXB, PHB, SYS): the PCI path
#             between the farthest stand-ins as NCCL classifies it
#   p2p_hints P2P hint ids that must be present, comma-separated; "-" none
#   nohints   hint ids that must be absent, comma-separated
#   gens      generators to boot with: "itools dracut" (default) or one of them
#   required  yes (default) | no: a required scenario that is skipped fails
#             the suite
#   kind      direct (default) | fault | disk
#   loader    for kind=disk: grub (default) | sdboot (systemd-boot and
#             kernel-install); the job's generator picks the initramfs
#   init      yes (default) | no: whether the boot must reach the test
#             root's init
#   log, nolog  extended regex (case-insensitive) that a gpu-preflight:
#             kernel-log line must / must not match
#   stopped   extended regex on the console: once it matches, the boot is
#             over (held at an emergency shell) and QEMU is stopped
#   timeout   seconds for this scenario's boot
#   jq        a jq expression that must be true on report.json
#   within    seconds the boot step may take at most, from the hook's
#             `hook start` record to its `hook end` (the kernel log's clock)
#   known     why this scenario is known to fail (a model mismatch): its
#             failure is shown and counted as known, not failing the suite;
#             when it passes, the suite says the marker can go
#   loop      yes: after the first (failing) boot, apply hints[0].change,
#             every key, to one more boot, which must be healthy (the closed
#             loop; vm-tests/run, closed_loop)
#   first     for a loop: the first hint's id, with "+pci=realloc" when its
#             change also adds pci=realloc in the guest (a step of two parts)
#
# `gpu-preflight plan` runs before every boot with the same configuration
# as flags (vm-tests/plan.sh); its prediction must match the boot:
#   plan_as   yes: also as a Proxmox VM config and a libvirt domain XML on
#             a fake host tree built by the test; libvirt: the domain XML
#             only, where qemu-server would lay the VM out otherwise than
#             the scenario's command line (its own ports and bridges,
#             whose reservations share the window: plan models them)
#   plan_miss why the predicted count of GPUs left unassigned may differ
#             from the boot's (a wrong `ok` always fails)

# The stand-ins are ivshmem-plain (1af4:1110, class 0x0500), so the check is
# told which devices are the GPUs; the count makes a missing one visible.
sel8='gpu_preflight.match=1af4:1110 gpu_preflight.expect=8'
sel7='gpu_preflight.match=1af4:1110 gpu_preflight.expect=7'
sel2='gpu_preflight.match=1af4:1110 gpu_preflight.expect=2'
hole1t='q35-pcihost.pci-hole64-size=1T'

scenario seabios-46bit-8x128g capture=yes \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=8x128G \
  observed='all 8 assigned, 0x2000000000-0x11fffffffff' \
  args="$sel8" verdict=ok diagnosis=ok unassigned=- hints=-

scenario seabios-40bit-8x128g capture=yes loop=yes plan_as=yes \
  fw=seabios cpu=qemu64 gpus=8x128G \
  observed='01:00.0 BAR 2 unassigned; firmware put it at 1 TiB, above what 40 bits address' \
  args="$sel8" verdict=fail diagnosis=phys_bits_too_small \
  unassigned=0000:01:00.0 hints=cpu-phys-bits

scenario seabios-40bit-8x128g-realloc capture=yes loop=yes \
  fw=seabios cpu=qemu64 gpus=8x128G guest=pci=realloc \
  observed='still unassigned: root window 896 GiB < 1 TiB needed' \
  args="$sel8" verdict=fail diagnosis=phys_bits_too_small \
  unassigned=0000:01:00.0 hints=cpu-phys-bits nohints=guest-pci-realloc

scenario seabios-40bit-7x128g capture=yes \
  fw=seabios cpu=qemu64 gpus=7x128G \
  observed='all 7 assigned' \
  args="$sel7" verdict=ok diagnosis=ok unassigned=- hints=-

scenario ovmf-8x16g capture=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x16G \
  observed='all 8 assigned in a 128 GiB window at 0xe000000000' \
  args="$sel8" verdict=ok diagnosis=ok unassigned=- hints=-

scenario ovmf-8x32g capture=yes loop=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G \
  observed='5 of 8 unassigned (04:00.0-08:00.0); root window 0xe000000000-0xf89fffffff' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb,ovmf-mmio64-aperture,qemu-pci-hole64-size

scenario ovmf-8x32g-realloc capture=yes loop=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G guest=pci=realloc \
  observed='still 5 unassigned: realloc cannot grow the root window' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb,ovmf-mmio64-aperture,qemu-pci-hole64-size nohints=guest-pci-realloc

scenario ovmf-8x32g-hole1t capture=yes loop=yes plan_as=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G global="$hole1t" \
  observed='5 of 8 unassigned, but the root window is now 1 TiB (0xe000000000-0x1dfffffffff)' \
  args="$sel8" verdict=fail diagnosis=firmware_left_unassigned \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb,ovmf-mmio64-aperture,guest-pci-realloc

scenario ovmf-8x32g-hole1t-realloc capture=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G global="$hole1t" guest=pci=realloc \
  observed='all 8 assigned after "No. 2 try to assign unassigned res"' \
  args="$sel8" verdict=ok diagnosis=ok unassigned=- hints=-

scenario ovmf-7x32g-hole1t-expect8 capture=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=7x32G global="$hole1t" guest=pci=realloc \
  observed='all 7 assigned (not a row of docs/lab.md: 7 stand-ins where 8 are expected)' \
  args="$sel8" verdict=fail diagnosis=gpus_missing unassigned=- hints=check-passthrough

scenario ovmf-8x16g-vga capture=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x16G vga=std \
  observed='all 8 assigned (as ovmf-8x16g, plus the emulated VGA 1234:1111 at 00:01.0)' \
  args="$sel8" verdict=ok diagnosis=ok unassigned=- hints=-

# The default selection (no match) at boot: QEMU's emulated VGA is not a
# GPU, and ivshmem stand-ins are not display controllers, so 8 expected
# means none found. (QEMU 7.2 cannot relabel a stand-in's vendor or class:
# "stand-ins relabelled as NVIDIA GPUs" is covered by the fixture tests,
# which edit the captured tree.)
scenario ovmf-8x16g-vga-default-select \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x16G vga=std \
  args='gpu_preflight.expect=8' verdict=fail diagnosis=gpus_missing \
  unassigned=- hints=check-passthrough

# Guests of a management layer, with the SMBIOS strings each writes by
# default (src/model/layer.rs): the check gives that layer's syntax.
scenario kubevirt-ovmf-8x32g capture=yes gens=itools \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G \
  smbios='type=1,manufacturer=KubeVirt,product=None,family=KubeVirt' \
  smbios_source='kubevirt/kubevirt d923fdb pkg/virt-config/virt-config.go SmbiosConfigDefaultManufacturer/Product/Family, written by pkg/virt-launcher/virtwrap/converter/compute/sysinfo.go buildSystem()' \
  observed='as ovmf-8x32g: 5 of 8 unassigned; a KubeVirt VM with EFI firmware' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb,ovmf-mmio64-aperture,qemu-pci-hole64-size

scenario openstack-seabios-40bit-8x128g capture=yes gens=itools \
  fw=seabios cpu=qemu64 gpus=8x128G \
  smbios='type=1,manufacturer=OpenStack Foundation,product=OpenStack Nova,version=29.0.0,family=Virtual Machine' \
  smbios_source='openstack/nova 00a0304 nova/version.py NOVA_VENDOR/NOVA_PRODUCT, nova/virt/libvirt/driver.py _get_guest_config_sysinfo() (system_version: the deployment'"'"'s Nova version, 29.0.0 is 2024.1)' \
  observed='as seabios-40bit-8x128g: 01:00.0 BAR 2 above what 40 bits address; an OpenStack server on SeaBIOS' \
  args="$sel8" verdict=fail diagnosis=phys_bits_too_small \
  unassigned=0000:01:00.0 hints=cpu-phys-bits

scenario lxd-ovmf-8x32g capture=yes gens=itools \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G \
  smbios='type=2,manufacturer=Canonical Ltd.,product=LXD' \
  smbios_source='canonical/lxd a83edf2 lxd/instance/drivers/driver_qemu.go (-smbios type=2,manufacturer=Canonical Ltd.,product=LXD); the vCPU: LXD runs -cpu host, here on a host that is itself a VM with QEMU'"'"'s qemu64 model (46 bits, no pdpe1gb)' \
  observed='as ovmf-8x32g: 5 of 8 unassigned; an LXD VM, whose vCPU is its host'"'"'s' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=ovmf-mmio64-aperture,qemu-pci-hole64-size,cpu-pdpe1gb

scenario seabios-noisy-rootports capture=yes \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G ports=12 nic=virtio \
  observed='healthy (not a row of docs/lab.md: empty root ports leave I/O windows unassigned, harmless)' \
  args="$sel2" verdict=ok diagnosis=ok unassigned=- hints=-

# Peer-to-peer paths: two stand-ins behind one emulated switch are PXB
# apart (NCCL's default level allows P2P), on separate root ports PHB (on
# an Intel vCPU NCCL's default, PXB, does not: the p2p-nccl-level hint; on
# qemu64's AMD vendor NCCL allows two GPUs up to SYS). The driver's clique cannot be
# emulated on a stand-in: QEMU adds the capability to NVIDIA display-class
# vfio devices only; the suite's result line says so.
scenario p2p-switch-2x16g gens=itools \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=2x16G topology=switch \
  args="$sel2" verdict=ok diagnosis=ok unassigned=- hints=- p2p_path=PXB p2p_hints=-
scenario p2p-rootports-2x16g gens=itools \
  fw=seabios cpu=qemu64,phys-bits=46,vendor=GenuineIntel gpus=2x16G \
  args="$sel2" verdict=ok diagnosis=ok unassigned=- hints=- p2p_path=PHB \
  p2p_hints=p2p-nccl-level,p2p-pcie-switch
# The switch with GPU-shaped stand-ins: each GPU's four functions at
# device 0 of a downstream port of its own. Both ivshmem functions of each
# GPU match 1af4:1110. plan has no switch topology: its comparison says so.
scenario p2p-switch-gpu-2x16g gens=itools standin=gpu topology=switch \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=2x16G \
  args='gpu_preflight.match=1af4:1110 gpu_preflight.expect=4' \
  verdict=ok diagnosis=ok unassigned=- hints=- p2p_path=PXB p2p_hints=-

# Closed-loop starts the issue table adds: follow hints[0] to a healthy
# guest. One generator: the loop tests the prescriptions, not the image.
scenario ovmf-46bit-8x128g loop=yes gens=itools plan_as=yes \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x128G \
  observed='all 8 unassigned: OVMF uses 40 bits without pdpe1gb, a 128 GiB window' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb
scenario ovmf-40bit-8x128g loop=yes gens=itools \
  fw=ovmf cpu=qemu64 gpus=8x128G \
  observed='all 8 unassigned; more phys-bits alone do not help OVMF without pdpe1gb' \
  args="$sel8" verdict=fail diagnosis=phys_bits_too_small \
  unassigned=0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-phys-bits
scenario ovmf-intel-40bit-8x32g loop=yes gens=itools plan_as=libvirt \
  fw=ovmf cpu=qemu64,vendor=GenuineIntel gpus=8x32G \
  observed='OVMF does not trust 40 bits from an Intel vCPU: its classic 32 GiB window' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:02:00.0,0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=ovmf-mmio64-aperture
scenario ovmf-8x32g-512g loop=yes gens=itools \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G ram=512G guest=mem=1G \
  observed='as ovmf-8x32g: guest RAM does not move the 128 GiB window' \
  args="$sel8" verdict=fail diagnosis=window_too_small \
  unassigned=0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:07:00.0,0000:08:00.0 \
  hints=cpu-pdpe1gb
scenario seabios-40bit-8x128g-512g loop=yes gens=itools \
  fw=seabios cpu=qemu64 gpus=8x128G ram=512G guest=mem=1G \
  observed='SeaBIOS places above 512 GiB of RAM, past 40 bits' \
  args="$sel8" verdict=fail diagnosis=phys_bits_too_small \
  unassigned=0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0,0000:05:00.0 \
  hints=cpu-phys-bits

# Boot-path faults: each must still reach init (warn mode) and say what
# happened in one gpu-preflight: kernel-log line. `fault` plants the fault
# in a built image (see vt_plant_fault) or, for strict, sets the mode.
# `log` is an extended regex (case-insensitive) one such line must match.
scenario fault-missing-binary kind=fault fault=missing fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G args="$sel2" \
  init=yes log='gpu-preflight: /usr/bin/gpu-preflight is missing.*boot continues'
scenario fault-binary-crash kind=fault fault=crash fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G args="$sel2" \
  init=yes log='gpu-preflight: .*crashed \(signal 11\).*boot continues'
# A read of the check that never returns (a FIFO over a sysfs file, see
# vt_plant_fault): the binary's own deadline ends it, and the boot step
# takes the timeout and at most a second more. (Until the binary kept the
# deadline, this scenario was a binary replaced by one that hangs; the hook
# no longer guards that, the binary guards what can hang in the check.)
scenario fault-read-hangs kind=fault fault=readhang fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G \
  args="$sel2 gpu_preflight.timeout=3" init=yes within=4 \
  log='gpu-preflight: no result within 3\.0 s \(gpu_preflight\.timeout\): killed the check \(pid [0-9]+\) without waiting for it; boot continues'
# The configuration is a FIFO nobody writes to: the parent reads only
# regular files, without blocking; the check runs on the defaults.
# One generator: neither hook reads the configuration, the binary does.
scenario fault-config-fifo kind=fault fault=confifo gens=itools fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G args="$sel2" \
  init=yes log='gpu-preflight: config: cannot read configuration /etc/gpu-preflight.conf: not a regular file; using defaults' \
  verdict=ok diagnosis=ok unassigned=- hints=-
scenario fault-garbage-config kind=fault fault=badconf fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G args="$sel2" \
  init=yes log='gpu-preflight: config: /etc/gpu-preflight.conf line [0-9]+: .*ignored' \
  verdict=ok diagnosis=ok unassigned=- hints=-

# fw_cfg: what the host set, read by the check (the qemu_fw_cfg module is
# in the image and loaded by it) and named exactly in the report. The e820
# map and the hot-plug area's end come from QEMU itself (1 GiB of RAM,
# all below 4 GiB; maxmem 8G with 2 slots: the area runs from 4 GiB for
# 7 GiB plus 1 GiB a slot, to 13 GiB).
scenario fwcfg-seabios-pci64-hotplug gens=itools \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G fw_cfg=opt/org.seabios/pci64=off maxmem=8G slots=2 \
  args="$sel2" verdict=ok diagnosis=ok unassigned=- hints=- \
  jq='.firmware.fw_cfg.readable and .firmware.fw_cfg.seabios_pci64 == false and .firmware.fw_cfg.reserved_memory_end == 13958643712 and .firmware.fw_cfg.ram_end == 1073741824 and (.firmware.fw_cfg.read | index("etc/e820")) != null and .firmware.fw_cfg.x_pci_mmio64_mb == null and (.firmware.fw_cfg.unset | index("opt/ovmf/X-PciMmio64Mb")) != null'
# A stale X-PciMmio64Mb (64 GiB) on OVMF that takes it as given (Debian's
# 2025.02 from 2025.02-2, C11): the window is 64 GiB where OVMF would make
# 128, and the report names the setting and what it is.
scenario fwcfg-ovmf-2025.02-stale-mmio64 gens=itools \
  build=ovmf-2025.02 qemu=qemu-10.0.2 fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G \
  fw_cfg=opt/ovmf/X-PciMmio64Mb=65536 \
  args="$sel8" \
  jq='.verdict == "fail" and .diagnosis == "window_too_small" and .firmware.fw_cfg.x_pci_mmio64_mb == 65536 and .capacity.window_origin.kind == "ovmf_mmio64" and (.capacity.window_origin.facts | map(test("X-PciMmio64Mb=65536")) | any) and (.hints[0].text | test("stale setting"))'
# Without the module in the image: every fw_cfg input assumed, the check as
# before.
scenario fwcfg-module-absent kind=fault fault=nofwcfg gens=itools \
  fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G args="$sel2" \
  verdict=ok diagnosis=ok unassigned=- hints=- \
  jq='.firmware.fw_cfg.readable == false and (.firmware.fw_cfg.assumed | length) == 4'

# strict: a failing check stops the boot before the real init; a passing one
# does not.
scenario fault-strict-stops kind=fault fault=strict \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G \
  args="$sel8 gpu_preflight.mode=strict" init=no timeout=180 \
  log='gpu-preflight: strict mode: stopping the boot' \
  stopped='Entering emergency mode|Rebooting automatically|Kernel panic'
scenario strict-healthy-boots kind=fault fault=strict-ok fw=seabios cpu=qemu64,phys-bits=46 gpus=2x32G \
  args="$sel2 gpu_preflight.mode=strict" init=yes \
  verdict=ok diagnosis=ok unassigned=- hints=-

# The closed loop on every build of the firmware matrix (vm-tests/matrix.sh,
# vm-tests/firmware/matrix.tsv), with GPU-shaped stand-ins (standin=gpu,
# vm-tests/standins.sh: per GPU a 128 GiB and a 32 MiB 64-bit prefetchable
# BAR, qxl's 32-bit BARs, an audio function), each GPU behind its own root
# port beside Proxmox's four empty ich9-pcie-ports. The seed case is
# Proxmox's: q35, pcie=1, SeaBIOS 1.16.3 (pve-qemu-kvm's bundled build),
# kvm64, AMD and Intel hosts, 64-512 GiB of RAM. The first verdict is not
# declared: from whatever failure it is, the first hint (`first`), applied
# whole, must make the one next boot healthy.
# Both ivshmem functions of each GPU match 1af4:1110: 16 for 8 GPUs.
# The builds from sid (SeaBIOS 1.17.0, OVMF 2026.08) are required=no: a
# pinned sid version leaves the archive when it is superseded, and a build
# that cannot be fetched is skipped (loudly, with the reason), not failed.
sel8g='gpu_preflight.match=1af4:1110 gpu_preflight.expect=16'
scenario loop-seabios-1.16.3-8x128g-amd-64g \
  first=cpu-phys-bits+pci=realloc loop=yes gens=itools standin=gpu topology=root-ports \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=64G guest=mem=1G args="$sel8g" timeout=240
scenario loop-seabios-1.16.3-8x128g-intel-512g \
  first=qemu-pci-hole64-size+pci=realloc loop=yes gens=itools standin=gpu topology=root-ports \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=GenuineIntel gpus=8x128G ports=4 \
  ram=512G guest=mem=1G args="$sel8g" timeout=240
# SeaBIOS 1.16.3's pad mode leaves the BARs of the seed case and these two
# for the guest kernel to lay out again: no host change alone is predicted
# healthy, so the first hint is one step of two parts, a host change with
# pci=realloc in the guest (the hole with 43 bits for 4 x 256G; 46 bits for
# 2 x 64G, whose window at 40 bits holds one).
scenario loop-seabios-1.16.3-4x256g-amd-64g \
  first=qemu-pci-hole64-size+pci=realloc loop=yes gens=itools standin=gpu topology=root-ports \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=4x256G ports=4 \
  ram=64G guest=mem=1G args='gpu_preflight.match=1af4:1110 gpu_preflight.expect=8' timeout=240
scenario loop-seabios-1.16.3-2x64g-amd-64g \
  first=cpu-phys-bits+pci=realloc loop=yes gens=itools standin=gpu topology=root-ports \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=2x64G ports=4 \
  ram=64G guest=mem=1G args='gpu_preflight.match=1af4:1110 gpu_preflight.expect=4' timeout=240
# The wrap case: SeaBIOS 1.16.3 shifts its window down by its own size off
# QEMU's AMD HT reservation, and at 40 bits that wraps past zero: none of
# five 128 GiB BARs is usable (campaign boots 2026-12-03,
# docs/firmware-window.md). One bit more puts the top above the reservation.
scenario loop-seabios-1.16.3-wrap-5x128g-amd \
  first=cpu-phys-bits loop=yes gens=itools topology=root-ports \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=qemu64 gpus=5x128G \
  args='gpu_preflight.match=1af4:1110 gpu_preflight.expect=5' timeout=240
scenario loop-seabios-1.16.2-8x128g-amd-256g \
  first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=root-ports \
  build=seabios-1.16.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=256G guest=mem=1G args="$sel8g" timeout=240
scenario loop-seabios-1.17.0-8x128g-intel-128g \
  first=cpu-phys-bits loop=yes required=no gens=itools standin=gpu topology=root-ports \
  build=seabios-1.17.0 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=GenuineIntel gpus=8x128G ports=4 \
  ram=128G guest=mem=1G args="$sel8g" timeout=240
# Proxmox's pcie=0 on q35: every GPU behind one pci-bridge (behind the
# DMI-PCI bridge), with its four empty root ports beside them.
scenario loop-seabios-1.16.3-bridge-8x128g-amd-64g \
  first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=bridge \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=64G guest=mem=1G args="$sel8g" timeout=240
scenario loop-ovmf-2025.02-bridge-8x32g-intel-64g \
  first=ovmf-mmio64-aperture loop=yes gens=itools standin=gpu topology=bridge \
  build=ovmf-2025.02 qemu=qemu-10.0.2 fw=ovmf cpu=kvm64,vendor=GenuineIntel gpus=8x32G ports=4 \
  ram=64G guest=mem=1G args="$sel8g" timeout=240
# Proxmox's default machine, pc (i440fx): every GPU on bus 0, no ports.
# No OVMF loop on pc: when OVMF abandons the root bus (D4) the guest's
# PIIX IDE finds no disk (lab, 2026-12-02: check ran in the initramfs and
# said phys_bits_too_small, then the root never came), so the loop has no
# guest to read; the campaign measures that case (bus_abandoned).
scenario loop-seabios-1.16.3-pc-8x128g-amd-64g \
  first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=bus0 machine=pc \
  build=seabios-1.16.3 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G \
  ram=64G guest=mem=1G args="$sel8g" timeout=240
scenario loop-seabios-1.16.2-pc-8x128g-intel-128g \
  first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=bus0 machine=pc \
  build=seabios-1.16.2 fw=seabios cpu=kvm64,vendor=GenuineIntel gpus=8x128G \
  ram=128G guest=mem=1G args="$sel8g" timeout=240
scenario loop-seabios-1.17.0-pc-8x128g-amd-256g \
  first=cpu-phys-bits loop=yes required=no gens=itools standin=gpu topology=bus0 machine=pc \
  build=seabios-1.17.0 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G \
  ram=256G guest=mem=1G args="$sel8g" timeout=240
# More of pcie=0 (one pci-bridge) across the builds.
scenario loop-seabios-1.17.0-bridge-8x128g-amd-512g \
  first=cpu-phys-bits loop=yes required=no gens=itools standin=gpu topology=bridge \
  build=seabios-1.17.0 qemu=qemu-10.0.2 fw=seabios cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=512G guest=mem=1G args="$sel8g" timeout=240
scenario loop-ovmf-2026.08-bridge-8x64g-intel-128g \
  first=cpu-phys-bits loop=yes required=no gens=itools standin=gpu topology=bridge \
  build=ovmf-2026.08 qemu=qemu-10.0.2 fw=ovmf cpu=kvm64,vendor=GenuineIntel gpus=8x64G ports=4 \
  ram=128G guest=mem=1G args="$sel8g" timeout=240
scenario loop-ovmf-2022.11-8x128g-amd-64g first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=root-ports \
  build=ovmf-2022.11 fw=ovmf cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=64G guest=mem=1G args="$sel8g" timeout=240
scenario loop-ovmf-2025.02-8x128g-intel-256g first=cpu-phys-bits loop=yes gens=itools standin=gpu topology=root-ports \
  build=ovmf-2025.02 qemu=qemu-10.0.2 fw=ovmf cpu=kvm64,vendor=GenuineIntel gpus=8x128G ports=4 \
  ram=256G guest=mem=1G args="$sel8g" timeout=240
scenario loop-ovmf-2026.08-8x128g-amd-512g first=cpu-phys-bits loop=yes required=no gens=itools standin=gpu topology=root-ports \
  build=ovmf-2026.08 qemu=qemu-10.0.2 fw=ovmf cpu=kvm64,vendor=AuthenticAMD gpus=8x128G ports=4 \
  ram=512G guest=mem=1G args="$sel8g" timeout=240

# End to end on a Debian disk: OVMF -> GRUB -> initramfs image with the
# hook (initramfs-tools, and dracut from dracut-core for the dracut job) ->
# systemd, the package installed by dpkg, remediation enabled
# (vm-tests/disk.sh, vt_e2e_run, says what each boot must show);
# loader=sdboot: OVMF -> systemd-boot -> initramfs-tools -> systemd, with
# /etc/kernel/cmdline and kernel-install (Debian 12: systemd-boot 252).
# A boot takes 50-60 s on an idle machine, 2-4 times as long under load:
# timeout is per boot.
VT_E2E_CONF='match=1af4:1110
expect=8'
VT_E2E_CMDLINE='console=ttyS0 panic=1 oops=panic gpu_preflight.remediate=1'
export VT_E2E_CONF VT_E2E_CMDLINE
scenario disk-hole1t-realloc-fix kind=disk expect=fix boots=3 gens="itools dracut" timeout=600 \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G global="$hole1t"
scenario disk-sdboot-hole1t-realloc-fix kind=disk loader=sdboot expect=fix boots=3 gens=itools timeout=600 \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G global="$hole1t"
scenario disk-default-hole-nofix kind=disk expect=nofix boots=2 gens=itools \
  fw=ovmf cpu=qemu64,phys-bits=46 gpus=8x32G
