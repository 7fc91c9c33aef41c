//! Golden fixture trees captured from QEMU boots (see vm-tests/capture-fixtures
//! and each case's scenario.txt): the checker must reach the diagnosis the
//! guest showed, name the same unassigned functions and give the hints that
//! fix that variant. The text report is also compared with `expected.txt`
//! (regenerate with `UPDATE_GOLDEN=1 cargo test --test fixtures` and review
//! the diff).

mod tree;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

struct Case {
    name: &'static str,
    exit: i32,
    diagnosis: &'static str,
    unassigned: &'static [&'static str],
    hints: &'static [&'static str],
    found: u64,
    expect: u64,
}

const STANDIN: &str = "1af4:1110";

const CASES: &[Case] = &[
    Case {
        name: "seabios-46bit-8x128g",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 8,
        expect: 8,
    },
    Case {
        name: "seabios-40bit-8x128g",
        exit: 1,
        diagnosis: "phys_bits_too_small",
        unassigned: &["0000:01:00.0"],
        hints: &["cpu-phys-bits"],
        found: 8,
        expect: 8,
    },
    Case {
        name: "seabios-40bit-8x128g-realloc",
        exit: 1,
        diagnosis: "phys_bits_too_small",
        unassigned: &["0000:01:00.0"],
        hints: &["cpu-phys-bits"],
        found: 8,
        expect: 8,
    },
    Case {
        name: "seabios-40bit-7x128g",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 7,
        expect: 7,
    },
    Case {
        name: "seabios-noisy-rootports",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 2,
        expect: 2,
    },
    Case {
        name: "ovmf-8x16g",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-8x16g-vga",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-8x32g",
        exit: 1,
        diagnosis: "window_too_small",
        unassigned: &[
            "0000:04:00.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:07:00.0",
            "0000:08:00.0",
        ],
        hints: &["qemu-pci-hole64-size", "ovmf-mmio64-aperture"],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-8x32g-realloc",
        exit: 1,
        diagnosis: "window_too_small",
        unassigned: &[
            "0000:04:00.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:07:00.0",
            "0000:08:00.0",
        ],
        hints: &["qemu-pci-hole64-size", "ovmf-mmio64-aperture"],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-8x32g-hole1t",
        exit: 1,
        diagnosis: "firmware_left_unassigned",
        unassigned: &[
            "0000:04:00.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:07:00.0",
            "0000:08:00.0",
        ],
        hints: &["guest-pci-realloc"],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-8x32g-hole1t-realloc",
        exit: 0,
        diagnosis: "ok",
        unassigned: &[],
        hints: &[],
        found: 8,
        expect: 8,
    },
    Case {
        name: "ovmf-7x32g-hole1t-expect8",
        exit: 1,
        diagnosis: "gpus_missing",
        unassigned: &[],
        hints: &["check-passthrough"],
        found: 7,
        expect: 8,
    },
];

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gpu-preflight")
}

fn run_check(root: &Path, dmesg: &Path, args: &[&str]) -> (i32, Value, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("check")
        .arg("--root")
        .arg(root)
        .arg("--dmesg")
        .arg(dmesg)
        .args(args);
    let json = cmd.output().expect("run gpu-preflight");
    let text = Command::new(bin())
        .arg("check")
        .arg("--root")
        .arg(root)
        .arg("--dmesg")
        .arg(dmesg)
        .args(args.iter().filter(|a| **a != "json" && **a != "--format"))
        .output()
        .expect("run gpu-preflight");
    let v: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&json.stdout)));
    assert_eq!(json.status.code(), text.status.code());
    (
        json.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&text.stdout).into_owned(),
    )
}

fn assert_case(c: &Case, code: i32, v: &Value) {
    assert_eq!(code, c.exit, "{}: exit code", c.name);
    assert_eq!(v["diagnosis"], c.diagnosis, "{}: {}", c.name, v["summary"]);
    assert_eq!(
        v["verdict"],
        if c.exit == 0 { "ok" } else { "fail" },
        "{}",
        c.name
    );
    assert_eq!(v["found"], c.found, "{}", c.name);
    let mut un: Vec<&str> = v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["bdf"].as_str().unwrap())
        .collect();
    un.dedup();
    assert_eq!(un, c.unassigned, "{}: unassigned", c.name);
    for u in v["unassigned"].as_array().unwrap() {
        assert_eq!(u["bar"], 2, "{}: the stand-ins' big BAR is BAR 2", c.name);
        assert!(
            u["size"].as_u64().is_some(),
            "{}: size of {} unknown",
            c.name,
            u["bdf"]
        );
    }
    let hints: Vec<&str> = v["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(hints, c.hints, "{}: hints", c.name);
    assert!(!hints.contains(&"pci-nocrs"));
}

#[test]
fn captured_boots_get_the_diagnosis_the_guest_showed() {
    for c in CASES {
        let dir = fixtures().join(c.name);
        let (code, v, text) = run_check(
            &dir.join("root"),
            &dir.join("dmesg.txt"),
            &[
                "--match",
                STANDIN,
                "--expect",
                &c.expect.to_string(),
                "--format",
                "json",
            ],
        );
        assert_case(c, code, &v);
        let golden = dir.join("expected.txt");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&golden, &text).unwrap();
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        assert_eq!(
            text, want,
            "{}: text report differs from expected.txt",
            c.name
        );
    }
}

#[test]
fn the_numbers_behind_the_issue_scenarios() {
    let dir = fixtures().join("ovmf-8x32g");
    let (_, v, _) = run_check(
        &dir.join("root"),
        &dir.join("dmesg.txt"),
        &["--match", STANDIN, "--format", "json"],
    );
    let needed = v["capacity"]["needed_bytes"].as_u64().unwrap();
    let window = v["capacity"]["window_bytes"].as_u64().unwrap();
    assert!(needed >= 256 << 30, "needed {needed}");
    assert!(window < 100 << 30, "window {window}");
    assert_eq!(v["capacity"]["phys_bits"], 46);
    assert_eq!(v["firmware"]["kind"], "ovmf");

    let dir = fixtures().join("ovmf-8x32g-hole1t");
    let (_, v, _) = run_check(
        &dir.join("root"),
        &dir.join("dmesg.txt"),
        &["--match", STANDIN, "--format", "json"],
    );
    assert_eq!(v["capacity"]["window_bytes"], 1u64 << 40);
    assert_eq!(v["realloc_active"], false);
    // Each stand-in sits behind its own root port; a placed one's port
    // forwards a 32 GiB 64-bit prefetchable window, a failed one's only the
    // 512 MiB the firmware reserves for hot-plug.
    let port = |bdf: &str| {
        v["bridges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["bdf"] == bdf)
            .unwrap()
            .clone()
    };
    assert_eq!(v["gpus"][0]["upstream"][0], "0000:00:01.0");
    let pref = |b: &Value| {
        let w: Vec<u64> = b["windows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "mem64_pref")
            .map(|w| w["size"].as_u64().unwrap())
            .collect();
        w
    };
    assert_eq!(pref(&port("0000:00:01.0")), [32u64 << 30]);
    assert_eq!(pref(&port("0000:00:04.0")), [512u64 << 20]);

    let dir = fixtures().join("seabios-40bit-8x128g");
    let (_, v, _) = run_check(
        &dir.join("root"),
        &dir.join("dmesg.txt"),
        &["--match", STANDIN, "--format", "json"],
    );
    assert_eq!(v["capacity"]["phys_bits"], 40);
    assert_eq!(v["firmware"]["kind"], "seabios");
    assert_eq!(v["capacity"]["needed_bytes"], 1u64 << 40);
}

#[test]
fn realloc_boots_are_seen_as_realloc() {
    for name in [
        "ovmf-8x32g-realloc",
        "ovmf-8x32g-hole1t-realloc",
        "seabios-40bit-8x128g-realloc",
    ] {
        let dir = fixtures().join(name);
        let (_, v, _) = run_check(
            &dir.join("root"),
            &dir.join("dmesg.txt"),
            &["--match", STANDIN, "--format", "json"],
        );
        assert_eq!(v["realloc_active"], true, "{name}");
        let hints: Vec<&str> = v["hints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap())
            .collect();
        assert!(
            !hints.contains(&"guest-pci-realloc"),
            "{name}: realloc is already on"
        );
    }
}

/// Copies a fixture tree, turning the ivshmem stand-ins into NVIDIA GPUs in
/// every place the checker reads an identity: the sysfs attributes and the
/// config space header.
fn relabel_as_nvidia(case: &str, dst: &Path) {
    std::fs::create_dir(dst).unwrap();
    tree::copy_root(case, dst);
    fn walk(dir: &Path) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                walk(&p);
            }
        }
        let vendor = dir.join("vendor");
        if std::fs::read_to_string(&vendor)
            .map(|v| v.trim() == "0x1af4")
            .unwrap_or(false)
            && std::fs::read_to_string(dir.join("device")).unwrap().trim() == "0x1110"
        {
            std::fs::write(&vendor, "0x10de\n").unwrap();
            std::fs::write(dir.join("device"), "0x2330\n").unwrap();
            std::fs::write(dir.join("class"), "0x030200\n").unwrap();
            let mut cfg = std::fs::read(dir.join("config")).unwrap();
            cfg[0..4].copy_from_slice(&[0xde, 0x10, 0x30, 0x23]);
            cfg[0x09..0x0c].copy_from_slice(&[0x00, 0x02, 0x03]);
            std::fs::write(dir.join("config"), cfg).unwrap();
        }
    }
    walk(&dst.join("sys/devices"));
}

#[test]
fn stand_ins_relabelled_as_nvidia_gpus_need_no_match() {
    for c in CASES {
        let dir = fixtures().join(c.name);
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        relabel_as_nvidia(c.name, &root);
        let (code, v, _) = run_check(
            &root,
            &dir.join("dmesg.txt"),
            &["--expect", &c.expect.to_string(), "--format", "json"],
        );
        assert_case(c, code, &v);
        for g in v["gpus"].as_array().unwrap() {
            assert_eq!(g["vendor"], "10de", "{}", c.name);
            assert_ne!(
                g["bdf"], "0000:00:01.0",
                "{}: the emulated VGA is not a GPU",
                c.name
            );
        }
    }
}

#[test]
fn explain_of_the_saved_log_alone_reaches_the_same_diagnosis() {
    // No sysfs, no /proc: the log's root bus windows, its "not CPU
    // addressable" line, its command line and its DMI line must do.
    for c in CASES {
        let dir = fixtures().join(c.name);
        let o = Command::new(bin())
            .arg("explain")
            .arg(dir.join("dmesg.txt"))
            .args([
                "--match",
                STANDIN,
                "--expect",
                &c.expect.to_string(),
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_case(c, o.status.code().unwrap(), &v);
        assert_eq!(v["mode"], "explain");
    }
}
