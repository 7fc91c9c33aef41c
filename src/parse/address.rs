//! PCI addresses (`0000:01:00.0`, `01:00.0`) and root buses (`0000:00`).

use crate::model::pci::{PciAddress, RootBus};
use crate::parse::hex::hex_digits;
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadAddress(pub String);

impl fmt::Display for BadAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a PCI address: {:?}", self.0)
    }
}

impl std::error::Error for BadAddress {}

/// Hex digits of at most `max_len` characters.
fn field(t: &str, max_len: usize) -> Option<u32> {
    if t.len() > max_len {
        return None;
    }
    hex_digits(t).and_then(|v| u32::try_from(v).ok())
}

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
        let domain = field(dom, 8).ok_or_else(bad)?;
        let bus = field(bus, 2).ok_or_else(bad)?;
        let device = field(dev, 2).ok_or_else(bad)?;
        let function = field(func, 1).ok_or_else(bad)?;
        if device > 0x1f || function > 7 {
            return Err(bad());
        }
        Ok(PciAddress {
            domain,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// A device as a VM configuration or `--gpu` names it: one function
/// (`0000:41:00.0`, `41:00.0`), or every function of a device (`41:00`,
/// `0000:41:00`, as a Proxmox `hostpci` line may), then given by its
/// function 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeviceSpec {
    pub first: PciAddress,
    pub all_functions: bool,
}

pub(crate) fn device_spec(s: &str) -> Option<DeviceSpec> {
    if let Ok(first) = s.parse() {
        return Some(DeviceSpec {
            first,
            all_functions: false,
        });
    }
    Some(DeviceSpec {
        first: format!("{s}.0").parse().ok()?,
        all_functions: true,
    })
}

/// `0000:00` -> domain 0, bus 0.
pub(crate) fn root_bus(s: &str) -> Option<RootBus> {
    let (d, b) = s.trim().split_once(':')?;
    if b.len() != 2 {
        return None;
    }
    Some(RootBus {
        domain: field(d, 8)?,
        bus: field(b, 2)? as u8,
    })
}

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
            "+000:01:00.0",
            "0000:+1:00.0",
            "0000:01:00.+",
            ":01:00.0",
        ] {
            assert!(s.parse::<PciAddress>().is_err(), "{s}");
        }
    }

    #[test]
    fn a_function_or_every_function_of_a_device() {
        let spec = |s: &str| device_spec(s).map(|d| (d.first.to_string(), d.all_functions));
        assert_eq!(spec("0000:41:00.1"), Some(("0000:41:00.1".into(), false)));
        assert_eq!(spec("41:00.0"), Some(("0000:41:00.0".into(), false)));
        assert_eq!(spec("41:00"), Some(("0000:41:00.0".into(), true)));
        assert_eq!(spec("0000:41:00"), Some(("0000:41:00.0".into(), true)));
        for bad in ["", "41", "41.00", "41:00.x", "zz:00", "0000:41:00.0.0"] {
            assert_eq!(spec(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn root_buses() {
        assert_eq!(root_bus("0000:00"), Some(RootBus { domain: 0, bus: 0 }));
        assert_eq!(
            root_bus(" 10000:e1 "),
            Some(RootBus {
                domain: 0x10000,
                bus: 0xe1
            })
        );
        for bad in [
            "", "0000", "0000:0", "0000:000", ":00", "+000:00", "0000:+0",
        ] {
            assert_eq!(root_bus(bad), None, "{bad:?}");
        }
    }
}
