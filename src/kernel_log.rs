//! Kernel log parsing: PCI resource assignment messages in both the pre-6.8
//! wording and the current one, driver complaints, root bus windows.
//!
//! Pure functions over text; reading `/dev/kmsg` or a file is `kmsg`'s and
//! `sources`' business.

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
    pub size: u64,
    pub mem64: bool,
    pub prefetchable: bool,
    pub window: bool,
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
    /// ACPI `host bridge window [...] ([...] ignored, not CPU addressable)`.
    NotCpuAddressable { start: u64, end: u64 },
    /// `Some PCI device resources are unassigned, try booting with pci=realloc`.
    ReallocAdvised,
    /// `No. N try to assign unassigned res`.
    ReallocRetry { attempt: u32 },
    /// `NVRM: BARn is 0M @ 0x0 (PCI:dddd:bb:dd.f)`.
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
    CantClaim,
}

/// Parses one line of kernel log text. Accepts dmesg (`[    5.23] `),
/// `journalctl -k` (`Nov 29 10:00:00 host kernel: `), `/dev/kmsg`
/// (`6,339,5083,-;`) and bare message text.
pub fn parse_line(_line: &str) -> Option<Event> {
    None
}

/// Parses a whole log; lines that say nothing of interest are skipped.
/// Invalid UTF-8 must be handled by the caller (`String::from_utf8_lossy`).
pub fn parse_log(text: &str) -> Vec<Event> {
    text.lines().filter_map(parse_line).collect()
}
