//! Sizes as people write them on a command line or in a VM configuration:
//! `512M`, `32G`, `1T`, binary units.

/// `4096`, `64K`, `512M`, `32G`, `1T`, `2P` (also `32GiB`, `32GB`, lower
/// case): powers of 1024. A number too large, an empty one or an unknown
/// unit (`12Q`) is an error that says which.
pub(crate) fn size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = t.split_at(digits);
    if num.is_empty() {
        return Err(format!("{s:?} is not a size (expected e.g. 512M, 32G, 1T)"));
    }
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        "P" | "PB" | "PIB" => 50,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?} (expected K, M, G, T or P)"
            ))
        }
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: too large"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size("512M"), Ok(512 << 20));
        assert_eq!(size("32G"), Ok(32 << 30));
        assert_eq!(size("1T"), Ok(1 << 40));
        assert_eq!(size("32GiB"), Ok(32 << 30));
        assert_eq!(size("16g"), Ok(16 << 30));
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size(" 2T "), Ok(2 << 40));
        for bad in [
            "",
            "G",
            "12Q",
            "1.5G",
            "-1G",
            "+1G",
            "99999999999999999999",
            "20000000P",
        ] {
            assert!(size(bad).is_err(), "{bad}");
        }
        assert!(size("12Q").unwrap_err().contains("unknown unit"));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sizes_never_panic_and_round_trip(n in 0u64..1_000_000, unit in 0usize..5, junk in "\\PC{0,12}") {
            let units = ["", "K", "M", "G", "T"];
            prop_assert_eq!(size(&format!("{n}{}", units[unit])), Ok(n << (10 * unit)));
            let _ = size(&junk);
        }
    }
}
