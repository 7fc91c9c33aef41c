//! PCI addresses, root buses and the identity of a function.
//!
//! Text forms are parsed in `parse::address`; this module only holds the
//! values and the rules that depend on nothing but them.

use serde::{Serialize, Serializer};
use std::fmt;

/// A PCI function address, `DDDD:BB:DD.F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PciAddress {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A root bus: domain and bus number (`pci0000:00` in sysfs paths, `PCI Bus
/// 0000:00` in `/proc/iomem`, `pci_bus 0000:00` in the kernel log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RootBus {
    pub domain: u32,
    pub bus: u8,
}

impl fmt::Display for RootBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}", self.domain, self.bus)
    }
}

impl Serialize for RootBus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Display controller base class (`0x03xxxx`).
pub(crate) const CLASS_DISPLAY: u8 = 0x03;
/// Processing accelerators (`0x12xxxx`), where some compute GPUs report.
pub(crate) const CLASS_ACCELERATOR: u8 = 0x12;

pub(crate) const VENDOR_NVIDIA: u16 = 0x10de;
pub(crate) const VENDOR_AMD: u16 = 0x1002;
pub(crate) const VENDOR_INTEL: u16 = 0x8086;

/// The base class of a 24-bit class code.
pub(crate) fn base_class(class: u32) -> u8 {
    (class >> 16) as u8
}

/// Whether a function forwards address windows to a bus below it: a type 1
/// (PCI-to-PCI) or type 2 (CardBus) header, or a PCI-to-PCI (0x0604),
/// CardBus (0x0607) or semi-transparent (0x0609) bridge class when the
/// header type is not known. Host bridges (0x0600) and ISA bridges (0x0601)
/// forward nothing and are endpoints here. Every part of the pipeline asks
/// this one question the same way.
pub(crate) fn is_bridge(class: Option<u32>, header_type: Option<u8>) -> bool {
    matches!(header_type.map(|h| h & 0x7f), Some(1 | 2))
        || class.is_some_and(|c| matches!(c >> 8, 0x0604 | 0x0607 | 0x0609))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridges_by_header_or_class() {
        assert!(is_bridge(Some(0x060400), None));
        assert!(is_bridge(Some(0x060700), Some(2)));
        assert!(is_bridge(Some(0x060901), None));
        assert!(is_bridge(None, Some(0x81)));
        assert!(is_bridge(Some(0x030000), Some(1)));
        assert!(!is_bridge(Some(0x060000), Some(0)));
        assert!(!is_bridge(Some(0x060100), None));
        assert!(!is_bridge(Some(0x030200), Some(0)));
        assert!(!is_bridge(None, None));
    }

    #[test]
    fn addresses_and_buses_print_as_the_kernel_does() {
        let a = PciAddress {
            domain: 0x10000,
            bus: 0xe1,
            device: 0x1f,
            function: 7,
        };
        assert_eq!(a.to_string(), "10000:e1:1f.7");
        let b = RootBus {
            domain: 0,
            bus: 0x80,
        };
        assert_eq!(b.to_string(), "0000:80");
    }
}
