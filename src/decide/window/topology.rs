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

/// Whose bus layout a VM has, beyond where its GPUs sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Only what the GPUs' attachments say.
    Plain,
    /// qemu-server's (proxmox.rs): its pci-bridges are there whatever they
    /// hold, and the root ports it makes for hostpci4 and later come first.
    Proxmox,
}

/// The pci-bridges of a VM besides its root ports, each QEMU's
/// `pci-bridge`: a standard hot-plug controller (SHPC, on for machine
/// types after 2.9: hw/core/machine.c hw_compat_2_9, pci_bridge_dev.c
/// `shpc` default true, v9.0.0), so both firmwares treat it as a hot-plug
/// bus (SeaBIOS pciinit.c pci_bus_hotplug_support: HOTPLUG_SHPC, rel-1.16.3
/// L800-835; edk2 PciBusDxe PciHotPlugSupport.c IsPciHotPlugBus: IsSHPC,
/// HEAD L449-480) and pads it when it is empty; and a 64-bit
/// non-prefetchable BAR 0 for the controller (pci_bridge_dev_realize,
/// `PCI_BASE_ADDRESS_MEM_TYPE_64`) on its parent bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PciBridges {
    /// Every pci-bridge, by the number `Attach::Bridge` names, the ones
    /// no device sits behind too.
    pub present: Vec<u8>,
    /// On bus 0 (i440fx), not behind a PCIe-to-PCI bridge (q35's
    /// i82801b11 `pcidmi`, which is no hot-plug bus itself: SeaBIOS
    /// checks it for SHPC, which it has not; PciBusDxe neither).
    pub on_bus0: bool,
}

impl PciBridges {
    /// The bridges the GPUs' attachments name and nothing else: behind a
    /// PCIe-to-PCI bridge on q35 (the campaign's `bridge` topology), on
    /// bus 0 on i440fx.
    pub(crate) fn of_gpus(gpus: &[GpuBars], q35: bool) -> PciBridges {
        PciBridges {
            present: bridges(gpus).into_iter().map(|(b, _)| b).collect(),
            on_bus0: !q35,
        }
    }

    /// The size of the SHPC BAR as SeaBIOS takes it (`PCI_DEVICE_MEM_MIN`,
    /// pciinit.c L28: 4 KiB; QEMU's BAR is smaller).
    pub(crate) const SHPC_BAR: u64 = 4 << 10;
}

/// H5: a libvirt domain's empty hot-plug ports, the `pcie-root-port`
/// controllers (their indexes) no device's `<address bus=...>` names
/// (libvirt formatdomain, "Controllers": a root port's index is the bus
/// number behind it).
pub(crate) fn libvirt_empty_ports(root_ports: &[u32], used_buses: &[u32]) -> usize {
    root_ports
        .iter()
        .filter(|i| !used_buses.contains(i))
        .count()
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
    /// The PCI function each of `bars` sits in (same length; empty: all in
    /// function 0). A real GPU has its 64-bit BARs in function 0; the
    /// campaign's stand-ins put the small one in function 1, and OVMF
    /// rejects per function (D3), so the two can part.
    pub funcs: Vec<u8>,
    pub attach: Attach,
}

impl GpuBars {
    /// A GPU whose 64-bit BARs are all in function 0.
    #[cfg(test)]
    pub(crate) fn new(bars: Vec<u64>, attach: Attach) -> GpuBars {
        GpuBars {
            bars,
            funcs: Vec::new(),
            attach,
        }
    }

    /// A GPU on its own root port.
    #[cfg(test)]
    pub(crate) fn port(bars: Vec<u64>) -> GpuBars {
        GpuBars::new(bars, Attach::RootPort)
    }

    /// The function of BAR `k`.
    fn func(&self, k: usize) -> u8 {
        self.funcs.get(k).copied().unwrap_or(0)
    }

    /// Its functions, in order, each with the sizes of its BARs: what
    /// OVMF can reject one at a time.
    pub(crate) fn functions(&self) -> Vec<(u8, Vec<u64>)> {
        let mut out: Vec<(u8, Vec<u64>)> = Vec::new();
        for (k, size) in self.bars.iter().enumerate() {
            let f = self.func(k);
            match out.iter_mut().find(|(g, _)| *g == f) {
                Some((_, v)) => v.push(*size),
                None => out.push((f, vec![*size])),
            }
        }
        out.sort_by_key(|(f, _)| *f);
        out
    }

    /// Its BARs as blocks, most aligned first (the order both firmwares
    /// place them in).
    pub(crate) fn blocks(&self) -> Option<Vec<Block>> {
        self.blocks_of(|_| true)
    }

    /// The blocks of the BARs in the functions `keep` accepts.
    pub(crate) fn blocks_of(&self, keep: impl Fn(u8) -> bool) -> Option<Vec<Block>> {
        let mut b: Vec<Block> = self
            .bars
            .iter()
            .enumerate()
            .filter(|(k, _)| keep(self.func(*k)))
            .map(|(_, s)| Block::bar(*s))
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
