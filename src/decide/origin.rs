//! What the evidence says of a QEMU guest's setup (`infer`: firmware and
//! its rules, machine, vCPU, RAM, QEMU's hole, OVMF's aperture), and how
//! its firmware made the 64-bit window it offers (`origin`, the report's
//! `capacity.window_origin`), checked against the window the guest saw.
//! What the guest read of fw_cfg (`X-PciMmio64Mb`, SeaBIOS's `pci64`, the
//! e820 map, the hot-plug area's end) is taken as fact; without it the
//! aperture is inferred from where the window sits, the rest assumed.

use crate::decide::predict::Model;
use crate::decide::sizing::align_up;
use crate::decide::window::{
    Attach, Firmware, GpuBars, Machine, OriginKind, OvmfRules, QemuRules, QemuVersion,
    SeabiosRules, SeabiosVersion, Setup, QEMU_DEFAULT_PHYS_BITS,
};
use crate::evidence::Evidence;
use crate::model::fw_cfg::{FwCfg, Input};
use crate::model::platform::{CpuVendor, FirmwareKind, Platform, QemuMachine};
use crate::model::range::Range;
use crate::model::range::FOUR_GIB;
use crate::model::size::human;
use crate::parse::release::machine_version;
use serde::Serialize;

const GIB: u64 = 1 << 30;

/// The report's `capacity.window_origin`: how the window came to be, and
/// the numbers that says so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WindowOrigin {
    pub kind: OriginKind,
    /// The address width the firmware works with (OVMF: 40 without 1 GiB
    /// pages, capped at 46 or 47).
    pub firmware_width_bits: Option<u32>,
    /// The firmware's own window, which the guest kernel sees only in part.
    pub aperture_start: Option<u64>,
    pub aperture_bytes: Option<u64>,
    /// A `pci-hole64-size` the window's size implies.
    pub hole64_bytes: Option<u64>,
    /// An `X-PciMmio64Mb` the window's place implies, in bytes.
    pub mmio64_bytes: Option<u64>,
    pub phys_bits: Option<u32>,
    pub pdpe1gb: Option<bool>,
    pub cpu_vendor: Option<CpuVendor>,
    pub ram_end: Option<u64>,
    /// Which firmware rules were taken (the DMI version of OVMF says 0.0.0;
    /// they are inferred from where the window sits).
    pub rules: Option<&'static str>,
    /// The prediction for this configuration matches the window the guest
    /// was given.
    pub model_agrees: Option<bool>,
    /// Facts not in the evidence, taken at a default.
    pub assumed: Vec<&'static str>,
    /// What the host set, read from fw_cfg and taken as fact.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
}

impl WindowOrigin {
    fn of_kind(kind: OriginKind, ev: &Evidence) -> WindowOrigin {
        WindowOrigin {
            kind,
            firmware_width_bits: None,
            aperture_start: None,
            aperture_bytes: None,
            hole64_bytes: None,
            mmio64_bytes: None,
            phys_bits: ev.cpu.phys_bits,
            pdpe1gb: ev.cpu.pdpe1gb,
            cpu_vendor: ev.cpu.vendor,
            ram_end: ev.ram_end,
            rules: None,
            model_agrees: None,
            assumed: Vec::new(),
            facts: Vec::new(),
        }
    }
}

/// The observed 64-bit window of the GPUs' root bus (the lowest one).
fn observed_window(ev: &Evidence) -> Option<Range> {
    let buses: Vec<_> = ev.gpus.iter().filter_map(|g| g.root_bus).collect();
    ev.windows
        .iter()
        .filter(|w| {
            buses.is_empty() || w.bus.is_none() || w.bus.is_some_and(|b| buses.contains(&b))
        })
        .map(|w| w.range)
        .min()
}

fn rules_name(r: OvmfRules) -> &'static str {
    if !r.dynamic {
        "edk2 before stable202211 (no dynamic window)"
    } else if r == OvmfRules::STABLE_202211 {
        "edk2-stable202211 rules, as Debian 12 ships"
    } else if r.cap == 47 {
        "edk2-stable202302 to 202305"
    } else if !r.guest_phys_bits {
        "edk2-stable202308 to 202405"
    } else if !r.mmio64_exact {
        "edk2-stable202408 to 202502"
    } else if r == OvmfRules::STABLE_202505 {
        "edk2-stable202505 and later"
    } else {
        "edk2 before 202505 with X-PciMmio64Mb as given (Debian's 2025.02-2 and later)"
    }
}

/// The QEMU guest's configuration as the evidence shows it, or `None` when
/// it is no QEMU guest, the firmware is not known, or a needed BAR size is
/// not.
pub(crate) fn infer(ev: &Evidence) -> Option<Model> {
    if ev.platform() != Platform::Qemu {
        return None;
    }
    let mut assumed = Vec::new();
    let kind = ev.firmware.kind();
    let machine = match ev.firmware.qemu_machine() {
        Some(QemuMachine::I440fx) => Machine::I440fx,
        Some(QemuMachine::Q35) => Machine::Q35,
        None => {
            assumed.push("machine type q35");
            Machine::Q35
        }
    };
    let phys_bits = ev.cpu.phys_bits.unwrap_or_else(|| {
        assumed.push("40 physical address bits (QEMU's default)");
        QEMU_DEFAULT_PHYS_BITS
    });
    let pdpe1gb = ev.cpu.pdpe1gb.unwrap_or_else(|| {
        assumed.push("no pdpe1gb (QEMU's named CPU models lack it)");
        false
    });
    if ev.cpu.vendor.is_none() {
        assumed.push("an Intel vCPU vendor");
    }
    let fw = ev.firmware.fw_cfg.clone().unwrap_or_default();
    // The map QEMU gave the firmware over the guest's own (which `mem=`
    // cuts), when fw_cfg has it.
    let ram_end = fw.ram_end().or(ev.ram_end).unwrap_or_else(|| {
        assumed.push("RAM ending below 4 GiB");
        0
    });
    let firmware_gpus = firmware_gpus(ev, machine)?;
    let seen = observed_window(ev);
    let base = Setup {
        firmware: match kind {
            FirmwareKind::Ovmf => Firmware::Ovmf(OvmfRules::STABLE_202211),
            // SeaBIOS names its release in DMI (lab: `1.16.3-debian-1.16.3-2`
            // read by check in the campaign's boots); OVMF says 0.0.0.
            FirmwareKind::SeaBios => ev.seabios_release().map_or(Firmware::SEABIOS_1_16_2, |v| {
                Firmware::SeaBios(SeabiosRules::of(v))
            }),
            _ => return None,
        },
        machine,
        // A guest cannot see its QEMU's version: the QEMU suite's (7.2),
        // whose rules any 7.1 or later shares. It sees its machine type's
        // in DMI's product version (`pc-q35-7.0`), which gates the AMD
        // hole, the HT entry and x-pci-hole64-fix; QEMU is at least that.
        qemu: match ev
            .firmware
            .product_version
            .as_deref()
            .and_then(machine_version)
        {
            Some(m) => QemuRules::of(m.max(QemuVersion(7, 2)), Some(m)),
            None => QemuRules::V7_2,
        },
        phys_bits,
        vendor: ev.cpu.vendor,
        pdpe1gb,
        guest_phys_bits: None,
        guest_phys_bits_arg: None,
        cpu_model: None,
        ram_end,
        device_memory: device_memory(&fw, ram_end),
        hole64: None,
        mmio64: fw
            .mmio64_mb
            .known()
            .flatten()
            .map(|mb| mb.saturating_mul(1 << 20)),
        seabios_pci64: fw.seabios_pci64.known().flatten().copied(),
        empty_ports: ev.empty_root_ports,
        layout: crate::decide::window::Layout::Plain,
        others: Vec::new(),
        // What the guest's kernel keeps is in its own iomem; the window
        // was read from it, not predicted.
        guest_mem: None,
    };
    // The first variant whose firmware window starts where the guest's
    // does is taken.
    let variants = variants(
        kind,
        &base,
        ev.seabios_release().is_some(),
        fw.mmio64_mb.is_known(),
    );
    let start_of = |s: &Setup| {
        s.boot(&firmware_gpus)
            .ok()
            .and_then(|b| b.crs)
            .map(|c| c.start)
    };
    let chosen = seen.and_then(|w| {
        variants
            .iter()
            .find(|v| start_of(v) == Some(w.start))
            .cloned()
    });
    let agrees = chosen.is_some();
    let mut setup = chosen.unwrap_or(base);
    // A kernel window wider than the firmware's use implies QEMU's hole
    // was set that large.
    if let (Some(w), Ok(b)) = (seen, setup.boot(&firmware_gpus)) {
        if b.crs.is_some_and(|c| w.end > c.end) {
            setup.hole64 = Some(align_up(w.size(), GIB).unwrap_or(w.size()));
        }
    }
    let mut m = Model::new(setup, firmware_gpus, ev.realloc_active)?;
    m.assumed = assumed;
    m.agrees = agrees;
    Some(m)
}

/// The GPUs as the firmware lays them out: a port's window spans every
/// function below it, so the functions of one GPU behind one root port are
/// one entry (the campaign's GPU-shaped stand-ins, and a real GPU's audio
/// function, share their port), and GPUs behind one pci-bridge share its
/// window. `None` when a BAR's size is not known.
fn firmware_gpus(ev: &Evidence, machine: Machine) -> Option<Vec<GpuBars>> {
    let mut firmware_gpus: Vec<GpuBars> = Vec::new();
    let mut keys: Vec<Option<crate::model::pci::PciAddress>> = Vec::new();
    let mut bridges: Vec<crate::model::pci::PciAddress> = Vec::new();
    for g in &ev.gpus {
        let bars: Vec<u64> = g
            .bars
            .iter()
            .filter(|b| b.counts_for_window())
            .map(|b| b.size)
            .collect::<Option<_>>()?;
        if bars.is_empty() {
            continue;
        }
        // i440fx has no root ports: the GPUs sit on bus 0 (E4, D4).
        let (attach, key) = match (machine, g.upstream.as_slice()) {
            (Machine::I440fx, _) => (Attach::Bus0, None),
            // Where the chain is not known (a pasted log), a port each.
            (_, []) => (Attach::RootPort, None),
            (_, [port]) => (Attach::RootPort, Some(*port)),
            (_, [near, ..]) => {
                let n = bridges.iter().position(|b| b == near).unwrap_or_else(|| {
                    bridges.push(*near);
                    bridges.len() - 1
                });
                (Attach::Bridge(u8::try_from(n).unwrap_or(u8::MAX)), None)
            }
        };
        // Each BAR keeps its function: OVMF rejects per function (D3).
        let funcs = vec![g.addr.function; bars.len()];
        match keys.iter().position(|k| key.is_some() && *k == key) {
            Some(i) => {
                firmware_gpus[i].bars.extend(bars);
                firmware_gpus[i].funcs.extend(funcs);
            }
            None => {
                keys.push(key);
                firmware_gpus.push(GpuBars {
                    bars,
                    funcs,
                    attach,
                });
            }
        }
    }
    Some(firmware_gpus)
}

/// The size of QEMU's memory hot-plug area, from where fw_cfg says it
/// ends (`etc/reserved-memory-end`, rounded up to a GiB by QEMU): it
/// starts at the GiB after RAM's top (hw/i386/pc.c, pc_memory_init,
/// v7.2.0), where the e820 map puts it, or where RAM would end unmoved.
/// 0 when fw_cfg says there is none, or cannot say (QEMU's default).
fn device_memory(fw: &FwCfg, ram_end: u64) -> u64 {
    let Input::Set(end) = fw.reserved_memory_end else {
        return 0;
    };
    let top = fw.ram_top().unwrap_or(ram_end).max(FOUR_GIB);
    end.saturating_sub(align_up(top, GIB).unwrap_or(u64::MAX))
}

/// The setups the window's place can tell apart, `base` first: OVMF's
/// rules, and its apertures unless fw_cfg said which (`mmio64_known`), or
/// SeaBIOS's releases where DMI does not name one.
fn variants(
    kind: FirmwareKind,
    base: &Setup,
    seabios_named: bool,
    mmio64_known: bool,
) -> Vec<Setup> {
    let mut variants: Vec<Setup> = vec![base.clone()];
    match kind {
        FirmwareKind::Ovmf => {
            for rules in [OvmfRules::STABLE_202308, OvmfRules::STABLE_202505] {
                variants.push(Setup {
                    firmware: Firmware::Ovmf(rules),
                    ..base.clone()
                });
            }
            for shift in (35..=44).filter(|_| !mmio64_known) {
                variants.push(Setup {
                    mmio64: Some(1 << shift),
                    ..base.clone()
                });
            }
        }
        _ if seabios_named => {}
        _ => {
            for v in [SeabiosVersion(1, 16, 3), SeabiosVersion(1, 17, 0)] {
                variants.push(Setup {
                    firmware: Firmware::SeaBios(SeabiosRules::of(v)),
                    ..base.clone()
                });
            }
        }
    }
    variants
}

/// `window_origin` of a setup known from its configuration (`plan`).
pub(crate) fn model_origin(m: &Model) -> WindowOrigin {
    let s = &m.setup;
    WindowOrigin {
        kind: m.boot.as_ref().map_or(OriginKind::Unknown, |b| b.origin),
        firmware_width_bits: m.boot.as_ref().map(|b| b.width),
        aperture_start: m.boot.as_ref().map(|b| b.aperture.start),
        aperture_bytes: m.boot.as_ref().map(|b| b.aperture.size()),
        hole64_bytes: s.hole64,
        mmio64_bytes: s.mmio64,
        phys_bits: Some(s.phys_bits),
        pdpe1gb: Some(s.pdpe1gb),
        cpu_vendor: s.vendor,
        ram_end: Some(s.ram_end),
        rules: Some(rules_of(s.firmware)),
        model_agrees: None,
        assumed: m.assumed.clone(),
        facts: Vec::new(),
    }
}

fn rules_of(f: Firmware) -> &'static str {
    match f {
        Firmware::Ovmf(r) => rules_name(r),
        Firmware::SeaBios(r) if !r.top => "SeaBIOS 1.16.2 and older (above RAM)",
        Firmware::SeaBios(r) if !r.top44 => {
            "SeaBIOS 1.16.3 (top of the address space, pad mode, e820 shift)"
        }
        Firmware::SeaBios(_) => "SeaBIOS 1.17.0 and newer (top at 2^44 above 44 bits)",
    }
}

/// `capacity.window_origin` for the report.
pub(crate) fn origin(ev: &Evidence, model: Option<&Model>) -> WindowOrigin {
    match ev.platform() {
        Platform::BareMetal => return WindowOrigin::of_kind(OriginKind::BareMetal, ev),
        Platform::Vmware | Platform::HyperV | Platform::OtherVm => {
            return WindowOrigin::of_kind(OriginKind::Hypervisor, ev)
        }
        Platform::Qemu | Platform::Unknown => {}
    }
    let Some(m) = model else {
        return WindowOrigin::of_kind(OriginKind::Unknown, ev);
    };
    let mut o = WindowOrigin::of_kind(
        m.boot.as_ref().map_or(OriginKind::Unknown, |b| b.origin),
        ev,
    );
    if let Some(b) = &m.boot {
        o.firmware_width_bits = Some(b.width);
        o.aperture_start = Some(b.aperture.start);
        o.aperture_bytes = Some(b.aperture.size());
    }
    o.hole64_bytes = m.setup.hole64;
    o.mmio64_bytes = m.setup.mmio64;
    o.rules = Some(rules_of(m.setup.firmware));
    o.model_agrees = Some(m.agrees);
    o.assumed = m.assumed.clone();
    o.facts = ev
        .firmware
        .fw_cfg
        .as_ref()
        .map(|fw| facts(fw, ev.firmware.kind()))
        .unwrap_or_default();
    o
}

/// The fw_cfg inputs the model took as fact, in words, for the firmware
/// that reads them.
fn facts(fw: &FwCfg, kind: FirmwareKind) -> Vec<String> {
    let mut out = Vec::new();
    if kind == FirmwareKind::Ovmf {
        match &fw.mmio64_mb {
            Input::Set(mb) => out.push(format!(
                "X-PciMmio64Mb={mb} ({}) set by the host (fw_cfg {})",
                human(mb.saturating_mul(1 << 20)),
                crate::model::fw_cfg::MMIO64_FILE
            )),
            Input::Unset => out.push("no X-PciMmio64Mb set by the host (fw_cfg)".into()),
            Input::Refused(why) => out.push(format!("X-PciMmio64Mb set, but {why} (fw_cfg)")),
            Input::Unknown => {}
        }
    }
    if kind == FirmwareKind::SeaBios {
        match &fw.seabios_pci64 {
            Input::Set(on) => out.push(format!(
                "{}={} set by the host (fw_cfg; SeaBIOS 1.17.0 and later read it)",
                crate::model::fw_cfg::SEABIOS_PCI64_FILE,
                if *on { "on" } else { "off" }
            )),
            Input::Unset => out.push(format!(
                "no {} set by the host (fw_cfg)",
                crate::model::fw_cfg::SEABIOS_PCI64_FILE
            )),
            Input::Refused(why) => out.push(format!(
                "{} set, but {why} (fw_cfg)",
                crate::model::fw_cfg::SEABIOS_PCI64_FILE
            )),
            Input::Unknown => {}
        }
    }
    if let Some(end) = fw.ram_end() {
        out.push(format!(
            "RAM ends at {end:#x} as QEMU mapped it for the firmware (fw_cfg {})",
            crate::model::fw_cfg::E820_FILE
        ));
    }
    match fw.reserved_memory_end {
        Input::Set(end) => out.push(format!(
            "the memory hot-plug area ends at {end:#x} (fw_cfg {})",
            crate::model::fw_cfg::RESERVED_MEMORY_END_FILE
        )),
        Input::Unset => out.push("no memory hot-plug area (fw_cfg)".into()),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::window::{Firmware as Fw, OvmfRules};
    use crate::evidence::{Window, WindowSource};
    use crate::model::fw_cfg::{E820Entry, FwCfg, Input, E820_RAM};
    use crate::model::platform::Firmware;

    /// A Debian 13 OVMF guest (C11: X-PciMmio64Mb as given) whose host
    /// still sets a 64 GiB aperture for eight 32 GiB GPUs, read from
    /// fw_cfg: the origin is that setting, as fact, and the first hint
    /// names it stale and replaces it.
    #[test]
    fn a_stale_mmio64_read_from_fw_cfg_is_the_origin_and_named() {
        let mut ev = crate::decide::tests::metal(46, 8);
        for g in &mut ev.gpus {
            g.bars[0].size = Some(32 * GIB);
        }
        ev.firmware = Firmware {
            bios_vendor: Some("EFI Development Kit II / OVMF".into()),
            bios_version: Some("0.0.0".into()),
            sys_vendor: Some("QEMU".into()),
            product_name: Some("Standard PC (Q35 + ICH9, 2009)".into()),
            fw_cfg: Some(FwCfg {
                readable: true,
                mmio64_mb: Input::Set(65536),
                seabios_pci64: Input::Unset,
                reserved_memory_end: Input::Unset,
                e820: Input::Set(vec![E820Entry {
                    start: 0,
                    length: GIB,
                    kind: E820_RAM,
                }]),
            }),
            ..Firmware::default()
        };
        ev.cpu.vendor = Some(CpuVendor::Amd);
        ev.cpu.pdpe1gb = Some(false);
        ev.ram_end = Some(GIB);
        // The window that firmware makes, as the guest would see it.
        let m = infer(&ev).expect("a QEMU guest");
        let stale = Setup {
            firmware: Fw::Ovmf(OvmfRules::STABLE_202505),
            mmio64: Some(64 * GIB),
            ..m.setup.clone()
        };
        let crs = stale.boot(&m.firmware_gpus).unwrap().crs.unwrap();
        ev.windows = vec![Window {
            range: crs,
            source: WindowSource::Iomem,
            bus: None,
        }];

        let d = crate::decide::conclude(&ev, None);
        let o = &d.origin;
        assert_eq!(o.kind, OriginKind::OvmfMmio64, "{o:?}");
        assert_eq!(o.aperture_bytes, Some(64 * GIB));
        assert_eq!(o.model_agrees, Some(true));
        assert!(
            o.facts
                .iter()
                .any(|f| f.starts_with("X-PciMmio64Mb=65536 (64 GiB) set by the host")),
            "{o:?}"
        );
        assert!(!o.assumed.contains(&"RAM ending below 4 GiB"), "{o:?}");
        let first = &d.hints[0].text;
        assert!(
            first.contains("because the host sets X-PciMmio64Mb=65536 (read from fw_cfg)")
                && first.contains("a stale setting, smaller than the 128 GiB window"),
            "{first}"
        );
        let aperture = d
            .hints
            .iter()
            .find(|h| h.id == crate::decide::hint::HintId::OvmfMmio64Aperture)
            .expect("an aperture hint");
        assert!(
            aperture
                .text
                .contains("Replace the host's `X-PciMmio64Mb=65536` with `X-PciMmio64Mb="),
            "{}",
            aperture.text
        );

        // Not read (no driver): the same window is found by its place, and
        // nothing is said to be the host's.
        ev.firmware.fw_cfg = Some(FwCfg::default());
        let d = crate::decide::conclude(&ev, None);
        assert!(d.origin.facts.is_empty());
        assert!(
            !d.hints[0].text.contains("read from fw_cfg"),
            "{}",
            d.hints[0].text
        );
    }

    /// The hot-plug area's size from where fw_cfg says it ends: QEMU starts
    /// it at the GiB after RAM's top.
    #[test]
    fn device_memory_from_reserved_memory_end() {
        let fw = |end: Input<u64>, map: Vec<E820Entry>| FwCfg {
            readable: true,
            reserved_memory_end: end,
            e820: Input::Set(map),
            ..FwCfg::default()
        };
        let ram = |start, length| E820Entry {
            start,
            length,
            kind: E820_RAM,
        };
        // 1 GiB of RAM, maxmem 8G, 2 slots: 4 GiB + 7 + 2 GiB.
        let f = fw(Input::Set(13 * GIB), vec![ram(0, GIB)]);
        assert_eq!(device_memory(&f, GIB), 9 * GIB);
        // 8 GiB on q35: RAM to 10 GiB, the area from there.
        let f = fw(
            Input::Set(20 * GIB),
            vec![ram(0, 2 * GIB), ram(4 * GIB, 6 * GIB)],
        );
        assert_eq!(device_memory(&f, 10 * GIB), 10 * GIB);
        assert_eq!(device_memory(&fw(Input::Unset, vec![]), GIB), 0);
    }
}
