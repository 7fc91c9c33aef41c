//! The machine around the GPUs: which firmware set up PCI, and what kind of
//! platform (which hypervisor, or bare metal) it runs on. The DMI strings
//! are read by `read::system` (or taken from the kernel log's `DMI:` line by
//! `parse::platform`); the rules that classify them are here.

use crate::model::fw_cfg::FwCfg;
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

/// How sure the platform judgement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// Signs of the platform beside DMI, as the kernel log, cpuinfo and the
/// devices show them. Each is read, never inferred: the judgement
/// (`Firmware::judge`) weighs them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Signs {
    /// `Hypervisor detected: KVM` (x86 kernels print it in every guest).
    pub hypervisor_line: Option<String>,
    /// The `hypervisor` flag in /proc/cpuinfo: `Some(false)` when cpuinfo
    /// was read and the flag is absent.
    pub cpu_flag: Option<bool>,
    /// `efi: EFI v2.70 by EDK II`: who the UEFI firmware says it is.
    pub efi_by: Option<String>,
    /// A device tree booted the kernel (`Machine model: ...`, `OF: fdt:`),
    /// or another sign that the machine is not an x86 PC (an ARM or
    /// PowerPC board's PCIe host controller, an AArch64 CPU, a host bridge
    /// that translates addresses): its PCIe windows are the board's.
    pub device_tree: Option<String>,
    /// Devices only a hypervisor has: QEMU's, VMware's or Hyper-V's
    /// emulated or paravirtual hardware, a QEMU monitor listing. The
    /// platform each points at, with the words for the report.
    pub vm_devices: Vec<(Platform, String)>,
    /// A sign that says only "a VM" and that a real machine can show too,
    /// rarely (a passed-through device's Max Payload Size lowered to an
    /// emulated port's 128 bytes; a bare-metal board's quirky port prints
    /// it as well): weighed after DMI and the bare-metal signs.
    pub weak_vm: Option<String>,
    /// Devices a VM does not have: a BMC's VGA, a Thunderbolt controller.
    pub metal_devices: Vec<String>,
}

impl Signs {
    /// What a device's ids say about the platform, if anything.
    pub(crate) fn add_device(&mut self, vendor: u16, device: u16) {
        let vm = match (vendor, device) {
            (0x1234, 0x1111) => Some((Platform::Qemu, "QEMU's standard VGA (1234:1111)")),
            (0x1b36, 0x0100) => Some((Platform::Qemu, "QEMU's QXL display (1b36:0100)")),
            (0x1b36, 0x000c) => Some((Platform::Qemu, "QEMU's PCIe root port (1b36:000c)")),
            (0x1af4, _) => Some((Platform::Qemu, "a virtio device (1af4)")),
            (0x15ad, 0x0405) => Some((Platform::Vmware, "VMware's SVGA adapter (15ad:0405)")),
            (0x15ad, 0x07a0) => Some((Platform::Vmware, "VMware's PCIe root port (15ad:07a0)")),
            (0x1414, _) => Some((Platform::HyperV, "a Hyper-V device (1414)")),
            _ => None,
        };
        if let Some((p, what)) = vm {
            if !self.vm_devices.iter().any(|(_, w)| w == what) {
                self.vm_devices.push((p, what.to_string()));
            }
        }
        // The root ports of ARM and PowerPC SoCs.
        let board = match (vendor, device) {
            (0x1d87, _) => Some("a Rockchip SoC's PCIe root port (1d87)"),
            (0x1957, _) => Some("a Freescale/NXP SoC's PCIe root port (1957)"),
            (0x14e4, 0x2711 | 0x2712) => Some("a Broadcom BCM2711/2712 PCIe root port"),
            _ => None,
        };
        if let Some(what) = board {
            self.device_tree.get_or_insert_with(|| what.to_string());
        }
        let metal = match (vendor, device) {
            (0x1a03, 0x2000) => Some("a BMC's ASPEED VGA (1a03:2000)"),
            (0x102b, 0x0522 | 0x0532 | 0x0533 | 0x0534 | 0x0536 | 0x0538) => {
                Some("a BMC's Matrox VGA (102b)")
            }
            _ => None,
        };
        if let Some(what) = metal {
            if !self.metal_devices.iter().any(|w| w == what) {
                self.metal_devices.push(what.to_string());
            }
        }
    }
}

/// The one platform judgement `check` and `explain` share: what the
/// machine is, how sure, and the signs that said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judgement {
    pub platform: Platform,
    /// `None` when the platform is unknown.
    pub confidence: Option<Confidence>,
    pub signs: Vec<String>,
}

/// The DMI strings that say which firmware and which machine, exactly as
/// sysfs or the log's `DMI:` line gives them, and the other signs of the
/// platform.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Firmware {
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    /// DMI's product version: QEMU writes its machine type there
    /// (`pc-q35-7.2`: hw/smbios's type 1 version is the machine's name).
    pub product_version: Option<String>,
    /// DMI's product family (type 1): KubeVirt writes `KubeVirt` there.
    pub product_family: Option<String>,
    /// DMI's board (type 2), which QEMU leaves out unless told: LXD and
    /// Incus name themselves there. The kernel's `DMI:` line prints the
    /// board's name after a `/`.
    pub board_vendor: Option<String>,
    pub board_name: Option<String>,
    pub signs: Signs,
    /// What the host told the firmware through fw_cfg, as the guest read
    /// it back; `None` where no system was read (pasted text, `plan`).
    pub fw_cfg: Option<FwCfg>,
}

/// What a DMI system vendor or product names, if a hypervisor.
fn dmi_vm(vendor: &str, product: &str) -> Option<Platform> {
    if vendor.contains("QEMU") || product.contains("Q35") || product.contains("i440FX") {
        return Some(Platform::Qemu);
    }
    if vendor.contains("VMware") || product.starts_with("VMware") {
        return Some(Platform::Vmware);
    }
    if vendor.contains("Microsoft") && (product.contains("Virtual") || vendor.contains("Virtual")) {
        return Some(Platform::HyperV);
    }
    let other = [
        "innotek",
        "Xen",
        "Amazon EC2",
        "Google",
        "OpenStack",
        "Red Hat",
        "Nutanix",
        "KubeVirt",
        "oVirt",
        "Parallels",
        "Bochs",
    ];
    if other.iter().any(|v| vendor.contains(v))
        || product.contains("KVM")
        || product.contains("VirtualBox")
        || product.contains("OpenStack")
        || product.contains("HVM domU")
    {
        return Some(Platform::OtherVm);
    }
    None
}

/// What a `Hypervisor detected:` name is.
fn hypervisor_platform(name: &str) -> Platform {
    if name.starts_with("VMware") {
        Platform::Vmware
    } else if name.contains("Hyper-V") {
        Platform::HyperV
    } else {
        // KVM (QEMU, Firecracker, cloud hypervisors alike), Xen, ACRN...
        Platform::OtherVm
    }
}

impl Firmware {
    /// The firmware DMI names (bios vendor, or SeaBIOS's version string).
    fn dmi_kind(&self) -> FirmwareKind {
        match self.bios_vendor.as_deref() {
            Some(v) if v.contains("SeaBIOS") => FirmwareKind::SeaBios,
            Some(v)
                if v.contains("EFI Development Kit")
                    || v.contains("OVMF")
                    || v.contains("EDK II") =>
            {
                FirmwareKind::Ovmf
            }
            Some(_) => FirmwareKind::Other,
            None if self.seabios_version() => FirmwareKind::SeaBios,
            None => FirmwareKind::Unknown,
        }
    }

    /// SeaBIOS leaves its name in the BIOS version (`rel-1.16.2-0-g...`,
    /// `1.16.2-debian-1.16.2-1`).
    fn seabios_version(&self) -> bool {
        self.bios_version.as_deref().is_some_and(|b| {
            b.contains("seabios") || b.starts_with("rel-1.") || b.contains("debian-1.")
        })
    }

    pub(crate) fn kind(&self) -> FirmwareKind {
        match self.dmi_kind() {
            FirmwareKind::Unknown => {}
            k => return k,
        }
        match self.signs.efi_by.as_deref() {
            // EDK II is OVMF in a QEMU guest; ARM boards and some PCs run
            // EDK II too, so the banner alone says OVMF only in QEMU.
            Some(by)
                if by.contains("EDK II")
                    && matches!(self.platform(), Platform::Qemu | Platform::OtherVm) =>
            {
                FirmwareKind::Ovmf
            }
            Some(_) => FirmwareKind::Other,
            None if self.legacy_vmware() => FirmwareKind::Other,
            None => FirmwareKind::Unknown,
        }
    }

    /// A VMware VM booted by its legacy (Phoenix) BIOS: a `VMware Virtual
    /// Platform` with `BIOS 6.00`, where EFI VMs are `VMware7,1` (or later)
    /// with `BIOS VMW...` and an EFI banner.
    fn legacy_vmware(&self) -> bool {
        self.signs.efi_by.is_none()
            && self
                .sys_vendor
                .as_deref()
                .is_some_and(|v| v.contains("VMware"))
            && (self.product_name.as_deref() == Some("VMware Virtual Platform")
                || self
                    .bios_version
                    .as_deref()
                    .is_some_and(|v| v.starts_with("6.00")))
    }

    /// The firmware is a legacy BIOS, not UEFI: SeaBIOS, VMware's Phoenix
    /// BIOS. `false` when a UEFI banner was seen or the kind is not known.
    pub(crate) fn legacy_bios(&self) -> bool {
        self.bios_vendor
            .as_deref()
            .is_some_and(|v| v.contains("Phoenix") || v.contains("SeaBIOS"))
            || self.dmi_kind() == FirmwareKind::SeaBios
            || self.legacy_vmware()
    }

    pub(crate) fn platform(&self) -> Platform {
        self.judge().platform
    }

    /// Every sign weighed once: what the kernel says it runs on first,
    /// then DMI, the CPU's flag, the devices, the firmware's own banner.
    pub(crate) fn judge(&self) -> Judgement {
        let s = &self.signs;
        let mut signs = Vec::new();
        let vendor = self.sys_vendor.as_deref().unwrap_or("");
        let product = self.product_name.as_deref().unwrap_or("");
        let mut dmi_said = format!("DMI: {} {}", vendor, product).trim().to_string();
        // A management layer that names itself runs QEMU, whatever the
        // system vendor it writes; its board, where it is the sign, is
        // said with the vendor and product.
        let dmi = match self.layer() {
            Some(_) => Some(Platform::Qemu),
            None => dmi_vm(vendor, product),
        };
        if let Some(board) = self.layer_board() {
            dmi_said.push_str(&format!(", board {board}"));
        }
        let dmi_present = self.sys_vendor.is_some() || self.product_name.is_some();
        let fw = self.dmi_kind();
        let found = |platform, confidence, signs| Judgement {
            platform,
            confidence: Some(confidence),
            signs,
        };
        if let Some(h) = &s.hypervisor_line {
            signs.push(format!("Hypervisor detected: {h}"));
            if s.cpu_flag == Some(true) {
                signs.push("the CPU's hypervisor flag".into());
            }
            // DMI names the hypervisor's product more precisely (a KVM
            // guest of QEMU says QEMU there).
            let p = match dmi {
                Some(p) => {
                    signs.push(dmi_said);
                    p
                }
                None => hypervisor_platform(h),
            };
            return found(p, Confidence::High, signs);
        }
        if let Some(p) = dmi {
            signs.push(dmi_said);
            if s.cpu_flag == Some(true) {
                signs.push("the CPU's hypervisor flag".into());
            }
            return found(p, Confidence::High, signs);
        }
        if matches!(fw, FirmwareKind::SeaBios | FirmwareKind::Ovmf) {
            signs.push(format!("{} firmware", fw.as_str()));
            return found(Platform::Qemu, Confidence::High, signs);
        }
        let vm_device = s.vm_devices.first();
        if s.cpu_flag == Some(true) {
            signs.push("the CPU's hypervisor flag".into());
            let p = vm_device.map(|(p, what)| {
                signs.push(what.clone());
                *p
            });
            return found(p.unwrap_or(Platform::OtherVm), Confidence::High, signs);
        }
        if let Some((p, what)) = vm_device {
            signs.push(what.clone());
            return found(*p, Confidence::Medium, signs);
        }
        if dmi_present {
            signs.push(dmi_said);
            if s.cpu_flag == Some(false) {
                signs.push("no hypervisor flag in cpuinfo".into());
            }
            return found(Platform::BareMetal, Confidence::High, signs);
        }
        let mut metal: Vec<String> = s.device_tree.iter().cloned().collect();
        metal.extend(s.metal_devices.iter().cloned());
        if s.cpu_flag == Some(false) {
            metal.push("no hypervisor flag in cpuinfo".into());
        }
        if !metal.is_empty() {
            return found(Platform::BareMetal, Confidence::Medium, metal);
        }
        if let Some(what) = &s.weak_vm {
            return found(Platform::OtherVm, Confidence::Medium, vec![what.clone()]);
        }
        match s.efi_by.as_deref() {
            Some(by) if by.contains("EDK II") => found(
                Platform::Qemu,
                Confidence::Low,
                vec![format!(
                    "efi: EFI by {by} (OVMF in a QEMU guest; some boards run EDK II too)"
                )],
            ),
            Some(by) => found(
                Platform::BareMetal,
                Confidence::Low,
                vec![format!("efi: EFI by {by}")],
            ),
            None if self.bios_vendor.is_some() => found(
                Platform::BareMetal,
                Confidence::Low,
                vec![format!(
                    "BIOS vendor {}",
                    self.bios_vendor.as_deref().unwrap_or("")
                )],
            ),
            None => Judgement {
                platform: Platform::Unknown,
                confidence: None,
                signs: Vec::new(),
            },
        }
    }

    /// The machine type, from the product name QEMU writes (`Standard PC
    /// (Q35 + ICH9, 2009)`), or, where a management layer wrote its own
    /// product (KubeVirt's `None`), from the product version, which QEMU
    /// still fills with the machine's name (`pc-q35-rhel9.4.0`) unless
    /// told otherwise.
    pub(crate) fn qemu_machine(&self) -> Option<QemuMachine> {
        let product = self.product_name.as_deref().unwrap_or("");
        let version = self.product_version.as_deref().unwrap_or("");
        if product.contains("Q35") || version.starts_with("pc-q35-") {
            Some(QemuMachine::Q35)
        } else if product.contains("i440FX") || version.starts_with("pc-i440fx-") {
            Some(QemuMachine::I440fx)
        } else {
            None
        }
    }
}

/// What the CPU's CPUID says of a hypervisor (read by `read::cpuid`):
/// leaf 1 ECX bit 31, and leaf 0x40000000's signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CpuidView {
    /// Not read: a captured tree (`--root` elsewhere than `/`) or not x86.
    NotRead,
    /// Leaf 1 says no hypervisor.
    NoHypervisor,
    /// A hypervisor, and the 12 signature bytes of leaf 0x40000000 (not
    /// necessarily printable).
    Hypervisor { signature: String },
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
    fn one_judgement_from_every_sign() {
        let signs = |f: fn(&mut Signs)| {
            let mut s = Signs::default();
            f(&mut s);
            Firmware {
                signs: s,
                ..Firmware::default()
            }
        };
        use Confidence::*;
        for (what, fw, want) in [
            (
                "hypervisor line and flag, no DMI (a live KVM guest)",
                signs(|s| {
                    s.hypervisor_line = Some("KVM".into());
                    s.cpu_flag = Some(true);
                }),
                (Platform::OtherVm, Some(High)),
            ),
            (
                "the flag alone",
                signs(|s| s.cpu_flag = Some(true)),
                (Platform::OtherVm, Some(High)),
            ),
            (
                "the flag and QEMU's VGA",
                signs(|s| {
                    s.cpu_flag = Some(true);
                    s.add_device(0x1234, 0x1111);
                }),
                (Platform::Qemu, Some(High)),
            ),
            (
                "VMware's SVGA alone",
                signs(|s| s.add_device(0x15ad, 0x0405)),
                (Platform::Vmware, Some(Medium)),
            ),
            (
                "a device tree",
                signs(|s| s.device_tree = Some("device tree: Rockchip RK3588".into())),
                (Platform::BareMetal, Some(Medium)),
            ),
            (
                "a BMC VGA",
                signs(|s| s.add_device(0x1a03, 0x2000)),
                (Platform::BareMetal, Some(Medium)),
            ),
            (
                "cpuinfo read, no flag",
                signs(|s| s.cpu_flag = Some(false)),
                (Platform::BareMetal, Some(Medium)),
            ),
            (
                "EDK II banner alone",
                signs(|s| s.efi_by = Some("EDK II".into())),
                (Platform::Qemu, Some(Low)),
            ),
            (
                "EDK II banner on a board with a device tree",
                signs(|s| {
                    s.efi_by = Some("EDK II".into());
                    s.device_tree = Some("device tree: Radxa ROCK 5B".into());
                }),
                (Platform::BareMetal, Some(Medium)),
            ),
            ("nothing", Firmware::default(), (Platform::Unknown, None)),
        ] {
            let j = fw.judge();
            assert_eq!((j.platform, j.confidence), want, "{what}: {j:?}");
            assert_eq!(j.signs.is_empty(), want.1.is_none(), "{what}: {j:?}");
        }
        // An EDK II banner is OVMF only in a QEMU guest.
        let board = signs(|s| {
            s.efi_by = Some("EDK II".into());
            s.device_tree = Some("device tree: Radxa ROCK 5B".into());
        });
        assert_eq!(board.kind(), FirmwareKind::Other);
        let guest = signs(|s| {
            s.efi_by = Some("EDK II".into());
            s.hypervisor_line = Some("KVM".into());
        });
        assert_eq!(guest.kind(), FirmwareKind::Ovmf);
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
