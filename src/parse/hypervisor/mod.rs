//! What the hypervisor, the VMM and the host kernel say about a VM's
//! devices, in their own words: a VM that does not start, a device the
//! VMM gives up on, a DMA mapping that fails. These lines come from the
//! host (VMware's `vmware.log`, Hyper-V's start error, QEMU's stderr as
//! libvirt, KubeVirt's virt-launcher or Kata's shim relay it, Cloud
//! Hypervisor's and OpenVMM's errors, bhyve's console, the host kernel), not
//! from the guest's PCI core, and often are all a report has.
//!
//! Each message is found by words its source prints (cited at each
//! reader) anywhere in a line, so that a logfmt `msg="..."`, a JSON log's
//! `"msg":"..."`, a journal or a dialog's quotes around it do not matter;
//! the two that a report may wrap (Hyper-V's, libvirt's) are read from the
//! text with its line breaks taken for spaces. Whether a message is a
//! failure of the device's BARs, and what fixes it, is `decide`'s.

mod firmware;
mod host_kernel;
mod hyperv;
mod kubevirt;
mod names;
mod qemu;
mod vmware;
mod xen;

use crate::parse::hex::{decimal, decimal_after, hex_after, hex_u64};
use crate::parse::platform::is_report_heading;
use firmware::{ovmf_window, seabios_window};
use host_kernel::{device_reset, iommu_width, memlock, vfio_pci_probe};
use hyperv::{hyperv_not_assignable, hyperv_upper_mmio};
pub(crate) use qemu::VfioStage;
use qemu::{dma_mappings_limit, kvm_memslot, qemu_phys_bits, vfio_dma_maps, vfio_group};
use vmware::{vmware_pages, vmware_power_on};

/// A message of the host side, with its numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostMessage {
    /// VMware's `PCIPassthru: total number of pages needed (N) exceeds
    /// limit (M), failing`: the VM's passthrough devices need N 4 KiB
    /// pages of MMIO and the VM offers M (917504 pages = 3.5 GiB is the
    /// space below 4 GiB: no 64-bit MMIO). The VM does not power on.
    VmwarePages { needed: u64, limit: u64 },
    /// VMware did not power the VM on: `Module 'DevicePowerOn' power on
    /// failed.` in any language. The line does not say why; `explained`
    /// where another of VMware's messages in the text does (its MMIO
    /// total, a PCIe slot).
    VmwarePowerOn { explained: bool },
    /// VMware could not reserve a PCI Express slot for a virtual device
    /// (`... PCI: failed to reserve slot for ... PCIe device`).
    VmwareSlot,
    /// ESXi's PCIe hot-plug driver removed a passed-through device from its
    /// slot (`vmkernel.log`'s `PCIEHP: ... Adapter removed.`).
    EsxiHotplugRemoved,
    /// Hyper-V's start error: `The upper MMIO region (0x...) is above the
    /// supported physical address range. Make sure that the upper MMIO
    /// region is below 0x...`: the VM's high MMIO gap ends past what the
    /// host's CPU addresses. The numbers are `None` where only the first
    /// sentence is in the text.
    HypervUpperMmio {
        top: Option<u64>,
        limit: Option<u64>,
    },
    /// QEMU's `Address space limit 0x... < 0x... phys-bits too low (N)`
    /// (hw/i386/pc.c, `pc_memory_init()`): the highest address the guest
    /// uses (RAM, the memory hot-plug area and the 64-bit PCI hole above
    /// them) is past what the vCPU's N bits address. QEMU exits.
    /// `passthrough`: the text passes a device to the VM (`vfio-pci`).
    QemuPhysBits {
        limit: u64,
        need: u64,
        bits: u32,
        passthrough: bool,
    },
    /// QEMU failed to map a region for a VFIO device's DMA
    /// (`VFIO_MAP_DMA failed: ...`, `vfio_dma_map(...) = -N`,
    /// `vfio_container_dma_map(...) = -N`, iommufd's `IOMMU_IOAS_MAP
    /// failed: ..., PCI BAR?`). `region`: the memory region QEMU names
    /// (`pc.bios`, `ram-node0`, `dimm1`: guest memory); `iova` and `size`
    /// where printed; `errno` the error (positive); `bar`: iommufd's own
    /// guess that the region is a BAR (`PCI BAR?`, printed on EFAULT).
    VfioDmaMap {
        region: Option<String>,
        iova: Option<u64>,
        size: Option<u64>,
        errno: Option<u32>,
        bar: bool,
    },
    /// QEMU could not open a passed-through device through VFIO (see
    /// `qemu::vfio_group`): the host's part, not BAR space; QEMU does not
    /// add the device (at start, the VM does not start). `stage`: what
    /// failed.
    VfioGroup {
        group: Option<u32>,
        errno: Option<u32>,
        stage: VfioStage,
    },
    /// QEMU's `vfio_register_ram_discard_listener: possibly running out of
    /// DMA mappings` (hw/vfio/listener.c): the host's per-container limit
    /// of DMA mappings (vfio_iommu_type1 `dma_entry_limit`) is near.
    DmaMappingsLimit { max: Option<u64> },
    /// The host kernel refused to pin a VM's memory for DMA over its
    /// locked-memory limit (`vfio_pin_pages_remote: RLIMIT_MEMLOCK (N)
    /// exceeded`, `vfio_pin_page_external: Task ... RLIMIT_MEMLOCK (N)
    /// exceeded`, drivers/vfio/vfio_iommu_type1.c), or libvirt could not
    /// raise it (`cannot limit locked memory`).
    Memlock { limit: Option<u64> },
    /// The host IOMMU cannot map an address this high: `intel_iommu_map:
    /// iommu width (N) is not sufficient for the mapped address (A)`
    /// (drivers/iommu/intel/iommu.c).
    IommuWidth { width: u32, address: u64 },
    /// KVM refused a range of guest memory QEMU registered, and QEMU
    /// stopped: `kvm_set_user_memory_region: KVM_SET_USER_MEMORY_REGION
    /// failed, slot=10, start=0x400000000000, size=0x2000000: Invalid
    /// argument`, then `kvm_set_phys_mem: error registering slot: ...`
    /// and an abort (accel/kvm/kvm-all.c; `KVM_SET_USER_MEMORY_REGION2`
    /// and more fields since QEMU 9.0). A passed-through BAR is such a
    /// range, at the guest address its firmware gave it. `errno` from
    /// the error's text (EINVAL: x86 KVM refuses a range past the host
    /// CPU's physical address width, `kvm_arch_prepare_memory_region`).
    KvmMemslot {
        start: u64,
        size: u64,
        errno: Option<u32>,
    },
    /// Cloud Hypervisor's device manager could not map a VFIO region (a
    /// BAR, mapped into the host IOMMU for peer-to-peer DMA) and refused
    /// the device: `VfioMapRegion(DmaMap(IommuDmaMap(Error(N))))`. Before
    /// its PR #7030 such a failure was fatal to the device.
    CloudHypervisorMapRegion { errno: Option<u32> },
    /// OpenVMM's `low_mmio MMIO exhaustion: need 0x... bytes, have 0x...`
    /// (`high_mmio` likewise): the VMM's MMIO range for the root complex is
    /// smaller than its devices' BARs (microsoft/kata-containers PR #460).
    OpenvmmMmio { low: bool, need: u64, have: u64 },
    /// Hyper-V's GPU paravirtualization driver in the guest found no MMIO
    /// space for the virtual GPU: `dxgglobal_getiospace: Unable to allocate
    /// mmio memory: -N` (dxgkrnl asks VMBus for a range in the VM's MMIO
    /// gaps).
    DxgkrnlIospace { errno: Option<u32> },
    /// bhyve's `pci_passthru: map_pptdev_mmio failed`: mapping a
    /// passed-through device's BAR into the guest failed.
    BhyveMapFailed,
    /// bhyve's trace of a passed-through BAR moved in the guest:
    /// `2/0/0 modify_mmio 0x... -> 0x... (size ...) map|unmap`; the last
    /// word per guest address (`mapped`).
    BhyveModifyMmio { mapped: bool },
    /// Xen's pcifront could not claim a BAR in a PV guest: `Could not
    /// claim resource 0000:00:00.0/2! Device offline. Try using
    /// e820_host=1 in the guest config.`
    XenPcifrontClaim,
    /// The device did not come back from a reset or a low-power state:
    /// QEMU's `vfio: Unable to power on device, stuck in D3` (hw/vfio/pci.c
    /// `vfio_pci_pre_reset`), or the host kernel's `not ready 65535ms
    /// after bus reset; giving up` (drivers/pci/pci.c `pci_dev_wait`).
    /// `stuck_d3`: QEMU's words.
    DeviceReset { stuck_d3: bool },
    /// Cloud Hypervisor could not follow a BAR the guest moved: `Failed
    /// moving device BAR: <error>: 0xOLD->0xNEW(0xLEN)` (pci/src/bus.rs,
    /// the config-space write path; `, keeping old BAR` where it rolls the
    /// register back). The guest asked for an address outside the VMM's
    /// MMIO allocator (a rescan, `pci=nocrs`); the line names no device.
    CloudHypervisorMoveBar { from: u64, to: u64, len: u64 },
    /// Xen's VT-d code refused to assign a device that shares a reserved
    /// memory region with another (`[VT-D] It's disallowed to assign
    /// 0000:08:00.0 with shared RMRR at 7ba77000 for Dom5.`,
    /// xen/drivers/passthrough/vtd/iommu.c `intel_iommu_assign_device`).
    XenSharedRmrr,
    /// QEMU's Xen passthrough refused the host's integrated Intel graphics
    /// without `igd-passthru` (hw/xen/xen_pt.c `xen_pt_realize`: `Need to
    /// enable igd-passthru if you're trying to passthrough IGD GFX`).
    XenIgdPassthru,
    /// Hyper-V's DDA survey (Microsoft's SurveyDDA.ps1) found a device it
    /// cannot assign: `BIOS kept control of PCI Express for this device.
    /// Not assignable.`, `BIOS requires that this device remain attached to
    /// BIOS-owned memory.  Not assignable.`, `Old-style PCI device, switch
    /// port, etc.  Not assignable.`, `Legacy, non-VGA PCI device.  Not
    /// assignable.`
    HypervNotAssignable,
    /// Xen's device model (QEMU's `xen_pt` or qemu-traditional, in dom0 or
    /// a stubdomain) about a passed-through device's interrupts: its trace
    /// of setting up or tearing down MSI, or `failed` where it could not
    /// map or bind one (`Binding of interrupt ... failed`, `Mapping of MSI
    /// ...`).
    XenPtInterrupts { failed: bool },
    /// Xen's device model took a passed-through device, its regions
    /// registered (`xen::registered`).
    XenPtRegistered,
    /// Hyper-V's listing of a GPU it partitions (GPU-P:
    /// `Get-VMHostPartitionableGpu`, `Get-VMGpuPartitionAdapter`, their
    /// `...PartitionVRAM : N` properties): the VM gets a share of the GPU
    /// through a virtual render function with no BARs, over VMBus.
    HypervGpuPartition,
    /// NVIDIA's driver did not take a GPU another driver holds (`holder`
    /// where the log names it, vfio-pci on a host passing it through).
    NvidiaNotProbed { holder: Option<String> },
    /// NVIDIA's driver reported Xids, faults at run time: their numbers.
    NvidiaXid { codes: Vec<u32> },
    /// The host could not read a passed-through device's option ROM.
    VfioRomInvalid { got: u16 },
    /// The kernel's ioremap warning: `mapping multiple BARs`.
    MapsMultipleBars,
    /// Intel's IOMMU driver refused to give a device to a VM's domain: the
    /// firmware reserves memory for it (an RMRR).
    IommuRmrr,
    /// The host's vfio-pci could not take a device (`host_kernel::
    /// vfio_pci_probe`): its error, and whether the device sits in one of
    /// Intel VMD's PCI domains (10000 and up).
    VfioPciProbe { errno: u32, vmd: bool },
    /// QEMU refused a device whose MSI-X table or pending-bit array do not
    /// fit its BARs (`qemu::vfio_msix_layout`).
    VfioMsixLayout,
    /// KubeVirt's virt-launcher found fewer (or more) devices from its
    /// device plugin than GPUs or host devices the VMI asks for
    /// (`kubevirt::host_devices_mismatch`).
    KubevirtHostDevices,
    /// QEMU could not map a passed-through BAR into the guest directly
    /// (`qemu::vfio_mmap_failed`); it traps the accesses instead.
    VfioMmapFailed { bar: Option<u8> },
    /// QEMU's access to a passed-through device's region failed
    /// (`qemu::vfio_region_access`), with its error.
    VfioRegionAccess { errno: Option<u32> },
    /// QEMU could not reset a passed-through device whose bus holds a
    /// group the VM does not own (`qemu::vfio_reset_depends`).
    VfioResetDepends,
    /// The host's vfio-pci could not reserve BAR `bar` of its device
    /// (`host_kernel::vfio_cant_reserve`): another driver holds part of it.
    VfioCantReserve { bar: u8 },
    /// VMware Workstation could not open its host module's device
    /// (`vmware::vmware_host_module`): the host's VMware kernel modules are
    /// not loaded. The VM does not power on.
    VmwareHostModule,
    /// Hyper-V did not power on a VM's virtual PCI Express port: `A
    /// hypervisor feature is not available to the user. (0xC035001E)`
    /// (`hyperv::hyperv_feature_unavailable`).
    HypervFeatureUnavailable,
    /// The host's IOMMU core would not let VFIO take a device whose
    /// firmware tables ask for a 1:1 mapping (`host_kernel::driver_messages`,
    /// drivers/iommu/iommu.c, IOMMU_RESV_DIRECT).
    IommuDirectMapping,
    /// QEMU could not read a VFIO device's region description
    /// (`qemu::vfio_region_info`): the host's device or its driver, most
    /// often an mdev vGPU's.
    VfioRegionInfo { region: Option<u32> },
    /// QEMU could not read a VFIO device's config space
    /// (`qemu::vfio_config_read`): the host's device or its driver, most
    /// often an mdev vGPU's.
    VfioConfigRead { errno: Option<u32> },
    /// The host has no IOMMU for passthrough, as libvirt or Proxmox VE's
    /// qemu-server says before QEMU starts (`qemu::host_iommu_off`).
    HostIommuOff { proxmox: bool },
    /// OVMF's debug log of the 64-bit window it chose
    /// (OvmfPkg/Library/PlatformInitLib, `PlatformDynamicMmioWindow:   MMIO
    /// Space 0x... (N GB)`).
    OvmfMmioWindow { bytes: u64 },
    /// SeaBIOS's debug log of the 64-bit window it placed: `PCI: 64: A - B`.
    SeabiosWindow64 { start: u64, end: u64 },
}

/// Every host-side message in `text`, once each (the same line repeated,
/// or relayed twice by two services, is one message).
pub(crate) fn host_messages(text: &str) -> Vec<HostMessage> {
    // A report's own heading (`# SOURCE: ...` quoting an issue's title)
    // is not the log.
    let lines: Vec<&str> = text.lines().filter(|l| !is_report_heading(l)).collect();
    let mut out: Vec<HostMessage> = Vec::new();
    let mut push = |m: HostMessage| {
        if !out.contains(&m) {
            out.push(m);
        }
    };
    let passthrough = lines.iter().any(|l| l.contains("vfio-pci"));
    let mut bhyve_mapped = None;
    let mut power_on = false;
    // The device model's interrupt lines are one message: failed if any
    // of them says so.
    let mut xen_pt: Option<bool> = None;
    let mut joined_next = false;
    for (n, line) in lines.iter().copied().enumerate() {
        if let Some(m) = vmware_pages(line) {
            push(m);
        }
        power_on |= vmware_power_on(line);
        for m in vmware::notes(line) {
            push(m);
        }
        if let Some(m) = qemu_phys_bits(line, passthrough) {
            push(m);
        }
        if let Some(m) = vfio_group(line) {
            // QEMU before 2.9 prints a container's error and its group's
            // number on two lines, one after the other: one failure.
            let next = || lines.get(n + 1).and_then(|l| vfio_group(l));
            match qemu::join_container_lines(&m, next()) {
                Some(joined) => {
                    push(joined);
                    joined_next = true;
                }
                None if joined_next => joined_next = false,
                None => push(m),
            }
        } else {
            joined_next = false;
        }
        if let Some(m) = vfio_pci_probe(line) {
            push(m);
        }
        if let Some(m) = qemu::vfio_device_note(line).or_else(|| qemu::host_iommu_off(line)) {
            push(m);
        }
        if kubevirt::host_devices_mismatch(line) {
            push(HostMessage::KubevirtHostDevices);
        }
        if let Some(m) = dma_mappings_limit(line) {
            push(m);
        }
        if let Some(m) = memlock(line) {
            push(m);
        }
        if let Some(m) = device_reset(line) {
            push(m);
        }
        if let Some(m) = iommu_width(line) {
            push(m);
        }
        // QEMU prints it on one line; a person may break it before its
        // `start=` (indenting the rest).
        let wrapped = || {
            let next = lines.get(n + 1)?;
            (next.starts_with(char::is_whitespace) && next.trim_start().starts_with("start="))
                .then(|| kvm_memslot(&format!("{line} {}", next.trim_start())))?
        };
        if let Some(m) = kvm_memslot(line).or_else(wrapped) {
            push(m);
        }
        if let Some(m) = cloud_hypervisor_map_region(line) {
            push(m);
        }
        if let Some(m) = openvmm_mmio(line) {
            push(m);
        }
        if let Some(m) = dxgkrnl_iospace(line) {
            push(m);
        }
        if line.contains("map_pptdev_mmio failed") {
            push(HostMessage::BhyveMapFailed);
        }
        if let Some(mapped) = bhyve_modify_mmio(line) {
            bhyve_mapped = Some(mapped);
        }
        if let Some(m) = ovmf_window(line).or_else(|| seabios_window(line)) {
            push(m);
        }
        if hyperv_not_assignable(line) {
            push(HostMessage::HypervNotAssignable);
        }
        if hyperv::gpu_partition(line) {
            push(HostMessage::HypervGpuPartition);
        }
        if let Some(m) = xen::refusal(line) {
            push(m);
        }
        if xen::registered(line) {
            push(HostMessage::XenPtRegistered);
        }
        if let Some(failed) = xen::interrupts(line) {
            xen_pt = Some(xen_pt.unwrap_or(false) || failed);
        }
    }
    if let Some(failed) = xen_pt {
        push(HostMessage::XenPtInterrupts { failed });
    }
    for m in host_kernel::driver_messages(&lines) {
        push(m);
    }
    if let Some(mapped) = bhyve_mapped {
        push(HostMessage::BhyveModifyMmio { mapped });
    }
    let mut power_on = power_on.then_some(HostMessage::VmwarePowerOn { explained: false });
    // The two messages a report wraps: read with line breaks as spaces.
    let flat = lines
        .iter()
        .flat_map(|l| l.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(m) = hyperv_upper_mmio(&flat) {
        push(m);
    }
    if hyperv::hyperv_feature_unavailable(&flat) {
        push(HostMessage::HypervFeatureUnavailable);
    }
    for m in vfio_dma_maps(&flat) {
        push(m);
    }
    for m in cloud_hypervisor_move_bars(&flat) {
        push(m);
    }
    if let Some(HostMessage::VmwarePowerOn { explained }) = power_on.as_mut() {
        *explained = out.iter().any(|m| {
            matches!(
                m,
                HostMessage::VmwarePages { .. }
                    | HostMessage::VmwareSlot
                    | HostMessage::EsxiHotplugRemoved
                    | HostMessage::VmwareHostModule
            )
        });
    }
    out.extend(power_on);
    out
}

/// Cloud Hypervisor's device manager error, as Kata's shim relays it
/// (`Debug`): `VfioMapRegion(DmaMap(IommuDmaMap(Error(17))))`; or as
/// its own log prints it (`Display`, the chain of sources after it):
/// `Failed to map VFIO MMIO region: Failed to DMA map: ...: Bad address
/// (os error 14)` (vmm/src/device_manager.rs, `DeviceManagerError::
/// VfioMapRegion`'s `#[error]`).
fn cloud_hypervisor_map_region(line: &str) -> Option<HostMessage> {
    if let Some(at) = line.find("VfioMapRegion(") {
        return Some(HostMessage::CloudHypervisorMapRegion {
            errno: decimal_after(&line[at..], "Error(").and_then(|n| u32::try_from(n).ok()),
        });
    }
    let at = line.find("Failed to map VFIO MMIO region")?;
    Some(HostMessage::CloudHypervisorMapRegion {
        errno: decimal_after(&line[at..], "(os error ").and_then(|n| u32::try_from(n).ok()),
    })
}

/// OpenVMM: `low_mmio MMIO exhaustion: need 0x14500000 bytes, have
/// 0x14000000`.
fn openvmm_mmio(line: &str) -> Option<HostMessage> {
    let at = line.find("MMIO exhaustion: need ")?;
    let head = &line[..at];
    let rest = &line[at..];
    Some(HostMessage::OpenvmmMmio {
        low: !head.trim_end().ends_with("high_mmio"),
        need: hex_after(rest, "need ")?,
        have: hex_after(rest, "have ")?,
    })
}

/// dxgkrnl (Hyper-V GPU-PV, drivers/hv/dxgkrnl): `dxgglobal_getiospace:
/// Unable to allocate mmio memory: -6`, and its caller's
/// `dxgglobal_init_global_channel: getiospace failed: -6`.
fn dxgkrnl_iospace(line: &str) -> Option<HostMessage> {
    let key = if line.contains("Unable to allocate mmio memory: ") {
        "Unable to allocate mmio memory: -"
    } else if line.contains("getiospace failed: ") {
        "getiospace failed: -"
    } else {
        return None;
    };
    Some(HostMessage::DxgkrnlIospace {
        errno: decimal_after(line, key).and_then(|n| u32::try_from(n).ok()),
    })
}

/// bhyve's passthru trace (usr.sbin/bhyve/pci_passthru.c):
/// `2/0/0 modify_mmio 0x0000000082000000 -> 0x00000000c2000000 (size
/// 880000) map`; `Some(true)` for `map`, `Some(false)` for `unmap`.
fn bhyve_modify_mmio(line: &str) -> Option<bool> {
    let at = line.find(" modify_mmio 0x")?;
    let bsf = line[..at].rsplit(' ').next()?;
    if bsf.split('/').count() != 3 || !bsf.split('/').all(|p| decimal(p).is_some()) {
        return None;
    }
    match line.trim_end().rsplit(' ').next()? {
        "map" => Some(true),
        "unmap" => Some(false),
        _ => None,
    }
}

/// Cloud Hypervisor's `Failed moving device BAR: failed allocating new 64
/// bits MMIO range: 0x7ffff6c000->0x7ffff00000(0x80000)`, in either of its
/// arrow spellings (` -> ` in some releases' logs), each in the text read
/// with its line breaks as spaces (a report wraps it after the colon).
fn cloud_hypervisor_move_bars(flat: &str) -> Vec<HostMessage> {
    flat.match_indices("Failed moving device BAR: ")
        .filter_map(|(at, _)| cloud_hypervisor_move_bar(&flat[at..]))
        .collect()
}

fn cloud_hypervisor_move_bar(rest: &str) -> Option<HostMessage> {
    // Its numbers come before the next message's.
    let rest = &rest[..rest.find(')').map_or(rest.len(), |e| e + 1)];
    let arrow = rest.find("->")?;
    let from = hex_u64(rest[..arrow].rsplit([' ', ':']).find(|w| !w.is_empty())?)?;
    let after = rest[arrow + 2..].trim_start();
    let (to, tail) = after.split_once('(')?;
    let len = hex_u64(tail.split(')').next()?.trim())?;
    Some(HostMessage::CloudHypervisorMoveBar {
        from,
        to: hex_u64(to.trim())?,
        len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> HostMessage {
        let m = host_messages(text);
        assert_eq!(m.len(), 1, "{text}: {m:?}");
        m.into_iter().next().unwrap()
    }

    #[test]
    fn vmware_power_on_is_explained_by_vmwares_other_lines() {
        let alone = "Module 'DevicePowerOn' power on failed.";
        assert_eq!(one(alone), HostMessage::VmwarePowerOn { explained: false });
        let slot =
            "Vmxnet3 PCI: failed to reserve slot for vmxnet3 PCIe device\n".to_string() + alone;
        assert_eq!(
            host_messages(&slot),
            vec![
                HostMessage::VmwareSlot,
                HostMessage::VmwarePowerOn { explained: true }
            ]
        );
        let pages =
            "PCIPassthru: total number of pages needed (4206594) exceeds limit (917504), failing\n"
                .to_string()
                + alone;
        assert_eq!(
            host_messages(&pages)[1],
            HostMessage::VmwarePowerOn { explained: true }
        );
    }

    #[test]
    fn vmware_hyperv_and_qemu_refusals_with_their_numbers() {
        // Dell KB 000199172 (ESXi 7 prefix) and an ESXi 8 log line.
        assert_eq!(
            one("2022-04-22T03:04:15.771Z| vmx| | I005: PCIPassthru: total number of pages needed (4206594) exceeds limit (917504), failing"),
            HostMessage::VmwarePages { needed: 4206594, limit: 917504 }
        );
        assert_eq!(
            one("2023-07-21T09:40:52.413Z In(05) vmx - PCIPassthru: total number of pages needed (33566722) exceeds limit (917504), failing"),
            HostMessage::VmwarePages { needed: 33566722, limit: 917504 }
        );
        // Hyper-V's start error, wrapped by PowerShell.
        let hv = "Virtual machine 'GPUP' cannot be started. The upper MMIO region (0x00000017dffff000) is above the supported physical address range. Make sure that the upper MMIO region is \nbelow 0x0000001000000000. (Virtual machine ID 92D2CEE9)";
        assert_eq!(
            one(hv),
            HostMessage::HypervUpperMmio {
                top: Some(0x17_dfff_f000),
                limit: Some(0x10_0000_0000)
            }
        );
        assert_eq!(
            one("The configuration of the virtual machine 'GPUPV' specifies an upper MMIO region that is above the supported physical address range."),
            HostMessage::HypervUpperMmio { top: None, limit: None }
        );
        // QEMU, with and without a device passed through.
        let q = "qemu-system-x86_64: Address space limit 0xfffffffff < 0x107fffffff phys-bits too low (36)";
        assert_eq!(
            one(q),
            HostMessage::QemuPhysBits {
                limit: 0xf_ffff_ffff,
                need: 0x10_7fff_ffff,
                bits: 36,
                passthrough: false
            }
        );
        let with = format!("-device vfio-pci,host=0000:41:00.0\n{q}\n");
        assert!(matches!(
            one(&with),
            HostMessage::QemuPhysBits {
                passthrough: true,
                ..
            }
        ));
    }

    #[test]
    fn vfio_dma_mapping_failures_name_the_region_address_and_error() {
        // KubeVirt's libvirt error (kubevirt #14593), QEMU's argument
        // broken over lines by the reporter.
        let kv = "  2025-04-25T14:42:06.039307Z qemu-kvm: -device \n    {\"driver\":\"vfio-pci\",\n    \"addr\":\"0x0\"}: VFIO_MAP_DMA failed: Cannot allocate memory\n  qemu-kvm: -device\n    {\"driver\":\"vfio-pci\"}: vfio 0000:35:00.0: failed to setup container for group 75: memory listener initialization failed: Region pc.bios: vfio_container_dma_map (0x5632ad2e1e80, 0xfffc0000, 0x40000, 0x7fdf48200000) = -2 (No such file or directory)')\n";
        let m = host_messages(kv);
        assert!(
            m.contains(&HostMessage::VfioDmaMap {
                region: Some("pc.bios".into()),
                iova: Some(0xfffc_0000),
                size: Some(0x4_0000),
                errno: Some(2),
                bar: false
            }),
            "{m:?}"
        );
        assert!(
            m.contains(&HostMessage::VfioDmaMap {
                region: None,
                iova: None,
                size: None,
                errno: Some(12),
                bar: false
            }),
            "{m:?}"
        );
        // Proxmox's journal: a BAR at 56 TiB, beyond the host IOMMU.
        let pve = "Jun 04 07:25:13 pve1 QEMU[3989106]: kvm: vfio_dma_map(0x5e043daea2f0, 0x380000000000, 0x10000000, 0x771a38000000) = -22 (Invalid argument)\nJun 04 07:25:13 pve1 QEMU[3989106]: kvm: VFIO_MAP_DMA failed: Invalid argument\n";
        let m = host_messages(pve);
        assert_eq!(
            m[0],
            HostMessage::VfioDmaMap {
                region: None,
                iova: Some(0x3800_0000_0000),
                size: Some(0x1000_0000),
                errno: Some(22),
                bar: false
            }
        );
        // iommufd through Kata's shim (logfmt).
        let kata = "time=\"2026-06-23T10:48:05Z\" level=warning msg=\"qemu-system-x86_64-tdx-experimental: IOMMU_IOAS_MAP failed: Bad address, PCI BAR?\" name=containerd-shim-v2\n";
        assert_eq!(
            one(kata),
            HostMessage::VfioDmaMap {
                region: None,
                iova: None,
                size: None,
                errno: Some(14),
                bar: true
            }
        );
        // Anonymised by a reporter, and wrapped.
        let anon = "vfio 0000:xx:00.0: failed to setup container for group N: memory listener\ninitialization failed: Region ram-node0: vfio_container_dma_map(...) = -12\n(Cannot allocate memory)\n";
        assert_eq!(
            one(anon),
            HostMessage::VfioDmaMap {
                region: Some("ram-node0".into()),
                iova: None,
                size: None,
                errno: Some(12),
                bar: false
            }
        );
    }

    #[test]
    fn other_vmms_and_the_host_kernel() {
        assert_eq!(
            one("level=error msg=\"failed to hotplug VFIO device\" error=\"reason: Error from device manager: VfioMapRegion(DmaMap(IommuDmaMap(Error(17))))\""),
            HostMessage::CloudHypervisorMapRegion { errno: Some(17) }
        );
        assert_eq!(
            one("Oct 01 08:04:49 myhost QEMU[1019150]: kvm: kvm_set_user_memory_region: KVM_SET_USER_MEMORY_REGION failed, slot=10, start=0x400000000000, size=0x2000000: Invalid argument "),
            HostMessage::KvmMemslot { start: 0x4000_0000_0000, size: 0x200_0000, errno: Some(22) }
        );
        assert_eq!(
            one("qemu-system-x86_64: kvm_set_user_memory_region: KVM_SET_USER_MEMORY_REGION2 failed, slot=9, start=0x38000000000, size=0x4000000000, flags=0x0, guest_memfd=-1, guest_memfd_offset=0x0: File exists"),
            HostMessage::KvmMemslot { start: 0x380_0000_0000, size: 0x40_0000_0000, errno: Some(17) }
        );
        // Broken before its `start=` by the person who quoted it (the
        // fifth collection of 2026-12-06, b02); an unindented next line
        // is another message.
        assert_eq!(
            one("kvm_set_user_memory_region: KVM_SET_USER_MEMORY_REGION failed, slot=13,\n  start=0x8508000000000000, size=0x400000000: Invalid argument\n"),
            HostMessage::KvmMemslot { start: 0x8508_0000_0000_0000, size: 0x4_0000_0000, errno: Some(22) }
        );
        assert!(host_messages("kvm_set_user_memory_region: KVM_SET_USER_MEMORY_REGION failed, slot=13,\nstart=0x8508000000000000, size=0x400000000: Invalid argument\n").is_empty());
        assert!(host_messages("I saw \"KVM_SET_USER_MEMORY_REGION failed, slot=\" in the log before, then:\n    region start=0x10000000000 size=0x800000000: Invalid argument\n").is_empty());
        assert_eq!(
            one("Failed to map VFIO MMIO region: Failed to DMA map: failed to map an IOVA range to the IOAS: Bad address (os error 14)"),
            HostMessage::CloudHypervisorMapRegion { errno: Some(14) }
        );
        assert_eq!(
            one("low_mmio MMIO exhaustion: need 0x14500000 bytes, have 0x14000000"),
            HostMessage::OpenvmmMmio {
                low: true,
                need: 0x1450_0000,
                have: 0x1400_0000
            }
        );
        assert_eq!(
            host_messages("dxgglobal_getiospace: Unable to allocate mmio memory: -6\ndxgglobal_init_global_channel: getiospace failed: -6\n"),
            [HostMessage::DxgkrnlIospace { errno: Some(6) }]
        );
        assert_eq!(
            one("Jul 28 16:14:53 s510u kernel: vfio_pin_page_external: Task qemu-system-x86 (575712) RLIMIT_MEMLOCK (1048576) exceeded"),
            HostMessage::Memlock { limit: Some(1048576) }
        );
        // A device that does not come back from a reset: QEMU's words and
        // the host kernel's last one; its `waiting` lines are none.
        assert_eq!(
            one(
                "Jul 15 15:54:07 pm QEMU[69339]: kvm: vfio: Unable to power on device, stuck in D3"
            ),
            HostMessage::DeviceReset { stuck_d3: true }
        );
        assert_eq!(
            one("Jul 23 18:05:36 pm kernel: vfio-pci 0000:84:00.0: not ready 65535ms after bus reset; giving up"),
            HostMessage::DeviceReset { stuck_d3: false }
        );
        assert!(host_messages(
            "vfio-pci 0000:84:00.0: not ready 4095ms after bus reset; waiting\n"
        )
        .is_empty());
        assert_eq!(
            one("[429200.701588] intel_iommu_map: iommu width (39) is not sufficient for the mapped address (8800001000)"),
            HostMessage::IommuWidth { width: 39, address: 0x88_0000_1000 }
        );
        assert_eq!(
            host_messages("2/0/0 modify_mmio 0x0000000082000000 -> 0x00000000c2000000 (size           880000) map\n2/0/0 modify_mmio 0x0000000082000000 -> 0x00000000c2000000 (size           880000) unmap\n"),
            [HostMessage::BhyveModifyMmio { mapped: false }]
        );
        assert_eq!(
            one("bhyve: pci_passthru: map_pptdev_mmio failed"),
            HostMessage::BhyveMapFailed
        );
        assert_eq!(
            one("pcifront pci-0: Could not claim resource 0000:00:00.0/2! Device offline. Try using e820_host=1 in the guest config."),
            HostMessage::XenPcifrontClaim
        );
        assert_eq!(
            one("PlatformDynamicMmioWindow:   MMIO Space 0x100000000000 (16384 GB)"),
            HostMessage::OvmfMmioWindow {
                bytes: 0x1000_0000_0000
            }
        );
        assert_eq!(
            one("qemu-kvm: -device vfio-pci,host=0000:18:00.0: warning: vfio_register_ram_discard_listener: possibly running out of DMA mappings. E.g., try increasing the 'block-size' of virtio-mem devies. Maximum possible DMA mappings: 65535, Maximum possible memslots: 32764"),
            HostMessage::DmaMappingsLimit { max: Some(65535) }
        );
        // Cloud Hypervisor's own log, both releases' wordings.
        assert_eq!(
            one("cloud-hypervisor: 21.303056224s: <vcpu0> ERROR:pci/src/bus.rs:390 -- Failed moving device BAR: failed allocating new 64 bits MMIO range: 0x7ffff6c000->0x7ffff00000(0x80000)"),
            HostMessage::CloudHypervisorMoveBar { from: 0x7f_fff6_c000, to: 0x7f_fff0_0000, len: 0x8_0000 }
        );
        assert_eq!(
            one("WARN:pci/src/bus.rs:402 -- Failed moving device BAR: failed allocating new MMIO range: 0xd2000000 -> 0x80000000 (0x1000000), keeping old BAR"),
            HostMessage::CloudHypervisorMoveBar { from: 0xd200_0000, to: 0x8000_0000, len: 0x100_0000 }
        );
        // Xen's hypervisor log and its device model; `risky` (relaxed) is
        // no refusal.
        assert_eq!(
            one("[2020-08-22 10:09:03] (XEN) [  297.542134] [VT-D] It's disallowed to assign 0000:08:00.0 with shared RMRR at 7ba77000 for Dom32753."),
            HostMessage::XenSharedRmrr
        );
        assert!(host_messages(
            "(XEN) [VT-D] It's risky to assign 0000:00:14.0 with shared RMRR at 8d000000 for d1.\n"
        )
        .is_empty());
        assert_eq!(
            one("{\"error\": {\"class\": \"GenericError\", \"desc\": \"Need to enable igd-passthru if you're trying to passthrough IGD GFX\"}}"),
            HostMessage::XenIgdPassthru
        );
        // SurveyDDA.ps1's refusals, one message however many devices.
        assert_eq!(
            host_messages("BIOS requires that this device remain attached to BIOS-owned memory.  Not assignable.\nOld-style PCI device, switch port, etc.  Not assignable.\nBIOS kept control of PCI Express for this device.  Not assignable\n"),
            [HostMessage::HypervNotAssignable]
        );
        // Xen's device model: its interrupt lines are one message, failed
        // wherever a line says so, after the lines' own messages.
        assert_eq!(
            host_messages("[00:06.0] msi_msix_setup: Error: Mapping of MSI-X (err: 19, vec: 0xef, entry 0x0)\n[00:06.0] xen_pt_msgctrl_reg_write: setup MSI (register: 87).\n[00:06.0] xen_pt_msi_setup: MSI mapped with pirq 86.\n"),
            [HostMessage::XenPtInterrupts { failed: true }]
        );
        assert_eq!(
            host_messages("[00:06.0] xen_pt_msi_setup: MSI mapped with pirq 86.\n[00:06.0] msi_msix_disable: Unmap MSI pirq 86\n{\"desc\": \"Need to enable igd-passthru if you're trying to passthrough IGD GFX\"}\n"),
            [HostMessage::XenIgdPassthru, HostMessage::XenPtInterrupts { failed: false }]
        );
        // QEMU's VFIO group, as Proxmox and libvirt relay it.
        assert_eq!(
            one("kvm: -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/00000000-0000-0000-0000-000000000100,id=hostpci0: vfio 00000000-0000-0000-0000-000000000100: error getting device from group 64: Input/output error"),
            HostMessage::VfioGroup {
                group: Some(64),
                errno: Some(5),
                stage: VfioStage::Group
            }
        );
        assert_eq!(
            one("qemu-system-x86_64: -device vfio-pci,host=0000:01:00.0: vfio 0000:01:00.0: group 1 is not viable"),
            HostMessage::VfioGroup {
                group: Some(1),
                errno: None,
                stage: VfioStage::Group
            }
        );
        // Its group's node, its container, and iommufd's device node
        // (hw/vfio/container.c `vfio_get_group()`, hw/vfio/iommufd.c
        // `iommufd_cdev_getfd()`), relayed by KubeVirt with `\\n`.
        use VfioStage::{Cdev, Container, Group};
        for (line, group, errno, stage) in [
            ("qemu-system-x86_64: -device vfio-pci,host=00:02.0,bus=port.1: vfio 0000:00:02.0: failed to open /dev/vfio/1: No such file or directory", Some(1), Some(2), Group),
            ("warning: x\\n2025-05-15T13:49:50.787125Z qemu-system-x86_64: -device {\\\"driver\\\":\\\"vfio-pci\\\"}: vfio 0000:01:00.0: failed to open /dev/vfio/1: Device or resource busy')\"", Some(1), Some(16), Group),
            ("libvirtd: qemu: -device vfio-pci,host=0000:01:00.0: vfio 0000:01:00.0: failed to open /dev/vfio/12: Permission denied", Some(12), Some(13), Group),
            ("qemu: -device vfio-pci,host=0000:04:00.1: vfio 0000:04:00.1: failed to setup container for group 37: Failed to set group container: Operation not permitted", Some(37), Some(1), Container),
            ("qemu-kvm: -device vfio-pci,host=28:00.0,iommufd=iommufd0: vfio 0000:28:00.0: vfio /sys/bus/pci/devices/0000:28:00.0/vfio-dev: failed to load \"/sys/bus/pci/devices/0000:28:00.0/vfio-dev/vfio0/dev\"", None, None, Cdev),
            ("qemu: -device vfio-pci,host=0000:01:00.0: vfio 0000:01:00.0: failed to setup container for group 5: failed to open /dev/vfio/vfio: No such file or directory", Some(5), Some(2), Container),
        ] {
            assert_eq!(one(line), HostMessage::VfioGroup { group, errno, stage }, "{line}");
        }
        // Prose that names vfio before the message's words is not QEMU's
        // line, which names the device after `vfio `.
        assert!(host_messages("I failed to open /dev/vfio/1 yesterday\n").is_empty());
        for prose in [
            "I checked vfio and it is loaded, but I still get: failed to open /dev/vfio/22: No such file or directory\n",
            "Is the vfio module loaded? Error: failed to setup container for group 7: Failed to set group container: Invalid argument\n",
        ] {
            assert!(host_messages(prose).is_empty(), "{prose}");
        }
        assert!(host_messages("the group 3 is not viable for the vote\n").is_empty());
        // QEMU before 2.9: `vfio: ...` behind the option's location, a
        // container's error and its group's number on two lines (corpus
        // 408, 409, 411).
        for (line, group, errno, stage) in [
            ("qemu-system-x86_64: -device vfio-pci,host=01:00.0,bus=root.1,addr=00.0,multifunction=on,x-vga=on: vfio: error opening /dev/vfio/1: Permission denied", Some(1), Some(13), Group),
            ("qemu-kvm: -device vfio-pci,host=87:00.0,id=hostdev0: vfio: error, group 70 is not viable, please ensure all devices within the iommu_group are bound to their vfio bus driver.", Some(70), None, Group),
        ] {
            assert_eq!(one(line), HostMessage::VfioGroup { group, errno, stage }, "{line}");
        }
        assert_eq!(
            host_messages(
                "2016-02-05T12:08:22.960665Z qemu-kvm: -device vfio-pci,host=87:00.0,id=hostdev0,bus=pci.0,addr=0x5: vfio: failed to set iommu for container: Operation not permitted\n\
                 2016-02-05T12:08:22.960697Z qemu-kvm: -device vfio-pci,host=87:00.0,id=hostdev0,bus=pci.0,addr=0x5: vfio: failed to setup container for group 70\n\
                 2016-02-05T12:08:22.960706Z qemu-kvm: -device vfio-pci,host=87:00.0,id=hostdev0,bus=pci.0,addr=0x5: vfio: failed to get group 70\n"
            ),
            [HostMessage::VfioGroup { group: Some(70), errno: Some(1), stage: Container }]
        );
        assert!(
            host_messages("vfio: error opening /dev/vfio/1: Permission denied, what now?\n")
                .is_empty()
        );
        // The host's vfio-pci refusing a device (corpus 414: behind VMD).
        for (line, errno, vmd) in [
            (
                "[ 4.436409] vfio-pci: probe of 10000:01:00.0 failed with error -22",
                22,
                true,
            ),
            (
                "vfio-pci 0000:01:00.0: probe with driver vfio-pci failed with error -22",
                22,
                false,
            ),
            (
                "vfio-pci: probe of 0000:65:00.0 failed with error -16",
                16,
                false,
            ),
        ] {
            assert_eq!(
                one(line),
                HostMessage::VfioPciProbe { errno, vmd },
                "{line}"
            );
        }
        assert!(host_messages("nvidia: probe of 0000:01:00.0 failed with error -1\n").is_empty());
        // QEMU's MSI-X check (corpus 426) and KubeVirt's device count
        // (corpus 400).
        assert_eq!(
            one("qemu-system-x86_64: -device vfio-pci,host=01:00.0,id=hostdev2,bus=pci.0,addr=0x8: vfio error: 0000:01:00.0: failed to add PCI capability 0x11[0x50]@0xb0: table & pba overlap, or they don't fit in BARs, or don't align"),
            HostMessage::VfioMsixLayout
        );
        for line in [
            r#"{"component":"virt-launcher","level":"error","msg":"Failed to sync vmi","reason":"failed to create GPU host-devices: the number of GPU/s do not match the number of devices:\nGPU: [{gpu1 nvidia.com/gpu <nil> <nil>}]\nDevice: []"}"#,
            "failed to create host-devices: the number of device plugin HostDevice/s do not match the number of devices:",
        ] {
            assert_eq!(one(line), HostMessage::KubevirtHostDevices, "{line}");
        }
        assert!(
            host_messages("the number of USB/s do not match the number of devices\n").is_empty()
        );
        // Prose quoting QEMU's words lacks QEMU's own parts.
        for prose in [
            "the check says table & pba overlap, or they don't fit in BARs, so what?\n",
            "Why would QEMU say Cannot reset device foo, depends on group 3 which is not owned?\n",
            "Did you see vfio_region_write(x) failed: Device or resource busy in the log?\n",
            "vfio-pci 0000:01:00.0: BAR 1: can't reserve [mem size 0x10000000 64bit pref]\n",
        ] {
            assert!(host_messages(prose).is_empty(), "{prose}");
        }
        // A container's two lines join only one after the other.
        let apart = host_messages(
            "qemu-kvm: -device vfio-pci,host=87:00.0: vfio: failed to set iommu for container: Operation not permitted\n\
             something else\n\
             qemu-kvm: -device vfio-pci,host=88:00.0: vfio: failed to setup container for group 71\n",
        );
        assert_eq!(apart.len(), 2, "{apart:?}");
        assert_eq!(
            host_messages(
                "qemu-kvm: -device vfio-pci,host=87:00.0: vfio: No available IOMMU models\n\
                 qemu-kvm: -device vfio-pci,host=87:00.0: vfio: failed to setup container for group 9\n",
            ),
            [HostMessage::VfioGroup { group: Some(9), errno: None, stage: Container }]
        );
        // A BAR the host side could not use as it wanted: QEMU's mmap and
        // region access, its reset, the host's reservation (corpus 252,
        // 361).
        for (line, want) in [
            ("kvm: -device vfio-pci,host=0000:0b:00.0,id=hostpci0: vfio_region_mmap: Failed to mmap 0000:0b:00.0 BAR 1. Performance may be slow", HostMessage::VfioMmapFailed { bar: Some(1) }),
            ("level=error msg=\"Failed to mmap 0000:01:00.0 BAR 3. Performance may be slow\" name=containerd-shim-v2", HostMessage::VfioMmapFailed { bar: Some(3) }),
            ("kvm: vfio_region_write(0000:01:00.0:region1+0x1c0, 0x0,8) failed: Device or resource busy", HostMessage::VfioRegionAccess { errno: Some(16) }),
            ("qemu-system-x86_64: vfio_region_read(0000:01:00.0:region0+0x88000, 4) failed: Input/output error", HostMessage::VfioRegionAccess { errno: Some(5) }),
            ("kvm: vfio: Cannot reset device 0000:01:00.1, depends on group 13 which is not owned.", HostMessage::VfioResetDepends),
            ("[Thu May 26 17:04:45 2022] vfio-pci 0000:0d:00.0: BAR 1: can't reserve [mem 0xd0000000-0xdfffffff 64bit pref]", HostMessage::VfioCantReserve { bar: 1 }),
            // The seventh collection's d05, d06.
            ("vfio-pci 0000:01:00.0: Firmware has requested this device have a 1:1 IOMMU mapping,", HostMessage::IommuDirectMapping),
            ("vfio 00000000-0000-0000-0000-000000000102: failed to get region 0 info: Input/output error", HostMessage::VfioRegionInfo { region: Some(0) }),
            // The eighth collection's a03 and a10, and Proxmox VE's words.
            ("kvm: -device vfio-pci,sysfsdev=/sys/bus/pci/devices/0000:06:00.0/00000000-0000-0000-0000-000000000100,id=hostpci0,bus=pci.0,addr=0x10: vfio 00000000-0000-0000-0000-000000000100: failed to read device config space: Bad address", HostMessage::VfioConfigRead { errno: Some(14) }),
            ("Call to virDomainCreateWithFlags failed: unsupported configuration: host doesn't support passthrough of host PCI devices", HostMessage::HostIommuOff { proxmox: false }),
            ("TASK ERROR: cannot prepare PCI pass-through, IOMMU not present", HostMessage::HostIommuOff { proxmox: true }),
            ("cannot prepare PCI pass-through, IOMMU not present", HostMessage::HostIommuOff { proxmox: true }),
            ("> cannot prepare PCI pass-through, IOMMU not present", HostMessage::HostIommuOff { proxmox: true }),
            ("{\"data\":{\"exitstatus\":\"cannot prepare PCI pass-through, IOMMU not present\",\"status\":\"stopped\"}}", HostMessage::HostIommuOff { proxmox: true }),
            ("│ exitstatus │ cannot prepare PCI pass-through, IOMMU not present │", HostMessage::HostIommuOff { proxmox: true }),
            ("Error: 500 cannot prepare PCI pass-through, IOMMU not present", HostMessage::HostIommuOff { proxmox: true }),
            ("\"host doesn't support passthrough of host PCI devices\"", HostMessage::HostIommuOff { proxmox: false }),
            ("错误：不支持的配置：host doesn't support passthrough of host PCI devices", HostMessage::HostIommuOff { proxmox: false }),
            ("virhe: kokoonpanoa ei tueta host doesn't support passthrough of host PCI devices", HostMessage::HostIommuOff { proxmox: false }),
            ("error: unsupported configuration: host doesn't support passthrough of host PCI devices", HostMessage::HostIommuOff { proxmox: false }),
        ] {
            assert_eq!(one(line), want, "{line}");
        }
        assert!(host_messages(
            "I failed to mmap the file\nnvme 0000:03:00.0: BAR 0: can't reserve [mem 0x1-0x2]\n"
        )
        .is_empty());
        // VMware Workstation's host modules missing (b04): the power-on
        // failure is explained. Hyper-V's port that did not power on (d03),
        // wrapped.
        assert_eq!(
            host_messages("Unable to change virtual machine power state: Failed to open device \"/dev/vmci\": ?????????\nPlease make sure that the kernel module 'vmci' is loaded.\nModule 'DevicePowerOn' power on failed.\n"),
            [HostMessage::VmwareHostModule, HostMessage::VmwarePowerOn { explained: true }]
        );
        assert_eq!(
            host_messages("Virtual Pci Express Port (Instance ID ...): Failed to Power on with Error\n'A hypervisor feature is not available to the user'. (0xC035001E).\n"),
            [HostMessage::HypervFeatureUnavailable]
        );
        for prose in [
            "WslRegisterDistribution failed with error: 0xc035001e\n",
            "make sure that the kernel module is loaded\n",
            "a hypervisor feature is missing\n",
            "failed to get region info\n",
            "QEMU said it failed to read device config space\n",
            "I get \"host doesn't support passthrough of host PCI devices\" from virsh\n",
            "Proxmox says 'cannot prepare PCI pass-through, IOMMU not present' here\n",
            "It printed “host doesn't support passthrough of host PCI devices” again\n",
        ] {
            assert!(host_messages(prose).is_empty(), "{prose}");
        }
        // Hyper-V's GPU partitioning listing, one message for its lines.
        assert_eq!(
            host_messages("MinPartitionVRAM        : 0\nMaxPartitionVRAM        : 1000000000\nOptimalPartitionVRAM    : 1000000000\n"),
            [HostMessage::HypervGpuPartition]
        );
        assert_eq!(
            host_messages("[2025-08-26 12:57:42] [00:06.0] xen_pt_realize: Real physical device 03:00.0 registered successfully\n"),
            [HostMessage::XenPtRegistered]
        );
        assert!(host_messages("the device registered successfully\n").is_empty());
        // A report's heading quoting a title is not the log.
        assert!(
            host_messages("# SOURCE: issue \"bhyve: pci_passthru: map_pptdev_mmio failed\"\n")
                .is_empty()
        );
        // A guest's PCI lines are none of these.
        assert!(host_messages(
            "pci 0000:01:00.0: BAR 1: no space for [mem size 0x400000000 64bit pref]\n"
        )
        .is_empty());
    }
}
