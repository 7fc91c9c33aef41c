//! From evidence to exactly one diagnosis, with the numbers that decide it.
//!
//! The order of the questions follows what can be fixed where:
//! 1. Are BARs unassigned at all? If not: are GPUs missing? Else ok.
//! 2. Would the space the GPUs need reach past what the CPU can address?
//!    Then no window, firmware or kernel setting helps: phys bits.
//! 3. Does that space fit the 64-bit root bus windows the firmware offers?
//!    If not, the host must offer a bigger window.
//! 4. It fits: the firmware just did not place everything, and the guest
//!    kernel can (`pci=realloc`), unless it already tried.

use crate::bars::{Bar, SizeSource};
use crate::kernel_log::{Event, ResourceRef};
use crate::pci::PciAddress;
use crate::report::DiagnosisKind;
use crate::sizing::{align_up, fits, max_align, packed_size, top_blocks, Block, Item, RootBus};
use crate::system::{Firmware, Platform, Range};
use std::collections::BTreeMap;

/// A selected GPU and its BARs.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub addr: PciAddress,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    pub bars: Vec<Bar>,
    /// Nearest bridge first.
    pub upstream: Vec<PciAddress>,
    /// The root bus the GPU hangs off, when known.
    pub root_bus: Option<RootBus>,
    /// Vendor, device and class were read, not guessed (an NVIDIA driver
    /// complaint names a GPU without them).
    pub ids_known: bool,
}

impl Gpu {
    pub fn ok(&self) -> bool {
        !self.bars.iter().any(Bar::fails_gpu)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    Iomem,
    KernelLog,
}

impl WindowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Iomem => "iomem",
            WindowSource::KernelLog => "kernel_log",
        }
    }
}

/// A 64-bit root bus window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub range: Range,
    pub source: WindowSource,
    pub bus: Option<RootBus>,
}

#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub gpus: Vec<Gpu>,
    pub expected: Option<usize>,
    /// 64-bit root bus windows (the part above 4 GiB).
    pub windows: Vec<Window>,
    /// The root bus windows were readable (iomem with real addresses, or
    /// `root bus resource` lines): an empty `windows` then means there is
    /// no 64-bit window at all, not that we do not know.
    pub windows_known: bool,
    pub phys_bits: Option<u32>,
    /// Lowest address the kernel called "not CPU addressable".
    pub unaddressable_from: Option<u64>,
    pub realloc_active: bool,
    /// The kernel's "try booting with pci=realloc".
    pub realloc_advised: bool,
    pub firmware: Firmware,
    /// Endpoints that are not selected GPUs but whose memory BARs failed
    /// (only `explain` reports these).
    pub other_failed: Vec<(PciAddress, u8, Option<u64>)>,
    /// The bridges above the GPUs, with the windows the kernel gave them.
    pub bridges: Vec<(PciAddress, Vec<crate::bars::BridgeWindow>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    pub kind: DiagnosisKind,
    pub summary: String,
    pub needed_bytes: Option<u64>,
    pub window_bytes: Option<u64>,
    /// Where the needed space would end if packed from the first window's
    /// start: what the CPU must be able to address.
    pub needed_end: Option<u64>,
    /// Addresses the CPU reaches (2^phys_bits, or where the kernel said
    /// addresses stop being CPU addressable).
    pub addressable_limit: Option<u64>,
    pub missing: usize,
    pub failed_bars: usize,
}

/// 64-bit prefetchable BARs are what the big windows are for; a GPU's
/// 32-bit BARs live below 4 GiB and are not counted.
fn counts_for_window(b: &Bar) -> bool {
    !b.io && b.mem64 && b.prefetchable
}

pub fn human(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (u, s) in UNITS {
        if bytes >= s {
            let v = bytes as f64 / s as f64;
            return if bytes % s == 0 {
                format!("{} {u}", bytes / s)
            } else {
                format!("{v:.1} {u}")
            };
        }
    }
    format!("{bytes} B")
}

/// The space question for one root bus: its GPUs' blocks and its windows.
struct BusSpace {
    blocks: Vec<Block>,
    windows: Vec<(u64, u64)>,
}

/// Groups the GPUs' 64-bit prefetchable BARs into top-level blocks per
/// root bus, with the windows of that bus (a window or GPU whose bus is
/// not known is shared by all). `None` when a needed size is unknown.
fn bus_spaces(ev: &Evidence) -> Option<Vec<BusSpace>> {
    let mut items = Vec::new();
    for g in &ev.gpus {
        for b in g.bars.iter().filter(|b| counts_for_window(b)) {
            items.push(Item {
                size: b.size?,
                chain: g.upstream.clone(),
                bus: g.root_bus,
            });
        }
    }
    let top = top_blocks(&items)?;
    let mut by_bus: BTreeMap<Option<RootBus>, Vec<Block>> = BTreeMap::new();
    for (bus, b) in top {
        by_bus.entry(bus).or_default().push(b);
    }
    Some(
        by_bus
            .into_iter()
            .map(|(bus, blocks)| BusSpace {
                blocks,
                windows: ev
                    .windows
                    .iter()
                    .filter(|w| bus.is_none() || w.bus.is_none() || w.bus == bus)
                    .map(|w| (w.range.start, w.range.end))
                    .collect(),
            })
            .collect(),
    )
}

pub fn diagnose(ev: &Evidence) -> Diagnosis {
    let found = ev.gpus.len();
    let missing = ev.expected.map(|e| e.saturating_sub(found)).unwrap_or(0);
    let failed: Vec<&Bar> = ev
        .gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.fails_gpu())
        .collect();
    let failed_bars = failed.len() + ev.other_failed.len();
    let failed_big = failed.iter().filter(|b| counts_for_window(b)).count();

    let spaces = bus_spaces(ev);
    // The windows of the root buses the GPUs sit on.
    let used: Vec<(u64, u64)> = match &spaces {
        Some(sp) => {
            let mut w: Vec<(u64, u64)> =
                sp.iter().flat_map(|s| s.windows.iter().copied()).collect();
            w.sort();
            w.dedup();
            w
        }
        None => ev
            .windows
            .iter()
            .map(|w| (w.range.start, w.range.end))
            .collect(),
    };
    let window_bytes = ev.windows_known.then(|| {
        used.iter()
            .map(|(s, e)| e.saturating_sub(*s).saturating_add(1))
            .sum()
    });
    let needed_bytes = spaces
        .as_ref()
        .and_then(|sp| {
            sp.iter()
                .try_fold(0u64, |a, s| a.checked_add(packed_size(&s.blocks)?))
        })
        .filter(|n| *n > 0);
    // Where the packed need would end from the start of its bus's first
    // window: the address the CPU must reach.
    let needed_end = spaces.as_ref().and_then(|sp| {
        sp.iter()
            .filter_map(|s| {
                let start = s.windows.iter().map(|w| w.0).min()?;
                align_up(start, max_align(&s.blocks))?.checked_add(packed_size(&s.blocks)?)
            })
            .max()
    });
    let addressable_limit = match (ev.phys_bits, ev.unaddressable_from) {
        (Some(b), Some(u)) => Some(u.min(1u64.checked_shl(b).unwrap_or(u64::MAX))),
        (Some(b), None) => Some(1u64.checked_shl(b).unwrap_or(u64::MAX)),
        (None, u) => u,
    };
    let mut d = Diagnosis {
        kind: DiagnosisKind::Ok,
        summary: String::new(),
        needed_bytes,
        window_bytes,
        needed_end,
        addressable_limit,
        missing,
        failed_bars,
    };
    let need = needed_bytes
        .map(human)
        .unwrap_or_else(|| "an unknown amount of".into());
    let win = window_bytes.map(human).unwrap_or_else(|| "unknown".into());

    if failed_bars == 0 {
        if missing > 0 {
            d.kind = DiagnosisKind::GpusMissing;
            d.summary = format!(
                "{found} of {} expected GPUs present; every BAR of those present is assigned",
                ev.expected.unwrap_or(found)
            );
        } else if found == 0 {
            d.summary = "no GPU found, nothing to check (give --expect to require GPUs)".into();
        } else {
            d.summary = format!("{found} GPU(s), every memory BAR assigned");
        }
        return d;
    }

    let unassigned = format!("{failed_bars} memory BAR(s) unassigned");
    if failed.is_empty() {
        // Only devices that are not the selected GPUs failed (explain).
        d.kind = DiagnosisKind::Unknown;
        d.summary = format!(
            "{unassigned}, all on devices not taken for GPUs: the numbers here are about the GPUs' 64-bit space and do not cover them"
        );
        return d;
    }
    if failed_big == 0 {
        // Only 32-bit or non-prefetchable BARs failed: that space comes from
        // the windows below 4 GiB, which the numbers here do not cover.
        d.kind = DiagnosisKind::Unknown;
        d.summary = format!(
            "{unassigned}, no GPU's 64-bit prefetchable BAR among them: the shortage is in the 32-bit window below 4 GiB (or the firmware rejected the device), which these numbers do not cover"
        );
        return d;
    }
    let all_fit = spaces
        .as_ref()
        .map(|sp| sp.iter().all(|s| fits(&s.blocks, &s.windows)));
    let vm = !matches!(ev.firmware.platform(), Platform::BareMetal);
    let past_limit = matches!((needed_end, addressable_limit), (Some(e), Some(l)) if e > l);
    if (past_limit && vm) || (ev.unaddressable_from.is_some() && all_fit != Some(true)) {
        d.kind = DiagnosisKind::PhysBitsTooSmall;
        d.summary = match (needed_end, addressable_limit) {
            (Some(end), Some(limit)) if end > limit => format!(
                "{unassigned}: the GPUs need {need} of 64-bit space, which from the window start would end at {end:#x}, past the {} the CPU can address{}",
                human(limit),
                ev.phys_bits.map(|b| format!(" ({b} physical address bits)")).unwrap_or_default()
            ),
            _ => format!(
                "{unassigned}: the kernel dropped part of the firmware's 64-bit window as not CPU addressable (from {:#x})",
                ev.unaddressable_from.unwrap_or(0)
            ),
        };
        return d;
    }
    match (all_fit, window_bytes) {
        (Some(false), Some(_)) if needed_bytes.is_some() => {
            d.kind = DiagnosisKind::WindowTooSmall;
            d.summary = format!(
                "{unassigned}: the GPUs need {need} of 64-bit prefetchable space (bridge windows aligned as the kernel sizes them) but the root bus offers {}",
                if window_bytes == Some(0) { "no 64-bit window at all".to_string() } else { format!("a {win} window") }
            );
            if let Some(tight) = tight_need(ev)
                .filter(|t| Some(*t) < needed_bytes && window_bytes.is_some_and(|w| *t <= w))
            {
                d.summary.push_str(&format!(
                    "; the BARs alone add up to {}, which kernels that relax bridge alignment may squeeze in",
                    human(tight)
                ));
            }
        }
        (Some(true), Some(_)) if !ev.realloc_active => {
            d.kind = DiagnosisKind::FirmwareLeftUnassigned;
            d.summary = format!(
                "{unassigned}: the {win} 64-bit window has room for the {need} the GPUs need; the firmware did not place them and the kernel was not asked to (pci=realloc is off)"
            );
        }
        (Some(true), Some(_)) => {
            d.kind = DiagnosisKind::Unknown;
            d.summary = format!(
                "{unassigned}: the {win} window has room for the {need} needed and pci=realloc is active, yet the kernel did not place them (bridge reservations or a hot-plug slot may hold the space)"
            );
        }
        _ => {
            d.kind = DiagnosisKind::Unknown;
            let mut missing_facts = Vec::new();
            if needed_bytes.is_none() {
                missing_facts.push("the size of a failed BAR");
            }
            if window_bytes.is_none() {
                missing_facts.push(
                    "the 64-bit root bus window (run as root, or give the boot's kernel log)",
                );
            }
            d.summary = format!(
                "{unassigned}; not enough evidence to say why, missing {}",
                missing_facts.join(" and ")
            );
        }
    }
    d
}

/// The BAR sizes alone, each rounded to 1 MiB: the least any allocator
/// could do with.
fn tight_need(ev: &Evidence) -> Option<u64> {
    ev.gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| counts_for_window(b))
        .try_fold(0u64, |a, b| a.checked_add(align_up(b.size?, 1 << 20)?))
}

/// Fills in the size of BARs that sysfs could not size: from the kernel
/// log first, then from an identical sibling GPU whose same BAR was placed.
pub fn fill_sizes(gpus: &mut [Gpu], events: &[Event]) {
    for g in gpus.iter_mut() {
        for b in g.bars.iter_mut().filter(|b| b.size.is_none()) {
            let from_log = events.iter().rev().find_map(|e| match e {
                Event::Probed {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource,
                }
                | Event::Assigned {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource,
                } if *bdf == g.addr && *i == b.index && resource.size > 0 => Some(resource.size),
                Event::AssignFailed {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource: Some(r),
                    ..
                } if *bdf == g.addr && *i == b.index && r.size > 0 => Some(r.size),
                _ => None,
            });
            if let Some(s) = from_log {
                b.size = Some(s);
                b.size_source = Some(SizeSource::KernelLog);
            }
        }
    }
    let known: Vec<(u16, u16, u8, u64)> = gpus
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .filter(|b| b.assigned())
                .filter_map(move |b| Some((g.vendor, g.device, b.index, b.size?)))
        })
        .collect();
    for g in gpus.iter_mut() {
        for b in g.bars.iter_mut().filter(|b| b.size.is_none()) {
            if let Some((.., s)) = known
                .iter()
                .find(|(v, d, i, _)| *v == g.vendor && *d == g.device && *i == b.index)
            {
                b.size = Some(*s);
                b.size_source = Some(SizeSource::Sibling);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bars::BarState;
    use crate::system::Firmware;

    const G: u64 = 1 << 30;

    fn gpu(n: u8, size: u64, assigned: bool) -> Gpu {
        let addr = PciAddress {
            domain: 0,
            bus: n,
            device: 0,
            function: 0,
        };
        Gpu {
            addr,
            vendor: 0x10de,
            device: 0x2330,
            class: 0x030200,
            bars: vec![Bar {
                index: 2,
                state: if assigned {
                    BarState::Assigned
                } else {
                    BarState::Ignored
                },
                io: false,
                mem64: true,
                prefetchable: true,
                start: assigned.then_some(0x100_0000_0000),
                size: Some(size),
                size_source: Some(SizeSource::Sysfs),
            }],
            upstream: vec![PciAddress {
                domain: 0,
                bus: 0,
                device: 2,
                function: n,
            }],
            root_bus: Some((0, 0)),
            ids_known: true,
        }
    }

    fn ev(
        gpus: Vec<Gpu>,
        window: Option<Range>,
        phys_bits: Option<u32>,
        realloc: bool,
    ) -> Evidence {
        Evidence {
            gpus,
            windows: window
                .map(|range| {
                    vec![Window {
                        range,
                        source: WindowSource::Iomem,
                        bus: Some((0, 0)),
                    }]
                })
                .unwrap_or_default(),
            windows_known: window.is_some(),
            phys_bits,
            realloc_active: realloc,
            ..Default::default()
        }
    }

    fn eight_of_32g_with_5_failed() -> Vec<Gpu> {
        (1..=8).map(|n| gpu(n, 32 * G, n <= 3)).collect()
    }

    #[test]
    fn ovmf_default_window_is_too_small() {
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0xf8_9fff_ffff,
        };
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false));
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{}", d.summary);
        assert_eq!(d.needed_bytes, Some(256 * G));
        assert!(d.window_bytes.unwrap() < 100 * G);
        assert_eq!(d.failed_bars, 5);
    }

    #[test]
    fn room_in_window_means_firmware_left_it_and_realloc_helps() {
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0x1df_ffff_ffff,
        };
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false));
        assert_eq!(
            d.kind,
            DiagnosisKind::FirmwareLeftUnassigned,
            "{}",
            d.summary
        );
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), true));
        assert_eq!(d.kind, DiagnosisKind::Unknown, "{}", d.summary);
    }

    #[test]
    fn space_past_the_cpu_address_limit_is_phys_bits() {
        let w = Range {
            start: 0x20_0000_0000,
            end: 0xff_ffff_ffff,
        };
        let gpus: Vec<Gpu> = (1..=8).map(|n| gpu(n, 128 * G, n != 1)).collect();
        let d = diagnose(&ev(gpus.clone(), Some(w), Some(40), false));
        assert_eq!(d.kind, DiagnosisKind::PhysBitsTooSmall, "{}", d.summary);
        assert_eq!(d.needed_bytes, Some(1024 * G));
        // The same numbers with 46 bits: the window is what is too small.
        let d = diagnose(&ev(gpus, Some(w), Some(46), false));
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{}", d.summary);
    }

    #[test]
    fn healthy_and_missing() {
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0xff_ffff_ffff,
        };
        let all: Vec<Gpu> = (1..=8).map(|n| gpu(n, 16 * G, true)).collect();
        assert_eq!(
            diagnose(&ev(all.clone(), Some(w), Some(46), false)).kind,
            DiagnosisKind::Ok
        );
        let mut e = ev(all[..7].to_vec(), Some(w), Some(46), false);
        e.expected = Some(8);
        let d = diagnose(&e);
        assert_eq!((d.kind, d.missing), (DiagnosisKind::GpusMissing, 1));
    }

    #[test]
    fn unknown_when_numbers_are_missing() {
        let mut gpus = eight_of_32g_with_5_failed();
        gpus[7].bars[0].size = None;
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0x1df_ffff_ffff,
        };
        assert_eq!(
            diagnose(&ev(gpus, Some(w), Some(46), false)).kind,
            DiagnosisKind::Unknown
        );
        assert_eq!(
            diagnose(&ev(eight_of_32g_with_5_failed(), None, Some(46), false)).kind,
            DiagnosisKind::Unknown
        );
    }

    #[test]
    fn nvidia_like_gpus_are_sized_as_the_kernel_sizes_bridge_windows() {
        // Four GPUs with a 32 GiB BAR1 and a 32 MiB BAR3 each: 48 GiB per
        // root port, 192 GiB in all, which a 200 GiB window holds.
        let gpus: Vec<Gpu> = (1..=4)
            .map(|n| {
                let mut g = gpu(n, 32 * G, n != 4);
                g.bars.push(Bar {
                    index: 4,
                    size: Some(32 << 20),
                    ..g.bars[0]
                });
                g
            })
            .collect();
        let w = Range {
            start: 0x100_0000_0000,
            end: 0x100_0000_0000 + 200 * G - 1,
        };
        let d = diagnose(&ev(gpus, Some(w), Some(46), false));
        assert_eq!(d.needed_bytes, Some(192 * G));
        assert_eq!(
            d.kind,
            DiagnosisKind::FirmwareLeftUnassigned,
            "{}",
            d.summary
        );
    }

    #[test]
    fn a_window_on_another_root_bus_does_not_count() {
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0xf8_9fff_ffff,
        };
        let mut e = ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false);
        e.windows.push(Window {
            range: Range {
                start: 0x200_0000_0000,
                end: 0x2ff_ffff_ffff,
            },
            source: WindowSource::Iomem,
            bus: Some((0, 0x80)),
        });
        let d = diagnose(&e);
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{}", d.summary);
        assert!(d.window_bytes.unwrap() < 100 * G);
    }

    #[test]
    fn no_64bit_window_at_all_is_too_small_not_unknown() {
        let mut e = ev(eight_of_32g_with_5_failed(), None, Some(46), false);
        e.windows_known = true;
        let d = diagnose(&e);
        assert_eq!(
            (d.kind, d.window_bytes),
            (DiagnosisKind::WindowTooSmall, Some(0))
        );
    }

    #[test]
    fn only_32bit_bars_failing_is_not_a_64bit_window_question() {
        let mut gpus: Vec<Gpu> = (1..=2).map(|n| gpu(n, 16 * G, true)).collect();
        let template = gpus[1].bars[0];
        gpus[1].bars.push(Bar {
            index: 5,
            state: BarState::Unassigned,
            mem64: false,
            prefetchable: false,
            start: None,
            size: Some(512 << 10),
            ..template
        });
        let w = Range {
            start: 0xe0_0000_0000,
            end: 0xff_ffff_ffff,
        };
        let d = diagnose(&ev(gpus, Some(w), Some(46), false));
        assert_eq!(d.kind, DiagnosisKind::Unknown);
        assert!(d.summary.contains("below 4 GiB"), "{}", d.summary);
    }

    #[test]
    fn past_the_address_limit_on_bare_metal_is_the_window() {
        let w = Range {
            start: 0x20_0000_0000,
            end: 0xff_ffff_ffff,
        };
        let gpus: Vec<Gpu> = (1..=8).map(|n| gpu(n, 128 * G, n != 1)).collect();
        let mut e = ev(gpus, Some(w), Some(40), false);
        e.firmware = Firmware {
            bios_vendor: Some("American Megatrends International, LLC.".into()),
            sys_vendor: Some("Supermicro".into()),
            ..Default::default()
        };
        assert_eq!(diagnose(&e).kind, DiagnosisKind::WindowTooSmall);
    }

    #[test]
    fn sizes_come_from_siblings_when_the_log_is_silent() {
        let mut gpus = eight_of_32g_with_5_failed();
        for g in gpus.iter_mut().skip(3) {
            g.bars[0].size = None;
        }
        fill_sizes(&mut gpus, &[]);
        assert!(gpus.iter().all(|g| g.bars[0].size == Some(32 * G)));
        assert_eq!(gpus[5].bars[0].size_source, Some(SizeSource::Sibling));
    }
}
