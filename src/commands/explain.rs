//! `explain`: the same diagnosis from saved text when there is no live
//! system to read (see `evidence::text`).

use crate::evidence::text::gather;
use crate::model::select::Selector;
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
    let ev = gather(&text, selectors, expect).ok_or(ExplainError::NoEvidence)?;
    Ok(report::conclude(started, Mode::Explain, &ev, Vec::new()))
}
