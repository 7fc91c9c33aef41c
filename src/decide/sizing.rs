//! How much 64-bit prefetchable space a set of GPUs needs, and whether it
//! fits the root bus windows.
//!
//! A BAR does not go into the root window on its own: it goes into the
//! window of the bridge above it, which goes into the window of the bridge
//! above that. Each bridge window is sized as the kernel sizes it
//! (`pbus_size_mem()` and `calculate_mem_align()` in
//! drivers/pci/setup-bus.c): the children's sizes summed, the window aligned
//! to the smallest power of two that still keeps every child aligned, which
//! for a 32 GiB BAR plus a 32 MiB one is 16 GiB and so a 48 GiB window.
//! The top-level windows are then placed into the root bus windows most
//! aligned first, first fit.

use crate::model::pci::{PciAddress, RootBus};
use crate::model::range::Range;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub size: u64,
    pub align: u64,
}

impl Block {
    /// A BAR of `size` bytes: a BAR is aligned to its size, a power of two
    /// (None past 2^63).
    pub(crate) fn bar(size: u64) -> Option<Block> {
        Some(Block {
            size,
            align: size.checked_next_power_of_two()?,
        })
    }
}

/// One BAR to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub size: u64,
    /// Bridges above the device, nearest first.
    pub chain: Vec<PciAddress>,
    pub bus: Option<RootBus>,
}

/// Bridge memory windows are at least 1 MiB and 1 MiB aligned.
pub(crate) const WINDOW_GRANULE: u64 = 1 << 20;

pub(crate) fn align_up(v: u64, a: u64) -> Option<u64> {
    if a <= 1 {
        return Some(v);
    }
    let a = a.checked_next_power_of_two()?;
    v.checked_add(a - 1).map(|x| x & !(a - 1))
}

/// The kernel's `calculate_mem_align()`: `aligns[order]` sums the
/// alignments of the children aligned to 1 MiB << order.
fn mem_align(aligns: &[u64; 44], max_order: usize) -> u64 {
    let mut align: u64 = 0;
    let mut min_align: u64 = 0;
    for (order, add) in aligns.iter().enumerate().take(max_order + 1) {
        let align1 = 1u64 << (order + 20);
        if align == 0 {
            min_align = align1;
        } else if align_up(align.saturating_add(min_align), min_align).is_none_or(|v| v < align1) {
            min_align = align1 >> 1;
        }
        align = align.saturating_add(*add);
    }
    min_align
}

/// The window a bridge needs for these children (BARs or bridge windows).
pub(crate) fn bridge_window(children: &[Block]) -> Option<Block> {
    if children.is_empty() {
        return None;
    }
    let mut aligns = [0u64; 44];
    let mut max_order = 0;
    let mut size: u64 = 0;
    for c in children {
        let align = c.align.max(WINDOW_GRANULE).checked_next_power_of_two()?;
        let order = (align.trailing_zeros() - 20) as usize;
        if order >= aligns.len() {
            return None;
        }
        // A child larger than its alignment (a bridge window) does not
        // raise the alignment: it is placed on its own boundary.
        if c.size <= align {
            aligns[order] = aligns[order].saturating_add(align);
        }
        max_order = max_order.max(order);
        size = size.checked_add(c.size)?;
    }
    let min_align = mem_align(&aligns, max_order).max(WINDOW_GRANULE);
    Some(Block {
        size: align_up(size, min_align)?,
        align: min_align,
    })
}

/// The blocks the root bus windows must hold, per root bus: each
/// top-level bridge's window, and BARs of devices right on the root bus.
/// `None` when a size overflows.
pub(crate) fn top_blocks(items: &[Item]) -> Option<Vec<(Option<RootBus>, Block)>> {
    windows(items).map(|(top, _)| top)
}

/// The window each bridge above the items needs, sized as the kernel
/// sizes it (`bridge_window`, nested up from the deepest).
pub(crate) fn bridge_needs(items: &[Item]) -> Option<BTreeMap<PciAddress, Block>> {
    windows(items).map(|(_, each)| each)
}

/// The top-level blocks, and every bridge's own window.
#[allow(clippy::type_complexity)]
fn windows(items: &[Item]) -> Option<(Vec<(Option<RootBus>, Block)>, BTreeMap<PciAddress, Block>)> {
    let mut each = BTreeMap::new();
    // Children of each bridge, and each bridge's parent and depth.
    let mut children: BTreeMap<PciAddress, Vec<Block>> = BTreeMap::new();
    let mut parent: BTreeMap<PciAddress, (Option<PciAddress>, usize, Option<RootBus>)> =
        BTreeMap::new();
    let mut top = Vec::new();
    for it in items {
        let block = Block::bar(it.size)?;
        match it.chain.first() {
            Some(b) => children.entry(*b).or_default().push(block),
            None => top.push((it.bus, block)),
        }
        for (i, b) in it.chain.iter().enumerate() {
            let depth = it.chain.len() - 1 - i;
            parent.insert(*b, (it.chain.get(i + 1).copied(), depth, it.bus));
        }
    }
    // Deepest bridges first, so a window is known before its parent's.
    let mut order: Vec<(usize, PciAddress)> =
        parent.iter().map(|(b, (_, d, _))| (*d, *b)).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, b) in order {
        let Some(w) = bridge_window(children.get(&b).map(Vec::as_slice).unwrap_or(&[])) else {
            continue;
        };
        each.insert(b, w);
        let (up, _, bus) = parent[&b];
        match up {
            Some(p) => children.entry(p).or_default().push(w),
            None => top.push((bus, w)),
        }
    }
    Some((top, each))
}

fn sorted(blocks: &[Block]) -> Vec<Block> {
    let mut v = blocks.to_vec();
    v.sort_by(|a, b| b.align.cmp(&a.align).then(b.size.cmp(&a.size)));
    v
}

/// The space the blocks take packed from an aligned start.
pub(crate) fn packed_size(blocks: &[Block]) -> Option<u64> {
    sorted(blocks)
        .iter()
        .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
}

/// The largest alignment among the blocks: where a packing must start.
pub(crate) fn max_align(blocks: &[Block]) -> u64 {
    blocks.iter().map(|b| b.align).max().unwrap_or(1)
}

/// First-fit placement into the windows, most aligned block first, as the
/// kernel assigns sorted resources.
pub(crate) fn fits(blocks: &[Block], windows: &[Range]) -> bool {
    let mut cursors: Vec<u64> = windows.iter().map(|w| w.start).collect();
    'next: for b in sorted(blocks) {
        for (w, cur) in windows.iter().zip(cursors.iter_mut()) {
            if let Some(s) = align_up(*cur, b.align) {
                if let Some(end) = s.checked_add(b.size) {
                    if end > s && end - 1 <= w.end {
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

/// Free address space: [start, end) pieces in order, what is left of
/// windows once what is in use is taken out. The kernel takes the lowest
/// free place that fits a resource's alignment (kernel/resource.c
/// `__find_resource`, Linux 6.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FreeSpace(pub Vec<(u64, u64)>);

impl FreeSpace {
    /// The windows, whole (a `Range` ends inclusive).
    pub(crate) fn of(windows: &[Range]) -> FreeSpace {
        let mut f = FreeSpace::default();
        for w in windows {
            f.give(w.start, w.end.saturating_add(1));
        }
        f
    }

    /// Takes [s, e) out; an empty range takes nothing.
    pub(crate) fn take(&mut self, s: u64, e: u64) {
        if s >= e {
            return;
        }
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for &(a, b) in &self.0 {
            if e <= a || s >= b {
                out.push((a, b));
                continue;
            }
            if a < s {
                out.push((a, s));
            }
            if e < b {
                out.push((e, b));
            }
        }
        self.0 = out;
    }

    /// Gives [s, e) back.
    pub(crate) fn give(&mut self, s: u64, e: u64) {
        self.0.push((s, e));
        self.0.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.0.len());
        for (a, b) in self.0.drain(..) {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        self.0 = out;
    }

    /// The lowest place for the block, taken.
    pub(crate) fn alloc(&mut self, b: Block) -> Option<u64> {
        let at = self.0.iter().find_map(|&(a, e)| {
            let s = align_up(a, b.align)?;
            (s.checked_add(b.size)? <= e).then_some(s)
        })?;
        self.take(at, at + b.size);
        Some(at)
    }

    /// All of it, in bytes.
    pub(crate) fn total(&self) -> u64 {
        self.0
            .iter()
            .map(|(a, b)| b - a)
            .fold(0, u64::saturating_add)
    }
}

/// A window size to recommend where the model cannot compute one: twice
/// the need, as a power of two in GiB.
pub(crate) fn recommended_window(needed: u64) -> u64 {
    needed
        .saturating_mul(2)
        .max(64 << 30)
        .checked_next_power_of_two()
        .unwrap_or(1 << 62)
}

/// Physical address bits that reach `end`.
pub(crate) fn bits_for(end: u64) -> u32 {
    64 - end.saturating_sub(1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;
    const M: u64 = 1 << 20;

    fn bar(size: u64) -> Block {
        Block { size, align: size }
    }

    fn port(n: u8) -> PciAddress {
        PciAddress {
            domain: 0,
            bus: 0,
            device: 2,
            function: n,
        }
    }

    #[test]
    fn a_bridge_over_one_bar_is_that_bar() {
        assert_eq!(
            bridge_window(&[bar(32 * G)]),
            Some(Block {
                size: 32 * G,
                align: 32 * G
            })
        );
        assert_eq!(
            bridge_window(&[bar(256)]),
            Some(Block { size: M, align: M })
        );
    }

    #[test]
    fn a_big_bar_with_a_small_one_gets_half_alignment_as_the_kernel_does() {
        // 32 GiB + 32 MiB (an NVIDIA GPU's BAR1 and BAR3): 16 GiB aligned,
        // so 48 GiB, not 64.
        assert_eq!(
            bridge_window(&[bar(32 * G), bar(32 * M)]),
            Some(Block {
                size: 48 * G,
                align: 16 * G
            })
        );
        // 16 MiB + 16 GiB -> 24 GiB.
        assert_eq!(
            bridge_window(&[bar(16 * G), bar(16 * M)]),
            Some(Block {
                size: 24 * G,
                align: 8 * G
            })
        );
    }

    #[test]
    fn gpus_under_a_switch_nest_their_windows() {
        // Two GPUs behind downstream ports 1 and 2 of a switch whose
        // upstream port sits under root port 0.
        let ds = |n| PciAddress {
            domain: 0,
            bus: 2,
            device: n,
            function: 0,
        };
        let us = PciAddress {
            domain: 0,
            bus: 1,
            device: 0,
            function: 0,
        };
        let items: Vec<Item> = (1..=2)
            .flat_map(|n| {
                [32 * G, 32 * M].map(|size| Item {
                    size,
                    chain: vec![ds(n), us, port(0)],
                    bus: Some(RootBus { domain: 0, bus: 0 }),
                })
            })
            .collect();
        let top = top_blocks(&items).unwrap();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].0, Some(RootBus { domain: 0, bus: 0 }));
        // Each downstream port: 48 GiB at 16 GiB; both: 96 GiB.
        assert_eq!(
            top[0].1,
            Block {
                size: 96 * G,
                align: 16 * G
            }
        );
    }

    #[test]
    fn four_nvidia_like_gpus_need_192g_and_fit_a_200g_window() {
        let items: Vec<Item> = (0..4)
            .flat_map(|n| {
                [32 * G, 32 * M].map(|size| Item {
                    size,
                    chain: vec![port(n)],
                    bus: None,
                })
            })
            .collect();
        let blocks: Vec<Block> = top_blocks(&items)
            .unwrap()
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        assert_eq!(packed_size(&blocks), Some(192 * G));
        let start = 0x100_0000_0000;
        assert!(fits(&blocks, &[Range::new(start, start + 200 * G - 1)]));
        assert!(!fits(&blocks, &[Range::new(start, start + 190 * G - 1)]));
    }

    #[test]
    fn packing_pads_to_alignment_and_first_fit_uses_every_window() {
        assert_eq!(
            packed_size(&[
                bar(32 * G),
                Block {
                    size: 48 * G,
                    align: 16 * G
                }
            ]),
            Some(80 * G)
        );
        let blocks = [bar(32 * G), bar(32 * G)];
        assert!(!fits(
            &blocks,
            &[Range::new(0x40_0000_0000, 0x47_ffff_ffff)]
        ));
        assert!(fits(
            &blocks,
            &[
                Range::new(0x40_0000_0000, 0x47_ffff_ffff),
                Range::new(0x80_0000_0000, 0x87_ffff_ffff)
            ]
        ));
        assert!(!fits(&blocks, &[]));
    }

    #[test]
    fn sizes_that_overflow_give_none() {
        assert_eq!(bridge_window(&[bar(1 << 63), bar(1 << 63)]), None);
        assert_eq!(packed_size(&[bar(1 << 63), bar(1 << 63)]), None);
    }
}
