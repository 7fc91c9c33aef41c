//! Prescriptions: for a QEMU guest as the model sees it (`predict`), every
//! change that the firmware model (`window`) predicts will make the GPUs
//! fit, smallest first.
//!
//! Each candidate change is applied to the setup and the next boot is
//! predicted (`Model::predict`). A candidate that
//! would stop the VM from starting, or would not end in every GPU placed,
//! is dropped. What remains is ordered by the boots it takes, then by how
//! many settings change, then a CPU flag before the address width before a
//! window size before a change in the guest.

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::{Change, HintId, Restart, Side};
use crate::decide::syntax;
use crate::decide::window::{Boot, Firmware, GpuBars, Machine, OriginKind, Setup};
use crate::model::platform::QemuMachine;

/// A change the model predicts helps, with what the next boot will show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prescription {
    pub id: HintId,
    pub side: Side,
    pub restart: Restart,
    pub change: Change,
    /// The diagnosis the next boot will show.
    pub expect: DiagnosisKind,
    /// Boots after this one until every GPU is placed, following the
    /// prescriptions (2 for a window the guest must then use with
    /// `pci=realloc`).
    pub boots_to_ok: u32,
    /// What the change does, in numbers, for the hint's text.
    pub effect: String,
}

/// Where `plan` takes it from.
pub(crate) use crate::decide::predict::Model;

impl Model {
    /// Every change predicted to end with all GPUs placed, best first.
    pub(crate) fn prescribe(&self) -> Vec<Prescription> {
        let mut s = Search {
            m: self,
            found: Vec::new(),
        };
        s.cpu_flag();
        s.widths();
        s.apertures();
        s.holes();
        s.guest();
        let mut out = s.found;
        out.sort_by_key(|(rank, p)| (p.boots_to_ok, p.change.count(), *rank));
        out.into_iter().map(|(_, p)| p).collect()
    }
}

/// The candidates tried so far that work, each with its kind's rank.
struct Search<'a> {
    m: &'a Model,
    found: Vec<(usize, Prescription)>,
}

impl Search<'_> {
    /// Keeps `change` when the boot after it (with `realloc` as given)
    /// places every GPU, at once or once the guest then boots with
    /// pci=realloc; says whether it did.
    fn consider(
        &mut self,
        rank: usize,
        id: HintId,
        change: Change,
        next: &Setup,
        realloc: bool,
        effect: String,
    ) -> bool {
        let m = self.m;
        let Ok(p) = m.predict(next, realloc) else {
            return false;
        };
        let boots = match p.kind {
            DiagnosisKind::Ok => 1,
            // The window is right; the guest kernel then places the rest
            // with pci=realloc.
            DiagnosisKind::FirmwareLeftUnassigned
                if !realloc
                    && m.predict(next, true)
                        .is_ok_and(|q| q.kind == DiagnosisKind::Ok) =>
            {
                2
            }
            _ => return false,
        };
        let (side, restart) = if change.kernel_cmdline_add.is_empty() {
            (Side::Host, Restart::Vm)
        } else {
            (Side::Guest, Restart::Reboot)
        };
        self.found.push((
            rank,
            Prescription {
                id,
                side,
                restart,
                change,
                expect: p.kind,
                boots_to_ok: boots,
                effect,
            },
        ));
        true
    }

    fn ok(&self, next: &Setup, realloc: bool) -> bool {
        self.m
            .predict(next, realloc)
            .is_ok_and(|p| p.kind == DiagnosisKind::Ok)
    }

    /// A CPU flag: 1 GiB pages let OVMF use the vCPU's width.
    fn cpu_flag(&mut self) {
        let s = &self.m.setup;
        if !matches!(s.firmware, Firmware::Ovmf(_)) || s.pdpe1gb {
            return;
        }
        let next = Setup {
            pdpe1gb: true,
            ..s.clone()
        };
        let change = Change {
            cpu_flags_add: vec!["pdpe1gb"],
            ..Change::default()
        };
        let effect = window_effect(&next, &self.m.firmware_gpus);
        self.consider(0, HintId::CpuPdpe1gb, change, &next, self.m.realloc, effect);
    }

    /// The address width, the least that works (with the flag where OVMF
    /// needs it too).
    fn widths(&mut self) {
        let s = self.m.setup.clone();
        let realloc = self.m.realloc;
        let ovmf = matches!(s.firmware, Firmware::Ovmf(_));
        for with_flag in [false, true] {
            if with_flag && (!ovmf || s.pdpe1gb) {
                continue;
            }
            for bits in (s.phys_bits + 1)..=46 {
                let next = Setup {
                    phys_bits: bits,
                    pdpe1gb: s.pdpe1gb || with_flag,
                    ..s.clone()
                };
                // Healthy at once, or once the guest then boots with
                // pci=realloc (SeaBIOS 1.16.3's misaligned ports: lab, 41
                // bits then realloc places all 8; `consider` counts the
                // boots).
                if !(self.ok(&next, realloc) || (!realloc && self.ok(&next, true))) {
                    continue;
                }
                let change = Change {
                    cpu_flags_add: if with_flag { vec!["pdpe1gb"] } else { vec![] },
                    phys_bits_min: Some(bits),
                    ..Change::default()
                };
                let effect = window_effect(&next, &self.m.firmware_gpus);
                // `consider` drops a width whose next boot shows a failure
                // realloc cannot mend; a wider one may do.
                if self.consider(1, HintId::CpuPhysBits, change, &next, realloc, effect) {
                    break;
                }
            }
        }
    }

    /// OVMF's aperture, the smallest power of two that places them all.
    fn apertures(&mut self) {
        let s = self.m.setup.clone();
        if !matches!(s.firmware, Firmware::Ovmf(_)) {
            return;
        }
        let gpus = &self.m.firmware_gpus;
        for shift in 35..=44 {
            let size = 1u64 << shift;
            let next = Setup {
                mmio64: Some(size),
                ..s.clone()
            };
            let boot = next.boot(gpus);
            if boot
                .as_ref()
                .is_ok_and(|b| b.origin == OriginKind::OvmfMmio64 && b.placed == gpus.len())
            {
                let change = Change {
                    fw_cfg: vec![syntax::aperture(size)],
                    ..Change::default()
                };
                let effect = window_effect(&next, gpus);
                let realloc = self.m.realloc;
                self.consider(
                    2,
                    HintId::OvmfMmio64Aperture,
                    change,
                    &next,
                    realloc,
                    effect,
                );
                break;
            }
        }
    }

    /// QEMU's hole: the window the guest kernel may use, which it fills
    /// itself with pci=realloc. The least power of two that works, only
    /// when the kernel's window is what falls short (with the window it
    /// has, pci=realloc alone is the step), and with half the hole to
    /// spare: the kernel also places hot-plug windows and other devices
    /// there. Where the firmware's window cannot be made right by one
    /// change (SeaBIOS 1.16.3's misaligned or wrapped window), the hole
    /// together with the least address width that lets it work: the guest
    /// kernel then lays the BARs out again with pci=realloc.
    fn holes(&mut self) {
        let s = self.m.setup.clone();
        let machine = match s.machine {
            Machine::Q35 => QemuMachine::Q35,
            Machine::I440fx => QemuMachine::I440fx,
        };
        if self.ok(&s, true) {
            return;
        }
        let widths = std::iter::once(s.phys_bits).chain((s.phys_bits + 1)..=46);
        for bits in widths {
            if bits != s.phys_bits && !self.found.is_empty() {
                return;
            }
            let base = Setup {
                phys_bits: bits,
                ..s.clone()
            };
            for shift in 36..=46 {
                let size = 1u64 << shift;
                if s.hole64.is_some_and(|h| h >= size) || size <= s.machine.default_hole64() {
                    continue;
                }
                let half = Setup {
                    hole64: Some(size / 2),
                    ..base.clone()
                };
                let next = Setup {
                    hole64: Some(size),
                    ..base.clone()
                };
                if !(self.ok(&half, true) && self.ok(&next, true)) {
                    continue;
                }
                let effect = match next.boot(&self.m.firmware_gpus) {
                    Ok(Boot { crs: Some(c), .. }) => format!(
                        "the guest kernel is offered {:#x}-{:#x} ({})",
                        c.start,
                        c.end,
                        crate::model::size::human(c.size())
                    ),
                    _ => String::new(),
                };
                let change = Change {
                    qemu_globals: vec![syntax::hole64(machine, size)],
                    phys_bits_min: (bits != s.phys_bits).then_some(bits),
                    ..Change::default()
                };
                let realloc = self.m.realloc;
                self.consider(3, HintId::QemuPciHole64Size, change, &next, realloc, effect);
                return;
            }
        }
    }

    /// The guest's own kernel.
    fn guest(&mut self) {
        if self.m.realloc {
            return;
        }
        let change = Change {
            kernel_cmdline_add: vec!["pci=realloc".into()],
            ..Change::default()
        };
        let s = self.m.setup.clone();
        let effect = "the guest kernel places the BARs the firmware left".into();
        self.consider(4, HintId::GuestPciRealloc, change, &s, true, effect);
    }
}

/// `the firmware's window becomes 8 TiB at 0x380000000000`.
fn window_effect(s: &Setup, gpus: &[GpuBars]) -> String {
    let Ok(b) = s.boot(gpus) else {
        return String::new();
    };
    if b.firmware_placed >= gpus.len() {
        return format!(
            "the firmware's window becomes {} at {:#x}, room for all {} GPUs",
            crate::model::size::human(b.aperture.size()),
            b.aperture.start,
            gpus.len()
        );
    }
    // SeaBIOS's layout, which the kernel redoes in part (kernel.rs).
    let Some(c) = b.crs else {
        return String::new();
    };
    let all_with_realloc = b.placed < gpus.len()
        && b.realloc_gpus
            .as_ref()
            .is_some_and(|r| r.iter().all(|p| *p));
    format!(
        "the guest kernel is offered {:#x}-{:#x} ({}) and places {} of {} GPUs there itself{}",
        c.start,
        c.end,
        crate::model::size::human(c.size()),
        b.placed,
        gpus.len(),
        if all_with_realloc {
            ", all of them with pci=realloc"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::window::OvmfRules;
    use crate::model::platform::CpuVendor;

    const GIB: u64 = 1 << 30;

    fn model(
        firmware: Firmware,
        phys_bits: u32,
        vendor: CpuVendor,
        gpus: usize,
        size: u64,
    ) -> Model {
        let setup = Setup::q35(firmware, phys_bits, vendor);
        Model::new(setup, vec![GpuBars::port(vec![size]); gpus], false).unwrap()
    }

    const OVMF: Firmware = Firmware::Ovmf(OvmfRules::STABLE_202211);

    fn ids(ps: &[Prescription]) -> Vec<HintId> {
        ps.iter().map(|p| p.id).collect()
    }

    #[test]
    fn ovmf_46_bits_without_1g_pages_first_gets_the_flag() {
        for size in [32 * GIB, 128 * GIB] {
            let m = model(OVMF, 46, CpuVendor::Amd, 8, size);
            let ps = m.prescribe();
            assert_eq!(ps[0].id, HintId::CpuPdpe1gb);
            assert_eq!(ps[0].change.cpu_flags_add, ["pdpe1gb"]);
            assert_eq!((ps[0].expect, ps[0].boots_to_ok), (DiagnosisKind::Ok, 1));
            assert_eq!((ps[0].side, ps[0].restart), (Side::Host, Restart::Vm));
            // An aperture OVMF cannot place (2 TiB for 8 x 128G above
            // 40 bits) is never prescribed.
            for p in &ps {
                for (_, v) in &p.change.fw_cfg {
                    let mib: u64 = v.parse().unwrap();
                    assert!(mib << 20 <= 512 * GIB, "{p:?}");
                }
            }
        }
        let ps = model(OVMF, 46, CpuVendor::Amd, 8, 32 * GIB).prescribe();
        assert_eq!(
            ids(&ps),
            [
                HintId::CpuPdpe1gb,
                HintId::OvmfMmio64Aperture,
                HintId::QemuPciHole64Size
            ]
        );
        assert_eq!(
            ps[1].change.fw_cfg,
            [("opt/ovmf/X-PciMmio64Mb".to_string(), "262144".to_string())]
        );
        // The hole takes a second boot, for pci=realloc.
        assert_eq!(
            (ps[2].expect, ps[2].boots_to_ok),
            (DiagnosisKind::FirmwareLeftUnassigned, 2)
        );
    }

    #[test]
    fn ovmf_40_bits_needs_more_bits_and_the_flag_together() {
        let ps = model(OVMF, 40, CpuVendor::Amd, 8, 128 * GIB).prescribe();
        assert_eq!(ps[0].id, HintId::CpuPhysBits);
        assert_eq!(ps[0].change.phys_bits_min, Some(43));
        assert_eq!(ps[0].change.cpu_flags_add, ["pdpe1gb"]);
        // Neither the flag alone nor the bits alone would do.
        assert!(!ids(&ps).contains(&HintId::CpuPdpe1gb));
        assert_eq!(ps.iter().filter(|p| p.id == HintId::CpuPhysBits).count(), 1);
    }

    #[test]
    fn an_intel_vcpu_with_40_bits_can_take_a_larger_classic_window() {
        let ps = model(OVMF, 40, CpuVendor::Intel, 8, 32 * GIB).prescribe();
        assert_eq!(ps[0].id, HintId::OvmfMmio64Aperture);
        assert!(ids(&ps).contains(&HintId::CpuPhysBits));
    }

    #[test]
    fn seabios_needs_only_the_bits_that_reach_the_last_bar() {
        let ps = model(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, 8, 128 * GIB).prescribe();
        assert_eq!(ids(&ps), [HintId::CpuPhysBits]);
        assert_eq!(ps[0].change.phys_bits_min, Some(41));
    }

    #[test]
    fn room_in_the_window_is_a_guest_realloc_after_the_host_fixes() {
        let mut m = model(OVMF, 46, CpuVendor::Amd, 8, 32 * GIB);
        m.setup.hole64 = Some(1 << 40);
        let ps = m.prescribe();
        assert_eq!(
            ids(&ps),
            [
                HintId::CpuPdpe1gb,
                HintId::OvmfMmio64Aperture,
                HintId::GuestPciRealloc
            ]
        );
        let r = &ps[2];
        assert_eq!(
            (r.side, r.restart, r.expect),
            (Side::Guest, Restart::Reboot, DiagnosisKind::Ok)
        );
        // With realloc already on, it is not prescribed again.
        m.realloc = true;
        assert!(!ids(&m.prescribe()).contains(&HintId::GuestPciRealloc));
    }

    #[test]
    fn a_hole_qemu_would_refuse_is_never_prescribed() {
        // 40 bits: QEMU refuses a hole of 1 TiB and more, and a smaller
        // one ends beyond what the vCPU addresses.
        let ps = model(OVMF, 40, CpuVendor::Amd, 8, 32 * GIB).prescribe();
        assert!(!ids(&ps).contains(&HintId::QemuPciHole64Size), "{ps:?}");
    }

    #[test]
    fn seabios_1_16_3s_wrapped_window_takes_41_bits_then_realloc() {
        // The seed case: Proxmox's SeaBIOS 1.16.3, kvm64 on AMD, 8 GPUs of
        // 128 GiB + 32 MiB, RAM above 4 GiB. The window wraps (E8). Lab
        // boots (2026-12-02, QEMU 10.0.2): at 41 bits the kernel places the
        // four ports SeaBIOS left above 2 TiB itself and the other four
        // are misaligned in their windows (4 of 8, firmware_left_unassigned);
        // 41 bits with pci=realloc: 8 of 8. 42 and 44 bits: 1 of 8, 46: 2.
        let fw = Firmware::SeaBios(crate::decide::window::SeabiosRules::of(
            crate::decide::window::SeabiosVersion(1, 16, 3),
        ));
        // The lab's guests boot with mem=1G.
        let setup = Setup {
            ram_end: crate::decide::window::ram_end(Machine::Q35, 64 * GIB),
            guest_mem: Some(GIB),
            ..Setup::q35(fw, 40, CpuVendor::Amd)
        };
        let g = vec![GpuBars::port(vec![128 * GIB, 32 << 20]); 8];
        let m = Model::new(setup, g, false).unwrap();
        assert_eq!(m.predict(&m.setup, false).unwrap().unassigned, 8);
        let at = |bits, realloc| {
            let next = Setup {
                phys_bits: bits,
                ..m.setup.clone()
            };
            8 - m.predict(&next, realloc).unwrap().unassigned
        };
        assert_eq!(
            [
                at(41, false),
                at(41, true),
                at(42, false),
                at(44, false),
                at(46, false)
            ],
            [4, 8, 1, 1, 2]
        );
        // 46 bits with realloc: the two aligned ports kept, four more fit.
        assert_eq!(at(46, true), 6);
        let ps = m.prescribe();
        let p = &ps[0];
        assert_eq!(p.id, HintId::CpuPhysBits);
        assert_eq!(p.change.phys_bits_min, Some(41));
        assert_eq!(
            (p.expect, p.boots_to_ok),
            (DiagnosisKind::FirmwareLeftUnassigned, 2)
        );
        assert!(p.effect.contains("4 of 8"), "{}", p.effect);
        // The width and the hole together work too (lab: 43 bits and a
        // 4 TiB hole with realloc, 8 of 8).
        let next = Setup {
            phys_bits: 43,
            hole64: Some(4 << 40),
            ..m.setup.clone()
        };
        assert_eq!(m.predict(&next, true).unwrap().kind, DiagnosisKind::Ok);
    }
}
