//! The kernel's third realloc round (`place` in kernel.rs runs it): what
//! it releases and how large it asks each window to be again.

use super::left::Left;
use crate::decide::sizing::{Block, WINDOW_GRANULE};
use crate::model::release::{KernelRules, LinuxRelease};

/// The guest kernel whose rounds are modelled: Debian 12's, which the
/// campaign's guests boot (`6.1.0-48-amd64`).
const GUEST_KERNEL: LinuxRelease = LinuxRelease(6, 1);

/// The rules of the guest kernel's rounds.
pub(super) const KERNEL: KernelRules = KernelRules::of(GUEST_KERNEL);

/// Round 3's entries: every window of a bridge on the root bus released
/// and sized again, its BARs and the windows below it with it; the bus-0
/// BARs kept, but for those round 2 failed (`failed_bars`), which are
/// tried again. Returns the entries with the size each window asks for
/// now, and those to place.
///
/// drivers/pci/setup-bus.c, Linux 6.1 (v6.1), `pci_assign_unassigned_root_bus_resources`:
/// with `pci=realloc` the kernel tries `pci_try_num = max_depth + 1`
/// times (`pci_bus_get_depth`); before the third try and later,
/// `rel_type = whole_subtree`, and for each resource that failed,
/// `pci_bus_release_bridge_resources(fail_res->dev->bus, ...)` releases
/// the windows of that type of every bridge on that bus and, recursively,
/// below it. For the window of a bridge on the root bus, `dev->bus` is
/// the root bus: each of its bridges' 64-bit windows goes, claimed or
/// not (`pci_bridge_release_resources` keeps the old size: `r->end =
/// resource_size(r) - 1`, and `calculate_memsize` sizes it again at
/// least that large). The next try places them, most aligned first
/// (`pbus_assign_resources_sorted`). v6.12 was not read at its tag (the
/// window selection below came after v6.17, by its merge thread); v6.18 picks the
/// bus's window for the failed type first (`pbus_select_window_for_type`,
/// 74afce3dfcba) and releases only the windows inside it: on the root bus
/// that is the first memory window of `_CRS` (QEMU's 64-bit one carries
/// neither `IORESOURCE_PREFETCH` nor `IORESOURCE_MEM_64`), which holds no
/// bridge's 64-bit window (read, not booted: `KernelRules`).
///
/// The campaign's guests run Debian's 6.1.172, whose setup-bus.c carries
/// later backports (its messages are v6.8's); its log shows this release
/// (`vm-tests/records/logs/seed-20261203-1613-dmesg-pci.txt`).
///
/// Campaign seed 20261203 record 1613 (SeaBIOS 1.16.3, Proxmox's q35
/// layout, 2 x (128 GiB + 32 MiB) on root ports, a 512 GiB root window,
/// `max bus depth: 2 pci_try_num: 3`): the second try failed port
/// 00:1c.0's 192 GiB window; the third released every root-bus window
/// and placed both ports' 192 GiB at the window's start, the empty
/// ports' 32 GiB after them, and found no room for the DMI bridge's 128
/// GiB: 2 of 2, where round 2 alone left 1.
pub(super) fn third(
    left: &[Left],
    claims: &[Option<(u64, u64)>],
    failed_bars: &[usize],
) -> (Vec<Left>, Vec<usize>) {
    let size = |r: Option<(u64, u64)>| r.map_or(0, |(s, e)| e - s);
    // At least the old size; an empty window keeps only that.
    let again = |kernel: Option<Block>, old: u64, empty: bool| match kernel {
        Some(b) => Some(Block {
            size: b.size.max(old),
            align: b.align,
        }),
        // An empty window, sized by its old size only, keeps the
        // smallest alignment a memory window gets (setup-bus.c
        // `window_alignment`).
        None if empty && old > 0 => Some(Block {
            size: old,
            align: WINDOW_GRANULE,
        }),
        None => None,
    };
    let mut out = left.to_vec();
    let mut todo = Vec::new();
    for (w, l) in out.iter_mut().enumerate() {
        if l.bar {
            if failed_bars.contains(&w) {
                todo.push(w);
            }
            continue;
        }
        let claimed = claims[w].is_some();
        for p in &mut l.parts {
            let old = if claimed { size(p.range) } else { 0 };
            p.kernel = again(p.kernel, old, p.gpus.is_empty());
        }
        // A subtractive bridge's window is sized over its children's
        // windows as they are sized again.
        let kernel = if l.parts.is_empty() {
            l.kernel
        } else {
            let blocks: Option<Vec<Block>> = l.parts.iter().map(|p| p.kernel).collect();
            blocks
                .and_then(|b| crate::decide::sizing::bridge_window(&b))
                .or(l.kernel)
        };
        l.kernel = again(kernel, size(claims[w]), l.gpus.is_empty());
        todo.push(w);
    }
    (out, todo)
}
