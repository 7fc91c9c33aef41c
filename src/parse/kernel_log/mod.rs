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

use crate::model::pci::{is_bridge, PciAddress, RootBus};
use crate::model::range::Range;
#[cfg(test)]
use classify::is_kmsg_continuation;
use classify::{classify_anchored, gpu_driver, other_driver, rejoin};
pub(crate) use classify::{device_anchor, probe_of};

mod classify;
mod device;
mod driver;
mod early;
pub(crate) use driver::{DriverCause, ProbeDoubt};
mod messages;
mod resource;
#[cfg(test)]
mod tests;

/// What one line yields: an event, or only the fact that a function is a
/// bridge (`PCI bridge to [bus 01]`), which `parse_log` needs.
pub(super) enum Parsed {
    Event(Event),
    Bridge(PciAddress),
    /// Both: 2.6.2x's `PCI bridge, secondary bus 0000:01`
    /// (`Event::BridgeProgrammed`).
    BridgeProgrammed(PciAddress, u8),
    /// 2.6.12's `PCI: Resource 80000000-8fffffff (f=1208, d=1, p=1)`,
    /// printed just before the `Cannot allocate resource region` it
    /// explains (which names no resource itself).
    OldResource(LogResource),
}

/// Kind of address space a resource line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Mem,
    Io,
    /// A resource of no type the kernel can name: lib/vsprintf.c
    /// `resource_string()` prints `??? ` and `flags 0x...` instead of the
    /// decoded flags (6.18's bridge window sizing lost an I/O window's
    /// type, fixed by e5f72cb9cea5). Never a BAR's or a memory window's.
    Other,
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
    /// The old wording's `BAR 15: releasing [mem ...]` (`pci_release_resource`,
    /// 4.15 on, until the wording changed): a resize lets go of a resource
    /// it had, to place it again larger. Before the new wording the resize
    /// paths (`pci_resize_resource`, `pci_reassign_bridge_resources`) were
    /// its only callers; the boot's realloc says `resource N ... released`.
    Released {
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
    /// 2.6.2x: `PCI bridge, secondary bus 0000:01`, the assignment pass
    /// done for the devices of that bus (`device::device_message`).
    BridgeProgrammed { bdf: PciAddress, secondary: u8 },
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
    /// A driver that drives neither a GPU, nor a display, nor an
    /// accelerator prints through the device (`thunderbolt 0000:0c:00.0:`,
    /// `nvme 0000:01:00.0:`): it is bound to it, so it is no GPU.
    /// (`classify::other_driver` says which names count.)
    OtherDriver { bdf: PciAddress, name: String },
    /// `Boot video device`, `Video device with shadowed ROM at`,
    /// `vgaarb: setting as boot VGA device`,
    /// `vgaarb: VGA device added`: a VGA-class display device.
    VgaDevice { bdf: PciAddress },
    /// amdgpu: `Not enough PCI address space for a large BAR.`
    AmdgpuLargeBar { bdf: Option<PciAddress> },
    /// amdgpu: `Problem resizing BAR0 (-16).`: the resize failed for
    /// another reason than space (amdgpu_device.c
    /// `amdgpu_device_resize_fb_bar`); the BARs it released are assigned
    /// again after it.
    AmdgpuResizeProblem { bdf: Option<PciAddress> },
    /// amdgpu: `sw_init of IP block <gmc_v9_0> failed -19`: the memory
    /// controller's start, which runs the resize above and fails with
    /// -ENODEV when the VRAM BAR (or the doorbell BAR) is left without an
    /// address after it.
    AmdgpuGmcFailed {
        bdf: Option<PciAddress>,
        /// The error, positive (`None` where the line is cut before it).
        errno: Option<u32>,
    },
    /// `resource sanity check: requesting [mem
    /// 0x0000000000000000-0xffffffffffffffff], ...` (kernel/resource.c
    /// `iomem_map_sanity_check()`, from ioremap): a driver mapped a range
    /// of length 0 at address 0, a BAR whose resource was emptied. After
    /// amdgpu's failed resize it is the VRAM BAR the rollback lost, mapped
    /// anyway (the seventh collection's c01: 6.15, and 6.14's stable
    /// updates, after 67f9085596ee "PCI: Allow relaxed bridge window tail
    /// sizing for optional resources"; its fix is 6e460c3d6110).
    EmptyMapping,
    /// A BAR failure the PCI core printed through NVIDIA's driver
    /// (`nvidia 0000:c3:00.0: BAR 1 [mem size 0x800000000 64bit pref]:
    /// can't assign; no space`): the device was bound, so this is the
    /// driver's resize of BAR 1 (kernel-open/nvidia/nv-pci.c
    /// `nv_resize_pcie_bars()`), which steps down to the old size on
    /// -ENOSPC and says `NVRM: FATAL: Failed to re-allocate BAR1.` only
    /// when even that fails. Not the BAR's outcome.
    NvidiaResizeTried { bdf: PciAddress, bar: u8 },
    /// `NVRM: FATAL: Failed to re-allocate BAR1.`: the resize above lost
    /// BAR 1 (the line names no device).
    NvidiaResizeLost,
    /// NVIDIA's `NVRM: This PCI I/O region assigned to your NVIDIA device is
    /// invalid`, the header its `BARn is 0M` line follows (where a report
    /// kept it).
    NvrmInvalid,
    /// `nvidia: probe of 0000:01:00.0 failed with error -1`: a GPU driver
    /// gave up on the device.
    ProbeFailed { bdf: PciAddress, vendor: u16 },
    /// `NVRM: The NVIDIA probe routine failed for 1 device(s).`: NVIDIA's
    /// own count of the GPUs whose probe failed, printed once the module's
    /// probes ran (kernel-open/nvidia/nv.c `nvidia_init_module()`,
    /// 515.43.04 to 595.45.04). An excerpt may keep it and not the driver
    /// core's line that names the GPU.
    NvidiaProbesFailed { count: u32 },
    /// `NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0xffff:667)`:
    /// the driver bound the GPU and could not bring it up (a BAR it cannot
    /// use is one cause, not the only one).
    InitFailed { bdf: PciAddress },
    /// A GPU driver says it runs on its BARs: it tried to grow one and kept
    /// the one it had (`xe ...: Failed to resize BAR2 to 16384M (-ENOSPC)`,
    /// `i915 ...: Small BAR device`), or that its resize took (`BAR2
    /// resized to 16384M`, `fell_back` false). The BARs have addresses.
    DriverMapped { bdf: PciAddress, fell_back: bool },
    /// A GPU driver's load lists a memory BAR with its address
    /// (`driver::framebuffer_bar`): it has one, of `size` bytes.
    DriverBar {
        bdf: PciAddress,
        vendor: u16,
        bar: u8,
        start: u64,
        size: u64,
    },
    /// NVIDIA's driver runs the GPU (an Xid at run time;
    /// `messages::nvidia_running`): its memory BARs had addresses.
    DriverRunning { bdf: PciAddress, vendor: u16 },
    /// A GPU driver's line that makes its probe's failure after it a
    /// doubt rather than the BARs' (`driver::ProbeDoubt`).
    DriverDoubt {
        bdf: PciAddress,
        vendor: u16,
        doubt: ProbeDoubt,
    },
    /// The same said without the device, as older kernels print
    /// amdgpu's errors (`[drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware
    /// loading failed`): for the next probe failure of its vendor's GPU.
    UnnamedDoubt { vendor: u16, doubt: ProbeDoubt },
    /// NVIDIA's driver names why it gave up on a GPU, and the reason is
    /// not a region without an address (`DriverCause`); `bdf` where the
    /// message names the device.
    DriverCause {
        bdf: Option<PciAddress>,
        cause: DriverCause,
    },
    /// `not enough MMIO resources for SR-IOV` (drivers/pci/iov.c
    /// `sriov_enable()`): the space for the device's virtual functions,
    /// not its own BARs. Printed when its driver enables VFs, which the
    /// PCI core lets only a bound driver do (`sriov_numvfs_store()`).
    SriovSpace { bdf: PciAddress },
    /// A PCI core verdict on a BAR with the device's address cut off
    /// (`BAR 1: no space for [mem size 0x400000000 64bit pref]` as a report
    /// quotes it): a failure the text does not say whose it is.
    UnnamedFailed {
        res: ResourceRef,
        resource: Option<LogResource>,
    },
    /// `Assigned bridge window [mem ...] to [bus 03-2c] cannot fit 0x...
    /// required for 0000:03:00.0 bridging to [bus 04-2c]`
    /// (drivers/pci/setup-bus.c, from 6.11 on, printed through the parent
    /// bridge): the child bridge needs `required` bytes and its parent's
    /// window holds less.
    WindowCannotFit {
        parent: PciAddress,
        window: LogResource,
        required: u64,
        child: PciAddress,
    },
    /// `bridge window [mem A-B 64bit pref] to [bus 03] requires relaxed
    /// alignment rules`: the kernel sizes the window for the devices on
    /// `buses` with relaxed rules after the parent's `cannot fit`; the range
    /// printed is no measure of that (`device::window_relaxed`).
    WindowRelaxed {
        bdf: PciAddress,
        window: LogResource,
        /// The bridge's secondary to subordinate bus (`[bus 03]`, `[bus 02-04]`).
        buses: (u8, u8),
    },
    /// `bridge window [mem A-B 64bit pref] shrunken by 0x...`
    /// (setup-bus.c `adjust_bridge_window()`, a debug line): the window the
    /// bridge's devices need (A-B) made smaller by that much.
    WindowShrunk {
        bdf: PciAddress,
        window: LogResource,
        by: u64,
    },
    /// `Command line: ...` / `Kernel command line: ...`.
    CommandLine(String),
    /// `BIOS-e820: [mem 0x100000000-0x807fffffff] usable`: RAM as the
    /// firmware reported it (a `mem=` on the command line limits what the
    /// kernel uses, not where the firmware put its window).
    E820Usable(Range),
    /// `BIOS-e820: [mem 0xfd00000000-0xffffffffff] reserved`: a range the
    /// firmware's map keeps from everyone (QEMU's AMD HyperTransport range
    /// among them), which the kernel places no BAR over.
    E820Reserved(Range),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailReason {
    NoSpace,
    FailedToAssign,
    /// `can't claim`: firmware's address did not fit any upstream window or
    /// conflicted; the kernel will try to assign a new one.
    CantClaim,
    /// 2.6's bare claim failure, no resource given (`PCI: Cannot allocate
    /// resource region N of device X`, `BAR N: can't allocate resource`):
    /// the same claim, whose assignment pass prints only its own failures
    /// (`early::old_pci_message`, `device::old_allocate`).
    ClaimRefused,
}

/// Parses one line of kernel log text. Accepts dmesg (`[    5.23] `),
/// `journalctl -k` (`Nov 29 10:00:00 host kernel: `), `/dev/kmsg`
/// (`6,339,5083,-;`) and bare message text. The message's event, not the
/// driver it is printed through.
#[cfg(test)]
pub(crate) fn parse_line(line: &str) -> Option<Event> {
    parse_log(line)
        .into_iter()
        .find(|e| !matches!(e, Event::GpuDriver { .. } | Event::OtherDriver { .. }))
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
    let mut others: Vec<PciAddress> = Vec::new();
    let mut old_resource: Option<(usize, LogResource)> = None;
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        // A report's own heading quotes log lines; it is not the log.
        if crate::parse::platform::is_report_heading(line) {
            continue;
        }
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
        } else if let Some((bdf, name)) =
            anchor.and_then(|(word, bdf, _)| Some((bdf, other_driver(line, word)?)))
        {
            if !others.contains(&bdf) {
                others.push(bdf);
                events.push(Event::OtherDriver {
                    bdf,
                    name: name.to_string(),
                });
            }
        }
        match parsed {
            Some(Parsed::Event(mut e)) => {
                if let Event::AssignFailed {
                    resource: resource @ None,
                    reason: FailReason::CantClaim | FailReason::ClaimRefused,
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
            Some(Parsed::BridgeProgrammed(bdf, secondary)) => {
                bridges.push(bdf);
                events.push(Event::BridgeProgrammed { bdf, secondary });
            }
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
            Event::Probed { res, resource, .. }
            | Event::Released { res, resource, .. }
            | Event::Assigned { res, resource, .. } => Some((*res, Some(resource.space))),
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
            Event::Probed { bdf, res, resource }
            | Event::Released { bdf, res, resource }
            | Event::Assigned { bdf, res, resource } => (bdf, res, Some(resource.space)),
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
