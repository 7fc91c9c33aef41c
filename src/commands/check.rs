//! `check`: this system (or the tree at `--root`), read, diagnosed and
//! reported.

use crate::decide::p2p::{self, P2p};
use crate::evidence::system::{gather, CannotInspect, SystemSource};
use crate::evidence::{self, Evidence};
use crate::read::cpuid::{self, CpuidView};
use crate::read::kmsg as kernel_log_file;
use crate::read::root::Root;
use crate::report::{self, kmsg, Mode, Report};

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
    Ok(report::conclude(
        started,
        Mode::Check,
        &ev,
        warnings,
        p2p.map(|(p, _)| p),
    ))
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
        nccl_env(std::env::vars_os())
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

/// The environment's `NCCL_*` pairs. Not `std::env::vars`, which panics on
/// a variable that is not UTF-8 (any variable, NCCL's or not): a value
/// that is not is kept with its bad bytes replaced.
fn nccl_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(String, String)> {
    vars.filter_map(|(k, v)| {
        let k = k.into_string().ok()?;
        k.starts_with("NCCL_")
            .then(|| (k, v.to_string_lossy().into_owned()))
    })
    .collect()
}

/// Writes the verdict and hints to the root's /dev/kmsg, or stderr.
pub(crate) fn send_to_kmsg(root: &Root, report: &Report) {
    let dev = root.join("dev/kmsg");
    if let Err(e) = kmsg::write_records(&dev, &kmsg::records(report), &mut std::io::stderr()) {
        log::info!("cannot write {}: {e}", dev.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn a_variable_that_is_not_utf8_is_no_panic() {
        let bad = || OsString::from_vec(b"\xff".to_vec());
        let vars = vec![
            (OsString::from("BAD"), bad()),
            (OsString::from_vec(b"NCCL_\xff".to_vec()), bad()),
            (OsString::from("NCCL_P2P_LEVEL"), OsString::from("PHB")),
            (OsString::from("NCCL_DEBUG"), bad()),
        ];
        assert_eq!(
            nccl_env(vars.into_iter()),
            [
                ("NCCL_P2P_LEVEL".to_string(), "PHB".to_string()),
                ("NCCL_DEBUG".to_string(), "\u{fffd}".to_string())
            ]
        );
    }
}
