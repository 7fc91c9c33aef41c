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

use crate::decide::sizing::{align_up, Block};
use crate::model::range::{Range, FOUR_GIB};

/// A window (or a bus-0 BAR) a firmware programmed on the root bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Left {
    /// [start, end) as programmed, what the kernel can claim; `None` when
    /// it does not end below 2^64.
    pub range: Option<(u64, u64)>,
    /// What QEMU counts of it in the root bus's 64-bit span, [lob, upb]
    /// inclusive (`pci_dev_get_w64`); `None`: not counted.
    pub qemu: Option<(u64, u64)>,
    /// The GPUs whose BARs are in it.
    pub gpus: Vec<usize>,
    /// The window the kernel gives it when it places it again.
    pub kernel: Option<Block>,
    /// A device's BAR, not a bridge's window: the kernel may put it back
    /// where the firmware left it (`revert`).
    pub bar: bool,
}

impl Left {
    /// A bridge's prefetchable window programmed at `base` with `size`
    /// bytes: its limit register is `base + size - 1` in u64 (SeaBIOS
    /// pciinit.c `pci_region_map_one_entry`, rel-1.16.3 L1078), and QEMU
    /// counts it from max(base, 4 GiB) when the limit is at or above that
    /// (`pci_dev_get_w64`).
    pub(crate) fn window(base: u64, size: u64, gpus: Vec<usize>, kernel: Option<Block>) -> Left {
        let limit = base.wrapping_add(size).wrapping_sub(1);
        let lob = base.max(FOUR_GIB);
        Left {
            range: base.checked_add(size).map(|end| (base, end)),
            qemu: (size > 0 && limit >= lob).then_some((lob, limit)),
            gpus,
            kernel,
            bar: false,
        }
    }

    /// A 64-bit BAR of a bus-0 device written with `at`: it reads back
    /// aligned down to its size. QEMU takes it as unmapped at 0, when it
    /// wraps, and when it ends at 2^64 (`pci_bar_address`: `!new_addr`,
    /// `last <= new_addr`, `last == PCI_BAR_UNMAPPED`, `last >=
    /// HWADDR_MAX`), else counts it from max(address, 4 GiB).
    pub(crate) fn bar(at: u64, size: u64, gpus: Vec<usize>) -> Left {
        let align = size.checked_next_power_of_two().unwrap_or(1 << 63).max(1);
        let a = at & !(align - 1);
        let last = a.wrapping_add(size).wrapping_sub(1);
        let mapped = a != 0 && last > a && last != u64::MAX;
        let lob = a.max(FOUR_GIB);
        Left {
            range: a.checked_add(size).filter(|_| a != 0).map(|end| (a, end)),
            qemu: (mapped && last >= lob).then_some((lob, last)),
            gpus,
            kernel: Block::bar(size),
            bar: true,
        }
    }
}

/// QEMU's span of what is in use on the root bus, [lob, upb] inclusive
/// (`pci_bus_get_w64_range`: the union of what each device counts).
pub(crate) fn qemu_w64(left: &[Left]) -> Option<(u64, u64)> {
    left.iter()
        .filter_map(|l| l.qemu)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

/// Room below 4 GiB the kernel falls back to for a small 64-bit BAR the
/// 64-bit window has no room for (`pci_bus_alloc_resource` tries the
/// 32-bit window after the prefetchable 64-bit one): campaign record 0022,
/// SeaBIOS 1.16.2 on i440fx with pci=realloc, the four 32 MiB BARs placed
/// though three 256 GiB BARs fill the 64-bit window. How much room is left
/// there beside the 32-bit BARs is not modelled; 512 MiB is an estimate.
const LOW_FALLBACK: u64 = 512 << 20;

/// Free space in the kernel's root window, [start, end) pieces in order,
/// and what is left of the fallback below 4 GiB.
struct Free(Vec<(u64, u64)>, u64);

impl Free {
    fn new(w: Range) -> Free {
        Free(vec![(w.start, w.end.saturating_add(1))], LOW_FALLBACK)
    }

    fn take(&mut self, s: u64, e: u64) {
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
    fn give(&mut self, s: u64, e: u64) {
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

    /// The lowest place for the block, taken; a small one may go below
    /// 4 GiB instead (`LOW_FALLBACK`).
    fn alloc(&mut self, b: Block) -> Option<u64> {
        let at = self.0.iter().find_map(|&(a, e)| {
            let s = align_up(a, b.align)?;
            (s.checked_add(b.size)? <= e).then_some(s)
        });
        match at {
            Some(at) => {
                self.take(at, at + b.size);
                Some(at)
            }
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
    crs: Range,
    left: &[Left],
    usable: &[bool],
    ram: &[(u64, u64)],
    reserved: &[(u64, u64)],
    addressable: u64,
) -> Placed {
    let n = usable.len();
    let mut free = Free::new(crs);
    let keep_out = |free: &mut Free| {
        for (s, e) in ram.iter().chain(reserved) {
            free.take(*s, *e);
        }
    };
    keep_out(&mut free);
    // A window over the RAM the kernel uses conflicts and is not claimed
    // (campaign record 0048, 128 GiB of RAM but mem=1G: a BAR wrapped to
    // 128 GiB, over RAM the kernel does not use, is kept). A reserved range
    // does not stop a claim (FIELD-NOTES §2: SeaBIOS 1.16.2 at 40 bits, the
    // BAR at 896 GiB over QEMU's HT range kept), but the kernel places
    // nothing new there (lab: the seed case at 41 bits skipped it).
    let claimable = |l: &Left| {
        l.range.is_some_and(|(s, e)| {
            s >= crs.start
                && e > s
                && e - 1 <= crs.end
                && !ram.iter().any(|(a, b)| s < *b && e > *a)
        })
    };
    for l in left.iter().filter(|l| claimable(l)) {
        let (s, e) = l.range.expect("claimable");
        free.take(s, e);
    }
    // Round 1: the windows it could not claim. A GPU is placed when the
    // firmware's placement of it works and none of its windows failed.
    let unclaimed: Vec<usize> = (0..left.len())
        .filter(|w| !claimable(&left[*w]) && !left[*w].gpus.is_empty())
        .collect();
    let mut reverted = Vec::new();
    let mut revert_failed = |failed: Vec<usize>| -> Vec<usize> {
        failed
            .into_iter()
            .filter(|w| !revert(&left[*w], crs, ram, reserved, addressable, &mut reverted))
            .collect()
    };
    let failed1 = revert_failed(assign(&mut free, left, &unclaimed));
    let mut placed = usable.to_vec();
    settle(&mut placed, left, &unclaimed, &failed1);
    let without_realloc = placed.clone();
    // Round 2, realloc: the claimed windows of the GPUs still short are
    // released, and they and round 1's failures are placed again in what
    // is free (never over RAM or a reserved range).
    let short = |g: &usize| *g < n && !placed[*g];
    let mut redo: Vec<usize> = (0..left.len())
        .filter(|w| claimable(&left[*w]) && left[*w].gpus.iter().any(short))
        .collect();
    for &w in &redo {
        let (s, e) = left[w].range.expect("claimable");
        free.give(s, e);
    }
    keep_out(&mut free);
    redo.extend(failed1.iter().copied());
    let failed2 = revert_failed(assign(&mut free, left, &redo));
    settle(&mut placed, left, &redo, &failed2);
    Placed {
        without_realloc,
        with_realloc: placed,
    }
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

/// After a round that placed `windows`: a GPU with a window among them is
/// placed exactly when none of its windows there failed; the others keep
/// what they had.
fn settle(placed: &mut [bool], left: &[Left], windows: &[usize], failed: &[usize]) {
    for (g, p) in placed.iter_mut().enumerate() {
        let mut mine = windows
            .iter()
            .filter(|w| left[**w].gpus.contains(&g))
            .peekable();
        if mine.peek().is_some() {
            *p = mine.all(|w| !failed.contains(w));
        }
    }
}

/// Places the windows `todo` (indices into `left`), most aligned first,
/// equals in device order (the firmware lists its entries in its own
/// order: by the first GPU in each); returns those that found no room.
fn assign(free: &mut Free, left: &[Left], todo: &[usize]) -> Vec<usize> {
    let mut todo = todo.to_vec();
    todo.sort_by_key(|w| {
        (
            std::cmp::Reverse(left[*w].kernel.map_or(0, |b| b.align)),
            left[*w].gpus.first().copied().unwrap_or(usize::MAX),
        )
    });
    todo.into_iter()
        .filter(|w| left[*w].kernel.and_then(|b| free.alloc(b)).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

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
}
