//! Messages that are not about one resource: the command line, driver
//! complaints (NVIDIA, amdgpu), the part of a host bridge window the CPU
//! cannot address, and the kernel's reallocation notes.

use super::driver::nvidia_reason;
use super::resource::{decimal, hex_range, split_bdf};
use super::{DriverCause, Event, ProbeDoubt};
use crate::model::pci::{PciAddress, VENDOR_NVIDIA};
use crate::model::range::Range;
use crate::parse::hex::{decimal_after, hex_digits, hex_u64};
use crate::parse::words::Needle;

/// `Command line: ...` (x86 early boot) and `Kernel command line: ...`.
pub(super) fn command_line(line: &str) -> Option<Event> {
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
/// or short in reports, and drivers of the 2000s printed it as
/// `(PCI:0002:00.0)`: a four-digit bus, no domain.
pub(super) fn nvrm(line: &str) -> Option<Event> {
    let at = line.find("NVRM: BAR")?;
    let (bar, r) = decimal(&line[at + "NVRM: BAR".len()..])?;
    let r = r.strip_prefix(" is ")?;
    let size_digits = r.bytes().take_while(u8::is_ascii_digit).count();
    let zero = size_digits > 0 && r[..size_digits].bytes().all(|b| b == b'0');
    let bdf = r.find("(PCI:").and_then(|p| {
        let addr = &r[p + "(PCI:".len()..];
        let end = addr.find(')')?;
        nvrm_address(addr[..end].trim())
    });
    Some(Event::NvrmBar {
        bdf,
        bar: u8::try_from(bar).ok()?,
        zero,
    })
}

/// NVIDIA's `NVRM: This PCI I/O region assigned to your NVIDIA device is
/// invalid:` header, which the driver prints before each `BARn is ...`
/// line. A hand-typed copy may not spell the vendor so (corpus 279), and a
/// copy that lost its line break carries the detail line after the colon:
/// then the detail line's event.
pub(super) fn nvrm_header(line: &str) -> Option<Event> {
    static HEADER: Needle = Needle::new("NVRM: This PCI I/O region assigned to your ");
    let at = HEADER.find(line)?;
    // The log's own record (`grep "NVRM: ..."` and `I no longer get
    // "NVRM: ..."` are not).
    if !record_head(&line[..at]) {
        return None;
    }
    // The vendor's word as typed, `device` in any case (`NVIDIA`,
    // `NVUDUA`).
    let invalid = line[at..].to_ascii_lowercase().find(" device is invalid")? + at;
    let detail = line[invalid + " device is invalid".len()..]
        .strip_prefix(':')
        .map(str::trim_start)
        .map(|t| t.strip_prefix("NVRM: ").unwrap_or(t))
        .filter(|t| t.starts_with("BAR"));
    match detail.and_then(|t| nvrm(&format!("NVRM: {t}"))) {
        Some(e @ Event::NvrmBar { .. }) => Some(e),
        _ => Some(Event::NvrmInvalid),
    }
}

/// What precedes a message ends as a record's prefix does (a dmesg
/// stamp's `]`, syslog's or `dmesg -x`'s `:`, kmsg's `;`, a priority's or a
/// mail's `>`, journal's `MESSAGE=`, RFC 5424's `-`), or is a bare stamp:
/// the log's own record, not a command or a sentence that quotes it.
fn record_head(head: &str) -> bool {
    let head = head.trim();
    head.is_empty()
        || head.ends_with([']', ':', ';', '>', '=', '-'])
        || head.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// An `NVRM:` record that names a GPU by its address with a reason this
/// reader does not know and that is no region's (`nvidia_reason`,
/// `ProbeDoubt::NvidiaReason`): `NVRM: GPU 0000:01:00.0 is already bound
/// to vfio-pci.`, `NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: ...) ...` in
/// a wording `nvrm_cause` does not read. An address without its function
/// (`NVRM: GPU at PCI:0000:01:00: GPU-<uuid>`, the adapter's start) is
/// not taken.
pub(super) fn nvrm_named_reason(line: &str) -> Option<Event> {
    static NVRM: Needle = Needle::new("NVRM: ");
    let at = NVRM.find(line)?;
    if !record_head(&line[..at]) {
        return None;
    }
    let msg = &line[at + "NVRM: ".len()..];
    if !nvidia_reason(msg) {
        return None;
    }
    let bdf = msg.split_whitespace().find_map(|w| {
        w.trim_start_matches('(')
            .trim_start_matches("PCI:")
            .trim_end_matches([':', ',', '.', ')'])
            .parse::<PciAddress>()
            .ok()
    })?;
    Some(Event::DriverDoubt {
        bdf,
        vendor: VENDOR_NVIDIA,
        doubt: ProbeDoubt::NvidiaReason,
    })
}

/// `NVRM: The NVIDIA probe routine failed for N device(s).`
/// (`Event::NvidiaProbesFailed`), the log's own record.
pub(super) fn nvidia_probes_failed(line: &str) -> Option<Event> {
    static COUNT: Needle = Needle::new("NVRM: The NVIDIA probe routine failed for ");
    let at = COUNT.find(line)?;
    if !record_head(&line[..at]) {
        return None;
    }
    let (count, rest) = decimal(&line[at + "NVRM: The NVIDIA probe routine failed for ".len()..])?;
    rest.starts_with(" device")
        .then_some(Event::NvidiaProbesFailed { count })
}

/// `0000:56:00.0`, or the old `0002:00.0` (bus 02).
fn nvrm_address(s: &str) -> Option<PciAddress> {
    if let Ok(a) = s.parse() {
        return Some(a);
    }
    let (bus, devfn) = s.split_once(':')?;
    let bus = hex_u64(bus).filter(|b| *b <= 0xff)?;
    format!("0000:{bus:02x}:{devfn}").parse().ok()
}

/// `vgaarb: device added: PCI:0000:01:00.0,decodes=io+mem,...` (before
/// 5.x the address is in the message, not before it).
pub(super) fn vgaarb_added(line: &str) -> Option<Event> {
    let at = line.find("vgaarb: device added: PCI:")?;
    let r = &line[at + "vgaarb: device added: PCI:".len()..];
    let bdf = r.split(',').next()?.trim().parse().ok()?;
    Some(Event::VgaDevice { bdf })
}

/// `amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large
/// BAR.`; older kernels print it as `[drm] Not enough ...` with no address.
/// Likewise `Problem resizing BAR0 (-16).` and `sw_init of IP block
/// <gmc_v9_0> failed -19` (`[drm:amdgpu_device_init [amdgpu]] *ERROR*
/// ...` in older kernels).
pub(super) fn amdgpu(line: &str) -> Option<Event> {
    let at = |key: &str| line.find(key);
    let head = |at: usize| {
        let head = &line[..at];
        head.match_indices("amdgpu ")
            .find_map(|(i, _)| split_bdf(&head[i + "amdgpu ".len()..]).map(|(bdf, _)| bdf))
    };
    if let Some(a) = at("Not enough PCI address space for a large BAR") {
        return Some(Event::AmdgpuLargeBar { bdf: head(a) });
    }
    if let Some(a) = at("Problem resizing BAR0 (") {
        return Some(Event::AmdgpuResizeProblem { bdf: head(a) });
    }
    let a = at("sw_init of IP block <gmc_")?;
    let errno = line[a..]
        .find("> failed -")
        .and_then(|f| decimal_after(&line[a + f..], "failed -"))
        .and_then(|n| u32::try_from(n).ok());
    Some(Event::AmdgpuGmcFailed {
        bdf: head(a),
        errno,
    })
}

/// `resource sanity check: requesting [mem
/// 0x0000000000000000-0xffffffffffffffff]` (`Event::EmptyMapping`).
pub(super) fn empty_mapping(line: &str) -> Option<Event> {
    static EMPTY: Needle = Needle::new(
        "resource sanity check: requesting [mem 0x0000000000000000-0xffffffffffffffff]",
    );
    EMPTY.is_in(line).then_some(Event::EmptyMapping)
}

/// The forms this takes:
/// `host bridge window [mem A-B window] ([C-D] ignored, not CPU addressable)`,
/// `host bridge window [mem A-B window] (ignored, not CPU addressable)`,
/// the same with a bare `[A-B]` (older x86), and
/// `acpi resource window ([A-B] ignored, not CPU addressable)`.
pub(super) fn not_cpu_addressable(line: &str) -> Option<Event> {
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
    Some(Event::NotCpuAddressable(Range::new(start, end)))
}

pub(super) fn realloc_messages(line: &str) -> Option<Event> {
    static ADVISED: Needle = Needle::new("Some PCI device resources are unassigned");
    static RETRY: Needle = Needle::new(" try to assign unassigned res");
    if ADVISED.is_in(line) {
        return Some(Event::ReallocAdvised);
    }
    let at = RETRY.find(line)?;
    let head = &line[..at];
    let digits = head.len() - head.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (attempt, _) = decimal(&head[digits..])?;
    if !head[..digits].ends_with("No. ") {
        return None;
    }
    Some(Event::ReallocRetry { attempt })
}

/// `BIOS-e820: [mem 0x0000000100000000-0x000000807fffffff] usable` (also
/// `e820: [mem ...] usable` in some kernels' wording), and the same with
/// `reserved` (arch/x86/kernel/e820.c `e820__print_table`). An update line
/// (`e820: update [mem ...] usable ==> reserved`) is neither.
pub(super) fn e820_entry(line: &str) -> Option<Event> {
    let at = line.find("e820: [mem ")?;
    let rest = &line[at + "e820: [mem ".len()..];
    let (range, kind) = rest.split_once(']')?;
    let (start, end) = hex_range(range.trim())?;
    if end < start {
        return None;
    }
    match kind.trim() {
        "usable" => Some(Event::E820Usable(Range::new(start, end))),
        "reserved" => Some(Event::E820Reserved(Range::new(start, end))),
        _ => None,
    }
}

/// NVIDIA's driver naming a reason it gave up on a GPU that is no region
/// without an address (`DriverCause`), with the device where the line
/// names it (`NVRM: ignoring the legacy GPU 0000:01:00.0`).
pub(super) fn nvrm_cause(line: &str) -> Option<Event> {
    static NVRM: Needle = Needle::new("NVRM: ");
    let msg = NVRM.after(line)?;
    let cause = if msg.contains("Can't find an IRQ for your NVIDIA card") {
        DriverCause::Irq
    } else if let Some(rest) = msg.strip_prefix("request_mem_region failed") {
        if request_at_zero(rest) {
            return Some(Event::UnnamedDoubt {
                vendor: VENDOR_NVIDIA,
                doubt: ProbeDoubt::NvidiaRequestAtZero,
            });
        }
        DriverCause::RegionTaken
    } else if msg.contains("ignoring the legacy GPU")
        || msg.contains("installed in this system is not supported by")
        || msg.contains("nvidia.ko because it does not include the required GPU")
        || (opens_gpu_message(msg) && !msg.contains("installed in this system has"))
    {
        DriverCause::Unsupported
    } else if msg.contains("64-bit BAR mapped above 4GB") {
        DriverCause::BarAbove4g
    } else if (opens_gpu_message(msg) || msg.starts_with("(PCI ID: "))
        && msg.contains("installed in this system has")
        || msg.contains("fallen off the bus and is not responding to commands")
    {
        DriverCause::Unresponsive
    } else if msg.contains("Cannot initialize GSP firmware RM")
        || msg.contains("_kgspBootGspRm")
        || msg.contains("No firmware image found")
        || msg.contains("Assertion failed")
        || msg.contains("fallen off the bus")
        || msg.contains("does not have the necessary power cables connected")
    {
        DriverCause::InitStep
    } else {
        return None;
    };
    let bdf = msg.split_whitespace().find_map(|w| {
        w.trim_end_matches([':', ',', '.'])
            .parse::<PciAddress>()
            .ok()
    });
    Some(Event::DriverCause { bdf, cause })
}

/// NVIDIA's `request_mem_region failed for 0M @ 0x0`: the range it asked
/// for is BAR 0's resource as it stands (nv-pci.c `nv_pci_probe()` prints
/// its size and start), and a request at 0 fails whatever other drivers
/// hold (kernel/resource.c `__request_region()`): no other driver's claim
/// is shown, and no placement either (`ProbeDoubt::NvidiaRequestAtZero`).
/// An address cut from the line is not read as 0.
fn request_at_zero(rest: &str) -> bool {
    let Some((_, addr)) = rest.split_once(" @ 0x") else {
        return false;
    };
    let digits = &addr[..addr.bytes().take_while(u8::is_ascii_hexdigit).count()];
    hex_digits(digits) == Some(0)
}

/// `The NVIDIA GPU <address> (PCI ID: <ids>)`: the first line of NVIDIA's
/// messages that name a GPU and a reason that is no BAR
/// (src/nvidia/arch/nvalloc/unix/src/osapi.c `rm_is_supported_device()`,
/// which the probe in kernel-open/nvidia/nv-pci.c calls): not supported by
/// this driver (`installed in this system is not supported by ...` on the
/// next line), or, where the line goes on `installed in this system has`,
/// fallen off the bus at probe (`DriverCause::Unresponsive`). The driver
/// prints that one's ids on its second line (`(PCI ID: ...) installed in
/// this system has`); the seventh collection's d10, a write-up, shows them
/// on the first, most likely rewrapped by its author: both are read.
fn opens_gpu_message(msg: &str) -> bool {
    msg.starts_with("The NVIDIA GPU ") && msg.contains("(PCI ID: ")
}

/// amdgpu's and radeon's `Unable to locate a BIOS ROM`
/// (drivers/gpu/drm/amd/amdgpu/amdgpu_bios.c `amdgpu_get_bios()`,
/// drivers/gpu/drm/radeon/radeon_bios.c `radeon_get_bios()`): no video
/// BIOS in the ATRM or VFCT tables, the ROM BAR or the platform's copy, and
/// the device's start fails with -EINVAL (`Fatal error during GPU init`,
/// the probe's `failed with error -22`). A VM's GPU without its ROM file
/// (corpus 0 of the third collection of 2026-12-06, a Proxmox iGPU).
pub(super) fn no_video_bios(msg: &str) -> bool {
    static NO_ROM: Needle = Needle::new("Unable to locate a BIOS ROM");
    NO_ROM.is_in(msg)
}

/// NVIDIA's driver running a GPU (`Event::DriverRunning`): its resource
/// manager reported an Xid at run time (`NVRM: Xid (PCI:0000:01:00): 62,
/// ...`, src/nvidia/src/kernel/gpu/rc/kernel_rc.c; the function left out,
/// so `.0`). The resource manager exists for a GPU only once its adapter
/// has started, and the start fails on a GPU whose memory region is 0M
/// (`RmInitAdapter failed` after `BAR1 is 0M`, corpus 76), so a GPU it
/// reports faults for had its memory BARs. nvidia-drm's `[drm]
/// Initialized` line is no such sign: it follows the probe, which checks
/// only the register region, and corpus 65 shows it for a GPU whose BAR 1
/// failed. A shell command or a heading that quotes the line is not the
/// log (`$ grep 'NVRM: Xid ...'`, `# ...`).
pub(super) fn nvidia_running(line: &str) -> Option<Event> {
    let t = line.trim_start();
    if t.starts_with(['#', '$']) || t.contains("grep ") {
        return None;
    }
    static XID: Needle = Needle::new("NVRM: Xid (PCI:");
    let at = XID.find(line)?;
    // `PCI:%04x:%02x:%02x`: no function; a MIG instance follows after a
    // space (`PCI:0000:01:00 GPU-I:01 GPU-CI:00`).
    let rest = &line[at + "NVRM: Xid (PCI:".len()..];
    let end = rest.find([')', ' '])?;
    let addr = format!("{}.0", &rest[..end]);
    Some(Event::DriverRunning {
        bdf: addr.parse().ok()?,
        vendor: VENDOR_NVIDIA,
    })
}
