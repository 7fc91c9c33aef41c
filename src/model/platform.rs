//! The machine around the GPUs: which firmware set up PCI, and what kind of
//! platform (which hypervisor, or bare metal) it runs on. The DMI strings
//! are read by `read::system` (or taken from the kernel log's `DMI:` line by
//! `parse::platform`); the rules that classify them are here.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FirmwareKind {
    #[serde(rename = "seabios")]
    SeaBios,
    Ovmf,
    Other,
    Unknown,
}

impl FirmwareKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FirmwareKind::SeaBios => "seabios",
            FirmwareKind::Ovmf => "ovmf",
            FirmwareKind::Other => "other",
            FirmwareKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Platform {
    Qemu,
    Vmware,
    #[serde(rename = "hyperv")]
    HyperV,
    OtherVm,
    BareMetal,
    Unknown,
}

impl Platform {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Platform::Qemu => "qemu",
            Platform::Vmware => "vmware",
            Platform::HyperV => "hyperv",
            Platform::OtherVm => "other_vm",
            Platform::BareMetal => "bare_metal",
            Platform::Unknown => "unknown",
        }
    }
}

/// Machine type of a QEMU guest, for the right `pci-hole64-size` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QemuMachine {
    Q35,
    I440fx,
}

/// Whose CPU the (v)CPU says it is: the firmware trusts a 40-bit address
/// width from an AMD CPU only (docs/firmware-window.md, "The address
/// width"). Under KVM a named QEMU model reports the host's vendor; under
/// TCG `qemu64` reports AMD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CpuVendor {
    Amd,
    Intel,
    Other,
}

/// What the (v)CPU tells the firmware about addressing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cpu {
    /// Physical address bits (`address sizes` in /proc/cpuinfo).
    pub phys_bits: Option<u32>,
    pub vendor: Option<CpuVendor>,
    /// 1 GiB pages (`pdpe1gb`): without them OVMF limits itself to 40 bits.
    pub pdpe1gb: Option<bool>,
    /// The `hypervisor` flag: a virtual machine, whatever DMI says.
    pub hypervisor: Option<bool>,
}

/// The DMI strings that say which firmware and which machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Firmware {
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
}

impl Firmware {
    pub(crate) fn kind(&self) -> FirmwareKind {
        match self.bios_vendor.as_deref() {
            None => FirmwareKind::Unknown,
            Some(v) if v.contains("SeaBIOS") => FirmwareKind::SeaBios,
            Some(v)
                if v.contains("EFI Development Kit")
                    || v.contains("OVMF")
                    || v.contains("EDK II") =>
            {
                FirmwareKind::Ovmf
            }
            Some(_) => FirmwareKind::Other,
        }
    }

    pub(crate) fn platform(&self) -> Platform {
        let vendor = self.sys_vendor.as_deref().unwrap_or("");
        let product = self.product_name.as_deref().unwrap_or("");
        if self.sys_vendor.is_none() && self.product_name.is_none() && self.bios_vendor.is_none() {
            return Platform::Unknown;
        }
        if vendor.contains("QEMU")
            || product.contains("Q35")
            || product.contains("i440FX")
            || self.kind() == FirmwareKind::SeaBios
            || self.kind() == FirmwareKind::Ovmf
        {
            return Platform::Qemu;
        }
        if vendor.contains("VMware") {
            return Platform::Vmware;
        }
        if vendor.contains("Microsoft") && product.contains("Virtual") {
            return Platform::HyperV;
        }
        if [
            "innotek",
            "Xen",
            "Amazon EC2",
            "Google",
            "OpenStack",
            "Red Hat",
            "Nutanix",
        ]
        .iter()
        .any(|v| vendor.contains(v))
            || product.contains("KVM")
        {
            return Platform::OtherVm;
        }
        Platform::BareMetal
    }

    pub(crate) fn qemu_machine(&self) -> Option<QemuMachine> {
        let product = self.product_name.as_deref()?;
        if product.contains("Q35") {
            Some(QemuMachine::Q35)
        } else if product.contains("i440FX") {
            Some(QemuMachine::I440fx)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firmware_and_platform_from_dmi() {
        let ovmf = Firmware {
            bios_vendor: Some("EFI Development Kit II / OVMF".into()),
            sys_vendor: Some("QEMU".into()),
            product_name: Some("Standard PC (Q35 + ICH9, 2009)".into()),
            ..Default::default()
        };
        assert_eq!(ovmf.kind(), FirmwareKind::Ovmf);
        assert_eq!(ovmf.platform(), Platform::Qemu);
        assert_eq!(ovmf.qemu_machine(), Some(QemuMachine::Q35));
        let metal = Firmware {
            bios_vendor: Some("American Megatrends Inc.".into()),
            sys_vendor: Some("ASUS".into()),
            ..Default::default()
        };
        assert_eq!(
            (metal.kind(), metal.platform()),
            (FirmwareKind::Other, Platform::BareMetal)
        );
        assert_eq!(Firmware::default().platform(), Platform::Unknown);
    }

    #[test]
    fn serialised_names_are_the_report_strings() {
        for k in [
            FirmwareKind::SeaBios,
            FirmwareKind::Ovmf,
            FirmwareKind::Other,
            FirmwareKind::Unknown,
        ] {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        for p in [
            Platform::Qemu,
            Platform::Vmware,
            Platform::HyperV,
            Platform::OtherVm,
            Platform::BareMetal,
            Platform::Unknown,
        ] {
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.as_str())
            );
        }
    }
}
