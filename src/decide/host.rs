//! What a hypervisor's, VMM's or host kernel's message
//! (`parse::hypervisor`) means for the devices' BARs: a failure that
//! keeps the VM or the device from having them (and which space fell
//! short), a note on something else (guest memory pinned for DMA, a BAR
//! mapped for peer-to-peer), or a trace that says neither.
//!
//! The line between them is what the message's source does next. QEMU
//! treats a failed DMA mapping of a RAM-device region (a BAR) as a warning
//! and goes on (hw/vfio/listener.c `vfio_listener_region_add()`: "Allow
//! unexpected mappings not to be fatal for RAM devices"), so such a line
//! says the BAR was placed at the guest address it names; a failed
//! mapping of guest memory stops the VM, for memory, not BARs. VMware,
//! Hyper-V and QEMU's phys-bits check refuse to start the VM over its MMIO
//! space; Cloud Hypervisor (before its PR #7030) and bhyve refuse the
//! device when its BAR cannot be mapped.

use crate::decide::passthrough::{self, errno_name};
use crate::model::size::human;
use crate::parse::hypervisor::HostMessage;

/// Which space a host-side failure is short of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortfall {
    /// The VM's MMIO space for its devices is smaller than their BARs.
    Window,
    /// The space ends past what the (host's or vCPU's) CPU addresses.
    AddressLimit,
    /// The VMM could not map a BAR and refused the device.
    Refused,
}

/// What a message says of the BARs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weight {
    Failure(Shortfall),
    /// Something else than BAR space, said in the summary.
    Note,
    /// BARs being moved, without whether the guest got them all.
    Trace,
}

const PAGE: u64 = 4096;
const GIB: u64 = 1 << 30;

pub(crate) fn weight(m: &HostMessage) -> Weight {
    match m {
        HostMessage::VmwarePages { .. }
        | HostMessage::OpenvmmMmio { .. }
        | HostMessage::DxgkrnlIospace { .. } => Weight::Failure(Shortfall::Window),
        HostMessage::HypervUpperMmio { .. } => Weight::Failure(Shortfall::AddressLimit),
        // QEMU's check covers the 64-bit PCI hole whether or not a device
        // uses it; it is a BAR matter where a device is passed through.
        HostMessage::QemuPhysBits {
            passthrough: true, ..
        } => Weight::Failure(Shortfall::AddressLimit),
        HostMessage::CloudHypervisorMapRegion { .. } | HostMessage::BhyveMapFailed => {
            Weight::Failure(Shortfall::Refused)
        }
        // EINVAL for a range that ends past 512 GiB (39 bits, the
        // narrowest of the x86 hosts GPUs are passed through on; Atom and
        // Core 2 hosts have 36, and a failure between stays a note): past
        // the host's address width. The VM stops either way; another error
        // is no BAR matter shown.
        HostMessage::KvmMemslot {
            start,
            size,
            errno: Some(22),
        } if start.saturating_add(*size) > 1 << 39 => Weight::Failure(Shortfall::AddressLimit),
        // A power-on failure whose cause the text does not show: with
        // passthrough GPUs most often their MMIO total, but the line alone
        // cannot say (corpus 215: a virtual NIC's slot).
        HostMessage::BhyveModifyMmio { .. }
        | HostMessage::CloudHypervisorMoveBar { .. }
        | HostMessage::VmwarePowerOn { explained: false } => Weight::Trace,
        HostMessage::QemuPhysBits { .. }
        | HostMessage::VfioDmaMap { .. }
        | HostMessage::VfioGroup { .. }
        | HostMessage::DmaMappingsLimit { .. }
        | HostMessage::Memlock { .. }
        | HostMessage::IommuWidth { .. }
        | HostMessage::KvmMemslot { .. }
        | HostMessage::XenPcifrontClaim
        | HostMessage::XenSharedRmrr
        | HostMessage::XenIgdPassthru
        | HostMessage::HypervNotAssignable
        | HostMessage::XenPtInterrupts { .. }
        | HostMessage::XenPtRegistered
        | HostMessage::HypervGpuPartition
        | HostMessage::VmwarePowerOn { explained: true }
        | HostMessage::VmwareSlot
        | HostMessage::EsxiHotplugRemoved
        | HostMessage::OvmfMmioWindow { .. }
        | HostMessage::SeabiosWindow64 { .. }
        | HostMessage::DeviceReset { .. }
        | HostMessage::NvidiaNotProbed { .. }
        | HostMessage::NvidiaXid { .. }
        | HostMessage::VfioRomInvalid { .. }
        | HostMessage::MapsMultipleBars
        | HostMessage::IommuRmrr
        | HostMessage::VfioPciProbe { .. }
        | HostMessage::VfioMsixLayout
        | HostMessage::KubevirtHostDevices
        | HostMessage::VfioMmapFailed { .. }
        | HostMessage::VfioRegionAccess { .. }
        | HostMessage::VfioResetDepends
        | HostMessage::VfioCantReserve { .. }
        | HostMessage::VmwareHostModule
        | HostMessage::HypervFeatureUnavailable
        | HostMessage::IommuDirectMapping
        | HostMessage::VfioRegionInfo { .. }
        | HostMessage::VfioConfigRead { .. }
        | HostMessage::HostIommuOff { .. } => Weight::Note,
    }
}

/// The first message that is a failure, and its place in the list.
pub(crate) fn first_failure(msgs: &[HostMessage]) -> Option<(usize, Shortfall)> {
    msgs.iter().enumerate().find_map(|(i, m)| match weight(m) {
        Weight::Failure(s) => Some((i, s)),
        _ => None,
    })
}

/// The numbers of a failure, as the diagnosis carries them: the space
/// needed and offered, or where it ends and what the CPU reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Numbers {
    pub needed: Option<u64>,
    pub window: Option<u64>,
    pub needed_end: Option<u64>,
    pub limit: Option<u64>,
}

pub(crate) fn numbers(m: &HostMessage) -> Numbers {
    match *m {
        HostMessage::VmwarePages { needed, limit } => Numbers {
            needed: needed.checked_mul(PAGE),
            window: limit.checked_mul(PAGE),
            ..Numbers::default()
        },
        HostMessage::OpenvmmMmio { need, have, .. } => Numbers {
            needed: Some(need),
            window: Some(have),
            ..Numbers::default()
        },
        HostMessage::HypervUpperMmio { top, limit } => Numbers {
            needed_end: top,
            limit,
            ..Numbers::default()
        },
        HostMessage::QemuPhysBits { limit, need, .. } => Numbers {
            needed_end: need.checked_add(1),
            limit: limit.checked_add(1),
            ..Numbers::default()
        },
        HostMessage::KvmMemslot { start, size, .. } => Numbers {
            needed_end: start.checked_add(size),
            ..Numbers::default()
        },
        _ => Numbers::default(),
    }
}

/// What the message says, in a sentence with its numbers.
pub(crate) fn sentence(m: &HostMessage) -> String {
    match m {
        HostMessage::VmwarePages { needed, limit } => {
            let below_4g = limit.saturating_mul(PAGE) <= 4 * GIB;
            format!(
                "VMware did not power the VM on: its passthrough devices need {needed} pages of 4 KiB ({}) of MMIO space and the VM offers {limit} ({}){}",
                human(needed.saturating_mul(PAGE)),
                human(limit.saturating_mul(PAGE)),
                if below_4g {
                    ", the space below 4 GiB alone: the VM has no 64-bit MMIO space"
                } else {
                    ""
                }
            )
        }
        HostMessage::VmwarePowerOn { explained: false } => {
            "VMware did not power the VM on (module DevicePowerOn), and the line does not say why: vmware.log says it just before. With passthrough GPUs it is most often \"PCIPassthru: total number of pages needed (N) exceeds limit (M)\", their BARs' total past the VM's MMIO space".into()
        }
        HostMessage::VmwarePowerOn { explained: true } => {
            "VMware did not power the VM on (module DevicePowerOn), for the reason its other lines here give".into()
        }
        HostMessage::VmwareSlot => {
            "VMware could not reserve a PCI Express slot for a virtual device and did not power the VM on: the VM's slots, not BAR space".into()
        }
        HostMessage::EsxiHotplugRemoved => {
            "ESXi's own PCIe hot-plug driver saw a device leave its slot (vmkernel.log: \"Adapter removed\"); for a device passed through to a VM, Broadcom's knowledge base names such events at power-on as why the VM does not start on HPE servers, and has ESXi's PCIe device hot-plug turned off: the slot's hot-plug, not BAR space".into()
        }
        HostMessage::HypervUpperMmio { top, limit } => match (top, limit) {
            (Some(t), Some(l)) => format!(
                "Hyper-V did not start the VM: its high MMIO gap ends at {t:#x} ({}), above the {} ({l:#x}) the host's CPU addresses; the gap must end below that",
                human(*t),
                human(*l)
            ),
            _ => "Hyper-V did not start the VM: its high MMIO gap lies above the physical address range the host's CPU supports".into(),
        },
        HostMessage::QemuPhysBits {
            limit,
            need,
            bits,
            passthrough,
        } => format!(
            "QEMU did not start the VM: the guest's highest address, {need:#x} (RAM, the memory hot-plug area and the 64-bit PCI hole above them), is past the {} the vCPU's {bits} physical address bits reach{}",
            human(limit.saturating_add(1)),
            if *passthrough {
                "; a device is passed through, and its BARs go in that hole"
            } else {
                "; no device is passed through in the text, so no BAR is at stake: less hot-plug memory, a smaller hole or more vCPU address bits start it"
            }
        ),
        HostMessage::VfioDmaMap {
            region,
            iova,
            size,
            errno,
            bar,
        } => dma_sentence(region.as_deref(), *iova, *size, *errno, *bar),
        HostMessage::DmaMappingsLimit { max } => format!(
            "QEMU warns that the VM may run out of the host's VFIO DMA mappings (at most {}, vfio_iommu_type1's dma_entry_limit): guest memory mapped in small pieces, not BAR space",
            max.map_or("the host's limit".to_string(), |m| m.to_string())
        ),
        HostMessage::Memlock { limit } => format!(
            "the host kernel refused to pin the VM's memory for DMA past its locked-memory limit{}: the VM process's memlock limit (RLIMIT_MEMLOCK) is the matter, not BAR space",
            limit.map(|l| format!(" ({l} bytes)")).unwrap_or_default()
        ),
        HostMessage::DeviceReset { stuck_d3 } => format!(
            "{}: a reset or power-state problem of the device on the host (its reset support, vfio-pci's idle D3), not BAR space",
            if *stuck_d3 {
                "QEMU could not bring the device out of a low-power state (stuck in D3) when it reset it"
            } else {
                "the device did not come back from a reset on the host (`not ready ... giving up`)"
            }
        ),
        HostMessage::IommuWidth { width, address } => format!(
            "the host IOMMU is {width} bits wide and cannot map DMA address {address:#x}: a DMA address above its width, not a BAR's placement"
        ),
        HostMessage::KvmMemslot { start, size, errno } => format!(
            "KVM refused the guest range of {} at {start:#x}{} that QEMU registered (a passed-through BAR is one, where the guest's firmware put it), and QEMU stopped the VM{}",
            human(*size),
            errno.map(|e| format!(" ({})", errno_name(e))).unwrap_or_default(),
            if weight(m) == Weight::Failure(Shortfall::AddressLimit) {
                ": x86 KVM refuses a range past the host CPU's physical address width"
            } else {
                ""
            }
        ),
        HostMessage::CloudHypervisorMapRegion { errno } => format!(
            "Cloud Hypervisor could not map the device's VFIO region (a BAR, which it maps into the host IOMMU for peer-to-peer DMA{}) and refused the device: the guest never gets it",
            errno.map(|e| format!("; {}", errno_name(e))).unwrap_or_default()
        ),
        HostMessage::OpenvmmMmio { low, need, have } => format!(
            "OpenVMM's {} MMIO range for the VM's devices holds {have:#x} bytes ({}) and their BARs need {need:#x} ({}): the VM does not start",
            if *low { "low (below 4 GiB)" } else { "high" },
            human(*have),
            human(*need)
        ),
        HostMessage::DxgkrnlIospace { errno } => format!(
            "Hyper-V's GPU paravirtualization driver (dxgkrnl) found no MMIO space for the virtual GPU in the VM's MMIO gaps{}: the gaps are too small for it",
            errno.map(|e| format!(" (-{e}, {})", errno_name(e))).unwrap_or_default()
        ),
        HostMessage::BhyveMapFailed => {
            "bhyve could not map a passed-through device's BAR into the guest (map_pptdev_mmio failed) and the VM does not run with it".into()
        }
        HostMessage::BhyveModifyMmio { mapped } => format!(
            "bhyve's trace shows a passed-through BAR moved to its guest address, {} last; it does not say whether every BAR of the device was mapped",
            if *mapped { "mapped" } else { "unmapped" }
        ),
        HostMessage::XenPcifrontClaim => {
            "Xen's pcifront could not claim a BAR in this PV guest and took the device offline: the host's BAR addresses overlap the guest's own memory map (pcifront suggests e820_host=1 in the guest's configuration)".into()
        }
        HostMessage::CloudHypervisorMoveBar { from, to, len } => format!(
            "the guest wrote a new address for a BAR of {} ({from:#x} to {to:#x}) and Cloud Hypervisor's allocator could not give it that range (outside the VMM's MMIO ranges, or taken), so the VMM still serves the BAR at its old address while the guest uses the new one; which device it is, the line does not say",
            human(*len)
        ),
        m @ (HostMessage::VmwareHostModule
        | HostMessage::HypervFeatureUnavailable
        | HostMessage::HypervNotAssignable
        | HostMessage::HypervGpuPartition) => platform_sentence(m),
        HostMessage::NvidiaNotProbed { .. }
        | HostMessage::NvidiaXid { .. }
        | HostMessage::VfioRomInvalid { .. }
        | HostMessage::MapsMultipleBars
        | HostMessage::IommuRmrr
        | HostMessage::IommuDirectMapping => driver_sentence(m),
        HostMessage::SeabiosWindow64 { start, end } => format!(
            "SeaBIOS placed its 64-bit MMIO window at {start:#x}-{end:#x} ({}) (its debug log), each BAR it maps there listed after it: the firmware's side, no device's failure; whether the guest's CPU reaches that far (its physical address bits) and the guest kernel keeps the BARs, the guest's own log says",
            human(end.saturating_sub(*start))
        ),
        m @ (HostMessage::VfioGroup { .. }
        | HostMessage::VfioPciProbe { .. }
        | HostMessage::VfioMsixLayout
        | HostMessage::KubevirtHostDevices
        | HostMessage::VfioMmapFailed { .. }
        | HostMessage::VfioRegionAccess { .. }
        | HostMessage::VfioResetDepends
        | HostMessage::VfioCantReserve { .. }
        | HostMessage::VfioRegionInfo { .. }
        | HostMessage::VfioConfigRead { .. }
        | HostMessage::HostIommuOff { .. }
        | HostMessage::XenSharedRmrr
        | HostMessage::XenIgdPassthru
        | HostMessage::XenPtInterrupts { .. }
        | HostMessage::XenPtRegistered) => passthrough::sentence(m),
        HostMessage::OvmfMmioWindow { bytes } => format!(
            "OVMF made a {} 64-bit MMIO window (its debug log): the firmware's side, no device's failure",
            human(*bytes)
        ),
    }
}

/// `sentence` for VMware's and Hyper-V's notes on the host's own set-up.
fn platform_sentence(m: &HostMessage) -> String {
    match m {
        HostMessage::HypervGpuPartition => {
            "Hyper-V's listing of a GPU it partitions (GPU-P): the VM gets a share of it through a virtual render function with no BARs, reached over VMBus, so no BAR of the GPU's is placed in the VM; the listing does not show whether the VM's MMIO gaps (Set-VM -LowMemoryMappedIoSpace, -HighMemoryMappedIoSpace) hold what it needs: where they do not, the VM's start error or dxgkrnl's \"Unable to allocate mmio memory\" says so".into()
        }
        HostMessage::VmwareHostModule => {
            "VMware Workstation could not open its host module's device (/dev/vmci, /dev/vmmon): VMware's kernel modules are not loaded for the host's running kernel (build them again, `sudo vmware-modconfig --console --install-all`, and sign them where Secure Boot is on), so the VM does not power on: the host's VMware installation, not BAR space".into()
        }
        HostMessage::HypervFeatureUnavailable => {
            "Hyper-V did not power on the VM's virtual PCI Express port: \"A hypervisor feature is not available to the user\" (0xC035001E), a feature device assignment needs is not offered on this host (DDA is a feature of Windows Server and Azure Local, not of the client editions; the host's IOMMU, VT-d or AMD-Vi, must be on in its firmware): where the host can assign the device, not BAR space".into()
        }
        HostMessage::HypervNotAssignable => {
            "Hyper-V's DDA survey lists devices it cannot assign (the firmware keeps control of them, or they are no PCI Express endpoint): whether a device can be passed through, not BAR space; for an assignable one the survey prints the MMIO space it needs".into()
        }
        _ => String::new(),
    }
}

/// `sentence` for the host kernel's and the drivers' messages
/// (`parse::hypervisor::host_kernel`), none of them about BAR space.
fn driver_sentence(m: &HostMessage) -> String {
    match m {
        HostMessage::NvidiaNotProbed { holder: Some(h) } if h == "vfio-pci" => {
            "NVIDIA's driver did not take a GPU that vfio-pci holds, as on a host that passes it through (the guest's driver takes it there; on a host that should use it, unbind it from vfio-pci): which driver holds the GPU, not BAR space".into()
        }
        HostMessage::NvidiaNotProbed { holder } => format!(
            "NVIDIA's driver did not take a GPU another driver holds ({}): unload or blacklist that driver, or unbind it; which driver holds the GPU, not BAR space",
            holder.as_deref().unwrap_or("nouveau, a framebuffer driver or vfio-pci: the log does not say")
        ),
        HostMessage::NvidiaXid { codes } => format!(
            "NVIDIA's driver reported Xid {}: faults of the GPU or its driver at run time, after the driver had the GPU's BARs mapped (NVIDIA's Xid catalogue names each number), not BAR space",
            codes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
        HostMessage::VfioRomInvalid { got } => format!(
            "the host could not read the passed-through device's option ROM (its header reads {got:#06x}, not 0xaa55: 0xffff most often means the ROM did not answer at all, not decoded or already shadowed by the host's own boot), so the guest's firmware gets no usable ROM from it: QEMU's `romfile=` with a dump of the card's VBIOS, or `rombar=0`; the ROM, not BAR space"
        ),
        HostMessage::MapsMultipleBars => {
            "the kernel warned that a driver mapped a range spanning more than one resource of its map (`resource sanity check ... mapping multiple BARs`, most often the legacy VGA range at 0xc0000): a warning about that mapping, not a BAR without space".into()
        }
        HostMessage::IommuRmrr => {
            "the host's Intel IOMMU would not hand the device to a VM: the firmware reserves memory for it (an RMRR, common on HPE and older Dell servers), so VFIO cannot take it (QEMU: \"failed to set iommu for container\"); a firmware setting or update that drops the reservation, or another slot, not BAR space".into()
        }
        HostMessage::IommuDirectMapping => {
            "the host's IOMMU would not take the device out of its 1:1 mapping: its firmware's tables ask for one (Intel's RMRR, AMD's IVMD, ARM's RMR), which a VM's domain cannot keep, so VFIO cannot take it for a VM (QEMU: \"failed to setup container\"; newer kernels print the same line when such a device is reset); a firmware update or setting (on some AMD boards \"Pre-boot DMA Protection\" off with the IOMMU enabled), or another slot, not BAR space".into()
        }
        _ => String::new(),
    }
}

/// A VFIO DMA mapping's failure, by what it mapped.
fn dma_sentence(
    region: Option<&str>,
    iova: Option<u64>,
    size: Option<u64>,
    errno: Option<u32>,
    bar: bool,
) -> String {
    let err = errno
        .map(|e| format!(" ({})", errno_name(e)))
        .unwrap_or_default();
    if let Some(r) = region {
        return format!(
            "QEMU could not map the VM's memory region {r} for a passed-through device's DMA{err} and did not start the VM: guest memory, not a BAR (the host's locked-memory limit, a vIOMMU that locks guest memory once per device, or the host's free memory)"
        );
    }
    if bar {
        return format!(
            "QEMU's iommufd backend could not map a device's BAR into the host IOMMU for peer-to-peer DMA{err}, which it does not do for BARs; QEMU goes on: the BAR has its guest address, only peer-to-peer DMA to it is missing"
        );
    }
    // EINVAL past 2^39 (the narrowest width of Intel's IOMMUs): the
    // address is most often past what the host IOMMU translates, the case
    // of QEMU's patch "Use iommu phys_bits with VFIO assigned devices"
    // (qemu-devel, 2024; corpus 314).
    let beyond = match (iova, errno) {
        (Some(a), Some(22)) if a >= 1 << 39 => "; EINVAL this high most often means the host IOMMU does not translate that far, and a vCPU with no more physical address bits than the IOMMU's (`phys-bits=`, `host-phys-bits-limit=`) has its firmware place the BARs lower",
        _ => "",
    };
    match (iova, size, errno) {
        (Some(a), Some(s), _) => format!(
            "QEMU could not map {} at guest address {a:#x} into the host IOMMU{err}: for a BAR QEMU warns and goes on (the BAR is placed there, only peer-to-peer DMA to it is missing); for guest memory the VM stops, for memory, not BAR space{beyond}",
            human(s)
        ),
        (_, _, Some(12)) => format!(
            "QEMU could not map the VM's memory for a passed-through device's DMA{err}: pinning guest memory hit the locked-memory limit or the host's free memory, not BAR space"
        ),
        (_, _, Some(28)) => format!(
            "QEMU ran out of the host's VFIO DMA mappings{err} (vfio_iommu_type1's dma_entry_limit, 65535 by default): guest memory mapped in small pieces, not BAR space"
        ),
        _ => format!(
            "a VFIO DMA mapping failed{err}: a host-side mapping for the device's DMA, not the placement of its BARs"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::hypervisor::VfioStage;

    #[test]
    fn failures_notes_and_traces() {
        // VMware's power-on failure: a trace alone, a note where its cause
        // is in the text.
        let power_on = |explained| HostMessage::VmwarePowerOn { explained };
        assert_eq!(weight(&power_on(false)), Weight::Trace);
        assert_eq!(weight(&power_on(true)), Weight::Note);
        assert_eq!(weight(&HostMessage::VmwareSlot), Weight::Note);
        assert_eq!(weight(&HostMessage::EsxiHotplugRemoved), Weight::Note);
        assert!(sentence(&power_on(false)).contains("does not say why"));
        let vmware = HostMessage::VmwarePages {
            needed: 4206594,
            limit: 917504,
        };
        assert_eq!(weight(&vmware), Weight::Failure(Shortfall::Window));
        let s = sentence(&vmware);
        assert!(
            s.contains("16.0 GiB") && s.contains("3.5 GiB") && s.contains("no 64-bit MMIO"),
            "{s}"
        );
        assert_eq!(numbers(&vmware).needed, Some(4206594 * 4096));
        let phys = |passthrough| HostMessage::QemuPhysBits {
            limit: 0xf_ffff_ffff,
            need: 0x10_7fff_ffff,
            bits: 36,
            passthrough,
        };
        assert_eq!(
            weight(&phys(true)),
            Weight::Failure(Shortfall::AddressLimit)
        );
        assert_eq!(weight(&phys(false)), Weight::Note);
        assert_eq!(numbers(&phys(true)).limit, Some(1 << 36));
        for note in [
            HostMessage::VfioDmaMap {
                region: Some("ram-node0".into()),
                iova: None,
                size: None,
                errno: Some(12),
                bar: false,
            },
            HostMessage::Memlock { limit: Some(65536) },
            HostMessage::IommuWidth {
                width: 39,
                address: 0x88_0000_1000,
            },
            HostMessage::XenPtInterrupts { failed: true },
            HostMessage::XenPtInterrupts { failed: false },
            HostMessage::VfioDmaMap {
                region: None,
                iova: Some(0x3800_0000_0000),
                size: Some(0x100_0000),
                errno: Some(22),
                bar: false,
            },
            HostMessage::VfioGroup {
                group: Some(64),
                errno: Some(5),
                stage: VfioStage::Group,
            },
            HostMessage::VfioGroup {
                group: None,
                errno: None,
                stage: VfioStage::Cdev,
            },
            HostMessage::VfioGroup {
                group: Some(37),
                errno: Some(1),
                stage: VfioStage::Container,
            },
            HostMessage::HypervGpuPartition,
            HostMessage::NvidiaNotProbed {
                holder: Some("vfio-pci".into()),
            },
            HostMessage::NvidiaNotProbed { holder: None },
            HostMessage::NvidiaXid {
                codes: vec![62, 154],
            },
            HostMessage::VfioRomInvalid { got: 0xffff },
            HostMessage::MapsMultipleBars,
            HostMessage::IommuRmrr,
            HostMessage::IommuDirectMapping,
            HostMessage::VmwareHostModule,
            HostMessage::HypervFeatureUnavailable,
            HostMessage::VfioRegionInfo { region: Some(0) },
            HostMessage::VfioConfigRead { errno: Some(14) },
            HostMessage::HostIommuOff { proxmox: false },
            HostMessage::HostIommuOff { proxmox: true },
            HostMessage::XenPtRegistered,
        ] {
            assert_eq!(weight(&note), Weight::Note, "{note:?}");
            assert!(sentence(&note).contains("not"), "{}", sentence(&note));
        }
        assert_eq!(
            weight(&HostMessage::BhyveModifyMmio { mapped: true }),
            Weight::Trace
        );
        // EINVAL past 2^39 names the host IOMMU's reach; lower, it does not.
        let dma = |iova| HostMessage::VfioDmaMap {
            region: None,
            iova: Some(iova),
            size: Some(0x100_0000),
            errno: Some(22),
            bar: false,
        };
        assert!(sentence(&dma(0x3800_0000_0000)).contains("phys-bits="));
        assert!(!sentence(&dma(0x40_0000_0000)).contains("phys-bits="));
        let msgs = [HostMessage::Memlock { limit: None }, vmware.clone()];
        assert_eq!(first_failure(&msgs), Some((1, Shortfall::Window)));
    }
}
