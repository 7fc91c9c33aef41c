//! What the report and the record call for: a pure function of both, so
//! every branch is tested without a system.

use crate::decide::hint::HintId;
use crate::remediate::state::State;
use crate::report::{Report, Verdict};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Every selected GPU is fine.
    Healthy,
    /// `pci=realloc` is active and BARs are still unassigned: only the host
    /// side can help now.
    ReallocDidNotHelp,
    /// Failing, and realloc is not among the fixes.
    HostSide,
    /// We added the parameter before (the record says how). `same_boot`
    /// when that was during this boot (or it cannot be told): the next boot
    /// will carry it.
    AlreadyDone { state: Box<State>, same_boot: bool },
    /// Add the parameter.
    Apply,
}

pub(crate) fn decide(report: &Report, state: Option<State>, boot_id: Option<&str>) -> Decision {
    if report.verdict == Verdict::Ok {
        return Decision::Healthy;
    }
    if report.realloc_active {
        return Decision::ReallocDidNotHelp;
    }
    if !(report.has_hint(HintId::GuestPciRealloc) || first_step_adds_realloc(report)) {
        return Decision::HostSide;
    }
    if let Some(s) = state {
        let same_boot = match (s.boot_id.as_deref(), boot_id) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        return Decision::AlreadyDone {
            state: Box::new(s),
            same_boot,
        };
    }
    Decision::Apply
}

/// The first hint, the step to take, adds `pci=realloc` in the guest: on
/// its own, or as the guest's part of a host change (SeaBIOS 1.16.3's
/// padded ports: 41 bits and realloc in one step). The guest's part must
/// be on the next boot's command line before the VM is stopped for the
/// host's, so it is written now, even where the diagnosis alone would not
/// call for realloc (`phys_bits_too_small`). A later hint's realloc is not
/// the step.
fn first_step_adds_realloc(report: &Report) -> bool {
    report
        .hints
        .first()
        .is_some_and(|h| h.change.adds_realloc())
}
