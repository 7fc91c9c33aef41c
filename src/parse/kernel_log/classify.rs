//! Which event a line is: found by its anchor (`pci DDDD:BB:DD.F: `,
//! `pci_bus DDDD:BB: `, `NVRM:`, a GPU driver's name), or by the words of
//! the messages that have none; and a message a bug report wrapped onto a
//! second line, joined again.

use super::device::device_message;
use super::driver::{
    amdgpu_started, amdgpu_unnamed_doubt, driver_note, nouveau_firmware, nvidia_resize,
    nvidia_resize_lost, ProbeDoubt,
};
use super::early::old_pci_message;
use super::messages::{
    amdgpu, command_line, e820_entry, empty_mapping, no_video_bios, not_cpu_addressable,
    nvidia_probes_failed, nvidia_running, nvrm, nvrm_cause, nvrm_header, nvrm_named_reason,
    realloc_messages, vgaarb_added,
};
use super::resource::resource;
use super::{DriverCause, Event, FailReason, Parsed};
use crate::model::pci::{PciAddress, RootBus, VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA};
use crate::parse::address::root_bus;
use crate::parse::words::Needle;

/// The vendor of a GPU driver by the name it prints under (`nvidia`,
/// `nouveau`, `amdgpu`, `radeon`, `i915`, `xe`).
pub(super) fn gpu_driver(word: &str) -> Option<u16> {
    Some(match word {
        "nvidia" | "nouveau" => VENDOR_NVIDIA,
        "amdgpu" | "radeon" => VENDOR_AMD,
        "i915" | "xe" => VENDOR_INTEL,
        _ => return None,
    })
}

/// A driver name printed through a device that says the device is no GPU:
/// neither a GPU driver (`gpu_driver`), nor the PCI core's and port
/// services' names, nor a driver that takes any device it is given
/// (passthrough stubs, any VFIO driver), nor one of a display adapter (a
/// framebuffer or DRM driver: an emulated or BMC display, or an old
/// GPU's), nor one of an accelerator (class 0x12, which the GPU selection
/// takes). The word is the driver's `dev_driver_string()` as `dev_printk`
/// prints it, so it must open the kernel's message (`opens_message`): a
/// word before an address inside another program's message (QEMU's `vfio
/// 0000:01:00.0: ...`, libvirt's `PCI device 0000:01:00.0`) is none.
pub(super) fn other_driver<'l>(line: &'l str, word: &'l str) -> Option<&'l str> {
    const NOT_DECISIVE: [&str; 27] = [
        // The PCI core and its port services (drivers/pci/pcie/portdrv.c);
        // NVIDIA's `NVRM: GPU 0000:01:00.0:` prefix.
        "pci",
        "pcieport",
        "shpchp",
        "pciehp",
        "acpiphp",
        "GPU",
        // Drivers that take whatever device they are given (and any name
        // with `vfio` in it: vfio-pci's variant drivers, nvgrace-gpu-vfio-pci).
        "pci-stub",
        "pci-pf-stub",
        "pciback",
        "xen-pciback",
        "virtio-pci",
        "uio_pci_generic",
        // Display adapters' drivers without the fb/drm ending.
        "qxl",
        "cirrus",
        "cirrus-qemu",
        "vmwgfx",
        "ast",
        "mgag200",
        "gma500",
        "vboxvideo",
        "bochs",
        // Accelerators' drivers (class 0x12: Gaudi, Intel's and AMD's NPUs,
        // Qualcomm AI 100, Tenstorrent).
        "habanalabs",
        "intel_vpu",
        "ivpu",
        "amdxdna",
        "qaic",
        "tenstorrent",
    ];
    if gpu_driver(word).is_some()
        || NOT_DECISIVE.contains(&word)
        || word.contains("vfio")
        || !opens_message(line, word)
    {
        return None;
    }
    let display = ["fb", "drm", "gpu", "vga", "video"].iter().any(|end| {
        word.len() >= end.len() && word[word.len() - end.len()..].eq_ignore_ascii_case(end)
    });
    (!display).then_some(word)
}

/// Whether `word` (a slice of `line`) opens the kernel's message: nothing
/// before it but a record's prefix, which ends in a dmesg stamp's `]`, a
/// syslog or journal `kernel:`, or a `/dev/kmsg` record's `;`.
fn opens_message(line: &str, word: &str) -> bool {
    let Some(at) = (word.as_ptr() as usize).checked_sub(line.as_ptr() as usize) else {
        return false;
    };
    let Some(head) = line.get(..at) else {
        return false;
    };
    let head = head.trim_end();
    head.is_empty() || head.ends_with(']') || head.ends_with("kernel:") || head.ends_with(';')
}

/// A character of a driver's name (`nvidia`, `vfio-pci`, `snd_hda_intel`).
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-.".contains(c)
}

/// The driver core's word that a driver's probe of a device failed, as it
/// prints it under the driver's name (drivers/base/dd.c): `nvidia: probe
/// of 0000:01:00.0 failed with error -1`. The driver's name, the device's
/// address as printed, and the text from `failed with error` on. 5.x
/// prints it through the device instead (`probe with driver ...`), which
/// `device_anchor` opens.
pub(crate) fn probe_of(line: &str) -> Option<(&str, &str, &str)> {
    // A `#` line is a report's own heading or title, not the log.
    if line.starts_with('#') {
        return None;
    }
    static PROBE_OF: Needle = Needle::new(": probe of ");
    let at = PROBE_OF.find(line)?;
    // The driver's name is the word before the colon, opened by the line, a
    // blank, a stamp's `]`, `/dev/kmsg`'s priority (`<4>nvidia: ...`), a
    // syslog tag's `:` or journal's `MESSAGE=`; a quote or a backtick
    // opens prose that quotes the line.
    let head = line[..at].trim_end();
    let word = head.rsplit(|c| !name_char(c)).next()?;
    let opener = head[..head.len() - word.len()].chars().next_back();
    if opener.is_some_and(|c| !(c.is_whitespace() || "]>:;=".contains(c))) {
        return None;
    }
    let rest = &line[at + ": probe of ".len()..];
    let (addr, tail) = rest.split_once(' ')?;
    tail.starts_with("failed with error")
        .then_some((word, addr, tail))
}

/// `probe_of` for a GPU driver.
fn probe_failed(line: &str) -> Option<Event> {
    let (word, addr, _) = probe_of(line)?;
    Some(Event::ProbeFailed {
        bdf: addr.parse().ok()?,
        vendor: gpu_driver(word)?,
    })
}

/// Substrings at least one of which every line without a device anchor
/// that we understand contains; the cheap reject for the bulk of a boot
/// log. (`PCI` covers `PCI: ...` of old kernels, `Some PCI device`,
/// amdgpu's `PCI address space` and vgaarb's `PCI:`; `BAR` covers NVRM and
/// `got res ... for BAR`.)
static NEEDLES: [Needle; 7] = [
    Needle::new("pci"),
    Needle::new("PCI"),
    Needle::new("BAR"),
    Needle::new("e820"),
    Needle::new("ommand line"),
    Needle::new("addressable"),
    Needle::new("unassigned res"),
];

/// NVIDIA's messages through the GPU (`NV_DEV_PRINTF`: `NVRM: GPU
/// 0000:01:00.0: ...`): the adapter's start, a reason `nvrm_cause` names,
/// a region, or a reason none of those (`ProbeDoubt::NvidiaReason`).
fn nvrm_through_gpu(line: &str, bdf: PciAddress, msg: &str) -> Option<Parsed> {
    if msg.contains("RmInitAdapter failed") || msg.contains("rm_init_adapter failed") {
        return Some(Parsed::Event(Event::InitFailed { bdf }));
    }
    if let Some(Event::DriverCause { cause, .. }) = nvrm_cause(line) {
        return Some(Parsed::Event(Event::DriverCause {
            bdf: Some(bdf),
            cause,
        }));
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
    nvrm_named_reason(line).map(Parsed::Event)
}

fn classify(line: &str) -> Option<Parsed> {
    classify_anchored(line, device_anchor(line))
}

/// `classify` with the line's device anchor already found. A line with
/// one is a device's message (or amdgpu's large-BAR complaint, which is
/// printed through the device); the messages without one are tried only
/// when the line has one of their words.
pub(super) fn classify_anchored(
    line: &str,
    anchor: Option<(&str, PciAddress, &str)>,
) -> Option<Parsed> {
    if is_kmsg_continuation(line) {
        return None;
    }
    if let Some((word, bdf, msg)) = anchor {
        if word == "amdgpu" {
            if let Some(e) = amdgpu(msg) {
                return Some(Parsed::Event(match e {
                    Event::AmdgpuLargeBar { .. } => Event::AmdgpuLargeBar { bdf: Some(bdf) },
                    Event::AmdgpuResizeProblem { .. } => {
                        Event::AmdgpuResizeProblem { bdf: Some(bdf) }
                    }
                    Event::AmdgpuGmcFailed { errno, .. } => Event::AmdgpuGmcFailed {
                        bdf: Some(bdf),
                        errno,
                    },
                    e => e,
                }));
            }
        }
        // Newer NVIDIA drivers name the GPU first: `NVRM: GPU
        // 0000:01:00.0: BAR0 is 0M @ 0x0 (PCI:0000:01:00.0)`.
        if word == "GPU" && line.contains("NVRM: GPU ") {
            return nvrm_through_gpu(line, bdf, msg);
        }
        if word == "amdgpu" && amdgpu_started(msg) {
            return Some(Parsed::Event(Event::DriverDoubt {
                bdf,
                vendor: VENDOR_AMD,
                doubt: ProbeDoubt::AmdgpuStarted,
            }));
        }
        if let Some(e) = gpu_driver(word).and_then(|vendor| driver_note(vendor, bdf, msg)) {
            return Some(Parsed::Event(e));
        }
        // radeon read no ATOM video BIOS, or amdgpu or radeon found no
        // video BIOS at all (`DriverCause::NoVideoBios`): no BAR of it in
        // question.
        if (word == "radeon" && msg.starts_with("Expecting atombios for "))
            || (matches!(word, "amdgpu" | "radeon") && no_video_bios(msg))
        {
            return Some(Parsed::Event(Event::DriverCause {
                bdf: Some(bdf),
                cause: DriverCause::NoVideoBios,
            }));
        }
        if word == "nouveau" && nouveau_firmware(msg) {
            return Some(Parsed::Event(Event::DriverDoubt {
                bdf,
                vendor: VENDOR_NVIDIA,
                doubt: ProbeDoubt::NouveauFirmware,
            }));
        }
        // i915's own graphics table had no room (`DriverCause::GgttNoRoom`),
        // printed as `[drm:i915_init_ggtt [i915]] Failed to reserve ...`.
        if word == "i915" && msg.contains("Failed to reserve top of GGTT for GuC") {
            return Some(Parsed::Event(Event::DriverCause {
                bdf: Some(bdf),
                cause: DriverCause::GgttNoRoom,
            }));
        }
        // drivers/base/dd.c `call_driver_probe()` since 5.x: `probe with
        // driver %s failed with error %d`, through the device.
        if let Some(rest) = msg.strip_prefix("probe with driver ") {
            let (driver, tail) = rest.split_once(' ')?;
            return (tail.starts_with("failed with error"))
                .then_some(())
                .and_then(|_| gpu_driver(driver))
                .map(|vendor| Parsed::Event(Event::ProbeFailed { bdf, vendor }));
        }
        return nvidia_resize(word, bdf, device_message(bdf, msg));
    }
    if nvidia_resize_lost(line) {
        return Some(Parsed::Event(Event::NvidiaResizeLost));
    }
    if let Some(e) = nvrm_header(line) {
        return Some(Parsed::Event(e));
    }
    if let Some(e) = probe_failed(line).or_else(|| nvidia_running(line)) {
        return Some(Parsed::Event(e));
    }
    // The same without the device, as older kernels print it
    // (`DRM_ERROR`, or `amdgpu: Unable to locate a BIOS ROM`): given to the
    // AMD GPU whose probe fails after it (`Causes` in the replay).
    if no_video_bios(line) && !line.starts_with('#') {
        return Some(Parsed::Event(Event::DriverCause {
            bdf: None,
            cause: DriverCause::NoVideoBios,
        }));
    }
    if let Some(e) = nvrm_cause(line)
        .or_else(|| nvrm_named_reason(line))
        .or_else(|| nvidia_probes_failed(line))
        .or_else(|| amdgpu_unnamed_doubt(line))
    {
        return Some(Parsed::Event(e));
    }
    // amdgpu's memory controller start names no PCI word.
    if line.contains("sw_init of IP block <gmc_") {
        return amdgpu(line).map(Parsed::Event);
    }
    if let Some(e) = unnamed_bar(line) {
        return Some(Parsed::Event(e));
    }
    if !NEEDLES.iter().any(|n| n.is_in(line)) {
        return None;
    }
    if let Some(e) = command_line(line)
        .or_else(|| e820_entry(line))
        .or_else(|| nvrm(line))
        .or_else(|| amdgpu(line))
        .or_else(|| empty_mapping(line))
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

/// A PCI core verdict on a BAR whose `pci DDDD:BB:DD.F: ` a report cut
/// off (`BAR 1: no space for [mem size 0x400000000 64bit pref]`, after a
/// timestamp or nothing): a failure of a device the text does not name.
/// Only a failure with its bracket counts; the line opens with `BAR`.
fn unnamed_bar(line: &str) -> Option<Event> {
    let t = line.trim_start();
    let t = match t.strip_prefix('[') {
        Some(r) if looks_like_record(t) => r.split_once(']')?.1.trim_start(),
        _ => t,
    };
    if !t.starts_with("BAR ") {
        return None;
    }
    let bdf = PciAddress {
        domain: 0,
        bus: 0,
        device: 0,
        function: 0,
    };
    match device_message(bdf, t)? {
        Parsed::Event(Event::AssignFailed {
            res,
            resource: resource @ Some(_),
            reason: FailReason::NoSpace | FailReason::FailedToAssign,
            ..
        }) => Some(Event::UnnamedFailed { res, resource }),
        _ => None,
    }
}

/// `/dev/kmsg` follows a record with ` SUBSYSTEM=pci` / ` DEVICE=+pci:...`
/// dictionary lines. A wrapped message line also starts with a space, so
/// only an upper-case `KEY=` marks one.
pub(super) fn is_kmsg_continuation(line: &str) -> bool {
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
pub(crate) fn device_anchor(line: &str) -> Option<(&str, PciAddress, &str)> {
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
            .find(|(_, c)| !name_char(*c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &head[word_start..space];
        if is_driver_name(word) && starts_word(line, word_start) {
            return Some((word, bdf, &line[from..]));
        }
    }
    None
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
pub(super) fn rejoin(line: &str, next: &str) -> Option<Parsed> {
    static PCI_BUS: Needle = Needle::new("pci_bus ");
    if next.trim().is_empty()
        || !(device_anchor(line).is_some() || PCI_BUS.is_in(line))
        || device_anchor(next).is_some()
        || PCI_BUS.is_in(next)
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
