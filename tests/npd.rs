//! contrib/node-problem-detector's plugin, run as NPD's custom plugin
//! monitor runs it (pkg/custompluginmonitor/plugin/plugin.go: exit 0 OK,
//! 1 a problem, anything else unknown; stdout, trimmed, the message, cut
//! at max_output_length, 80 in our config), on reports `check` writes
//! from the fixtures, in its two modes. tests/shell/npd does the same
//! under dash, busybox and bash --posix, with NPD's timeout and config
//! validation; this one runs with cargo test, under /bin/sh.

pub mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::bin;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The JSON report of a fixture's check, written to a file.
fn report(dir: &Path, fixture: &str) -> PathBuf {
    let f = repo().join("tests/fixtures").join(fixture);
    let scenario = std::fs::read_to_string(f.join("scenario.txt")).unwrap();
    let args: Vec<&str> = scenario
        .lines()
        .find_map(|l| l.strip_prefix("check args: "))
        .unwrap()
        .split_whitespace()
        .collect();
    let o = Command::new(bin())
        .arg("check")
        .arg("--root")
        .arg(f.join("root"))
        .arg("--dmesg")
        .arg(f.join("dmesg.txt"))
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let path = dir.join(format!("{fixture}.json"));
    std::fs::write(&path, &o.stdout).unwrap();
    path
}

/// (exit status, message) as NPD records them.
fn plugin(report: &Path, mode: Option<&str>) -> (i32, String) {
    let o = Command::new("/bin/sh")
        .arg(repo().join("contrib/node-problem-detector/gpu-preflight-npd.sh"))
        .arg(report)
        .args(mode)
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.trim_end().lines().count(), 1, "one line: {out:?}");
    assert!(out.trim().len() <= 80, "{out:?}");
    assert!(
        out.trim().bytes().all(|b| (b' '..=b'~').contains(&b)),
        "{out:?}"
    );
    (o.status.code().unwrap(), out.trim().to_string())
}

#[test]
fn the_configuration_mode_tells_unplaced_gpus_from_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let failing = report(dir.path(), "ovmf-8x32g");
    let healthy = report(dir.path(), "h200-kvm-passthrough");
    let missing = report(dir.path(), "ovmf-7x32g-hole1t-expect8");
    let phys = report(dir.path(), "seabios-40bit-8x128g");
    let cfg = Some("configuration");
    assert_eq!(
        plugin(&failing, cfg),
        (
            1,
            "vm_configuration: 5 GPU(s) present, unplaced; setting cpu-pdpe1gb".into()
        )
    );
    assert_eq!(
        plugin(&phys, cfg),
        (
            1,
            "vm_configuration: 1 GPU(s) present, unplaced; setting cpu-phys-bits".into()
        )
    );
    let none = (
        0,
        "no GPU left unplaced by the VM's configuration".to_string(),
    );
    assert_eq!(plugin(&healthy, cfg), none);
    // A GPU missing is the hardware's or the passthrough's: not this.
    assert_eq!(plugin(&missing, cfg), none);
    // The verdict mode is as it was: the missing GPU is a problem there.
    assert_eq!(plugin(&missing, None).0, 1);
    assert_eq!(plugin(&failing, None).0, 1);
    assert_eq!(plugin(&healthy, None).0, 0);
    // A report made before the field cannot say: unknown, never OK.
    let text = std::fs::read_to_string(&failing).unwrap();
    let older: String = text
        .lines()
        .filter(|l| !l.starts_with("  \"unplaced_by_configuration\":"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(older, text);
    let older_path = dir.path().join("older.json");
    std::fs::write(&older_path, older).unwrap();
    assert_eq!(
        plugin(&older_path, cfg),
        (
            2,
            "gpu-preflight: the report does not say (older gpu-preflight)".into()
        )
    );
    let absent = dir.path().join("absent.json");
    assert_eq!(plugin(&absent, cfg).0, 2);
    assert_eq!(plugin(&healthy, Some("sideways")).0, 2);
}

#[test]
fn the_monitor_config_has_a_condition_for_it() {
    let text = std::fs::read_to_string(
        repo().join("contrib/node-problem-detector/gpu-preflight-monitor.json"),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cond = "GPUUnplacedByVMConfiguration";
    assert!(v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == cond));
    let rule = v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["condition"] == cond)
        .unwrap();
    assert_eq!(rule["type"], "permanent");
    assert_eq!(rule["args"][1], "configuration");
}
