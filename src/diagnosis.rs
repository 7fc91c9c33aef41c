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
use crate::system::{Firmware, Range};

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

#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub gpus: Vec<Gpu>,
    pub expected: Option<usize>,
    /// 64-bit root bus windows (the part above 4 GiB).
    pub windows: Vec<(Range, WindowSource)>,
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

fn align_up(v: u64, a: u64) -> Option<u64> {
    if a <= 1 {
        return Some(v);
    }
    let a = a.checked_next_power_of_two()?;
    v.checked_add(a - 1).map(|x| x & !(a - 1))
}

/// One block the allocator must place: the prefetchable window of the
/// bridge right above a GPU (or the GPU's BARs themselves with no bridge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    size: u64,
    align: u64,
}

/// Groups the selected GPUs' 64-bit prefetchable BARs by their nearest
/// bridge. A bridge window is aligned to its largest BAR and is a whole
/// number of MiB. `None` when any needed size is unknown.
fn blocks(gpus: &[Gpu]) -> Option<Vec<Block>> {
    use std::collections::BTreeMap;
    let mut groups: BTreeMap<Option<PciAddress>, Vec<u64>> = BTreeMap::new();
    for g in gpus {
        let key = g.upstream.first().copied().or(Some(g.addr));
        for b in g.bars.iter().filter(|b| counts_for_window(b)) {
            groups.entry(key).or_default().push(b.size?);
        }
    }
    let mut out = Vec::new();
    for sizes in groups.values() {
        let align = sizes.iter().copied().max().unwrap_or(0).max(1 << 20);
        let sum = sizes
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(align_up(*s, 1 << 20)?))?;
        out.push(Block {
            size: align_up(sum, 1 << 20)?,
            align: align.checked_next_power_of_two()?,
        });
    }
    // The allocator places the most aligned first, so padding is minimal.
    out.sort_by(|a, b| b.align.cmp(&a.align).then(b.size.cmp(&a.size)));
    Some(out)
}

/// Packs blocks from an aligned start; returns the end offset.
fn packed_size(blocks: &[Block]) -> Option<u64> {
    blocks
        .iter()
        .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
}

/// First-fit placement of the blocks into the windows.
fn fits(blocks: &[Block], windows: &[Range]) -> bool {
    let mut cursors: Vec<u64> = windows.iter().map(|w| w.start).collect();
    'next: for b in blocks {
        for (w, cur) in windows.iter().zip(cursors.iter_mut()) {
            if let Some(s) = align_up(*cur, b.align) {
                if let Some(end) = s.checked_add(b.size) {
                    if end - 1 <= w.end {
                        *cur = end;
                        continue 'next;
                    }
                }
            }
        }
        return false;
    }
    true
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

pub fn diagnose(ev: &Evidence) -> Diagnosis {
    let found = ev.gpus.len();
    let missing = ev.expected.map(|e| e.saturating_sub(found)).unwrap_or(0);
    let failed_bars = ev
        .gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.fails_gpu())
        .count()
        + ev.other_failed.len();
    let window_bytes =
        (!ev.windows.is_empty()).then(|| ev.windows.iter().map(|(r, _)| r.size()).sum());
    let windows: Vec<Range> = ev.windows.iter().map(|(r, _)| *r).collect();
    let blocks = blocks(&ev.gpus);
    let needed_bytes = blocks.as_deref().and_then(packed_size).filter(|n| *n > 0);
    let max_align = blocks
        .as_deref()
        .and_then(|b| b.first().map(|b| b.align))
        .unwrap_or(1);
    let needed_end = match (needed_bytes, windows.first()) {
        (Some(n), Some(w)) => align_up(w.start, max_align).and_then(|s| s.checked_add(n)),
        _ => None,
    };
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
        } else {
            d.kind = DiagnosisKind::Ok;
            d.summary = format!("{found} GPU(s), every memory BAR assigned");
        }
        return d;
    }

    let unassigned = format!("{failed_bars} memory BAR(s) unassigned");
    if let (Some(end), Some(limit)) = (needed_end, addressable_limit) {
        if end > limit {
            d.kind = DiagnosisKind::PhysBitsTooSmall;
            d.summary = format!(
                "{unassigned}: the GPUs need {need} of 64-bit space, which from the window start would end at {end:#x}, past the {} the CPU can address{}",
                human(limit),
                ev.phys_bits.map(|b| format!(" ({b} physical address bits)")).unwrap_or_default()
            );
            return d;
        }
    }
    if needed_end.is_none() && ev.unaddressable_from.is_some() {
        d.kind = DiagnosisKind::PhysBitsTooSmall;
        d.summary = format!(
            "{unassigned}: the kernel dropped part of the firmware's 64-bit window as not CPU addressable (from {:#x})",
            ev.unaddressable_from.unwrap_or(0)
        );
        return d;
    }
    match (&blocks, window_bytes) {
        (Some(b), Some(_)) if needed_bytes.is_some() => {
            if !fits(b, &windows) {
                d.kind = DiagnosisKind::WindowTooSmall;
                d.summary = format!(
                    "{unassigned}: the GPUs need {need} of 64-bit prefetchable space but the root bus offers a {win} window"
                );
            } else if !ev.realloc_active {
                d.kind = DiagnosisKind::FirmwareLeftUnassigned;
                d.summary = format!(
                    "{unassigned}: the {win} 64-bit window has room for the {need} the GPUs need; the firmware did not place them and the kernel was not asked to (pci=realloc is off)"
                );
            } else {
                d.kind = DiagnosisKind::Unknown;
                d.summary = format!(
                    "{unassigned}: the {win} window has room for the {need} needed and pci=realloc is active, yet the kernel did not place them (bridge reservations or a hot-plug slot may hold the space)"
                );
            }
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
                .map(|w| vec![(w, WindowSource::Iomem)])
                .unwrap_or_default(),
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
    fn bars_behind_one_bridge_form_one_aligned_block() {
        let mut a = gpu(1, 32 * G, true);
        a.bars.push(Bar {
            index: 4,
            size: Some(32 << 20),
            ..a.bars[0]
        });
        let b = blocks(&[a]).unwrap();
        assert_eq!(
            b,
            vec![Block {
                size: 32 * G + (32 << 20),
                align: 32 * G
            }]
        );
        // Two such blocks need padding between them.
        assert_eq!(packed_size(&[b[0], b[0]]), Some(96 * G + (32 << 20)));
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
