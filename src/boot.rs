//! `gpu-preflight boot`: what the initramfs hooks run on every boot.
//!
//! It reads the settings, runs the check, leaves the report in
//! `/run/gpu-preflight/` (carried into the real root by both dracut and
//! initramfs-tools), puts the verdict and hints in the kernel log so that
//! `journalctl -k` shows them, and prints one line for the console.
//!
//! The boot must go on whatever happens here: every failure of our own
//! (unreadable sysfs, a full /run, a bad setting) is logged and the exit code
//! stays 0. Only a completed check that failed, in `strict` mode, returns
//! `EXIT_STOP_BOOT`, on which the hook stops the boot. The hook also bounds
//! how long it waits for us (see `shell/gpu-preflight-lib.sh`), so a hang in
//! here costs the configured timeout, not the boot.

use crate::check::{self, CheckOptions};
use crate::kmsg::{self, PRIO_ERR, PRIO_INFO, PRIO_WARNING};
use crate::report::{self, Report, Verdict};
use crate::root::Root;
use crate::settings::{Mode, Settings};
use crate::{atomic_file, cli};
use clap::Args;
use std::path::{Path, PathBuf};

/// Exit status telling the hook to stop the boot (strict mode, check failed).
/// Distinct from the `check` codes so that a crash or a usage error can
/// never be mistaken for it.
pub const EXIT_STOP_BOOT: u8 = 4;

/// Where the boot's report is left for the running system.
pub const OUT_DIR: &str = "/run/gpu-preflight";
pub const REPORT_FILE: &str = "report.json";
pub const METRICS_FILE: &str = "metrics.prom";

#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct BootArgs {
    /// Directory that plays the system root.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,

    /// Configuration file [default: /etc/gpu-preflight.conf under the root].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where to write report.json and metrics.prom [default: /run/gpu-preflight under the root].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Read the kernel log from this dmesg or journalctl -k text instead of /dev/kmsg.
    #[arg(long, value_name = "FILE")]
    pub dmesg: Option<PathBuf>,
}

impl BootArgs {
    /// What `gpu-preflight boot` without options means: the hooks' call.
    pub fn defaults() -> BootArgs {
        BootArgs {
            root: PathBuf::from("/"),
            config: None,
            out_dir: None,
            dmesg: None,
        }
    }
}

pub fn run(args: &BootArgs) -> u8 {
    let root = Root::new(&args.root);
    let out_dir = args.out_dir.clone().unwrap_or_else(|| root.join(OUT_DIR));
    let outcome = boot(&root, args.config.as_deref(), &out_dir, args.dmesg.clone());
    // The kernel log device under the root: a fixture tree has none, and the
    // records then go to stderr instead of the host's log.
    let dev = root.join("/dev/kmsg");
    let _ = kmsg::write_records(&dev, &outcome.records, &mut std::io::stderr());
    println!("{}", outcome.console);
    outcome.exit
}

/// What one boot run decided: the kernel-log records, the console line and
/// the exit status. Separate from `run` so tests can look at all three.
#[derive(Debug)]
pub struct Outcome {
    pub records: Vec<(u8, String)>,
    pub console: String,
    pub exit: u8,
    pub report: Option<Report>,
}

pub fn boot(root: &Root, config: Option<&Path>, out_dir: &Path, dmesg: Option<PathBuf>) -> Outcome {
    let (settings, config_warnings) = Settings::load(root, config);
    // Configuration problems come after the verdict in the log (the kernel
    // log takes only a few records from us) but are all in report.json.
    let config_records: Vec<(u8, String)> = config_warnings
        .iter()
        .map(|w| (PRIO_WARNING, format!("config: {w}")))
        .collect();

    if settings.mode == Mode::Off {
        let mut records = vec![(PRIO_INFO, "mode=off: boot check skipped".to_string())];
        records.extend(config_records);
        return Outcome {
            records,
            console: "gpu-preflight: check skipped (mode=off)".into(),
            exit: 0,
            report: None,
        };
    }

    let opts = CheckOptions {
        root: root.clone(),
        dmesg,
        selectors: settings.selectors.clone(),
        expect: settings.expect,
    };
    let mut report = match check::run(&opts) {
        Ok(r) => r,
        Err(e) => {
            // Not knowing is not a reason to stop a boot, strict or not:
            // strict stops only on a problem actually found.
            let mut records = vec![(PRIO_ERR, format!("could not inspect: {e}; boot continues"))];
            records.extend(config_records);
            return Outcome {
                records,
                console: format!("gpu-preflight: could not inspect ({e}); boot continues"),
                exit: 0,
                report: None,
            };
        }
    };
    report
        .warnings
        .extend(config_warnings.iter().map(|w| format!("config: {w}")));

    let mut records = report::kmsg_records(&report);
    let written = write_outputs(out_dir, &report);
    if let Err(e) = &written {
        // Ahead of the hints: without the files the running system has
        // nothing to publish, which is worth knowing first.
        records.insert(1, (PRIO_ERR, e.clone()));
    }
    records.extend(config_records);

    let failed = report.verdict == Verdict::Fail;
    let stop = failed && settings.mode == Mode::Strict;
    let where_ = if written.is_ok() {
        format!("; report in {}", out_dir.join(REPORT_FILE).display())
    } else {
        String::new()
    };
    let console = match (failed, stop) {
        (false, _) => format!(
            "gpu-preflight: ok: {} GPU(s), every BAR assigned{where_}",
            report.found
        ),
        (true, false) => format!(
            "gpu-preflight: FAIL: {}: {}{where_}",
            report.diagnosis.as_str(),
            report.summary
        ),
        (true, true) => {
            let msg = format!(
                "strict mode: stopping the boot: {}: {}",
                report.diagnosis.as_str(),
                report.summary
            );
            records.insert(1, (PRIO_ERR, msg.clone()));
            format!("gpu-preflight: FAIL: {msg}{where_}")
        }
    };
    Outcome {
        records,
        console,
        exit: if stop { EXIT_STOP_BOOT } else { cli::EXIT_OK },
        report: Some(report),
    }
}

/// Writes report.json and metrics.prom. Each is replaced atomically: the
/// publisher in the running system may read them at any time.
fn write_outputs(out_dir: &Path, report: &Report) -> Result<(), String> {
    std::fs::create_dir_all(out_dir).map_err(|e| {
        format!(
            "cannot create {}: {e}; no report for the running system",
            out_dir.display()
        )
    })?;
    let files = [
        (REPORT_FILE, report::to_json(report)),
        (METRICS_FILE, report::to_prometheus(report)),
    ];
    for (name, text) in files {
        let p = out_dir.join(name);
        atomic_file::write(&p, text.as_bytes(), 0o644)
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}
