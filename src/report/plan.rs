//! The plan's report: what a VM's configuration will make of its GPUs
//! before it boots, as text and JSON. The hints are those `check` gives,
//! written for this VM.

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::Hint;
use crate::decide::origin::WindowOrigin;
use crate::decide::sizing::align_up;
use crate::model::platform::CpuVendor;
use crate::model::size::human;
use crate::report::map::{group, Gpu, Map};
use crate::report::wrap::{wrap, Screen};
use crate::report::{Verdict, SCHEMA_VERSION};
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanReport {
    pub schema: u32,
    /// Always `plan`.
    pub mode: &'static str,
    pub verdict: Verdict,
    pub vm: VmReport,
    pub gpus: Vec<PlanGpu>,
    pub capacity: PlanCapacity,
    pub predicted: Predicted,
    pub hints: Vec<Hint>,
    pub warnings: Vec<String>,
    /// `--p2p`: the driver's P2P gate and the lines that open it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p: Option<crate::report::plan_p2p::PlanP2p>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct VmReport {
    /// `proxmox:100`, `libvirt:FILE`, `flags`.
    pub source: String,
    /// `ovmf` or `seabios`.
    pub firmware: &'static str,
    /// The firmware release given or found installed, or null.
    pub firmware_version: Option<String>,
    /// `q35` or `pc`.
    pub machine: &'static str,
    pub ram_bytes: u64,
    /// `kvm64`, `x86-64-v2-AES`, `host`, ...
    pub cpu_model: String,
    pub phys_bits: u32,
    pub pdpe1gb: bool,
    pub cpu_vendor: Option<CpuVendor>,
    pub hole64_bytes: Option<u64>,
    pub mmio64_bytes: Option<u64>,
    pub realloc: bool,
    /// The QEMU release whose rules were taken (`7.2`).
    pub qemu_version: String,
    /// Whose bus layout the VM has (`proxmox`), when known.
    pub layout: Option<&'static str>,
    /// Further devices' 64-bit prefetchable BARs (a virtio device's 16 KiB).
    pub devices64_bytes: Vec<u64>,
    /// What was not in the configuration and was taken at a default.
    pub assumed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanGpu {
    /// The host functions passed through as this one device.
    pub host: Vec<String>,
    pub bars: Vec<PlanBar>,
    /// Where the configuration attaches it (not in the JSON).
    #[serde(skip)]
    pub attach: Option<crate::decide::window::Attach>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanBar {
    /// Host function, or null for sizes given by hand.
    pub bdf: Option<String>,
    pub index: Option<u8>,
    /// The GPU's PCI function it sits in (the host function's, or
    /// `--bar SIZE@FN`): OVMF rejects per function.
    pub function: u8,
    pub size: u64,
    pub mem64: bool,
    pub prefetchable: bool,
    /// A 64-bit prefetchable BAR: what the 64-bit window holds.
    pub counted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanCapacity {
    /// The 64-bit space the GPUs need as the kernel sizes it.
    pub needed_bytes: Option<u64>,
    /// The same as the firmware lays it out (one root port each, aligned
    /// to the largest BAR).
    pub firmware_span_bytes: Option<u64>,
    pub window_origin: WindowOrigin,
    /// The window the guest kernel will be offered.
    pub window: Option<WindowSpan>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct WindowSpan {
    pub start: u64,
    pub end: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Predicted {
    /// Every GPU will have every 64-bit BAR placed.
    pub ok: bool,
    /// The diagnosis `check` will show in the guest; null when the VM will
    /// not get that far.
    pub diagnosis: Option<DiagnosisKind>,
    /// GPUs that will be left with an unassigned BAR.
    pub unassigned_gpus: usize,
    /// QEMU will start and the firmware come up.
    pub boots: bool,
    pub why: String,
    /// GPUs with a BAR the firmware leaves at address 0 as the guest reads
    /// it (OVMF rejected them, or abandoned the root bus; SeaBIOS wrapped
    /// its layout past zero).
    pub firmware_unprogrammed_gpus: usize,
    /// OVMF abandoned the allocation of the whole root bus: nothing on it
    /// is programmed, the disk controller neither.
    pub bus_abandoned: bool,
    /// `qemu_refuses`, `firmware_hangs`, or null when it boots.
    pub no_boot: Option<&'static str>,
    /// Each GPU, in the order given (for --gpus N, in bus order).
    pub placement: Vec<Placement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Placement {
    pub gpu: usize,
    /// The firmware gave every 64-bit BAR of it an address.
    pub firmware_programmed: bool,
    /// The guest kernel will have every 64-bit BAR of it assigned.
    pub kernel_assigned: bool,
}

/// The plan's report, with the verdict `decide::summary` gave the
/// prediction.
pub(crate) fn new(
    verdict: Verdict,
    vm: VmReport,
    gpus: Vec<PlanGpu>,
    capacity: PlanCapacity,
    predicted: Predicted,
    hints: Vec<Hint>,
    warnings: Vec<String>,
) -> PlanReport {
    PlanReport {
        schema: SCHEMA_VERSION,
        mode: "plan",
        verdict,
        vm,
        gpus,
        capacity,
        predicted,
        hints,
        warnings,
        p2p: None,
    }
}

pub(crate) fn json(r: &PlanReport) -> String {
    let mut s =
        serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// The plan for `screen`: wrapped to its width, the address map as the
/// model places the GPUs after the VM's lines.
pub(crate) fn text_for(r: &PlanReport, screen: Screen) -> String {
    let full = lines(r);
    // The map goes after the head (the verdict and the VM's settings).
    let head_end = full
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|i| !full[*i..].starts_with(' '))
        .unwrap_or(full.len());
    let mut s = wrap(&full[..head_end], screen.width);
    s.push('\n');
    s.push_str(&map(r).render(screen.utf8));
    s.push('\n');
    s.push_str(&wrap(&full[head_end..], screen.width));
    s
}

fn lines(r: &PlanReport) -> String {
    let mut s = String::new();
    let v = &r.vm;
    let _ = writeln!(
        s,
        "gpu-preflight plan: {}: {} GPU(s), {}",
        if r.predicted.ok { "OK" } else { "FAIL" },
        r.gpus.len(),
        match (r.predicted.boots, r.predicted.diagnosis) {
            (false, _) => "the VM will not boot".to_string(),
            (true, Some(d)) => format!("predicted diagnosis {}", d.as_str()),
            (true, None) => "predicted diagnosis unknown".to_string(),
        }
    );
    let _ = writeln!(
        s,
        "  vm:       {} ({}), {} {}, {} RAM, cpu {} with {} address bits{}{}",
        v.source,
        v.machine,
        v.firmware,
        v.firmware_version.as_deref().unwrap_or("(version unknown)"),
        human(v.ram_bytes),
        v.cpu_model,
        v.phys_bits,
        if v.pdpe1gb {
            ", pdpe1gb"
        } else {
            ", no pdpe1gb"
        },
        match v.cpu_vendor {
            Some(CpuVendor::Amd) => ", AMD",
            Some(CpuVendor::Intel) => ", Intel",
            _ => "",
        }
    );
    if v.hole64_bytes.is_some() || v.mmio64_bytes.is_some() {
        let _ = writeln!(
            s,
            "            pci-hole64-size {}, X-PciMmio64Mb {}",
            v.hole64_bytes
                .map(human)
                .unwrap_or_else(|| "default".into()),
            v.mmio64_bytes
                .map(|b| (b >> 20).to_string())
                .unwrap_or_else(|| "unset".into())
        );
    }
    if v.layout.is_some() || !v.devices64_bytes.is_empty() {
        let devs: Vec<String> = v.devices64_bytes.iter().map(|b| human(*b)).collect();
        let _ = writeln!(
            s,
            "            {}{}",
            v.layout
                .map(|l| match l {
                    "proxmox" => "Proxmox's bus layout".to_string(),
                    l => format!("{l} bus layout"),
                })
                .unwrap_or_else(|| "bus layout by --topology".into()),
            if devs.is_empty() {
                String::new()
            } else {
                format!(
                    "; further 64-bit devices: {} (64-bit prefetchable BARs)",
                    devs.join(", ")
                )
            }
        );
    }
    for (i, g) in r.gpus.iter().enumerate() {
        // One group per host function, so that an audio function's BAR 0
        // is not read as the GPU's.
        let mut groups: Vec<(Option<&str>, Vec<String>)> = Vec::new();
        for b in &g.bars {
            let bar = format!(
                "{}{}{}",
                b.index.map(|i| format!("BAR {i} ")).unwrap_or_default(),
                human(b.size),
                if b.counted { " 64-bit pref" } else { "" }
            );
            match groups.last_mut() {
                Some((bdf, bars)) if *bdf == b.bdf.as_deref() => bars.push(bar),
                _ => groups.push((b.bdf.as_deref(), vec![bar])),
            }
        }
        let line: Vec<String> = groups
            .iter()
            .map(|(bdf, bars)| match bdf {
                Some(bdf) => format!("{bdf}: {}", bars.join(", ")),
                None => bars.join(", "),
            })
            .collect();
        let head = if g.host.is_empty() {
            format!("gpu {i}: ")
        } else {
            String::new()
        };
        let _ = writeln!(s, "  {head}{}", line.join("; "));
    }
    let c = &r.capacity;
    let _ = writeln!(
        s,
        "  needed:   {} as the kernel sizes it, {} as the firmware lays it out",
        c.needed_bytes
            .map(human)
            .unwrap_or_else(|| "unknown".into()),
        c.firmware_span_bytes
            .map(human)
            .unwrap_or_else(|| "unknown".into())
    );
    if let (Some(start), Some(size)) = (
        c.window_origin.aperture_start,
        c.window_origin.aperture_bytes,
    ) {
        let _ = writeln!(
            s,
            "  firmware: {} at {start:#x} ({}, {})",
            human(size),
            c.window_origin.kind.as_str(),
            c.window_origin.rules.unwrap_or("")
        );
    }
    if let Some(w) = c.window {
        let _ = writeln!(
            s,
            "  window:   {:#x}-{:#x} ({}) offered to the guest kernel",
            w.start,
            w.end,
            human(w.size)
        );
    }
    let _ = writeln!(s, "predicted: {}", r.predicted.why);
    if !r.vm.assumed.is_empty() {
        let _ = writeln!(s, "assumed:  {}", r.vm.assumed.join("; "));
    }
    if let Some(p) = &r.p2p {
        super::plan_p2p::text(p, &mut s);
    }
    super::text::hints_and_warnings(&mut s, &r.hints, &r.warnings);
    s
}

/// The map of what `plan` predicts: each GPU's 64-bit BARs packed in the
/// kernel's window (or the firmware's) in the order given, a GPU the
/// model leaves out where it would have to go.
fn map(r: &PlanReport) -> Map {
    let c = &r.capacity;
    let firmware = c
        .window_origin
        .aperture_start
        .zip(c.window_origin.aperture_bytes);
    let kernel: Vec<(u64, u64)> = c.window.iter().map(|w| (w.start, w.end)).collect();
    let mut next = kernel.first().map(|(s, _)| *s).or(firmware.map(|(s, _)| s));
    let items = r
        .gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let ok = r
                .predicted
                .placement
                .iter()
                .find(|p| p.gpu == i)
                .is_none_or(|p| p.kernel_assigned);
            let mut bars: Vec<u64> = g
                .bars
                .iter()
                .filter(|b| b.counted)
                .map(|b| b.size)
                .collect();
            bars.sort_unstable_by(|a, b| b.cmp(a));
            let mut at = Vec::new();
            for size in &bars {
                if let Some(n) = next.and_then(|n| align_up(n, *size)) {
                    at.push(n);
                    next = n.checked_add(*size);
                }
            }
            let name = g
                .host
                .first()
                .cloned()
                .unwrap_or_else(|| format!("gpu {i}"));
            let big = bars.first().copied().unwrap_or(0);
            let (placed, wanted) = if ok {
                (at, Vec::new())
            } else {
                (Vec::new(), at)
            };
            Gpu {
                name,
                ok,
                big,
                placed,
                wanted,
            }
        })
        .collect();
    // RAM split at 4 GiB: what is not below it went above, and the hole
    // starts where the part below ends.
    let ram_end = c.window_origin.ram_end.or(Some(r.vm.ram_bytes));
    let hole32 = ram_end
        .filter(|e| *e > 1 << 32)
        .map(|e| r.vm.ram_bytes.saturating_sub(e - (1 << 32)))
        .filter(|below| *below > 0);
    Map {
        ram_end,
        hole32,
        firmware,
        kernel,
        phys_bits: Some(r.vm.phys_bits),
        gpus: group(items),
        predicted: true,
    }
}
