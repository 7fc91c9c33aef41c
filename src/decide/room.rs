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
    let items: Vec<Item> = ev
        .gpus
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
        .collect::<Option<_>>()?;
    let needs = bridge_needs(&items)?;
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

/// With realloc active, whether a failed 64-bit prefetchable BAR of a GPU
/// on the root bus finds an aligned place in what the kernel left free of
/// the windows of its root bus: each window less what it holds when the
/// kernel is done (`Evidence::window_busy`; the GPUs' assigned BARs; the
/// firmware map's reserved ranges, each that leaves part of a window) and
/// less what lies past the CPU's reach (`addressable_limit`). Each failed
/// BAR is tried alone at the lowest aligned free place
/// (`sizing::FreeSpace`): one that finds a place had room the kernel did
/// not use, and the answer stays unknown. `Some((bar, free))` when none
/// finds one: the smallest failed BAR, and the bytes left free.
///
/// Only when every failed GPU is on its root bus: the kernel moves a
/// bridge's window whole (`sized_short`). `explain` knows no bridges
/// (`upstream` is empty there), so it judges by the BARs alone; with the
/// bridge windows the free space would only be smaller.
///
/// Campaign seed 20261203 record 0282 (SeaBIOS 1.17.0, i440fx, AMD 40
/// bits, 2 x 256 GiB, realloc): the 768 GiB window at 256 GiB holds one
/// GPU's 256 GiB BAR, the 32 MiB BARs and bridge windows from 512 GiB and
/// QEMU's HyperTransport range from 1012 GiB; 499 GiB stay free, no 256
/// GiB-aligned piece.
pub(crate) fn no_room(ev: &Evidence, addressable_limit: Option<u64>) -> Option<(u64, u64)> {
    let failed: Vec<&crate::evidence::Gpu> = ev.gpus.iter().filter(|g| !g.ok()).collect();
    if failed.is_empty() || failed.iter().any(|g| !g.upstream.is_empty()) {
        return None;
    }
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
    let bars: Vec<u64> = failed
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| b.fails_gpu() && b.counts_for_window())
        .map(|b| b.size)
        .collect::<Option<_>>()?;
    let none_fits = bars
        .iter()
        .all(|s| Block::bar(*s).is_some_and(|b| free.clone().alloc(b).is_none()));
    (none_fits && !bars.is_empty())
        .then(|| bars.iter().min().map(|s| (*s, free.total())))
        .flatten()
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
