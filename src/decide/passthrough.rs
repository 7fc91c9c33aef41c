//! What the host side's messages about setting up a passed-through device
//! mean: its VFIO group and container, the host's vfio-pci, QEMU's checks
//! and its use of the device's BARs, KubeVirt's device count, Xen's
//! assignment and interrupts. None is a matter of BAR space in the guest;
//! each sentence says what it is.

use crate::parse::hypervisor::{HostMessage, VfioStage};

/// The sentence for one of these messages (`host::sentence`).
pub(crate) fn sentence(m: &HostMessage) -> String {
    match m {
        HostMessage::VfioGroup { .. } => vfio_group(m),
        HostMessage::VfioPciProbe { .. }
        | HostMessage::VfioMsixLayout
        | HostMessage::VfioRegionInfo { .. }
        | HostMessage::VfioConfigRead { .. }
        | HostMessage::HostIommuOff { .. }
        | HostMessage::KubevirtHostDevices => refusal(m),
        HostMessage::XenSharedRmrr
        | HostMessage::XenIgdPassthru
        | HostMessage::XenPtInterrupts { .. }
        | HostMessage::XenPtRegistered => xen(m),
        _ => access(m),
    }
}

/// Xen's refusals to assign a device, and its device model on a
/// passed-through device's interrupts.
fn xen(m: &HostMessage) -> String {
    match m {
        HostMessage::XenSharedRmrr => {
            "Xen refuses to assign the device: it shares a reserved memory region (RMRR) with another device, which VT-d passthrough disallows (the guest's `rdm_policy=relaxed` accepts the risk): whether the device can be passed through, not BAR space".into()
        }
        HostMessage::XenIgdPassthru => {
            "Xen's device model refuses the host's integrated Intel graphics without `igd-passthru` (xl's `gfx_passthru=1`): a passthrough setting, not BAR space".into()
        }
        HostMessage::XenPtInterrupts { failed: true } => {
            "Xen's device model (QEMU's xen_pt, or qemu-traditional) could not map or bind a passed-through device's interrupts (INTx, MSI, MSI-X); the error number on its line says why: interrupt delivery, not BAR space".into()
        }
        HostMessage::XenPtRegistered => {
            "Xen's device model took a passed-through device for the guest, each of its regions registered at the host's address: the passthrough's trace, no failure, not BAR space".into()
        }
        HostMessage::XenPtInterrupts { failed: false } => {
            "Xen's device model (QEMU's xen_pt, or qemu-traditional) logged setting up (and tearing down) a passed-through device's interrupts (INTx, MSI, MSI-X), with no failure: interrupt delivery, not BAR space".into()
        }
        _ => String::new(),
    }
}

/// QEMU could not open a device through VFIO (`HostMessage::VfioGroup`).
fn vfio_group(m: &HostMessage) -> String {
    let HostMessage::VfioGroup {
        group,
        errno,
        stage,
    } = *m
    else {
        return String::new();
    };
    let err = errno
        .map(|e| format!(" ({})", errno_name(e)))
        .unwrap_or_default();
    let after = "and could not add the device (at start: the VM did not start)";
    match (stage, group) {
        (VfioStage::Group, g) => {
            let (through, every) = match g {
                Some(g) => (
                    format!("its VFIO group {g}"),
                    format!("every device of IOMMU group {g}"),
                ),
                None => ("VFIO".to_string(), "the device and its IOMMU group".to_string()),
            };
            let access = if matches!(errno, Some(1 | 13)) {
                "; with EACCES or EPERM, QEMU's right to open the group's node (libvirt's cgroup device list, SELinux or AppArmor, a QEMU run without root)"
            } else {
                ""
            };
            format!(
                "QEMU could not open a passed-through device through {through}{err} {after}: the device's binding on the host ({every} bound to vfio-pci and not in use by another VM; the vfio-pci module loaded; a vGPU's mediated device created and free){access}, not BAR space"
            )
        }
        (VfioStage::Container, g) => format!(
            "QEMU could not attach {} to an IOMMU container{err} {after}: the host IOMMU would not take the group (the IOMMU off in the firmware or the kernel, a device that needs a reserved region (RMRR) or a direct mapping, no interrupt remapping; the host kernel's DMAR, AMD-Vi or vfio lines say which), not BAR space",
            g.map(|g| format!("VFIO group {g}")).unwrap_or_else(|| "a VFIO group".into())
        ),
        (VfioStage::Cdev, _) => format!(
            "QEMU (with iommufd) found no VFIO device node for a passed-through device{err} {after}: the device not bound to vfio-pci, or a host kernel without VFIO's device nodes (CONFIG_VFIO_DEVICE_CDEV), not BAR space"
        ),
    }
}

/// A passed-through device the host side would not set up for a reason
/// other than BAR space: the host's vfio-pci, QEMU's MSI-X check,
/// KubeVirt's device count.
fn refusal(m: &HostMessage) -> String {
    match m {
        HostMessage::VfioPciProbe { errno, vmd } => format!(
            "the host's vfio-pci could not take a device to pass through (-{errno}, {}){}: the host's IOMMU and the device's binding, not BAR space",
            errno_name(*errno),
            match (*errno, *vmd) {
                (22, true) => ": the device sits in a PCI domain of Intel's VMD (10000 and up), whose devices reach the IOMMU only through the VMD itself, so VFIO finds no IOMMU group of their own; turn VMD off for that slot in the firmware setup (the NVMe or PCIe RAID setting) to pass it through",
                (22, false) => ": VFIO found no IOMMU group for it (the IOMMU off in the firmware or on the kernel's command line, `intel_iommu=on` or `amd_iommu=on`), or it is no endpoint",
                _ => "",
            }
        ),
        HostMessage::VfioMsixLayout => {
            "QEMU refused a passed-through device: the MSI-X table or pending-bit array its capability places do not fit its BARs (or overlap, or are misaligned), as QEMU's MSI-X setup checks: most often the device's own layout (its firmware, or a device that does not pass through cleanly), which vfio-pci's `x-msix-relocation` option may move to a BAR of its own; a BAR without an address on the host (vfio then reports it empty) fails the same check, so the host's log of the device's BARs says which".into()
        }
        HostMessage::VfioRegionInfo { region } => format!(
            "QEMU could not read {} of a passed-through device from the host's VFIO driver and did not add the device: the host's side (for an NVIDIA vGPU, the mdev's host driver: its vGPU type and licence, and on Proxmox VE before qemu-server 7.2-4 the VM's UUID, `args: -uuid <the mdev's UUID>`), not BAR space",
            region.map(|r| format!("region {r}'s description")).unwrap_or_else(|| "a region's description".into())
        ),
        HostMessage::VfioConfigRead { errno } => format!(
            "QEMU could not read a passed-through device's config space from the host's VFIO driver{} and did not add the device: the host's side (for an NVIDIA vGPU, the mdev's host driver, its vGPU type and licence; for a whole GPU, a device that does not answer: reset it, or power the host off and on), not BAR space",
            errno.map(|e| format!(" ({})", errno_name(e))).unwrap_or_default()
        ),
        HostMessage::HostIommuOff { proxmox } => format!(
            "{} no IOMMU on the host for passthrough and did not start the VM: turn on VT-d or AMD-Vi (AMD's \"IOMMU\") in the host's firmware setup, boot the host with `intel_iommu=on` on Intel (AMD's is on by default) and load vfio-pci; not BAR space",
            if *proxmox { "Proxmox VE found" } else { "libvirt found" }
        ),
        HostMessage::KubevirtHostDevices => {
            "KubeVirt's virt-launcher could not build the VM's host devices: the GPUs or host devices the VMI asks for and the devices the pod was given differ in number (with a device plugin, its PCI_RESOURCE_<NAME> or MDEV_PCI_RESOURCE_<NAME> variable unset: the resource name in the VMI, in KubeVirt's permittedHostDevices and in the device plugin must be the same, and the plugin must have a free device on the node; with DRA, the VMI's resource claim and what it allocated); the VM does not start: the cluster's configuration, not BAR space".into()
        }
        _ => String::new(),
    }
}

/// The host's framebuffer on a passed-through GPU, as its messages show
/// it: the host kernel's, and QEMU's on the BAR it then cannot use.
const HOST_FRAMEBUFFER: &str = "another driver on the host holds part of the BAR, most often the host's boot framebuffer on the GPU the firmware drew on (efifb, simplefb or simpledrm, vesafb, BOOTFB: `cat /proc/iomem` names it; boot the host from another GPU, or add `initcall_blacklist=sysfb_init` (older kernels `video=efifb:off`) to the host's command line)";

/// A passed-through device's BAR the host side could not use as it
/// wanted; the BAR keeps its guest address.
fn access(m: &HostMessage) -> String {
    match m {
        HostMessage::VfioCantReserve { bar } => format!(
            "the host's vfio-pci could not reserve BAR {bar} of the device it holds for a VM: {HOST_FRAMEBUFFER}; QEMU then cannot map the BAR into the guest (\"Failed to mmap ... Performance may be slow\") or its accesses fail (\"vfio_region_write ... Device or resource busy\"): the host's drivers, not BAR space"
        ),
        HostMessage::VfioMmapFailed { bar } => format!(
            "QEMU could not map {} of a passed-through device into the guest directly and traps each access instead (slow): the BAR keeps its guest address; the host's vfio-pci could not reserve it where {HOST_FRAMEBUFFER}, or the BAR is smaller than a page: not BAR space",
            bar.map(|b| format!("BAR {b}")).unwrap_or_else(|| "a BAR".into())
        ),
        HostMessage::VfioRegionAccess { errno } => format!(
            "QEMU's access to a passed-through device's region failed{}{}: not BAR space",
            errno.map(|e| format!(" ({})", errno_name(e))).unwrap_or_default(),
            if *errno == Some(16) {
                format!(": the host's vfio-pci could not reserve the BAR, where {HOST_FRAMEBUFFER}")
            } else {
                ": the device on the host (its reset, its power state, its driver)".into()
            }
        ),
        HostMessage::VfioResetDepends => {
            "QEMU could not reset a passed-through device: a bus reset takes every device of the groups on its bus, and one of them is not the VM's (pass every function of the GPU, its audio function too, or none); the device may come up in the state the last user left it: not BAR space".into()
        }
        _ => String::new(),
    }
}

/// strerror's name for the errors these messages carry.
pub(crate) fn errno_name(e: u32) -> &'static str {
    match e {
        1 => "EPERM",
        2 => "ENOENT",
        5 => "EIO",
        6 => "ENXIO",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        19 => "ENODEV",
        22 => "EINVAL",
        28 => "ENOSPC",
        _ => "an error",
    }
}
