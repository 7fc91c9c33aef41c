//! Which PCI functions count as GPUs.

use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `VENDOR:DEVICE`
    Id { vendor: u16, device: u16 },
    /// `VENDOR:*`
    Vendor(u16),
    /// `class:CCSS` (base class and subclass)
    Class { base: u8, sub: u8 },
}

impl FromStr for Selector {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            format!(
                "bad selector {s:?}: {why} (expected VENDOR:DEVICE, VENDOR:* or class:CCSS, hex)"
            )
        };
        let hex16 = |t: &str| -> Option<u16> {
            let t = t.strip_prefix("0x").unwrap_or(t);
            if t.is_empty() || t.len() > 4 {
                return None;
            }
            u16::from_str_radix(t, 16).ok()
        };
        let (a, b) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
        if a.eq_ignore_ascii_case("class") {
            let v = hex16(b)
                .filter(|_| b.trim_start_matches("0x").len() == 4)
                .ok_or_else(|| bad("class needs four hex digits"))?;
            return Ok(Selector::Class {
                base: (v >> 8) as u8,
                sub: v as u8,
            });
        }
        let vendor = hex16(a).ok_or_else(|| bad("vendor is not a 16-bit hex number"))?;
        if b == "*" {
            return Ok(Selector::Vendor(vendor));
        }
        if b.contains(':') {
            return Err(bad("too many ':'"));
        }
        let device = hex16(b).ok_or_else(|| bad("device is not a 16-bit hex number"))?;
        Ok(Selector::Id { vendor, device })
    }
}

impl Selector {
    pub fn matches(&self, vendor: u16, device: u16, class: u32) -> bool {
        match *self {
            Selector::Id {
                vendor: v,
                device: d,
            } => v == vendor && d == device,
            Selector::Vendor(v) => v == vendor,
            Selector::Class { base, sub } => {
                (class >> 16) as u8 == base && (class >> 8) as u8 == sub
            }
        }
    }
}

/// Display adapters that hypervisors emulate and server boards solder on
/// for their management console: a guest or host has one beside its GPUs,
/// and it is never one of them.
const NOT_GPUS: &[(u16, Option<u16>, &str)] = &[
    (0x1234, Some(0x1111), "QEMU standard VGA / bochs-display"),
    (0x1af4, Some(0x1050), "virtio-gpu"),
    (0x1af4, Some(0x1010), "virtio-gpu (legacy id)"),
    (0x1b36, Some(0x0100), "QXL"),
    (0x1013, Some(0x00b8), "Cirrus CLGD 5446"),
    (0x15ad, Some(0x0405), "VMware SVGA II"),
    (0x15ad, Some(0x0710), "VMware SVGA"),
    (0x1414, Some(0x5353), "Hyper-V synthetic video"),
    (0x80ee, Some(0xbeef), "VirtualBox graphics"),
    (0x1a03, None, "ASPEED BMC graphics"),
    (0x102b, Some(0x0522), "Matrox G200e server graphics"),
    (0x102b, Some(0x0532), "Matrox G200eW server graphics"),
    (0x102b, Some(0x0533), "Matrox G200eH server graphics"),
    (0x102b, Some(0x0534), "Matrox G200eR server graphics"),
    (0x102b, Some(0x0536), "Matrox G200eW3 server graphics"),
    (0x102b, Some(0x0538), "Matrox G200eH3 server graphics"),
];

/// Why a display controller is left out by default, if it is.
pub fn emulated_display(vendor: u16, device: u16) -> Option<&'static str> {
    NOT_GPUS
        .iter()
        .find(|(v, d, _)| *v == vendor && d.is_none_or(|d| d == device))
        .map(|(_, _, why)| *why)
}

/// The default selection: display controllers (class 0x03) and the
/// processing accelerators (class 0x12) of GPU vendors, less emulated and
/// management adapters.
pub fn is_default_gpu(vendor: u16, device: u16, class: u32) -> bool {
    use crate::pci::{CLASS_ACCELERATOR, CLASS_DISPLAY, VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA};
    let base = (class >> 16) as u8;
    let candidate = base == CLASS_DISPLAY
        || (base == CLASS_ACCELERATOR
            && matches!(vendor, VENDOR_NVIDIA | VENDOR_AMD | VENDOR_INTEL));
    candidate && emulated_display(vendor, device).is_none()
}

/// Whether a function is one of the GPUs to check: the selectors when any
/// were given, the default otherwise.
pub fn is_selected(selectors: &[Selector], vendor: u16, device: u16, class: u32) -> bool {
    if selectors.is_empty() {
        is_default_gpu(vendor, device, class)
    } else {
        selectors.iter().any(|s| s.matches(vendor, device, class))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse() {
        assert_eq!(
            "10de:2330".parse(),
            Ok(Selector::Id {
                vendor: 0x10de,
                device: 0x2330
            })
        );
        assert_eq!("1af4:*".parse(), Ok(Selector::Vendor(0x1af4)));
        assert_eq!(
            "class:0302".parse(),
            Ok(Selector::Class { base: 3, sub: 2 })
        );
        for bad in [
            "10de",
            "10de:",
            "xyz:1",
            "class:03",
            "class:030200",
            "12345:1",
            "10de:2330:1",
        ] {
            assert!(bad.parse::<Selector>().is_err(), "{bad}");
        }
    }

    #[test]
    fn default_takes_real_gpus_and_leaves_emulated_adapters() {
        assert!(is_default_gpu(0x10de, 0x2330, 0x030200));
        assert!(is_default_gpu(0x1002, 0x74a1, 0x120000));
        assert!(is_default_gpu(0x8086, 0x56c0, 0x030000));
        assert!(!is_default_gpu(0x1234, 0x1111, 0x030000));
        assert!(!is_default_gpu(0x1af4, 0x1050, 0x038000));
        assert!(!is_default_gpu(0x1a03, 0x2000, 0x030000));
        assert!(!is_default_gpu(0x1af4, 0x1110, 0x050000));
        assert!(!is_default_gpu(0x15b3, 0x1021, 0x120000));
    }

    #[test]
    fn explicit_selectors_replace_the_default() {
        let s = vec![Selector::Id {
            vendor: 0x1af4,
            device: 0x1110,
        }];
        assert!(is_selected(&s, 0x1af4, 0x1110, 0x050000));
        assert!(!is_selected(&s, 0x10de, 0x2330, 0x030200));
        let c = vec!["class:0300".parse().unwrap()];
        assert!(is_selected(&c, 0x1234, 0x1111, 0x030000));
    }
}
