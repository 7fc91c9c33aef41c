//! What qemu-server (Proxmox VE) makes of a VM's configuration, as far as
//! the window depends on it: where each `hostpciN` is attached (G6), which
//! of the q35 machine's root ports stay empty (D2), and how a VM with
//! memory hot-plug boots (G10). Read in qemu-server's `PVE/QemuServer/`
//! (`PCI.pm`, `Memory.pm`) and its `pve-q35-4.0.cfg`.

use super::qemu::GIB;
use super::{Attach, PciBridges};

/// G10: with `hotplug: memory`, Memory.pm `config` boots `-m
/// size=1024,slots=255,maxmem=MAX` and adds the rest as DIMMs.
pub(crate) const HOTPLUG_STATIC_RAM: u64 = GIB;
pub(crate) const HOTPLUG_SLOTS: u32 = 255;

/// G10: MAX, Memory.pm `get_max_mem`: the vCPU's width (`phys-bits`, else
/// the host's, at most 40 bits for a named model), rounded down to even,
/// as 2^(bits-21) MiB, at most 4 TiB. `phys_bits`: the configuration's
/// `phys-bits` (the host's width for `phys-bits=host`); `host_vcpu`: the
/// model is `host` or `max`.
pub(crate) fn max_mem(phys_bits: Option<u32>, host_vcpu: bool, host_bits: u32) -> u64 {
    let bits = match phys_bits {
        Some(b) => b,
        None if host_vcpu => host_bits,
        None => host_bits.min(40),
    } & !1;
    let max_mib = (1u64 << bits.saturating_sub(21)).min(4 << 20);
    max_mib << 20
}

/// Root ports of q35 that pve-q35-4.0.cfg always has (`ich9-pcie-port-1`
/// to `-4`); the ones no hostpci0-3 with `pcie=1` takes are empty hot-plug
/// ports (D2), which OVMF pads.
const Q35_PORTS: u32 = 4;

/// G6: where qemu-server attaches `hostpciN` (PCI.pm): with `pcie=1` on
/// q35 a root port of its own (`ich9-pcie-port-N+1` for N < 4, made for
/// the rest); with `pcie=0` on q35 behind the pci-bridges `pci.0`
/// (hostpci0-3) and `pci.2` (4-15) under `pcidmi`; on i440fx hostpci0-3 on
/// bus 0, 4-15 behind the `pci.2` bridge.
pub(crate) fn attach(q35: bool, pcie: bool, index: u32) -> Attach {
    match (q35, pcie, index) {
        (true, true, _) => Attach::RootPort,
        (true, false, i) if i < Q35_PORTS => Attach::Bridge(0),
        (false, _, i) if i < Q35_PORTS => Attach::Bus0,
        _ => Attach::Bridge(2),
    }
}

/// G6b: the pci-bridges qemu-server gives every VM, whatever it holds: on
/// q35 `pci.0` to `pci.3` behind `pcidmi` (usr/pve-q35-4.0.cfg); on
/// i440fx `pci.1` and `pci.2` on bus 0 (QemuServer.pm config_to_command:
/// `$bridges->{1}`, `{2}` for machine types 2.3 and later).
pub(crate) fn bridges(q35: bool) -> PciBridges {
    if q35 {
        PciBridges {
            present: vec![0, 1, 2, 3],
            on_bus0: false,
        }
    } else {
        PciBridges {
            present: vec![1, 2],
            on_bus0: true,
        }
    }
}

/// A virtio-pci device's modern BAR: four 4 KiB regions, 64-bit
/// prefetchable (QEMU hw/virtio/virtio-pci.c virtio_pci_device_plugged,
/// `modern_mem_bar_idx`, v9.0.0).
pub(crate) const VIRTIO_BAR: u64 = 16 << 10;

/// G6c: where qemu-server puts a VM's virtio devices with a modern BAR
/// (net0-5 at 0x12-0x17, balloon0 at 0x3, scsihw0 at 0x5, virtio0-5 at
/// 0xa-0xf: PCI.pm get_pci_addr_map, all on bus 0 of its map): `pci.0`,
/// which is bus 0 on i440fx and a pci-bridge behind `pcidmi` on q35.
pub(crate) fn virtio_attach(q35: bool) -> Attach {
    if q35 {
        Attach::Bridge(0)
    } else {
        Attach::Bus0
    }
}

/// D2: the empty hot-plug root ports, given each `hostpciN`'s (pcie, N).
pub(crate) fn empty_ports(q35: bool, hostpci: impl Iterator<Item = (bool, u32)>) -> usize {
    if !q35 {
        return 0;
    }
    let taken = hostpci.filter(|(pcie, i)| *pcie && *i < Q35_PORTS).count() as u32;
    Q35_PORTS.saturating_sub(taken) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_servers_attachment_ports_and_hotplug_maximum() {
        assert_eq!(attach(true, true, 7), Attach::RootPort);
        assert_eq!(attach(true, false, 3), Attach::Bridge(0));
        assert_eq!(attach(true, false, 4), Attach::Bridge(2));
        assert_eq!(attach(false, true, 0), Attach::Bus0);
        assert_eq!(attach(false, false, 4), Attach::Bridge(2));
        assert_eq!(empty_ports(true, [(true, 0)].into_iter()), 3);
        assert_eq!(
            empty_ports(true, [(true, 0), (true, 5), (false, 1)].into_iter()),
            3
        );
        assert_eq!(empty_ports(true, (0..6).map(|i| (true, i))), 0);
        assert_eq!(empty_ports(false, [(true, 0)].into_iter()), 0);
        // 46 bits: 2^25 MiB, capped at 4 TiB; a named model at most 40
        // bits: 512 GiB; 39 bits round down to 38: 128 GiB.
        assert_eq!(max_mem(None, true, 46), 4 << 40);
        assert_eq!(max_mem(None, false, 46), 512 << 30);
        assert_eq!(max_mem(Some(39), false, 46), 128 << 30);
        assert_eq!(max_mem(None, false, 36), 32 << 30);
    }
}
