//! Bridges the kernel log shows with a window smaller than their devices
//! need, where no line says a device's BAR failed: the kernels of 2025-26
//! print how they sized it (`cannot fit ... required for`, `shrunken by`)
//! and then assign the smaller window; a report of the bridges' lines
//! alone shows only their windows failing.

use super::replay::{DeviceSeen, Outcome};
use crate::evidence::{BridgeShort, ShortHow};
use crate::model::pci::PciAddress;
use crate::parse::kernel_log::{Event, LogResource, ResourceRef, Space};
use std::collections::BTreeMap;

/// What the kernel reserves by default for the memory windows of a
/// hot-plug bridge with nothing below it: drivers/pci/pci.c
/// `DEFAULT_HOTPLUG_MMIO_SIZE` and `DEFAULT_HOTPLUG_MMIO_PREF_SIZE`
/// (2 MiB each, v6.12), the sizes of `pci=hpmmiosize=`/`hpmmioprefsize=`.
const HOTPLUG_RESERVE: u64 = 2 << 20;

/// The last memory window of `bdf` of the kind `like` is (prefetchable or
/// not) that the log assigns after event `from`, with its size.
fn assigned_after(
    events: &[Event],
    from: usize,
    bdf: PciAddress,
    like: &LogResource,
) -> Option<u64> {
    events[from + 1..].iter().rev().find_map(|e| match e {
        Event::Assigned {
            bdf: b,
            res: ResourceRef::BridgeWindow,
            resource,
        } if *b == bdf
            && resource.space == Space::Mem
            && resource.prefetchable == like.prefetchable =>
        {
            Some(resource.size)
        }
        _ => None,
    })
}

/// What a bridge needs of a window of the kind `like` is once the kernel
/// sizes it with relaxed rules, which it says right after the parent's
/// `cannot fit` (`Event::WindowRelaxed` for `bdf`, the first after event
/// `from`): no more than its devices' BARs of that kind, its tail unaligned
/// (drivers/pci/setup-bus.c `pbus_size_mem()`, commit 566f1dd52816 "PCI:
/// Relax bridge window tail sizing rules"). Before the kernel stopped
/// printing stale ranges the line shows the window's old one, so its size
/// is not used: the need is the sum of the BARs of that kind the log shows
/// on the bridge's buses before the line (a resize's larger size comes
/// after it), a lower bound. A 64-bit prefetchable window takes only the
/// 64-bit prefetchable BARs; the 32-bit prefetchable ones go to the other
/// window then, and are counted for neither. `Some(None)`: relaxed, but
/// the need is not known (no such BAR shown), or every one of those BARs
/// ends assigned (the window held them); `None`: the log says nothing
/// relaxed, and the strict requirement stands.
fn relaxed_need(
    events: &[Event],
    from: usize,
    bdf: PciAddress,
    like: &LogResource,
    devs: &BTreeMap<PciAddress, DeviceSeen>,
) -> Option<Option<u64>> {
    let (at, (first, last)) =
        events
            .iter()
            .enumerate()
            .skip(from + 1)
            .find_map(|(i, e)| match e {
                Event::WindowRelaxed {
                    bdf: b,
                    window,
                    buses,
                } if *b == bdf
                    && window.space == Space::Mem
                    && window.prefetchable == like.prefetchable =>
                {
                    Some((i, *buses))
                }
                _ => None,
            })?;
    let below = |a: &PciAddress| a.domain == bdf.domain && (first..=last).contains(&a.bus);
    let fits = |r: &LogResource| {
        r.space == Space::Mem && r.prefetchable == like.prefetchable && (!like.mem64 || r.mem64)
    };
    let mut sizes: BTreeMap<(PciAddress, u8), u64> = BTreeMap::new();
    for e in &events[..at] {
        let (a, res, r) = match e {
            Event::Probed { bdf, res, resource } | Event::Assigned { bdf, res, resource } => {
                (bdf, res, Some(resource))
            }
            Event::AssignFailed {
                bdf, res, resource, ..
            } => (bdf, res, resource.as_ref()),
            _ => continue,
        };
        if let (ResourceRef::Bar(i), Some(r)) = (res, r) {
            if below(a) && fits(r) && r.size > 0 {
                sizes.insert((*a, *i), r.size);
            }
        }
    }
    let held = sizes.keys().all(|(a, i)| {
        devs.get(a)
            .and_then(|d| d.bars.get(i))
            .is_some_and(|b| b.outcome == Outcome::Assigned)
    });
    // Sizes read from text can add up past 2^64: then the need is not
    // known.
    let need = sizes.values().try_fold(0u64, |a, b| a.checked_add(*b))?;
    Some((need > 0 && !held).then_some(need))
}

/// A resize let go of this window of `bdf` (of the kind `like` is) before
/// event `at` (`BAR 15: releasing [mem ...]`, `Event::Released`): its
/// failure to grow is the resize's, and `pci_reassign_bridge_resources`
/// (drivers/pci/setup-bus.c, 4.15 on) puts the old windows back when the
/// larger ones do not fit ("Revert to the old configuration").
fn released_before(events: &[Event], at: usize, bdf: PciAddress, like: &LogResource) -> bool {
    events[..at].iter().any(|e| {
        matches!(e, Event::Released {
            bdf: b,
            res: ResourceRef::BridgeWindow,
            resource,
        } if *b == bdf
            && resource.space == Space::Mem
            && resource.prefetchable == like.prefetchable)
    })
}

/// The bridges whose window the log shows short, one each, the largest
/// shortfall first seen kept.
pub(super) fn short_bridges(
    events: &[Event],
    devs: &BTreeMap<PciAddress, DeviceSeen>,
) -> Vec<BridgeShort> {
    let mut out: Vec<BridgeShort> = Vec::new();
    let mut add = |b: BridgeShort| {
        if !out.iter().any(|o| o.bridge == b.bridge) {
            out.push(b);
        }
    };
    for (i, e) in events.iter().enumerate() {
        match e {
            // The kernel went on with a window smaller than the child
            // bridge needs: its devices get less than they ask for. With
            // nothing after (a resize under way when the report ends, as
            // a driver's resize prints it), it is not known to be short.
            Event::WindowCannotFit {
                window,
                required,
                child,
                ..
            } => {
                // Relaxed with its devices unseen: how short, if at all,
                // is not known, and their BARs' own lines say what failed.
                let Some(need) =
                    relaxed_need(events, i, *child, window, devs).unwrap_or(Some(*required))
                else {
                    continue;
                };
                if let Some(got) = assigned_after(events, i, *child, window).filter(|g| *g < need) {
                    add(BridgeShort {
                        bridge: *child,
                        window: Some(got),
                        need: Some(need),
                        how: ShortHow::CannotFit,
                    });
                }
            }
            Event::WindowShrunk { bdf, window, by } => {
                let need = window.size;
                let got =
                    assigned_after(events, i, *bdf, window).unwrap_or(need.saturating_sub(*by));
                if got < need {
                    add(BridgeShort {
                        bridge: *bdf,
                        window: Some(got),
                        need: Some(need),
                        how: ShortHow::Shrunk,
                    });
                }
            }
            _ => {}
        }
    }
    // Memory windows that got no space, in a report of the bridges' lines
    // alone: what they were sized for is below them, and got nothing. A
    // window no larger than what the kernel reserves for an empty hot-plug
    // port is no sign of a device below it.
    let endpoints = devs.values().any(|d| !d.is_bridge() && !d.bars.is_empty());
    if !endpoints {
        for (i, e) in events.iter().enumerate() {
            if let Event::AssignFailed {
                bdf,
                res: ResourceRef::BridgeWindow,
                resource: Some(r),
                ..
            } = e
            {
                if r.space == Space::Mem
                    && r.size > HOTPLUG_RESERVE
                    && assigned_after(events, i, *bdf, r).is_none()
                    && !released_before(events, i, *bdf, r)
                {
                    add(BridgeShort {
                        bridge: *bdf,
                        window: None,
                        need: Some(r.size),
                        how: ShortHow::Failed,
                    });
                }
            }
        }
    }
    out
}
