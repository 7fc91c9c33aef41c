//! BARs and bridge windows as the model knows them, whatever they were read
//! from (sysfs and config space, the kernel log, lspci text).

use crate::model::range::Range;
use serde::Serialize;

/// What lspci would print for the BAR's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BarState {
    /// The kernel gave it an address.
    Assigned,
    /// Implemented (type bits in config) but no address anywhere.
    Unassigned,
    /// Firmware programmed an address; the kernel refused it.
    Ignored,
}

impl BarState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BarState::Assigned => "assigned",
            BarState::Unassigned => "unassigned",
            BarState::Ignored => "ignored",
        }
    }
}

/// Where a BAR's size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SizeSource {
    Sysfs,
    KernelLog,
    Sibling,
    Lspci,
}

impl SizeSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SizeSource::Sysfs => "sysfs",
            SizeSource::KernelLog => "kernel_log",
            SizeSource::Sibling => "sibling",
            SizeSource::Lspci => "lspci",
        }
    }
}

/// One standard BAR (0-5) of a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bar {
    pub index: u8,
    pub state: BarState,
    pub io: bool,
    pub mem64: bool,
    pub prefetchable: bool,
    pub start: Option<u64>,
    pub size: Option<u64>,
    pub size_source: Option<SizeSource>,
    /// Whether `io`, `mem64` and `prefetchable` were read (config space, a
    /// resource line, lspci) rather than defaulted: a driver's complaint
    /// (`NVRM: BAR1 is 0M`) or a 2.6-era `can't allocate resource` names a
    /// BAR without them.
    pub type_known: bool,
}

impl Bar {
    pub(crate) fn assigned(&self) -> bool {
        self.state == BarState::Assigned
    }

    /// Only memory BARs decide a GPU's health: an I/O BAR the kernel could
    /// not place is harmless for every GPU driver we know of.
    pub(crate) fn fails_gpu(&self) -> bool {
        !self.io && !self.assigned()
    }

    /// 64-bit prefetchable BARs are what the big windows above 4 GiB are
    /// for; a GPU's 32-bit BARs live below 4 GiB and are not counted there.
    pub(crate) fn counts_for_window(&self) -> bool {
        !self.io && self.mem64 && self.prefetchable
    }
}

/// A bridge's forwarding window, as the kernel assigned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BridgeWindow {
    pub io: bool,
    pub prefetchable: bool,
    pub mem64: bool,
    pub range: Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BridgeWindowKind {
    Io,
    Mem,
    /// A 32-bit prefetchable window.
    MemPref,
    Mem64Pref,
}

impl BridgeWindow {
    pub(crate) fn kind(&self) -> BridgeWindowKind {
        match (self.io, self.prefetchable, self.mem64) {
            (true, ..) => BridgeWindowKind::Io,
            (false, true, true) => BridgeWindowKind::Mem64Pref,
            (false, true, false) => BridgeWindowKind::MemPref,
            (false, false, _) => BridgeWindowKind::Mem,
        }
    }
}
