//! Kernel log parsing: PCI resource assignment messages in both the pre-6.8
//! wording and the current one, driver complaints, root bus windows.
//!
//! Pure functions over text; reading `/dev/kmsg` or a file is `kmsg`'s and
//! `sources`' business.
//!
//! Lines are matched by an anchor found anywhere in the line (`pci
//! DDDD:BB:DD.F: `, `pci_bus DDDD:BB: `, `NVRM: BAR`, ...) rather than by
//! stripping a known prefix: logs arrive from dmesg, `journalctl -k` in its
//! several `-o` formats, `/dev/kmsg` records and bug reports that quote them
//! with `> ` or wrap them, and the anchors are the one thing they share.

use crate::pci::PciAddress;

/// Kind of address space a resource line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Mem,
    Io,
}

/// A resource as printed in brackets: `[mem 0x...-0x... 64bit pref]`,
/// `[mem size 0x2000000000 64bit pref]`, `[io  0x1000-0x1fff]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogResource {
    pub space: Space,
    /// `None` for the `size 0x...` form or a zero start.
    pub start: Option<u64>,
    /// Zero for an empty range (`[io  0x1000-0x0fff]`, how the kernel prints
    /// a bridge window it has not opened).
    pub size: u64,
    pub mem64: bool,
    pub prefetchable: bool,
    pub window: bool,
    /// The `disabled` flag (`IORESOURCE_DISABLED`).
    pub disabled: bool,
}

/// Which resource of a device a line speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceRef {
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
pub enum Event {
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
    RootBusWindow {
        domain: u32,
        bus: u8,
        resource: LogResource,
    },
    /// ACPI `host bridge window [...] ([...] ignored, not CPU addressable)`:
    /// the part of the firmware's window the CPU cannot address.
    NotCpuAddressable { start: u64, end: u64 },
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    NoSpace,
    FailedToAssign,
    /// `can't claim`: firmware's address did not fit any upstream window or
    /// conflicted; the kernel will try to assign a new one.
    CantClaim,
}

/// Parses one line of kernel log text. Accepts dmesg (`[    5.23] `),
/// `journalctl -k` (`Nov 29 10:00:00 host kernel: `), `/dev/kmsg`
/// (`6,339,5083,-;`) and bare message text.
pub fn parse_line(line: &str) -> Option<Event> {
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
pub fn parse_log(text: &str) -> Vec<Event> {
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
                    if is_bridge(class, header_type) {
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

/// Header type 1 (PCI-to-PCI) or 2 (CardBus), or a bridge class when the
/// header type was garbled.
fn is_bridge(class: u32, header_type: u8) -> bool {
    matches!(header_type & 0x7f, 1 | 2) || matches!(class >> 8, 0x0604 | 0x0607)
}

/// What one line yields: an event, or only the fact that a function is a
/// bridge (`PCI bridge to [bus 01]`), which `parse_log` needs.
enum Parsed {
    Event(Event),
    Bridge(PciAddress),
}

/// Substrings at least one of which every line we understand contains; the
/// cheap reject for the bulk of a boot log.
const NEEDLES: [&str; 6] = [
    "pci",
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
    if let Some((domain, bus, msg)) = bus_anchor(line) {
        return bus_message(domain, bus, msg).map(Parsed::Event);
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

/// Finds `pci_bus DDDD:BB: ` and returns domain, bus and the message.
fn bus_anchor(line: &str) -> Option<(u32, u8, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find("pci_bus ") {
        let at = from + pos;
        from = at + 8;
        if !starts_word(line, at) {
            continue;
        }
        let rest = &line[from..];
        let Some(end) = rest.find(": ") else { continue };
        let Some((dom, bus)) = rest[..end].split_once(':') else {
            continue;
        };
        if dom.is_empty() || dom.len() > 8 || bus.len() != 2 {
            continue;
        }
        if let (Some(d), Some(b)) = (hex_u64(dom), hex_u64(bus)) {
            return Some((d as u32, b as u8, &rest[end + 2..]));
        }
    }
    None
}

fn bus_message(domain: u32, bus: u8, msg: &str) -> Option<Event> {
    let rest = msg.trim_start().strip_prefix("root bus resource ")?;
    let (resource, _) = resource(rest)?;
    Some(Event::RootBusWindow {
        domain,
        bus,
        resource,
    })
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

/// Parses `[mem 0x...-0x... 64bit pref]` / `[io  size 0x100]` after optional
/// spaces; returns the resource and the text after `]`. Anything but a
/// `mem` or `io` resource (`[bus 00-ff]`), an unknown flag or a bad number
/// gives `None`: a wrapped line must not parse as a shorter one.
fn resource(s: &str) -> Option<(LogResource, &str)> {
    let s = s.trim_start().strip_prefix('[')?;
    let (inner, rest) = s.split_once(']')?;
    let mut words = inner.split_whitespace();
    let space = match words.next()? {
        "mem" => Space::Mem,
        "io" => Space::Io,
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
        window: false,
        disabled: false,
    };
    while let Some(word) = words.next() {
        match word {
            "64bit" => res.mem64 = true,
            "pref" => res.prefetchable = true,
            "window" => res.window = true,
            "disabled" => res.disabled = true,
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
fn hex_range(s: &str) -> Option<(u64, u64)> {
    match s.split_once('-') {
        Some((a, b)) => Some((hex_u64(a)?, hex_u64(b)?)),
        None => hex_u64(s).map(|a| (a, a)),
    }
}

/// Hex with an optional `0x` (`%#llx` prints a bare `0`). Overflow, an
/// empty string or a stray character gives `None`.
fn hex_u64(s: &str) -> Option<u64> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    // from_str_radix alone would accept a leading `+`.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Leading decimal digits as a number, and the rest.
fn decimal(s: &str) -> Option<(u32, &str)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 || len > 9 {
        return None;
    }
    Some((s[..len].parse().ok()?, &s[len..]))
}

/// `Command line: ...` (x86 early boot) and `Kernel command line: ...`.
fn command_line(line: &str) -> Option<Event> {
    let at = line.find("ommand line: ")?;
    let head = &line[..at];
    // "Command line:" only opens a message: what precedes it is a log
    // prefix (`]`, `kernel:`, kmsg's `;`) or nothing. "Kernel command
    // line:" is distinctive enough anywhere.
    let opens_message = |before: &str| {
        let before = before.trim_end();
        before.is_empty() || before.ends_with([']', ':', ';', '>'])
    };
    let ok = head.ends_with("Kernel c") || head.strip_suffix('C').is_some_and(opens_message);
    if !ok {
        return None;
    }
    let value = line[at + "ommand line: ".len()..].trim();
    Some(Event::CommandLine(value.to_string()))
}

/// `NVRM: BAR1 is 0M @ 0x0 (PCI:0000:56:00.0)`; the address may be missing
/// or short in reports.
fn nvrm(line: &str) -> Option<Event> {
    let at = line.find("NVRM: BAR")?;
    let (bar, r) = decimal(&line[at + "NVRM: BAR".len()..])?;
    let r = r.strip_prefix(" is ")?;
    let bdf = r.find("(PCI:").and_then(|p| {
        let addr = &r[p + "(PCI:".len()..];
        let end = addr.find(')')?;
        addr[..end].trim().parse().ok()
    });
    Some(Event::NvrmBarZero {
        bdf,
        bar: u8::try_from(bar).ok()?,
    })
}

/// `amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large
/// BAR.`; older kernels print it as `[drm] Not enough ...` with no address.
fn amdgpu(line: &str) -> Option<Event> {
    let at = line.find("Not enough PCI address space for a large BAR")?;
    let head = &line[..at];
    let bdf = head
        .match_indices("amdgpu ")
        .find_map(|(i, _)| split_bdf(&head[i + "amdgpu ".len()..]).map(|(bdf, _)| bdf));
    Some(Event::AmdgpuLargeBar { bdf })
}

/// The forms this takes:
/// `host bridge window [mem A-B window] ([C-D] ignored, not CPU addressable)`,
/// `host bridge window [mem A-B window] (ignored, not CPU addressable)`,
/// the same with a bare `[A-B]` (older x86), and
/// `acpi resource window ([A-B] ignored, not CPU addressable)`.
fn not_cpu_addressable(line: &str) -> Option<Event> {
    let at = line.find("ignored, not CPU addressable")?;
    let head = line[..at].trim_end();
    let bracket = match head.strip_suffix('(') {
        // The whole window is ignored: it is the bracket before the `(`.
        Some(h) => h.trim_end(),
        None => head,
    };
    let bracket = bracket.strip_suffix(']')?;
    let open = bracket.rfind('[')?;
    let mut words = bracket[open + 1..].split_whitespace();
    let mut first = words.next()?;
    match first {
        "io" => return None,
        "mem" => first = words.next()?,
        _ => {}
    }
    let (start, end) = hex_range(first)?;
    if end < start {
        return None;
    }
    Some(Event::NotCpuAddressable { start, end })
}

fn realloc_messages(line: &str) -> Option<Event> {
    if line.contains("Some PCI device resources are unassigned") {
        return Some(Event::ReallocAdvised);
    }
    let at = line.find(" try to assign unassigned res")?;
    let head = &line[..at];
    let digits = head.len() - head.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (attempt, _) = decimal(&head[digits..])?;
    if !head[..digits].ends_with("No. ") {
        return None;
    }
    Some(Event::ReallocRetry { attempt })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bdf(s: &str) -> PciAddress {
        s.parse().unwrap()
    }

    fn mem(start: Option<u64>, size: u64, mem64: bool, pref: bool) -> LogResource {
        LogResource {
            space: Space::Mem,
            start,
            size,
            mem64,
            prefetchable: pref,
            window: false,
            disabled: false,
        }
    }

    fn io(start: Option<u64>, size: u64) -> LogResource {
        LogResource {
            space: Space::Io,
            start,
            size,
            mem64: false,
            prefetchable: false,
            window: false,
            disabled: false,
        }
    }

    fn failed(b: &str, res: ResourceRef, r: LogResource, reason: FailReason) -> Option<Event> {
        Some(Event::AssignFailed {
            bdf: bdf(b),
            res,
            resource: Some(r),
            reason,
        })
    }

    #[test]
    fn old_wording_failures() {
        let cases = [
            (
                "[    6.480355] pci 0000:01:01.0: BAR 1: no space for [mem size 0x400000000 64bit pref]",
                failed("0000:01:01.0", ResourceRef::Bar(1), mem(None, 0x4_0000_0000, true, true), FailReason::NoSpace),
            ),
            (
                "[    6.480606] pci 0000:01:01.0: BAR 1: failed to assign [mem size 0x400000000 64bit pref]",
                failed("0000:01:01.0", ResourceRef::Bar(1), mem(None, 0x4_0000_0000, true, true), FailReason::FailedToAssign),
            ),
            (
                "pci 0000:01:01.0: BAR 0: no space for [mem size 0x01000000]",
                failed("0000:01:01.0", ResourceRef::Bar(0), mem(None, 0x100_0000, false, false), FailReason::NoSpace),
            ),
            (
                "pci 0000:03:00.0: BAR 0: failed to assign [mem size 0x01000000 64bit]",
                failed("0000:03:00.0", ResourceRef::Bar(0), mem(None, 0x100_0000, true, false), FailReason::FailedToAssign),
            ),
            (
                "pci 0000:01:00.0: can't claim BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: no compatible bridge window",
                failed("0000:01:00.0", ResourceRef::Bar(1), mem(Some(0x100_0000_0000), 0x20_0000_0000, true, true), FailReason::CantClaim),
            ),
            (
                "pci 0000:01:00.0: BAR 14: no space for [mem size 0x02800000]",
                failed("0000:01:00.0", ResourceRef::BridgeWindow, mem(None, 0x280_0000, false, false), FailReason::NoSpace),
            ),
            (
                "pci 0000:00:17.4: BAR 7: no space for [io  size 0x1000]",
                failed("0000:00:17.4", ResourceRef::BridgeWindow, io(None, 0x1000), FailReason::NoSpace),
            ),
            (
                "pci 0000:05:00.0: BAR 7: no space for [mem size 0x00400000 64bit pref]",
                failed("0000:05:00.0", ResourceRef::VfBar(0), mem(None, 0x40_0000, true, true), FailReason::NoSpace),
            ),
            (
                "pci 0000:05:00.0: BAR 6: failed to assign [mem size 0x00080000 pref]",
                failed("0000:05:00.0", ResourceRef::Rom, mem(None, 0x8_0000, false, true), FailReason::FailedToAssign),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line), want, "{line}");
        }
    }

    #[test]
    fn old_wording_truncated_failure_keeps_the_verdict() {
        assert_eq!(
            parse_line("[    6.481227] pci 0000:01:01.0: BAR 0: failed to assign [mem size 0x0100"),
            Some(Event::AssignFailed {
                bdf: bdf("0000:01:01.0"),
                res: ResourceRef::Bar(0),
                resource: None,
                reason: FailReason::FailedToAssign,
            })
        );
        assert_eq!(parse_line("pci 0000:01:01.0: BAR 0: failed to"), None);
    }

    #[test]
    fn old_wording_assigned_and_enumeration() {
        assert_eq!(
            parse_line("[    0.221991] pci 0000:00:01.0: BAR 15: assigned [mem 0x800000000-0xaffffffff 64bit pref]"),
            Some(Event::Assigned {
                bdf: bdf("0000:00:01.0"),
                res: ResourceRef::BridgeWindow,
                resource: mem(Some(0x8_0000_0000), 0x3_0000_0000, true, true),
            })
        );
        assert_eq!(
            parse_line("[    5.233943] pci 0000:01:01.0: reg 0x14: [mem 0x00000000-0x3ffffffff 64bit pref]"),
            Some(Event::Probed {
                bdf: bdf("0000:01:01.0"),
                res: ResourceRef::Bar(1),
                resource: mem(None, 0x4_0000_0000, true, true),
            })
        );
        assert_eq!(
            parse_line("pci 0000:01:01.0: reg 0x1c: [mem 0x00000000-0x01ffffff 64bit pref]"),
            Some(Event::Probed {
                bdf: bdf("0000:01:01.0"),
                res: ResourceRef::Bar(3),
                resource: mem(None, 0x200_0000, true, true),
            })
        );
        assert_eq!(
            parse_line("pci 0000:00:02.0: reg 0x30: [mem 0xfffe0000-0xffffffff pref]"),
            Some(Event::Probed {
                bdf: bdf("0000:00:02.0"),
                res: ResourceRef::Rom,
                resource: mem(Some(0xfffe_0000), 0x2_0000, false, true),
            })
        );
        assert_eq!(
            parse_line("pci 0000:00:02.0: reg 0x20: [io  0xc000-0xc01f]"),
            Some(Event::Probed {
                bdf: bdf("0000:00:02.0"),
                res: ResourceRef::Bar(4),
                resource: io(Some(0xc000), 0x20),
            })
        );
        // SR-IOV capability offsets do not name a BAR.
        assert_eq!(
            parse_line("pci 0000:05:00.0: reg 0x184: [mem 0x00000000-0x0003ffff 64bit pref]"),
            None
        );
        // A bridge's window, indented under "PCI bridge to".
        assert_eq!(
            parse_line("[    0.222024] pci 0000:02:01.0:   bridge window [mem 0x800000000-0x9ffffffff 64bit pref]"),
            Some(Event::Probed {
                bdf: bdf("0000:02:01.0"),
                res: ResourceRef::BridgeWindow,
                resource: mem(Some(0x8_0000_0000), 0x2_0000_0000, true, true),
            })
        );
    }

    #[test]
    fn new_wording() {
        let pref64 = |start, size| mem(start, size, true, true);
        let cases = [
            (
                "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space",
                failed("0000:01:00.0", ResourceRef::Bar(2), pref64(None, 0x20_0000_0000), FailReason::NoSpace),
            ),
            (
                "pci 0000:01:00.0: BAR 2 [mem 0x10000000000-0x11fffffffff 64bit pref]: failed to assign",
                failed("0000:01:00.0", ResourceRef::Bar(2), pref64(Some(0x100_0000_0000), 0x20_0000_0000), FailReason::FailedToAssign),
            ),
            (
                "pci 0000:01:00.0: BAR 2 [mem 0x10000000000-0x11fffffffff 64bit pref]: can't claim; no compatible bridge window",
                failed("0000:01:00.0", ResourceRef::Bar(2), pref64(Some(0x100_0000_0000), 0x20_0000_0000), FailReason::CantClaim),
            ),
            (
                "pci 0000:00:02.0: bridge window [mem size 0x2000000000 64bit pref]: can't assign; no space",
                failed("0000:00:02.0", ResourceRef::BridgeWindow, pref64(None, 0x20_0000_0000), FailReason::NoSpace),
            ),
            (
                "[    4.181312] pci 0000:08:00.0: VF BAR 0 [mem size 0x00400000 64bit pref]: can't assign; no space",
                failed("0000:08:00.0", ResourceRef::VfBar(0), pref64(None, 0x40_0000), FailReason::NoSpace),
            ),
            (
                "[    4.190735] pci 0000:c5:00.0: BAR 4 [io  size 0x0100]: can't assign; no space",
                failed("0000:c5:00.0", ResourceRef::Bar(4), io(None, 0x100), FailReason::NoSpace),
            ),
            (
                "pci 0000:02:00.0: ROM [mem 0xfffe0000-0xffffffff pref]: can't claim; no compatible bridge window",
                failed("0000:02:00.0", ResourceRef::Rom, mem(Some(0xfffe_0000), 0x2_0000, false, true), FailReason::CantClaim),
            ),
            (
                "pci 0000:00:1f.1: BAR 0 [mem 0xfd000000-0xfdffffff 64bit]: can't claim; address conflict with PCI Bus 0000:00 [mem 0xfd000000-0xfdffffff]",
                failed("0000:00:1f.1", ResourceRef::Bar(0), mem(Some(0xfd00_0000), 0x100_0000, true, false), FailReason::CantClaim),
            ),
            (
                "pci 0000:04:00.0: BAR 2 [mem 0xf800000000-0xffffffffff 64bit pref]: assigned",
                Some(Event::Assigned {
                    bdf: bdf("0000:04:00.0"),
                    res: ResourceRef::Bar(2),
                    resource: pref64(Some(0xf8_0000_0000), 0x8_0000_0000),
                }),
            ),
            (
                "[    4.190568] pci 0000:c5:00.0: VF BAR 0 [mem 0x62000000000-0x62fffffffff 64bit pref]: assigned",
                Some(Event::Assigned {
                    bdf: bdf("0000:c5:00.0"),
                    res: ResourceRef::VfBar(0),
                    resource: pref64(Some(0x620_0000_0000), 0x10_0000_0000),
                }),
            ),
            (
                "pci 0000:00:02.0: BAR 0 [mem 0xfe000000-0xfeffffff]",
                Some(Event::Probed {
                    bdf: bdf("0000:00:02.0"),
                    res: ResourceRef::Bar(0),
                    resource: mem(Some(0xfe00_0000), 0x100_0000, false, false),
                }),
            ),
            (
                "[    2.078995] kernel: pci 0000:84:00.0: BAR 5 [io  0x5000-0x507f]",
                Some(Event::Probed {
                    bdf: bdf("0000:84:00.0"),
                    res: ResourceRef::Bar(5),
                    resource: io(Some(0x5000), 0x80),
                }),
            ),
            (
                "[    2.079002] kernel: pci 0000:84:00.0: ROM [mem 0xbc000000-0xbc07ffff pref]",
                Some(Event::Probed {
                    bdf: bdf("0000:84:00.0"),
                    res: ResourceRef::Rom,
                    resource: mem(Some(0xbc00_0000), 0x8_0000, false, true),
                }),
            ),
            (
                "[    2.082218] kernel: pci 0000:84:00.0: VF BAR 2 [mem 0xe05b0000000-0xe05bfffffff 64bit pref]",
                Some(Event::Probed {
                    bdf: bdf("0000:84:00.0"),
                    res: ResourceRef::VfBar(2),
                    resource: pref64(Some(0xe05_b000_0000), 0x1000_0000),
                }),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line), want, "{line}");
        }
    }

    #[test]
    fn new_wording_lines_that_say_nothing_new() {
        for line in [
            "[    2.082205] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]: contains BAR 0 for 1 VFs",
            "pci 0000:00:01.0: bridge window [io  0x1000-0x0fff] to [bus 01] add_size 1000",
            "pci 0000:01:00.0: BAR 2 [mem 0x10000000000-0x11fffffffff 64bit pref]: releasing",
            "pci 0000:01:00.0: BAR 2 [bus 00-ff]",
            "pci 0000:84:00.0: Enabling HDA controller",
            "pci 0000:84:00.0: vgaarb: bridge control possible",
            "pnp 00:00: disabling [mem 0xfed40000-0xfed44fff] because it overlaps 0000:03:00.0 BAR 2 [mem 0x00000000-0x1ffffffff 64bit pref]",
            "pci 0000:00:01.0: VF BAR 6 [mem size 0x1000]: can't assign; no space",
        ] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }

    #[test]
    fn resource_flags() {
        let (r, rest) = resource(" [mem 0x2000000000-0xffffffffff window]: x").unwrap();
        assert_eq!(r.start, Some(0x20_0000_0000));
        assert_eq!(r.size, 0xe0_0000_0000);
        assert!(r.window && !r.mem64 && !r.prefetchable && !r.disabled);
        assert_eq!(rest, ": x");
        let (r, _) = resource("[mem 0xfe000000-0xfeffffff 64bit pref disabled]").unwrap();
        assert!(r.mem64 && r.prefetchable && r.disabled);
        let (r, _) = resource("[mem 0xfe000000-0xfeffffff pref window]").unwrap();
        assert!(r.prefetchable && r.window);
        // An empty bridge window and a one-byte range.
        assert_eq!(resource("[io  0x1000-0x0fff]").unwrap().0.size, 0);
        assert_eq!(resource("[io  0x0cf8]").unwrap().0.size, 1);
        assert_eq!(
            resource("[mem 0x00000000-0x0fffffff flags 0x200]")
                .unwrap()
                .0
                .size,
            0x1000_0000
        );
        for bad in [
            "[mem 0x0-0xffffffffffffffff]",
            "[mem 0x10000000000000000-0x1]",
            "[mem size 0x]",
            "[mem size 0x+10]",
            "[mem 0x1000-0x1fff bogus]",
            "[bus 00-ff]",
            "[mem 0x1000-0x1fff",
            "mem 0x1000-0x1fff]",
            "[]",
        ] {
            assert_eq!(resource(bad), None, "{bad}");
        }
        assert_eq!(
            resource("[mem size 0x000000000000000000000000000400]")
                .unwrap()
                .0
                .size,
            0x400
        );
    }

    #[test]
    fn enumeration_of_a_function() {
        let want = Some(Event::Function {
            bdf: bdf("0000:01:01.0"),
            vendor: 0x10de,
            device: 0x15f8,
            class: 0x030200,
            header_type: 0,
        });
        assert_eq!(
            parse_line("[    5.231911] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200"),
            want
        );
        assert_eq!(
            parse_line("pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200 PCIe Legacy Endpoint"),
            want
        );
        assert_eq!(
            parse_line(
                "pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200 conventional PCI endpoint"
            ),
            want
        );
        assert_eq!(
            parse_line("pci 0000:00:1c.0: [8086:a110] type 01 class 0x060400 PCIe Root Port"),
            Some(Event::Function {
                bdf: bdf("0000:00:1c.0"),
                vendor: 0x8086,
                device: 0xa110,
                class: 0x060400,
                header_type: 1,
            })
        );
        for bad in [
            "pci 0000:01:01.0: [10de:15f8] type 00",
            "pci 0000:01:01.0: [10de:15f8 type 00 class 0x030200",
            "pci 0000:01:01.0: [10de1:15f8] type 00 class 0x030200",
            "pci 0000:01:01.0: [10de:15f8] type 100 class 0x030200",
            "pci 0000:01:01.0: [10de:15f8] type 00 class 0x1030200",
        ] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }

    #[test]
    fn line_prefixes() {
        let want = failed(
            "0000:01:00.0",
            ResourceRef::Bar(2),
            mem(None, 0x20_0000_0000, true, true),
            FailReason::NoSpace,
        );
        let msg =
            "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space";
        for prefix in [
            "",
            "[    0.512345] ",
            "[12345.000001] ",
            "Nov 29 10:00:00 host kernel: ",
            "Nov 29 10:00:00.123456 host kernel: ",
            "2024-11-29T10:00:00+0100 host kernel: ",
            "2024-11-29T10:00:00.123456+01:00 gpu-node-7 kernel: ",
            "6,339,5083,-;",
            "4,1234,567890,c;",
            "<6>[    0.5] ",
            "> [    0.5] ",
            ">>>>> ",
            "    ",
            "\t",
            "comment 14: here's my dmesg: [    0.5] ",
        ] {
            assert_eq!(parse_line(&format!("{prefix}{msg}")), want, "{prefix:?}");
        }
        // Carriage returns from a serial console.
        assert_eq!(parse_line(&format!("[    0.5] {msg}\r")), want);
    }

    #[test]
    fn kmsg_dictionary_lines_are_skipped() {
        assert_eq!(parse_line(" SUBSYSTEM=pci"), None);
        assert_eq!(parse_line(" DEVICE=+pci:0000:01:00.0"), None);
        assert!(is_kmsg_continuation(" DEVICE=+pci:0000:01:00.0"));
        assert!(!is_kmsg_continuation(
            "               NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)"
        ));
        let log = "6,339,5083,-;pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space\n SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n";
        assert_eq!(parse_log(log).len(), 1);
    }

    #[test]
    fn root_bus_and_acpi_windows() {
        assert_eq!(
            parse_line("[    0.3] pci_bus 0000:00: root bus resource [mem 0x2000000000-0xffffffffff window]"),
            Some(Event::RootBusWindow {
                domain: 0,
                bus: 0,
                resource: LogResource {
                    window: true,
                    ..mem(Some(0x20_0000_0000), 0xe0_0000_0000, false, false)
                },
            })
        );
        assert_eq!(
            parse_line("pci_bus 0001:e0: root bus resource [io  0xe000-0xffff window]"),
            Some(Event::RootBusWindow {
                domain: 1,
                bus: 0xe0,
                resource: LogResource {
                    window: true,
                    ..io(Some(0xe000), 0x2000)
                },
            })
        );
        assert_eq!(
            parse_line("pci_bus 0000:00: root bus resource [bus 00-ff]"),
            None
        );
        let cases = [
            (
                "acpi PNP0A08:00: host bridge window [mem 0x2000000000-0x11fffffffff window] ([0x10000000000-0x11fffffffff] ignored, not CPU addressable)",
                (0x100_0000_0000, 0x11f_ffff_ffff),
            ),
            (
                "[    6.375368] acpi PNP0A08:07: host bridge window [mem 0x71d60000000-0xffffffffffff window] ([0x80000000000-0xffffffffffff] ignored, not CPU addressable)",
                (0x800_0000_0000, 0xffff_ffff_ffff),
            ),
            (
                "acpi PNP0A03:00: host bridge window [mem 0x10000000000-0x17fffffffff window] (ignored, not CPU addressable)",
                (0x100_0000_0000, 0x17f_ffff_ffff),
            ),
            (
                "pci_root PNP0A08:00: host bridge window [0x2000000000-0x11fffffffff] ([0x10000000000-0x11fffffffff] ignored, not CPU addressable)",
                (0x100_0000_0000, 0x11f_ffff_ffff),
            ),
            (
                "[    0.329069] acpi resource window ([0x100000000-0x17fffffff] ignored, not CPU addressable)",
                (0x1_0000_0000, 0x1_7fff_ffff),
            ),
        ];
        for (line, (start, end)) in cases {
            assert_eq!(
                parse_line(line),
                Some(Event::NotCpuAddressable { start, end }),
                "{line}"
            );
        }
    }

    #[test]
    fn realloc_messages_and_drivers() {
        assert_eq!(
            parse_line("pci_bus 0000:00: Some PCI device resources are unassigned, try booting with pci=realloc"),
            Some(Event::ReallocAdvised)
        );
        assert_eq!(
            parse_line("[    1.0] pci_bus 0000:00: No. 2 try to assign unassigned res"),
            Some(Event::ReallocRetry { attempt: 2 })
        );
        assert_eq!(
            parse_line("No. 13 try to assign unassigned res"),
            Some(Event::ReallocRetry { attempt: 13 })
        );
        assert_eq!(parse_line("No. x try to assign unassigned res"), None);
        assert_eq!(
            parse_line("[    7.5] NVRM: BAR1 is 0M @ 0x0 (PCI:0000:56:00.0)"),
            Some(Event::NvrmBarZero {
                bdf: Some(bdf("0000:56:00.0")),
                bar: 1,
            })
        );
        // Corpus 02: the continuation line a report indented.
        assert_eq!(
            parse_line("               NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)"),
            Some(Event::NvrmBarZero {
                bdf: Some(bdf("0000:07:00.0")),
                bar: 0,
            })
        );
        assert_eq!(
            parse_line("NVRM: BAR2 is 0M @ 0x0 (PCI:56:00.0)"),
            Some(Event::NvrmBarZero {
                bdf: Some(bdf("0000:56:00.0")),
                bar: 2,
            })
        );
        assert_eq!(
            parse_line("NVRM: BAR2 is 0M @ 0x0"),
            Some(Event::NvrmBarZero { bdf: None, bar: 2 })
        );
        assert_eq!(
            parse_line("NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:"),
            None
        );
        assert_eq!(
            parse_line("NVRM: The NVIDIA probe routine failed for 2 device(s)."),
            None
        );
        assert_eq!(
            parse_line("[   12.3] amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large BAR."),
            Some(Event::AmdgpuLargeBar {
                bdf: Some(bdf("0000:83:00.0"))
            })
        );
        assert_eq!(
            parse_line("[drm] Not enough PCI address space for a large BAR."),
            Some(Event::AmdgpuLargeBar { bdf: None })
        );
    }

    #[test]
    fn command_lines() {
        let cl = |s: &str| Some(Event::CommandLine(s.to_string()));
        assert_eq!(
            parse_line(
                "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 pci=realloc"
            ),
            cl("BOOT_IMAGE=/vmlinuz root=/dev/sda1 pci=realloc")
        );
        assert_eq!(
            parse_line("[    0.0] Kernel command line: BOOT_IMAGE=/vmlinuz quiet \r"),
            cl("BOOT_IMAGE=/vmlinuz quiet")
        );
        assert_eq!(
            parse_line("Nov 29 10:00:00 host kernel: Command line: a=b"),
            cl("a=b")
        );
        assert_eq!(parse_line("6,2,0,-;Kernel command line: a=b"), cl("a=b"));
        assert_eq!(parse_line("Command line: "), cl(""));
        assert_eq!(parse_line("systemd: Parsed Command line: x"), None);
    }

    #[test]
    fn corpus_excerpts_as_logs() {
        let log = "\
# header comment mentioning pci 0000:01:01.0: BAR 1: nothing
[    5.231911] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200
[    5.233623] pci 0000:01:01.0: reg 0x10: [mem 0x00000000-0x00ffffff]
[    5.235699] pci 0000:01:01.0: Adding to iommu group 2
[    6.480355] pci 0000:01:01.0: BAR 1: no space for [mem size 0x400000000 64bit pref]
";
        let events = parse_log(log);
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(
            events[2],
            Event::AssignFailed {
                reason: FailReason::NoSpace,
                ..
            }
        ));
    }

    #[test]
    fn healthy_new_format_journal_has_no_failures() {
        let log = "\
[    2.078028] kernel: pci 0000:84:00.0: [10de:2b85] type 00 class 0x030000 PCIe Legacy Endpoint
[    2.078975] kernel: pci 0000:84:00.0: BAR 1 [mem 0xe05c0000000-0xe05cfffffff 64bit pref]
[    2.081207] kernel: pci 0000:84:00.0: Enabling HDA controller
[    2.082204] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]
[    2.082205] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]: contains BAR 0 for 1 VFs
[    2.183919] kernel: pci 0000:84:00.0: vgaarb: bridge control possible
";
        let events = parse_log(log);
        assert_eq!(events.len(), 3, "{events:#?}");
        assert!(events
            .iter()
            .all(|e| matches!(e, Event::Function { .. } | Event::Probed { .. })));
    }

    #[test]
    fn bridge_windows_numbered_from_seven() {
        let log = "\
pci 0000:00:17.3: [15ad:07a0] type 01 class 0x060400
pci 0000:00:02.0: PCI bridge to [bus 01]
pci 0000:00:02.0: BAR 8: no space for [mem size 0x00200000]
pci 0000:00:17.3: BAR 9: failed to assign [mem size 0x00200000 64bit pref]
pci 0000:05:00.0: BAR 9: failed to assign [mem size 0x00200000 64bit pref]
";
        let res: Vec<_> = parse_log(log)
            .into_iter()
            .filter_map(|e| match e {
                Event::AssignFailed { res, .. } => Some(res),
                _ => None,
            })
            .collect();
        assert_eq!(
            res,
            [
                ResourceRef::BridgeWindow,
                ResourceRef::BridgeWindow,
                ResourceRef::VfBar(2)
            ]
        );
    }

    #[test]
    fn wrapped_lines_are_rejoined() {
        let log = "\
pci 0030:01:00.0: BAR 0 [mem 0x6200020000000-0x62000207fffff 64bit pref]: can't claim; address conflict with 0030:01:00.0 [mem
0x6200020000000-0x62000207fffff 64bit pref]
pci 0030:02:01.0: bridge window [mem 0x6200000000000-0x620001fffffff
64bit pref]: can't claim; no compatible bridge window
pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't
  assign; no space
[    1.0] pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit
[    1.1] pci 0000:02:00.0: BAR 2 [mem 0x10000000000-0x11fff
ffffff 64bit pref]: failed to assign
";
        let events = parse_log(log);
        let want = [
            (
                bdf("0030:01:00.0"),
                ResourceRef::Bar(0),
                FailReason::CantClaim,
            ),
            (
                bdf("0030:02:01.0"),
                ResourceRef::BridgeWindow,
                FailReason::CantClaim,
            ),
            (
                bdf("0000:01:00.0"),
                ResourceRef::Bar(2),
                FailReason::NoSpace,
            ),
            (
                bdf("0000:02:00.0"),
                ResourceRef::Bar(2),
                FailReason::FailedToAssign,
            ),
        ];
        assert_eq!(events.len(), want.len(), "{events:#?}");
        for (e, (b, r, why)) in events.iter().zip(want) {
            match e {
                Event::AssignFailed {
                    bdf, res, reason, ..
                } => assert_eq!((*bdf, *res, *reason), (b, r, why)),
                other => panic!("{other:?}"),
            }
        }
        let Event::AssignFailed { resource, .. } = &events[3] else {
            unreachable!()
        };
        assert_eq!(resource.unwrap().start, Some(0x100_0000_0000));
        assert_eq!(resource.unwrap().size, 0x20_0000_0000);
    }

    #[test]
    fn garbage_does_not_panic() {
        for line in [
            "pci ",
            "pci 0000:01:00.0: ",
            "pci 0000:01:00.0: BAR",
            "pci 0000:01:00.0: BAR 99999999999999999999: no space for [mem size 0x1]",
            "pci 0000:01:00.0: BAR 2 [mem size 0x123456789abcdef0123456789abcdef]: can't assign; no space",
            "pci 0000:01:00.0: BAR 2 [mem 0xffff-0x1]: assigned",
            "pci 0000:01:00.0: reg 0x: [mem 0x0-0x1]",
            "pci 0000:01:00.0: [",
            "pci 0000:01:00.0: [:] type  class ",
            "pci_bus : root bus resource [mem 0x0-0x1]",
            "pci_bus 0000:00: root bus resource [",
            "NVRM: BAR",
            "NVRM: BAR1 is 0M @ 0x0 (PCI:",
            "NVRM: BAR999 is 0M",
            "(ignored, not CPU addressable)",
            "] ignored, not CPU addressable",
            "[0x10-0x1] ignored, not CPU addressable",
            "No. 99999999999999 try to assign unassigned res",
            "amdgpu Not enough PCI address space for a large BAR",
            "ommand line: ",
            "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space \u{1F600}",
            "pci\u{1F600} 0000:01:00.0:",
        ] {
            let _ = parse_line(line);
            let _ = parse_log(line);
        }
        assert_eq!(
            parse_line("pci 0000:01:00.0: BAR 2 [mem 0xffff-0x1]: assigned"),
            Some(Event::Assigned {
                bdf: bdf("0000:01:00.0"),
                res: ResourceRef::Bar(2),
                resource: mem(Some(0xffff), 0, false, false),
            })
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Wording {
        Old,
        New,
    }

    fn resource_text(
        space: Space,
        start: Option<u64>,
        size: u64,
        mem64: bool,
        pref: bool,
    ) -> String {
        let mut s = String::from(match space {
            Space::Mem => "mem ",
            Space::Io => "io  ",
        });
        match start {
            None => s.push_str(&format!("size {size:#x}")),
            Some(a) => s.push_str(&format!("{a:#x}-{:#x}", a + size - 1)),
        }
        if mem64 {
            s.push_str(" 64bit");
        }
        if pref {
            s.push_str(" pref");
        }
        format!("[{s}]")
    }

    fn prefix() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            (0u32..100_000, 0u32..1_000_000).prop_map(|(s, us)| format!("[{s:>5}.{us:06}] ")),
            Just("Nov 29 10:00:00 host kernel: ".to_string()),
            Just("2024-11-29T10:00:00.123456+01:00 host kernel: ".to_string()),
            (0u32..8, 0u64..1_000_000).prop_map(|(p, n)| format!("{p},{n},{n},-;")),
            Just("> ".to_string()),
        ]
    }

    /// Fragments that steer random lines into the parsers' deeper branches.
    fn fragment() -> impl Strategy<Value = String> {
        // `select` over constants is far cheaper than a union of `Just`s
        // or regex strategies in a debug build.
        let words = proptest::sample::select(vec![
            "pci ",
            "pci_bus ",
            "0000:01:00.0: ",
            "0000:00: ",
            "BAR ",
            "VF BAR ",
            "reg 0x",
            "can't claim BAR ",
            "[mem ",
            "[io  ",
            "size ",
            "0x",
            "-",
            "]",
            "[",
            ": ",
            " 64bit pref",
            "can't assign; no space",
            "no space for ",
            "assigned",
            "root bus resource ",
            "NVRM: BAR",
            " is 0M @ 0x0 (PCI:",
            "ignored, not CPU addressable)",
            "No. ",
            " try to assign unassigned res",
            "Command line: ",
            "\n",
        ]);
        prop_oneof![
            8 => words.prop_map(str::to_string),
            1 => (any::<u128>(), 1usize..33).prop_map(|(n, w)| format!("{n:0w$x}")),
            1 => proptest::collection::vec(0x20u8..0x7f, 0..8).prop_map(|b| String::from_utf8(b).unwrap()),
            1 => any::<char>().prop_map(String::from),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_text_does_not_panic(s in proptest::collection::vec(any::<char>(), 0..200).prop_map(String::from_iter)) {
            let _ = parse_line(&s);
            let _ = parse_log(&s);
        }

        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_log(&text);
        }

        #[test]
        fn fragment_soup_does_not_panic(parts in proptest::collection::vec(fragment(), 0..24)) {
            let s: String = parts.concat();
            let _ = parse_log(&s);
            for line in s.lines() {
                let _ = parse_line(line);
            }
        }

        #[test]
        fn failures_round_trip_in_both_wordings(
            pre in prefix(),
            bar in 0u8..6,
            is_io in any::<bool>(),
            // Log2 of the size: BARs are power-of-two sized.
            order in 4u32..45,
            base_blocks in 0u64..0x1000,
            sized in any::<bool>(),
            mem64 in any::<bool>(),
            pref in any::<bool>(),
            wording in prop_oneof![Just(Wording::Old), Just(Wording::New)],
            verdict in 0usize..3,
        ) {
            let space = if is_io { Space::Io } else { Space::Mem };
            let (mem64, pref) = if is_io { (false, false) } else { (mem64, pref) };
            let size = 1u64 << order;
            let start = if sized || base_blocks == 0 { None } else { Some(base_blocks << order) };
            let res = resource_text(space, start, size, mem64, pref);
            let msg = match (wording, verdict) {
                (Wording::Old, 0) => format!("BAR {bar}: no space for {res}"),
                (Wording::Old, 1) => format!("BAR {bar}: failed to assign {res}"),
                (Wording::Old, _) => format!("can't claim BAR {bar} {res}: no compatible bridge window"),
                (Wording::New, 0) => format!("BAR {bar} {res}: can't assign; no space"),
                (Wording::New, 1) => format!("BAR {bar} {res}: failed to assign"),
                (Wording::New, _) => format!("BAR {bar} {res}: can't claim; no compatible bridge window"),
            };
            let line = format!("{pre}pci 0000:3a:00.0: {msg}");
            let reason = [FailReason::NoSpace, FailReason::FailedToAssign, FailReason::CantClaim][verdict];
            let want = LogResource {
                space, start, size, mem64, prefetchable: pref, window: false, disabled: false,
            };
            prop_assert_eq!(
                parse_line(&line),
                Some(Event::AssignFailed {
                    bdf: "0000:3a:00.0".parse().unwrap(),
                    res: ResourceRef::Bar(bar),
                    resource: Some(want),
                    reason,
                })
            );
        }

        #[test]
        fn assignments_and_enumeration_round_trip(
            pre in prefix(),
            bar in 0u8..6,
            order in 12u32..48,
            base_blocks in 1u64..0x100,
            mem64 in any::<bool>(),
            pref in any::<bool>(),
            wording in prop_oneof![Just(Wording::Old), Just(Wording::New)],
            probe in any::<bool>(),
        ) {
            let size = 1u64 << order;
            let start = base_blocks << order;
            let res = resource_text(Space::Mem, Some(start), size, mem64, pref);
            let msg = match (wording, probe) {
                (Wording::Old, false) => format!("BAR {bar}: assigned {res}"),
                (Wording::New, false) => format!("BAR {bar} {res}: assigned"),
                (Wording::Old, true) => format!("reg {:#x}: {res}", 0x10 + 4 * bar),
                (Wording::New, true) => format!("BAR {bar} {res}"),
            };
            let got = parse_line(&format!("{pre}pci 0000:00:02.0: {msg}"));
            let want_res = LogResource {
                space: Space::Mem, start: Some(start), size, mem64,
                prefetchable: pref, window: false, disabled: false,
            };
            let bdf: PciAddress = "0000:00:02.0".parse().unwrap();
            let want = if probe {
                Event::Probed { bdf, res: ResourceRef::Bar(bar), resource: want_res }
            } else {
                Event::Assigned { bdf, res: ResourceRef::Bar(bar), resource: want_res }
            };
            prop_assert_eq!(got, Some(want));
        }

        #[test]
        fn root_windows_round_trip(start in 0u64..(1 << 52), len in 1u64..(1 << 52), bus in any::<u8>()) {
            let end = start + len - 1;
            let line = format!("pci_bus 0000:{bus:02x}: root bus resource [mem {start:#x}-{end:#x} window]");
            match parse_line(&line) {
                Some(Event::RootBusWindow { domain: 0, bus: b, resource }) => {
                    prop_assert_eq!(b, bus);
                    prop_assert_eq!(resource.size, len);
                    prop_assert_eq!(resource.start, Some(start).filter(|s| *s != 0));
                    prop_assert!(resource.window);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
