//! `explain`: the same diagnosis from saved text when there is no live
//! system to read (see `evidence::text`).

use crate::decide::{self, p2p};
use crate::evidence::text::from_files;
use crate::evidence::Evidence;
use crate::model::platform::Platform;
use crate::model::select::Selector;
use crate::report::{self, Mode, Report};
use std::path::PathBuf;

#[derive(Debug)]
pub(crate) enum ExplainError {
    Read(PathBuf, std::io::Error),
    NoEvidence,
}

impl std::fmt::Display for ExplainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExplainError::Read(p, e) => write!(f, "{}", crate::read::root::cannot_read(p, e)),
            ExplainError::NoEvidence => write!(
                f,
                "no PCI device in the input (no device's resource messages, no lspci entries): nothing to explain"
            ),
        }
    }
}

/// Gathers what the files say (`evidence::text::from_files`), decides and
/// reports: the files are read once, in the evidence layer.
pub(crate) fn run(
    files: &[PathBuf],
    selectors: &[Selector],
    expect: Option<usize>,
    platform: Option<Platform>,
) -> Result<Report, ExplainError> {
    let started = std::time::Instant::now();
    let input = from_files(files, selectors, expect).map_err(|(f, e)| ExplainError::Read(f, e))?;
    let mut ev = match input.evidence {
        Some(ev) => ev,
        // Peer-to-peer text alone (a topo matrix, an NCCL log) is worth
        // its section; the BAR part then says it saw no PCI evidence.
        None if !input.p2p.is_empty() => Evidence::default(),
        None => return Err(ExplainError::NoEvidence),
    };
    ev.platform_told = platform;
    let warnings: Vec<String> = ev.platform_conflict().into_iter().collect();
    let p2p = (!input.p2p.is_empty()).then(|| p2p::from_text(&input.p2p, false, ev.cpu.vendor));
    let decision = decide::conclude(&ev, p2p);
    Ok(report::build(
        started,
        Mode::Explain,
        &ev,
        decision,
        warnings,
    ))
}
