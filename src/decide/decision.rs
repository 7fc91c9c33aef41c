//! Everything decided of one system's or one text's evidence, in one
//! value the report renders: the diagnosis, the verdict and its sentence,
//! the platform, how the window came to be, the hints, and the P2P
//! section decided beside it. `check`, `explain` and `boot` gather, then
//! `conclude`, then build the report.

use crate::decide::diagnosis::{diagnose, Diagnosis};
use crate::decide::hint::{Hint, HintId};
use crate::decide::hints::hints;
use crate::decide::origin::{self, WindowOrigin};
use crate::decide::p2p::P2p;
use crate::decide::summary::{self, Verdict};
use crate::evidence::Evidence;
use crate::model::platform::{Judgement, Platform};
use serde::Serialize;

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
    /// Where the input does not show the platform: the first step on each
    /// of the two likeliest (a QEMU/KVM guest, a real machine), as the
    /// hints would be with `--platform` naming it. Empty otherwise.
    pub branches: Vec<Branch>,
}

/// The first step if the machine is `platform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Branch {
    pub platform: Platform,
    pub hint: HintId,
}

/// The platforms a text that does not show its own most likely comes
/// from: a QEMU/KVM guest (every managed stack of the corpus's VMs but
/// VMware and Hyper-V) and a real machine.
const LIKELIEST: [Platform; 2] = [Platform::Qemu, Platform::BareMetal];

/// The first step on each of the likeliest platforms, where the input
/// does not show which it is and there is a step at all.
fn branches(ev: &Evidence) -> Vec<Branch> {
    if ev.platform() != Platform::Unknown {
        return Vec::new();
    }
    let out: Vec<Branch> = LIKELIEST
        .into_iter()
        .filter_map(|platform| {
            let mut told = ev.clone();
            told.platform_told = Some(platform);
            let d = diagnose(&told);
            let model = origin::infer(&told);
            let first = hints(&told, &d, model.as_ref()).first()?.id;
            Some(Branch {
                platform,
                hint: first,
            })
        })
        .collect();
    // Where each platform's first step is the same, the platform is not
    // the question: the report leads with that step.
    if out.len() == LIKELIEST.len() && out.iter().all(|b| b.hint == out[0].hint) {
        return Vec::new();
    }
    out
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
    let branches = if hints.is_empty() {
        Vec::new()
    } else {
        branches(ev)
    };
    Decision {
        summary: summary::summary(ev, &diagnosis),
        platform: ev.judgement(),
        diagnosis,
        verdict,
        origin,
        hints,
        p2p,
        branches,
    }
}
