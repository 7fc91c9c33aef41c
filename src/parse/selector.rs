//! GPU selectors as the user writes them: `VENDOR:DEVICE`, `VENDOR:*`,
//! `class:CCSS`, hex.

use crate::model::select::Selector;
use crate::parse::hex::hex_u64;
use std::str::FromStr;

/// A 16-bit hex number of one to four digits, `0x` allowed.
fn hex16(t: &str) -> Option<u16> {
    let digits = t.strip_prefix("0x").unwrap_or(t);
    if digits.len() > 4 {
        return None;
    }
    hex_u64(t).and_then(|v| u16::try_from(v).ok())
}

impl FromStr for Selector {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            format!(
                "bad selector {s:?}: {why} (expected VENDOR:DEVICE, VENDOR:* or class:CCSS, hex)"
            )
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
        assert_eq!("0x1af4:*".parse(), Ok(Selector::Vendor(0x1af4)));
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
            "class:+302",
            "12345:1",
            "10de:2330:1",
            "+10d:*",
            "10de:+233",
            "0x:1",
            ":*",
        ] {
            assert!(bad.parse::<Selector>().is_err(), "{bad}");
        }
    }
}
