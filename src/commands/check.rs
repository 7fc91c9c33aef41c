//! `check`: this system (or the tree at `--root`), read, diagnosed and
//! reported.

use crate::decide::{self, p2p};
use crate::evidence::system::{gather, CannotInspect, SystemSource};
use crate::read::root::Root;
use crate::report::{self, kmsg, Mode, Report};

/// The check: evidence from the system, then the report. The warnings met
/// while reading go into the report (and to the log at `-v`).
pub(crate) fn run(src: &SystemSource) -> Result<Report, CannotInspect> {
    run_with(src, false)
}

/// The check, with the peer-to-peer section when there are two GPUs or
/// more, or `expect_p2p` asks for it (then a refused gate fails the
/// verdict; otherwise the section is advice). Gather, decide, report: the
/// system is read once, in `evidence::system::gather`.
pub(crate) fn run_with(src: &SystemSource, expect_p2p: bool) -> Result<Report, CannotInspect> {
    let started = std::time::Instant::now();
    let g = gather(src, expect_p2p)?;
    let p2p = g.p2p.as_ref().map(|pev| p2p::decide(pev, expect_p2p));
    for w in &g.warnings {
        log::info!("{w}");
    }
    let decision = decide::conclude(&g.evidence, p2p);
    Ok(report::build(
        started,
        Mode::Check,
        &g.evidence,
        decision,
        g.warnings,
    ))
}

/// Writes the verdict and hints to the root's /dev/kmsg, or stderr.
pub(crate) fn send_to_kmsg(root: &Root, report: &Report) {
    let dev = root.join("dev/kmsg");
    let mut device = crate::read::kmsg::open_for_records(&dev);
    let device = device.as_mut().map(|f| f as &mut dyn std::io::Write);
    if let Err(e) = kmsg::write_records(device, &kmsg::records(report), &mut std::io::stderr()) {
        log::info!("cannot write {}: {e}", dev.display());
    }
}
