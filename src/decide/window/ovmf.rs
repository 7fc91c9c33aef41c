//! OVMF (edk2 OvmfPkg): the width it trusts, its 64-bit aperture, and
//! which devices its PCI bus driver places there or rejects.
//! Rows C1-C14 and D1-D8 of docs/firmware-window.md, each beside its code.

use super::kernel::Left;
use super::qemu::{MemoryMap, GIB};
use super::topology::{bridge_window, bridges, Attach, GpuBars, Layout, PciBridges};
use super::{width_trusted, Fate, FwBoot, NoBoot, OriginKind, OvmfRules, Setup};
use crate::decide::sizing::{align_up, Block};
use crate::model::range::{Range, FOUR_GIB};

/// C1: `PcdPciMmio64Size` in OvmfPkgX64.dsc at every tag 202011-202605.
const CLASSIC_SIZE: u64 = 32 * GIB;
/// C2: the largest X-PciMmio64Mb OVMF takes (0x1000000 MiB); above it
/// "ignoring malformed" (MemDetect.c 202211 L426, 202605 L575).
const MMIO64_MAX: u64 = 0x100_0000 << 20;

fn pow2_floor(v: u64) -> u64 {
    if v == 0 {
        0
    } else {
        1 << (63 - v.leading_zeros())
    }
}

fn bits_for(end_exclusive: u64) -> u32 {
    64 - end_exclusive.saturating_sub(1).leading_zeros()
}

/// The aperture: origin, width, base, size.
fn aperture(
    s: &Setup,
    rules: OvmfRules,
    map: &MemoryMap,
) -> Result<(OriginKind, u32, u64, u64), NoBoot> {
    let mmio64 = s.mmio64.filter(|m| *m <= MMIO64_MAX);
    let classic_size = align_up(mmio64.unwrap_or(CLASSIC_SIZE), GIB).unwrap_or(u64::MAX);
    // C1/B9: above RAM and above reserved-memory-end, aligned to the size.
    let low = map.ram_end.max(FOUR_GIB).max(map.reserved_end.unwrap_or(0));
    let classic_base = align_up(
        align_up(low, GIB).unwrap_or(u64::MAX),
        pow2_floor(classic_size),
    )
    .unwrap_or(u64::MAX);
    let classic_kind = if mmio64.is_some() {
        OriginKind::OvmfMmio64
    } else {
        OriginKind::OvmfClassic
    };
    // C5: a non-zero GuestPhysBits is trusted whatever the vendor (OVMF
    // 202408+, QEMU 9.1+ under KVM) and limits the width.
    let gpb = s
        .guest_phys_bits
        .filter(|b| *b > 0 && rules.guest_phys_bits && s.qemu.guest_phys_bits);
    // C4/C14: before 202211 OVMF does not read the width at all.
    let trusted = rules.dynamic && (gpb.is_some() || width_trusted(s.phys_bits, s.vendor));
    if !trusted {
        // C12: guess mode, the classic window only.
        let end = classic_base.saturating_add(classic_size);
        return Ok((
            classic_kind,
            bits_for(end).max(36),
            classic_base,
            classic_size,
        ));
    }
    let mut w = s.phys_bits.min(gpb.unwrap_or(u32::MAX)).min(rules.cap);
    // C7: without 1 GiB pages OVMF maps only 40 bits.
    if !s.pdpe1gb {
        w = w.min(40);
    }
    let space = 1u64 << w;
    let m = 1u64 << (w - 3);
    // C9/C11: the dynamic window, unless X-PciMmio64Mb is larger (or, from
    // 202505, given at all).
    let dynamic = !(mmio64.is_some() && rules.mmio64_exact)
        && classic_size < m
        && classic_base.saturating_add(m) < space;
    if dynamic {
        let mut base = space - m;
        // C10: PlatformReservationConflictCB, called for every e820 entry
        // in turn (202302+): an entry the window overlaps moves it below
        // that entry, aligned to its size, in UINT64 arithmetic. QEMU adds
        // the HT reservation only for AMD at machine types 7.1+ (B5).
        if rules.avoids_ht {
            for (start, end) in &map.e820 {
                if base.max(*start) < base.wrapping_add(m).min(*end) {
                    base = start.wrapping_sub(m) & !(m - 1);
                }
            }
        }
        return Ok((OriginKind::OvmfDynamic, w, base, m));
    }
    let end = classic_base.saturating_add(classic_size);
    // C13: a trusted width the window does not fit in: OVMF hangs (lab).
    if end > space {
        return Err(NoBoot::FirmwareHangs { end, width: w });
    }
    Ok((classic_kind, w, classic_base, classic_size))
}

/// The aperture and what OVMF places in it.
pub(super) fn boot(
    s: &Setup,
    rules: OvmfRules,
    map: &MemoryMap,
    gpus: &[GpuBars],
) -> Result<FwBoot, NoBoot> {
    let (origin, width, base, size) = aperture(s, rules, map)?;
    // D1: hot-plug padding, 1/256 of the window from 32 GiB windows up,
    // asked for by each root port (202211+); the port's window is the
    // larger of the padding and what sits below it (PciBusDxe
    // PciResourceSupport.c CalculateResourceAperture: MAX of the typical
    // and the padding aperture), so an empty port takes the padding and a
    // GPU's port, larger, its own window. Bridges and the root bus take
    // none (boot B9).
    let pad = if rules.pads && size > CLASSIC_SIZE {
        (size / 256).next_power_of_two()
    } else {
        0
    };
    let n = gpus.len();
    let groups = bridges(gpus);
    let pci_bridges = s.pci_bridges(gpus);
    // D3 rejects a device, which is a PCI function: (GPU, function, its
    // BAR sizes), in GPU order. A GPU is programmed when none of its
    // functions is rejected.
    let units: Vec<(usize, u8, u64)> = gpus
        .iter()
        .enumerate()
        .flat_map(|(i, g)| {
            g.functions()
                .into_iter()
                .map(move |(f, bars)| (i, f, bars.into_iter().max().unwrap_or(0)))
        })
        .collect();
    // The functions of each GPU rejected so far.
    let mut gone: Vec<Vec<u8>> = vec![Vec::new(); n];
    let pack = |gone: &[Vec<u8>]| -> Option<u64> {
        let mut blocks: Vec<Block> = Vec::new();
        let mut pads = s.empty_ports;
        for (i, g) in gpus.iter().enumerate() {
            let kept = |f: u8| !gone[i].contains(&f);
            match g.attach {
                // A port whose every function was rejected is an empty
                // port; one that keeps a function gets the larger of its
                // window and the padding (campaign record 0036, no
                // padding at its 32 GiB aperture: the port's window is the
                // kept 32 MiB alone).
                Attach::RootPort => {
                    let b = g.blocks_of(kept)?;
                    if b.is_empty() {
                        pads += 1;
                    } else {
                        let w = bridge_window(&b)?;
                        blocks.push(Block {
                            size: w.size.max(pad),
                            align: w.align.max(pad),
                        });
                    }
                }
                Attach::Bus0 => blocks.extend(g.blocks_of(kept)?),
                Attach::Bridge(_) => {}
            }
        }
        // D5: one window per bridge over its remaining devices' BARs. G6b:
        // every pci-bridge is a hot-plug bus (SHPC: PciBusDxe
        // PciHotPlugSupport.c IsPciHotPlugBus, IsSHPC) whose padding
        // OvmfPkg's GetResourcePadding gives as it does a root port's
        // (pci-bridge has QEMU's reservation capability, every field
        // unset: the defaults); the window is the larger of the two
        // (PciResourceSupport.c CalculateResourceAperture, edk2-stable202211:
        // MAX of the typical and the padding aperture), an empty bridge's
        // the padding. Behind q35's PCIe-to-PCI bridge, which is no
        // hot-plug bus, they are its children; on i440fx they sit on bus
        // 0 with their SHPC BARs.
        let mut bridge_blocks = Vec::new();
        for n in &pci_bridges.present {
            let mut children = Vec::new();
            for (_, members) in groups.iter().filter(|(b, _)| b == n) {
                for i in members {
                    children.extend(gpus[*i].blocks_of(|f| !gone[*i].contains(&f))?);
                }
            }
            bridge_blocks.extend(match bridge_window(&children) {
                Some(w) => Some(Block {
                    size: w.size.max(pad),
                    align: w.align.max(pad),
                }),
                None => (pad > 0).then_some(Block {
                    size: pad,
                    align: pad,
                }),
            });
        }
        if pci_bridges.on_bus0 {
            blocks.extend(bridge_blocks);
            blocks.extend(std::iter::repeat_n(
                Block {
                    size: PciBridges::SHPC_BAR,
                    align: PciBridges::SHPC_BAR,
                },
                pci_bridges.present.len(),
            ));
        } else {
            blocks.extend(bridge_window(&bridge_blocks));
        }
        if pad > 0 {
            blocks.extend(std::iter::repeat_n(
                Block {
                    size: pad,
                    align: pad,
                },
                pads,
            ));
        }
        // Largest alignment first; among equals, the order the devices
        // are found in (a stable sort: the blocks are built in GPU order,
        // which is bus order but for Proxmox's ports, equal there). edk2
        // PciBusDxe PciResourceSupport.c InsertResourceNode puts a node
        // before the first of equal alignment unless its remainder
        // (Length & Alignment) is non-zero and smaller than that node's;
        // devices are inserted in bus order, each bridge after its
        // children, and OVMF's root bridge combines mem and pmem
        // (DegradeResource -> MergeResourceTree), which inserts the list a
        // second time: for equal alignments the two reversals give bus
        // order back. Campaign seed 20261203 record 0545 (OVMF 2025.02,
        // Proxmox's i440fx, 4 x 256 GiB on bus 0 and 4 behind pci.2 at
        // 0x1f, a 2 TiB window): the bus-0 BARs first, then pci.2's
        // window, so one GPU is rejected, not two (sorted by size, the
        // bridge's 768 GiB + 128 MiB first cost 256 GiB of alignment).
        blocks.sort_by_key(|b| std::cmp::Reverse(b.align));
        let mut cur = base;
        for b in &blocks {
            cur = align_up(cur, b.align)?.checked_add(b.size)?;
        }
        (cur <= base.saturating_add(size)).then_some(cur)
    };
    // D3: until the rest fits, reject the device with the largest resource
    // (PciEnumerator.c 202211 GetMaxResourceConsumerDevice L838-890):
    // among equals the later root port (lab L1), the earlier device behind
    // a bridge (boot B9). D4: a device on bus 0 is never rejective
    // (IsRejectiveDevice L799-803); when only such devices remain, the
    // allocation of the whole root bus is aborted and nothing on it is
    // programmed (L1033-1037, PciLib.c L824-826; boot B6). The functions
    // of one GPU follow the same order among equals (an inference: no
    // record has two equal functions in one GPU).
    // The order of the GPUs' root ports by bus number ("later" above):
    // their own order, but not on Proxmox's layout.
    let mut rank: Vec<usize> = (0..n).collect();
    if s.layout == Layout::Proxmox {
        for (r, i) in s.ports_in_bus_order(gpus).into_iter().enumerate() {
            rank[i] = r;
        }
    }
    // Among equals behind two pci-bridges: the search walks the bridges
    // in the order of their parent's list (`pci_bridge_walk`), the later
    // one's device wins; in one bridge the earlier device.
    let bridge_walk = |gone: &[Vec<u8>]| -> Vec<u8> {
        let nodes: Vec<(u8, Block)> = pci_bridges
            .present
            .iter()
            .filter_map(|n| {
                let mut children = Vec::new();
                for (_, members) in groups.iter().filter(|(b, _)| b == n) {
                    for i in members {
                        children.extend(gpus[*i].blocks_of(|f| !gone[*i].contains(&f))?);
                    }
                }
                let w = bridge_window(&children)?;
                Some((
                    *n,
                    Block {
                        size: w.size.max(pad),
                        align: w.align.max(pad),
                    },
                ))
            })
            .collect();
        pci_bridge_walk(&nodes)
    };
    let mut abandoned = false;
    let used_end = loop {
        if let Some(end) = pack(&gone) {
            break end;
        }
        let walk = bridge_walk(&gone);
        let at = |g: usize| match gpus[g].attach {
            Attach::Bridge(n) => walk.iter().position(|w| *w == n),
            _ => None,
        };
        let pick = (0..units.len())
            .filter(|u| {
                let (g, f, _) = units[*u];
                !gone[g].contains(&f) && gpus[g].attach != Attach::Bus0
            })
            .max_by(|a, b| {
                let (ga, gb) = (units[*a].0, units[*b].0);
                units[*a].2.cmp(&units[*b].2).then_with(|| {
                    if gpus[ga].attach == Attach::RootPort {
                        (rank[ga], a).cmp(&(rank[gb], b))
                    } else {
                        at(ga).cmp(&at(gb)).then_with(|| b.cmp(a))
                    }
                })
            });
        match pick {
            Some(u) => {
                gone[units[u].0].push(units[u].1);
            }
            None => {
                abandoned = true;
                break base;
            }
        }
    };
    // D8: rejections that leave nothing at all in the 64-bit aperture (no
    // BAR and no port padding: every 64-bit device rejected, no virtio or
    // other 64-bit BAR on bus 0, a window of 32 GiB or less so that no
    // port is padded) end with the whole root bus abandoned too, as in D4.
    // Lab boots of campaign seed 20261203 record 1256 (OVMF 2025.02, q35,
    // 4 x 256 GiB single-BAR devices on root ports, a 32 GiB window) and
    // of its variants: abandoned with 1-4 devices, with or without empty
    // ports, on 2022.11, 2025.02 and 2026.08, QEMU 7.2 and 10.0, on root
    // ports, behind a pci-bridge and on Proxmox's `pcie=0` bridges; not
    // abandoned once a virtio NIC's 64-bit BAR sits on bus 0, a GPU-shaped
    // device keeps its 32 MiB function, 16 GiB devices leave two placed,
    // or a 64 GiB `X-PciMmio64Mb` pads the ports (records 0011 and 1222
    // are the same case).
    let nothing_left = !abandoned && used_end == base && gone.iter().any(|g| !g.is_empty());
    abandoned |= nothing_left;
    // A window beyond the vCPU's width (an untrusted width grown to hold a
    // large X-PciMmio64Mb) is used, but the guest cannot reach it.
    let reachable = base.saturating_add(size) <= s.addressable();
    let fates = (0..n)
        .map(|i| {
            let programmed = !abandoned && gone[i].is_empty();
            Fate {
                programmed,
                usable: programmed && reachable,
            }
        })
        .collect();
    Ok(FwBoot {
        origin,
        width,
        aperture: Range::new(base, base.saturating_add(size) - 1),
        used: (!abandoned && used_end > base).then_some((base, used_end - 1)),
        gpus: fates,
        abandoned,
        nothing_left,
        left: left_unprogrammed(gpus, abandoned, base, used_end),
        realloc_rounds: false,
    })
}

/// The order OVMF's search for the largest consumer walks the
/// pci-bridges behind one parent (`nodes`: each bridge with its window,
/// in device order, the order their resource nodes are inserted): edk2
/// PciBusDxe PciResourceSupport.c `InsertResourceNode` puts a node at the
/// head of its parent's list and moves it down past every node of larger
/// alignment, and past one of equal alignment while its own remainder
/// (`Length & Alignment`, the length past the last full alignment) is not
/// zero and smaller than that node's; `GetMaxResourceConsumerDevice` walks
/// that list and `GetLargerConsumerDevice` keeps the later of two equals.
/// A bridge's length is its children packed at 1 MiB granularity, not
/// rounded to its alignment (`CalculateResourceAperture`), so a bridge
/// with more BARs usually has the larger remainder and comes first.
/// Campaign seed 20261203 records 1092 and 1119 (OVMF 2026.08 and
/// 2022.11, Proxmox's `pcie=0` q35, 16 GiB GPUs on pci.0 with the virtio
/// NIC and on pci.2): the GPUs of pci.2 are rejected first, the earlier
/// one of them first (08:0d, then 08:0e), then pci.0's earliest (06:10).
fn pci_bridge_walk(nodes: &[(u8, Block)]) -> Vec<u8> {
    let rest = |b: &Block| b.size & b.align.wrapping_sub(1);
    let mut list: Vec<(u8, Block)> = Vec::new();
    for (n, b) in nodes {
        let at = list
            .iter()
            .position(|(_, t)| {
                b.align > t.align || (b.align == t.align && (rest(b) == 0 || rest(b) >= rest(t)))
            })
            .unwrap_or(list.len());
        list.insert(at, (*n, *b));
    }
    list.into_iter().map(|(n, _)| n).collect()
}

/// What the kernel finds on the root bus after OVMF: the span it used,
/// and each BAR of a bus-0 device it left unprogrammed (only when it
/// abandoned the bus, D4), which the kernel then places itself. Campaign
/// record 0016: OVMF 2022.11 on i440fx abandons the bus; the kernel places
/// the 256 GiB BAR in QEMU's window. A rejected device behind a port keeps
/// the port's padded window, which the kernel claims: it stays short
/// without realloc (FIELD-NOTES §2).
fn left_unprogrammed(gpus: &[GpuBars], abandoned: bool, base: u64, used_end: u64) -> Vec<Left> {
    let mut left = Vec::new();
    if !abandoned && used_end > base {
        left.push(Left::window(base, used_end - base, Vec::new(), None));
    }
    if abandoned {
        for (i, g) in gpus.iter().enumerate() {
            if g.attach == Attach::Bus0 {
                left.extend(g.bars.iter().map(|b| Left::bar(0, *b, vec![i])));
            }
        }
    }
    left
}
