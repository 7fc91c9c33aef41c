//! The P2P section's text and Prometheus forms (the JSON form is the
//! section itself, `decide::p2p::P2p`).

use crate::decide::p2p::{vram, P2p};
use crate::model::p2p::{GateVerdict, PathLevel};
use std::fmt::Write as _;

pub(crate) fn text(p: &P2p, s: &mut String) {
    let _ = writeln!(
        s,
        "peer-to-peer: {}{} (advisory{})",
        p.verdict.as_str(),
        p.p2p_path
            .map(|l| format!(", p2p_path {}", l.as_str()))
            .unwrap_or_default(),
        if p.expected {
            "; expected: a refusal fails the check"
        } else {
            ""
        }
    );
    // GPUs alike one after another share a line.
    let mut lines: Vec<(String, String, usize, String)> = Vec::new();
    for g in &p.gpus {
        let clique = match (g.clique, g.clique_offset) {
            (Some(c), Some(o)) => format!("clique {c} (capability at {o:#x})"),
            _ if g.clique_capability == "unreadable" => {
                format!(
                    "clique unreadable ({} bytes of config space; run as root)",
                    g.config_bytes
                )
            }
            _ => "no clique capability".into(),
        };
        let what = format!("{clique}, VRAM {}", vram(g));
        match lines.last_mut() {
            Some(l) if l.3 == what => {
                l.1 = g.bdf.to_string();
                l.2 += 1;
            }
            _ => lines.push((g.bdf.to_string(), g.bdf.to_string(), 1, what)),
        }
    }
    for (first, last, n, what) in lines {
        match n {
            1 => writeln!(s, "  {first}: {what}"),
            n => writeln!(s, "  {first} to {last} ({n} GPUs): {what}"),
        }
        .unwrap_or_default();
    }
    if p.from_text {
        return text_gates(p, s);
    }
    let kvm = match p.kvm.visible {
        Some(true) => "visible",
        Some(false) => "not visible",
        None => "unknown",
    };
    let _ = writeln!(
        s,
        "  kvm signature: {kvm} (cpuid {}, cpuinfo hypervisor {}, kernel log {})",
        p.kvm
            .cpuid_signature
            .as_deref()
            .map(|x| format!("{x:?}"))
            .unwrap_or_else(|| "not read".into()),
        p.kvm
            .cpuinfo_hypervisor
            .map(|b| if b { "yes" } else { "no" })
            .unwrap_or("unknown"),
        p.kvm
            .kernel_log
            .as_deref()
            .map(|x| format!("{x:?}"))
            .unwrap_or_else(|| "silent".into()),
    );
    // Every pair when few; else how many at each level (the JSON has all).
    if p.pairs.len() <= 6 {
        for pr in &p.pairs {
            let _ = writeln!(s, "  path {} <-> {}: {}", pr.a, pr.b, pr.level.as_str());
        }
    } else {
        let counts: Vec<String> = PathLevel::ALL
            .iter()
            .map(|l| (l, p.pairs.iter().filter(|pr| pr.level == *l).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(l, n)| format!("{n} {}", l.as_str()))
            .collect();
        let _ = writeln!(s, "  paths: {} pairs: {}", p.pairs.len(), counts.join(", "));
    }
    let nccl: Vec<String> = p
        .nccl
        .settings
        .iter()
        .map(|x| format!("{}={} ({})", x.name, x.value, x.source))
        .collect();
    let _ = writeln!(
        s,
        "  nccl: allows {} ({}){}",
        p.nccl
            .p2p_level
            .map(PathLevel::as_str)
            .unwrap_or("no PCI P2P / unknown"),
        p.nccl.level_source,
        if nccl.is_empty() {
            String::new()
        } else {
            format!("; {}", nccl.join(", "))
        }
    );
    let _ = writeln!(
        s,
        "  viommu: {}",
        if p.viommu.present {
            format!(
                "{}{}",
                p.viommu.tables.join(", "),
                p.viommu
                    .address_width_bits
                    .map(|w| format!(", {w} address bits"))
                    .unwrap_or_default()
            )
        } else {
            "none".into()
        }
    );
    text_gates(p, s);
}

fn text_gates(p: &P2p, s: &mut String) {
    for (name, g) in [
        ("driver", &p.gates.driver),
        ("path", &p.gates.path),
        ("host", &p.gates.host),
    ] {
        let _ = writeln!(s, "  gate {name}: {}: {}", g.verdict.as_str(), g.why);
    }
    for h in &p.hints {
        let _ = writeln!(s, "  [{}] {}", h.id, h.text);
    }
    let _ = writeln!(s, "  note: {}", p.note);
}

/// When an expected peer-to-peer section refused (`--expect-p2p`,
/// `gpu_preflight.expect_p2p=1`), the sentence that says so, naming the
/// refused gates: the boot's console line and log otherwise carry only
/// the BARs' diagnosis, which may well be `ok`.
pub(crate) fn expected_refusal(p: &P2p) -> Option<String> {
    if !p.fails_check() {
        return None;
    }
    let refused: Vec<String> = [
        ("driver", &p.gates.driver),
        ("path", &p.gates.path),
        ("host", &p.gates.host),
    ]
    .iter()
    .filter(|(_, g)| g.verdict == GateVerdict::Refused)
    .map(|(name, g)| format!("{name}: {}", g.why.trim_end_matches('.')))
    .collect();
    Some(format!(
        "peer-to-peer expected but refused: {}",
        refused.join("; ")
    ))
}

/// `gpu_preflight_p2p_*` series.
pub(crate) fn prometheus(p: &P2p, s: &mut String) {
    let mut metric = |name: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(s, "# HELP gpu_preflight_p2p_{name} {help}");
        let _ = writeln!(s, "# TYPE gpu_preflight_p2p_{name} gauge");
        for (labels, v) in samples {
            let _ = writeln!(s, "gpu_preflight_p2p_{name}{labels} {v}");
        }
    };
    let verdicts = [
        GateVerdict::Granted,
        GateVerdict::Refused,
        GateVerdict::Unknown,
    ];
    let gate_samples: Vec<(String, f64)> = [
        ("driver", &p.gates.driver),
        ("path", &p.gates.path),
        ("host", &p.gates.host),
    ]
    .iter()
    .flat_map(|(name, g)| {
        verdicts.iter().map(move |v| {
            (
                format!("{{gate=\"{name}\",verdict=\"{}\"}}", v.as_str()),
                f64::from(u8::from(g.verdict == *v)),
            )
        })
    })
    .collect();
    metric(
        "gate",
        "Each P2P gate's verdict, one series per verdict, 1 for the current one.",
        &gate_samples,
    );
    metric(
        "path_level",
        "The farthest GPU pair's PCI path as NCCL names it, 1 for the current one.",
        &PathLevel::ALL
            .iter()
            .map(|l| {
                (
                    format!("{{level=\"{}\"}}", l.as_str()),
                    f64::from(u8::from(p.p2p_path == Some(*l))),
                )
            })
            .collect::<Vec<_>>(),
    );
    let cliques: Vec<(String, f64)> = p
        .gpus
        .iter()
        .map(|g| {
            (
                format!("{{bdf=\"{}\"}}", g.bdf),
                g.clique.map(f64::from).unwrap_or(-1.0),
            )
        })
        .collect();
    metric(
        "clique",
        "The GPU's GPUDirect clique id; -1 without the capability or unreadable.",
        &cliques,
    );
    metric(
        "kvm_visible",
        "1 when KVM's CPUID signature is visible to the guest; absent when unknown.",
        &p.kvm
            .visible
            .map(|v| vec![(String::new(), f64::from(u8::from(v)))])
            .unwrap_or_default(),
    );
    metric(
        "hint",
        "P2P fixes suggested, one series per id.",
        &p.hints
            .iter()
            .map(|h| (format!("{{id=\"{}\"}}", h.id), 1.0))
            .collect::<Vec<_>>(),
    );
}
