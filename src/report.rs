//! The report: one value that the text, JSON and Prometheus renderers share.
//!
//! The JSON form is a stable interface (documented in README.md): fields are
//! only ever added. `schema` is bumped if one must change meaning.

use crate::pci::PciAddress;
use serde::Serialize;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ok,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    Ok,
    GpusMissing,
    FirmwareLeftUnassigned,
    WindowTooSmall,
    PhysBitsTooSmall,
    Unknown,
}

impl DiagnosisKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::Ok => "ok",
            DiagnosisKind::GpusMissing => "gpus_missing",
            DiagnosisKind::FirmwareLeftUnassigned => "firmware_left_unassigned",
            DiagnosisKind::WindowTooSmall => "window_too_small",
            DiagnosisKind::PhysBitsTooSmall => "phys_bits_too_small",
            DiagnosisKind::Unknown => "unknown",
        }
    }

    pub const ALL: [DiagnosisKind; 6] = [
        DiagnosisKind::Ok,
        DiagnosisKind::GpusMissing,
        DiagnosisKind::FirmwareLeftUnassigned,
        DiagnosisKind::WindowTooSmall,
        DiagnosisKind::PhysBitsTooSmall,
        DiagnosisKind::Unknown,
    ];
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub schema: u32,
    /// `check` or `explain`.
    pub mode: &'static str,
    pub verdict: Verdict,
    pub diagnosis: DiagnosisKind,
    /// One sentence with the numbers that decided the diagnosis.
    pub summary: String,
    pub expected: Option<usize>,
    pub found: usize,
    pub realloc_active: bool,
    /// The kernel itself said "try booting with pci=realloc".
    pub kernel_advised_realloc: bool,
    pub firmware: FirmwareReport,
    pub gpus: Vec<GpuReport>,
    pub unassigned: Vec<UnassignedBar>,
    pub capacity: Capacity,
    pub hints: Vec<HintReport>,
    /// The bridges above the GPUs and their windows.
    pub bridges: Vec<BridgeReport>,
    /// Problems met while reading (a vanished device, a malformed file).
    pub warnings: Vec<String>,
    /// How long reading and deciding took, in milliseconds.
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct FirmwareReport {
    /// `seabios`, `ovmf`, `other` or `unknown`.
    pub kind: &'static str,
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    /// `qemu`, `vmware`, `hyperv`, `other_vm`, `bare_metal` or `unknown`.
    pub platform: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuReport {
    pub bdf: PciAddress,
    /// Four lowercase hex digits, as in `lspci -n`; null when the input
    /// did not say (an `explain` of a driver message alone).
    pub vendor: Option<String>,
    pub device: Option<String>,
    pub class: Option<String>,
    pub name: Option<String>,
    pub ok: bool,
    /// Upstream bridges, nearest first.
    pub upstream: Vec<PciAddress>,
    pub bars: Vec<BarReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BarReport {
    pub index: u8,
    /// `assigned`, `unassigned`, `ignored`.
    pub state: &'static str,
    pub size: Option<u64>,
    pub start: Option<u64>,
    pub assigned: bool,
    pub io: bool,
    pub mem64: bool,
    pub prefetchable: bool,
    /// Where the size came from: `sysfs`, `kernel_log`, `sibling`, `lspci`, or null.
    pub size_source: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnassignedBar {
    pub bdf: PciAddress,
    pub bar: u8,
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Capacity {
    /// 64-bit prefetchable space the selected GPUs need, aligned as a
    /// bridge-window allocator must place it.
    pub needed_bytes: Option<u64>,
    /// Total size of the 64-bit (above 4 GiB) root bus windows.
    pub window_bytes: Option<u64>,
    pub windows: Vec<WindowReport>,
    /// CPU physical address bits (`address sizes` in /proc/cpuinfo).
    pub phys_bits: Option<u32>,
    /// The highest address + 1 the needed space would reach if packed into
    /// the first 64-bit window (what the CPU must be able to address).
    pub needed_end: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    pub start: u64,
    pub end: u64,
    pub size: u64,
    /// `iomem`, `kernel_log`.
    pub source: &'static str,
    /// `DDDD:BB`, when known.
    pub root_bus: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgeReport {
    pub bdf: PciAddress,
    pub windows: Vec<BridgeWindowReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgeWindowReport {
    /// `io`, `mem` or `mem64_pref` (`mem_pref` for a 32-bit one).
    pub kind: &'static str,
    pub start: u64,
    pub end: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintReport {
    pub id: &'static str,
    pub text: String,
}

impl Report {
    pub fn has_hint(&self, id: &str) -> bool {
        self.hints.iter().any(|h| h.id == id)
    }
}

use crate::diagnosis::{human, Diagnosis, Evidence};
use crate::hints::Hint;
use std::fmt::Write as _;

/// Assembles the report from the evidence and what was concluded from it.
pub fn build(
    started: std::time::Instant,
    mode: &'static str,
    ev: &Evidence,
    d: &Diagnosis,
    hints: &[Hint],
    warnings: Vec<String>,
) -> Report {
    let gpus: Vec<GpuReport> = ev
        .gpus
        .iter()
        .map(|g| GpuReport {
            bdf: g.addr,
            vendor: (g.ids_known || g.vendor != 0).then(|| format!("{:04x}", g.vendor)),
            device: g.ids_known.then(|| format!("{:04x}", g.device)),
            class: g.ids_known.then(|| format!("{:06x}", g.class)),
            name: if g.ids_known {
                crate::names::device_name(g.vendor, g.device)
            } else {
                crate::names::vendor_name(g.vendor).map(String::from)
            },
            ok: g.ok(),
            upstream: g.upstream.clone(),
            bars: g
                .bars
                .iter()
                .map(|b| BarReport {
                    index: b.index,
                    state: b.state.as_str(),
                    size: b.size,
                    start: b.start,
                    assigned: b.assigned(),
                    io: b.io,
                    mem64: b.mem64,
                    prefetchable: b.prefetchable,
                    size_source: b.size_source.map(|s| s.as_str()),
                })
                .collect(),
        })
        .collect();
    let mut unassigned: Vec<UnassignedBar> = ev
        .gpus
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .filter(|b| b.fails_gpu())
                .map(move |b| UnassignedBar {
                    bdf: g.addr,
                    bar: b.index,
                    size: b.size,
                })
        })
        .collect();
    unassigned.extend(
        ev.other_failed
            .iter()
            .map(|(bdf, bar, size)| UnassignedBar {
                bdf: *bdf,
                bar: *bar,
                size: *size,
            }),
    );
    unassigned.sort_by_key(|u| (u.bdf, u.bar));
    unassigned.dedup_by_key(|u| (u.bdf, u.bar));
    let verdict = if d.kind == DiagnosisKind::Ok {
        Verdict::Ok
    } else {
        Verdict::Fail
    };
    Report {
        schema: SCHEMA_VERSION,
        mode,
        verdict,
        diagnosis: d.kind,
        summary: d.summary.clone(),
        expected: ev.expected,
        found: ev.gpus.len(),
        realloc_active: ev.realloc_active,
        kernel_advised_realloc: ev.realloc_advised,
        firmware: FirmwareReport {
            kind: ev.firmware.kind().as_str(),
            bios_vendor: ev.firmware.bios_vendor.clone(),
            bios_version: ev.firmware.bios_version.clone(),
            sys_vendor: ev.firmware.sys_vendor.clone(),
            product_name: ev.firmware.product_name.clone(),
            platform: ev.firmware.platform().as_str(),
        },
        gpus,
        unassigned,
        capacity: Capacity {
            needed_bytes: d.needed_bytes,
            window_bytes: d.window_bytes,
            windows: ev
                .windows
                .iter()
                .map(|w| WindowReport {
                    start: w.range.start,
                    end: w.range.end,
                    size: w.range.size(),
                    source: w.source.as_str(),
                    root_bus: w.bus.map(|(d, b)| format!("{d:04x}:{b:02x}")),
                })
                .collect(),
            phys_bits: ev.phys_bits,
            needed_end: d.needed_end,
        },
        bridges: ev
            .bridges
            .iter()
            .map(|(bdf, ws)| BridgeReport {
                bdf: *bdf,
                windows: ws
                    .iter()
                    .map(|w| BridgeWindowReport {
                        kind: match (w.io, w.prefetchable, w.mem64) {
                            (true, ..) => "io",
                            (false, true, true) => "mem64_pref",
                            (false, true, false) => "mem_pref",
                            (false, false, _) => "mem",
                        },
                        start: w.start,
                        end: w.end,
                        size: w.end.saturating_sub(w.start).saturating_add(1),
                    })
                    .collect(),
            })
            .collect(),
        hints: hints
            .iter()
            .map(|h| HintReport {
                id: h.id,
                text: h.text.clone(),
            })
            .collect(),
        warnings,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

pub fn to_json(r: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

fn opt_human(v: Option<u64>) -> String {
    v.map(human).unwrap_or_else(|| "unknown".into())
}

pub fn to_text(r: &Report) -> String {
    let mut s = String::new();
    let verdict = match r.verdict {
        Verdict::Ok => "OK",
        Verdict::Fail => "FAIL",
    };
    let expected = r
        .expected
        .map(|e| format!(" of {e} expected"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "gpu-preflight: {verdict}: {} GPU(s){expected}, diagnosis {}",
        r.found,
        r.diagnosis.as_str()
    );
    for g in &r.gpus {
        let _ = write!(
            s,
            "  {} [{}:{}] {:<4} {}",
            g.bdf,
            g.vendor.as_deref().unwrap_or("????"),
            g.device.as_deref().unwrap_or("????"),
            if g.ok { "ok" } else { "FAIL" },
            g.name.as_deref().unwrap_or("")
        );
        let _ = writeln!(s);
        for b in &g.bars {
            let kind = if b.io {
                "io".to_string()
            } else {
                format!(
                    "{}{}",
                    if b.mem64 { "64-bit" } else { "32-bit" },
                    if b.prefetchable { " pref" } else { "" }
                )
            };
            let place = match b.start {
                Some(a) => format!("at {a:#x}"),
                None => format!("<{}>", b.state),
            };
            let src = match (b.size_source, b.assigned) {
                (Some(src), false) => format!(" (size from {src})"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "      BAR {} {kind} {} {place}{src}",
                b.index,
                opt_human(b.size)
            );
        }
    }
    for u in r
        .unassigned
        .iter()
        .filter(|u| !r.gpus.iter().any(|g| g.bdf == u.bdf))
    {
        let _ = writeln!(
            s,
            "  {} BAR {} unassigned ({})",
            u.bdf,
            u.bar,
            opt_human(u.size)
        );
    }
    let _ = writeln!(s, "diagnosis: {}: {}", r.diagnosis.as_str(), r.summary);
    let c = &r.capacity;
    let windows: Vec<String> = c
        .windows
        .iter()
        .map(|w| {
            format!(
                "{:#x}-{:#x} ({}, from {})",
                w.start,
                w.end,
                human(w.size),
                w.source
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  needed:   {} of 64-bit prefetchable space",
        opt_human(c.needed_bytes)
    );
    let _ = writeln!(
        s,
        "  window:   {}{}",
        opt_human(c.window_bytes),
        if windows.is_empty() {
            String::new()
        } else {
            format!(" = {}", windows.join(" + "))
        }
    );
    let _ = writeln!(
        s,
        "  cpu:      {}",
        c.phys_bits
            .map(|b| format!("{b} physical address bits ({})", human(1u64 << b.min(63))))
            .unwrap_or_else(|| "physical address bits unknown".into())
    );
    let _ = writeln!(
        s,
        "  realloc:  pci=realloc {}",
        if r.realloc_active {
            "active"
        } else {
            "not active"
        }
    );
    let _ = writeln!(
        s,
        "  firmware: {} ({}), platform {}",
        r.firmware.kind,
        r.firmware
            .bios_vendor
            .as_deref()
            .unwrap_or("unknown vendor"),
        r.firmware.platform
    );
    if !r.hints.is_empty() {
        let _ = writeln!(s, "hints:");
        for h in &r.hints {
            let _ = writeln!(s, "  [{}] {}", h.id, h.text);
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// node_exporter textfile collector format.
pub fn to_prometheus(r: &Report) -> String {
    let mut s = String::new();
    let mut metric = |name: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(s, "# HELP gpu_preflight_{name} {help}");
        let _ = writeln!(s, "# TYPE gpu_preflight_{name} gauge");
        for (labels, v) in samples {
            let _ = writeln!(s, "gpu_preflight_{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    metric(
        "ok",
        "1 when every selected GPU is present with every memory BAR assigned.",
        &one(f64::from(u8::from(r.verdict == Verdict::Ok))),
    );
    metric(
        "diagnosis",
        "The diagnosis, one series per kind, 1 for the current one.",
        &DiagnosisKind::ALL
            .iter()
            .map(|k| {
                (
                    format!("{{diagnosis=\"{}\"}}", k.as_str()),
                    f64::from(u8::from(*k == r.diagnosis)),
                )
            })
            .collect::<Vec<_>>(),
    );
    metric("gpus_found", "Selected GPUs present.", &one(r.found as f64));
    if let Some(e) = r.expected {
        metric(
            "gpus_expected",
            "GPUs that must be present.",
            &one(e as f64),
        );
    }
    metric(
        "unassigned_bars",
        "Memory BARs of selected GPUs without an address.",
        &one(r.unassigned.len() as f64),
    );
    metric(
        "realloc_active",
        "1 when the kernel command line has pci=realloc.",
        &one(f64::from(u8::from(r.realloc_active))),
    );
    if let Some(n) = r.capacity.needed_bytes {
        metric(
            "needed_bytes",
            "64-bit prefetchable space the selected GPUs need.",
            &one(n as f64),
        );
    }
    if let Some(w) = r.capacity.window_bytes {
        metric(
            "window_bytes",
            "Size of the 64-bit root bus windows.",
            &one(w as f64),
        );
    }
    if let Some(b) = r.capacity.phys_bits {
        metric(
            "phys_bits",
            "CPU physical address bits.",
            &one(f64::from(b)),
        );
    }
    metric(
        "check_duration_seconds",
        "Time the check took to read and decide.",
        &one(r.elapsed_ms as f64 / 1000.0),
    );
    metric(
        "gpu_ok",
        "1 when this GPU has every memory BAR assigned.",
        &r.gpus
            .iter()
            .map(|g| {
                (
                    format!(
                        "{{bdf=\"{}\",vendor=\"{}\",device=\"{}\",name=\"{}\"}}",
                        g.bdf,
                        g.vendor.as_deref().unwrap_or(""),
                        g.device.as_deref().unwrap_or(""),
                        label(g.name.as_deref().unwrap_or(""))
                    ),
                    f64::from(u8::from(g.ok)),
                )
            })
            .collect::<Vec<_>>(),
    );
    metric(
        "hint",
        "Hints given, by id.",
        &r.hints
            .iter()
            .map(|h| (format!("{{id=\"{}\"}}", h.id), 1.0))
            .collect::<Vec<_>>(),
    );
    s
}

/// The kernel-log records: the verdict line first, then hints, at most
/// `kmsg::MAX_RECORDS` in all.
pub fn kmsg_records(r: &Report) -> Vec<(u8, String)> {
    use crate::kmsg::{MAX_RECORDS, PRIO_INFO, PRIO_WARNING};
    let unassigned: Vec<String> = r
        .unassigned
        .iter()
        .map(|u| format!("{}/BAR{}", u.bdf, u.bar))
        .collect();
    let prio = if r.verdict == Verdict::Ok {
        PRIO_INFO
    } else {
        PRIO_WARNING
    };
    let mut out = vec![(
        prio,
        format!(
            "verdict={} diagnosis={} found={} expected={} realloc={} unassigned={} elapsed_ms={}",
            match r.verdict {
                Verdict::Ok => "ok",
                Verdict::Fail => "fail",
            },
            r.diagnosis.as_str(),
            r.found,
            r.expected
                .map(|e| e.to_string())
                .unwrap_or_else(|| "-".into()),
            u8::from(r.realloc_active),
            if unassigned.is_empty() {
                "-".to_string()
            } else {
                unassigned.join(",")
            },
            r.elapsed_ms
        ),
    )];
    if r.verdict == Verdict::Fail {
        out.push((prio, r.summary.clone()));
    }
    for h in &r.hints {
        if out.len() >= MAX_RECORDS {
            break;
        }
        out.push((prio, format!("hint {}: {}", h.id, h.text)));
    }
    out
}
