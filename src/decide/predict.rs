//! The guest as the model sees it (`Model`): its setup, as far as the
//! evidence or the configuration shows it, its GPUs as the firmware and
//! the kernel place them, and the next boot predicted for a setup: does
//! QEMU start, does the firmware come up, how many GPUs does it place, and
//! can the guest kernel place the rest.

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::sizing::{align_up, bridge_window, fits, max_align, packed_size, Block};
use crate::decide::window::{Attach, Boot, GpuBars, NoBoot, Setup};

/// The guest as the model sees it: its setup, its GPUs as the firmware and
/// the kernel place them, and what had to be assumed.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub setup: Setup,
    pub firmware_gpus: Vec<GpuBars>,
    /// Each GPU's window as the kernel sizes it, in port order.
    pub kernel_gpus: Vec<Block>,
    /// The blocks the GPUs' space is judged by (`need_blocks`): what the
    /// diagnosis of a predicted boot packs, as `check`'s diagnosis packs
    /// what it reads.
    pub need: Vec<Block>,
    pub realloc: bool,
    /// Facts not in the evidence, taken at a default.
    pub assumed: Vec<&'static str>,
    /// The boot predicted for the setup as inferred.
    pub boot: Option<Boot>,
    /// That prediction matches the window the guest was given.
    pub agrees: bool,
}

/// The outcome of one predicted boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Predicted {
    pub kind: DiagnosisKind,
    /// GPUs left with an unassigned 64-bit BAR.
    pub unassigned: usize,
}

impl Model {
    /// A model of a known setup (`plan`, tests): nothing assumed, no
    /// observation to agree with. `None` when a GPU's window overflows.
    pub(crate) fn new(setup: Setup, firmware_gpus: Vec<GpuBars>, realloc: bool) -> Option<Model> {
        let kernel_gpus = firmware_gpus
            .iter()
            .map(|g| kernel_window(&g.bars))
            .collect::<Option<Vec<_>>>()?;
        let boot = setup.boot(&firmware_gpus).ok();
        let need = need_blocks(&firmware_gpus, &kernel_gpus)?;
        Some(Model {
            setup,
            firmware_gpus,
            kernel_gpus,
            need,
            realloc,
            assumed: Vec::new(),
            boot,
            agrees: true,
        })
    }

    /// The next boot with `setup` and realloc as given.
    pub(crate) fn predict(&self, setup: &Setup, realloc: bool) -> Result<Predicted, NoBoot> {
        let boot = setup.boot(&self.firmware_gpus)?;
        let n = self.kernel_gpus.len();
        if boot.placed >= n {
            return Ok(Predicted {
                kind: DiagnosisKind::Ok,
                unassigned: 0,
            });
        }
        let Some(crs) = boot.crs else {
            return Ok(Predicted {
                kind: DiagnosisKind::PhysBitsTooSmall,
                unassigned: n - boot.placed,
            });
        };
        if let (true, Some(r)) = (realloc, &boot.realloc_gpus) {
            // The kernel's rounds as modelled for this firmware's layout.
            let placed = r.iter().filter(|p| **p).count();
            if placed >= n {
                return Ok(Predicted {
                    kind: DiagnosisKind::Ok,
                    unassigned: 0,
                });
            }
            // The kernel re-placed and GPUs stayed short: the window's
            // room as the kernel finds it is what failed, unless the
            // space reaches past the CPU (`check`: realloc active, no room
            // left where the kernel looked).
            let kind = self.short_kind(setup, crs);
            return Ok(Predicted {
                kind,
                unassigned: n - placed,
            });
        }
        let unassigned = n - if realloc {
            self.realloc_placed(&boot, crs)
                .iter()
                .filter(|p| **p)
                .count()
        } else {
            boot.placed
        };
        if unassigned == 0 {
            return Ok(Predicted {
                kind: DiagnosisKind::Ok,
                unassigned: 0,
            });
        }
        // Room the firmware left unused is the firmware's only where the
        // kernel was not asked to place (`check` never says it with
        // realloc active).
        let kind = match self.short_kind(setup, crs) {
            DiagnosisKind::WindowTooSmall if !realloc && fits(&self.need, &[crs]) => {
                DiagnosisKind::FirmwareLeftUnassigned
            }
            k => k,
        };
        Ok(Predicted { kind, unassigned })
    }

    /// Why GPUs stay short in a boot whose kernel is offered `crs`, by the
    /// rule `check`'s diagnosis applies to what it reads
    /// (`diagnosis::classify`): the GPUs' space packed from the window's
    /// start ends past what the CPU reaches: phys bits; else the window
    /// (the caller tells a window with room the firmware left unused).
    /// Campaign seed 20261203 record 0001 (7 x 256 GiB at 40 bits, a 2 GiB
    /// window at 256 GiB, realloc): `check` says phys bits, which the first
    /// hint was already.
    fn short_kind(&self, setup: &Setup, crs: crate::model::range::Range) -> DiagnosisKind {
        let limit = 1u64.checked_shl(setup.phys_bits).unwrap_or(u64::MAX);
        let needed_end = align_up(crs.start, max_align(&self.need))
            .and_then(|s| s.checked_add(packed_size(&self.need)?));
        if needed_end.is_none_or(|e| e > limit) {
            DiagnosisKind::PhysBitsTooSmall
        } else {
            DiagnosisKind::WindowTooSmall
        }
    }

    /// Each GPU after `boot`: (firmware programmed it, the kernel has it
    /// assigned), the same count as `predict`'s.
    pub(crate) fn placement(&self, boot: &Boot, realloc: bool) -> Vec<(bool, bool)> {
        let n = self.kernel_gpus.len();
        let mut out: Vec<(bool, bool)> =
            boot.gpus.iter().map(|g| (g.programmed, g.usable)).collect();
        out.resize(n, (false, false));
        if let (true, Some(crs)) = (realloc, boot.crs) {
            for (o, p) in out.iter_mut().zip(self.realloc_placed(boot, crs)) {
                o.1 = p;
            }
            return out;
        }
        out
    }

    /// Each GPU after a boot with `pci=realloc`: the kernel's rounds where
    /// they are modelled (`Boot::realloc_gpus`), else a fresh packing of
    /// the kernel's windows in `crs`, the first that fit in port order,
    /// together with what the firmware placed. GPUs behind one pci-bridge
    /// are one window, placed whole or not at all: realloc releases the
    /// bridge's window (campaign record 0008: OVMF placed one of four GPUs
    /// behind the bridge; with realloc the kernel placed none).
    fn realloc_placed(&self, boot: &Boot, crs: crate::model::range::Range) -> Vec<bool> {
        let n = self.kernel_gpus.len();
        if let Some(r) = &boot.realloc_gpus {
            let mut v = r.clone();
            v.resize(n, false);
            return v;
        }
        let mut placed: Vec<bool> = boot.gpus.iter().map(|g| g.usable).collect();
        placed.resize(n, false);
        // Nothing failed to assign: realloc releases nothing and the
        // firmware's placement stands (campaign record 0156: OVMF 2022.11
        // placed 8 x 256 GiB behind a bridge; with realloc all 8 kept).
        if placed.iter().all(|p| *p) {
            return placed;
        }
        // Units: a GPU on its own, or every GPU behind one bridge.
        let mut units: Vec<(Vec<usize>, Option<Block>)> = Vec::new();
        for (i, g) in self.firmware_gpus.iter().enumerate().take(n) {
            match g.attach {
                Attach::Bridge(b) => {
                    let at = units.iter().position(|(m, _)| {
                        m.first()
                            .is_some_and(|j| self.firmware_gpus[*j].attach == Attach::Bridge(b))
                    });
                    match at {
                        Some(u) => units[u].0.push(i),
                        None => units.push((vec![i], None)),
                    }
                }
                _ => units.push((vec![i], Some(self.kernel_gpus[i]))),
            }
        }
        for (members, block) in units.iter_mut() {
            if block.is_none() {
                let bars: Option<Vec<Block>> = members
                    .iter()
                    .flat_map(|i| self.firmware_gpus[*i].bars.iter().map(|b| Block::bar(*b)))
                    .collect();
                *block = bars.and_then(|b| bridge_window(&b));
            }
        }
        let blocks: Option<Vec<Block>> = units.iter().map(|(_, b)| *b).collect();
        let k = blocks.map_or(0, |b| {
            (0..=b.len())
                .rev()
                .find(|k| fits(&b[..*k], &[crs]))
                .unwrap_or(0)
        });
        let mut fresh = vec![false; n];
        for (u, (members, _)) in units.iter().enumerate() {
            for i in members {
                fresh[*i] = u < k;
            }
        }
        // A bridge's members follow the fresh packing; a GPU on its own
        // port keeps the firmware's placement, and the fresh packing's
        // count stands for the rest (as many as fit).
        let bridged = |i: usize| matches!(self.firmware_gpus[i].attach, Attach::Bridge(_));
        for i in (0..n).filter(|i| bridged(*i)) {
            placed[i] = fresh[i];
        }
        let own = (0..n).filter(|i| !bridged(*i));
        let have = own.clone().filter(|i| placed[*i]).count();
        let want = own.clone().filter(|i| fresh[*i]).count();
        let mut extra = want.saturating_sub(have);
        for i in own {
            if extra == 0 {
                break;
            }
            if !placed[i] {
                placed[i] = true;
                extra -= 1;
            }
        }
        placed
    }
}

/// The blocks the GPUs' space is judged by, as `check` reads them
/// (`diagnosis::bus_spaces`, `sizing::top_blocks`): a GPU on the root bus
/// has no bridge window, so each of its BARs is a block of its own; a GPU
/// on its own root port brings that port's window, and the GPUs behind one
/// pci-bridge that bridge's one window for all their BARs, as the kernel
/// sizes them. Campaign seed 20261203 record 0205 (7 x 128 GiB + 32 MiB
/// on Proxmox's i440fx layout, four on bus 0 and three behind pci.2, 42
/// bits, a 1 TiB window at 3 TiB): 4 x 128 GiB and pci.2's window fit,
/// and `check` says the firmware left them (a window per GPU, 1.75 TiB,
/// would reach past 4 TiB).
fn need_blocks(gpus: &[GpuBars], kernel_gpus: &[Block]) -> Option<Vec<Block>> {
    let mut out = Vec::new();
    let mut bridges: Vec<u8> = Vec::new();
    for (g, k) in gpus.iter().zip(kernel_gpus) {
        match g.attach {
            Attach::Bus0 => {
                for b in &g.bars {
                    out.push(Block::bar(*b)?);
                }
            }
            Attach::RootPort => out.push(*k),
            Attach::Bridge(n) if !bridges.contains(&n) => {
                bridges.push(n);
                let bars: Vec<Block> = gpus
                    .iter()
                    .filter(|o| o.attach == Attach::Bridge(n))
                    .flat_map(|o| o.bars.iter().map(|b| Block::bar(*b)))
                    .collect::<Option<_>>()?;
                out.push(bridge_window(&bars)?);
            }
            Attach::Bridge(_) => {}
        }
    }
    Some(out)
}

/// A GPU's root port window as the kernel sizes it.
fn kernel_window(bars: &[u64]) -> Option<Block> {
    let blocks: Vec<Block> = bars.iter().map(|s| Block::bar(*s)).collect::<Option<_>>()?;
    bridge_window(&blocks)
}
