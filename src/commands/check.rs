//! `check`: this system (or the tree at `--root`), read, diagnosed and
//! reported.

use crate::evidence::system::{gather, CannotInspect, SystemSource};
use crate::read::root::Root;
use crate::report::{self, kmsg, Mode, Report};

/// The check: evidence from the system, then the report. The warnings met
/// while reading go into the report (and to the log at `-v`).
pub(crate) fn run(src: &SystemSource) -> Result<Report, CannotInspect> {
    let started = std::time::Instant::now();
    let (ev, warnings) = gather(src)?;
    for w in &warnings {
        log::info!("{w}");
    }
    Ok(report::conclude(started, Mode::Check, &ev, warnings))
}

/// Writes the verdict and hints to the root's /dev/kmsg, or stderr.
pub(crate) fn send_to_kmsg(root: &Root, report: &Report) {
    let dev = root.join("dev/kmsg");
    if let Err(e) = kmsg::write_records(&dev, &kmsg::records(report), &mut std::io::stderr()) {
        log::info!("cannot write {}: {e}", dev.display());
    }
}
