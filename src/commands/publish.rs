//! `gpu-preflight publish`: the running system's half of the boot check,
//! run once per boot by `gpu-preflight-publish.service`.
//!
//! The initramfs cannot write to the real root (it is mounted read-only
//! there) and node_exporter is not running yet, so the boot step leaves its
//! files in `/run/gpu-preflight/`. This command copies the metrics into the
//! configured node_exporter textfile directory and, when `remediate=1`, runs
//! `remediate` after a boot whose report failed.

use crate::atomic_file;
use crate::commands::remediate::{self, RemediateOptions};
use crate::commands::{METRICS_FILE, OUT_DIR, REPORT_FILE};
use crate::read::config;
use crate::read::root::Root;
use crate::remediate::Status;
use std::path::PathBuf;

/// Our file in the textfile directory; node_exporter reads `*.prom`.
const TEXTFILE_NAME: &str = "gpu-preflight.prom";

#[derive(Debug, Clone)]
pub(crate) struct PublishOptions {
    pub root: PathBuf,
    pub config: Option<PathBuf>,
    /// Where the boot step left its files [default: /run/gpu-preflight
    /// under the root].
    pub in_dir: Option<PathBuf>,
}

/// Whether everything that was to be written could be: `false` when the
/// metrics or the remediation could not be written.
pub(crate) fn run(opts: &PublishOptions) -> bool {
    let root = Root::new(&opts.root);
    let in_dir = opts.in_dir.clone().unwrap_or_else(|| root.join(OUT_DIR));
    let (settings, warnings) = config::load(&root, opts.config.as_deref());
    for w in &warnings {
        eprintln!("warning: config: {w}");
    }
    let mut written = true;

    match &settings.textfile_dir {
        None => println!("gpu-preflight: no textfile_dir configured: metrics not published"),
        Some(dir) => {
            let target_dir = root.join(dir);
            let src = in_dir.join(METRICS_FILE);
            if !target_dir.is_dir() {
                // node_exporter creates it; without it there is no reader.
                println!(
                    "gpu-preflight: {} does not exist (is node_exporter installed?): metrics not published",
                    target_dir.display()
                );
            } else {
                match std::fs::read(&src) {
                    Err(e) => println!(
                        "gpu-preflight: no metrics from this boot's check ({}: {e}); \
                         is the initramfs built with the gpu-preflight hook?",
                        src.display()
                    ),
                    Ok(bytes) => {
                        let dst = target_dir.join(TEXTFILE_NAME);
                        match atomic_file::write(&dst, &bytes, 0o644) {
                            Ok(()) => println!("gpu-preflight: published {}", dst.display()),
                            Err(e) => {
                                eprintln!("error: cannot write {}: {e}", dst.display());
                                written = false;
                            }
                        }
                    }
                }
            }
        }
    }

    if settings.remediate {
        let report_path = in_dir.join(REPORT_FILE);
        match std::fs::read_to_string(&report_path)
            .map_err(|e| e.to_string())
            .and_then(|t| report_failed(&t))
        {
            Err(e) => println!(
                "gpu-preflight: remediate=1 but no usable boot report ({}: {e}); not remediating",
                report_path.display()
            ),
            Ok(false) => println!("gpu-preflight: the boot check passed: nothing to remediate"),
            Ok(true) => {
                let r = RemediateOptions {
                    root: opts.root.clone(),
                    dry_run: false,
                    no_regenerate: false,
                    undo: false,
                    chroot: false,
                    config: opts.config.clone(),
                    dmesg: None,
                    selectors: Vec::new(),
                    expect: None,
                };
                // A host-side problem (its hints printed to the journal) is
                // not this unit failing; a write that failed is.
                if remediate::run(&r) == Status::Failed {
                    written = false;
                }
            }
        }
    }
    written
}

/// Whether a boot report (as JSON) failed: then remediate decides between
/// adding the parameter and printing the host-side hints.
fn report_failed(report_json: &str) -> Result<bool, String> {
    let v: serde_json::Value = serde_json::from_str(report_json).map_err(|e| e.to_string())?;
    Ok(v.get("verdict").and_then(|x| x.as_str()) == Some("fail"))
}
