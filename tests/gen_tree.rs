//! Scale test: the synthetic tree the benchmarks use (`bench/run`), at
//! 10,000 PCI functions, must be read and diagnosed correctly: exactly the
//! eight GPUs found among the NIC functions, bridges and the emulated VGA,
//! and exactly the three whose BAR 2 the generator left unassigned.
//!
//! No timing is asserted here (the figures live in BENCHMARKS.md); this only
//! proves the tree the benchmark times is one the checker handles. Runtime
//! stays in seconds in a debug build: most of it is writing the tree.

pub mod support;
use support::gen_tree;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn strings(v: &Value, list: &str, field: &str) -> Vec<String> {
    let mut out: Vec<String> = v[list]
        .as_array()
        .unwrap_or_else(|| panic!("report has no {list:?} array: {v}"))
        .iter()
        .map(|x| x[field].as_str().expect("bdf is a string").to_string())
        .collect();
    out.sort();
    out
}

/// Writes the tree where inodes are cheap: 10,000 functions are some 200,000
/// small files, which a memory-backed `/dev/shm` creates in seconds and a
/// busy disk in minutes. Falls back to the usual temporary directory when
/// `/dev/shm` is missing or too small; `GEN_TREE_TMPDIR` overrides both.
fn generate(functions: usize) -> (tempfile::TempDir, PathBuf, gen_tree::Summary) {
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("GEN_TREE_TMPDIR") {
        bases.push(d.into());
    } else {
        bases.push("/dev/shm".into());
        bases.push(std::env::temp_dir());
    }
    let mut errors = Vec::new();
    for base in bases {
        let dir = match tempfile::Builder::new()
            .prefix("gpu-preflight-gen-")
            .tempdir_in(&base)
        {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("{}: {e}", base.display()));
                continue;
            }
        };
        let root = dir.path().join("tree");
        match gen_tree::generate(&root, &gen_tree::Options::new(functions)) {
            Ok(s) => return (dir, root, s),
            Err(e) => errors.push(format!("{}: {e}", base.display())),
        }
    }
    panic!("could not write the tree anywhere: {}", errors.join("; "));
}

#[test]
fn ten_thousand_functions_eight_gpus_three_unassigned() {
    let (_dir, root, summary) = generate(10_000);
    assert_eq!(summary.functions, 10_000);
    assert_eq!(summary.gpus.len(), 8);
    assert_eq!(summary.unassigned.len(), 3);
    let listed = std::fs::read_dir(root.join("sys/bus/pci/devices"))
        .expect("listing the generated devices")
        .count();
    assert_eq!(listed, 10_000);

    let out = Command::new(support::bin())
        .arg("check")
        .arg("--root")
        .arg(&root)
        .arg("--dmesg")
        .arg(root.join("dmesg.txt"))
        .args(["--format", "json"])
        .output()
        .expect("running gpu-preflight");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit code 1 (problem found) expected; stderr: {stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON report expected ({e}); stderr: {stderr}"));

    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["found"], 8);
    let mut gpus = summary.gpus.clone();
    gpus.sort();
    assert_eq!(strings(&report, "gpus", "bdf"), gpus);
    let mut unassigned = summary.unassigned.clone();
    unassigned.sort();
    let mut reported = strings(&report, "unassigned", "bdf");
    reported.dedup();
    assert_eq!(reported, unassigned);
    // The root window holds five of the eight 128 GiB BARs: the window is
    // the problem, and the report must say so rather than blame phys-bits.
    assert_eq!(report["diagnosis"], "window_too_small");
    assert_eq!(
        report["warnings"].as_array().map(Vec::len),
        Some(0),
        "a well-formed tree must read without warnings: {}",
        report["warnings"]
    );
}
