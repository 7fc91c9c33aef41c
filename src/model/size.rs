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

#[cfg(test)]
mod tests {
    use super::human;

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
