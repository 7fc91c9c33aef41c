//! The bracketed resource of a PCI message, `[mem 0x...-0x... 64bit pref]`,
//! the numbers in it, and the function address that opens a message.

use super::{LogResource, Space};
use crate::model::pci::PciAddress;
use crate::parse::hex::hex_u64;

/// Parses `[mem 0x...-0x... 64bit pref]` / `[io  size 0x100]` after optional
/// spaces; returns the resource and the text after `]`. Anything but a
/// `mem` or `io` resource (`[bus 00-ff]`), an unknown flag or a bad number
/// gives `None`: a wrapped line must not parse as a shorter one.
pub(super) fn resource(s: &str) -> Option<(LogResource, &str)> {
    let s = s.trim_start().strip_prefix('[')?;
    let (inner, rest) = s.split_once(']')?;
    let mut words = inner.split_whitespace();
    let space = match words.next()? {
        "mem" => Space::Mem,
        "io" => Space::Io,
        "???" => Space::Other,
        _ => return None,
    };
    let (start, size) = match words.next()? {
        "size" => (None, hex_u64(words.next()?)?),
        range => {
            let (start, end) = hex_range(range)?;
            let size = if end < start {
                0
            } else {
                (end - start).checked_add(1)?
            };
            (Some(start).filter(|s| *s != 0), size)
        }
    };
    let mut res = LogResource {
        space,
        start,
        size,
        mem64: false,
        prefetchable: false,
    };
    while let Some(word) = words.next() {
        match word {
            "64bit" => res.mem64 = true,
            "pref" => res.prefetchable = true,
            // A root bus window, a disabled resource: nothing the
            // diagnosis uses, but part of a valid resource.
            "window" | "disabled" => {}
            // Printed instead of the decoded flags for odd resource types.
            "flags" => {
                words.next();
            }
            _ => return None,
        }
    }
    Some((res, rest))
}

/// `0x1000-0x1fff`, or a single `0x1000` (start == end).
pub(super) fn hex_range(s: &str) -> Option<(u64, u64)> {
    match s.split_once('-') {
        Some((a, b)) => Some((hex_u64(a)?, hex_u64(b)?)),
        None => hex_u64(s).map(|a| (a, a)),
    }
}

/// Leading decimal digits as a number, and the rest.
pub(super) fn decimal(s: &str) -> Option<(u32, &str)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 || len > 9 {
        return None;
    }
    Some((s[..len].parse().ok()?, &s[len..]))
}

/// `0000:01:00.0: message` -> (address, `message`).
pub(super) fn split_bdf(s: &str) -> Option<(PciAddress, &str)> {
    let end = s.find(": ")?;
    let token = &s[..end];
    // The longest address is `ffffffff:ff:1f.7`; anything longer is text.
    if token.len() > 16 {
        return None;
    }
    let bdf = token.parse().ok()?;
    Some((bdf, &s[end + 2..]))
}
