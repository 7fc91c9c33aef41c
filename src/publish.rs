//! `gpu-preflight publish`: the running system's half of the boot check,
//! run once per boot by `gpu-preflight-publish.service`.
//!
//! The initramfs cannot write to the real root (it is mounted read-only
//! there) and node_exporter is not running yet, so the boot step leaves its
//! files in `/run/gpu-preflight/`. This command copies the metrics into the
//! configured node_exporter textfile directory and, when `remediate=1`, runs
//! `remediate` after a boot whose report failed.

use crate::atomic_file;
use crate::boot::{METRICS_FILE, OUT_DIR, REPORT_FILE};
use crate::cli::{SelectionArgs, EXIT_CANNOT_INSPECT, EXIT_OK};
use crate::remediate::{self, RemediateArgs};
use crate::root::Root;
use crate::settings::Settings;
use clap::Args;
use std::path::PathBuf;

/// Our file in the textfile directory; node_exporter reads `*.prom`.
pub const TEXTFILE_NAME: &str = "gpu-preflight.prom";

#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    /// Directory that plays the system root.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,

    /// Configuration file [default: /etc/gpu-preflight.conf under the root].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where the boot step left its files [default: /run/gpu-preflight under the root].
    #[arg(long, value_name = "DIR")]
    pub in_dir: Option<PathBuf>,
}

pub fn run(args: &PublishArgs) -> u8 {
    let root = Root::new(&args.root);
    let in_dir = args.in_dir.clone().unwrap_or_else(|| root.join(OUT_DIR));
    let (settings, warnings) = Settings::load(&root, args.config.as_deref());
    for w in &warnings {
        eprintln!("warning: config: {w}");
    }
    let mut exit = EXIT_OK;

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
                                exit = EXIT_CANNOT_INSPECT;
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
            .and_then(|t| remediate::report_calls_for_it(&t))
        {
            Err(e) => println!(
                "gpu-preflight: remediate=1 but no usable boot report ({}: {e}); not remediating",
                report_path.display()
            ),
            Ok(false) => println!("gpu-preflight: the boot check passed: nothing to remediate"),
            Ok(true) => {
                let r = RemediateArgs {
                    root: args.root.clone(),
                    dry_run: false,
                    no_regenerate: false,
                    undo: false,
                    chroot: false,
                    config: args.config.clone(),
                    dmesg: None,
                    selection: SelectionArgs {
                        selectors: Vec::new(),
                        expect: None,
                    },
                };
                // Exit 1 (a host-side problem, its hints printed to the
                // journal) is not this unit failing; exit 3 is.
                if remediate::run(&r) == EXIT_CANNOT_INSPECT {
                    exit = EXIT_CANNOT_INSPECT;
                }
            }
        }
    }
    exit
}
