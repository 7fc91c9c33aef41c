//! Everything decided of one system's or one text's evidence, in one
//! value the report renders: the diagnosis, the verdict and its sentence,
//! the platform, how the window came to be, the hints, and the P2P
//! section decided beside it. `check`, `explain` and `boot` gather, then
//! `conclude`, then build the report.

use crate::decide::diagnosis::{diagnose, Diagnosis};
use crate::decide::hint::Hint;
use crate::decide::hints::hints;
use crate::decide::origin::{self, WindowOrigin};
use crate::decide::p2p::P2p;
use crate::decide::summary::{self, Verdict};
use crate::evidence::Evidence;
use crate::model::platform::Judgement;

/// What was decided of the evidence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub diagnosis: Diagnosis,
    pub verdict: Verdict,
    /// One sentence with the numbers that decided the diagnosis.
    pub summary: String,
    /// What the machine is, how sure, and the signs.
    pub platform: Judgement,
    /// How the window came to be, and the numbers that say so.
    pub origin: WindowOrigin,
    pub hints: Vec<Hint>,
    /// Peer-to-peer between the GPUs, when it was decided.
    pub p2p: Option<P2p>,
}

/// Diagnoses `ev`, infers the guest's setup, finds the hints and decides
/// the verdict, with `p2p` (decided from the same input) failing it where
/// peer-to-peer was expected and a gate refuses.
pub(crate) fn conclude(ev: &Evidence, p2p: Option<P2p>) -> Decision {
    let diagnosis = diagnose(ev);
    let model = origin::infer(ev);
    let hints = hints(ev, &diagnosis, model.as_ref());
    let origin = origin::origin(ev, model.as_ref());
    let verdict = summary::verdict(ev, &diagnosis, p2p.as_ref().is_some_and(P2p::fails_check));
    Decision {
        summary: summary::describe(ev, &diagnosis),
        platform: ev.firmware.judge(),
        diagnosis,
        verdict,
        origin,
        hints,
        p2p,
    }
}
