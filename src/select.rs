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
        let device = hex16(b).ok_or_else(|| bad("device is not a 16-bit hex number"))?;
        Ok(Selector::Id { vendor, device })
    }
}
