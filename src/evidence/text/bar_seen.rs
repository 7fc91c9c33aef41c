//! What the text says of one BAR so far, merged line by line as the log
//! is replayed (`replay`), and the BAR it makes.

use crate::model::bar::{Bar, BarState, SizeSource};
use crate::parse::kernel_log::{LogResource, Space};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Seen during enumeration only.
    Probed,
    Failed,
    Assigned,
}

/// What the text says of one BAR so far.
#[derive(Debug, Clone, Copy)]
pub(super) struct BarSeen {
    pub(super) outcome: Outcome,
    pub(super) io: bool,
    pub(super) mem64: bool,
    pub(super) prefetchable: bool,
    pub(super) size: Option<u64>,
    pub(super) start: Option<u64>,
    /// The firmware had programmed an address (lspci's `<ignored>`).
    pub(super) had_address: bool,
    pub(super) from_lspci: bool,
    /// A resource line or lspci gave io/mem64/prefetchable.
    pub(super) type_known: bool,
    /// Its last failure is a claim of the firmware's address (2.6.2x's
    /// bare `can't allocate resource`): the assignment after it is to come.
    pub(super) claim_only: bool,
}

impl BarSeen {
    pub(super) fn new(outcome: Outcome) -> BarSeen {
        BarSeen {
            outcome,
            io: false,
            mem64: false,
            prefetchable: false,
            size: None,
            start: None,
            had_address: false,
            from_lspci: false,
            type_known: false,
            claim_only: false,
        }
    }

    /// Merges one more log line about this BAR. A failure after an
    /// assignment (a later boot in the same file, or the kernel releasing
    /// it) wins, and so does an assignment after a failure.
    pub(super) fn merge(&mut self, outcome: Outcome, r: Option<&LogResource>) {
        // Any failure said of it is no longer only the claim's (a driver's
        // `BAR1 is 0M` after it); a claim's own line sets it again.
        if outcome == Outcome::Failed {
            self.claim_only = false;
        }
        if outcome != Outcome::Probed || self.outcome == Outcome::Probed {
            self.outcome = outcome;
        }
        if let Some(r) = r {
            let io = r.space == Space::Io;
            if self.type_known && self.io != io {
                // Another device at this address (two boots in one file):
                // its type replaces the old one, it does not mix with it.
                self.mem64 = false;
                self.prefetchable = false;
            }
            self.type_known = true;
            self.io = io;
            // `[io ... pref]` is no kernel's wording: an I/O BAR is never
            // 64-bit or prefetchable, whatever else the line says.
            self.mem64 = !io && (self.mem64 || r.mem64);
            self.prefetchable = !io && (self.prefetchable || r.prefetchable);
            if r.size > 0 && r.size != u64::MAX {
                self.size = Some(r.size);
            }
            match outcome {
                Outcome::Assigned => self.start = r.start.filter(|s| *s != 0),
                Outcome::Probed => {
                    self.start = r.start.filter(|s| *s != 0);
                    self.had_address |= self.start.is_some();
                }
                Outcome::Failed => {}
            }
        }
    }

    pub(super) fn bar(&self, index: u8) -> Bar {
        Bar {
            index,
            state: match self.outcome {
                // Only its claim of the firmware's address was refused, and
                // the assignment after it is not in the text (the kernel
                // prints `Failed to allocate` where that fails too): not a
                // failure the text shows, nor an address it gives.
                Outcome::Failed if self.claim_only => BarState::Assigned,
                Outcome::Failed if self.had_address => BarState::Ignored,
                Outcome::Failed => BarState::Unassigned,
                // Enumerated and never complained about: the kernel kept
                // the firmware's address.
                Outcome::Probed | Outcome::Assigned => BarState::Assigned,
            },
            io: self.io,
            mem64: self.mem64,
            prefetchable: self.prefetchable,
            start: if self.outcome == Outcome::Failed {
                None
            } else {
                self.start
            },
            size: self.size,
            size_source: self.size.map(|_| {
                if self.from_lspci {
                    SizeSource::Lspci
                } else {
                    SizeSource::KernelLog
                }
            }),
            type_known: self.type_known,
        }
    }
}
