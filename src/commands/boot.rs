//! `gpu-preflight boot`: what the initramfs hooks run on every boot.
//!
//! It reads the settings, runs the check, leaves the report in
//! `/run/gpu-preflight/` (carried into the real root by both dracut and
//! initramfs-tools), puts the verdict and hints in the kernel log so that
//! `journalctl -k` shows them, and prints one line for the console.
//!
//! The boot must go on whatever happens here, and in time. So the process
//! the hook starts reads only its settings (the configuration file and the
//! kernel command line, regular files opened without blocking), then runs
//! the check in a child (`deadline`) and waits for it until the configured
//! timeout, counted from its own start. A check that hangs (a sysfs read
//! that never returns), crashes or fails costs one kernel-log line and the
//! timeout at most, never the boot; every failure of the check's own
//! (unreadable sysfs, a full /run, a bad setting) is logged and the boot
//! continues. Only a completed check that failed, in `strict` mode, asks
//! the hook to stop the boot (`run` returns true: exit status 4).

use crate::atomic_file;
use crate::commands::{check, METRICS_FILE, OUT_DIR, REPORT_FILE};
use crate::deadline::{self, Ended};
use crate::decide::diagnosis::DiagnosisKind;
use crate::evidence::system::SystemSource;
use crate::parse::settings::{Mode, Settings};
use crate::read::config;
use crate::read::fw_cfg::{self, DriverLoad};
use crate::read::root::Root;
use crate::report::kmsg::{self, PRIO_ERR, PRIO_INFO, PRIO_WARNING};
use crate::report::{self, Report, Verdict};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The child's exit status when the boot must stop (strict mode, failed
/// check); anything else it exits with is 0.
const STOP: u8 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BootOptions {
    pub root: PathBuf,
    /// Configuration file [default: /etc/gpu-preflight.conf under the root].
    pub config: Option<PathBuf>,
    /// Where to write report.json and metrics.prom [default:
    /// /run/gpu-preflight under the root].
    pub out_dir: Option<PathBuf>,
    pub dmesg: Option<PathBuf>,
}

impl BootOptions {
    /// What `gpu-preflight boot` without options means: the hooks' call.
    pub(crate) fn defaults() -> BootOptions {
        BootOptions {
            root: PathBuf::from("/"),
            config: None,
            out_dir: None,
            dmesg: None,
        }
    }
}

/// Runs the boot step and says it: records to the kernel log (or stderr
/// for a fixture root), a line on the console. Returns whether the hook
/// must stop the boot.
pub(crate) fn run(opts: &BootOptions) -> bool {
    let started = Instant::now();
    let root = Root::new(&opts.root);
    let (settings, config_warnings, cmdline) =
        config::load_with_cmdline(&root, opts.config.as_deref());
    // The kernel log device under the root: a fixture tree has none, and the
    // records then go to stderr instead of the host's log.
    let dev = root.join("/dev/kmsg");
    if settings.mode == Mode::Off {
        let mut records = vec![(PRIO_INFO, "mode=off: boot check skipped".to_string())];
        records.extend(config_records(&config_warnings));
        say(&dev, &records, "gpu-preflight: check skipped (mode=off)");
        return false;
    }
    let tenths = settings.timeout_tenths;
    let deadline = started + Duration::from_millis(u64::from(tenths) * 100);
    let ended = deadline::run_until(deadline, || {
        failpoint();
        let out_dir = opts.out_dir.clone().unwrap_or_else(|| root.join(OUT_DIR));
        let outcome = boot(
            &root,
            &settings,
            &config_warnings,
            &out_dir,
            opts.dmesg.clone(),
            cmdline,
        );
        say(&dev, &outcome.records, &outcome.console);
        if outcome.stop {
            STOP
        } else {
            0
        }
    });
    let why = match ended {
        Ok(Ended::Exited(0)) => return false,
        Ok(Ended::Exited(code)) if code == i32::from(STOP) => return true,
        Ok(Ended::Exited(code)) => format!(
            "the check failed (exit status {code}): GPU BARs not checked this boot; boot continues"
        ),
        Ok(Ended::Signaled(sig)) => format!(
            "the check crashed (signal {sig}): GPU BARs not checked this boot; boot continues"
        ),
        Ok(Ended::Abandoned(pid)) => format!(
            "no result within {}.{} s (gpu_preflight.timeout): killed the check (pid {pid}) without waiting for it; boot continues",
            tenths / 10,
            tenths % 10
        ),
        Ok(Ended::Vanished) => {
            "the check ended unseen: GPU BARs not checked this boot; boot continues".to_string()
        }
        Err(e) => format!(
            "cannot start the check ({e}): GPU BARs not checked this boot; boot continues"
        ),
    };
    say(
        &dev,
        &[(PRIO_WARNING, why.clone())],
        &format!("gpu-preflight: {why}"),
    );
    false
}

/// Records to the kernel log device at `dev` (stderr without one), and
/// the console line.
fn say(dev: &Path, records: &[(u8, String)], console: &str) {
    let mut device = crate::read::kmsg::open_for_records(dev);
    let _ = kmsg::write_records(
        device.as_mut().map(|f| f as &mut dyn std::io::Write),
        records,
        &mut std::io::stderr(),
    );
    // A console that cannot be written (EPIPE, EIO) costs the line, not
    // the boot step: println! would panic.
    let _ = writeln!(std::io::stdout().lock(), "{console}");
}

/// Configuration problems, for the log after the verdict (the kernel log
/// takes only a few records from us); all of them are in report.json.
fn config_records(warnings: &[String]) -> Vec<(u8, String)> {
    warnings
        .iter()
        .map(|w| (PRIO_WARNING, format!("config: {w}")))
        .collect()
}

/// Faults the tests plant in the check's child, by name in
/// `GPU_PREFLIGHT_FAILPOINT`; debug builds only (the release binary reads
/// no such variable).
#[cfg(debug_assertions)]
fn failpoint() {
    match std::env::var("GPU_PREFLIGHT_FAILPOINT").as_deref() {
        Ok("check-crash") => {
            // No core file from a planted crash, and the default action:
            // std's own SIGSEGV handler (for stack overflows) returns from
            // a raised one.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: plain system calls on this process.
            unsafe {
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
        }
        Ok("check-panic") => panic!("planted panic"),
        _ => {}
    }
}

#[cfg(not(debug_assertions))]
fn failpoint() {}

/// What one boot run decided.
#[derive(Debug)]
struct BootRun {
    records: Vec<(u8, String)>,
    console: String,
    stop: bool,
}

fn boot(
    root: &Root,
    settings: &Settings,
    config_warnings: &[String],
    out_dir: &Path,
    dmesg: Option<PathBuf>,
    cmdline: Option<String>,
) -> BootRun {
    let config_records = config_records(config_warnings);
    // Before udev would (dracut's pre-udev hook; under initramfs-tools
    // udev may be first, and the driver then is present): the check reads
    // what the host set in fw_cfg.
    let driver = fw_cfg::load_driver(root, cmdline.as_deref());
    let src = SystemSource {
        root: root.clone(),
        dmesg,
        selectors: settings.selectors.clone(),
        expect: settings.expect,
        // Read once, by the parent, for the settings.
        cmdline: Some(cmdline),
    };
    let mut report = match check::run_with(&src, settings.expect_p2p) {
        Ok(r) => r,
        Err(e) => {
            // Not knowing is not a reason to stop a boot, strict or not:
            // strict stops only on a problem actually found.
            let mut records = vec![(PRIO_ERR, format!("could not inspect: {e}; boot continues"))];
            records.extend(config_records);
            return BootRun {
                records,
                console: format!("gpu-preflight: could not inspect ({e}); boot continues"),
                stop: false,
            };
        }
    };
    report
        .warnings
        .extend(config_warnings.iter().map(|w| format!("config: {w}")));
    if let DriverLoad::Failed(why) = driver {
        report.warnings.push(format!(
            "cannot load the qemu_fw_cfg driver ({why}): what the host set in fw_cfg is assumed"
        ));
    }

    let mut records = kmsg::records(&report);
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
    // A failure the BARs did not cause is an expected P2P's: say that.
    let reason = match report
        .p2p
        .as_ref()
        .and_then(crate::report::p2p::expected_refusal)
    {
        Some(why) if report.diagnosis == DiagnosisKind::Ok => why,
        _ => format!("{}: {}", report.diagnosis.as_str(), report.summary),
    };
    let console = match (failed, stop) {
        (false, _) => format!(
            "gpu-preflight: ok: {} GPU(s), every BAR assigned{where_}",
            report.found
        ),
        (true, false) => format!("gpu-preflight: FAIL: {reason}{where_}"),
        (true, true) => {
            let msg = format!("strict mode: stopping the boot: {reason}");
            records.insert(1, (PRIO_ERR, msg.clone()));
            format!("gpu-preflight: FAIL: {msg}{where_}")
        }
    };
    BootRun {
        records,
        console,
        stop,
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
        (REPORT_FILE, report::json::render(report)),
        (METRICS_FILE, report::prometheus::render(report)),
    ];
    for (name, text) in files {
        let p = out_dir.join(name);
        atomic_file::write(&p, text.as_bytes(), 0o644)
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}
