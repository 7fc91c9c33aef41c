//! The hint vocabulary: every hint id (`HintId`), where a change is made
//! (`Side`), what makes it take effect (`Restart`), the change in settings
//! (`Change`) and the hint itself (`Hint`), which the JSON report carries
//! as it is.
//!
//! The ids are an interface (README.md, the QEMU suite's scenarios, the
//! metrics' labels): each keeps its meaning wherever it is given, and a new
//! fix is a new id.

use crate::decide::diagnosis::DiagnosisKind;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// Every hint id. The BAR check's come first, then peer-to-peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HintId {
    /// 1 GiB pages for the vCPU, so that OVMF uses all its address bits.
    CpuPdpe1gb,
    /// More vCPU physical address bits.
    CpuPhysBits,
    /// OVMF's 64-bit aperture (`X-PciMmio64Mb`).
    OvmfMmio64Aperture,
    /// QEMU's 64-bit PCI hole (`pci-hole64-size`).
    QemuPciHole64Size,
    /// The kernel's own `pci=realloc`, in a guest or on bare metal alike.
    GuestPciRealloc,
    /// The firmware setup's 64-bit decoding (bare metal).
    FirmwareAbove4g,
    /// Smaller or fewer BARs: nothing else reaches past the CPU's limit.
    SmallerBars,
    /// A GPU expected is missing: check the passthrough.
    CheckPassthrough,
    /// A VMware VM on legacy BIOS: EFI firmware.
    VmwareEfi,
    /// VMware's 64-bit MMIO settings.
    Vmware64bitMmio,
    /// Hyper-V's high MMIO space.
    HypervMmio,
    /// The kernel's reservation for a hot-plug bridge (Thunderbolt, a
    /// hot-plug slot): `pci=hpmmioprefsize=`/`hpmemsize=`.
    KernelHotplugReserve,
    /// The VM's port for a hot-plugged device: plug it at boot onto a root
    /// port that reserves room (QEMU `pcie-root-port,pref64-reserve=`,
    /// Kata's root-port settings).
    VmHotplugReserve,
    /// Not a fix: what to collect so that the next report can name one.
    CollectEvidence,
    /// The board's host bridge window (its device tree's `ranges`, or an
    /// ARM server firmware's PCIe settings) is smaller than the BARs.
    PlatformWindowTooSmall,
    /// The VMM exposes a GPU's 64-bit BAR non-prefetchable, which NVIDIA's
    /// driver does not take: the VMM's side, or its update.
    VmmBarPrefetchable,
    /// The kernel lost a BAR when a driver's resize of it failed: a kernel
    /// without that fault (the one before, or a fixed one).
    KernelResizeRollback,
    /// The BAR failed on a rescan or hot-add after boot, where the kernel
    /// sized the bridge windows on its own: boot with the device, or a
    /// kernel whose rescan fits the windows the firmware gave.
    KernelRescanSizing,
    /// The kernel sized a bridge window smaller than the devices below it
    /// need (shrank it, or could not fit it): a kernel without that fault.
    KernelWindowSizing,
    /// A failed BAR fits only across two contiguous windows of one root bus
    /// that the kernel keeps apart: a kernel that joins them (5.16 on).
    KernelRootWindowJoin,
    /// The VMM could not map a passed-through device's BAR (into the host
    /// IOMMU, or into the guest) and refused the device: the VMM's side.
    VmmBarMapping,
    /// The VMM's own MMIO range for the VM's devices is smaller than their
    /// BARs: widen it in the VMM, or pass fewer devices.
    VmmMmioRange,
    /// Every GPU in one GPUDirect clique (QEMU's vfio-pci property).
    P2pGpudirectClique,
    /// KVM's CPUID signature visible to the guest.
    P2pKvmVisible,
    /// NCCL allowed P2P up to the GPUs' path level (`NCCL_P2P_LEVEL`).
    P2pNcclLevel,
    /// NCCL's P2P switched back on.
    P2pNcclEnable,
    /// The GPUs behind one emulated PCIe switch.
    P2pPcieSwitch,
    /// A vIOMMU wide enough for the BARs' addresses.
    P2pViommuAwBits,
    /// The host IOMMU able to map the peers' BARs.
    P2pHostBarMapping,
}

impl HintId {
    /// Every id, in the order above (for the tests that go through them
    /// all).
    #[cfg(test)]
    pub(crate) const ALL: [HintId; 29] = [
        HintId::CpuPdpe1gb,
        HintId::CpuPhysBits,
        HintId::OvmfMmio64Aperture,
        HintId::QemuPciHole64Size,
        HintId::GuestPciRealloc,
        HintId::FirmwareAbove4g,
        HintId::SmallerBars,
        HintId::CheckPassthrough,
        HintId::VmwareEfi,
        HintId::Vmware64bitMmio,
        HintId::HypervMmio,
        HintId::KernelHotplugReserve,
        HintId::VmHotplugReserve,
        HintId::CollectEvidence,
        HintId::PlatformWindowTooSmall,
        HintId::VmmBarPrefetchable,
        HintId::KernelResizeRollback,
        HintId::KernelRescanSizing,
        HintId::KernelWindowSizing,
        HintId::KernelRootWindowJoin,
        HintId::VmmBarMapping,
        HintId::VmmMmioRange,
        HintId::P2pGpudirectClique,
        HintId::P2pKvmVisible,
        HintId::P2pNcclLevel,
        HintId::P2pNcclEnable,
        HintId::P2pPcieSwitch,
        HintId::P2pViommuAwBits,
        HintId::P2pHostBarMapping,
    ];

    /// The id as the reports write it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HintId::CpuPdpe1gb => "cpu-pdpe1gb",
            HintId::CpuPhysBits => "cpu-phys-bits",
            HintId::OvmfMmio64Aperture => "ovmf-mmio64-aperture",
            HintId::QemuPciHole64Size => "qemu-pci-hole64-size",
            HintId::GuestPciRealloc => "guest-pci-realloc",
            HintId::FirmwareAbove4g => "firmware-above-4g",
            HintId::SmallerBars => "smaller-bars",
            HintId::CheckPassthrough => "check-passthrough",
            HintId::VmwareEfi => "vmware-efi",
            HintId::Vmware64bitMmio => "vmware-64bit-mmio",
            HintId::HypervMmio => "hyperv-mmio",
            HintId::KernelHotplugReserve => "kernel-hotplug-reserve",
            HintId::VmHotplugReserve => "vm-hotplug-reserve",
            HintId::CollectEvidence => "collect-evidence",
            HintId::PlatformWindowTooSmall => "platform-window-too-small",
            HintId::VmmBarPrefetchable => "vmm-bar-prefetchable",
            HintId::KernelResizeRollback => "kernel-resize-rollback",
            HintId::KernelRescanSizing => "kernel-rescan-sizing",
            HintId::KernelWindowSizing => "kernel-window-sizing",
            HintId::KernelRootWindowJoin => "kernel-root-window-join",
            HintId::VmmBarMapping => "vmm-bar-mapping",
            HintId::VmmMmioRange => "vmm-mmio-range",
            HintId::P2pGpudirectClique => "p2p-gpudirect-clique",
            HintId::P2pKvmVisible => "p2p-kvm-visible",
            HintId::P2pNcclLevel => "p2p-nccl-level",
            HintId::P2pNcclEnable => "p2p-nccl-enable",
            HintId::P2pPcieSwitch => "p2p-pcie-switch",
            HintId::P2pViommuAwBits => "p2p-viommu-aw-bits",
            HintId::P2pHostBarMapping => "p2p-host-bar-mapping",
        }
    }

    /// What the hint asks for, in a few words: the text report's lead
    /// line.
    pub(crate) fn label(self) -> &'static str {
        match self {
            HintId::CpuPdpe1gb => "give the vCPU 1 GiB pages (pdpe1gb)",
            HintId::CpuPhysBits => "give the vCPU more physical address bits",
            HintId::OvmfMmio64Aperture => "enlarge OVMF's 64-bit aperture (X-PciMmio64Mb)",
            HintId::QemuPciHole64Size => "enlarge QEMU's 64-bit PCI hole",
            HintId::GuestPciRealloc => "boot with pci=realloc",
            HintId::FirmwareAbove4g => {
                "enable Above 4G Decoding (UEFI, not CSM) in the firmware setup"
            }
            HintId::SmallerBars => "make the BARs smaller or fewer (Resizable BAR off)",
            HintId::CheckPassthrough => "check that every GPU is passed to the VM",
            HintId::VmwareEfi => "switch the VMware VM to EFI firmware",
            HintId::Vmware64bitMmio => "set VMware's pciPassthru.use64bitMMIO and its size",
            HintId::HypervMmio => "give the Hyper-V VM more high MMIO space",
            HintId::KernelHotplugReserve => {
                "reserve room for the hot-plug bridge (pci=hpmmioprefsize=)"
            }
            HintId::VmHotplugReserve => "give the GPU a root port that reserves room for its BARs",
            HintId::CollectEvidence => "collect the boot log and lspci of the failing machine",
            HintId::PlatformWindowTooSmall => {
                "enlarge the board's PCIe window (device tree ranges)"
            }
            HintId::VmmBarPrefetchable => {
                "check that the VMM exposes the GPU's 64-bit BARs prefetchable"
            }
            HintId::KernelResizeRollback => {
                "boot a kernel that does not lose the BAR in a failed resize"
            }
            HintId::KernelRescanSizing => "boot with the device rather than rescanning it",
            HintId::KernelWindowSizing => {
                "boot a kernel that sizes the bridge window for its devices"
            }
            HintId::KernelRootWindowJoin => {
                "boot a kernel that joins the root bus's contiguous windows (5.16 or later)"
            }
            HintId::VmmBarMapping => "fix the VMM's mapping of the device's BAR (update it)",
            HintId::VmmMmioRange => "widen the VMM's MMIO range for the devices",
            HintId::P2pGpudirectClique => "put every GPU in one GPUDirect clique",
            HintId::P2pKvmVisible => "let the guest see KVM's CPUID signature",
            HintId::P2pNcclLevel => "let NCCL use P2P up to the GPUs' path (NCCL_P2P_LEVEL)",
            HintId::P2pNcclEnable => "remove the setting that turns NCCL's P2P off",
            HintId::P2pPcieSwitch => "put the GPUs behind one emulated PCIe switch",
            HintId::P2pViommuAwBits => "widen the vIOMMU's address width (aw-bits)",
            HintId::P2pHostBarMapping => "let the host IOMMU map the peers' BARs",
        }
    }

    /// A peer-to-peer hint: no boot decides it, so it predicts none.
    pub(crate) fn is_p2p(self) -> bool {
        self >= HintId::P2pGpudirectClique
    }
}

impl std::fmt::Display for HintId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for HintId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where a change is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Side {
    /// The hypervisor's configuration of the VM.
    Host,
    /// The guest operating system.
    Guest,
    /// The machine's own firmware setup (bare metal).
    Firmware,
}

/// What must happen for a change to take effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Restart {
    /// Stop the VM and start it again: a new QEMU process. A reboot inside
    /// the guest keeps the old one.
    Vm,
    /// Reboot the machine (or guest).
    Reboot,
}

impl Restart {
    /// How a change takes effect, as every hint says it, without its full
    /// stop: a platform's own steps may follow.
    pub(crate) fn sentence(self) -> &'static str {
        match self {
            Restart::Vm => "It takes effect when the VM is stopped and started again",
            Restart::Reboot => "It takes effect at the next boot",
        }
    }

    /// The same, said of the guest where a host may be meant too.
    pub(crate) fn in_guest(self) -> &'static str {
        match self {
            Restart::Vm => self.sentence(),
            Restart::Reboot => "It takes effect at the guest's next boot",
        }
    }

    /// The close of a hint that listed its steps: `Then stop and start the
    /// VM.`
    pub(crate) fn then(self) -> &'static str {
        match self {
            Restart::Vm => "Then stop and start the VM.",
            Restart::Reboot => "Then reboot.",
        }
    }
}

/// The firmware a VM boots with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BootFirmware {
    /// UEFI (OVMF in QEMU, `efi` in VMware).
    Efi,
}

/// A change, machine-readable: what the QEMU suite applies to the next
/// boot, and what `decide::syntax` writes out for each platform. A
/// setting that is the same thing everywhere is said in neutral terms
/// (`phys_bits_min`, `mmio64_bytes_min`); one that is QEMU's own knob in
/// QEMU's (`qemu_globals`, `fw_cfg`, `pcie_root_port_properties`). Empty
/// parts are left out of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Change {
    /// vCPU flags to add.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_flags_add: Vec<&'static str>,
    /// At least this many vCPU physical address bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phys_bits_min: Option<u32>,
    /// QEMU `-global` properties.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    pub qemu_globals: Vec<(String, String)>,
    /// QEMU `-fw_cfg name=...,string=...` entries.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    pub fw_cfg: Vec<(String, String)>,
    /// Parameters to add to the kernel command line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernel_cmdline_add: Vec<String>,
    /// At least this much 64-bit MMIO space for the VM's devices, in bytes
    /// (VMware `pciPassthru.64bitMMIOSizeGB`, Hyper-V
    /// `HighMemoryMappedIoSpace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmio64_bytes_min: Option<u64>,
    /// At most this much 64-bit MMIO space, in bytes: where the VM's gap
    /// must end below what the host's CPU addresses (Hyper-V
    /// `HighMemoryMappedIoSpace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmio64_bytes_max: Option<u64>,
    /// At least this much MMIO space below 4 GiB, in bytes (Hyper-V
    /// `LowMemoryMappedIoSpace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmio32_bytes_min: Option<u64>,
    /// The firmware the VM must boot with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_firmware: Option<BootFirmware>,
    /// The GPU plugged at boot onto a PCIe root port of its own with these
    /// QEMU `pcie-root-port` properties (its reservations).
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "as_map")]
    pub pcie_root_port_properties: Vec<(String, String)>,
    /// `-device vfio-pci` properties for every GPU.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub vfio_pci_properties: BTreeMap<String, String>,
    /// The vCPU shows KVM's signature (QEMU `kvm=on`, no `hidden=1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kvm_signature_visible: Option<bool>,
    /// Settings for NCCL (`/etc/nccl.conf` or the job's environment); an
    /// empty value removes the setting.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nccl_env: BTreeMap<String, String>,
    /// The GPUs behind one emulated PCIe switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcie_switch: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub viommu_aw_bits_min: Option<u32>,
}

fn as_map<S: Serializer>(v: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, v)| (k, v)))
}

impl Change {
    /// How many settings it touches.
    pub(crate) fn count(&self) -> usize {
        self.cpu_flags_add.len()
            + usize::from(self.phys_bits_min.is_some())
            + self.qemu_globals.len()
            + self.fw_cfg.len()
            + self.kernel_cmdline_add.len()
            + usize::from(self.mmio64_bytes_min.is_some())
            + usize::from(self.mmio64_bytes_max.is_some())
            + usize::from(self.mmio32_bytes_min.is_some())
            + usize::from(self.boot_firmware.is_some())
            + self.pcie_root_port_properties.len()
            + self.vfio_pci_properties.len()
            + usize::from(self.kvm_signature_visible.is_some())
            + self.nccl_env.len()
            + usize::from(self.pcie_switch.is_some())
            + usize::from(self.viommu_aw_bits_min.is_some())
    }

    /// The guest's own settings: its kernel command line and NCCL's
    /// environment.
    fn guest_count(&self) -> usize {
        self.kernel_cmdline_add.len() + self.nccl_env.len()
    }

    /// Some of it is made in the guest.
    pub(crate) fn has_guest_part(&self) -> bool {
        self.guest_count() > 0
    }

    /// Some of it is made outside the guest (the VM's configuration).
    pub(crate) fn has_host_part(&self) -> bool {
        self.count() > self.guest_count()
    }

    /// A step of two parts: the guest's settings, written while the guest
    /// still runs, and the host's, which take effect when the VM is
    /// stopped and started; one boot then carries both.
    pub(crate) fn is_two_part(&self) -> bool {
        self.has_guest_part() && self.has_host_part()
    }

    /// The change without the guest's settings: the host part alone.
    pub(crate) fn host_part(&self) -> Change {
        Change {
            kernel_cmdline_add: Vec::new(),
            nccl_env: BTreeMap::new(),
            ..self.clone()
        }
    }

    /// `pci=realloc` is among the guest's kernel parameters.
    pub(crate) fn adds_realloc(&self) -> bool {
        self.kernel_cmdline_add.iter().any(|p| p == "pci=realloc")
    }
}

/// A fix: what to change, where, and what the next boot will show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hint {
    pub id: HintId,
    pub text: String,
    /// Where the change is made: `host`, `guest` or `firmware`.
    pub side: Side,
    /// What must happen for it to take effect: `vm` (stop and start the
    /// VM), `reboot`, or null.
    pub restart: Option<Restart>,
    /// The change in settings; absent keys: no change.
    pub change: Change,
    /// The diagnosis the next boot is predicted to show; `None` where the
    /// model cannot say.
    pub expect: Option<DiagnosisKind>,
    /// Boots after this one until every GPU is placed, following the
    /// hints; `None` where the model cannot say.
    pub boots_to_ok: Option<u32>,
}

impl Hint {
    /// A hint no model predicts.
    pub(crate) fn new(
        id: HintId,
        text: String,
        side: Side,
        restart: Option<Restart>,
        change: Change,
    ) -> Hint {
        Hint {
            id,
            text,
            side,
            restart,
            change,
            expect: None,
            boots_to_ok: None,
        }
    }
}

/// The JSON form. A peer-to-peer hint has no `expect` and `boots_to_ok`:
/// no boot decides it.
impl Serialize for Hint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p2p = self.id.is_p2p();
        let mut st = s.serialize_struct("Hint", if p2p { 5 } else { 7 })?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("text", &self.text)?;
        st.serialize_field("side", &self.side)?;
        st.serialize_field("restart", &self.restart)?;
        st.serialize_field("change", &self.change)?;
        if !p2p {
            st.serialize_field("expect", &self.expect)?;
            st.serialize_field("boots_to_ok", &self.boots_to_ok)?;
        }
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_serialised_as_written() {
        let mut seen = std::collections::BTreeSet::new();
        for id in HintId::ALL {
            let s = id.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(
                s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{s}"
            );
            assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{s}\""));
            assert_eq!(id.to_string(), s);
            assert_eq!(id.is_p2p(), s.starts_with("p2p-"), "{s}");
        }
        // `ALL` names every variant once, in declaration order.
        for (i, id) in HintId::ALL.iter().enumerate() {
            assert_eq!(*id as usize, i, "{id}");
        }
        assert_eq!(HintId::ALL.len(), HintId::P2pHostBarMapping as usize + 1);
    }

    #[test]
    fn a_change_of_two_parts_is_host_settings_with_the_guests() {
        let realloc = || vec!["pci=realloc".to_string()];
        let host = Change {
            phys_bits_min: Some(41),
            ..Change::default()
        };
        let guest = Change {
            kernel_cmdline_add: realloc(),
            ..Change::default()
        };
        let both = Change {
            kernel_cmdline_add: realloc(),
            ..host.clone()
        };
        let parts = |c: &Change| (c.has_host_part(), c.has_guest_part(), c.is_two_part());
        assert_eq!(parts(&host), (true, false, false));
        assert_eq!(parts(&guest), (false, true, false));
        assert_eq!(parts(&both), (true, true, true));
        assert_eq!(parts(&Change::default()), (false, false, false));
        assert_eq!(both.host_part(), host);
        assert!(both.adds_realloc() && guest.adds_realloc() && !host.adds_realloc());
        // A hot-plug reservation carries realloc inside another parameter:
        // not the one `remediate` writes.
        let hp = Change {
            kernel_cmdline_add: vec!["pci=realloc,hpmmioprefsize=32G".into()],
            ..Change::default()
        };
        assert!(!hp.adds_realloc());
    }

    #[test]
    fn every_id_has_its_own_label() {
        let labels: std::collections::BTreeSet<&str> =
            HintId::ALL.iter().map(|id| id.label()).collect();
        assert_eq!(labels.len(), HintId::ALL.len());
    }

    #[test]
    fn a_p2p_hint_has_no_prediction_in_its_json() {
        let h = |id| Hint::new(id, "t".into(), Side::Guest, None, Change::default());
        let keys = |h: &Hint| -> Vec<String> {
            match serde_json::to_value(h).unwrap() {
                serde_json::Value::Object(m) => m.keys().cloned().collect(),
                _ => unreachable!(),
            }
        };
        let bar = keys(&h(HintId::GuestPciRealloc));
        assert!(bar.contains(&"expect".to_string()));
        assert!(bar.contains(&"boots_to_ok".to_string()));
        let p2p = keys(&h(HintId::P2pNcclLevel));
        assert!(!p2p.contains(&"expect".to_string()));
        assert_eq!(p2p.len(), 5);
    }
}
