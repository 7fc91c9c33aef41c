//! How the firmware sizes and places its 64-bit window, and what a VM with a
//! given configuration will see at boot: whether QEMU starts, whether the
//! firmware hangs, how many GPUs the firmware places, and which window the
//! guest kernel is then offered.
//!
//! One model for `check` (the configuration inferred from the guest),
//! `explain` (from a log) and `plan` (from the host's configuration). The
//! rules and their upstream sources are in docs/firmware-window.md; the
//! numbers the tests below assert are the lab's (docs/lab.md).

use crate::decide::sizing::{align_up, Block};
use crate::model::platform::CpuVendor;
use crate::model::range::{Range, FOUR_GIB};
use serde::Serialize;

const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// QEMU's address width for a named CPU model without `phys-bits`.
pub(crate) const QEMU_DEFAULT_PHYS_BITS: u32 = 40;
/// OVMF's classic aperture (`PcdPciMmio64Size`).
const OVMF_CLASSIC_SIZE: u64 = 32 * GIB;
/// QEMU reserves [0xFD_0000_0000, 1 TiB) on AMD vCPUs (HyperTransport).
const AMD_HT_START: u64 = 0xFD_0000_0000;

/// Which firmware, by the rules that decide its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Firmware {
    /// EDK II OVMF from edk2-stable202211 on (the dynamic window).
    Ovmf(OvmfRules),
    /// SeaBIOS: 1.16.2 and older put the window right above RAM; 1.16.3
    /// and newer at the top of the address space when they trust the
    /// CPU's width.
    SeaBios { top: bool },
}

/// What differs between OVMF releases (docs/firmware-window.md, "Version
/// history of the rules").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OvmfRules {
    /// From edk2-stable202211 on OVMF reads the vCPU's width and makes the
    /// dynamic window; before, it always makes the classic one.
    pub dynamic: bool,
    /// The width OVMF caps itself at with 1 GiB pages: 47 up to
    /// edk2-stable202305, 46 from 202308.
    pub cap: u32,
    /// From 202302 the dynamic window moves below a conflicting e820
    /// reservation (QEMU's AMD HyperTransport range).
    pub avoids_ht: bool,
    /// From 202505 `X-PciMmio64Mb` is used as given; before, a value
    /// smaller than the dynamic window is ignored.
    pub mmio64_exact: bool,
}

impl OvmfRules {
    /// Debian 12's OVMF (edk2-stable202211), the one measured in docs/lab.md.
    pub(crate) const STABLE_202211: OvmfRules = OvmfRules {
        dynamic: true,
        cap: 47,
        avoids_ht: false,
        mmio64_exact: false,
    };
    /// edk2-stable202308 to 202502 (Ubuntu 24.04, Proxmox 4.2023.08 to
    /// 4.2025.02).
    pub(crate) const STABLE_202308: OvmfRules = OvmfRules {
        dynamic: true,
        cap: 46,
        avoids_ht: true,
        mmio64_exact: false,
    };
    /// The rules of an edk2 release, `YYYY.MM` (a package version such as
    /// `2022.11-6` or Proxmox's `4.2025.02-4` carries it).
    pub(crate) fn for_release(year: u32, month: u32) -> OvmfRules {
        let at_least = |y: u32, m: u32| (year, month) >= (y, m);
        OvmfRules {
            dynamic: at_least(2022, 11),
            cap: if at_least(2023, 8) { 46 } else { 47 },
            avoids_ht: at_least(2023, 2),
            mmio64_exact: at_least(2025, 5),
        }
    }

    /// edk2-stable202505 and later.
    pub(crate) const STABLE_202505: OvmfRules = OvmfRules {
        dynamic: true,
        cap: 46,
        avoids_ht: true,
        mmio64_exact: true,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Machine {
    Q35,
    I440fx,
}

impl Machine {
    /// QEMU's default `pci-hole64-size`.
    pub(crate) fn default_hole64(self) -> u64 {
        match self {
            Machine::Q35 => 32 * GIB,
            Machine::I440fx => 2 * GIB,
        }
    }
}

/// A QEMU VM's configuration, as far as the window depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setup {
    pub firmware: Firmware,
    pub machine: Machine,
    /// vCPU physical address bits.
    pub phys_bits: u32,
    /// The vendor the vCPU reports (the host's under KVM). `None`: not
    /// known, taken as Intel, whose 40 bits OVMF does not trust (the
    /// smaller window).
    pub vendor: Option<CpuVendor>,
    pub pdpe1gb: bool,
    /// Where RAM ends (exclusive), below or above 4 GiB.
    pub ram_end: u64,
    /// `pci-hole64-size`, when set.
    pub hole64: Option<u64>,
    /// OVMF's `X-PciMmio64Mb`, in bytes, when set.
    pub mmio64: Option<u64>,
    /// Root ports without a GPU (they take hot-plug padding in OVMF).
    pub empty_ports: usize,
    /// QEMU moves RAM above 4 GiB to 1 TiB on an AMD vCPU when the 64-bit
    /// hole would reach the HyperTransport range (`enforce_amd_1tb_hole`:
    /// machine types 7.1 and later).
    pub amd_1tb_hole: bool,
}

/// One GPU as the firmware places it: its 64-bit prefetchable BARs behind
/// its own root port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GpuBars {
    pub bars: Vec<u64>,
}

impl GpuBars {
    /// The root port's window as firmware sizes it: the BARs packed
    /// largest first, aligned to the largest. Unlike the kernel's sizing,
    /// the window keeps that alignment, so a 128 GiB + 32 MiB GPU takes
    /// 256 GiB of stride (docs/firmware-window.md, "Will N devices fit?").
    pub(crate) fn port_window(&self) -> Option<Block> {
        let mut bars = self.bars.clone();
        bars.sort_unstable_by(|a, b| b.cmp(a));
        let align = bars.first()?.checked_next_power_of_two()?.max(1 << 20);
        let size = bars.iter().try_fold(0u64, |cur, b| {
            align_up(cur, b.checked_next_power_of_two()?)?.checked_add(*b)
        })?;
        Some(Block {
            size: align_up(size, 1 << 20)?,
            align,
        })
    }
}

/// How the window came to be: the report's `capacity.window_origin.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OriginKind {
    /// OVMF's window at the top eighth of its address width.
    OvmfDynamic,
    /// OVMF's classic 32 GiB window above RAM (it did not trust the
    /// vCPU's width).
    OvmfClassic,
    /// OVMF's window of the size `X-PciMmio64Mb` asked for.
    OvmfMmio64,
    /// SeaBIOS placed the BARs right above RAM.
    SeabiosAboveRam,
    /// SeaBIOS placed them at the top of the address space.
    SeabiosTop,
    /// Bare-metal firmware: its own settings decide.
    BareMetal,
    /// A hypervisor other than QEMU (VMware, Hyper-V, ...) sets the window.
    Hypervisor,
    Unknown,
}

impl OriginKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OriginKind::OvmfDynamic => "ovmf_dynamic",
            OriginKind::OvmfClassic => "ovmf_classic",
            OriginKind::OvmfMmio64 => "ovmf_mmio64",
            OriginKind::SeabiosAboveRam => "seabios_above_ram",
            OriginKind::SeabiosTop => "seabios_top",
            OriginKind::BareMetal => "bare_metal",
            OriginKind::Hypervisor => "hypervisor",
            OriginKind::Unknown => "unknown",
        }
    }
}

/// What a boot with a setup would look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Boot {
    pub origin: OriginKind,
    /// The width the firmware works with (OVMF caps it).
    pub width: u32,
    /// The firmware's own window (SeaBIOS: what it used).
    pub aperture: Range,
    /// How many of the GPUs the firmware placed where the guest can reach
    /// them.
    pub placed: usize,
    /// The window the guest kernel is offered (`root bus resource`), cut
    /// at what the vCPU addresses.
    pub crs: Option<Range>,
}

/// Why a setup does not boot at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoBoot {
    /// QEMU refuses to start: the 64-bit hole would end beyond the vCPU's
    /// address width.
    QemuRefuses { limit: u64, end: u64 },
    /// The firmware hangs before the kernel: its window ends beyond the
    /// width it uses.
    FirmwareHangs { end: u64, width: u32 },
}

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

/// Whether OVMF and SeaBIOS take the vCPU's width at its word: from 41
/// bits on, and below that only the values real CPUs of the vendor have.
fn width_trusted(phys_bits: u32, vendor: Option<CpuVendor>) -> bool {
    phys_bits >= 41
        || (vendor == Some(CpuVendor::Amd) && phys_bits == 40)
        || (vendor == Some(CpuVendor::Intel) && matches!(phys_bits, 36 | 39))
}

impl Setup {
    fn hole64_size(&self) -> u64 {
        self.hole64.unwrap_or(self.machine.default_hole64())
    }

    /// Where QEMU's 64-bit hole starts, and where RAM ends once QEMU moved
    /// RAM above 4 GiB to 1 TiB on an AMD vCPU (QEMU 7.1+ with machine types
    /// from 7.1 on) because the hole would have reached the HyperTransport
    /// range: `pc_memory_init` moves it whenever the end of the hole is at
    /// or past `AMD_HT_START`, however much RAM there is.
    fn hole64_start_and_ram_end(&self) -> (u64, u64) {
        let ram_end = self.ram_end.max(FOUR_GIB);
        let start = align_up(ram_end, GIB).unwrap_or(u64::MAX);
        let relocates = self.vendor == Some(CpuVendor::Amd)
            && self.amd_1tb_hole
            && start.saturating_add(self.hole64_size()).saturating_sub(1) >= AMD_HT_START;
        if relocates {
            // The hole moves to 1 TiB; RAM above 4 GiB, if any, with it.
            let moved = TIB.saturating_add(ram_end - FOUR_GIB);
            let ram = if self.ram_end > FOUR_GIB {
                moved
            } else {
                self.ram_end
            };
            (align_up(moved, GIB).unwrap_or(u64::MAX), ram)
        } else {
            (start, self.ram_end)
        }
    }

    /// QEMU's own check before it starts the VM (`Address space limit ...
    /// phys-bits too low`).
    pub(crate) fn qemu_starts(&self) -> Result<(), NoBoot> {
        let (start, _) = self.hole64_start_and_ram_end();
        let end = start.saturating_add(self.hole64_size()).saturating_sub(1);
        let limit = 1u64
            .checked_shl(self.phys_bits)
            .unwrap_or(u64::MAX)
            .wrapping_sub(1);
        if end > limit {
            return Err(NoBoot::QemuRefuses { limit, end });
        }
        Ok(())
    }

    fn addressable(&self) -> u64 {
        1u64.checked_shl(self.phys_bits).unwrap_or(u64::MAX)
    }

    /// The boot: firmware window, placement, and the kernel's window.
    pub(crate) fn boot(&self, gpus: &[GpuBars]) -> Result<Boot, NoBoot> {
        self.qemu_starts()?;
        let (hole_start, ram_end) = self.hole64_start_and_ram_end();
        let ports: Vec<Block> = gpus.iter().filter_map(GpuBars::port_window).collect();
        let (origin, width, aperture, placed, used_end) = match self.firmware {
            Firmware::Ovmf(rules) => self.ovmf(rules, ram_end, &ports)?,
            Firmware::SeaBios { top } => self.seabios(top, ram_end, &ports),
        };
        // The kernel's window: from the lowest address the firmware used
        // to the furthest of that use and the hole's size from there
        // (`q35_host_get_pci_hole64_end`); without any use, from QEMU's
        // hole start.
        let start = if used_end > aperture.start {
            aperture.start
        } else {
            hole_start
        };
        let end = used_end
            .max(align_up(start.saturating_add(self.hole64_size()), GIB).unwrap_or(u64::MAX));
        // The kernel drops what the vCPU cannot address.
        let crs = (start < self.addressable())
            .then(|| Range::new(start, end.min(self.addressable()).saturating_sub(1)));
        Ok(Boot {
            origin,
            width,
            aperture,
            placed,
            crs,
        })
    }

    /// OVMF: width, window, placement with hot-plug padding. Returns the
    /// origin, width, aperture, GPUs placed and the end of what it used.
    fn ovmf(
        &self,
        rules: OvmfRules,
        ram_end: u64,
        ports: &[Block],
    ) -> Result<(OriginKind, u32, Range, usize, u64), NoBoot> {
        let classic_size =
            align_up(self.mmio64.unwrap_or(OVMF_CLASSIC_SIZE), GIB).unwrap_or(u64::MAX);
        let classic_base = align_up(
            align_up(ram_end.max(FOUR_GIB), GIB).unwrap_or(u64::MAX),
            pow2_floor(classic_size),
        )
        .unwrap_or(u64::MAX);
        let classic_kind = if self.mmio64.is_some() {
            OriginKind::OvmfMmio64
        } else {
            OriginKind::OvmfClassic
        };
        let trusted = rules.dynamic && width_trusted(self.phys_bits, self.vendor);
        let (kind, width, base, size) = if trusted {
            let mut w = self.phys_bits.min(rules.cap);
            if !self.pdpe1gb {
                w = w.min(40);
            }
            let space = 1u64 << w;
            let m = 1u64 << (w - 3);
            let dynamic = !(self.mmio64.is_some() && rules.mmio64_exact)
                && classic_size < m
                && classic_base.saturating_add(m) < space;
            if dynamic {
                let mut base = space - m;
                // QEMU's HT reservation on AMD, below 1 TiB.
                if rules.avoids_ht
                    && self.vendor == Some(CpuVendor::Amd)
                    && base < TIB
                    && base + m > AMD_HT_START
                {
                    base = (AMD_HT_START - m) & !(m - 1);
                }
                (OriginKind::OvmfDynamic, w, base, m)
            } else {
                let end = classic_base.saturating_add(classic_size);
                if end > space {
                    return Err(NoBoot::FirmwareHangs { end, width: w });
                }
                (classic_kind, w, classic_base, classic_size)
            }
        } else {
            let end = classic_base.saturating_add(classic_size);
            (
                classic_kind,
                bits_for(end).max(36),
                classic_base,
                classic_size,
            )
        };
        // Hot-plug padding for ports whose device is not placed (and empty
        // ones): 1/256 of the window, from 32 GiB windows up.
        let pad = if size > 32 * GIB {
            (size / 256).next_power_of_two()
        } else {
            0
        };
        let fits = |k: usize| -> Option<u64> {
            let mut blocks: Vec<Block> = ports[..k].to_vec();
            let pads = ports.len() - k + self.empty_ports;
            blocks.extend(std::iter::repeat_n(
                Block {
                    size: pad,
                    align: pad.max(1),
                },
                if pad > 0 { pads } else { 0 },
            ));
            blocks.sort_by(|a, b| b.align.cmp(&a.align).then(b.size.cmp(&a.size)));
            let mut cur = base;
            for b in &blocks {
                cur = align_up(cur, b.align)?.checked_add(b.size)?;
            }
            (cur <= base.saturating_add(size)).then_some(cur)
        };
        // OVMF keeps the lowest-numbered ports' devices and rejects the rest.
        let mut placed = 0;
        let mut used_end = fits(0).unwrap_or(base);
        for k in 1..=ports.len() {
            match fits(k) {
                Some(end) => {
                    placed = k;
                    used_end = end;
                }
                None => break,
            }
        }
        // A window beyond the vCPU's width (an untrusted width grown to
        // hold a large X-PciMmio64Mb) is placed, but the guest cannot
        // reach it.
        if base.saturating_add(size) > self.addressable() {
            placed = 0;
        }
        Ok((
            kind,
            width,
            Range::new(base, base.saturating_add(size) - 1),
            placed,
            used_end,
        ))
    }

    /// SeaBIOS: above RAM (1.16.2), or at the top when it trusts the width
    /// (1.16.3+). It never leaves a 64-bit BAR unplaced; BARs beyond the
    /// vCPU's width are lost to the kernel.
    fn seabios(
        &self,
        top: bool,
        ram_end: u64,
        ports: &[Block],
    ) -> (OriginKind, u32, Range, usize, u64) {
        let mut blocks = ports.to_vec();
        blocks.sort_by(|a, b| b.align.cmp(&a.align).then(b.size.cmp(&a.size)));
        let sum: u64 = blocks
            .iter()
            .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
            .unwrap_or(u64::MAX);
        let align = blocks.first().map(|b| b.align).unwrap_or(GIB).max(GIB);
        let low = align_up(ram_end.max(FOUR_GIB), align).unwrap_or(u64::MAX);
        let trusted = width_trusted(self.phys_bits, self.vendor);
        let (kind, base) = if top && trusted {
            let t = 1u64 << self.phys_bits.min(46);
            let size = align_up(sum, GIB).unwrap_or(u64::MAX);
            let base = if low < t.saturating_sub(size) {
                t - size
            } else {
                low
            };
            (
                OriginKind::SeabiosTop,
                align_up(base, align).unwrap_or(u64::MAX),
            )
        } else {
            (OriginKind::SeabiosAboveRam, low)
        };
        let limit = self.addressable();
        let mut cur = base;
        let mut placed = 0;
        for b in &blocks {
            cur = align_up(cur, b.align)
                .unwrap_or(u64::MAX)
                .saturating_add(b.size);
            if cur <= limit {
                placed += 1;
            }
        }
        let end = align_up(cur, GIB).unwrap_or(u64::MAX);
        (
            kind,
            self.phys_bits,
            Range::new(base, end.saturating_sub(1).max(base)),
            placed,
            end,
        )
    }
}

/// Where guest RAM ends once QEMU has split it at 4 GiB.
pub(crate) fn ram_end(machine: Machine, ram: u64) -> u64 {
    // Where QEMU splits RAM at 4 GiB (docs/firmware-window.md, "RAM
    // layout"): q35 keeps 2 GiB below from 2.75 GiB on, i440fx 3 GiB from
    // 3.5 GiB on.
    let (threshold, below) = match machine {
        Machine::Q35 => (0xb000_0000, 2 << 30),
        Machine::I440fx => (0xe000_0000, 3 << 30),
    };
    if ram >= threshold {
        FOUR_GIB + (ram - below)
    } else {
        ram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(n: usize, size: u64) -> Vec<GpuBars> {
        (0..n).map(|_| GpuBars { bars: vec![size] }).collect()
    }

    fn ovmf(phys_bits: u32, pdpe1gb: bool) -> Setup {
        Setup {
            firmware: Firmware::Ovmf(OvmfRules::STABLE_202211),
            machine: Machine::Q35,
            phys_bits,
            vendor: Some(CpuVendor::Amd),
            pdpe1gb,
            ram_end: GIB,
            hole64: None,
            mmio64: None,
            empty_ports: 0,
            amd_1tb_hole: true,
        }
    }

    fn seabios(phys_bits: u32) -> Setup {
        Setup {
            firmware: Firmware::SeaBios { top: false },
            ..ovmf(phys_bits, false)
        }
    }

    #[test]
    fn ovmf_without_1g_pages_works_in_40_bits_whatever_phys_bits_says() {
        for pb in [40, 41, 42, 44, 46, 48] {
            let b = ovmf(pb, false).boot(&gpus(8, 32 * GIB)).unwrap();
            assert_eq!(b.origin, OriginKind::OvmfDynamic);
            assert_eq!(b.width, 40);
            assert_eq!(b.aperture, Range::new(0xe0_0000_0000, 0xff_ffff_ffff));
            // 3 x 32 GiB + 5 x 512 MiB of hot-plug padding: 98.5 GiB.
            assert_eq!(b.placed, 3, "{pb}");
            assert_eq!(b.crs, Some(Range::new(0xe0_0000_0000, 0xf8_9fff_ffff)));
        }
    }

    #[test]
    fn ovmf_with_1g_pages_takes_the_top_eighth_of_phys_bits() {
        for (pb, base) in [
            (41, 0x1c0_0000_0000u64),
            (42, 0x380_0000_0000),
            (44, 0xe00_0000_0000),
            (46, 0x3800_0000_0000),
            // 2022.11 caps 48 at 47.
            (48, 0x7000_0000_0000),
        ] {
            let b = ovmf(pb, true).boot(&gpus(8, 32 * GIB)).unwrap();
            assert_eq!((b.aperture.start, b.placed), (base, 8), "{pb}");
        }
        // 1 GiB pages change nothing at 40 bits.
        assert_eq!(ovmf(40, true).boot(&gpus(8, 32 * GIB)).unwrap().placed, 3);
        // Eight 128 GiB BARs: none fit 128 GiB; the kernel sees 32 GiB.
        let b = ovmf(46, false).boot(&gpus(8, 128 * GIB)).unwrap();
        assert_eq!(b.placed, 0);
        assert_eq!(b.crs, Some(Range::new(0xe0_0000_0000, 0xe7_ffff_ffff)));
        assert_eq!(ovmf(46, true).boot(&gpus(8, 128 * GIB)).unwrap().placed, 8);
    }

    #[test]
    fn rules_by_release() {
        assert_eq!(OvmfRules::for_release(2022, 11), OvmfRules::STABLE_202211);
        assert_eq!(OvmfRules::for_release(2023, 8), OvmfRules::STABLE_202308);
        assert_eq!(OvmfRules::for_release(2025, 2), OvmfRules::STABLE_202308);
        assert_eq!(OvmfRules::for_release(2025, 5), OvmfRules::STABLE_202505);
        // Before the dynamic window: the classic 32 GiB one, whatever the CPU.
        let old = Setup {
            firmware: Firmware::Ovmf(OvmfRules::for_release(2022, 2)),
            pdpe1gb: true,
            ..ovmf(46, true)
        };
        let b = old.boot(&gpus(8, 32 * GIB)).unwrap();
        assert_eq!((b.origin, b.placed), (OriginKind::OvmfClassic, 1));
    }

    #[test]
    fn an_intel_vcpu_with_40_bits_gets_the_classic_window() {
        let s = Setup {
            vendor: Some(CpuVendor::Intel),
            ..ovmf(40, false)
        };
        let b = s.boot(&gpus(8, 32 * GIB)).unwrap();
        assert_eq!(b.origin, OriginKind::OvmfClassic);
        assert_eq!(b.aperture, Range::new(0x8_0000_0000, 0xf_ffff_ffff));
        assert_eq!(b.placed, 1);
    }

    #[test]
    fn x_pcimmio64mb_is_a_minimum_placed_above_ram_or_a_hang() {
        let with = |m: u64, ram_end: u64| Setup {
            mmio64: Some(m),
            ram_end,
            ..ovmf(46, false)
        };
        // Smaller than the 128 GiB dynamic window: ignored.
        let b = with(64 * GIB, GIB).boot(&gpus(8, 32 * GIB)).unwrap();
        assert_eq!((b.origin, b.placed), (OriginKind::OvmfDynamic, 3));
        for (m, base) in [(256 * GIB, 0x40_0000_0000u64), (512 * GIB, 0x80_0000_0000)] {
            let b = with(m, GIB).boot(&gpus(8, 32 * GIB)).unwrap();
            assert_eq!(
                (b.origin, b.aperture.start, b.placed),
                (OriginKind::OvmfMmio64, base, 8)
            );
        }
        // [1T, 2T) is beyond 40 bits; with 512 GiB of RAM a 512 GiB window
        // starts at 1 TiB: both hang.
        assert!(matches!(
            with(TIB, GIB).boot(&gpus(8, 32 * GIB)),
            Err(NoBoot::FirmwareHangs { width: 40, .. })
        ));
        assert!(matches!(
            with(512 * GIB, 0x80_8000_0000).boot(&gpus(8, 32 * GIB)),
            Err(NoBoot::FirmwareHangs { .. })
        ));
        // With 1 GiB pages at 46 bits the 8 TiB window wins over 1 TiB.
        let s = Setup {
            pdpe1gb: true,
            ..with(TIB, GIB)
        };
        assert_eq!(
            s.boot(&gpus(8, 32 * GIB)).unwrap().origin,
            OriginKind::OvmfDynamic
        );
    }

    #[test]
    fn the_hole_only_widens_the_kernels_window_and_qemu_checks_it() {
        let with = |s: u64, pb: u32| Setup {
            hole64: Some(s),
            ..ovmf(pb, false)
        };
        for (s, end) in [
            (512 * GIB, 0x15f_ffff_ffffu64),
            (TIB, 0x1df_ffff_ffff),
            (2 * TIB, 0x2df_ffff_ffff),
        ] {
            let b = with(s, 46).boot(&gpus(8, 32 * GIB)).unwrap();
            assert_eq!(b.placed, 3);
            assert_eq!(b.crs, Some(Range::new(0xe0_0000_0000, end)));
        }
        // 40 bits: QEMU refuses 1T and 2T (the AMD hole moves the 64-bit
        // hole to 1 TiB) and starts with 512G, whose part above 1 TiB the
        // kernel drops.
        assert_eq!(
            with(TIB, 40).qemu_starts(),
            Err(NoBoot::QemuRefuses {
                limit: 0xff_ffff_ffff,
                end: 0x1ff_ffff_ffff
            })
        );
        assert!(with(2 * TIB, 40).qemu_starts().is_err());
        let b = with(512 * GIB, 40).boot(&gpus(8, 32 * GIB)).unwrap();
        assert_eq!(b.crs, Some(Range::new(0xe0_0000_0000, 0xff_ffff_ffff)));
    }

    #[test]
    fn amd_ram_moves_to_1tib_however_much_there_is() {
        // SeaBIOS places above RAM, so the window follows where RAM ends.
        let at = |ram: u64, hole: bool| {
            Setup {
                ram_end: ram_end(Machine::Q35, ram),
                amd_1tb_hole: hole,
                ..seabios(46)
            }
            .boot(&gpus(2, 32 * GIB))
            .unwrap()
            .aperture
            .start
        };
        // 998 GiB above 4 GiB end at 2022 GiB once moved to 1 TiB, and
        // 1098 GiB at 2122 GiB: more RAM, a higher window.
        assert_eq!(at(1000 * GIB, true), 0x200_0000_0000);
        assert_eq!(at(1100 * GIB, true), 0x218_0000_0000);
        // Machine types 7.0 and older leave RAM where it is.
        assert_eq!(at(1100 * GIB, false), 0x118_0000_0000);
        // Too little RAM for the hole to reach the HT range: no move.
        assert_eq!(at(8 * GIB, true), at(8 * GIB, false));
    }

    #[test]
    fn seabios_places_above_ram_and_ignores_phys_bits() {
        let b = seabios(40).boot(&gpus(8, 128 * GIB)).unwrap();
        assert_eq!(b.origin, OriginKind::SeabiosAboveRam);
        assert_eq!(b.aperture.start, 0x20_0000_0000);
        assert_eq!(b.placed, 7);
        assert_eq!(seabios(40).boot(&gpus(7, 128 * GIB)).unwrap().placed, 7);
        assert_eq!(seabios(41).boot(&gpus(8, 128 * GIB)).unwrap().placed, 8);
        assert_eq!(seabios(40).boot(&gpus(8, 32 * GIB)).unwrap().placed, 8);
        let big_ram = Setup {
            ram_end: 0x80_8000_0000,
            ..seabios(46)
        };
        assert_eq!(
            big_ram.boot(&gpus(8, 128 * GIB)).unwrap().aperture.start,
            0xa0_0000_0000
        );
    }

    #[test]
    fn a_second_64bit_bar_doubles_the_stride() {
        let g = GpuBars {
            bars: vec![128 * GIB, 32 << 20, 16 << 20],
        };
        let w = g.port_window().unwrap();
        assert_eq!(w.align, 128 * GIB);
        assert_eq!(w.size, 128 * GIB + (48 << 20));
        // Eight of them in SeaBIOS's window: 7 strides of 256 GiB + one.
        let b = seabios(46).boot(&vec![g; 8]).unwrap();
        assert_eq!(b.aperture.start, 0x20_0000_0000);
        assert_eq!(
            b.crs.unwrap().end,
            0x20_0000_0000 + 7 * 256 * GIB + 129 * GIB - 1
        );
    }

    #[test]
    fn ram_splits_at_4g_as_qemu_does() {
        const GIB: u64 = 1 << 30;
        assert_eq!(ram_end(Machine::Q35, GIB), GIB);
        assert_eq!(ram_end(Machine::Q35, 512 * GIB), FOUR_GIB + 510 * GIB);
        assert_eq!(ram_end(Machine::I440fx, 4 * GIB), FOUR_GIB + GIB);
    }
}
