//! SeaBIOS (src/fw/pciinit.c, paravirt.c): where it puts the 64-bit
//! window and every BAR in it. It rejects nothing (E10): every BAR gets an
//! address, and the guest kernel keeps the ones it can use. Rows E1-E10
//! of docs/firmware-window.md, each beside its code; all arithmetic wraps
//! as SeaBIOS's u64 does (E8 can take the window below zero).

use super::kernel::{qemu_w64, Left, Part};
use super::qemu::{MemoryMap, GIB};
use super::rules::PadMode;
use super::topology::{bridges, Attach, GpuBars, Layout, PciBridges};
use super::{width_trusted, Fate, FwBoot, NoBoot, OriginKind, SeabiosRules, Setup};
use crate::decide::sizing::{align_up, bridge_window as kernel_bridge_window, Block};
use crate::model::range::{Range, FOUR_GIB};

/// `PCI_BRIDGE_MEM_MIN` (pciinit.c L29, 1.16.2 to 1.17.0).
const BRIDGE_MEM_MIN: u64 = 2 << 20;

/// A BAR's alignment, its size's power of two (2^63 for a size past it:
/// never 0, whatever a flag asks for).
fn bar_align(size: u64) -> u64 {
    size.checked_next_power_of_two().unwrap_or(1 << 63).max(1)
}

/// `ALIGN()` as SeaBIOS computes it, wrapping.
fn walign(v: u64, a: u64) -> u64 {
    if a <= 1 {
        return v;
    }
    v.wrapping_add(a - 1) & !(a - 1)
}

/// One entry of the root bus's 64-bit prefetchable region: a bridge window
/// or a BAR, with the GPU BARs inside it (GPU, BAR size, offset from the
/// entry's start) in the order SeaBIOS maps them.
struct Entry {
    size: u64,
    align: u64,
    bars: Vec<(usize, u64, u64)>,
    /// The window the guest kernel gives it when it must place it again
    /// (a bridge: its children as the kernel sizes them; a BAR: itself).
    kernel: Option<Block>,
    /// A BAR of a bus-0 device, not a bridge's window.
    bar: bool,
    /// A bridge that decodes subtractively (q35's DMI-to-PCI bridge): the
    /// windows behind it, each its GPUs, kernel size, and offset and size
    /// in this entry (`Left::parts`).
    parts: Vec<(Vec<usize>, Option<Block>, u64, u64)>,
}

impl Entry {
    /// The GPUs with a BAR in this entry, each once, in order.
    fn gpus(&self) -> Vec<usize> {
        let mut gpus: Vec<usize> = self.bars.iter().map(|(i, _, _)| *i).collect();
        gpus.sort_unstable();
        gpus.dedup();
        gpus
    }
}

/// SeaBIOS's order of a bus's entries (pci_region_create_entry): by
/// alignment, then size, both descending; an entry goes after its equals
/// (lab: SeaBIOS 1.16.3, 8 equal ports, the GPU of bus 8 mapped lowest).
fn sort_entries(entries: &mut [Entry]) {
    entries.sort_by_key(|e| std::cmp::Reverse((e.align, e.size)));
}

/// A hot-plug bridge's window over these BARs (E3, E9): the BARs summed,
/// most aligned first; aligned to the largest child (at least 2 MiB), or
/// in pad mode to top>>11 (1.16.3), or the larger of the two (1.17.0);
/// the size rounded up to that alignment; an empty one reserves it.
fn bridge_entry(bars: Vec<(usize, u64)>, rules: SeabiosRules, pad: bool, top: u64) -> Entry {
    let mut bars = bars;
    bars.sort_by_key(|b| std::cmp::Reverse(bar_align(b.1)));
    let mut align = bars
        .iter()
        .map(|(_, s)| bar_align(*s))
        .max()
        .unwrap_or(0)
        .max(BRIDGE_MEM_MIN);
    if pad {
        let top_align = top >> 11;
        align = if rules.bridge_align_max {
            align.max(top_align)
        } else if top_align > 0 {
            top_align
        } else {
            align
        };
    }
    let mut sum: u64 = bars.iter().fold(0u64, |a, (_, s)| a.wrapping_add(*s));
    if align > sum {
        sum = align;
    }
    let kernel = bars
        .iter()
        .map(|(_, s)| Block::bar(*s))
        .collect::<Option<Vec<_>>>()
        .and_then(|b| kernel_bridge_window(&b));
    let mut at = 0u64;
    let bars = bars
        .into_iter()
        .map(|(i, s)| {
            let b = (i, s, at);
            at = at.wrapping_add(s);
            b
        })
        .collect();
    Entry {
        size: walign(sum, align),
        align,
        bars,
        kernel,
        bar: false,
        parts: Vec::new(),
    }
}

/// G6b: a bridge that is no hot-plug bus (q35's i82801b11 `pcidmi`,
/// PCI_EXP_TYPE_PCI_BRIDGE without SHPC: pci_bus_hotplug_support) over
/// the windows of the bridges behind it, `children` in the order SeaBIOS
/// creates them (the highest secondary bus first): aligned to the largest
/// (at least 2 MiB), their sizes summed and rounded up to it, nothing
/// reserved when empty; mapped one after the other
/// (pci_bios_check_devices, pci_region_map_entries, rel-1.16.3 L928-995,
/// L1098-1112).
fn nest_entry(children: Vec<Entry>) -> Entry {
    let mut children = children;
    sort_entries(&mut children);
    let align = children
        .iter()
        .map(|c| c.align)
        .max()
        .unwrap_or(0)
        .max(BRIDGE_MEM_MIN);
    let sum = children.iter().fold(0u64, |a, c| a.wrapping_add(c.size));
    let kernel = children.iter().filter_map(|c| c.kernel).collect::<Vec<_>>();
    let mut parts = Vec::new();
    let mut at = 0u64;
    let mut bars = Vec::new();
    for c in &children {
        bars.extend(c.bars.iter().map(|(i, s, o)| (*i, *s, at.wrapping_add(*o))));
        parts.push((c.gpus(), c.kernel, at, c.size));
        at = at.wrapping_add(c.size);
    }
    Entry {
        size: walign(sum, align),
        align,
        bars,
        kernel: kernel_bridge_window(&kernel),
        bar: false,
        parts,
    }
}

pub(super) fn boot(
    s: &Setup,
    rules: SeabiosRules,
    map: &MemoryMap,
    gpus: &[GpuBars],
) -> Result<FwBoot, NoBoot> {
    // E5: the width, trusted as OVMF does (paravirt.c physbits, 1.16.3+).
    let trusted = width_trusted(s.phys_bits, s.vendor);
    let over4g = map.ram_end.saturating_sub(FOUR_GIB);
    // E6a/E6b: the top of the window.
    let top = if rules.top && trusted {
        if rules.top44 {
            if s.phys_bits > 44 && over4g < (1 << 40) {
                1u64 << 44
            } else {
                1u64.checked_shl(s.phys_bits).unwrap_or(0)
            }
        } else {
            1u64 << s.phys_bits.min(46)
        }
    } else {
        0
    };
    // E7a/E7b: pad mode.
    let pad = match rules.pad {
        PadMode::Never => false,
        PadMode::RamAndWidth => top > 0 && s.phys_bits >= 36 && over4g > 0,
        // E7b: `pci_pad_mem64 = romfile_loadbool("opt/org.seabios/pci64",
        // -1)`, -1 meaning RAM above 4 GiB (pciinit.c rel-1.17.0
        // L1205-1213); 1.16.3 has no such file.
        PadMode::RamOrFwCfg => s.seabios_pci64.unwrap_or(over4g > 0),
    };
    // The root bus's entries in the order SeaBIOS creates them
    // (pci_bios_check_devices): the BARs of bus-0 devices in device order
    // (E4: they are entries of the root bus themselves), then a window per
    // bridge from the highest secondary bus down.
    let bus0_bar = |i: usize, b: u64| Entry {
        size: b,
        align: bar_align(b),
        bars: vec![(i, b, 0)],
        kernel: Block::bar(b),
        bar: true,
        parts: Vec::new(),
    };
    let mut entries: Vec<Entry> = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        if g.attach == Attach::Bus0 {
            entries.extend(g.bars.iter().map(|b| bus0_bar(i, *b)));
        }
    }
    // G6b: the pci-bridges, each a hot-plug bus (SHPC) padded as a port
    // is, empty or not; behind a PCIe-to-PCI bridge on q35 (whose subtree
    // has the highest bus numbers on Proxmox's layout, 1e.0), on bus 0 on
    // i440fx; the highest secondary bus first.
    let pci_bridges = s.pci_bridges(gpus);
    let groups = bridges(gpus);
    let mut bridge_entries: Vec<Entry> = Vec::new();
    for n in pci_bridges.present.iter().rev() {
        let bars = groups
            .iter()
            .filter(|(b, _)| b == n)
            .flat_map(|(_, m)| m.iter())
            .flat_map(|i| gpus[*i].bars.iter().map(move |b| (*i, *b)))
            .collect();
        bridge_entries.push(bridge_entry(bars, rules, pad, top));
    }
    let behind_dmi = !pci_bridges.on_bus0 && !bridge_entries.is_empty();
    let dmi = behind_dmi.then(|| nest_entry(std::mem::take(&mut bridge_entries)));
    // D2 for SeaBIOS: each empty hot-plug port reserves its alignment.
    // The empty ports are numbered after the GPUs' ports (campaign) or
    // are Proxmox's last ich9-pcie-ports: their buses come first from the
    // top, then the GPUs' ports, the highest bus first.
    let ports = || {
        let mut p: Vec<Entry> = (0..s.empty_ports)
            .map(|_| bridge_entry(Vec::new(), rules, pad, top))
            .collect();
        for i in s.ports_in_bus_order(gpus).into_iter().rev() {
            p.push(bridge_entry(
                gpus[i].bars.iter().map(|b| (i, *b)).collect(),
                rules,
                pad,
                top,
            ));
        }
        p
    };
    match (s.layout, dmi) {
        // Proxmox's pcidmi at 1e.0 is past every root port.
        (Layout::Proxmox, Some(d)) => {
            entries.push(d);
            entries.extend(ports());
        }
        // The campaign's bridge comes before the ports made after it.
        (_, d) => {
            entries.extend(ports());
            entries.extend(d);
        }
    }
    entries.extend(bridge_entries);
    // Further devices on bus 0 follow the GPUs there (only their order
    // among equals depends on it).
    sort_entries(&mut entries);
    let sum: u64 = entries.iter().fold(0u64, |a, e| a.wrapping_add(e.size));
    let align = entries.first().map_or(1, |e| e.align);
    // The pci-bridges on bus 0 have their SHPC BARs there: 64-bit, not
    // prefetchable, so a region of their own below the prefetchable one
    // (pci_region_migrate_64bit_entries moves every 64-bit entry of bus 0,
    // r64_mem then r64_pref: pci_bios_map_devices, rel-1.16.3 L1117-1160).
    let shpc: u64 = if pci_bridges.on_bus0 {
        pci_bridges.present.len() as u64 * PciBridges::SHPC_BAR
    } else {
        0
    };
    // E1: without pad mode the 64-bit BARs stay in the 32-bit window when
    // they fit there, below BUILD_PCIMEM_END (pci_bios_init_root_regions_mem:
    // the prefetchable region ends the window, aligned down; q35's window
    // starts above MMCONFIG at 0xC000_0000, i440fx's at 2 or 3 GiB). The
    // 32-bit BARs that share it are not counted.
    if !pad && sum > 0 {
        const PCIMEM_END: u64 = 0xFEC0_0000;
        let below = map.below_4g();
        let low = match s.machine {
            super::Machine::Q35 => below.max(0xC000_0000),
            super::Machine::I440fx if below <= 0x8000_0000 => 0x8000_0000,
            super::Machine::I440fx if below <= 0xC000_0000 => 0xC000_0000,
            super::Machine::I440fx => below,
        };
        let base = PCIMEM_END.checked_sub(sum).map(|b| b & !(align - 1));
        if let Some(base) = base.filter(|b| *b >= low) {
            return Ok(FwBoot {
                origin: OriginKind::SeabiosBelow4g,
                width: s.phys_bits,
                aperture: Range::new(base, base + sum - 1),
                used: None,
                gpus: vec![
                    Fate {
                        programmed: true,
                        usable: true,
                    };
                    gpus.len()
                ],
                abandoned: false,
                nothing_left: false,
                left: Vec::new(),
                realloc_rounds: false,
            });
        }
    }
    // E2/B9: above RAM and reserved-memory-end.
    let mut base = map
        .reserved_end
        .unwrap_or(0)
        .max(FOUR_GIB.wrapping_add(over4g));
    let mut origin = OriginKind::SeabiosAboveRam;
    if top > 0 {
        // The two regions, each rounded to 1 GiB (L1140-1141).
        let mut size = walign(shpc, GIB).wrapping_add(walign(sum, GIB));
        if pad {
            size = walign(size, top >> 3);
        }
        if base < top.wrapping_sub(size) {
            base = top.wrapping_sub(size);
            origin = OriginKind::SeabiosTop;
        }
        // E8: below an e820 entry it overlaps, by its own size.
        if rules.e820_shift && map.e820_used(base, size).is_some() {
            base = base.wrapping_sub(size);
            origin = OriginKind::SeabiosTop;
        }
    }
    // r64_mem from the base (1 GiB aligned), r64_pref after it, aligned to
    // its largest entry and to 1 GiB (L1147-1153).
    let mem_base = walign(base, GIB);
    let start = walign(walign(mem_base.wrapping_add(shpc), align), GIB);
    // Every entry, and every BAR in it, mapped one after the other without
    // further alignment (pci_region_map_entries).
    let limit = s.addressable();
    let ram = map.kernel_ram(s.guest_mem);
    let mut usable = vec![true; gpus.len()];
    let mut programmed = vec![true; gpus.len()];
    let mut left = Vec::new();
    // The SHPC BARs, read back as QEMU counts them (kernel.rs).
    for k in 0..shpc / PciBridges::SHPC_BAR {
        left.push(Left::bar(
            mem_base.wrapping_add(k * PciBridges::SHPC_BAR),
            PciBridges::SHPC_BAR,
            Vec::new(),
        ));
    }
    let mut cur = start;
    for e in &entries {
        let members = e.gpus();
        // A BAR reads back aligned down to its size; QEMU takes a BAR at 0
        // as unmapped, so a bus-0 BAR there is no part of its window (lab,
        // campaign records 0024 and 0037: SeaBIOS 1.17.0 on i440fx, the
        // layout wrapped to 0, the window starts at the second BAR).
        // What QEMU counts of each for `_CRS` is kernel.rs's (`Left`).
        let read = |at: u64, size: u64| at & !(bar_align(size) - 1);
        let l = match e.bars.as_slice() {
            [(_, size, _)] if e.bar => Left::bar(cur, *size, members),
            _ => Left::window(cur, e.size, members, e.kernel)
                .with_bars(
                    e.bars
                        .iter()
                        .map(|(i, size, offset)| {
                            (*i, read(cur.wrapping_add(*offset), *size), *size)
                        })
                        .collect(),
                )
                .with_parts(
                    e.parts
                        .iter()
                        .map(|(gpus, kernel, offset, size)| {
                            // A window behind a bridge whose window wraps
                            // is not reached (below).
                            let start = cur.wrapping_add(*offset);
                            Part {
                                gpus: gpus.clone(),
                                kernel: *kernel,
                                range: cur
                                    .checked_add(e.size)
                                    .and_then(|_| start.checked_add(*size))
                                    .map(|end| (start, end)),
                            }
                        })
                        .collect(),
                ),
        };
        let range = l.range;
        left.push(l);
        // The window each BAR sits in, [start, end) from the entry's start:
        // its bridge's, which behind the DMI bridge is that bridge's part.
        let window_of = |offset: u64| {
            e.parts
                .iter()
                .find(|(_, _, o, s)| offset >= *o && offset - *o < *s)
                .map_or((0, e.size), |(_, _, o, s)| (*o, o.wrapping_add(*s)))
        };
        // The kernel claims the BARs in device order.
        let mut order: Vec<&(usize, u64, u64)> = e.bars.iter().collect();
        order.sort_by_key(|(i, _, offset)| (*i, *offset));
        let mut claimed: Vec<(u64, u64)> = Vec::new();
        for (i, size, offset) in order {
            let at = cur.wrapping_add(*offset);
            // A BAR that reads back as 0, or as the last bytes below 2^64,
            // is unprogrammed as the guest sees it (lab: the seed case at 40
            // and 41 bits, the BARs aligned down to 0 and to -128 GiB).
            let r = read(at, *size);
            if r == 0 || r.wrapping_add(*size) == 0 {
                programmed[*i] = false;
            }
            // The kernel claims a BAR where it reads back, aligned down to
            // its size, when that lies in its bridge's window, over no BAR
            // claimed before it, reachable and off RAM (arch/x86/pci/i386.c
            // `pcibios_allocate_dev_resources`, `pci_claim_resource`: "no
            // compatible bridge window" or "address conflict" otherwise). A
            // misaligned BAR at its window's start reads back below it; one
            // further in may read back inside. Campaign seed 20261203 record
            // 0765: SeaBIOS 1.16.3, Proxmox's `pcie=0`, pci.2's window at
            // 3.5 TiB + 2 GiB, its first 128 GiB BAR read back at 3.5 TiB
            // (not claimed), its second at 3.625 TiB (claimed): 5 of 6.
            // A BAR behind a bridge whose window wraps is not reached at
            // all: QEMU disables a window whose base is above its limit.
            let (ws, we) = window_of(*offset);
            let (ws, we) = (cur.wrapping_add(ws), cur.wrapping_add(we));
            let end = r.checked_add(*size);
            let ok = range.is_some()
                && end.is_some_and(|end| {
                    r >= ws
                        && end <= we
                        && r >= FOUR_GIB
                        && end <= limit
                        && !claimed.iter().any(|(s, e)| r < *e && end > *s)
                        && !ram.iter().any(|(s, e)| end > *s && r < *e)
                });
            if let (true, Some(end)) = (ok, end) {
                claimed.push((r, end));
            }
            usable[*i] &= ok;
        }
        cur = cur.wrapping_add(e.size);
    }
    // A BAR in an entry that wraps past zero fails the checks above; the
    // others keep what they have (lab: SeaBIOS 1.16.3, AMD, 41 bits: the
    // entries mapped below zero and the ones after them are placed apart).
    let fates = usable
        .iter()
        .zip(&programmed)
        .map(|(u, p)| Fate {
            programmed: *p,
            usable: *u,
        })
        .collect();
    // Its own window, `pcimem64_start` to `pcimem64_end` (1 GiB aligned);
    // one that wraps is shown up to the end of the address space.
    let shown_end = start
        .checked_add(sum)
        .and_then(|e| align_up(e, GIB))
        .map_or(u64::MAX, |e| e - 1);
    Ok(FwBoot {
        origin,
        width: s.phys_bits,
        aperture: Range::new(start, shown_end.max(start)),
        used: qemu_w64(&left),
        gpus: fates,
        abandoned: false,
        nothing_left: false,
        left,
        realloc_rounds: true,
    })
}
