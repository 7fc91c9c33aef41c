//! The rest of the machine's story: root bus windows (`/proc/iomem`), CPU
//! address bits (`/proc/cpuinfo`), the kernel command line and the firmware
//! (`/sys/class/dmi/id`). Parsers take text; `read_*` join paths to the root.

use crate::root::Root;
use procfs_core::FromBufRead;

/// A 64-bit address range, both ends inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub end: u64,
}

impl Range {
    pub fn size(&self) -> u64 {
        self.end.saturating_sub(self.start).saturating_add(1)
    }
}

pub const FOUR_GIB: u64 = 1 << 32;

/// Clips a root bus window to the part above 4 GiB, where 64-bit BARs of
/// this size can only go. Windows wholly below 4 GiB are dropped.
pub fn above_4g(r: Range) -> Option<Range> {
    if r.end < FOUR_GIB || r.end < r.start {
        return None;
    }
    Some(Range {
        start: r.start.max(FOUR_GIB),
        end: r.end,
    })
}

/// A root bus window and the root bus it belongs to, when known.
pub type RootWindow = (Range, Option<crate::sizing::RootBus>);

/// The root bus windows above 4 GiB listed in `/proc/iomem` as top-level
/// `PCI Bus dddd:bb` entries, with their root bus. An unprivileged reader
/// sees every address as zero: that yields `None` (unknown), while real
/// addresses with no window above 4 GiB yield an empty list.
pub fn iomem_root_windows(text: &str) -> Result<Option<Vec<RootWindow>>, String> {
    let iomem = procfs_core::Iomem::from_buf_read(text.as_bytes()).map_err(|e| e.to_string())?;
    if iomem.0.iter().all(|(_, m)| m.address == (0, 0)) {
        return Ok(None);
    }
    Ok(Some(
        iomem
            .0
            .iter()
            .filter(|(indent, m)| *indent == 0 && m.name.starts_with("PCI Bus "))
            .filter_map(|(_, m)| {
                let r = above_4g(Range {
                    start: m.address.0,
                    end: m.address.1,
                })?;
                Some((r, parse_root_bus(&m.name["PCI Bus ".len()..])))
            })
            .collect(),
    ))
}

/// `0000:00` -> (0, 0).
pub fn parse_root_bus(s: &str) -> Option<(u32, u8)> {
    let (d, b) = s.trim().split_once(':')?;
    if d.is_empty() || d.len() > 8 || b.len() != 2 {
        return None;
    }
    Some((
        u32::from_str_radix(d, 16).ok()?,
        u8::from_str_radix(b, 16).ok()?,
    ))
}

/// `address sizes : 46 bits physical, 48 bits virtual`.
pub fn cpuinfo_phys_bits(text: &str) -> Option<u32> {
    if !text.contains("processor") {
        return None;
    }
    let info = procfs_core::CpuInfo::from_buf_read(text.as_bytes()).ok()?;
    let field = info.get_field(0, "address sizes")?;
    let bits: u32 = field.split_whitespace().next()?.parse().ok()?;
    (1..=64).contains(&bits).then_some(bits)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirmwareKind {
    SeaBios,
    Ovmf,
    Other,
    Unknown,
}

impl FirmwareKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FirmwareKind::SeaBios => "seabios",
            FirmwareKind::Ovmf => "ovmf",
            FirmwareKind::Other => "other",
            FirmwareKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Qemu,
    Vmware,
    HyperV,
    OtherVm,
    BareMetal,
    Unknown,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
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
pub enum QemuMachine {
    Q35,
    I440fx,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Firmware {
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
}

impl Firmware {
    pub fn kind(&self) -> FirmwareKind {
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

    pub fn platform(&self) -> Platform {
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

    pub fn qemu_machine(&self) -> Option<QemuMachine> {
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

/// Reads a text file under the root, lossily; the error names the file
/// (the caller decides whether it is worth a warning).
pub fn read_text(root: &Root, path: &str) -> Result<String, String> {
    let p = root.join(path);
    crate::root::read_lossy(&p).map_err(|e| format!("reading {}: {e}", p.display()))
}

pub fn read_firmware(root: &Root) -> Firmware {
    let get = |name: &str| {
        read_text(root, &format!("sys/class/dmi/id/{name}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Firmware {
        bios_vendor: get("bios_vendor"),
        bios_version: get("bios_version"),
        sys_vendor: get("sys_vendor"),
        product_name: get("product_name"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IOMEM: &str = "00000000-00000fff : Reserved
00001000-0009ffff : System RAM
80000000-afffffff : PCI Bus 0000:00
  80000000-800fffff : PCI Bus 0000:01
e000000000-f89fffffff : PCI Bus 0000:00
  e000000000-e7ffffffff : PCI Bus 0000:01
    e000000000-e7ffffffff : 0000:01:00.0
";

    #[test]
    fn iomem_yields_top_level_64bit_root_windows() {
        let w = iomem_root_windows(IOMEM).unwrap().unwrap();
        let r = Range {
            start: 0xe0_0000_0000,
            end: 0xf8_9fff_ffff,
        };
        assert_eq!(w, vec![(r, Some((0, 0)))]);
        assert_eq!(r.size(), 0x18_a000_0000);
        // Real addresses, nothing above 4 GiB: known to be empty.
        let low = "80000000-afffffff : PCI Bus 0000:00\n";
        assert_eq!(iomem_root_windows(low).unwrap(), Some(vec![]));
    }

    #[test]
    fn unprivileged_iomem_gives_no_windows() {
        let zeroed = "00000000-00000000 : PCI Bus 0000:00\n  00000000-00000000 : 0000:00:01.0\n";
        assert_eq!(iomem_root_windows(zeroed).unwrap(), None);
        assert!(iomem_root_windows("garbage").is_err());
    }

    #[test]
    fn phys_bits_from_cpuinfo() {
        let t = "processor\t: 0\nvendor_id\t: AuthenticAMD\naddress sizes\t: 40 bits physical, 48 bits virtual\n\nprocessor\t: 1\naddress sizes\t: 40 bits physical, 48 bits virtual\n";
        assert_eq!(cpuinfo_phys_bits(t), Some(40));
        assert_eq!(cpuinfo_phys_bits("processor : 0\n"), None);
        assert_eq!(cpuinfo_phys_bits(""), None);
        assert_eq!(
            cpuinfo_phys_bits("processor : 0\naddress sizes : 999 bits physical\n"),
            None
        );
    }

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
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn iomem_and_cpuinfo_parsers_never_panic(text in "\\PC{0,300}", bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = iomem_root_windows(&text);
            let _ = cpuinfo_phys_bits(&text);
            let lossy = String::from_utf8_lossy(&bytes);
            let _ = iomem_root_windows(&lossy);
            let _ = cpuinfo_phys_bits(&lossy);
        }

        #[test]
        fn iomem_windows_round_trip(ranges in proptest::collection::vec((1u64 << 32..1u64 << 52, 1u64..1u64 << 40), 0..6)) {
            let text: String = ranges.iter().enumerate()
                .map(|(i, (s, len))| format!("{:x}-{:x} : PCI Bus 0000:{:02x}\n  {:x}-{:x} : 0000:{:02x}:00.0\n", s, s + len - 1, i, s, s, i + 1))
                .collect();
            let w = iomem_root_windows(&text).unwrap().unwrap_or_default();
            prop_assert_eq!(w.len(), ranges.len());
            for (i, ((r, bus), (s, len))) in w.iter().zip(&ranges).enumerate() {
                prop_assert_eq!((r.start, r.size()), (*s, *len));
                prop_assert_eq!(*bus, Some((0, i as u8)));
            }
        }
    }
}
