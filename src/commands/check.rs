//! `check`: this system (or the tree at `--root`), read, diagnosed and
//! reported.

use crate::decide::p2p::{self, P2p};
use crate::evidence::system::{gather, CannotInspect, SystemSource};
use crate::evidence::{self, Evidence};
use crate::model::p2p::GateVerdict;
use crate::read::cpuid::{self, CpuidView};
use crate::read::kmsg as kernel_log_file;
use crate::read::root::Root;
use crate::report::{self, kmsg, Mode, Report, Verdict};

/// The check: evidence from the system, then the report. The warnings met
/// while reading go into the report (and to the log at `-v`).
pub(crate) fn run(src: &SystemSource) -> Result<Report, CannotInspect> {
    run_with(src, false)
}

/// The check, with the peer-to-peer section when there are two GPUs or
/// more, or `expect_p2p` asks for it (then a refused gate fails the
/// verdict; otherwise the section is advice).
pub(crate) fn run_with(src: &SystemSource, expect_p2p: bool) -> Result<Report, CannotInspect> {
    let started = std::time::Instant::now();
    let (ev, mut warnings) = gather(src)?;
    let p2p = (ev.gpus.len() >= 2 || expect_p2p).then(|| p2p_section(src, &ev, expect_p2p));
    if let Some((_, w)) = &p2p {
        warnings.extend(w.iter().cloned());
    }
    for w in &warnings {
        log::info!("{w}");
    }
    let mut report = report::conclude(started, Mode::Check, &ev, warnings);
    if let Some((p, _)) = p2p {
        if p.expected && p.verdict == GateVerdict::Refused {
            report.verdict = Verdict::Fail;
        }
        report.p2p = Some(p);
    }
    Ok(report)
}

/// CPUID and the environment are this machine's: read only when the root
/// is the live system, so a captured tree gives the same report anywhere.
fn p2p_section(src: &SystemSource, ev: &Evidence, expected: bool) -> (P2p, Vec<String>) {
    let live = src.root.is_live();
    let cpuid = if live {
        cpuid::view(&cpuid::LiveCpuid)
    } else {
        CpuidView::NotRead
    };
    let env: Vec<(String, String)> = if live {
        std::env::vars()
            .filter(|(k, _)| k.starts_with("NCCL_"))
            .collect()
    } else {
        Vec::new()
    };
    // The BAR check read the log already; a second read costs the one
    // syslog call (or one file) and keeps its interface as it is.
    let mut ignored = Vec::new();
    let log = kernel_log_file::read_log(&src.root, src.dmesg.as_deref(), &mut ignored).ok();
    let pev = evidence::p2p::gather(&src.root, ev, log.as_deref(), cpuid, &env);
    let warnings = pev.warnings.clone();
    (p2p::decide(&pev, expected), warnings)
}

/// Writes the verdict and hints to the root's /dev/kmsg, or stderr.
pub(crate) fn send_to_kmsg(root: &Root, report: &Report) {
    let dev = root.join("dev/kmsg");
    if let Err(e) = kmsg::write_records(&dev, &kmsg::records(report), &mut std::io::stderr()) {
        log::info!("cannot write {}: {e}", dev.display());
    }
}
