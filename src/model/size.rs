//! Byte counts as people read them.

/// `98.5 GiB`, `256 GiB`, `32 MiB`, `256 B`: binary units, one decimal
/// unless the value is a whole number of the unit.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (u, s) in UNITS {
        if bytes >= s {
            let v = bytes as f64 / s as f64;
            return if bytes % s == 0 {
                format!("{} {u}", bytes / s)
            } else {
                format!("{v:.1} {u}")
            };
        }
    }
    format!("{bytes} B")
}

/// The power of two at or above `v`, and 2^63 past it, where the next one
/// would not fit: for sizes read from text, which can be anything.
pub(crate) fn pow2_ceil(v: u64) -> u64 {
    v.checked_next_power_of_two().unwrap_or(1 << 63)
}

#[cfg(test)]
mod tests {
    use super::{human, pow2_ceil};

    #[test]
    fn powers_of_two_stop_at_2_63() {
        assert_eq!(pow2_ceil(0), 1);
        assert_eq!(pow2_ceil(3 << 30), 4 << 30);
        assert_eq!(pow2_ceil(1 << 40), 1 << 40);
        assert_eq!(pow2_ceil((1 << 63) + 1), 1 << 63);
    }

    #[test]
    fn binary_units() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(256), "256 B");
        assert_eq!(human(32 << 20), "32 MiB");
        assert_eq!(human(0x18_a000_0000), "98.5 GiB");
        assert_eq!(human(1 << 40), "1 TiB");
        assert_eq!(human((256 << 30) + (48 << 20)), "256.0 GiB");
    }
}
