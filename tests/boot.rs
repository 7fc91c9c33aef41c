//! `gpu-preflight boot`, as the initramfs hooks run it: the files it leaves
//! in the out directory, its console line, its kernel-log records (on stderr
//! here: a fixture root has no /dev/kmsg) and its exit status, which stops
//! the boot only for a failed check in strict mode.

pub mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use support::{bin, copy_root, fixture, put};

const FAILING: &str = "ovmf-8x32g-hole1t";
const HEALTHY: &str = "ovmf-8x16g";

struct Run {
    out: Output,
    out_dir: tempfile::TempDir,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn show(&self) -> String {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }
    /// The directory the command was told to create and write.
    fn dir(&self) -> std::path::PathBuf {
        self.out_dir.path().join("gpu-preflight")
    }
    fn file(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.dir().join(name)).ok()
    }
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.dir())
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// A copy of a captured boot with `conf` as /etc/gpu-preflight.conf and
/// `extra` appended to /proc/cmdline.
fn root_for(case: &str, conf: Option<&[u8]>, extra: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_root(case, t.path());
    if let Some(c) = conf {
        fs::create_dir_all(t.path().join("etc")).unwrap();
        fs::write(t.path().join("etc/gpu-preflight.conf"), c).unwrap();
    }
    if !extra.is_empty() {
        let c = fs::read_to_string(t.path().join("proc/cmdline")).unwrap();
        put(
            t.path(),
            "proc/cmdline",
            &format!("{} {extra}\n", c.trim_end()),
        );
    }
    t
}

fn boot(root: &Path, case: &str) -> Run {
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .arg("boot")
        .arg("--root")
        .arg(root)
        .arg("--out-dir")
        .arg(out_dir.path().join("gpu-preflight"))
        .arg("--dmesg")
        .arg(fixture(case).join("dmesg.txt"))
        .output()
        .unwrap();
    Run { out, out_dir }
}

const SELECT: &[u8] = b"# the stand-ins\nmatch=1af4:1110\nexpect=8\n";

#[test]
fn warn_mode_reports_a_failure_and_lets_the_boot_continue() {
    let t = root_for(FAILING, Some(SELECT), "");
    let r = boot(t.path(), FAILING);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(
        r.files(),
        vec!["metrics.prom", "report.json"],
        "no temporary files left"
    );
    let report: serde_json::Value = serde_json::from_str(&r.file("report.json").unwrap()).unwrap();
    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["diagnosis"], "firmware_left_unassigned");
    assert_eq!(report["found"], 8);
    assert!(r
        .file("metrics.prom")
        .unwrap()
        .contains("gpu_preflight_ok 0"));
    // One console line.
    assert_eq!(r.stdout().lines().count(), 1, "{}", r.show());
    assert!(
        r.stdout()
            .starts_with("gpu-preflight: FAIL: firmware_left_unassigned"),
        "{}",
        r.show()
    );
    // The kernel-log records, verdict first.
    let first = r.stderr().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("gpu-preflight: verdict=fail diagnosis=firmware_left_unassigned"),
        "{}",
        r.show()
    );
    assert!(
        r.stderr()
            .contains("gpu-preflight: hint guest-pci-realloc: "),
        "{}",
        r.show()
    );
}

#[test]
fn strict_mode_on_the_command_line_stops_the_boot_with_exit_4() {
    let t = root_for(FAILING, Some(SELECT), "gpu_preflight.mode=strict");
    let r = boot(t.path(), FAILING);
    assert_eq!(r.code(), Some(4), "{}", r.show());
    assert!(
        r.stdout().contains("strict mode: stopping the boot"),
        "{}",
        r.show()
    );
    assert!(r.file("report.json").is_some());
}

#[test]
fn an_expected_p2p_refusal_says_so_where_the_boot_stops() {
    // The BARs are fine and the clique is missing: the console line and
    // the log must name peer-to-peer and its fix, not the BARs' "ok".
    const CASE: &str = "p2p-h200x2-no-clique";
    // In the file: this capture's command line ends in `--` (init's
    // arguments), past which the kernel's are not read.
    let t = root_for(CASE, Some(b"mode=strict\nexpect_p2p=1\n"), "");
    let r = boot(t.path(), CASE);
    assert_eq!(r.code(), Some(4), "{}", r.show());
    assert!(
        r.stdout()
            .contains("stopping the boot: peer-to-peer expected but refused: driver: "),
        "{}",
        r.show()
    );
    assert!(!r.stdout().contains(": ok: "), "{}", r.show());
    assert!(
        r.stderr().contains("hint p2p-gpudirect-clique: "),
        "{}",
        r.show()
    );
    // Without expect_p2p the same boot is the BARs' and continues.
    let t = root_for(CASE, Some(b"mode=strict\n"), "");
    let r = boot(t.path(), CASE);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert!(!r.stderr().contains("hint p2p-"), "{}", r.show());
}

#[test]
fn strict_mode_with_a_healthy_boot_continues() {
    let t = root_for(HEALTHY, Some(b"match=1af4:1110\nmode=strict\n"), "");
    let r = boot(t.path(), HEALTHY);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert!(r.stdout().starts_with("gpu-preflight: ok"), "{}", r.show());
}

#[test]
fn the_command_line_wins_over_the_file() {
    let t = root_for(
        FAILING,
        Some(b"match=1af4:1110\nmode=strict\n"),
        "gpu_preflight.mode=warn",
    );
    assert_eq!(boot(t.path(), FAILING).code(), Some(0));
    let t = root_for(
        FAILING,
        Some(b"match=1af4:1110\n"),
        "gpu_preflight.mode=off",
    );
    let r = boot(t.path(), FAILING);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(r.files(), Vec::<String>::new());
    assert!(r.stdout().contains("mode=off"), "{}", r.show());
}

#[test]
fn garbage_configuration_is_reported_and_ignored() {
    let garbage: &[u8] =
        b"\xff\xfe\x00binary\nmode=panic\nexpect=lots\n=\nmatch=1af4:1110\nmode=strict\n";
    let t = root_for(FAILING, Some(garbage), "gpu_preflight.timeout=soon");
    let r = boot(t.path(), FAILING);
    // The valid lines still count: strict, and the check failed.
    assert_eq!(r.code(), Some(4), "{}", r.show());
    let report: serde_json::Value = serde_json::from_str(&r.file("report.json").unwrap()).unwrap();
    let warnings = report["warnings"].as_array().unwrap();
    let config: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("config: "))
        .collect();
    assert_eq!(config.len(), 5, "{config:#?}");
    assert!(
        r.stderr().contains("gpu-preflight: config: "),
        "{}",
        r.show()
    );
}

#[test]
fn nothing_to_inspect_is_logged_and_never_stops_the_boot() {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "etc/gpu-preflight.conf", "mode=strict\n");
    put(t.path(), "proc/cmdline", "ro\n");
    let r = boot(t.path(), FAILING);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert!(r.stdout().contains("could not inspect"), "{}", r.show());
    assert!(
        r.stderr().contains("gpu-preflight: could not inspect"),
        "{}",
        r.show()
    );
}

#[test]
fn an_unwritable_out_dir_is_logged_and_the_boot_continues() {
    let t = root_for(FAILING, Some(SELECT), "");
    let blocker = t.path().join("run");
    fs::write(&blocker, "a file where /run should be").unwrap();
    let out = Command::new(bin())
        .arg("boot")
        .arg("--root")
        .arg(t.path())
        .arg("--dmesg")
        .arg(fixture(FAILING).join("dmesg.txt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create") && err.contains("run/gpu-preflight"),
        "{err}"
    );
}

/// Puts a FIFO that nobody writes to at `rel` below `root` (the file's
/// real place, where sysfs has it behind a link): opening it for reading
/// never returns, as a read stuck in a driver does not.
fn plant_fifo(root: &Path, rel: &str) {
    let p = root.join(rel);
    let real = fs::canonicalize(p.parent().unwrap())
        .unwrap()
        .join(p.file_name().unwrap());
    let _ = fs::remove_file(&real);
    let st = Command::new("mkfifo").arg(&real).status().unwrap();
    assert!(st.success(), "mkfifo {}", real.display());
}

/// The pid in the parent's line, `... killed the check (pid N) ...`.
fn abandoned_pid(stderr: &str) -> Option<i32> {
    let rest = stderr.split("killed the check (pid ").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

#[test]
fn a_read_that_never_returns_costs_the_timeout_and_one_line() {
    // The check reads every function's class; this one never answers.
    for mode in ["warn", "strict"] {
        let t = root_for(
            FAILING,
            Some(SELECT),
            &format!("gpu_preflight.timeout=0.5 gpu_preflight.mode={mode}"),
        );
        plant_fifo(t.path(), "sys/bus/pci/devices/0000:00:00.0/class");
        let started = std::time::Instant::now();
        let r = boot(t.path(), FAILING);
        let took = started.elapsed();
        // Not knowing is no reason to stop a boot, strict or not.
        assert_eq!(r.code(), Some(0), "{mode}: {}", r.show());
        assert!(
            took >= std::time::Duration::from_millis(500)
                && took < std::time::Duration::from_millis(1500),
            "{mode}: took {took:?}"
        );
        // One record, and the console line; no report.
        assert_eq!(r.stderr().lines().count(), 1, "{}", r.show());
        assert!(
            r.stderr().starts_with(
                "gpu-preflight: no result within 0.5 s (gpu_preflight.timeout): killed the check (pid "
            ) && r.stderr().trim_end().ends_with("without waiting for it; boot continues"),
            "{}",
            r.show()
        );
        assert!(
            r.stdout()
                .starts_with("gpu-preflight: no result within 0.5 s"),
            "{}",
            r.show()
        );
        assert_eq!(r.files(), Vec::<String>::new());
        // The child was sent SIGKILL: it is soon gone, or a zombie waiting
        // for whoever inherited it (its output closed before it got there).
        let pid = abandoned_pid(&r.stderr()).expect("a pid");
        let dead = || {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.is_empty() || stat.rsplit(") ").next().unwrap().starts_with('Z')
        };
        let mut tries = 0;
        while !dead() && tries < 50 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            tries += 1;
        }
        assert!(dead(), "{pid} still running 5 s after the kill");
    }
}

#[test]
fn a_fifo_for_the_configuration_or_the_command_line_does_not_hold_the_parent() {
    // The parent reads only these two, and only regular files: a FIFO at
    // either path is a warning, not a wait.
    let t = root_for(FAILING, None, "");
    put(t.path(), "etc/gpu-preflight.conf", "");
    plant_fifo(t.path(), "etc/gpu-preflight.conf");
    plant_fifo(t.path(), "proc/cmdline");
    let started = std::time::Instant::now();
    let r = boot(t.path(), FAILING);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let report: serde_json::Value = serde_json::from_str(&r.file("report.json").unwrap()).unwrap();
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("not a regular file"))
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
}

#[test]
fn a_check_that_crashes_or_panics_is_one_line_and_the_boot_continues() {
    for (fault, line) in [
        ("check-crash", "the check crashed (signal 11)"),
        ("check-panic", "the check failed (exit status 101)"),
    ] {
        let t = root_for(FAILING, Some(SELECT), "gpu_preflight.mode=strict");
        let out_dir = tempfile::tempdir().unwrap();
        let out = Command::new(bin())
            .args(["boot", "--root"])
            .arg(t.path())
            .arg("--out-dir")
            .arg(out_dir.path().join("gpu-preflight"))
            .arg("--dmesg")
            .arg(fixture(FAILING).join("dmesg.txt"))
            .env("GPU_PREFLIGHT_FAILPOINT", fault)
            .output()
            .unwrap();
        let r = Run { out, out_dir };
        assert_eq!(r.code(), Some(0), "{fault}: {}", r.show());
        let record =
            format!("gpu-preflight: {line}: GPU BARs not checked this boot; boot continues");
        assert!(
            r.stderr().lines().any(|l| l == record),
            "{fault}: {}",
            r.show()
        );
        assert!(
            r.stdout().trim_end().ends_with("boot continues"),
            "{}",
            r.show()
        );
    }
}

#[test]
fn a_fast_check_is_not_held_to_the_timeout() {
    // A healthy run returns as soon as the check is done, not at the
    // timeout: the parent sleeps until the child's exit wakes it.
    let t = root_for(HEALTHY, Some(b"match=1af4:1110\ntimeout=30\n"), "");
    let started = std::time::Instant::now();
    let r = boot(t.path(), HEALTHY);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(r.stdout().starts_with("gpu-preflight: ok"), "{}", r.show());
}

/// Boot then publish on one root, as the initramfs and then
/// gpu-preflight-publish.service do on a real system.
fn boot_then_publish(t: &Path) -> Output {
    let o = Command::new(bin())
        .arg("boot")
        .arg("--root")
        .arg(t)
        .arg("--dmesg")
        .arg(fixture(FAILING).join("dmesg.txt"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    Command::new(bin())
        .arg("publish")
        .arg("--root")
        .arg(t)
        .output()
        .unwrap()
}

#[test]
fn publish_copies_the_metrics_into_the_textfile_directory() {
    let t = root_for(
        FAILING,
        Some(b"match=1af4:1110\ntextfile_dir=/var/lib/prometheus/node-exporter\n"),
        "",
    );
    let dir = t.path().join("var/lib/prometheus/node-exporter");
    fs::create_dir_all(&dir).unwrap();
    let o = boot_then_publish(t.path());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let published = fs::read_to_string(dir.join("gpu-preflight.prom")).unwrap();
    assert_eq!(
        published,
        fs::read_to_string(t.path().join("run/gpu-preflight/metrics.prom")).unwrap()
    );
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary files: {names:?}");
    // Nothing else was written: remediate is off by default.
    assert!(!t.path().join("var/lib/gpu-preflight").exists());
}

#[test]
fn publish_without_a_textfile_directory_says_so_and_succeeds() {
    let t = root_for(
        FAILING,
        Some(b"match=1af4:1110\ntextfile_dir=/var/lib/prometheus/node-exporter\n"),
        "",
    );
    let o = boot_then_publish(t.path());
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("does not exist"));
    assert!(
        !t.path().join("var/lib/prometheus").exists(),
        "not created by us"
    );
}

#[test]
fn publish_runs_remediate_when_enabled_and_the_boot_failed() {
    let t = root_for(
        FAILING,
        Some(b"match=1af4:1110\nexpect=8\n"),
        "gpu_preflight.remediate=1",
    );
    put(
        t.path(),
        "etc/default/grub",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
    );
    let o = boot_then_publish(t.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("wrote") && out.contains("99-gpu-preflight.cfg"),
        "{out}"
    );
    assert!(t
        .path()
        .join("etc/default/grub.d/99-gpu-preflight.cfg")
        .exists());

    // A healthy boot's report calls for nothing.
    let h = root_for(HEALTHY, Some(b"match=1af4:1110\nremediate=1\n"), "");
    put(
        h.path(),
        "etc/default/grub",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
    );
    let o = Command::new(bin())
        .arg("boot")
        .arg("--root")
        .arg(h.path())
        .arg("--dmesg")
        .arg(fixture(HEALTHY).join("dmesg.txt"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let o = Command::new(bin())
        .arg("publish")
        .arg("--root")
        .arg(h.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to remediate"));
    assert!(!h.path().join("etc/default/grub.d").exists());
}
