//! Kernel log parsing: PCI resource assignment messages in both the pre-6.8
//! wording and the current one, driver complaints, root bus windows.
//!
//! Pure functions over text; reading the live log or a file is
//! `read::kmsg`'s business.
//!
//! Lines are matched by an anchor found anywhere in the line (`pci
//! DDDD:BB:DD.F: `, `pci_bus DDDD:BB: `, `NVRM: BAR`, ...) rather than by
//! stripping a known prefix: logs arrive from dmesg (with `-T`/`-H` stamps
//! or none), `journalctl -k` in its several `-o` formats, syslog files with
//! host names, `/dev/kmsg` records, logfmt `msg="..."` wrappers and bug
//! reports that quote, indent or wrap them, and the anchors are the one
//! thing they share. Once a driver is bound to a device, the PCI core
//! prints through it: `amdgpu 0000:0b:00.0: BAR 0: ...`, `pcieport ...`,
//! `vfio-pci ...`; the driver's name takes the place of `pci`.
//!
//! Wordings, oldest first: 2.6.12 (`PCI: Cannot allocate resource region N
//! of device ...`, `got res [...] for BAR N of ...`, `PCI: moved device`),
//! 2.6.2x (`PCI: 0000:02:00.0 reg 14 32bit mmio: [a, b]`, `BAR 1: can't
//! allocate mem resource [...]`), the `BAR N: no space for` / `failed to
//! assign` / `assigned` of 2.6.3x to 6.7, and 6.8's `BAR N [mem ...]:
//! can't assign; no space`. The last word on a BAR wins: a failure that a
//! later line assigns (a resizable-BAR attempt that fell back, a realloc
//! retry) is an assigned BAR.

use crate::model::pci::{is_bridge, PciAddress, RootBus, VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA};
use crate::model::range::Range;
use crate::parse::address::root_bus;
use device::device_message;
use early::old_pci_message;
use messages::{
    amdgpu, command_line, e820_usable, not_cpu_addressable, nvrm, realloc_messages, vgaarb_added,
};
use resource::resource;

mod device;
mod early;
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
    /// `BAR 7..12` before `parse_log` has decided: a VF BAR, or a bridge
    /// window of a kernel built without SR-IOV (which numbers windows from
    /// 7). Never in `parse_log`'s output.
    Numbered(u8),
    /// `BAR 13..16`: a bridge window as a kernel with SR-IOV numbers it.
    /// `parse_log` gives `BridgeWindow`.
    SriovNumberedWindow,
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
        /// The whole seconds of the line's timestamp (`[  150.161565]`),
        /// where it has one: a function enumerated long after boot came
        /// with a rescan or a hot-add.
        secs: Option<u64>,
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
    /// `NVRM: BARn is 0M @ 0x0 (PCI:dddd:bb:dd.f)`: the driver found a
    /// region invalid. `n` is the driver's count of memory regions, not a
    /// PCI BAR index (a 64-bit BAR takes two). `zero`: the region has no
    /// size, i.e. no resource (unassigned); a region with a size has an
    /// address the driver could not use (above 4 GiB for old drivers).
    NvrmBar {
        bdf: Option<PciAddress>,
        bar: u8,
        zero: bool,
    },
    /// A GPU driver (`nvidia`, `nouveau`, `amdgpu`, `radeon`, `i915`, `xe`)
    /// prints through the device: it is bound to it, so it is that
    /// vendor's GPU.
    GpuDriver { bdf: PciAddress, vendor: u16 },
    /// `Boot video device`, `vgaarb: setting as boot VGA device`,
    /// `vgaarb: VGA device added`: a VGA-class display device.
    VgaDevice { bdf: PciAddress },
    /// amdgpu: `Not enough PCI address space for a large BAR.`
    AmdgpuLargeBar { bdf: Option<PciAddress> },
    /// NVIDIA's `NVRM: This PCI I/O region assigned to your NVIDIA device is
    /// invalid`, the header its `BARn is 0M` line follows (where a report
    /// kept it).
    NvrmInvalid,
    /// `nvidia: probe of 0000:01:00.0 failed with error -1`: a GPU driver
    /// gave up on the device.
    ProbeFailed { bdf: PciAddress, vendor: u16 },
    /// `NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0xffff:667)`:
    /// the driver bound the GPU and could not bring it up (a BAR it cannot
    /// use is one cause, not the only one).
    InitFailed { bdf: PciAddress },
    /// A GPU driver says it runs on its BARs: it tried to grow one and kept
    /// the one it had (`xe ...: Failed to resize BAR2 to 16384M (-ENOSPC)`,
    /// `i915 ...: Small BAR device`), or it reports the VRAM it mapped
    /// (`amdgpu ...: VRAM: 8176M ...`). The BARs have their addresses.
    DriverMapped { bdf: PciAddress },
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
/// (`6,339,5083,-;`) and bare message text. The message's event, not the
/// GPU driver it is printed through.
#[cfg(test)]
pub(crate) fn parse_line(line: &str) -> Option<Event> {
    parse_log(line)
        .into_iter()
        .find(|e| !matches!(e, Event::GpuDriver { .. }))
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
    let mut drivers: Vec<PciAddress> = Vec::new();
    let mut old_resource: Option<(usize, LogResource)> = None;
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let anchor = device_anchor(line);
        let mut parsed = classify_anchored(line, anchor);
        if parsed.is_none() {
            if let Some((_, next)) = lines.peek() {
                if let Some(joined) = rejoin(line, next) {
                    parsed = Some(joined);
                    lines.next();
                }
            }
        }
        if let Some((bdf, vendor)) =
            anchor.and_then(|(word, bdf, _)| Some((bdf, gpu_driver(word)?)))
        {
            if !drivers.contains(&bdf) {
                drivers.push(bdf);
                events.push(Event::GpuDriver { bdf, vendor });
            }
        }
        match parsed {
            Some(Parsed::Event(mut e)) => {
                if let Event::AssignFailed {
                    resource: resource @ None,
                    reason: FailReason::CantClaim,
                    ..
                } = &mut e
                {
                    if let Some((at, r)) = old_resource.take() {
                        if n - at <= 2 {
                            *resource = Some(r);
                        }
                    }
                }
                if let Event::Function {
                    bdf,
                    class,
                    header_type,
                    ref mut secs,
                    ..
                } = e
                {
                    *secs = enumeration_secs(line, bdf);
                    if is_bridge(Some(class), Some(header_type)) {
                        bridges.push(bdf);
                    }
                }
                events.push(e);
            }
            Some(Parsed::Bridge(bdf)) => bridges.push(bdf),
            Some(Parsed::OldResource(r)) => old_resource = Some((n, r)),
            None => {}
        }
    }
    resolve_numbered(&mut events, bridges);
    events
}

/// The whole seconds of the timestamp before `bdf`'s enumeration in
/// `line` (`[  150.161565] pci 0000:53:00.0: [8086:56c0] type 00 ...`,
/// also behind a syslog or journal prefix): the first bracket before the
/// address, up to its decimal point.
fn enumeration_secs(line: &str, bdf: PciAddress) -> Option<u64> {
    let at = line.find(&format!("{bdf}: ["))?;
    let head = &line[..at];
    let open = head.find('[')?;
    let close = open + head[open..].find(']')?;
    let secs = head[open + 1..close].trim().split('.').next()?;
    secs.parse().ok()
}

/// Names each `BAR 7..12` memory resource (`ResourceRef::Numbered`). A
/// type 1 header has no SR-IOV capability, so on a bridge it is a window
/// numbered without CONFIG_PCI_IOV; so it is everywhere when the log shows
/// that numbering (an I/O "BAR 7..12", which no VF BAR can be) and never
/// the SR-IOV one (windows as BAR 13..16). Otherwise it is a VF BAR.
fn resolve_numbered(events: &mut [Event], mut bridges: Vec<PciAddress>) {
    let refs = || {
        events.iter().filter_map(|e| match e {
            Event::Probed { res, resource, .. } | Event::Assigned { res, resource, .. } => {
                Some((*res, Some(resource.space)))
            }
            Event::AssignFailed { res, resource, .. } => Some((*res, resource.map(|r| r.space))),
            _ => None,
        })
    };
    let windows_from_7 = refs()
        .any(|(r, space)| matches!(r, ResourceRef::Numbered(_)) && space == Some(Space::Io))
        && !refs().any(|(r, _)| r == ResourceRef::SriovNumberedWindow);
    bridges.sort_unstable();
    bridges.dedup();
    for e in events.iter_mut() {
        let (bdf, res, space) = match e {
            Event::Probed { bdf, res, resource } | Event::Assigned { bdf, res, resource } => {
                (bdf, res, Some(resource.space))
            }
            Event::AssignFailed {
                bdf, res, resource, ..
            } => (bdf, res, resource.map(|r| r.space)),
            _ => continue,
        };
        match *res {
            ResourceRef::Numbered(n) => {
                *res = if space == Some(Space::Io)
                    || windows_from_7
                    || bridges.binary_search(bdf).is_ok()
                {
                    ResourceRef::BridgeWindow
                } else {
                    ResourceRef::VfBar(n - 7)
                }
            }
            ResourceRef::SriovNumberedWindow => *res = ResourceRef::BridgeWindow,
            _ => {}
        }
    }
}

/// The vendor of a GPU driver by the name it prints under (`nvidia`,
/// `nouveau`, `amdgpu`, `radeon`, `i915`, `xe`).
fn gpu_driver(word: &str) -> Option<u16> {
    Some(match word {
        "nvidia" | "nouveau" => VENDOR_NVIDIA,
        "amdgpu" | "radeon" => VENDOR_AMD,
        "i915" | "xe" => VENDOR_INTEL,
        _ => return None,
    })
}

/// A GPU driver's note that it runs on its BARs: a resize it tried failed
/// and the old BAR stayed (`Failed to resize BAR2 to 16384M (-ENOSPC)`),
/// it runs with the small BAR (`Small BAR device`, i915/xe), or it reports
/// the VRAM it mapped (amdgpu's `VRAM: 8176M 0x...`, `Detected VRAM`).
fn driver_mapped(msg: &str) -> bool {
    [
        "Failed to resize BAR",
        "BAR resize failed",
        "Small BAR device",
        "Using small BAR",
        "VRAM: ",
        "Detected VRAM RAM",
    ]
    .iter()
    .any(|m| msg.contains(m))
}

/// `nvidia: probe of 0000:01:00.0 failed with error -1` (the driver core
/// prints it under the driver's name, which is a GPU driver's here).
fn probe_failed(line: &str) -> Option<Event> {
    // A `#` line is a report's own heading or title, not the log.
    if line.starts_with('#') {
        return None;
    }
    let at = line.find(": probe of ")?;
    let head = line[..at].trim_end();
    let word = head.rsplit([' ', ']']).next()?;
    let vendor = gpu_driver(word)?;
    let rest = &line[at + ": probe of ".len()..];
    let (addr, tail) = rest.split_once(' ')?;
    if !tail.starts_with("failed with error") {
        return None;
    }
    Some(Event::ProbeFailed {
        bdf: addr.parse().ok()?,
        vendor,
    })
}

/// What one line yields: an event, or only the fact that a function is a
/// bridge (`PCI bridge to [bus 01]`), which `parse_log` needs.
enum Parsed {
    Event(Event),
    Bridge(PciAddress),
    /// 2.6.12's `PCI: Resource 80000000-8fffffff (f=1208, d=1, p=1)`,
    /// printed just before the `Cannot allocate resource region` it
    /// explains (which names no resource itself).
    OldResource(LogResource),
}

/// Substrings at least one of which every line without a device anchor
/// that we understand contains; the cheap reject for the bulk of a boot
/// log. (`PCI` covers `PCI: ...` of old kernels, `Some PCI device`,
/// amdgpu's `PCI address space` and vgaarb's `PCI:`; `BAR` covers NVRM and
/// `got res ... for BAR`.)
const NEEDLES: [&str; 7] = [
    "pci",
    "PCI",
    "BAR",
    "e820",
    "ommand line",
    "addressable",
    "unassigned res",
];

fn classify(line: &str) -> Option<Parsed> {
    classify_anchored(line, device_anchor(line))
}

/// `classify` with the line's device anchor already found. A line with
/// one is a device's message (or amdgpu's large-BAR complaint, which is
/// printed through the device); the messages without one are tried only
/// when the line has one of their words.
fn classify_anchored(line: &str, anchor: Option<(&str, PciAddress, &str)>) -> Option<Parsed> {
    if is_kmsg_continuation(line) {
        return None;
    }
    if let Some((word, bdf, msg)) = anchor {
        if word == "amdgpu" && msg.contains("Not enough PCI address space for a large BAR") {
            return Some(Parsed::Event(Event::AmdgpuLargeBar { bdf: Some(bdf) }));
        }
        // Newer NVIDIA drivers name the GPU first: `NVRM: GPU
        // 0000:01:00.0: BAR0 is 0M @ 0x0 (PCI:0000:01:00.0)`.
        if word == "GPU" && line.contains("NVRM: GPU ") {
            if msg.contains("RmInitAdapter failed") || msg.contains("rm_init_adapter failed") {
                return Some(Parsed::Event(Event::InitFailed { bdf }));
            }
            if let Some(Event::NvrmBar {
                bdf: named,
                bar,
                zero,
            }) = nvrm(&format!("NVRM: {msg}"))
            {
                return Some(Parsed::Event(Event::NvrmBar {
                    bdf: named.or(Some(bdf)),
                    bar,
                    zero,
                }));
            }
            return None;
        }
        if gpu_driver(word).is_some() && driver_mapped(msg) {
            return Some(Parsed::Event(Event::DriverMapped { bdf }));
        }
        return device_message(bdf, msg);
    }
    if line.contains("NVRM: This PCI I/O region assigned to your NVIDIA device is invalid") {
        return Some(Parsed::Event(Event::NvrmInvalid));
    }
    if let Some(e) = probe_failed(line) {
        return Some(Parsed::Event(e));
    }
    if !NEEDLES.iter().any(|n| line.contains(n)) {
        return None;
    }
    if let Some(e) = command_line(line)
        .or_else(|| e820_usable(line))
        .or_else(|| nvrm(line))
        .or_else(|| amdgpu(line))
        .or_else(|| not_cpu_addressable(line))
        .or_else(|| realloc_messages(line))
        .or_else(|| vgaarb_added(line))
    {
        return Some(Parsed::Event(e));
    }
    if let Some(p) = old_pci_message(line) {
        return Some(p);
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

/// Whether `needle` found at `at` starts a word: `pci_bus 0000:00` but not
/// `+pci_bus` in a kmsg dictionary or `xpci_bus`.
fn starts_word(line: &str, at: usize) -> bool {
    at == 0
        || !matches!(line.as_bytes()[at - 1],
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'+' | b'=' | b'.' | b'/')
}

/// A driver's name as the kernel prints it before a device: `pci`,
/// `pcieport`, `vfio-pci`, `xhci_hcd`, `snd_hda_intel`, `i915`.
fn is_driver_name(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 32
        && word.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Finds `NAME DDDD:BB:DD.F: ` (NAME is `pci` or the bound driver's name)
/// and returns the name, the address and the message.
fn device_anchor(line: &str) -> Option<(&str, PciAddress, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find(':') {
        let colon = from + pos;
        from = colon + 1;
        if line.as_bytes().get(colon + 1) != Some(&b' ') {
            continue;
        }
        from = colon + 2;
        let head = &line[..colon];
        let Some(space) = head.rfind(' ') else {
            continue;
        };
        let token = &head[space + 1..];
        // `DDDD:BB:DD.F` and longer domains; a bare `BB:DD.F` is lspci's.
        if !(12..=16).contains(&token.len()) || token.bytes().filter(|b| *b == b':').count() != 2 {
            continue;
        }
        let Ok(bdf) = token.parse::<PciAddress>() else {
            continue;
        };
        let word_start = head[..space]
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || "_-.".contains(*c)))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &head[word_start..space];
        if is_driver_name(word) && starts_word(line, word_start) {
            return Some((word, bdf, &line[from..]));
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
