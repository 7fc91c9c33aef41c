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
//!
//! The sentence that explains the outcome is `summary`'s business.

use crate::decide::host::{self, Shortfall, Weight};
use crate::decide::room::{no_room, sized_short, tight_need};
use crate::decide::sizing::{align_up, fits, max_align, packed_size, top_blocks, Block, Item};
use crate::evidence::{BridgeShort, Evidence};
use crate::model::bar::Bar;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::Platform;
use crate::model::range::Range;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DiagnosisKind {
    Ok,
    GpusMissing,
    FirmwareLeftUnassigned,
    WindowTooSmall,
    PhysBitsTooSmall,
    /// A bridge's window is smaller than the devices below it need, though
    /// no line may say which BAR failed: the kernel's sizing of it.
    BridgeWindowShort,
    Unknown,
}

impl DiagnosisKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::Ok => "ok",
            DiagnosisKind::GpusMissing => "gpus_missing",
            DiagnosisKind::FirmwareLeftUnassigned => "firmware_left_unassigned",
            DiagnosisKind::WindowTooSmall => "window_too_small",
            DiagnosisKind::PhysBitsTooSmall => "phys_bits_too_small",
            DiagnosisKind::BridgeWindowShort => "bridge_window_short",
            DiagnosisKind::Unknown => "unknown",
        }
    }

    pub(crate) const ALL: [DiagnosisKind; 7] = [
        DiagnosisKind::Ok,
        DiagnosisKind::GpusMissing,
        DiagnosisKind::FirmwareLeftUnassigned,
        DiagnosisKind::WindowTooSmall,
        DiagnosisKind::PhysBitsTooSmall,
        DiagnosisKind::BridgeWindowShort,
        DiagnosisKind::Unknown,
    ];
}

/// The case within the kind: what `summary` words and `hints` act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// Nothing failed and nothing is missing.
    Healthy,
    NoGpu,
    Missing,
    /// Only devices that are not the selected GPUs failed (explain), one
    /// of which the text does not say is no GPU.
    OnlyOtherDevices,
    /// As `OnlyOtherDevices`, but every device that failed and may be a
    /// GPU shows only memory BARs under 1 MiB, where a GPU has one of 16
    /// MiB or more (`OtherFailure::SMALL_DEVICE`): whether a GPU is among
    /// them is not in the text.
    OnlySmallDevices,
    /// Nothing failed that the text shows, but a device it gives no class
    /// lost its claim of the firmware's address and its assignment after
    /// that is not shown (`Evidence::claims_pending`).
    ClaimPending,
    /// Only devices the text shows are no GPU failed (by their class, or
    /// a non-zero function of a device it says nothing else of): the GPUs
    /// are not in question.
    OnlyNonGpu,
    /// A memory BAR failed on a device the text does not name (a PCI core
    /// line with the address cut off, NVIDIA's `BAR1 is 0M` with none).
    Unnamed,
    /// Only 32-bit or non-prefetchable BARs failed: that space comes from
    /// the windows below 4 GiB, which the numbers here do not cover.
    Only32Bit,
    /// The failed BARs are known only from a driver's complaint or a
    /// message that gives no type (`NVRM: BAR1 is 0M`, 2.6's `can't
    /// allocate resource`): which window fell short is not known.
    TypeUnknown,
    /// The packed need ends past the CPU's address limit.
    PastAddressLimit,
    /// The kernel dropped part of the window as not CPU addressable.
    Unaddressable,
    /// The need does not fit the windows; `tight` is the BARs' own sum
    /// when that would fit (kernels that relax bridge alignment).
    TooSmall {
        tight: Option<u64>,
    },
    Fits,
    FitsReallocActive,
    /// Nothing failed, but the input does not show every GPU's memory BARs
    /// with addresses (an excerpt of `explain`): not `ok` either.
    NoAddressEvidence,
    /// Nothing failed, and the driver of each GPU whose BARs the input
    /// does not show gave up on it for a reason it names that is no BAR:
    /// the BARs are not what failed (`Evidence::driver_gave_up`).
    DriverReason,
    /// Hyper-V said its VM's high (or low) MMIO gap cannot hold the
    /// assigned devices (`hv_pci ...: Need 0x... of high MMIO space`): the
    /// device never reaches a PCI bus, so no BAR is named.
    HypervMmio {
        need: u64,
    },
    /// A hypervisor's, VMM's or host kernel's message (the `at`-th of
    /// `Evidence::host_messages`) says the VM or the device cannot have
    /// its BARs (`decide::host`).
    Host {
        at: usize,
    },
    /// No device's failure, no GPU: only host-side messages about other
    /// things than BAR space (guest memory pinned for DMA, a BAR mapped
    /// for peer-to-peer, the firmware's window).
    HostNotes,
    /// Only a VMM's trace of BARs being moved: whether the guest got them
    /// is not in the input.
    HostTrace {
        at: usize,
    },
    /// A bridge's window is smaller than its devices need (`BridgeShort`).
    BridgeShort(BridgeShort),
    /// The window's size has room, but what the kernel placed and keeps
    /// there and the ranges reserved in it leave no aligned place for any
    /// failed BAR or failed bridge window (`bridge`), the smallest `bar`
    /// bytes (`room::no_room`); `free` bytes are left in all.
    NoRoom {
        bar: u64,
        free: u64,
        bridge: Option<PciAddress>,
    },
    /// A number is missing.
    MissingFacts {
        size: bool,
        window: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Diagnosis {
    pub kind: DiagnosisKind,
    pub case: Case,
    pub needed_bytes: Option<u64>,
    pub window_bytes: Option<u64>,
    /// The windows `window_bytes` adds up: those of the GPUs' root buses.
    pub counted_windows: Vec<Range>,
    /// Where the needed space would end if packed from the first window's
    /// start: what the CPU must be able to address.
    pub needed_end: Option<u64>,
    /// Addresses the CPU reaches (2^phys_bits, or where the kernel said
    /// addresses stop being CPU addressable).
    pub addressable_limit: Option<u64>,
    pub missing: usize,
    pub failed_bars: usize,
}

/// The space question for one root bus: its GPUs' blocks and its windows.
struct BusSpace {
    blocks: Vec<Block>,
    windows: Vec<Range>,
}

/// Groups the GPUs' 64-bit prefetchable BARs into top-level blocks per
/// root bus, with the windows of that bus (a window or GPU whose bus is
/// not known is shared by all). `None` when a needed size is unknown.
fn bus_spaces(ev: &Evidence) -> Option<Vec<BusSpace>> {
    let mut items = Vec::new();
    for g in &ev.gpus {
        for b in g.bars.iter().filter(|b| b.counts_for_window()) {
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
                    .map(|w| w.range)
                    .collect(),
            })
            .collect(),
    )
}

pub(crate) fn diagnose(ev: &Evidence) -> Diagnosis {
    let found = ev.gpus.len();
    let missing = ev.expected.map(|e| e.saturating_sub(found)).unwrap_or(0);
    let failed: Vec<&Bar> = ev
        .gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.fails_gpu())
        .collect();
    let failed_bars = failed.len() + ev.other_failed.len() + ev.unnamed_failed.len();
    let failed_big = failed.iter().filter(|b| b.counts_for_window()).count();
    let failed_untyped = failed.iter().filter(|b| !b.type_known).count();

    let spaces = bus_spaces(ev);
    // The windows of the root buses the GPUs sit on; with no GPU (or no
    // sizes) every window.
    let counted_windows: Vec<Range> = match &spaces {
        Some(sp) if !sp.is_empty() => {
            let mut w: Vec<Range> = sp.iter().flat_map(|s| s.windows.iter().copied()).collect();
            w.sort();
            w.dedup();
            w
        }
        _ => ev.windows.iter().map(|w| w.range).collect(),
    };
    // Saturating: windows read from text can add up past 2^64 (fuzzing
    // found two that do), which no machine has and nothing may wrap.
    let window_bytes = ev.windows_known.then(|| {
        counted_windows
            .iter()
            .map(Range::size)
            .fold(0u64, u64::saturating_add)
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
                let start = s.windows.iter().map(|w| w.start).min()?;
                align_up(start, max_align(&s.blocks))?.checked_add(packed_size(&s.blocks)?)
            })
            .max()
    });
    let addressable_limit = match (ev.cpu.phys_bits, ev.unaddressable_from) {
        (Some(b), Some(u)) => Some(u.min(1u64.checked_shl(b).unwrap_or(u64::MAX))),
        (Some(b), None) => Some(1u64.checked_shl(b).unwrap_or(u64::MAX)),
        (None, u) => u,
    };
    let (kind, case) = classify(
        ev,
        &spaces,
        &Counts {
            failed: failed.len(),
            failed_big,
            failed_untyped,
            missing,
            found,
        },
        needed_bytes,
        window_bytes,
        needed_end
            .zip(addressable_limit)
            .is_some_and(|(e, l)| e > l),
        addressable_limit,
    );
    let mut d = Diagnosis {
        kind,
        case,
        needed_bytes,
        window_bytes,
        counted_windows,
        needed_end,
        addressable_limit,
        missing,
        failed_bars,
    };
    // A short bridge's numbers are its own.
    if let Case::BridgeShort(b) = case {
        d.needed_bytes = b.need;
        d.window_bytes = b.window;
    }
    // A host-side failure's numbers are the message's own.
    if let Case::Host { at } = case {
        let n = host::numbers(&ev.host_messages[at]);
        d.needed_bytes = n.needed;
        d.window_bytes = n.window;
        d.needed_end = n.needed_end;
        d.addressable_limit = n.limit;
    }
    d
}

/// How many GPUs and failed BARs there are.
struct Counts {
    /// Failed memory BARs of selected GPUs.
    failed: usize,
    /// Of those, 64-bit prefetchable ones.
    failed_big: usize,
    /// Of those, ones whose type the evidence does not give.
    failed_untyped: usize,
    missing: usize,
    found: usize,
}

fn classify(
    ev: &Evidence,
    spaces: &Option<Vec<BusSpace>>,
    n: &Counts,
    needed_bytes: Option<u64>,
    window_bytes: Option<u64>,
    past_limit: bool,
    addressable_limit: Option<u64>,
) -> (DiagnosisKind, Case) {
    if let (Some(need), 0) = (ev.hyperv_mmio_short, n.failed) {
        return (DiagnosisKind::WindowTooSmall, Case::HypervMmio { need });
    }
    // A device the text shows is no GPU does not fail the GPUs' check.
    let maybe_gpu = ev.other_failed.iter().any(|o| o.not_gpu.is_none());
    if n.failed == 0 && !maybe_gpu && ev.unnamed_failed.is_empty() {
        if let Some((at, short)) = host::first_failure(&ev.host_messages) {
            let kind = match short {
                Shortfall::Window => DiagnosisKind::WindowTooSmall,
                Shortfall::AddressLimit => DiagnosisKind::PhysBitsTooSmall,
                Shortfall::Refused => DiagnosisKind::Unknown,
            };
            return (kind, Case::Host { at });
        }
        if let Some(b) = ev.bridge_short.first() {
            return (DiagnosisKind::BridgeWindowShort, Case::BridgeShort(*b));
        }
        if n.missing == 0 && ev.unproven.is_empty() && !ev.other_failed.is_empty() {
            return (DiagnosisKind::Ok, Case::OnlyNonGpu);
        }
        if n.found == 0 && n.missing == 0 && !ev.host_messages.is_empty() {
            let trace = ev
                .host_messages
                .iter()
                .position(|m| host::weight(m) == Weight::Trace);
            return match trace {
                Some(at) => (DiagnosisKind::Unknown, Case::HostTrace { at }),
                None => (DiagnosisKind::Ok, Case::HostNotes),
            };
        }
        return if n.missing > 0 {
            (DiagnosisKind::GpusMissing, Case::Missing)
        } else if !ev.unproven.is_empty()
            && ev
                .unproven
                .iter()
                .all(|(a, _, complaint)| !complaint && ev.driver_gave_up.contains(a))
        {
            (DiagnosisKind::Ok, Case::DriverReason)
        } else if !ev.unproven.is_empty() {
            (DiagnosisKind::Unknown, Case::NoAddressEvidence)
        } else if !ev.claims_pending.is_empty() {
            (DiagnosisKind::Unknown, Case::ClaimPending)
        } else if n.found == 0 {
            (DiagnosisKind::Ok, Case::NoGpu)
        } else {
            (DiagnosisKind::Ok, Case::Healthy)
        };
    }
    if n.failed == 0 && !maybe_gpu {
        return (DiagnosisKind::Unknown, Case::Unnamed);
    }
    if n.failed == 0 {
        let small = ev
            .other_failed
            .iter()
            .filter(|o| o.not_gpu.is_none())
            .all(|o| o.small);
        if small && ev.unnamed_failed.is_empty() {
            // Only where nothing else would fail: a GPU missing, a driver's
            // complaint or a host's refusal is the report's, with these
            // devices listed beside it.
            let mut rest = ev.clone();
            rest.other_failed.retain(|o| o.not_gpu.is_some());
            let without = classify(
                &rest,
                spaces,
                n,
                needed_bytes,
                window_bytes,
                past_limit,
                addressable_limit,
            );
            return match without {
                (DiagnosisKind::Ok, _) => (DiagnosisKind::Unknown, Case::OnlySmallDevices),
                other => other,
            };
        }
        return (DiagnosisKind::Unknown, Case::OnlyOtherDevices);
    }
    if n.failed_big == 0 && n.failed_untyped > 0 {
        return (DiagnosisKind::Unknown, Case::TypeUnknown);
    }
    if n.failed_big == 0 {
        return (DiagnosisKind::Unknown, Case::Only32Bit);
    }
    let all_fit = spaces
        .as_ref()
        .map(|sp| sp.iter().all(|s| fits(&s.blocks, &s.windows)));
    let vm = !matches!(ev.platform(), Platform::BareMetal);
    if (past_limit && vm) || (ev.unaddressable_from.is_some() && all_fit != Some(true)) {
        let case = if past_limit {
            Case::PastAddressLimit
        } else {
            Case::Unaddressable
        };
        return (DiagnosisKind::PhysBitsTooSmall, case);
    }
    match (all_fit, window_bytes) {
        (Some(false), Some(w)) if needed_bytes.is_some() => {
            let tight = tight_need(ev).filter(|t| Some(*t) < needed_bytes && *t <= w);
            (DiagnosisKind::WindowTooSmall, Case::TooSmall { tight })
        }
        (Some(true), Some(_)) if !ev.realloc_active => {
            (DiagnosisKind::FirmwareLeftUnassigned, Case::Fits)
        }
        // The root window has room, the kernel re-placed, and a bridge
        // above a failed GPU is smaller than its GPUs need: its sizing.
        (Some(true), Some(_)) => match (sized_short(ev), no_room(ev, addressable_limit)) {
            (Some(b), _) => (DiagnosisKind::BridgeWindowShort, Case::BridgeShort(b)),
            (None, Some(room)) => (
                DiagnosisKind::WindowTooSmall,
                Case::NoRoom {
                    bar: room.size,
                    free: room.free,
                    bridge: room.bridge,
                },
            ),
            (None, None) => (DiagnosisKind::Unknown, Case::FitsReallocActive),
        },
        _ => (
            DiagnosisKind::Unknown,
            Case::MissingFacts {
                size: needed_bytes.is_none(),
                window: window_bytes.is_none(),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::summary::describe;
    use crate::evidence::{Gpu, Window, WindowSource};
    use crate::model::bar::{BarState, SizeSource};
    use crate::model::pci::PciAddress;
    use crate::model::platform::Firmware;

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
                type_known: true,
            }],
            upstream: vec![PciAddress {
                domain: 0,
                bus: 0,
                device: 2,
                function: n,
            }],
            root_bus: Some(RootBus { domain: 0, bus: 0 }),
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
                        bus: Some(RootBus { domain: 0, bus: 0 }),
                    }]
                })
                .unwrap_or_default(),
            windows_known: window.is_some(),
            cpu: crate::model::platform::Cpu {
                phys_bits,
                ..Default::default()
            },
            realloc_active: realloc,
            ..Default::default()
        }
    }

    fn eight_of_32g_with_5_failed() -> Vec<Gpu> {
        (1..=8).map(|n| gpu(n, 32 * G, n <= 3)).collect()
    }

    #[test]
    fn ovmf_default_window_is_too_small() {
        let w = Range::new(0xe0_0000_0000, 0xf8_9fff_ffff);
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false));
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{:?}", d.case);
        assert_eq!(d.needed_bytes, Some(256 * G));
        assert!(d.window_bytes.unwrap() < 100 * G);
        assert_eq!(d.failed_bars, 5);
    }

    #[test]
    fn room_in_window_means_firmware_left_it_and_realloc_helps() {
        let w = Range::new(0xe0_0000_0000, 0x1df_ffff_ffff);
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false));
        assert_eq!(
            d.kind,
            DiagnosisKind::FirmwareLeftUnassigned,
            "{:?}",
            d.case
        );
        let d = diagnose(&ev(eight_of_32g_with_5_failed(), Some(w), Some(46), true));
        assert_eq!(d.kind, DiagnosisKind::Unknown, "{:?}", d.case);
    }

    #[test]
    fn space_past_the_cpu_address_limit_is_phys_bits() {
        let w = Range::new(0x20_0000_0000, 0xff_ffff_ffff);
        let gpus: Vec<Gpu> = (1..=8).map(|n| gpu(n, 128 * G, n != 1)).collect();
        let d = diagnose(&ev(gpus.clone(), Some(w), Some(40), false));
        assert_eq!(d.kind, DiagnosisKind::PhysBitsTooSmall, "{:?}", d.case);
        assert_eq!(d.needed_bytes, Some(1024 * G));
        // The same numbers with 46 bits: the window is what is too small.
        let d = diagnose(&ev(gpus, Some(w), Some(46), false));
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{:?}", d.case);
    }

    #[test]
    fn no_address_evidence_is_not_ok_and_hyperv_short_is_too_small() {
        let w = Range::new(0xe0_0000_0000, 0xff_ffff_ffff);
        let mut e = ev(vec![gpu(1, 16 * G, true)], Some(w), Some(46), false);
        e.unproven = vec![(e.gpus[0].addr, "no memory BAR of it is shown".into(), false)];
        let d = diagnose(&e);
        assert_eq!(
            (d.kind, d.case),
            (DiagnosisKind::Unknown, Case::NoAddressEvidence)
        );
        assert!(describe(&e, &d).contains("no memory BAR of it is shown"));
        let e = Evidence {
            hyperv_mmio_short: Some(0x8_0200_0000),
            ..Evidence::default()
        };
        let d = diagnose(&e);
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall);
        assert!(
            describe(&e, &d).contains("32.0 GiB"),
            "{}",
            describe(&e, &d)
        );
    }

    #[test]
    fn healthy_and_missing() {
        let w = Range::new(0xe0_0000_0000, 0xff_ffff_ffff);
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
        let w = Range::new(0xe0_0000_0000, 0x1df_ffff_ffff);
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
        let w = Range::new(0x100_0000_0000, 0x100_0000_0000 + 200 * G - 1);
        let d = diagnose(&ev(gpus, Some(w), Some(46), false));
        assert_eq!(d.needed_bytes, Some(192 * G));
        assert_eq!(
            d.kind,
            DiagnosisKind::FirmwareLeftUnassigned,
            "{:?}",
            d.case
        );
    }

    #[test]
    fn a_window_on_another_root_bus_does_not_count() {
        let w = Range::new(0xe0_0000_0000, 0xf8_9fff_ffff);
        let mut e = ev(eight_of_32g_with_5_failed(), Some(w), Some(46), false);
        e.windows.push(Window {
            range: Range::new(0x200_0000_0000, 0x2ff_ffff_ffff),
            source: WindowSource::Iomem,
            bus: Some(RootBus {
                domain: 0,
                bus: 0x80,
            }),
        });
        let d = diagnose(&e);
        assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{:?}", d.case);
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
        let w = Range::new(0xe0_0000_0000, 0xff_ffff_ffff);
        let e = ev(gpus, Some(w), Some(46), false);
        let d = diagnose(&e);
        assert_eq!((d.kind, d.case), (DiagnosisKind::Unknown, Case::Only32Bit));
        assert!(
            describe(&e, &d).contains("below 4 GiB"),
            "{}",
            describe(&e, &d)
        );
    }

    #[test]
    fn past_the_address_limit_on_bare_metal_is_the_window() {
        let w = Range::new(0x20_0000_0000, 0xff_ffff_ffff);
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
    fn windows_that_add_up_past_2_64_do_not_wrap() {
        // fuzz/regressions/explain/crash-425f67d8...: two root windows of
        // nearly 2^64 bytes each.
        let mut e = ev(vec![gpu(1, 128 * G, false)], None, Some(46), false);
        e.windows = vec![
            Window {
                range: Range::new(0x1_0000_0000, u64::MAX),
                source: WindowSource::KernelLog,
                bus: None,
            },
            Window {
                range: Range::new(0x1_0000_0001, u64::MAX - 1),
                source: WindowSource::KernelLog,
                bus: None,
            },
        ];
        e.windows_known = true;
        let d = diagnose(&e);
        assert_eq!(d.window_bytes, Some(u64::MAX));
    }
}
