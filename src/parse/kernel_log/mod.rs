//! Kernel log parsing: PCI resource assignment messages in both the pre-6.8
//! wording and the current one, driver complaints, root bus windows.
//!
//! Pure functions over text; reading the live log or a file is
//! `read::kmsg`'s business.
//!
//! Lines are matched by an anchor found anywhere in the line (`pci
//! DDDD:BB:DD.F: `, `pci_bus DDDD:BB: `, `NVRM: BAR`, ...) rather than by
//! stripping a known prefix: logs arrive from dmesg, `journalctl -k` in its
//! several `-o` formats, `/dev/kmsg` records and bug reports that quote them
//! with `> ` or wrap them, and the anchors are the one thing they share.

use crate::model::pci::{is_bridge, PciAddress, RootBus};
use crate::model::range::Range;
use crate::parse::address::root_bus;
use crate::parse::hex::hex_u64;
use messages::{amdgpu, command_line, e820_usable, not_cpu_addressable, nvrm, realloc_messages};
use resource::{decimal, resource};

mod messages;
mod resource;
#[cfg(test)]
mod tests;

/// Kind of address space a resource line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Mem,
    Io,
}

/// A resource as printed in brackets: `[mem 0x...-0x... 64bit pref]`,
/// `[mem size 0x2000000000 64bit pref]`, `[io  0x1000-0x1fff]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogResource {
    pub space: Space,
    /// `None` for the `size 0x...` form or a zero start.
    pub start: Option<u64>,
    /// Zero for an empty range (`[io  0x1000-0x0fff]`, how the kernel prints
    /// a bridge window it has not opened).
    pub size: u64,
    pub mem64: bool,
    pub prefetchable: bool,
}

/// Which resource of a device a line speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResourceRef {
    /// Standard BAR 0-5 (`BAR 2`, or `reg 0x18` during enumeration).
    Bar(u8),
    /// Expansion ROM (`ROM`, `reg 0x30`, `BAR 6`).
    Rom,
    /// SR-IOV VF BAR (`VF BAR n`, `BAR 7..12` in the old wording).
    VfBar(u8),
    /// A bridge window (`bridge window`, `BAR 13..16` in the old wording).
    BridgeWindow,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// Enumeration: `[vvvv:dddd] type 00 class 0x030200`.
    Function {
        bdf: PciAddress,
        vendor: u16,
        device: u16,
        class: u32,
        header_type: u8,
    },
    /// Enumeration of a resource's size: `reg 0x18: [mem ...]` (old) or
    /// `BAR 2 [mem ...]` without a trailing verdict (new).
    Probed {
        bdf: PciAddress,
        res: ResourceRef,
        resource: LogResource,
    },
    /// `can't assign; no space`, `no space for`, `failed to assign`,
    /// `can't claim`: the resource did not get an address (this time).
    AssignFailed {
        bdf: PciAddress,
        res: ResourceRef,
        resource: Option<LogResource>,
        reason: FailReason,
    },
    /// `...: assigned` / `BAR 2: assigned [mem ...]`.
    Assigned {
        bdf: PciAddress,
        res: ResourceRef,
        resource: LogResource,
    },
    /// `pci_bus 0000:00: root bus resource [mem 0x... window]`.
    RootBusWindow { bus: RootBus, resource: LogResource },
    /// ACPI `host bridge window [...] ([...] ignored, not CPU addressable)`:
    /// the part of the firmware's window the CPU cannot address.
    NotCpuAddressable(Range),
    /// `Some PCI device resources are unassigned, try booting with pci=realloc`.
    ReallocAdvised,
    /// `No. N try to assign unassigned res`.
    ReallocRetry { attempt: u32 },
    /// `NVRM: BARn is 0M @ 0x0 (PCI:dddd:bb:dd.f)`. The driver prints this
    /// line only for a region it found invalid, whatever size it shows.
    NvrmBarZero { bdf: Option<PciAddress>, bar: u8 },
    /// amdgpu: `Not enough PCI address space for a large BAR.`
    AmdgpuLargeBar { bdf: Option<PciAddress> },
    /// `Command line: ...` / `Kernel command line: ...`.
    CommandLine(String),
    /// `BIOS-e820: [mem 0x100000000-0x807fffffff] usable`: RAM as the
    /// firmware reported it (a `mem=` on the command line limits what the
    /// kernel uses, not where the firmware put its window).
    E820Usable(Range),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailReason {
    NoSpace,
    FailedToAssign,
    /// `can't claim`: firmware's address did not fit any upstream window or
    /// conflicted; the kernel will try to assign a new one.
    CantClaim,
}

/// Parses one line of kernel log text. Accepts dmesg (`[    5.23] `),
/// `journalctl -k` (`Nov 29 10:00:00 host kernel: `), `/dev/kmsg`
/// (`6,339,5083,-;`) and bare message text.
#[cfg(test)]
pub(crate) fn parse_line(line: &str) -> Option<Event> {
    match classify(line)? {
        Parsed::Event(e) => Some(e),
        Parsed::Bridge(_) => None,
    }
}

/// Parses a whole log; lines that say nothing of interest are skipped.
/// Invalid UTF-8 must be handled by the caller (`String::from_utf8_lossy`).
///
/// Beyond `parse_line`, this rejoins a message a bug report wrapped onto a
/// second line, and names a bridge's `BAR 7..12` a bridge window: kernels
/// built without SR-IOV number bridge windows from 7, and only the
/// enumeration lines tell a bridge from an endpoint.
pub(crate) fn parse_log(text: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut bridges: Vec<PciAddress> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let mut parsed = classify(line);
        if parsed.is_none() {
            if let Some(next) = lines.peek() {
                if let Some(joined) = rejoin(line, next) {
                    parsed = Some(joined);
                    lines.next();
                }
            }
        }
        match parsed {
            Some(Parsed::Event(e)) => {
                if let Event::Function {
                    bdf,
                    class,
                    header_type,
                    ..
                } = e
                {
                    if is_bridge(Some(class), Some(header_type)) {
                        bridges.push(bdf);
                    }
                }
                events.push(e);
            }
            Some(Parsed::Bridge(bdf)) => bridges.push(bdf),
            None => {}
        }
    }
    if !bridges.is_empty() {
        bridges.sort_unstable();
        bridges.dedup();
        for e in &mut events {
            let (bdf, res) = match e {
                Event::Probed { bdf, res, .. }
                | Event::AssignFailed { bdf, res, .. }
                | Event::Assigned { bdf, res, .. } => (bdf, res),
                _ => continue,
            };
            // A type 1 header has no SR-IOV capability, so a "VF BAR" of a
            // bridge can only be a window numbered without CONFIG_PCI_IOV.
            if matches!(res, ResourceRef::VfBar(_)) && bridges.binary_search(bdf).is_ok() {
                *res = ResourceRef::BridgeWindow;
            }
        }
    }
    events
}

/// What one line yields: an event, or only the fact that a function is a
/// bridge (`PCI bridge to [bus 01]`), which `parse_log` needs.
enum Parsed {
    Event(Event),
    Bridge(PciAddress),
}

/// Substrings at least one of which every line we understand contains; the
/// cheap reject for the bulk of a boot log.
const NEEDLES: [&str; 7] = [
    "pci",
    "e820",
    "NVRM",
    "large BAR",
    "ommand line",
    "addressable",
    "unassigned res",
];

fn classify(line: &str) -> Option<Parsed> {
    if !NEEDLES.iter().any(|n| line.contains(n)) || is_kmsg_continuation(line) {
        return None;
    }
    if let Some(e) = command_line(line)
        .or_else(|| e820_usable(line))
        .or_else(|| nvrm(line))
        .or_else(|| amdgpu(line))
        .or_else(|| not_cpu_addressable(line))
        .or_else(|| realloc_messages(line))
    {
        return Some(Parsed::Event(e));
    }
    if let Some((bdf, msg)) = device_anchor(line) {
        return device_message(bdf, msg);
    }
    if let Some((bus, msg)) = bus_anchor(line) {
        return bus_message(bus, msg).map(Parsed::Event);
    }
    None
}

/// `/dev/kmsg` follows a record with ` SUBSYSTEM=pci` / ` DEVICE=+pci:...`
/// dictionary lines. A wrapped message line also starts with a space, so
/// only an upper-case `KEY=` marks one.
fn is_kmsg_continuation(line: &str) -> bool {
    if !line.starts_with(' ') {
        return false;
    }
    let t = line.trim_start();
    let key_len = t
        .bytes()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
        .count();
    key_len > 0 && t.as_bytes().get(key_len) == Some(&b'=')
}

/// Whether `needle` found at `at` starts a word: `pci 0000:...` but not
/// `+pci:` in a kmsg dictionary or `xpci`.
fn starts_word(line: &str, at: usize) -> bool {
    at == 0
        || !matches!(line.as_bytes()[at - 1],
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'+' | b'=' | b'.' | b'/')
}

/// Finds `pci DDDD:BB:DD.F: ` and returns the address and the message.
fn device_anchor(line: &str) -> Option<(PciAddress, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find("pci ") {
        let at = from + pos;
        from = at + 4;
        if !starts_word(line, at) {
            continue;
        }
        if let Some(found) = split_bdf(&line[from..]) {
            return Some(found);
        }
    }
    None
}

/// `0000:01:00.0: message` -> (address, `message`).
fn split_bdf(s: &str) -> Option<(PciAddress, &str)> {
    let end = s.find(": ")?;
    let token = &s[..end];
    // The longest address is `ffffffff:ff:1f.7`; anything longer is text.
    if token.len() > 16 {
        return None;
    }
    let bdf = token.parse().ok()?;
    Some((bdf, &s[end + 2..]))
}

/// Finds `pci_bus DDDD:BB: ` and returns the bus and the message.
fn bus_anchor(line: &str) -> Option<(RootBus, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find("pci_bus ") {
        let at = from + pos;
        from = at + 8;
        if !starts_word(line, at) {
            continue;
        }
        let rest = &line[from..];
        let Some(end) = rest.find(": ") else { continue };
        if let Some(bus) = root_bus(&rest[..end]) {
            return Some((bus, &rest[end + 2..]));
        }
    }
    None
}

fn bus_message(bus: RootBus, msg: &str) -> Option<Event> {
    let rest = msg.trim_start().strip_prefix("root bus resource ")?;
    let (resource, _) = resource(rest)?;
    Some(Event::RootBusWindow { bus, resource })
}

fn device_message(bdf: PciAddress, msg: &str) -> Option<Parsed> {
    // The old wording indents bridge windows under "PCI bridge to".
    let msg = msg.trim_start();
    if let Some(r) = msg.strip_prefix('[') {
        return function(bdf, r).map(Parsed::Event);
    }
    if msg.starts_with("PCI bridge to ") {
        return Some(Parsed::Bridge(bdf));
    }
    let event = if let Some(r) = msg.strip_prefix("reg ") {
        old_enumeration(bdf, r)
    } else if let Some(r) = msg.strip_prefix("can't claim BAR ") {
        old_claim(bdf, r)
    } else if let Some(r) = msg.strip_prefix("VF BAR ") {
        let (n, r) = decimal(r)?;
        if n > 5 {
            return None;
        }
        new_wording(bdf, |_| Some(ResourceRef::VfBar(n as u8)), r)
    } else if let Some(r) = msg.strip_prefix("BAR ") {
        let (n, r) = decimal(r)?;
        match r.strip_prefix(':') {
            Some(verdict) => old_verdict(bdf, n, verdict),
            None => new_wording(bdf, |space| index_ref(n, space), r),
        }
    } else if let Some(r) = msg.strip_prefix("ROM ") {
        new_wording(bdf, |_| Some(ResourceRef::Rom), r)
    } else if let Some(r) = msg.strip_prefix("bridge window ") {
        new_wording(bdf, |_| Some(ResourceRef::BridgeWindow), r)
    } else {
        None
    };
    event.map(Parsed::Event)
}

/// The kernel's resource index as the old wording prints it: 0-5 BARs, 6 the
/// ROM, 7-12 SR-IOV VF BARs, 13-16 bridge windows. VF BARs are never I/O,
/// so an I/O "BAR 7" is a bridge window of a kernel without SR-IOV support,
/// where windows start at 7 (corpus 17).
fn index_ref(n: u32, space: Space) -> Option<ResourceRef> {
    Some(match n {
        0..=5 => ResourceRef::Bar(n as u8),
        6 => ResourceRef::Rom,
        7..=12 if space == Space::Io => ResourceRef::BridgeWindow,
        7..=12 => ResourceRef::VfBar((n - 7) as u8),
        13..=16 => ResourceRef::BridgeWindow,
        _ => return None,
    })
}

/// `[10de:15f8] type 00 class 0x030200` with optional trailing text
/// (`PCIe Legacy Endpoint` in current kernels). `r` follows the `[`.
fn function(bdf: PciAddress, r: &str) -> Option<Event> {
    let (ids, r) = r.split_once(']')?;
    let (vendor, device) = ids.split_once(':')?;
    if vendor.len() != 4 || device.len() != 4 {
        return None;
    }
    let vendor = hex_u64(vendor)? as u16;
    let device = hex_u64(device)? as u16;
    let r = r.trim_start().strip_prefix("type ")?;
    let (ty, r) = r.split_once(' ').unwrap_or((r, ""));
    if ty.is_empty() || ty.len() > 2 {
        return None;
    }
    let header_type = hex_u64(ty)? as u8;
    let r = r.trim_start().strip_prefix("class ")?;
    let class = r.split_whitespace().next()?;
    let class = hex_u64(class).filter(|c| *c <= 0xff_ffff)? as u32;
    Some(Event::Function {
        bdf,
        vendor,
        device,
        class,
        header_type,
    })
}

/// Old enumeration: `reg 0x14: [mem 0x00000000-0x3ffffffff 64bit pref]`.
/// `r` follows `reg `.
fn old_enumeration(bdf: PciAddress, r: &str) -> Option<Event> {
    let (offset, r) = r.split_once(':')?;
    let offset = hex_u64(offset)?;
    let res = match offset {
        0x10..=0x24 if offset % 4 == 0 => ResourceRef::Bar(((offset - 0x10) / 4) as u8),
        // 0x30 is a type 0 header's ROM register, 0x38 a bridge's.
        0x30 | 0x38 => ResourceRef::Rom,
        // SR-IOV BARs are printed at their offset in the capability, which
        // the log does not give.
        _ => return None,
    };
    let (resource, _) = resource(r)?;
    Some(Event::Probed { bdf, res, resource })
}

/// Old wording: `BAR 1: no space for [mem size 0x400000000 64bit pref]`,
/// `BAR 1: failed to assign [...]`, `BAR 15: assigned [...]`. `r` follows
/// `BAR n:`.
fn old_verdict(bdf: PciAddress, n: u32, r: &str) -> Option<Event> {
    let r = r.trim_start();
    let (reason, r) = if let Some(r) = r.strip_prefix("no space for") {
        (Some(FailReason::NoSpace), r)
    } else if let Some(r) = r.strip_prefix("failed to assign") {
        (Some(FailReason::FailedToAssign), r)
    } else if let Some(r) = r.strip_prefix("can't assign") {
        // `(bogus alignment)` and friends.
        (Some(FailReason::FailedToAssign), r)
    } else if let Some(r) = r.strip_prefix("assigned") {
        (None, r)
    } else {
        return None;
    };
    let parsed = resource(r).map(|(res, _)| res);
    let space = parsed.map_or(Space::Mem, |p| p.space);
    let res = index_ref(n, space)?;
    match reason {
        Some(reason) => Some(Event::AssignFailed {
            bdf,
            res,
            resource: parsed,
            reason,
        }),
        None => Some(Event::Assigned {
            bdf,
            res,
            resource: parsed?,
        }),
    }
}

/// Old wording: `can't claim BAR 1 [mem ...]: no compatible bridge window`
/// (or `: address conflict with ...`). `r` follows `can't claim BAR `.
fn old_claim(bdf: PciAddress, r: &str) -> Option<Event> {
    let (n, r) = decimal(r)?;
    let parsed = resource(r).map(|(res, _)| res);
    let res = index_ref(n, parsed.map_or(Space::Mem, |p| p.space))?;
    Some(Event::AssignFailed {
        bdf,
        res,
        resource: parsed,
        reason: FailReason::CantClaim,
    })
}

/// Current wording: `<name> [resource]` then nothing (enumeration) or `: `
/// and a verdict. `r` follows the name; `res_of` names the resource once
/// its space is known.
fn new_wording(
    bdf: PciAddress,
    res_of: impl FnOnce(Space) -> Option<ResourceRef>,
    r: &str,
) -> Option<Event> {
    let (resource, rest) = resource(r)?;
    let res = res_of(resource.space)?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Some(Event::Probed { bdf, res, resource });
    }
    let verdict = rest.strip_prefix(':')?.trim_start();
    let reason = if let Some(why) = verdict.strip_prefix("can't assign") {
        if why.contains("no space") {
            FailReason::NoSpace
        } else {
            FailReason::FailedToAssign
        }
    } else if verdict.starts_with("failed to assign") {
        FailReason::FailedToAssign
    } else if verdict.starts_with("can't claim") {
        FailReason::CantClaim
    } else if verdict == "assigned" {
        return Some(Event::Assigned { bdf, res, resource });
    } else {
        // `releasing`, `contains BAR 0 for 1 VFs`, ... say nothing new.
        return None;
    };
    Some(Event::AssignFailed {
        bdf,
        res,
        resource: Some(resource),
        reason,
    })
}

/// A bug report may break a message across two lines. Rejoin when the first
/// line has an anchor but no complete message and the second does not start
/// a record of its own; try a space first (wrap at a blank), then none (wrap
/// inside a number).
fn rejoin(line: &str, next: &str) -> Option<Parsed> {
    if next.trim().is_empty()
        || !(device_anchor(line).is_some() || line.contains("pci_bus "))
        || device_anchor(next).is_some()
        || next.contains("pci_bus ")
        || looks_like_record(next)
    {
        return None;
    }
    let head = line.trim_end();
    let tail = next.trim_start();
    [" ", ""].iter().find_map(|sep| {
        let joined = format!("{head}{sep}{tail}");
        classify(&joined)
    })
}

/// A dmesg timestamp `[  1.234]` or a kmsg header `6,339,5083,-;` opens a
/// new record.
fn looks_like_record(line: &str) -> bool {
    let t = line.trim_start();
    if let Some(r) = t.strip_prefix('[') {
        if let Some((ts, _)) = r.split_once(']') {
            let ts = ts.trim();
            if !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return true;
            }
        }
    }
    if let Some((head, _)) = t.split_once(';') {
        let mut fields = head.split(',');
        if fields
            .next()
            .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        {
            return fields.count() >= 2;
        }
    }
    false
}
