//! QEMU's memory map (x86 `pc` machines, hw/i386/pc.c at v7.2.0 and
//! v10.0.0): where RAM is split at 4 GiB, where RAM above 4 GiB goes on an
//! AMD vCPU, where the 64-bit PCI hole starts (above RAM, or above the
//! memory hot-plug area), which e820 entries the firmware sees, and
//! whether QEMU starts at all.

use super::Setup;
use crate::decide::sizing::align_up;
use crate::model::platform::CpuVendor;
use crate::model::range::FOUR_GIB;

pub(crate) const GIB: u64 = 1 << 30;
pub(crate) const TIB: u64 = 1 << 40;
/// QEMU reserves [0xFD_0000_0000, 1 TiB) on AMD vCPUs (HyperTransport).
pub(crate) const AMD_HT_START: u64 = 0xFD_0000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Machine {
    Q35,
    I440fx,
}

impl Machine {
    /// QEMU's default `pci-hole64-size` (B2: hw/pci-host/q35.c
    /// `Q35_PCI_HOST_HOLE64_SIZE_DEFAULT (1ULL << 35)` L45, i440fx.c
    /// `I440FX_PCI_HOST_HOLE64_SIZE_DEFAULT (1ULL << 31)` v7.2.0 L60,
    /// v10.2.2 L69; no compat property changes it, 7.2.0 to 10.2.2).
    pub(crate) fn default_hole64(self) -> u64 {
        match self {
            Machine::Q35 => 32 * GIB,
            Machine::I440fx => 2 * GIB,
        }
    }
}

/// A8: the address widths QEMU accepts for a 64-bit vCPU; outside them it
/// exits ("phys-bits should be between 32 and 52", target/i386/cpu.c
/// x86_cpu_realizefn, `TARGET_PHYS_ADDR_SPACE_BITS`).
pub(crate) const PHYS_BITS_ACCEPTED: std::ops::RangeInclusive<u32> = 32..=52;

/// A3/H3: the width of a vCPU that takes the host's (`-cpu host`,
/// `host-phys-bits=on`), capped by `host-phys-bits-limit` when one is set
/// (target/i386/host-cpu.c, host_cpu_adjust_phys_bits).
pub(crate) fn host_phys_bits(host: u32, limit: Option<u32>) -> u32 {
    limit.map_or(host, |l| host.min(l))
}

/// A6m: the GuestPhysBits QEMU 9.1+ sets under KVM when none is given
/// and the width is known at the accelerator's realize
/// (target/i386/kvm/kvm-cpu.c kvm_set_guest_phys_bits, v10.0.13 L21-40):
/// KVM's value, at most phys-bits, at most host-phys-bits-limit. KVM's
/// (Linux 6.10 and later, arch/x86/kvm/cpuid.c, leaf 0x80000008 with TDP)
/// is the host's MAXPHYADDR, at most 48 where TDP has four levels (taken
/// here: a host with 5-level EPT/NPT may report up to 52).
pub(crate) fn kvm_guest_phys_bits(host: u32, phys_bits: u32, limit: Option<u32>) -> u32 {
    let kvm = host.min(48);
    limit.map_or(kvm, |l| kvm.min(l)).min(phys_bits)
}

/// B3/B9: the memory hot-plug area QEMU reserves above RAM for `-m
/// ...,slots=S,maxmem=M` booted with `ram`: M - ram, plus 1 GiB a slot
/// for DIMM alignment (hw/i386/pc.c, pc_memory_init: `maxram_size -
/// ram_size`, `+= 1 GiB * ram_slots` with `enforce_aligned_dimm`); none
/// when maxmem is not above the RAM.
pub(crate) fn device_memory(maxmem: Option<u64>, ram: u64, slots: u32) -> u64 {
    match maxmem {
        Some(m) if m > ram => m - ram + u64::from(slots) * GIB,
        _ => 0,
    }
}

impl Machine {
    /// B1: from how much RAM QEMU splits it at 4 GiB, and how much it then
    /// keeps below (pc_q35.c pc_q35_init `lowmem`, v7.2.0 L150 ... v10.2.2
    /// L161; pc_piix.c pc_init1 `max_ram_below_4g` 0xE000_0000 and the
    /// gigabyte_align cut to 3 GiB, v7.2.0 L134 ... v10.2.2 L160; no change
    /// in between).
    fn lowmem(self) -> (u64, u64) {
        match self {
            Machine::Q35 => (0xb000_0000, 2 << 30),
            Machine::I440fx => (0xe000_0000, 3 << 30),
        }
    }
}

/// Where guest RAM ends once QEMU has split it at 4 GiB (B1: pc_q35.c
/// keeps 2 GiB below from 2.75 GiB on, pc_piix.c 3 GiB from 3.5 GiB on).
pub(crate) fn ram_end(machine: Machine, ram: u64) -> u64 {
    let (threshold, below) = machine.lowmem();
    if ram >= threshold {
        FOUR_GIB + (ram - below)
    } else {
        ram
    }
}

/// The memory map the firmware sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryMap {
    /// Where RAM ends, after any move to 1 TiB.
    pub ram_end: u64,
    /// `pc_pci_hole64_start`.
    pub hole64_start: u64,
    /// `etc/reserved-memory-end`, published when there is a hot-plug area.
    pub reserved_end: Option<u64>,
    /// e820 entries, [start, end).
    pub e820: Vec<(u64, u64)>,
    /// The RAM among them.
    pub ram: Vec<(u64, u64)>,
}

impl MemoryMap {
    /// Where the RAM below 4 GiB ends (the first e820 entry).
    pub(crate) fn below_4g(&self) -> u64 {
        self.ram.first().map_or(0, |r| r.1)
    }

    /// The e820 entries that are not RAM (QEMU's AMD HT range).
    pub(crate) fn reserved(&self) -> Vec<(u64, u64)> {
        self.e820
            .iter()
            .filter(|e| !self.ram.contains(e))
            .copied()
            .collect()
    }

    /// The RAM the guest kernel uses: all of it, or what lies below
    /// `guest_mem` when `mem=` limits it (Linux `parse_memopt` removes RAM
    /// from that address up; the campaign boots with mem=1G: lab record
    /// 0001, SeaBIOS 1.16.3 at 41 bits, a port window over RAM beyond it
    /// claimed).
    pub(crate) fn kernel_ram(&self, guest_mem: Option<u64>) -> Vec<(u64, u64)> {
        let limit = guest_mem.unwrap_or(u64::MAX);
        self.ram
            .iter()
            .filter(|(s, _)| *s < limit)
            .map(|(s, e)| (*s, (*e).min(limit)))
            .collect()
    }

    /// Any e820 entry overlapping [start, start + size) (SeaBIOS
    /// `e820_is_used`).
    pub(crate) fn e820_used(&self, start: u64, size: u64) -> Option<(u64, u64)> {
        self.e820
            .iter()
            .copied()
            .find(|(s, e)| start.wrapping_add(size) > *s && start < *e)
    }
}

impl Setup {
    pub(crate) fn hole64_size(&self) -> u64 {
        self.hole64.unwrap_or(self.machine.default_hole64())
    }

    pub(crate) fn addressable(&self) -> u64 {
        1u64.checked_shl(self.phys_bits).unwrap_or(u64::MAX)
    }

    /// B3/B9: the end of RAM above 4 GiB, or of the hot-plug area above it
    /// (`pc_pci_hole64_start`, with `pc_get_device_memory_range`: the area
    /// is maxmem - ram plus 1 GiB per slot, from the next GiB).
    fn hole_start_from(&self, above_start: u64) -> (u64, Option<u64>) {
        let above = self.ram_end.saturating_sub(FOUR_GIB);
        let ram_top = above_start.saturating_add(above);
        if self.device_memory > 0 {
            let end = align_up(
                align_up(ram_top, GIB)
                    .unwrap_or(u64::MAX)
                    .saturating_add(self.device_memory),
                GIB,
            )
            .unwrap_or(u64::MAX);
            (end, Some(end))
        } else {
            (align_up(ram_top, GIB).unwrap_or(u64::MAX), None)
        }
    }

    /// The memory map: B4 (AMD relocation to 1 TiB when the hole would
    /// reach the HT range, QEMU 7.1+ with machine types 7.1+), B5 (the HT
    /// e820 entry), B9 (reserved-memory-end).
    pub(crate) fn memory_map(&self) -> MemoryMap {
        let amd = self.vendor == Some(CpuVendor::Amd);
        let (start4g, _) = self.hole_start_from(FOUR_GIB);
        let relocates = amd
            && self.qemu.amd_relocation
            && start4g.saturating_add(self.hole64_size()).saturating_sub(1) >= AMD_HT_START;
        let above_start = if relocates { TIB } else { FOUR_GIB };
        let (hole64_start, reserved_end) = self.hole_start_from(above_start);
        let above = self.ram_end.saturating_sub(FOUR_GIB);
        // B1e: the RAM below 4 GiB is one e820 entry, all of it
        // (`e820_add_entry(0, below_4g_mem_size, E820_RAM)`, pc.c v7.2.0
        // L997, v10.2.2 L894): up to 2.75 GiB on q35, 3.5 GiB on i440fx.
        let below = if above > 0 {
            self.machine.lowmem().1
        } else {
            self.ram_end
        };
        let mut e820 = vec![(0, below)];
        let ram_end = if above > 0 {
            e820.push((above_start, above_start + above));
            above_start + above
        } else {
            self.ram_end
        };
        let ram = e820.clone();
        if amd && self.qemu.ht_e820 && self.phys_bits >= 40 {
            e820.push((AMD_HT_START, TIB));
        }
        MemoryMap {
            ram_end,
            hole64_start,
            reserved_end,
            e820,
            ram,
        }
    }

    /// What QEMU checks before it starts the VM: the CPU model exists in
    /// this release (target/i386/cpu.c `builtin_x86_defs`; an unknown model
    /// is a start error), guest-phys-bits (A6: v9.2.4 L7924-7929, v10.0.13
    /// L8306-8311, v10.2.2 L9454-9459: non-zero must be 32 to phys-bits,
    /// "guest-phys-bits should be between 32 and P (but is N)"; before 9.1
    /// there is no such property), and B6 (`Address space limit ...
    /// phys-bits too low`), from 7.1 on; older QEMU starts anyway.
    pub(crate) fn qemu_starts(&self) -> Result<(), super::NoBoot> {
        let rejects = |why: String| Err(super::NoBoot::QemuRejects { why });
        if let Some(m) = self.cpu_model {
            if let Some(since) = m.since.filter(|v| *v > self.qemu.version) {
                return rejects(format!(
                    "QEMU {} has no CPU model {} (it came with QEMU {since})",
                    self.qemu.version, m.name
                ));
            }
        }
        if let Some(g) = self.guest_phys_bits_arg {
            if !self.qemu.guest_phys_bits {
                return rejects(format!(
                    "QEMU {} has no guest-phys-bits property (it came with QEMU 9.1)",
                    self.qemu.version
                ));
            }
            if g != 0 && !(32..=self.phys_bits).contains(&g) {
                return rejects(format!(
                    "guest-phys-bits should be between 32 and {} (but is {g})",
                    self.phys_bits
                ));
            }
        }
        if !self.qemu.phys_bits_check {
            return Ok(());
        }
        let start = self.memory_map().hole64_start;
        let end = start.saturating_add(self.hole64_size()).saturating_sub(1);
        let limit = self.addressable().wrapping_sub(1);
        if end > limit {
            return Err(super::NoBoot::QemuRefuses { limit, end });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_widths_the_hosts_width_and_the_hot_plug_area() {
        // A8: QEMU exits outside 32 to 52 bits.
        assert!(!PHYS_BITS_ACCEPTED.contains(&31) && PHYS_BITS_ACCEPTED.contains(&32));
        assert!(PHYS_BITS_ACCEPTED.contains(&52) && !PHYS_BITS_ACCEPTED.contains(&53));
        // A3: the limit caps the host's width, never raises it.
        assert_eq!(host_phys_bits(52, Some(48)), 48);
        assert_eq!(host_phys_bits(46, Some(48)), 46);
        assert_eq!(host_phys_bits(46, None), 46);
        // A6m: KVM's 48 at most (4-level TDP), phys-bits, the limit.
        assert_eq!(kvm_guest_phys_bits(52, 52, None), 48);
        assert_eq!(kvm_guest_phys_bits(46, 46, None), 46);
        assert_eq!(kvm_guest_phys_bits(46, 42, None), 42);
        assert_eq!(kvm_guest_phys_bits(52, 52, Some(44)), 44);
        // B3: maxmem 512 GiB booted with 1 GiB and 255 slots (Proxmox's
        // memory hot-plug); none when maxmem is not above the RAM.
        assert_eq!(
            device_memory(Some(512 * GIB), GIB, 255),
            511 * GIB + 255 * GIB
        );
        assert_eq!(device_memory(Some(GIB), GIB, 255), 0);
        assert_eq!(device_memory(None, GIB, 0), 0);
    }

    /// B1e: the low RAM entry is all the RAM below 4 GiB (it was taken as
    /// at most 2 GiB).
    #[test]
    fn the_low_ram_entry_is_all_ram_below_4g() {
        let low = |machine, ram| {
            let s = Setup {
                machine,
                ram_end: ram_end(machine, ram),
                ..Setup::q35(super::super::Firmware::SEABIOS_1_16_2, 40, CpuVendor::Intel)
            };
            s.memory_map().e820[0]
        };
        assert_eq!(low(Machine::Q35, 0xA000_0000), (0, 0xA000_0000));
        assert_eq!(low(Machine::Q35, 0xB000_0000), (0, 0x8000_0000));
        assert_eq!(low(Machine::Q35, 8 * GIB), (0, 0x8000_0000));
        assert_eq!(low(Machine::I440fx, 0xD000_0000), (0, 0xD000_0000));
        assert_eq!(low(Machine::I440fx, 8 * GIB), (0, 0xC000_0000));
        assert_eq!(low(Machine::I440fx, GIB), (0, GIB));
    }
}
