//! The one hexadecimal number parser, and the few helpers that read a
//! number where a message prints it (decimal or `0x` hex after a key).
//!
//! `u64::from_str_radix` alone accepts a leading `+` (so `+10d` would pass
//! for a vendor id); these accept only hex digits, with or without a `0x`
//! prefix as the caller says, never an empty string, and give `None` on
//! overflow.

/// `0x1f`, `0X1f` or `1f`.
pub(crate) fn hex_u64(s: &str) -> Option<u64> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    hex_digits(digits)
}

/// Bare hex digits only (`1f`), as lspci and sysfs paths print them.
pub(crate) fn hex_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// `hex_u64` bounded by `max` (a 16-bit id, a 24-bit class).
pub(crate) fn hex_at_most(s: &str, max: u64) -> Option<u64> {
    hex_u64(s).filter(|v| *v <= max)
}

/// The decimal number that opens `s`.
pub(crate) fn decimal(s: &str) -> Option<u64> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    s[..n].parse().ok()
}

/// The `0x...` number that opens `s` (after spaces).
pub(crate) fn hex_at(s: &str) -> Option<u64> {
    let s = s.trim_start();
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let n = s.bytes().take_while(u8::is_ascii_hexdigit).count();
    hex_u64(&s[..n])
}

/// The number after `key` in `s`, decimal.
pub(crate) fn decimal_after(s: &str, key: &str) -> Option<u64> {
    decimal(&s[s.find(key)? + key.len()..])
}

/// The number after `key` in `s`, `0x` hex.
pub(crate) fn hex_after(s: &str, key: &str) -> Option<u64> {
    hex_at(&s[s.find(key)? + key.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_hex() {
        assert_eq!(hex_u64("0x1f"), Some(0x1f));
        assert_eq!(hex_u64("0X1F"), Some(0x1f));
        assert_eq!(hex_u64("1f"), Some(0x1f));
        assert_eq!(hex_u64("0"), Some(0));
        assert_eq!(hex_u64("0x000000000000000000000400"), Some(0x400));
        assert_eq!(hex_u64("ffffffffffffffff"), Some(u64::MAX));
        for bad in [
            "",
            "0x",
            "+1",
            "-1",
            "0x+1",
            " 1",
            "1 ",
            "1g",
            "10000000000000000",
            "0x0x1",
        ] {
            assert_eq!(hex_u64(bad), None, "{bad:?}");
        }
        assert_eq!(hex_digits("0x1"), None);
        assert_eq!(hex_digits("10de"), Some(0x10de));
        assert_eq!(hex_at_most("0x10000", 0xffff), None);
        assert_eq!(hex_at_most("0xffff", 0xffff), Some(0xffff));
    }
}
