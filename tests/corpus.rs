//! Real kernel logs and lspci output from public bug reports
//! (tests/corpus/, each file's header says where from): `explain` must name
//! every endpoint whose memory BAR failed, and call the noise case and the
//! all-assigned case healthy.

pub mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn explain(file: &str, extra: &[&str]) -> (i32, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(file);
    let o = Command::new(support::bin())
        .arg("explain")
        .arg(&path)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

fn named(v: &Value) -> BTreeSet<String> {
    v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["bdf"].as_str().unwrap().to_string())
        .collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const CASES: &[(&str, &str, &[&str])] = &[
    // NVRM's BAR0 is 0M for two of four GPUs (OVMF rejected whole devices).
    (
        "02-lxd-14381-4gpu-ovmf-bar0-0M.txt",
        "fail",
        &["0000:07:00.0", "0000:08:00.0"],
    ),
    // Old wording; every BAR of the hot-plugged V100 failed.
    (
        "05-kata-1704-v100-bar1-no-space.txt",
        "fail",
        &["0000:01:01.0"],
    ),
    // Bare metal; bridge windows (BAR 13-15) failing are not device failures.
    (
        "09-rebaruefi-10-z97-baremetal-realloc.txt",
        "fail",
        &["0000:03:00.0", "0000:04:00.0"],
    ),
    // New wording; VF BARs and an I/O BAR failing are not counted.
    (
        "12-rocm-6281-amdgpu-newformat.txt",
        "fail",
        &[
            "0000:c5:00.0",
            "0000:c8:00.0",
            "0000:c9:00.0",
            "0000:ca:00.0",
        ],
    ),
    // lspci -v: both 64-bit prefetchable BARs <unassigned>.
    (
        "14-mbp2016-tb3-egpu-unassigned.txt",
        "fail",
        &["0000:0a:00.0"],
    ),
    // Empty root ports' I/O windows: harmless.
    ("17-noise-vmware-rootport-io.txt", "ok", &[]),
    // Everything assigned, high in the address space.
    ("19-positive-newformat-rtx5090-assigned.txt", "ok", &[]),
];

#[test]
fn every_corpus_log_gets_its_verdict_and_names_its_failing_devices() {
    for (file, verdict, devices) in CASES {
        let (code, v) = explain(file, &[]);
        assert_eq!(v["verdict"], *verdict, "{file}: {}", v["summary"]);
        assert_eq!(code, if *verdict == "ok" { 0 } else { 1 }, "{file}");
        assert_eq!(named(&v), set(devices), "{file}");
        assert_eq!(v["mode"], "explain");
    }
}

#[test]
fn the_positive_case_finds_its_gpu_with_its_bars() {
    let (_, v) = explain("19-positive-newformat-rtx5090-assigned.txt", &[]);
    assert_eq!(v["found"], 1);
    let g = &v["gpus"][0];
    assert_eq!(g["bdf"], "0000:84:00.0");
    assert_eq!(g["vendor"], "10de");
    let bar1 = g["bars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["index"] == 1)
        .unwrap();
    assert_eq!(bar1["start"], 0xe05c0000000u64);
    assert_eq!(bar1["size"], 256u64 << 20);
    assert_eq!(bar1["assigned"], true);
}

#[test]
fn the_kata_v100_is_a_gpu_with_its_16g_bar_sized_from_the_log() {
    let (_, v) = explain("05-kata-1704-v100-bar1-no-space.txt", &["--expect", "1"]);
    assert_eq!(v["found"], 1);
    let un = v["unassigned"].as_array().unwrap();
    let bar1 = un.iter().find(|u| u["bar"] == 1).unwrap();
    assert_eq!(bar1["size"], 16u64 << 30);
}

#[test]
fn the_whole_corpus_read_as_one_file_still_names_every_failure() {
    // Several reports pasted into one file: the union of the failures.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let files: Vec<_> = CASES.iter().map(|(f, ..)| dir.join(f)).collect();
    let o = Command::new(support::bin())
        .arg("explain")
        .args(&files)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let want: BTreeSet<String> = CASES
        .iter()
        .flat_map(|(_, _, d)| d.iter().map(|s| s.to_string()))
        .collect();
    assert_eq!(named(&v), want);
}

#[test]
fn lspci_v_alone_identifies_the_gpu_and_its_unnumbered_bars() {
    // Plain `lspci -v` prints no region numbers and no ids: the class and
    // vendor come from names, BAR numbers from counting 64-bit pairs.
    let (_, v) = explain("14-mbp2016-tb3-egpu-unassigned.txt", &[]);
    assert_eq!(v["found"], 1);
    assert_eq!(v["gpus"][0]["vendor"], "10de");
    assert_eq!(v["gpus"][0]["device"], "1b80");
    let bars: Vec<u64> = v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["bar"].as_u64().unwrap())
        .collect();
    assert_eq!(bars, [1, 3]);
    assert_eq!(v["diagnosis"], "unknown");
}
