//! PCI addresses and the numeric identity of a function.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A PCI function address, `DDDD:BB:DD.F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadAddress(pub String);

impl fmt::Display for BadAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a PCI address: {:?}", self.0)
    }
}

impl std::error::Error for BadAddress {}

impl FromStr for PciAddress {
    type Err = BadAddress;

    /// Accepts `DDDD:BB:DD.F` and the short `BB:DD.F` (domain 0), as the
    /// kernel log and `lspci` print them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadAddress(s.to_string());
        let (rest, func) = s.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (dom, bus, dev) = match parts.as_slice() {
            [d, b, v] => (*d, *b, *v),
            [b, v] => ("0", *b, *v),
            _ => return Err(bad()),
        };
        let hex = |t: &str, max_len: usize| -> Result<u32, BadAddress> {
            if t.is_empty() || t.len() > max_len || !t.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad());
            }
            u32::from_str_radix(t, 16).map_err(|_| bad())
        };
        let domain = hex(dom, 8)?;
        let bus = hex(bus, 2)? as u8;
        let device = hex(dev, 2)?;
        let function = hex(func, 1)?;
        if device > 0x1f || function > 7 {
            return Err(bad());
        }
        Ok(PciAddress {
            domain,
            bus,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// Display controller base class (`0x03xxxx`).
pub const CLASS_DISPLAY: u8 = 0x03;
/// Processing accelerators (`0x12xxxx`), where some compute GPUs report.
pub const CLASS_ACCELERATOR: u8 = 0x12;

pub const VENDOR_NVIDIA: u16 = 0x10de;
pub const VENDOR_AMD: u16 = 0x1002;
pub const VENDOR_INTEL: u16 = 0x8086;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_long_and_short_forms() {
        let a: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(a.to_string(), "0000:01:00.0");
        let b: PciAddress = "c5:1f.7".parse().unwrap();
        assert_eq!(b.to_string(), "0000:c5:1f.7");
        let c: PciAddress = "10000:e1:00.1".parse().unwrap();
        assert_eq!(c.domain, 0x10000);
    }

    #[test]
    fn rejects_malformed_addresses() {
        for s in [
            "",
            "0000:01:00",
            "0000:01:20.0",
            "0000:01:00.8",
            "zz:00.0",
            "0000:001:00.0",
            "pci0000:00",
        ] {
            assert!(s.parse::<PciAddress>().is_err(), "{s}");
        }
    }
}
