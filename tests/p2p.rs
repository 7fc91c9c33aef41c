//! Peer-to-peer: the fixture trees derived from the real H200 guest
//! (tests/data/p2p/make-fixtures.py) each give the gate verdicts, the
//! farthest path and the fixes their scenario.txt names (`expect p2p:`,
//! `expect p2p hints:`); `--expect-p2p` turns a refusal into a failed
//! check; `explain` judges pasted `nvidia-smi topo`, NCCL and QEMU text.

pub mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::bin;

/// Every P2P hint id (README, "Peer-to-peer").
const P2P_HINT_IDS: &[&str] = &[
    "p2p-gpudirect-clique",
    "p2p-kvm-visible",
    "p2p-nccl-level",
    "p2p-pcie-switch",
    "p2p-nccl-enable",
    "p2p-viommu-aw-bits",
    "p2p-host-bar-mapping",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

struct Case {
    name: String,
    p2p: Vec<(String, String)>,
    hints: Vec<String>,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Ok(text) = std::fs::read_to_string(fixtures().join(&name).join("scenario.txt")) else {
            continue;
        };
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(": "))
                .map(str::trim)
        };
        let Some(p2p) = field("expect p2p") else {
            continue;
        };
        let p2p = p2p
            .split_whitespace()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        let hints = match field("expect p2p hints").unwrap_or("-") {
            "-" => Vec::new(),
            h => h.split_whitespace().map(String::from).collect(),
        };
        out.push(Case { name, p2p, hints });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn check(name: &str, extra: &[&str]) -> (i32, Value) {
    let dir = fixtures().join(name);
    let o = Command::new(bin())
        .arg("check")
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--dmesg")
        .arg(dir.join("dmesg.txt"))
        .args(["--expect", "2", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&o.stdout)));
    (o.status.code().unwrap(), v)
}

fn hint_ids(v: &Value) -> Vec<String> {
    v["p2p"]["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_p2p_fixture_gives_its_gates_path_and_fixes() {
    let cs = cases();
    assert_eq!(cs.len(), 8, "the p2p fixtures");
    for c in &cs {
        let (code, v) = check(&c.name, &[]);
        // Advisory: the boot verdict stays the BARs'.
        assert_eq!(code, 0, "{}", c.name);
        assert_eq!(v["verdict"], "ok", "{}", c.name);
        let p = &v["p2p"];
        for (k, want) in &c.p2p {
            let got = match k.as_str() {
                "verdict" => p["verdict"].clone(),
                "p2p_path" => p["p2p_path"].clone(),
                g => p["gates"][g]["verdict"].clone(),
            };
            assert_eq!(got, want.as_str(), "{}: {k} ({})", c.name, p["gates"]);
        }
        assert_eq!(hint_ids(&v), c.hints, "{}: p2p hints", c.name);
        for h in p["hints"].as_array().unwrap() {
            let id = h["id"].as_str().unwrap();
            assert!(P2P_HINT_IDS.contains(&id), "{}: unknown id {id}", c.name);
            assert!(
                ["host", "guest"].contains(&h["side"].as_str().unwrap()),
                "{id}"
            );
            assert!(h["change"].is_object(), "{id}");
            // A host change takes a new QEMU process; NCCL's settings the
            // next NCCL process.
            let want_restart = if h["side"] == "host" { "vm" } else { "null" };
            assert_eq!(
                h["restart"].to_string().trim_matches('"'),
                want_restart,
                "{id}"
            );
        }
        assert!(
            p["note"].as_str().unwrap().contains("copy test"),
            "{}",
            c.name
        );
    }
}

#[test]
fn the_clique_is_read_at_both_offsets_and_cut_config_space_says_why() {
    let (_, v) = check("p2p-h200x2-clique-d4", &[]);
    for g in v["p2p"]["gpus"].as_array().unwrap() {
        assert_eq!(g["clique_offset"], 0xd4);
        assert_eq!(g["clique"], 0);
        assert_eq!(g["vram_bar_bytes"], 256u64 << 30);
    }
    let (_, v) = check("p2p-h200x2-mismatched-cliques", &[]);
    let ids: Vec<&Value> = v["p2p"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["clique"])
        .collect();
    assert_eq!(ids, [&Value::from(0), &Value::from(1)]);
    assert_eq!(v["p2p"]["one_clique"], false);
    let (_, v) = check("p2p-h200x2-unprivileged", &[]);
    assert_eq!(v["p2p"]["gpus"][0]["config_bytes"], 64);
    assert!(v["p2p"]["gates"]["driver"]["why"]
        .as_str()
        .unwrap()
        .contains("run as root"));
    let (_, v) = check("p2p-h200x2-clique-c8-nccl-phb", &[]);
    assert_eq!(v["p2p"]["nccl"]["settings"][0]["name"], "NCCL_P2P_LEVEL");
    assert_eq!(v["p2p"]["nccl"]["settings"][0]["source"], "/etc/nccl.conf");
    assert_eq!(v["p2p"]["kvm"]["kernel_log"], "KVM");
    // A captured tree's CPUID is not this machine's: not read.
    assert_eq!(v["p2p"]["kvm"]["cpuid_signature"], Value::Null);
    let (_, v) = check("p2p-h200x2-viommu-39bit", &[]);
    assert_eq!(v["p2p"]["viommu"]["address_width_bits"], 39);
}

#[test]
fn expect_p2p_fails_a_refusal_and_nothing_else() {
    for c in cases() {
        let refused = c.p2p.iter().any(|(k, v)| k == "verdict" && v == "refused");
        let (code, v) = check(&c.name, &["--expect-p2p"]);
        assert_eq!(code, if refused { 1 } else { 0 }, "{}", c.name);
        assert_eq!(
            v["verdict"],
            if refused { "fail" } else { "ok" },
            "{}",
            c.name
        );
        assert_eq!(
            v["diagnosis"], "ok",
            "{}: the BARs' diagnosis stays",
            c.name
        );
        assert_eq!(v["p2p"]["expected"], true);
    }
}

#[test]
fn one_gpu_has_no_p2p_section_unless_asked() {
    let dir = fixtures().join("h200-kvm-passthrough");
    let run = |extra: &[&str]| {
        let o = Command::new(bin())
            .arg("check")
            .arg("--root")
            .arg(dir.join("root"))
            .arg("--dmesg")
            .arg(dir.join("dmesg.txt"))
            .args(["--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            serde_json::from_slice::<Value>(&o.stdout).unwrap(),
        )
    };
    let (_, v) = run(&[]);
    assert!(v.get("p2p").is_none());
    let (code, v) = run(&["--expect-p2p"]);
    assert_eq!(code, 0, "nothing refused with one GPU");
    assert_eq!(v["p2p"]["gates"]["driver"]["verdict"], "unknown");
    assert_eq!(v["p2p"]["p2p_path"], Value::Null);
}

#[test]
fn prometheus_has_the_p2p_series() {
    let dir = fixtures().join("p2p-h200x2-no-clique");
    let o = Command::new(bin())
        .arg("check")
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--dmesg")
        .arg(dir.join("dmesg.txt"))
        .args(["--format", "prometheus"])
        .output()
        .unwrap();
    let t = String::from_utf8(o.stdout).unwrap();
    for line in [
        "gpu_preflight_p2p_gate{gate=\"driver\",verdict=\"refused\"} 1",
        "gpu_preflight_p2p_gate{gate=\"path\",verdict=\"granted\"} 0",
        "gpu_preflight_p2p_path_level{level=\"PHB\"} 1",
        "gpu_preflight_p2p_clique{bdf=\"0000:00:06.0\"} -1",
        "gpu_preflight_p2p_kvm_visible 1",
        "gpu_preflight_p2p_hint{id=\"p2p-gpudirect-clique\"} 1",
    ] {
        assert!(t.lines().any(|l| l == line), "missing {line:?} in\n{t}");
    }
}

fn explain(files: &[&str]) -> (i32, Value) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/p2p");
    let o = Command::new(bin())
        .arg("explain")
        .args(files.iter().map(|f| data.join(f)))
        .args(["--format", "json"])
        .output()
        .unwrap();
    (
        o.status.code().unwrap(),
        serde_json::from_slice(&o.stdout).unwrap(),
    )
}

#[test]
fn explain_judges_pasted_topo_nccl_and_qemu_text() {
    let (code, v) = explain(&["topo-p2p-r-no-clique.txt"]);
    assert_eq!(code, 0);
    assert_eq!(v["p2p"]["gates"]["driver"]["verdict"], "refused");
    assert_eq!(hint_ids(&v), ["p2p-gpudirect-clique", "p2p-kvm-visible"]);

    let (_, v) = explain(&["topo-m-kvm-rootports.txt"]);
    assert_eq!(v["p2p"]["p2p_path"], "PHB");
    assert_eq!(v["p2p"]["gates"]["path"]["verdict"], "refused");
    assert_eq!(hint_ids(&v), ["p2p-nccl-level"]);

    let (_, v) = explain(&["nccl-info-shm.txt", "topo-m-kvm-rootports.txt"]);
    assert!(v["p2p"]["gates"]["path"]["why"]
        .as_str()
        .unwrap()
        .contains("via SHM"));

    let (_, v) = explain(&["qemu-p2p-bar-warning.txt"]);
    assert_eq!(v["p2p"]["gates"]["host"]["verdict"], "refused");
    assert_eq!(hint_ids(&v), ["p2p-host-bar-mapping"]);

    // A BAR log without P2P text gets no section.
    let dir = fixtures().join("ovmf-8x32g");
    let o = Command::new(bin())
        .arg("explain")
        .arg(dir.join("dmesg.txt"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("p2p").is_none());
}
