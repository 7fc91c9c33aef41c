//! Golden fixture trees captured from boots (QEMU ones by
//! vm-tests/capture-fixtures, a real GPU VM's by tests/capture-host; each
//! case's scenario.txt says how): the checker must reach the diagnosis the
//! machine showed, name the same unassigned functions and give the hints
//! that fix that variant. The expectations are data, in each scenario.txt
//! (`check args:` and `expect ...:` lines). The whole report is also
//! compared with `expected.txt` and `expected.json` (regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test fixtures` and review the diff).

pub mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::bin;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every hint id the checker knows: an expectation naming another one is a
/// typo, and an assertion that one is absent must name a real one.
const STANDIN: &str = "1af4:1110";

const HINT_IDS: &[&str] = &[
    "cpu-pdpe1gb",
    "cpu-phys-bits",
    "ovmf-mmio64-aperture",
    "qemu-pci-hole64-size",
    "guest-pci-realloc",
    "firmware-above-4g",
    "smaller-bars",
    "check-passthrough",
    "vmware-efi",
    "vmware-64bit-mmio",
    "hyperv-mmio",
    "kernel-hotplug-reserve",
    "vm-hotplug-reserve",
    "collect-evidence",
    "platform-window-too-small",
    "vmm-bar-prefetchable",
    "kernel-resize-rollback",
    "kernel-rescan-sizing",
];

/// One fixture's expectations, read from its scenario.txt.
struct Case {
    name: String,
    args: Vec<String>,
    verdict: String,
    diagnosis: String,
    found: u64,
    unassigned: Vec<String>,
    hints: Vec<String>,
}

impl Case {
    fn exit(&self) -> i32 {
        if self.verdict == "ok" {
            0
        } else {
            1
        }
    }

    /// `--expect N` from the check arguments.
    fn expect(&self) -> Option<&str> {
        let i = self.args.iter().position(|a| a == "--expect")?;
        self.args.get(i + 1).map(String::as_str)
    }
}

fn list(v: &str) -> Vec<String> {
    if v.trim() == "-" {
        return Vec::new();
    }
    v.split_whitespace().map(String::from).collect()
}

fn cases() -> Vec<Case> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| fixtures().join(n).join("scenario.txt").is_file())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text =
                std::fs::read_to_string(fixtures().join(&name).join("scenario.txt")).unwrap();
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k)?.strip_prefix(": "))
                    .unwrap_or_else(|| panic!("{name}/scenario.txt has no {k:?} line"))
                    .trim()
                    .to_string()
            };
            let c = Case {
                args: list(&field("check args")),
                verdict: field("expect verdict"),
                diagnosis: field("expect diagnosis"),
                found: field("expect found").parse().unwrap(),
                unassigned: list(&field("expect unassigned")),
                hints: list(&field("expect hints")),
                name,
            };
            for h in &c.hints {
                assert!(
                    HINT_IDS.contains(&h.as_str()),
                    "{}: unknown hint id {h}",
                    c.name
                );
            }
            c
        })
        .collect()
}

#[test]
fn every_fixture_has_expectations_and_there_are_enough() {
    let c = cases();
    assert!(c.len() >= 13, "{} fixtures", c.len());
    assert!(c.iter().any(|c| c.name == "h200-kvm-passthrough"));
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
    // The goldens are the plain form: 80 columns (stdout is a pipe), ASCII.
    let text = Command::new(bin())
        .env("LC_ALL", "C")
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

fn hint_ids(v: &Value) -> Vec<String> {
    v["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

/// The diagnosis, the found GPUs and the unassigned ones, and the hints.
fn assert_case(c: &Case, code: i32, v: &Value) {
    assert_outcome(c, code, v);
    let hints = hint_ids(v);
    assert_eq!(hints, c.hints, "{}: hints", c.name);
}

/// The diagnosis, the found GPUs and the unassigned ones; every hint id a
/// known one.
fn assert_outcome(c: &Case, code: i32, v: &Value) {
    assert_eq!(code, c.exit(), "{}: exit code", c.name);
    assert_eq!(
        v["diagnosis"],
        c.diagnosis.as_str(),
        "{}: {}",
        c.name,
        v["summary"]
    );
    assert_eq!(v["verdict"], c.verdict.as_str(), "{}", c.name);
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
    let hints = hint_ids(v);
    assert!(
        hints.iter().all(|h| HINT_IDS.contains(&h.as_str())),
        "{}: {hints:?}",
        c.name
    );
}

/// The JSON report with what varies between runs (the time taken) zeroed.
fn stable_json(v: &Value) -> String {
    let mut v = v.clone();
    v["elapsed_ms"] = Value::from(0);
    let mut s = serde_json::to_string_pretty(&v).unwrap();
    s.push('\n');
    s
}

fn golden(path: &Path, got: &str, what: &str) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, got).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(got, want, "{what} differs from {}", path.display());
}

#[test]
fn captured_boots_get_the_diagnosis_the_machine_showed() {
    for c in cases() {
        let dir = fixtures().join(&c.name);
        let mut args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        args.extend(["--format", "json"]);
        let (code, v, text) = run_check(&dir.join("root"), &dir.join("dmesg.txt"), &args);
        assert_case(&c, code, &v);
        golden(
            &dir.join("expected.txt"),
            &text,
            &format!("{}: text report", c.name),
        );
        golden(
            &dir.join("expected.json"),
            &stable_json(&v),
            &format!("{}: JSON report", c.name),
        );
        assert!(
            !text.lines().any(|l| l.ends_with(' ')),
            "{}: trailing blanks in the text report",
            c.name
        );
    }
}

/// The text report fits a screen: every line within 80 columns but the
/// line to paste (never broken), a failing 8-GPU report with its address
/// map within 40 lines, a healthy one within 15; the opening lines say
/// the verdict, what failed, why, the next step and what to paste.
#[test]
fn the_text_report_fits_a_screen() {
    let lines = |name: &str| -> Vec<String> {
        let path = fixtures().join(name).join("expected.txt");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    for c in cases() {
        for l in lines(&c.name) {
            assert!(
                l.chars().count() <= 80 || l.starts_with("  paste:   "),
                "{}: {} columns: {l}",
                c.name,
                l.chars().count()
            );
        }
    }
    let fail = lines("ovmf-8x32g");
    assert!(fail.len() <= 40, "{} lines", fail.len());
    for (i, lead) in [
        "gpu-preflight: FAIL: ",
        "failed:    BAR 2 (32 GiB) of 04:00.0, ",
        "why:       need 256 GiB",
        "next step: ",
        "  paste:   qm set ",
    ]
    .iter()
    .enumerate()
    {
        assert!(fail[i].starts_with(lead), "line {i}: {}", fail[i]);
    }
    assert!(fail.iter().any(|l| l.starts_with("address map, log scale")));
    assert_eq!(
        fail.iter()
            .filter(|l| l.starts_with("peer-to-peer"))
            .count(),
        1
    );
    assert!(fail
        .iter()
        .any(|l| l == "peer-to-peer: judged once the BARs fit (8 GPUs, p2p_path PHB)"));
    let ok = lines("h200-kvm-passthrough");
    assert!(ok.len() <= 15, "{} lines", ok.len());
    assert!(ok[0].starts_with("gpu-preflight: OK: "));
    assert!(ok.iter().any(|l| l.starts_with("00:06.0 ok ")));
    // Once the BARs fit, the peer-to-peer section is whole.
    let p2p = lines("p2p-h200x2-switch");
    assert!(p2p.iter().any(|l| l.starts_with("  gate path: granted")));
}

/// A UTF-8 locale draws the map with blocks, in as many lines; a terminal
/// is not needed for it (the width stays 80 on a pipe).
#[test]
fn a_utf8_locale_draws_the_map_with_blocks() {
    let dir = fixtures().join("ovmf-8x32g");
    let run = |lang: &str| {
        let o = Command::new(bin())
            .env_remove("LC_ALL")
            .env_remove("LC_CTYPE")
            .env("LANG", lang)
            .args(["check", "--match", STANDIN, "--expect", "8", "--root"])
            .arg(dir.join("root"))
            .arg("--dmesg")
            .arg(dir.join("dmesg.txt"))
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    let utf8 = run("en_US.UTF-8");
    let plain = run("C");
    assert_eq!(utf8.lines().count(), plain.lines().count());
    assert!(plain.is_ascii());
    let row = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("3 GPUs ok"))
            .unwrap()
            .to_string()
    };
    assert!(row(&utf8).contains('■'), "{utf8}");
    assert!(row(&plain).contains('#'), "{plain}");
    assert_eq!(row(&utf8).replace('■', "#"), row(&plain));
}

#[test]
fn the_numbers_behind_the_issue_scenarios() {
    let dir = fixtures().join("ovmf-8x32g");
    let (_, v, _) = run_check(
        &dir.join("root"),
        &dir.join("dmesg.txt"),
        &["--match", STANDIN, "--format", "json"],
    );
    // 8 x 32 GiB behind their own root ports; 0xe000000000-0xf89fffffff.
    assert_eq!(v["capacity"]["needed_bytes"], 256u64 << 30);
    assert_eq!(v["capacity"]["window_bytes"], 0x18_a000_0000u64);
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

/// Guests whose DMI names their management layer (captured with that
/// layer's default SMBIOS strings, each fixture's scenario.txt says from
/// where) are told that layer's settings alone, with its restart; the same
/// boot without the strings keeps the generic lines. LXD's vCPU is its
/// host's, so the step it cannot take in the VM comes last.
#[test]
fn a_layers_guest_is_told_its_layers_settings() {
    let run = |name: &str| {
        let dir = fixtures().join(name);
        run_check(
            &dir.join("root"),
            &dir.join("dmesg.txt"),
            &["--match", STANDIN, "--format", "json"],
        )
        .1
    };
    for (name, layer, says, restart) in [
        (
            "kubevirt-ovmf-8x32g",
            "kubevirt",
            "KubeVirt: ",
            "`virtctl restart <vm>`",
        ),
        (
            "openstack-seabios-40bit-8x128g",
            "openstack",
            "OpenStack: ",
            "`openstack server resize --flavor <flavor> <server>`",
        ),
        ("lxd-ovmf-8x32g", "lxd", "LXD: ", "`lxc restart <instance>`"),
    ] {
        let v = run(name);
        assert_eq!(v["firmware"]["layer"], layer, "{name}");
        assert_eq!(v["firmware"]["platform"], "qemu", "{name}");
        let hints = v["hints"].as_array().unwrap();
        assert!(!hints.is_empty(), "{name}");
        for h in hints {
            let text = h["text"].as_str().unwrap();
            assert!(
                text.contains(says) && text.contains(restart),
                "{name}: {text}"
            );
            assert!(
                !text.contains("Proxmox") && !text.contains("libvirt:"),
                "{name}: {text}"
            );
        }
    }
    let plain = run("ovmf-8x32g");
    assert_eq!(plain["firmware"]["layer"], Value::Null);
    assert!(plain["hints"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Proxmox: "));
    let lxd = run("lxd-ovmf-8x32g");
    assert_eq!(hint_ids(&plain)[0], "cpu-pdpe1gb");
    assert_eq!(
        hint_ids(&lxd),
        [
            "ovmf-mmio64-aperture",
            "qemu-pci-hole64-size",
            "cpu-pdpe1gb"
        ]
    );
    assert!(lxd["hints"][2]["text"]
        .as_str()
        .unwrap()
        .contains("a host CPU with `pdpe1gb`"));
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
        assert!(
            !hint_ids(&v).contains(&"guest-pci-realloc".to_string()),
            "{name}: realloc is already on"
        );
    }
}

/// Copies a fixture tree, turning the ivshmem stand-ins into NVIDIA GPUs in
/// every place the checker reads an identity: the sysfs attributes and the
/// config space header.
fn relabel_as_nvidia(case: &str, dst: &Path) {
    std::fs::create_dir(dst).unwrap();
    support::copy_root(case, dst);
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
    let standins = cases()
        .into_iter()
        .filter(|c| c.args.iter().any(|a| a == STANDIN));
    let mut n = 0;
    for c in standins {
        n += 1;
        let dir = fixtures().join(&c.name);
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        relabel_as_nvidia(&c.name, &root);
        let mut args = vec!["--format", "json"];
        if let Some(e) = c.expect() {
            args.extend(["--expect", e]);
        }
        let (code, v, _) = run_check(&root, &dir.join("dmesg.txt"), &args);
        assert_case(&c, code, &v);
        for g in v["gpus"].as_array().unwrap() {
            assert_eq!(g["vendor"], "10de", "{}", c.name);
            assert_ne!(
                g["bdf"], "0000:00:01.0",
                "{}: the emulated VGA is not a GPU",
                c.name
            );
        }
    }
    assert_eq!(n, 15, "the QEMU fixtures with stand-ins");
}

#[test]
fn explain_of_the_saved_log_alone_reaches_the_same_diagnosis() {
    // No sysfs, no /proc: the log's root bus windows, its "not CPU
    // addressable" line, its command line and its DMI line must do.
    for c in cases() {
        let dir = fixtures().join(&c.name);
        let o = Command::new(bin())
            .arg("explain")
            .arg(dir.join("dmesg.txt"))
            .args(&c.args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        // The log holds no CPU facts (address bits, pdpe1gb): explain
        // assumes QEMU's defaults and may prescribe another first step,
        // but one only where check has one too.
        assert_outcome(&c, o.status.code().unwrap(), &v);
        assert_eq!(hint_ids(&v).is_empty(), c.hints.is_empty(), "{}", c.name);
        assert_eq!(v["mode"], "explain");
    }
}

/// The fw_cfg files QEMU hands this VM's firmware (1 GiB of RAM, one e820
/// RAM entry from 0; no hot-plug area, no `-fw_cfg opt/...`), laid beside
/// the captured ovmf-8x32g tree where the `qemu_fw_cfg` driver shows them:
/// the report names each input read, not set or refused, the origin takes
/// them as fact, and the diagnosis is the machine's. The text report is
/// golden (tests/data/fw-cfg-ovmf-8x32g.txt).
#[test]
fn fw_cfg_beside_a_captured_tree_is_read_and_named() {
    let c = cases()
        .into_iter()
        .find(|c| c.name == "ovmf-8x32g")
        .unwrap();
    let dir = fixtures().join(&c.name);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    support::copy_root(&c.name, &root);
    let by = root.join("sys/firmware/qemu_fw_cfg/by_name");
    let mut e820 = Vec::new();
    e820.extend_from_slice(&0u64.to_le_bytes());
    e820.extend_from_slice(&(1u64 << 30).to_le_bytes());
    e820.extend_from_slice(&1u32.to_le_bytes());
    std::fs::create_dir_all(by.join("etc/e820")).unwrap();
    std::fs::write(by.join("etc/e820/raw"), &e820).unwrap();

    let args = ["--match", STANDIN, "--expect", "8", "--format", "json"];
    let (code, v, text) = run_check(&root, &dir.join("dmesg.txt"), &args);
    assert_case(&c, code, &v);
    let fw = &v["firmware"]["fw_cfg"];
    assert_eq!(fw["readable"], true);
    assert_eq!(fw["read"], serde_json::json!(["etc/e820"]));
    assert_eq!(
        fw["unset"],
        serde_json::json!([
            "opt/ovmf/X-PciMmio64Mb",
            "opt/org.seabios/pci64",
            "etc/reserved-memory-end"
        ])
    );
    assert_eq!(fw["assumed"], serde_json::json!([]));
    assert_eq!(fw["ram_end"], 1u64 << 30);
    let facts = &v["capacity"]["window_origin"]["facts"];
    assert_eq!(
        facts,
        &serde_json::json!([
            "no X-PciMmio64Mb set by the host (fw_cfg)",
            "RAM ends at 0x40000000 as QEMU mapped it for the firmware (fw_cfg etc/e820)",
            "no memory hot-plug area (fw_cfg)"
        ]),
        "{v}"
    );
    golden(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fw-cfg-ovmf-8x32g.txt"),
        &text,
        "ovmf-8x32g with fw_cfg: text report",
    );

    // A value OVMF would not take: refused, with a warning, and the origin
    // is found by the window's place as without it.
    std::fs::create_dir_all(by.join("opt/ovmf/X-PciMmio64Mb")).unwrap();
    std::fs::write(by.join("opt/ovmf/X-PciMmio64Mb/raw"), "64 GiB").unwrap();
    let (code, v, _) = run_check(&root, &dir.join("dmesg.txt"), &args);
    assert_case(&c, code, &v);
    let fw = &v["firmware"]["fw_cfg"];
    assert_eq!(fw["refused"], serde_json::json!(["opt/ovmf/X-PciMmio64Mb"]));
    assert_eq!(fw["x_pci_mmio64_mb"], Value::Null);
    assert!(
        v["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str().unwrap().starts_with(
                "fw_cfg opt/ovmf/X-PciMmio64Mb: OVMF ignores it: \"64 GiB\" is not a decimal number"
            )
        }),
        "{}",
        v["warnings"]
    );
}
