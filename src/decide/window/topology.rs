//! Where each GPU sits on the guest's PCI tree, and the window its parent
//! bridge gets from each firmware: a root port each (Proxmox `pcie=1`,
//! libvirt's default on q35), several behind one pci-bridge (Proxmox
//! `pcie=0` on q35: behind `pcidmi` -> `pci.0`/`pci.2`, pve-q35-4.0.cfg), or
//! on the root bus (i440fx, Proxmox hostpci0-3 on `pc`).

use crate::decide::sizing::{align_up, Block};

/// Where a GPU is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// Its own hot-plug root port.
    RootPort,
    /// Behind the pci-bridge numbered so, with the other GPUs there.
    Bridge(u8),
    /// On the root bus (bus 0).
    Bus0,
}

/// `--topology`: root-ports, bridge, bus0.
pub(crate) fn parse_topology(s: &str) -> Option<Attach> {
    match s {
        "root-ports" | "root-port" => Some(Attach::RootPort),
        "bridge" => Some(Attach::Bridge(0)),
        "bus0" => Some(Attach::Bus0),
        _ => None,
    }
}

/// One GPU: its 64-bit prefetchable BARs and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GpuBars {
    pub bars: Vec<u64>,
    pub attach: Attach,
}

impl GpuBars {
    /// A GPU on its own root port.
    #[cfg(test)]
    pub(crate) fn port(bars: Vec<u64>) -> GpuBars {
        GpuBars {
            bars,
            attach: Attach::RootPort,
        }
    }

    /// Its BARs as blocks, most aligned first (the order both firmwares
    /// place them in).
    pub(crate) fn blocks(&self) -> Option<Vec<Block>> {
        let mut b: Vec<Block> = self
            .bars
            .iter()
            .map(|s| Block::bar(*s))
            .collect::<Option<_>>()?;
        b.sort_by(|x, y| y.align.cmp(&x.align).then(y.size.cmp(&x.size)));
        Some(b)
    }

    /// The root port's window as OVMF sizes it: the BARs packed largest
    /// first, aligned to the largest (docs/firmware-window.md, "Will N
    /// devices fit?"; lab L19), at 1 MiB granularity.
    pub(crate) fn port_window(&self) -> Option<Block> {
        bridge_window(&self.blocks()?)
    }
}

/// OVMF's window of one bridge over these children (D5, lab L19 and boot
/// B9; edk2 PciBusDxe PciResourceSupport.c CalculateResourceAperture): the
/// children at their own alignment, largest first, 1 MiB granularity,
/// aligned to the largest child.
pub(crate) fn bridge_window(children: &[Block]) -> Option<Block> {
    let mut c = children.to_vec();
    c.sort_by(|x, y| y.align.cmp(&x.align).then(y.size.cmp(&x.size)));
    let align = c.first()?.align.max(1 << 20);
    let size = c
        .iter()
        .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))?;
    Some(Block {
        size: align_up(size, 1 << 20)?,
        align,
    })
}

/// The groups of GPUs behind one bridge, in GPU order: (bridge, members).
pub(crate) fn bridges(gpus: &[GpuBars]) -> Vec<(u8, Vec<usize>)> {
    let mut out: Vec<(u8, Vec<usize>)> = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        if let Attach::Bridge(b) = g.attach {
            match out.iter_mut().find(|(n, _)| *n == b) {
                Some((_, m)) => m.push(i),
                None => out.push((b, vec![i])),
            }
        }
    }
    out
}
