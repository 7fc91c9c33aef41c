//! Bad input gets a clear warning and loses nothing else: malformed and
//! short files, missing files, a function that vanished mid-scan, stray
//! non-UTF-8 bytes. The fixture used has five failed GPUs and three good
//! ones; whatever is broken, the rest is still reported.

pub mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const CASE: &str = "ovmf-8x32g-hole1t";

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    dmesg: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(CASE);
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        support::copy_root(CASE, &root);
        let dmesg = tmp.path().join("dmesg.txt");
        std::fs::copy(src.join("dmesg.txt"), &dmesg).unwrap();
        Tree {
            _tmp: tmp,
            root,
            dmesg,
        }
    }

    /// The sysfs directory of a function, through its bus/pci/devices link.
    fn dev(&self, bdf: &str) -> PathBuf {
        let link = self.root.join("sys/bus/pci/devices").join(bdf);
        std::fs::canonicalize(link).unwrap()
    }

    fn check(&self) -> (i32, Value) {
        let o = Command::new(support::bin())
            .arg("check")
            .arg("--root")
            .arg(&self.root)
            .arg("--dmesg")
            .arg(&self.dmesg)
            .args(["--match", "1af4:1110", "--format", "json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (o.status.code().unwrap(), v)
    }
}

fn warnings(v: &Value) -> String {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

fn bdfs(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["bdf"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn malformed_and_short_resource_lines_cost_only_those_lines() {
    let t = Tree::new();
    let r = t.dev("0000:01:00.0").join("resource");
    let text = std::fs::read_to_string(&r).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "0x00000000 zz";
    std::fs::write(&r, lines.join("\n")).unwrap();
    // Another one cut short after three lines.
    let r2 = t.dev("0000:02:00.0").join("resource");
    let short: Vec<String> = std::fs::read_to_string(&r2)
        .unwrap()
        .lines()
        .take(3)
        .map(String::from)
        .collect();
    std::fs::write(&r2, short.join("\n")).unwrap();
    let (code, v) = t.check();
    assert_eq!(code, 1);
    assert_eq!(v["diagnosis"], "firmware_left_unassigned");
    assert_eq!(v["found"], 8);
    assert!(
        warnings(&v).contains("0000:01:00.0/resource: line 2: not three hex numbers"),
        "{}",
        warnings(&v)
    );
    assert_eq!(bdfs(&v, "unassigned").len(), 5);
}

#[test]
fn a_function_that_vanished_mid_scan_is_skipped_with_a_warning() {
    let t = Tree::new();
    // The link stays, the directory is gone: what a hot-unplug looks like
    // between listing and reading.
    std::fs::remove_dir_all(t.dev("0000:08:00.0")).unwrap();
    let (code, v) = t.check();
    assert_eq!(code, 1);
    assert_eq!(v["found"], 7);
    assert!(
        warnings(&v).contains("0000:08:00.0: vanished while being read"),
        "{}",
        warnings(&v)
    );
    assert_eq!(
        bdfs(&v, "unassigned"),
        [
            "0000:04:00.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:07:00.0"
        ]
    );
}

#[test]
fn non_utf8_and_garbage_in_attributes_are_reported_not_fatal() {
    let t = Tree::new();
    std::fs::write(t.dev("0000:03:00.0").join("class"), b"0x05\xff\xfe0000\n").unwrap();
    std::fs::write(t.dev("0000:02:00.0").join("revision"), b"\x80\x81").unwrap();
    std::fs::write(t.root.join("proc/cpuinfo"), b"\xff\xfe\x00garbage").unwrap();
    std::fs::write(&t.dmesg, b"\xff\xfe binary junk \x00\n").unwrap();
    let (code, v) = t.check();
    assert_eq!(code, 1);
    let w = warnings(&v);
    assert!(w.contains("0000:03:00.0/class: malformed"), "{w}");
    // `revision` decides nothing, so it is not read at all.
    assert!(!w.contains("revision"), "{w}");
    // 03:00.0 is lost (no class, no identity), the rest is reported.
    assert_eq!(v["found"], 7);
    assert_eq!(v["capacity"]["phys_bits"], Value::Null);
    // Without the log the failed BARs' sizes come from identical siblings.
    assert_eq!(v["unassigned"][0]["size"], 32u64 << 30);
    assert_eq!(v["diagnosis"], "firmware_left_unassigned");
}

#[test]
fn missing_config_and_proc_files_degrade_to_what_is_known() {
    let t = Tree::new();
    for bdf in ["0000:04:00.0", "0000:05:00.0"] {
        std::fs::remove_file(t.dev(bdf).join("config")).unwrap();
    }
    std::fs::write(t.dev("0000:06:00.0").join("config"), [0u8; 10]).unwrap();
    std::fs::remove_file(t.root.join("proc/iomem")).unwrap();
    std::fs::remove_file(t.root.join("proc/cmdline")).unwrap();
    let (code, v) = t.check();
    assert_eq!(code, 1);
    let w = warnings(&v);
    assert!(w.contains("0000:06:00.0/config: only 10 bytes"), "{w}");
    assert!(w.contains("proc/iomem"), "{w}");
    // The window now comes from the kernel log's root bus resources.
    assert_eq!(v["capacity"]["windows"][0]["source"], "kernel_log");
    assert_eq!(v["capacity"]["window_bytes"], 1u64 << 40);
    // Without config space an all-zero resource line cannot be told from an
    // absent BAR; the kernel log's last word on 04-06 BAR 2 is a failure.
    assert_eq!(
        bdfs(&v, "unassigned"),
        [
            "0000:04:00.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:07:00.0",
            "0000:08:00.0"
        ]
    );
    assert_eq!(v["unassigned"][0]["size"], 32u64 << 30);
}

#[test]
fn unprivileged_iomem_falls_back_to_the_log() {
    let t = Tree::new();
    let iomem = std::fs::read_to_string(t.root.join("proc/iomem")).unwrap();
    let zeroed: String = iomem
        .lines()
        .map(|l| {
            let (range, name) = l.split_once(" : ").unwrap();
            let indent = range.len() - range.trim_start().len();
            format!("{}00000000-00000000 : {name}\n", " ".repeat(indent))
        })
        .collect();
    std::fs::write(t.root.join("proc/iomem"), zeroed).unwrap();
    let (_, v) = t.check();
    assert_eq!(v["capacity"]["windows"][0]["source"], "kernel_log");
    assert_eq!(v["diagnosis"], "firmware_left_unassigned");
}

#[test]
fn a_failed_32bit_bar_whose_register_reads_zero_is_caught_from_the_log() {
    // Firmware that never programmed a 32-bit BAR leaves its register at
    // zero: from sysfs it looks unimplemented. The log says it failed.
    let t = Tree::new();
    let dev = t.dev("0000:02:00.0");
    let mut cfg = std::fs::read(dev.join("config")).unwrap();
    cfg[0x10..0x14].copy_from_slice(&[0, 0, 0, 0]);
    std::fs::write(dev.join("config"), cfg).unwrap();
    let res = std::fs::read_to_string(dev.join("resource")).unwrap();
    let mut lines: Vec<String> = res.lines().map(String::from).collect();
    lines[0] = "0x0000000000000000 0x0000000000000000 0x0000000000000000".into();
    std::fs::write(dev.join("resource"), lines.join("\n") + "\n").unwrap();
    let mut log = std::fs::read_to_string(&t.dmesg).unwrap();
    log.push_str(
        "[    1.500000] pci 0000:02:00.0: BAR 0 [mem size 0x00000100]: can't assign; no space\n",
    );
    log.push_str(
        "[    1.500001] pci 0000:02:00.0: BAR 0 [mem size 0x00000100]: failed to assign\n",
    );
    std::fs::write(&t.dmesg, log).unwrap();
    let (code, v) = t.check();
    assert_eq!(code, 1);
    let bar0: Vec<&Value> = v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["bar"] == 0)
        .collect();
    assert_eq!(bar0.len(), 1);
    assert_eq!(bar0[0]["bdf"], "0000:02:00.0");
    assert_eq!(bar0[0]["size"], 256);
}

#[test]
fn a_readable_iomem_without_a_64bit_window_means_none_not_unknown() {
    let t = Tree::new();
    let iomem = std::fs::read_to_string(t.root.join("proc/iomem")).unwrap();
    // Drop the 64-bit root window and everything nested in it.
    let mut out = String::new();
    let mut skipping = false;
    for l in iomem.lines() {
        if !l.starts_with(' ') {
            skipping = l.starts_with("e000000000-");
        }
        if !skipping {
            out.push_str(l);
            out.push('\n');
        }
    }
    std::fs::write(t.root.join("proc/iomem"), out).unwrap();
    let (_, v) = t.check();
    assert_eq!(v["diagnosis"], "window_too_small", "{}", v["summary"]);
    assert_eq!(v["capacity"]["window_bytes"], 0);
}

#[test]
fn sr_iov_virtual_functions_are_not_counted_as_gpus() {
    let t = Tree::new();
    std::os::unix::fs::symlink("../0000:01:00.0", t.dev("0000:03:00.0").join("physfn")).unwrap();
    let (_, v) = t.check();
    assert_eq!(v["found"], 7);
    assert!(!bdfs(&v, "gpus").contains(&"0000:03:00.0".to_string()));
}
