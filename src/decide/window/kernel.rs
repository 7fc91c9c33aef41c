//! What QEMU and the guest kernel make of the windows a firmware left on
//! the root bus (SeaBIOS: it rejects nothing, so what it could not place
//! well is left at addresses the kernel cannot claim).
//!
//! - QEMU's 64-bit window (`_CRS`) spans the prefetchable windows of the
//!   bridges on the root bus and the 64-bit BARs of its devices, each
//!   raised to 4 GiB at least (hw/pci/pci.c `pci_dev_get_w64`, identical
//!   in v7.2.0 L2841-2888 and v10.2.2 L3213-3259; `pci_bus_get_w64_range`
//!   does not go below bridges). A bridge window counts when its limit
//!   register (base + size - 1, in u64) is at or above max(base, 4 GiB): one
//!   that crosses zero does not, one that ends exactly at 2^64 does. A BAR
//!   counts unless `pci_bar_address` takes it as unmapped: at 0, wrapping,
//!   or ending at 2^64 (v10.2.2 L1639-1702). Lab: SeaBIOS 1.16.3, AMD, 40
//!   and 41 bits, 8 x 128 GiB: the kernel's window starts at 4 GiB once the
//!   layout wraps; campaign boot (2026-12-03): 5 x 128 GiB on root ports, a
//!   port window ending at 2^64, `root bus resource [mem
//!   0x100000000-0x8ffffffff window]`.
//! - The guest kernel without `pci=realloc` (drivers/pci/setup-bus.c,
//!   Linux 6.1, `pci_assign_unassigned_root_bus_resources`) keeps every
//!   window it can claim, even one whose BARs do not fit in it (only
//!   realloc releases it), sizes again each window it could not claim, and
//!   places those in the free space of its root window: most aligned
//!   first, equals in device order, each at the lowest free place
//!   (`pbus_assign_resources_sorted`, `__find_resource`), around what is
//!   reserved (QEMU's AMD HyperTransport range) and RAM. Lab: the same
//!   boot at 41 bits, the four ports left above 2 TiB placed again at 576,
//!   768, 1024 (past the HT range) and 1216 GiB. With realloc it then
//!   releases the windows still short and places them again (`Placed`).

pub(crate) use super::left::{qemu_w64, Left, Part, RootWindows};
use super::third::{third, KERNEL};
use crate::decide::sizing::{Block, FreeSpace};
use crate::model::range::{Range, FOUR_GIB};

/// Room below 4 GiB the kernel falls back to for a small 64-bit BAR the
/// 64-bit window has no room for (`pci_bus_alloc_resource` tries the
/// 32-bit window after the prefetchable 64-bit one): campaign record 0022,
/// SeaBIOS 1.16.2 on i440fx with pci=realloc, the four 32 MiB BARs placed
/// though three 256 GiB BARs fill the 64-bit window. How much room is left
/// there beside the 32-bit BARs is not modelled; 512 MiB is an estimate.
const LOW_FALLBACK: u64 = 512 << 20;

/// Free space in the kernel's root window (`sizing::FreeSpace`), and what
/// is left of the fallback below 4 GiB.
struct Free(FreeSpace, u64);

impl Free {
    fn new(w: Range) -> Free {
        Free(FreeSpace::of(&[w]), LOW_FALLBACK)
    }

    fn take(&mut self, s: u64, e: u64) {
        self.0.take(s, e);
    }

    fn give(&mut self, s: u64, e: u64) {
        self.0.give(s, e);
    }

    /// The lowest place for the block, taken; a small one may go below
    /// 4 GiB instead (`LOW_FALLBACK`).
    fn alloc(&mut self, b: Block) -> Option<u64> {
        match self.0.alloc(b) {
            Some(at) => Some(at),
            None if b.size <= self.1 => {
                self.1 -= b.size;
                Some(0)
            }
            None => None,
        }
    }
}

/// Which GPUs the kernel ends with placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placed {
    pub without_realloc: Vec<bool>,
    /// With `pci=realloc`: the windows of the GPUs still short are released
    /// and placed again in what is free, the windows that worked kept
    /// (`pci_prepare_next_assign_round` releases only the failed bridges;
    /// lab: SeaBIOS 1.16.3, AMD, 46 bits, realloc: the two ports SeaBIOS
    /// aligned kept, four of the six others fit in the gaps, 6 of 8).
    pub with_realloc: Vec<bool>,
}

/// The kernel's part: `usable` (what of the firmware's placement works)
/// kept, the windows it could not claim placed again in `crs`, around
/// `reserved`; then, with realloc, the windows still short.
pub(crate) fn place(
    root: RootWindows,
    left: &[Left],
    usable: &[bool],
    ram: &[(u64, u64)],
    reserved: &[(u64, u64)],
    addressable: u64,
) -> Placed {
    let RootWindows { crs, low, depth } = root;
    let n = usable.len();
    let left = &split(left, crs, low, ram);
    let mut free = Free::new(crs);
    let keep_out = |free: &mut Free| {
        for (s, e) in ram.iter().chain(reserved) {
            free.take(*s, *e);
        }
    };
    keep_out(&mut free);
    // What the kernel claims of each window (`claim`).
    let claims: Vec<Option<(u64, u64)>> = left.iter().map(|l| claim(l, crs, low, ram)).collect();
    let claimable = |w: usize| claims[w].is_some();
    for (s, e) in claims.iter().flatten() {
        free.take(*s, *e);
    }
    // Round 1: the windows it could not claim. A GPU is placed when the
    // firmware's placement of it works and none of its windows failed.
    let unclaimed: Vec<usize> = (0..left.len())
        .filter(|w| !claimable(*w) && !left[*w].gpus.is_empty())
        .collect();
    let mut reverted = Vec::new();
    let mut revert_failed = |failed: Vec<Lost>| -> Vec<Lost> {
        failed
            .into_iter()
            .filter(|(w, _, _)| !revert(&left[*w], crs, ram, reserved, addressable, &mut reverted))
            .collect()
    };
    // Where each entry lies in the root windows once placed again.
    let mut at: Vec<Option<(u64, u64)>> = vec![None; left.len()];
    let failed1 = revert_failed(assign(&mut free, left, &unclaimed, &mut at));
    let mut placed = usable.to_vec();
    settle(&mut placed, left, &unclaimed, &failed1);
    for (w, l) in left.iter().enumerate() {
        match claims[w] {
            Some(part) if Some(part) != l.range => {
                for (g, kept) in clipped(l, part) {
                    if let Some(p) = placed.get_mut(g) {
                        *p = kept.unwrap_or(*p);
                    }
                }
            }
            _ => {}
        }
    }
    let without_realloc = placed.clone();
    // Round 2, realloc: the claimed windows of the GPUs still short are
    // released, and they and round 1's failures are placed again in what
    // is free (never over RAM or a reserved range).
    let short = |g: &usize| *g < n && !placed[*g];
    let mut redo: Vec<usize> = (0..left.len())
        .filter(|w| claimable(*w) && left[*w].gpus.iter().any(short))
        .collect();
    for &w in &redo {
        // Only what lies in the 64-bit root window goes back to it: a
        // window clipped below 4 GiB was in a 32-bit one.
        let (s, e) = claims[w].expect("claimable");
        free.give(s.max(crs.start), e.min(crs.end.saturating_add(1)));
    }
    // What round 1 gave the parts of a failed subtractive bridge is
    // released with it.
    for (_, _, taken) in &failed1 {
        for (s, e) in taken {
            free.give(*s, *e);
        }
    }
    keep_out(&mut free);
    redo.extend(failed1.iter().map(|(w, _, _)| *w));
    for &w in &redo {
        at[w] = None;
    }
    let failed2 = revert_failed(assign(&mut free, left, &redo, &mut at));
    settle(&mut placed, left, &redo, &failed2);
    // Round 3, realloc on a tree two bridges deep: a window of a bridge on
    // the root bus that round 2 could not place releases the root bus
    // whole (`third`). Not modelled: the kernel does the same when round
    // 2 failed only a bus-0 BAR (its `dev->bus` is the root bus too), and
    // a fourth try on a tree three deep; no booted record shows either.
    let window_failed = failed2.iter().any(|(w, _, _)| !left[*w].bar);
    if KERNEL.whole_bus_from_third_try && depth + 1 >= 3 && window_failed {
        // Held: the bus-0 BARs, where they were claimed or placed.
        let mut free3 = Free(FreeSpace::of(&[crs]), free.1);
        keep_out(&mut free3);
        for (w, l) in left.iter().enumerate() {
            let kept = if redo.contains(&w) || unclaimed.contains(&w) {
                at[w]
            } else {
                claims[w]
            };
            if let (true, Some((s, e))) = (l.bar, kept) {
                free3.take(s.max(crs.start), e.min(crs.end.saturating_add(1)));
            }
        }
        let failed_bars: Vec<usize> = failed2
            .iter()
            .map(|(w, _, _)| *w)
            .filter(|w| left[*w].bar)
            .collect();
        let (left3, todo3) = third(left, &claims, &failed_bars);
        let mut at3 = vec![None; left.len()];
        let failed3 = revert_failed(assign(&mut free3, &left3, &todo3, &mut at3));
        settle(&mut placed, &left3, &todo3, &failed3);
    }
    Placed {
        without_realloc,
        with_realloc: placed,
    }
}

/// What the kernel claims of a window the firmware left, [start, end):
/// all of it when it lies in the root window and off the RAM the kernel
/// uses (a reserved range does not stop a claim: FIELD-NOTES §2, SeaBIOS
/// 1.16.2 at 40 bits, the BAR at 896 GiB over QEMU's HT range kept; campaign
/// record 0048, 128 GiB of RAM but mem=1G: a BAR wrapped to 128 GiB, over
/// RAM the kernel does not use, kept). A bridge's window that lies only
/// partly in the root window is clipped to that part and claimed
/// (drivers/pci/bus.c `pci_bus_clip_resource`, called by setup-bus.c
/// `pci_claim_bridge_resource`, Linux 6.1; the log says "clipped to").
/// Campaign seed 20261203 record 0148: SeaBIOS 1.16.3, i440fx, 40 bits, a
/// bridge's window at 256 GiB - 1.25 TiB clipped to end at 1 TiB. Only a
/// window whose BARs are known is clipped here (`Left::bars`).
///
/// The clip takes the first root window the window overlaps: for one
/// that starts below 4 GiB, the 32-bit root window it starts in (`low`,
/// [start, end)), so a window from 2 GiB to 66 GiB keeps 2-2.75 GiB and
/// the BARs that fit there. Campaign seed 20261203 record 1163 (SeaBIOS
/// 1.16.3, q35, 8 x 64 GiB at 40 bits, the layout wrapped): port 00:04.0's
/// window at 0x80000000-0x109fffffff "clipped" to 0x80000000-0xafffffff,
/// its GPU's 32 MiB BAR kept there and its 64 GiB BAR without room.
fn claim(l: &Left, crs: Range, low: &[(u64, u64)], ram: &[(u64, u64)]) -> Option<(u64, u64)> {
    let (s, e) = l.range?;
    let top = crs.end.saturating_add(1);
    let on_ram = |a: u64, b: u64| ram.iter().any(|(x, y)| a < *y && b > *x);
    if s >= crs.start && e > s && e <= top {
        return (!on_ram(s, e)).then_some((s, e));
    }
    // x86 claims no window from 0 (arch/x86/pci/i386.c
    // `pcibios_allocate_bridge_resources`: `!r->start` invalidates it;
    // record 0074, a window at 0-384 GiB dropped, not clipped).
    // A subtractive bridge's window is not clipped here: its children
    // are claimed one by one (`split`).
    if l.bar || l.bars.is_empty() || !l.parts.is_empty() || s == 0 {
        return None;
    }
    let (cs, ce) = if s < FOUR_GIB {
        let (a, b) = low.iter().find(|(a, b)| s < *b && e > *a)?;
        (s.max(*a), e.min(*b))
    } else {
        (s.max(crs.start), e.min(top))
    };
    (cs < ce && !on_ram(cs, ce)).then_some((cs, ce))
}

/// The root bus's windows as the kernel claims them: a subtractively
/// decoding bridge whose own window it drops (one from 0: x86's
/// `pcibios_allocate_bridge_resources`; one over the RAM it uses, whose
/// claim conflicts) leaves its children's
/// windows to be claimed from the bus above, which for such a bridge is
/// the root bus (drivers/pci/pci.c `pci_find_parent_resource` falls back
/// to the parent bus's resources for a transparent bridge). Each child
/// window that lies in the root window, off the RAM the kernel uses, is
/// claimed as a root window of its own; the bridge's window is sized again
/// over the children left (`pbus_size_mem` skips what is claimed) and,
/// with them, placed by `assign`. Campaign seed 20261203 record 0749:
/// SeaBIOS 1.17.0, Proxmox's `pcie=0`, 6 x 64 GiB at 40 bits, the layout
/// wrapped to 0: pci.2's window at 256-384 GiB claimed and its two GPUs
/// placed, pci.0's at 0-256 GiB dropped and its 256 GiB found no room
/// again: 2 of 6.
///
/// A subtractive bridge's window that runs past the end of the root window
/// is clipped to it (`pci_claim_bridge_resource` clips any bridge's
/// window, `pci_bus_clip_resource`), and so, in turn, is each child window
/// that runs past it; a child inside is claimed as it is, and the BARs of a
/// clipped child that fall outside are placed again inside it
/// (`clipped`). Its children are taken here as root windows of their own,
/// as above: a child window is placed again only in the root window's
/// free space, which the bridge's clipped window is part of. Campaign
/// seed 20261203 record 0957: SeaBIOS 1.17.0, Proxmox's `pcie=0`, 8 x 128
/// GiB at 40 bits, `pcidmi`'s window ending past 1 TiB: pci.2's window,
/// below it, claimed and its four GPUs placed; pci.0's, from 768 GiB,
/// clipped to 1 TiB, its first two 128 GiB BARs kept and every other BAR
/// of its four GPUs without room: 4 of 8, the last four.
fn split(left: &[Left], crs: Range, low: &[(u64, u64)], ram: &[(u64, u64)]) -> Vec<Left> {
    let top = crs.end.saturating_add(1);
    let dropped = |l: &Left| {
        l.range.is_some_and(|(s, e)| {
            let inside = s >= crs.start && e <= top;
            let runs_past = s >= crs.start.max(FOUR_GIB) && s < top && e > top;
            s == 0 || runs_past || (inside && ram.iter().any(|(a, b)| s < *b && e > *a))
        })
    };
    // A child window with the BARs of its GPUs, as they read back.
    let child = |l: &Left, p: &Part, r: (u64, u64)| {
        Left::claimed_part(p, r).with_bars(
            l.bars
                .iter()
                .filter(|(g, _, _)| p.gpus.contains(g))
                .copied()
                .collect(),
        )
    };
    let mut out = Vec::with_capacity(left.len());
    for l in left {
        if l.parts.is_empty() || claim(l, crs, low, ram).is_some() || !dropped(l) {
            out.push(l.clone());
            continue;
        }
        let (claimed, rest): (Vec<&Part>, Vec<&Part>) = l.parts.iter().partition(|p| {
            p.range
                .is_some_and(|r| r.0 >= FOUR_GIB && claim(&child(l, p, r), crs, low, ram).is_some())
        });
        for p in &claimed {
            out.push(child(l, p, p.range.expect("claimed")));
        }
        let mut gpus: Vec<usize> = rest.iter().flat_map(|p| p.gpus.iter().copied()).collect();
        gpus.sort_unstable();
        gpus.dedup();
        let blocks: Vec<Block> = rest.iter().filter_map(|p| p.kernel).collect();
        out.push(Left {
            // Not claimed: the kernel sizes and places it again.
            range: None,
            qemu: l.qemu,
            gpus,
            kernel: if claimed.is_empty() {
                l.kernel
            } else {
                crate::decide::sizing::bridge_window(&blocks)
            },
            bar: false,
            bars: Vec::new(),
            parts: rest.into_iter().cloned().collect(),
        });
    }
    out
}

/// The GPUs of a window clipped to `part`: `Some(true)` for one whose BARs
/// all end up in it, `Some(false)` for one that loses a BAR, `None` for
/// one with nothing outside (its fate is the firmware's placement). The
/// BARs outside are placed again in what the kept ones leave free of the
/// part, most aligned first, equals in GPU order (they are assigned under
/// the bridge, whose window the claim fixed). Record 0148: the part holds
/// three 256 GiB BARs and nothing more; each GPU's 32 MiB BAR left past
/// 1 TiB finds no room ("can't assign; no space"), and no GPU is placed.
fn clipped(l: &Left, (cs, ce): (u64, u64)) -> Vec<(usize, Option<bool>)> {
    let inside = |at: u64, size: u64| at >= cs && at.checked_add(size).is_some_and(|e| e <= ce);
    let mut free = Free(FreeSpace(vec![(cs, ce)]), 0);
    let mut out_bars: Vec<(usize, u64)> = Vec::new();
    for &(g, at, size) in &l.bars {
        if inside(at, size) {
            free.take(at, at + size);
        } else {
            out_bars.push((g, size));
        }
    }
    out_bars.sort_by_key(|(g, size)| (std::cmp::Reverse(*size), *g));
    let mut lost: Vec<usize> = Vec::new();
    for (g, size) in &out_bars {
        if Block::bar(*size).and_then(|b| free.alloc(b)).is_none() {
            lost.push(*g);
        }
    }
    l.gpus
        .iter()
        .map(|g| {
            let moved = out_bars.iter().any(|(o, _)| o == g);
            (*g, moved.then_some(!lost.contains(g)))
        })
        .collect()
}

/// A bus-0 BAR the kernel could neither claim nor place in its window
/// goes back to the address the firmware gave it when nothing is there
/// (drivers/pci/setup-res.c, Linux 6.1: `pci_assign_resource` falls back
/// to `pci_revert_fw_address`, which requests a device with no upstream
/// bridge straight from `iomem_resource`, so it fails only over another
/// resource: the root windows, the RAM the kernel uses, the reserved
/// ranges, a BAR reverted before it; nor past the end of `iomem_resource`,
/// the vCPU's width (arch/x86/kernel/setup.c `iomem_resource.end =
/// (1ULL << boot_cpu_data.x86_phys_bits) - 1`); arch/x86/pci/i386.c
/// `pcibios_allocate_dev_resources` saves the address only when it is not
/// 0). A bridge's window has no saved address and is not reverted. Below
/// 4 GiB is taken as in use (the 32-bit window, RAM and the firmware's
/// ranges fill it; not modelled finer). Campaign seed 20261203 record
/// 0001: SeaBIOS 1.17.0 on i440fx, 7 x 256 GiB at 40 bits, the window
/// wrapped; the BAR left at 512 GiB is "trying firmware assignment" and
/// assigned, the ones at 256 GiB (over the root window) and 768 GiB (over
/// the HT range) are not.
fn revert(
    l: &Left,
    crs: Range,
    ram: &[(u64, u64)],
    reserved: &[(u64, u64)],
    addressable: u64,
    reverted: &mut Vec<(u64, u64)>,
) -> bool {
    let Some((s, e)) = l.range.filter(|_| l.bar) else {
        return false;
    };
    let over = |(a, b): &(u64, u64)| s < *b && e > *a;
    let window = (crs.start, crs.end.saturating_add(1));
    if s < FOUR_GIB
        || e > addressable
        || over(&window)
        || ram.iter().chain(reserved).chain(reverted.iter()).any(over)
    {
        return false;
    }
    reverted.push((s, e));
    true
}

/// A window that found no room, the GPUs in it left without a place (all
/// of them, unless parts of a subtractive bridge found room), and the
/// ranges those parts took.
type Lost = (usize, Vec<usize>, Vec<(u64, u64)>);

/// After a round that placed `windows`: a GPU with a window among them is
/// placed exactly when none of its windows there lost it; the others keep
/// what they had.
fn settle(placed: &mut [bool], left: &[Left], windows: &[usize], failed: &[Lost]) {
    for (g, p) in placed.iter_mut().enumerate() {
        let mut mine = windows
            .iter()
            .filter(|w| left[**w].gpus.contains(&g))
            .peekable();
        if mine.peek().is_some() {
            *p = mine.all(|w| {
                !failed
                    .iter()
                    .any(|(f, lost, _)| f == w && lost.contains(&g))
            });
        }
    }
}

/// The order the kernel assigns windows in: most aligned first, equals in
/// device order (by the first GPU in each).
fn kernel_order(kernel: Option<Block>, gpus: &[usize]) -> (std::cmp::Reverse<u64>, usize) {
    (
        std::cmp::Reverse(kernel.map_or(0, |b| b.align)),
        gpus.first().copied().unwrap_or(usize::MAX),
    )
}

/// Places the windows `todo` (indices into `left`), most aligned first,
/// equals in device order (the firmware lists its entries in its own
/// order: by the first GPU in each); returns those that found no room,
/// with the GPUs each leaves without a place.
///
/// A subtractively decoding bridge whose own window finds no room still
/// has its children placed: their windows take from the bus's resources,
/// which are the root windows (drivers/pci/setup-bus.c, Linux 6.1: the
/// bridge's children are assigned after it whatever its outcome, and
/// `pci_bus_alloc_resource` walks the bus's resources, the parent's ones
/// included for a subtractive bridge). Campaign seed 20261203 record 0134
/// (SeaBIOS 1.16.3, q35, Proxmox's `pcie=0` bridges behind the DMI bridge,
/// 7 x 16 GiB, realloc): the third try releases the DMI bridge's window,
/// 136 GiB finds no room in 116 GiB, then pci.0's 72 GiB window is
/// assigned at the root window's start and pci.2's 56 GiB is not: 4 of 7.
fn assign(
    free: &mut Free,
    left: &[Left],
    todo: &[usize],
    placed_at: &mut [Option<(u64, u64)>],
) -> Vec<Lost> {
    let mut todo = todo.to_vec();
    todo.sort_by_key(|w| kernel_order(left[*w].kernel, &left[*w].gpus));
    let mut lost: Vec<Lost> = Vec::new();
    for w in todo {
        let l = &left[w];
        match l.kernel.and_then(|b| free.alloc(b).map(|at| (at, b.size))) {
            Some((at, size)) if at != 0 => placed_at[w] = Some((at, at + size)),
            // Placed below 4 GiB (`Free::alloc` says 0): outside `crs`,
            // so nothing for round 3 to hold.
            Some(_) => {}
            None => lost.push((w, l.gpus.clone(), Vec::new())),
        }
    }
    // The children of a subtractive bridge whose window found no room are
    // assigned after every window of the root bus (the kernel assigns a
    // bus's own resources, then recurses into the buses below).
    for (w, out, taken) in lost
        .iter_mut()
        .filter(|(w, _, _)| !left[*w].parts.is_empty())
    {
        let mut parts: Vec<&Part> = left[*w].parts.iter().collect();
        parts.sort_by_key(|p| kernel_order(p.kernel, &p.gpus));
        out.clear();
        for p in parts {
            match p.kernel.and_then(|b| free.alloc(b).map(|at| (at, b.size))) {
                Some((at, size)) if at != 0 => taken.push((at, at + size)),
                Some(_) => {}
                None => out.extend(p.gpus.iter().copied()),
            }
        }
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// `super::place` without 32-bit root windows.
    fn place(
        crs: Range,
        left: &[Left],
        usable: &[bool],
        ram: &[(u64, u64)],
        reserved: &[(u64, u64)],
        addressable: u64,
    ) -> Placed {
        let root = RootWindows {
            crs,
            low: &[],
            depth: 1,
        };
        super::place(root, left, usable, ram, reserved, addressable)
    }

    fn claim(l: &Left, crs: Range, ram: &[(u64, u64)]) -> Option<(u64, u64)> {
        super::claim(l, crs, &[], ram)
    }

    fn port(gpu: usize, start: u64, size: u64) -> Left {
        Left::window(
            start,
            size,
            vec![gpu],
            Some(Block {
                size: 192 * GIB,
                align: 64 * GIB,
            }),
        )
    }

    /// What QEMU counts for `_CRS` (hw/pci/pci.c `pci_dev_get_w64`,
    /// `pci_bar_address`, v7.2.0 and v10.2.2).
    #[test]
    fn what_qemu_counts_of_windows_and_bars() {
        let minus = |g: u64| 0u64.wrapping_sub(g * GIB);
        // A bridge window ending exactly at 2^64: counted, upb 2^64 - 1.
        let w = Left::window(minus(128), 128 * GIB, vec![0], None);
        assert_eq!(w.qemu, Some((minus(128), u64::MAX)));
        assert_eq!(w.range, None);
        // One crossing zero: limit below base, not counted.
        assert_eq!(Left::window(minus(64), 128 * GIB, vec![0], None).qemu, None);
        // One from 0: counted from 4 GiB; one below 4 GiB: not at all.
        assert_eq!(
            Left::window(0, 128 * GIB, vec![0], None).qemu,
            Some((FOUR_GIB, 128 * GIB - 1))
        );
        assert_eq!(Left::window(0xC000_0000, 1 << 28, vec![0], None).qemu, None);
        // BARs: at 0, ending at 2^64, or wrapping: unmapped.
        assert_eq!(Left::bar(0, 128 * GIB, vec![0]).qemu, None);
        assert_eq!(Left::bar(minus(128), 128 * GIB, vec![0]).qemu, None);
        assert_eq!(Left::bar(minus(128), 256 * GIB, vec![0]).qemu, None);
        // A BAR reads back aligned down to its size.
        assert_eq!(
            Left::bar(192 * GIB, 128 * GIB, vec![0]).qemu,
            Some((128 * GIB, 256 * GIB - 1))
        );
        let span = qemu_w64(&[
            Left::window(minus(128), 128 * GIB, vec![0], None),
            Left::window(0, 128 * GIB, vec![1], None),
        ]);
        assert_eq!(span, Some((FOUR_GIB, u64::MAX)));
    }

    /// Lab (SeaBIOS 1.16.3, AMD, 41 bits, 8 x (128 GiB + 32 MiB) on root
    /// ports): the window starts at 4 GiB, and the four ports mapped
    /// below zero are placed again at 576, 768, 1024 and 1216 GiB.
    #[test]
    fn wrapped_ports_are_placed_again_around_the_ht_range() {
        let b = 129 * GIB;
        let minus = |g: u64| 0u64.wrapping_sub(g * GIB);
        let left = vec![
            port(7, minus(512), b),
            port(6, minus(383), b),
            port(5, minus(254), b),
            port(4, minus(125), b),
            port(3, 4 * GIB, b),
            port(2, 133 * GIB, b),
            port(1, 262 * GIB, b),
            port(0, 391 * GIB, b),
        ];
        let (s, e) = qemu_w64(&left).unwrap();
        assert_eq!(s, FOUR_GIB);
        assert!(e > 1 << 41);
        let crs = Range::new(s, (1u64 << 41) - 1);
        let ht = [(0xFD_0000_0000, 1 << 40)];
        let p = place(crs, &left, &[false; 8], &[], &ht, u64::MAX);
        assert_eq!(
            p.without_realloc,
            [false, false, false, false, true, true, true, true]
        );
        // Lab, the same with pci=realloc: all eight.
        assert_eq!(p.with_realloc, [true; 8]);
    }

    /// Lab (the same at 40 bits): the port mapped across zero is not in
    /// use, the one from 0.5 GiB counts from 4 GiB, and 125 GiB below the
    /// claimed ports cannot take a 192 GiB window.
    #[test]
    fn a_wrapping_window_is_not_in_use_and_no_room_places_nothing() {
        let b = (128 * GIB) + (GIB / 2);
        let mut left = vec![port(7, 0u64.wrapping_sub(128 * GIB), b)];
        left.extend((0..7).map(|i| port(6 - i, GIB / 2 + i as u64 * b, b)));
        let (s, e) = qemu_w64(&left).unwrap();
        assert_eq!(s, FOUR_GIB);
        assert_eq!(e, GIB / 2 + 7 * b - 1);
        let p = place(Range::new(s, e), &left, &[false; 8], &[], &[], u64::MAX);
        assert_eq!(p.without_realloc, [false; 8]);
    }

    /// Lab (SeaBIOS 1.16.3, AMD, 46 bits, pci=realloc): ports of 160 GiB
    /// from 56 TiB, the GPUs of buses 8 and 4 aligned; realloc keeps those
    /// two and fits four more 192 GiB windows in the gaps: 6 of 8.
    #[test]
    fn realloc_keeps_what_works_and_fills_the_gaps() {
        let base = 56u64 << 40;
        let mut left: Vec<Left> = (0..8)
            .map(|i| port(7 - i, base + i as u64 * 160 * GIB, 160 * GIB))
            .collect();
        left.extend(
            (0..4).map(|j| Left::window(base + (1280 + 32 * j) * GIB, 32 * GIB, vec![], None)),
        );
        let mut usable = [false; 8];
        usable[7] = true;
        usable[3] = true;
        let (s, e) = qemu_w64(&left).unwrap();
        let p = place(Range::new(s, e), &left, &usable, &[], &[], u64::MAX);
        assert_eq!(p.without_realloc.iter().filter(|x| **x).count(), 2);
        assert_eq!(p.with_realloc.iter().filter(|x| **x).count(), 6);
    }

    /// Review: a bus-0 GPU whose 32 MiB BAR found no room in round 1 is
    /// not placed by realloc re-placing only its big BAR; and realloc
    /// gives back a claimed window over the HT range without making the
    /// range itself free.
    #[test]
    fn realloc_needs_every_window_and_keeps_the_ht_range_out() {
        let big = Left::window(
            896 * GIB,
            192 * GIB,
            vec![0],
            Some(Block {
                size: 192 * GIB,
                align: 64 * GIB,
            }),
        );
        let crs = Range::new(4 * GIB, 1152 * GIB - 1);
        let ht = [(0xFD_0000_0000, 1 << 40)];
        // Claimed over the HT range, the GPU short: realloc finds no room.
        let mut fill = vec![big.clone()];
        fill.extend((0..4).map(|i| Left::window((4 + 192 * i) * GIB, 192 * GIB, vec![1], None)));
        let p = place(crs, &fill, &[false, true], &[], &ht, u64::MAX);
        assert_eq!(p.with_realloc, [false, true]);
        // Two BARs on bus 0, both unclaimable; the 64-bit window holds the
        // big one only, and the small one is past what falls back below
        // 4 GiB: not placed, with or without realloc.
        let bars = vec![
            Left::bar(0, 512 * GIB, vec![0]),
            Left::bar(0, 1 << 30, vec![0]),
        ];
        let p = place(
            Range::new(512 * GIB, 1024 * GIB - 1),
            &bars,
            &[false],
            &[],
            &[],
            u64::MAX,
        );
        assert_eq!((p.without_realloc[0], p.with_realloc[0]), (false, false));
    }

    /// Campaign seed 20261203 record 0001 (SeaBIOS 1.17.0, i440fx, AMD,
    /// 40 bits, 4 x 256 GiB on bus 0 left at 0, 256, 512 and 768 GiB, a
    /// 2 GiB root window at 256 GiB): only the BAR at 512 GiB goes back to
    /// where the firmware left it; a bridge window there would not.
    #[test]
    fn a_bus0_bar_goes_back_to_its_firmware_address_when_that_is_free() {
        let b = 256 * GIB;
        let left: Vec<Left> = (0..4u64)
            .map(|i| Left::bar(i * b, b, vec![i as usize]))
            .collect();
        let crs = Range::new(256 * GIB, 258 * GIB - 1);
        let ht = [(0xFD_0000_0000, 1 << 40)];
        let ram = [(0, GIB)];
        let p = place(crs, &left, &[false; 4], &ram, &ht, 1 << 40);
        assert_eq!(p.without_realloc, [false, false, true, false]);
        assert_eq!(p.with_realloc, [false, false, true, false]);
        // Nothing goes back past the vCPU's width (39 bits: 512 GiB).
        let p = place(crs, &left, &[false; 4], &ram, &ht, 1 << 39);
        assert_eq!(p.without_realloc, [false; 4]);
        let w = vec![Left::window(2 * b, b, vec![0], Block::bar(b))];
        let p = place(crs, &w, &[false], &ram, &ht, u64::MAX);
        assert_eq!(p.without_realloc, [false]);
        // Two BARs at one free address: the first taken only.
        let twice = vec![Left::bar(2 * b, b, vec![0]), Left::bar(2 * b, b, vec![1])];
        let p = place(crs, &twice, &[false; 2], &ram, &ht, u64::MAX);
        assert_eq!(p.without_realloc, [true, false]);
    }

    /// Campaign seed 20261203 record 0148 (SeaBIOS 1.16.3, i440fx, 40
    /// bits, 7 x (256 GiB + 32 MiB)): pci.2's window at 256 GiB - 1.25 TiB
    /// is clipped to end at 1 TiB; its three big BARs stay, the 32 MiB
    /// ones past 1 TiB find no room in it, and no GPU of it is placed.
    /// With room left in the part they go there; a window from 0 is not
    /// clipped at all (record 0074).
    #[test]
    fn a_window_past_the_root_window_is_clipped_and_keeps_what_is_in_it() {
        let t = 1u64 << 40;
        let bars = |n: u64| -> Vec<(usize, u64, u64)> {
            let mut v: Vec<_> = (0..n)
                .map(|i| (i as usize, (1 + i) * 256 * GIB, 256 * GIB))
                .collect();
            v.extend((0..n).map(|i| (i as usize, t + i * (32 << 20), 32 << 20)));
            v
        };
        let crs = Range::new(9 * GIB, t - 1);
        let w = |n: u64| {
            Left::window(256 * GIB, t, (0..n as usize).collect(), Block::bar(t)).with_bars(bars(n))
        };
        assert_eq!(claim(&w(3), crs, &[]), Some((256 * GIB, t)));
        let p = place(crs, &[w(3)], &[false; 3], &[(0, GIB)], &[], t);
        assert_eq!(p.without_realloc, [false; 3]);
        let p = place(crs, &[w(2)], &[false; 2], &[(0, GIB)], &[], t);
        assert_eq!(p.without_realloc, [true; 2]);
        // Without the BARs known, nothing is clipped: placed again whole.
        let bare = vec![Left::window(
            256 * GIB,
            t,
            vec![0, 1],
            Block::bar(512 * GIB),
        )];
        let p = place(crs, &bare, &[false; 2], &[(0, GIB)], &[], t);
        assert_eq!(p.without_realloc, [true; 2]);
        let from0 = [Left::window(0, 384 * GIB, vec![0], None).with_bars(vec![(0, 0, 128 * GIB)])];
        assert_eq!(claim(&from0[0], crs, &[]), None);
    }

    /// Campaign seed 20261203 record 0134 (SeaBIOS 1.16.3, q35, Proxmox's
    /// bridges behind the DMI bridge, 7 x 16 GiB, realloc, a 116 GiB root
    /// window): the DMI bridge's 136 GiB finds no room, its children take
    /// from the root window: pci.0's 72 GiB fits, pci.2's 56 GiB does not.
    /// Record 0749: the DMI bridge's window from 0 is dropped; pci.2's
    /// window at 256-384 GiB is claimed from the root window and keeps its
    /// two GPUs; pci.0's from 0 is sized again (256 GiB) and finds no room
    /// in what is left of 4-450 GiB. Before, the whole bridge was placed
    /// again and all six fitted.
    #[test]
    fn a_subtractive_bridges_claimable_children_are_claimed_from_the_root_window() {
        let b = |size: u64| {
            Some(Block {
                size,
                align: 64 * GIB,
            })
        };
        let part = |gpus: Vec<usize>, size: u64, start: u64| Part {
            gpus,
            kernel: b(size),
            range: Some((start, start + size)),
        };
        let dmi = Left::window(0, 384 * GIB, (0..6).collect(), b(384 * GIB))
            .with_bars((0..6).map(|g| (g, g as u64 * 64 * GIB, 64 * GIB)).collect())
            .with_parts(vec![
                part((0..4).collect(), 256 * GIB, 0),
                part(vec![4, 5], 128 * GIB, 256 * GIB),
            ]);
        let crs = Range::new(4 * GIB, 450 * GIB - 1);
        let usable = [false, true, true, true, true, true];
        let ram = [(0, GIB)];
        let p = place(crs, std::slice::from_ref(&dmi), &usable, &ram, &[], 1 << 40);
        let want = [false, false, false, false, true, true];
        assert_eq!(p.without_realloc, want);
        // With realloc the same: pci.0's window still finds no room.
        assert_eq!(p.with_realloc, want);
        // A root window with room for it: pci.0's GPUs placed again too.
        let wide = Range::new(4 * GIB, 1024 * GIB - 1);
        let p = place(wide, &[dmi], &usable, &ram, &[], 1 << 40);
        assert_eq!(p.without_realloc, [true; 6]);
    }

    /// Record 1163's port 00:04.0: SeaBIOS left its window at
    /// 0x80000000-0x109fffffff, from the 32-bit root window past 4 GiB,
    /// the GPU's 32 MiB BAR at 2 GiB and its 64 GiB BAR at 64 GiB. The
    /// kernel clips the window to the 32-bit root window it starts in and
    /// finds no room there for the 64 GiB BAR: the GPU is lost, where
    /// placing the window again in the 64-bit window would have kept it.
    #[test]
    fn a_window_from_below_4_gib_is_clipped_to_the_32_bit_root_window() {
        let w = Left::window(
            0x8000_0000,
            0x10_a000_0000 - 0x8000_0000,
            vec![0],
            Some(Block {
                size: 96 * GIB,
                align: 64 * GIB,
            }),
        )
        .with_bars(vec![(0, 64 * GIB, 64 * GIB), (0, 0x8000_0000, 32 << 20)]);
        let crs = Range::new(4 * GIB, 1024 * GIB - 1);
        let low = [(0x8000_0000, 0xb000_0000), (0xc000_0000, 0xfec0_0000)];
        let ram = [(0, 0x8000_0000)];
        assert_eq!(
            super::claim(&w, crs, &low, &ram),
            Some((0x8000_0000, 0xb000_0000))
        );
        let root = RootWindows {
            crs,
            low: &low,
            depth: 1,
        };
        let p = super::place(root, std::slice::from_ref(&w), &[false], &ram, &[], 1 << 40);
        assert_eq!(p.without_realloc, [false]);
        // Without the 32-bit root windows known: placed again, kept.
        let p = place(crs, &[w], &[false], &ram, &[], 1 << 40);
        assert_eq!(p.without_realloc, [true]);
    }

    /// Record 0957's shape: the DMI bridge's window runs from 256 GiB past
    /// the root window's end (1 TiB); pci.2's child window, below, holds
    /// GPUs 4-7 (a 128 GiB and a 32 MiB BAR each); pci.0's, from 768 GiB,
    /// GPUs 0-3 the same, ending past 1 TiB. The kernel clips the bridge's
    /// window and pci.0's to 1 TiB: pci.0's keeps two 128 GiB BARs and has
    /// no room for the others, so GPUs 0-3 each lose one; GPUs 4-7 keep
    /// theirs. Before, the bridge was placed again whole and pci.0's
    /// window, first in device order, took the room.
    #[test]
    fn a_subtractive_bridges_window_past_the_root_window_is_clipped_child_by_child() {
        let big = 128 * GIB;
        let small = 32 << 20;
        let child_size = 4 * big + 4 * small;
        let kernel = Some(Block {
            size: 5 * big,
            align: big,
        });
        let part = |gpus: Vec<usize>, start: u64| Part {
            gpus,
            kernel,
            range: Some((start, start + child_size)),
        };
        // BARs as SeaBIOS lays a child out: the 128 GiB ones first.
        let bars = |first: usize, start: u64| {
            (0..4).flat_map(move |k| {
                let g = first + k;
                [
                    (g, start + k as u64 * big, big),
                    (g, start + 4 * big + k as u64 * small, small),
                ]
            })
        };
        let (pci2, pci0) = (256 * GIB, 768 * GIB);
        let dmi = Left::window(pci2, 1280 * GIB - pci2 + GIB, (0..8).collect(), None)
            .with_bars(bars(4, pci2).chain(bars(0, pci0)).collect())
            .with_parts(vec![
                part((4..8).collect(), pci2),
                part((0..4).collect(), pci0),
            ]);
        let crs = Range::new(128 * GIB, 1024 * GIB - 1);
        let usable = [false, false, false, false, true, true, true, true];
        let p = place(crs, &[dmi], &usable, &[(0, GIB)], &[], 1 << 40);
        assert_eq!(p.without_realloc, usable);
    }

    #[test]
    fn a_subtractive_bridges_children_take_from_the_root_window() {
        let base = 768 * GIB;
        let b = |size: u64, align: u64| Some(Block { size, align });
        let dmi = |parts: bool| {
            let w = Left::window(base, 114 * GIB, (0..7).collect(), b(136 * GIB, 16 * GIB));
            if parts {
                let part = |gpus: Vec<usize>, kernel| Part {
                    gpus,
                    kernel,
                    range: None,
                };
                w.with_parts(vec![
                    part((0..4).collect(), b(72 * GIB, 16 * GIB)),
                    part(Vec::new(), b(GIB / 2, GIB / 2)),
                    part((4..7).collect(), b(56 * GIB, 16 * GIB)),
                    part(Vec::new(), b(GIB / 2, GIB / 2)),
                ])
            } else {
                w
            }
        };
        let crs = Range::new(base, base + 116 * GIB - 1);
        let usable = [true, true, true, true, false, false, false];
        let p = place(crs, &[dmi(true)], &usable, &[], &[], 1 << 40);
        assert_eq!(p.without_realloc, usable);
        assert_eq!(p.with_realloc, usable);
        let p = place(crs, &[dmi(false)], &usable, &[], &[], 1 << 40);
        assert_eq!(p.with_realloc, [false; 7]);
        // Left past the root window, unclaimed: round 1 places pci.0's
        // part, and realloc, which releases it with the bridge, again.
        let mut far = dmi(true);
        far.range = Some((base + 200 * GIB, base + 314 * GIB));
        let p = place(crs, &[far], &[false; 7], &[], &[], 1 << 40);
        assert_eq!(p.without_realloc, usable);
        assert_eq!(p.with_realloc, usable);
    }
}
