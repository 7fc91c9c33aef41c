//! A device's `Region` lines (and `-v`'s unnumbered `Memory at` /
//! `I/O ports at`): each BAR's space, width, prefetchability, address
//! (or why there is none) and size.

use super::{hex, LspciRegion, RegionAddr};

/// `Region 1: Memory at <unassigned> (64-bit, prefetchable) [size=32G]`,
/// `Memory at 83000000 (32-bit, non-prefetchable) [size=16M]` (`-v`),
/// `I/O ports at e000 [size=128]`, with `[virtual]`, `[disabled]`.
pub(super) fn region_line(t: &str, next_index: u8) -> Option<LspciRegion> {
    let (index, mut r) = match t.strip_prefix("Region ") {
        Some(r) => {
            let (n, r) = r.split_once(':')?;
            let n: u8 = n.trim().parse().ok()?;
            if n > 5 {
                return None;
            }
            (Some(n), r.trim_start())
        }
        None => (None, t),
    };
    let mut virtual_ = false;
    loop {
        if let Some(x) = r.strip_prefix("[virtual]") {
            virtual_ = true;
            r = x.trim_start();
        } else if let Some(x) = r.strip_prefix("[enhanced]") {
            r = x.trim_start();
        } else {
            break;
        }
    }
    let (io, r) = if let Some(x) = r.strip_prefix("Memory at ") {
        (false, x)
    } else if let Some(x) = r.strip_prefix("I/O ports at ") {
        (true, x)
    } else {
        return None;
    };
    let (plain, tags) = split_tags(r);
    let mut words = plain.splitn(2, ' ');
    let addr = words.next()?;
    let kind = words.next().unwrap_or("").trim();
    if tags.contains(&"virtual") {
        virtual_ = true;
    }
    let (mut mem64, mut prefetchable) = (false, false);
    // Only lspci's own tokens stand without a kind: a bare `Memory at 1000`
    // is no region line.
    let bare = kind.is_empty() && addr.starts_with('<');
    if !io && !bare {
        // `(64-bit, prefetchable)`, `(32-bit, non-prefetchable)`,
        // `(low-1M, ...)`, `(type 3, ...)`; a bare `Memory at <ignored>`
        // (a paste that cut the rest) has none, and its type stays unknown.
        let kind = kind.strip_prefix('(')?.strip_suffix(')')?;
        let (width, pref) = kind.split_once(',')?;
        mem64 = width.trim() == "64-bit";
        prefetchable = match pref.trim() {
            "prefetchable" => true,
            "non-prefetchable" => false,
            _ => return None,
        };
    }
    let index = index.unwrap_or(next_index);
    if index > 5 {
        return None;
    }
    Some(LspciRegion {
        index,
        index_inferred: t.strip_prefix("Region ").is_none(),
        io,
        address: address(addr, virtual_)?,
        mem64,
        prefetchable,
        size: tags
            .iter()
            .find_map(|t| t.strip_prefix("size="))
            .and_then(size),
        typed: io || !bare,
    })
}

fn address(s: &str, virtual_: bool) -> Option<RegionAddr> {
    Some(match s {
        "<unassigned>" => RegionAddr::Unassigned,
        "<ignored>" => RegionAddr::Ignored,
        _ => {
            let a = hex(s)?;
            if virtual_ {
                RegionAddr::Virtual(a)
            } else {
                RegionAddr::Assigned(a)
            }
        }
    })
}

/// `32G`, `16M`, `128K`, `256`, `1T`; older lspci printed sizes of 2 GiB and
/// more as bare hex (`400000000`). A bare decimal is always below 1024, so
/// a longer bare number is that hex form.
pub(super) fn size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, shift) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 10),
        b'M' => (&s[..s.len() - 1], 20),
        b'G' => (&s[..s.len() - 1], 30),
        b'T' => (&s[..s.len() - 1], 40),
        b'P' => (&s[..s.len() - 1], 50),
        b'E' => (&s[..s.len() - 1], 60),
        _ if s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) => return hex(s),
        _ => (s, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1u64.checked_shl(shift)?)
}

/// Separates `[...]` tags from the rest of a field's text.
fn split_tags(s: &str) -> (String, Vec<&str>) {
    let mut plain = String::new();
    let mut tags = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        plain.push_str(&rest[..open]);
        let Some(close) = rest[open..].find(']') else {
            rest = &rest[open..];
            break;
        };
        tags.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    plain.push_str(rest);
    (plain.trim().to_string(), tags)
}
