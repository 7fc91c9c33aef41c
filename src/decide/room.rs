//! Whether the room a window has is room the kernel can use: a bridge
//! sized shorter than its GPUs need (`sized_short`), a window whose free
//! pieces hold no aligned place for a failed BAR (`no_room`), and the BARs
//! alone as the least any allocator could do with (`tight_need`).

use crate::decide::sizing::{align_up, bridge_needs, Block, FreeSpace, Item};
use crate::evidence::{BridgeShort, Evidence, ShortHow};
use crate::model::bar::BridgeWindowKind;
use crate::model::pci::PciAddress;
use crate::model::range::Range;

/// A bridge above a failed GPU whose 64-bit prefetchable window (as sysfs
/// gives it, `check`) is smaller than the GPUs' 64-bit prefetchable BARs
/// below it need, sized as the kernel sizes bridge windows
/// (`sizing::bridge_needs`).
pub(crate) fn sized_short(ev: &Evidence) -> Option<BridgeShort> {
    let needs = bridge_needs(&window_items(ev)?)?;
    let failed_above: Vec<PciAddress> = ev
        .gpus
        .iter()
        .filter(|g| !g.ok())
        .flat_map(|g| g.upstream.iter().copied())
        .collect();
    ev.bridges.iter().find_map(|(bdf, windows)| {
        let need = needs.get(bdf)?.size;
        let window = windows
            .iter()
            .filter(|w| w.kind() == BridgeWindowKind::Mem64Pref)
            .map(|w| w.range.size())
            .max()?;
        (failed_above.contains(bdf) && window < need).then_some(BridgeShort {
            bridge: *bdf,
            window: Some(window),
            need: Some(need),
            how: ShortHow::Sized,
        })
    })
}

/// With realloc active, whether a failed GPU finds an aligned place in
/// what the kernel left free of the windows of its root bus: each window
/// less what it holds when the kernel is done (`Evidence::window_busy`;
/// the GPUs' assigned BARs; the firmware map's reserved ranges, each that
/// leaves part of a window) and less what lies past the CPU's reach
/// (`addressable_limit`). What has to find the place: a failed 64-bit
/// prefetchable BAR of a GPU on the root bus, or, for a GPU behind
/// bridges, the window of the bridge on the root bus above it where that
/// bridge holds no prefetchable window (the kernel failed to place it):
/// the kernel sizes that window for every BAR below it and places it
/// whole (`sizing::bridge_needs`, size and alignment). Kernels with the
/// relaxed sizing ("requires relaxed alignment rules") may try a smaller
/// window than this one; the sizing here is 6.1's. Each is tried alone
/// at the lowest aligned free place (`sizing::FreeSpace`): one that finds
/// a place had room the kernel did not use, and the answer stays unknown.
/// `Some(NoRoom)` when none finds one: the smallest of them, and the bytes
/// left free.
///
/// A GPU behind a bridge that holds its window is not judged here: its
/// BAR's place is inside that window (`sized_short`). `explain` knows no
/// bridges (`upstream` is empty there), so it judges by the BARs alone;
/// with the bridge windows the free space would only be smaller.
///
/// Campaign seed 20261203 record 0282 (SeaBIOS 1.17.0, i440fx, AMD 40
/// bits, 2 x 256 GiB, realloc): the 768 GiB window at 256 GiB holds one
/// GPU's 256 GiB BAR, the 32 MiB BARs and bridge windows from 512 GiB and
/// QEMU's HyperTransport range from 1012 GiB; 499 GiB stay free, no 256
/// GiB-aligned piece. Record 0904 (SeaBIOS 1.16.3, Proxmox's `pc` with
/// two GPUs behind its bridge `0000:00:1f.0`, AMD 40 bits, 6 x 128 GiB,
/// realloc): the 896 GiB window at 128 GiB holds the four root-bus GPUs'
/// 128 GiB BARs from 256 GiB and their small BARs at 128 GiB; the kernel
/// sizes the bridge's window 320 GiB aligned to 64 GiB ("bridge window
/// [mem size 0x5000000000 64bit pref]: can't assign; no space"), and the
/// 256 GiB left free at 768 GiB cannot take it.
pub(crate) fn no_room(ev: &Evidence, addressable_limit: Option<u64>) -> Option<NoRoom> {
    let failed: Vec<&crate::evidence::Gpu> = ev.gpus.iter().filter(|g| !g.ok()).collect();
    if failed.is_empty() {
        return None;
    }
    let blocks = blocks_to_place(ev, &failed)?;
    let windows: Vec<Range> = ev
        .windows
        .iter()
        .filter(|w| {
            w.bus
                .is_none_or(|b| failed.iter().any(|g| g.root_bus.is_none_or(|r| r == b)))
        })
        .map(|w| w.range)
        .collect();
    let mut free = FreeSpace::of(&windows);
    let assigned = ev
        .gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.assigned() && !b.io)
        .filter_map(|b| {
            Some(Range::new(
                b.start?,
                b.start?.checked_add(b.size?)?.checked_sub(1)?,
            ))
        });
    // A reserved range over a whole window would say the window is not
    // there at all: the kernel would not have offered it.
    let reserved = ev
        .reserved
        .iter()
        .filter(|r| !windows.iter().any(|w| r.start <= w.start && w.end <= r.end));
    for r in ev
        .window_busy
        .iter()
        .chain(reserved)
        .copied()
        .chain(assigned)
    {
        free.take(r.start, r.end.saturating_add(1));
    }
    if let Some(limit) = addressable_limit {
        free.take(limit, u64::MAX);
    }
    let none_fits = blocks.iter().all(|(b, _)| free.clone().alloc(*b).is_none());
    let (smallest, bridge) = blocks.iter().min_by_key(|(b, _)| b.size)?;
    none_fits.then(|| NoRoom {
        size: smallest.size,
        free: free.total(),
        bridge: *bridge,
    })
}

/// What `no_room` found: no aligned place for any failed BAR (or failed
/// bridge window, `bridge`), the smallest `size` bytes; `free` bytes left
/// in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRoom {
    pub size: u64,
    pub free: u64,
    pub bridge: Option<PciAddress>,
}

/// What the kernel has to place for the failed GPUs (`no_room`): each
/// failed BAR of a GPU on the root bus, and once each the window of a
/// failed bridge on the root bus above the others. None when a size is
/// unknown, or a failed GPU's bridge holds its 64-bit prefetchable window.
fn blocks_to_place(
    ev: &Evidence,
    failed: &[&crate::evidence::Gpu],
) -> Option<Vec<(Block, Option<PciAddress>)>> {
    let mut blocks: Vec<(Block, Option<PciAddress>)> = Vec::new();
    let mut needs = None;
    for g in failed {
        let Some(top) = g.upstream.last() else {
            for b in g
                .bars
                .iter()
                .filter(|b| b.fails_gpu() && b.counts_for_window())
            {
                blocks.push((Block::bar(b.size?)?, None));
            }
            continue;
        };
        // A prefetchable window of either width: a 32-bit one sends the
        // 64-bit BARs elsewhere, which is not judged here. sysfs shows a
        // window the kernel failed to place as none (its flags cleared),
        // the same as a bridge without a prefetchable window; QEMU's
        // bridges and root ports all have one.
        let holds_window = ev.bridges.iter().any(|(bdf, windows)| {
            bdf == top
                && windows.iter().any(|w| {
                    matches!(
                        w.kind(),
                        BridgeWindowKind::Mem64Pref | BridgeWindowKind::MemPref
                    )
                })
        });
        if holds_window {
            return None;
        }
        if blocks.iter().any(|(_, b)| *b == Some(*top)) {
            continue;
        }
        if needs.is_none() {
            needs = Some(bridge_needs(&window_items(ev)?)?);
        }
        let need = needs.as_ref()?.get(top)?;
        blocks.push((*need, Some(*top)));
    }
    (!blocks.is_empty()).then_some(blocks)
}

/// Every GPU's BARs that a 64-bit prefetchable window holds, as the
/// bridge sizing takes them; None when a size is unknown.
fn window_items(ev: &Evidence) -> Option<Vec<Item>> {
    ev.gpus
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .filter(|b| b.counts_for_window())
                .map(move |b| (g, b))
        })
        .map(|(g, b)| {
            Some(Item {
                size: b.size?,
                chain: g.upstream.clone(),
                bus: g.root_bus,
            })
        })
        .collect()
}

/// The BAR sizes alone, each rounded to 1 MiB: the least any allocator
/// could do with.
pub(crate) fn tight_need(ev: &Evidence) -> Option<u64> {
    ev.gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.counts_for_window())
        .try_fold(0u64, |a, b| a.checked_add(align_up(b.size?, 1 << 20)?))
}
