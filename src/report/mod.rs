//! The report: one value that every renderer shares (`text`, `json`,
//! `prometheus`, `kmsg`), built from the evidence and what `decide`
//! concluded of it; nothing is decided here.
//!
//! The JSON form is a stable interface (documented in README.md): fields are
//! only ever added. `schema` is bumped if one must change meaning.

pub(crate) mod cause;
pub(crate) mod fw_cfg;
pub(crate) mod json;
pub(crate) mod kmsg;
pub(crate) mod lead;
pub(crate) mod map;
pub(crate) mod names;
pub(crate) mod p2p;
pub(crate) mod plan;
pub(crate) mod plan_p2p;
pub(crate) mod prometheus;
pub(crate) mod text;
pub(crate) mod wrap;

use crate::decide::decision::Branch;
use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::{Hint, HintId, Side};
use crate::decide::host;
use crate::decide::origin::WindowOrigin;
use crate::decide::p2p::P2p;
use crate::decide::Decision;
use crate::evidence::{Evidence, PlatformSource, WindowSource};
use crate::model::bar::{BarState, BridgeWindowKind, SizeSource};
use crate::model::layer::Layer;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::{Confidence, FirmwareKind, Platform};
use serde::Serialize;

pub(crate) const SCHEMA_VERSION: u32 = 1;

pub(crate) use crate::decide::summary::Verdict;

/// Which command made the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    Check,
    Explain,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Report {
    pub schema: u32,
    pub mode: Mode,
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
    pub hints: Vec<Hint>,
    /// Where the input does not show the platform: the first step if it is
    /// a QEMU/KVM guest and if it is a real machine (`platform`, `hint`);
    /// empty where the platform is known or nothing is to be done.
    pub platform_branches: Vec<Branch>,
    /// What the hypervisor, the VMM or the host kernel said, as the
    /// input holds it (`explain` of a host-side log).
    pub host_messages: Vec<HostMessageReport>,
    /// The bridges above the GPUs and their windows.
    pub bridges: Vec<BridgeReport>,
    /// Problems met while reading (a vanished device, a malformed file).
    pub warnings: Vec<String>,
    /// Peer-to-peer between the GPUs (advisory), when there are two or
    /// more or it was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p: Option<P2p>,
    /// GPUs present whose BARs the VM's configuration left without
    /// addresses, with the setting that places them: not a hardware
    /// fault (null otherwise).
    pub unplaced_by_configuration: Option<cause::Unplaced>,
    /// How long reading and deciding took, in milliseconds.
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FirmwareReport {
    pub kind: FirmwareKind,
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    pub platform: Platform,
    /// How sure `platform` is: `high`, `medium`, `low`; null when unknown.
    pub platform_confidence: Option<Confidence>,
    /// The signs the judgement used, in words.
    pub platform_signs: Vec<String>,
    /// Where `platform` came from: `told` (`explain --platform`), `seen`
    /// (signs in the input), `unknown`.
    pub platform_source: PlatformSource,
    /// The tool DMI says manages this QEMU guest (`kubevirt`, `openstack`,
    /// `lxd`, `incus`), whose settings the hints give first; null where
    /// none is named (plain QEMU, Proxmox and libvirt leave no sign).
    pub layer: Option<Layer>,
    /// What the guest read of fw_cfg (a system's report only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fw_cfg: Option<fw_cfg::FwCfgReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GpuReport {
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
pub(crate) struct BarReport {
    pub index: u8,
    pub state: BarState,
    pub size: Option<u64>,
    pub start: Option<u64>,
    pub assigned: bool,
    pub io: bool,
    pub mem64: bool,
    pub prefetchable: bool,
    pub size_source: Option<SizeSource>,
    /// The input said whether it is 64-bit and prefetchable (a driver's
    /// complaint does not): the text form prints no width otherwise.
    #[serde(skip)]
    pub type_known: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct UnassignedBar {
    pub bdf: PciAddress,
    pub bar: u8,
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Capacity {
    /// 64-bit prefetchable space the selected GPUs need, aligned as a
    /// bridge-window allocator must place it.
    pub needed_bytes: Option<u64>,
    /// Total size of the 64-bit root bus windows the GPUs can use (those
    /// of their root buses; all of them when no GPU was found).
    pub window_bytes: Option<u64>,
    pub windows: Vec<WindowReport>,
    /// CPU physical address bits (`address sizes` in /proc/cpuinfo).
    pub phys_bits: Option<u32>,
    /// The highest address + 1 the needed space would reach if packed into
    /// the first 64-bit window (what the CPU must be able to address).
    pub needed_end: Option<u64>,
    /// How the window came to be, and the numbers that say so.
    pub window_origin: WindowOrigin,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WindowReport {
    pub start: u64,
    pub end: u64,
    pub size: u64,
    pub source: WindowSource,
    pub root_bus: Option<RootBus>,
    /// Part of `window_bytes` (for the text form, which lists those).
    #[serde(skip)]
    pub counted: bool,
}

/// One host-side message: whose (`source`), which (`id`), whether it
/// keeps the VM or the device from its BARs, and what it means in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HostMessageReport {
    pub id: &'static str,
    pub source: &'static str,
    /// Always `host`: the side that must change.
    pub side: Side,
    pub bar_failure: bool,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BridgeReport {
    pub bdf: PciAddress,
    pub windows: Vec<BridgeWindowReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BridgeWindowReport {
    pub kind: BridgeWindowKind,
    pub start: u64,
    pub end: u64,
    pub size: u64,
}

impl Report {
    pub(crate) fn has_hint(&self, id: HintId) -> bool {
        self.hints.iter().any(|h| h.id == id)
    }
}

/// Each GPU of `ev` as the report gives it: ids and name where known,
/// and every BAR with its state.
fn gpu_reports(ev: &Evidence) -> Vec<GpuReport> {
    ev.gpus
        .iter()
        .map(|g| GpuReport {
            bdf: g.addr,
            vendor: (g.ids_known || g.vendor != 0).then(|| format!("{:04x}", g.vendor)),
            device: g.ids_known.then(|| format!("{:04x}", g.device)),
            class: g.ids_known.then(|| format!("{:06x}", g.class)),
            name: if g.ids_known {
                names::device_name(g.vendor, g.device)
            } else {
                names::vendor_name(g.vendor).map(String::from)
            },
            ok: g.ok(),
            upstream: g.upstream.clone(),
            bars: g
                .bars
                .iter()
                .map(|b| BarReport {
                    index: b.index,
                    state: b.state,
                    size: b.size,
                    start: b.start,
                    assigned: b.assigned(),
                    io: b.io,
                    mem64: b.mem64,
                    prefetchable: b.prefetchable,
                    size_source: b.size_source,
                    type_known: b.type_known,
                })
                .collect(),
        })
        .collect()
}

/// The report of what was decided of `ev`: the end of `check`'s,
/// `explain`'s and `boot`'s pipeline (gather, `decide::conclude`, build).
pub(crate) fn build(
    started: std::time::Instant,
    mode: Mode,
    ev: &Evidence,
    decision: Decision,
    warnings: Vec<String>,
) -> Report {
    let Decision {
        diagnosis: d,
        verdict,
        summary,
        platform: judged,
        origin: window_origin,
        hints,
        p2p,
        branches,
    } = decision;
    let d = &d;
    let gpus = gpu_reports(ev);
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
    unassigned.extend(ev.other_failed.iter().map(|o| UnassignedBar {
        bdf: o.bdf,
        bar: o.bar,
        size: o.size,
    }));
    let unplaced_by_configuration =
        cause::unplaced(judged.platform, d.kind, &gpus, hints.first().map(|h| h.id));
    unassigned.sort_by_key(|u| (u.bdf, u.bar));
    unassigned.dedup_by_key(|u| (u.bdf, u.bar));
    Report {
        schema: SCHEMA_VERSION,
        mode,
        verdict,
        diagnosis: d.kind,
        summary,
        expected: ev.expected,
        found: ev.gpus.len(),
        realloc_active: ev.realloc_active,
        kernel_advised_realloc: ev.realloc_advised,
        firmware: FirmwareReport {
            kind: ev.firmware.kind(),
            bios_vendor: ev.firmware.bios_vendor.clone(),
            bios_version: ev.firmware.bios_version.clone(),
            sys_vendor: ev.firmware.sys_vendor.clone(),
            product_name: ev.firmware.product_name.clone(),
            platform: judged.platform,
            platform_confidence: judged.confidence,
            platform_signs: judged.signs,
            platform_source: ev.platform_source(),
            layer: ev.firmware.layer(),
            fw_cfg: ev.firmware.fw_cfg.as_ref().map(fw_cfg::build),
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
                    source: w.source,
                    root_bus: w.bus,
                    counted: d.counted_windows.contains(&w.range),
                })
                .collect(),
            phys_bits: ev.cpu.phys_bits,
            needed_end: d.needed_end,
            window_origin,
        },
        host_messages: ev
            .host_messages
            .iter()
            .map(|m| HostMessageReport {
                id: m.id(),
                source: m.source(),
                side: Side::Host,
                bar_failure: matches!(host::weight(m), host::Weight::Failure(_)),
                note: host::sentence(m),
            })
            .collect(),
        bridges: ev
            .bridges
            .iter()
            .map(|(bdf, ws)| BridgeReport {
                bdf: *bdf,
                windows: ws
                    .iter()
                    .map(|w| BridgeWindowReport {
                        kind: w.kind(),
                        start: w.range.start,
                        end: w.range.end,
                        size: w.range.size(),
                    })
                    .collect(),
            })
            .collect(),
        hints,
        platform_branches: branches,
        warnings,
        p2p,
        unplaced_by_configuration,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}
