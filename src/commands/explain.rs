//! `explain`: the same diagnosis from saved text when there is no live
//! system to read (see `evidence::text`).

use crate::decide::p2p;
use crate::evidence::text::gather;
use crate::evidence::Evidence;
use crate::model::select::Selector;
use crate::parse::p2p_text;
use crate::read::root::read_lossy;
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
                "no PCI resource messages or lspci device entries in the input: nothing to explain"
            ),
        }
    }
}

/// Reads the files as one text (each lossily: a log with stray bytes is
/// still a log) and explains it.
pub(crate) fn run(
    files: &[PathBuf],
    selectors: &[Selector],
    expect: Option<usize>,
) -> Result<Report, ExplainError> {
    let started = std::time::Instant::now();
    let mut text = String::new();
    for f in files {
        text.push_str(&read_lossy(f).map_err(|e| ExplainError::Read(f.clone(), e))?);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let p2p_text = p2p_text::parse(&text);
    let ev = match gather(&text, selectors, expect) {
        Some(ev) => ev,
        // Peer-to-peer text alone (a topo matrix, an NCCL log) is worth
        // its section; the BAR part then says it saw no PCI evidence.
        None if !p2p_text.is_empty() => Evidence::default(),
        None => return Err(ExplainError::NoEvidence),
    };
    let p2p = (!p2p_text.is_empty()).then(|| p2p::from_text(&p2p_text, false, ev.cpu.vendor));
    Ok(report::conclude(
        started,
        Mode::Explain,
        &ev,
        Vec::new(),
        p2p,
    ))
}
