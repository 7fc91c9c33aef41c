//! The firmware-window model: what a QEMU VM with a given configuration
//! will see at boot. Whether QEMU starts, whether the firmware hangs or
//! abandons the root bus, which GPU the firmware places where, and which
//! window the guest kernel is then offered: one prediction (`Setup::boot`)
//! for `check` (the configuration inferred from the guest), `explain` (from
//! a log), `plan` (from the host's configuration) and the prescriptions.
//!
//! The files follow the stack: `qemu` (QEMU's memory map), `ovmf`,
//! `seabios`, `kernel` (what QEMU and the guest kernel make of the
//! windows the firmware left), `topology` (where each GPU sits), `proxmox`
//! (where qemu-server attaches devices, how it boots memory hot-plug),
//! `cpu_models` (what named CPU models carry), `rules` (the releases and
//! the rules each brings, as data). Each rule cites its upstream source
//! beside its code; the rows and test vectors of docs/firmware-window.md
//! are the tests (`tests`), and it says what is out of scope and why.

pub(crate) mod cpu_models;
mod kernel;
mod left;
mod ovmf;
pub(crate) mod proxmox;
pub(crate) mod qemu;
pub(crate) mod rules;
mod seabios;
#[cfg(test)]
mod tests;
mod third;
pub(crate) mod topology;

pub(crate) use qemu::{ram_end, Machine};
pub(crate) use rules::{OvmfRules, QemuRules, QemuVersion, SeabiosRules, SeabiosVersion};
pub(crate) use topology::{Attach, GpuBars, Layout, PciBridges};

use crate::model::platform::CpuVendor;
use crate::model::range::{Range, FOUR_GIB};
use qemu::GIB;
use serde::Serialize;

/// QEMU's address width for a named CPU model without `phys-bits` (A1:
/// `TCG_PHYS_ADDR_BITS`, target/i386/cpu.c x86_cpu_realizefn, v7.2.0
/// L6545, v10.0.0 L8304).
pub(crate) const QEMU_DEFAULT_PHYS_BITS: u32 = 40;

/// QEMU's `ROUND_UP`, in u64 as QEMU computes it (it wraps).
fn walign(v: u64, a: u64) -> u64 {
    v.wrapping_add(a - 1) & !(a - 1)
}

/// Which firmware, by the rules that decide its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Firmware {
    Ovmf(OvmfRules),
    SeaBios(SeabiosRules),
}

impl Firmware {
    /// SeaBIOS 1.16.2, what Debian 12 ships.
    pub(crate) const SEABIOS_1_16_2: Firmware = Firmware::SeaBios(SeabiosRules::V1_16_2);
}

/// A QEMU VM's configuration, as far as the window depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setup {
    pub firmware: Firmware,
    pub machine: Machine,
    /// The QEMU release and machine type version's rules.
    pub qemu: QemuRules,
    /// vCPU physical address bits.
    pub phys_bits: u32,
    /// The vendor the vCPU reports (the host's under KVM). `None`: not
    /// known, taken as Intel, whose 40 bits OVMF does not trust (the
    /// smaller window).
    pub vendor: Option<CpuVendor>,
    pub pdpe1gb: bool,
    /// GuestPhysBits as the vCPU reports it (A6, A6m), when known.
    pub guest_phys_bits: Option<u32>,
    /// `guest-phys-bits=N` as given on `-cpu`, which QEMU checks (A6).
    pub guest_phys_bits_arg: Option<u32>,
    /// The named CPU model, when the vCPU is one (not host, not unknown):
    /// QEMU has it only from its first release on.
    pub cpu_model: Option<cpu_models::CpuModel>,
    /// Where RAM ends (exclusive), below or above 4 GiB, before any move.
    pub ram_end: u64,
    /// The memory hot-plug area: maxmem - RAM + 1 GiB per slot (0: none).
    pub device_memory: u64,
    /// `pci-hole64-size`, when set.
    pub hole64: Option<u64>,
    /// OVMF's `X-PciMmio64Mb`, in bytes, when set.
    pub mmio64: Option<u64>,
    /// SeaBIOS's fw_cfg `opt/org.seabios/pci64`, when it says yes or no
    /// (1.17.0's pad mode, E7b).
    pub seabios_pci64: Option<bool>,
    /// Hot-plug root ports without a device (each takes padding).
    pub empty_ports: usize,
    /// Whose bus layout the VM has: which pci-bridges it has besides the
    /// GPUs' (`Setup::pci_bridges`), and the order of its root ports.
    pub layout: Layout,
    /// Further devices (not GPUs) with 64-bit prefetchable BARs, such as a
    /// virtio device's 16 KiB modern BAR: the firmware places them with
    /// the GPUs; their fate is not reported.
    pub others: Vec<GpuBars>,
    /// The RAM the guest kernel uses when its command line limits it
    /// (`mem=`): the rest of RAM is free space to it.
    pub guest_mem: Option<u64>,
}

impl Setup {
    /// Debian 12's QEMU on q35 with nothing set: the base of tests.
    #[cfg(test)]
    pub(crate) fn q35(firmware: Firmware, phys_bits: u32, vendor: CpuVendor) -> Setup {
        Setup {
            firmware,
            machine: Machine::Q35,
            qemu: QemuRules::V7_2,
            phys_bits,
            vendor: Some(vendor),
            pdpe1gb: false,
            guest_phys_bits: None,
            guest_phys_bits_arg: None,
            cpu_model: None,
            ram_end: GIB,
            device_memory: 0,
            hole64: None,
            mmio64: None,
            seabios_pci64: None,
            empty_ports: 0,
            layout: Layout::Plain,
            others: Vec::new(),
            guest_mem: None,
        }
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
    /// SeaBIOS kept them in the 32-bit window, where they fit (E1).
    SeabiosBelow4g,
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
            OriginKind::SeabiosBelow4g => "seabios_below_4g",
            OriginKind::BareMetal => "bare_metal",
            OriginKind::Hypervisor => "hypervisor",
            OriginKind::Unknown => "unknown",
        }
    }
}

/// What became of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fate {
    /// The firmware gave every BAR of it an address (OVMF leaves a
    /// rejected device's BARs at 0).
    pub programmed: bool,
    /// ... where the guest kernel can keep them: aligned, reachable, in
    /// the window it is offered.
    pub usable: bool,
}

/// What a firmware did, before the kernel's window is worked out.
pub(crate) struct FwBoot {
    origin: OriginKind,
    width: u32,
    aperture: Range,
    /// What QEMU counts of what it programmed on the root bus, [lob, upb]
    /// inclusive (kernel.rs `qemu_w64`).
    used: Option<(u64, u64)>,
    gpus: Vec<Fate>,
    abandoned: bool,
    /// D8 rather than D4: the bus was abandoned after every 64-bit device
    /// on it was rejected.
    nothing_left: bool,
    /// What it left on the root bus for the kernel to claim (empty where
    /// the kernel's part is not modelled).
    left: Vec<kernel::Left>,
    /// The kernel's realloc rounds are modelled on this layout (SeaBIOS,
    /// whose every window is known); otherwise a fresh packing stands in.
    realloc_rounds: bool,
}

/// What a boot with a setup would look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Boot {
    pub origin: OriginKind,
    /// The width the firmware works with (OVMF caps it).
    pub width: u32,
    /// The firmware's own window (SeaBIOS: what it used).
    pub aperture: Range,
    /// How many of the GPUs the guest kernel ends with placed, without
    /// `pci=realloc`: what it keeps of the firmware's placement and what it
    /// places itself (kernel.rs).
    pub placed: usize,
    /// How many the firmware itself placed where the kernel keeps them
    /// (what a firmware-only probe sees: lab L1-L20).
    pub firmware_placed: usize,
    /// The window the guest kernel is offered (`root bus resource`), cut
    /// at what the vCPU addresses.
    pub crs: Option<Range>,
    /// A window the firmware programmed on the root bus ends at 2^64: QEMU
    /// counts it, its end wraps to 0, and `crs` is only the hole's size
    /// from its start (B7).
    pub crs_wrapped: bool,
    /// Each GPU, in the order given.
    pub gpus: Vec<Fate>,
    /// OVMF abandoned the allocation of the whole root bus (D4): nothing
    /// on it was programmed, not even the disk controller.
    pub bus_abandoned: bool,
    /// The bus was abandoned after OVMF rejected every device that asked
    /// for 64-bit space (D8), not over devices on bus 0 it cannot reject
    /// (D4).
    pub nothing_left: bool,
    /// Each GPU placed once the guest boots with `pci=realloc`, where the
    /// kernel's rounds are modelled (kernel.rs: SeaBIOS's layouts).
    pub realloc_gpus: Option<Vec<bool>>,
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
    /// QEMU exits before any firmware runs on an argument it rejects: a
    /// CPU model it does not have, a guest-phys-bits it does not take. Its
    /// reason, in words.
    QemuRejects { why: String },
}

/// C4/E5: whether OVMF and SeaBIOS take the vCPU's width at its word: from
/// 41 bits on, and below that only the values real CPUs of the vendor
/// have (MemDetect.c 202211 L561-575; SeaBIOS paravirt.c 1.16.3 L137-186).
pub(crate) fn width_trusted(phys_bits: u32, vendor: Option<CpuVendor>) -> bool {
    phys_bits >= 41
        || (vendor == Some(CpuVendor::Amd) && phys_bits == 40)
        || (vendor == Some(CpuVendor::Intel) && matches!(phys_bits, 36 | 39))
}

impl Setup {
    /// The 32-bit root windows a window the firmware left from below 4
    /// GiB can be clipped into and still claimed, [start, end). QEMU's
    /// `_CRS` offers the RAM below 4 GiB's end to the IOAPIC at 0xFEC00000
    /// (hw/i386/acpi-build.c `build_dsdt`), less q35's MMCONFIG at
    /// 0xB0000000-0xBFFFFFFF. The firmware's 32-bit BARs and windows fill
    /// the top of that range (from 0xC0000000 on q35, up to 0xFEC00000 on
    /// i440fx), where a clipped window would overlap them and not be
    /// claimed: only q35's part below MMCONFIG, which they leave empty,
    /// is given. Lab: campaign seed 20261203 records 0928 (q35, 512 MiB:
    /// `[mem 0x20000000-0xafffffff window]`) and 1163 (q35, 16 GiB: from
    /// 0x80000000).
    pub(crate) fn low_windows(&self, below_4g: u64) -> Vec<(u64, u64)> {
        const MMCONFIG: u64 = 0xb000_0000;
        match self.machine {
            Machine::Q35 if below_4g < MMCONFIG => vec![(below_4g, MMCONFIG)],
            _ => Vec::new(),
        }
    }

    /// The VM's pci-bridges: Proxmox's (G6b), or the GPUs' only.
    pub(crate) fn pci_bridges(&self, gpus: &[GpuBars]) -> PciBridges {
        let q35 = self.machine == Machine::Q35;
        let of_gpus = PciBridges::of_gpus(gpus, q35);
        match self.layout {
            // With the ones devices name that it adds only then (pci.3 on
            // i440fx for virtio-scsi-single: QemuServer.pm L3743).
            Layout::Proxmox => {
                let mut b = proxmox::bridges(q35);
                for n in of_gpus.present {
                    if !b.present.contains(&n) {
                        b.present.push(n);
                    }
                }
                b.present.sort_unstable();
                b
            }
            Layout::Plain => of_gpus,
        }
    }

    /// How many bridges deep the guest kernel finds the tree below the
    /// root bus (drivers/pci/setup-bus.c `pci_bus_get_depth`, Linux 6.1),
    /// which with `pci=realloc` sets how many tries it makes: depth + 1.
    /// Two behind q35's DMI-to-PCI bridge, whose pci-bridges have buses of
    /// their own (Proxmox's layout always: campaign record 1613's guest,
    /// `max bus depth: 2 pci_try_num: 3`); one with root ports or
    /// pci-bridges on bus 0; none with every device on bus 0.
    pub(crate) fn bus_depth(&self, devices: &[GpuBars]) -> u32 {
        let b = self.pci_bridges(devices);
        let ports = self.empty_ports > 0 || devices.iter().any(|g| g.attach == Attach::RootPort);
        match (b.present.is_empty(), b.on_bus0) {
            (false, false) => 2,
            (false, true) => 1,
            (true, _) if ports => 1,
            (true, _) => 0,
        }
    }

    /// The GPUs on root ports (`Attach::RootPort`), in the order of their
    /// ports' bus numbers, which the firmwares enumerate depth first in
    /// device order: the GPUs' own order, but on Proxmox's layout the
    /// ports made for hostpci4 and later sit at 10.x and 11.x, below
    /// ich9-pcie-port-1..4 at 1c.x (PCI.pm print_pcie_root_port,
    /// pve-q35-4.0.cfg).
    pub(crate) fn ports_in_bus_order(&self, gpus: &[GpuBars]) -> Vec<usize> {
        let mut ports: Vec<usize> = (0..gpus.len())
            .filter(|i| gpus[*i].attach == Attach::RootPort)
            .collect();
        if self.layout == Layout::Proxmox {
            ports.sort_by_key(|i| (*i < 4, *i));
        }
        ports
    }

    /// B7: the 64-bit window QEMU writes into `PCI0._CRS`, from what the
    /// firmware programmed on the root bus (`used`, [lob, upb]), in QEMU's
    /// u64 arithmetic (hw/pci-host/q35.c q35_host_get_pci_hole64_start_value
    /// and _end, i440fx.c the same; identical in v7.2.0 L122-169 and
    /// v10.2.2 L116-163): start = lob, else `pc_pci_hole64_start` with
    /// x-pci-hole64-fix; end = upb + 1 mod 2^64 (a window ending at 2^64
    /// gives 0), raised to ROUND_UP(start + pci-hole64-size, 1 GiB) (also
    /// mod 2^64) with x-pci-hole64-fix; acpi-build.c acpi_get_pci_holes
    /// takes [start, end - 1], empty when both are 0 (`range_set_bounds1`).
    /// Then B8: the guest kernel drops what the vCPU cannot address.
    fn crs(&self, used: Option<(u64, u64)>, hole64_start: u64) -> Option<Range> {
        let fix = self.qemu.hole64_fix;
        let (start, mut end) = match used {
            Some((lob, upb)) => (lob, upb.wrapping_add(1)),
            None if fix => (hole64_start, 0),
            None => (0, 0),
        };
        let hole_end = walign(start.wrapping_add(self.hole64_size()), GIB);
        if fix && end < hole_end {
            end = hole_end;
        }
        if start == 0 && end == 0 {
            return None;
        }
        let upb = end.wrapping_sub(1);
        let limit = self.addressable().wrapping_sub(1);
        (start <= limit && start >= FOUR_GIB && upb >= start)
            .then(|| Range::new(start, upb.min(limit)))
    }

    /// The boot: QEMU's check, the firmware's window and placement, and
    /// the kernel's window.
    pub(crate) fn boot(&self, gpus: &[GpuBars]) -> Result<Boot, NoBoot> {
        self.qemu_starts()?;
        let map = self.memory_map();
        // The further devices are placed with the GPUs, after them; what
        // becomes of them is left out of the boot.
        let n = gpus.len();
        let all: Vec<GpuBars> = gpus.iter().chain(&self.others).cloned().collect();
        let fw = match self.firmware {
            Firmware::Ovmf(rules) => ovmf::boot(self, rules, &map, &all)?,
            Firmware::SeaBios(rules) => seabios::boot(self, rules, &map, &all)?,
        };
        let crs = self.crs(fw.used, map.hole64_start);
        let usable_all: Vec<bool> = fw.gpus.iter().map(|g| g.usable).collect();
        let mut gpus = fw.gpus;
        gpus.truncate(n);
        let firmware_placed = gpus.iter().filter(|g| g.usable).count();
        let mut realloc_gpus = None;
        // The kernel's claim, and its own placement of what it could not
        // claim (kernel.rs), around RAM and the reserved ranges.
        if let (Some(c), false) = (crs, fw.left.is_empty()) {
            let root = kernel::RootWindows {
                crs: c,
                low: &self.low_windows(map.below_4g()),
                depth: self.bus_depth(&all),
            };
            let mut placed = kernel::place(
                root,
                &fw.left,
                &usable_all,
                &map.kernel_ram(self.guest_mem),
                &map.reserved(),
                self.addressable(),
            );
            for (g, p) in gpus.iter_mut().zip(placed.without_realloc) {
                g.usable = p;
            }
            placed.with_realloc.truncate(n);
            realloc_gpus = fw.realloc_rounds.then_some(placed.with_realloc);
        }
        Ok(Boot {
            origin: fw.origin,
            width: fw.width,
            aperture: fw.aperture,
            placed: gpus.iter().filter(|g| g.usable).count(),
            firmware_placed,
            crs,
            crs_wrapped: fw.used.is_some_and(|(_, upb)| upb == u64::MAX),
            gpus,
            bus_abandoned: fw.abandoned,
            nothing_left: fw.nothing_left,
            realloc_gpus,
        })
    }
}
