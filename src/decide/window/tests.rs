//! The model against the lab's measurements (docs/lab.md) and the review's
//! rows and vectors (docs/firmware-window.md, "Rules and their sources").

use super::*;
use crate::decide::window::qemu::TIB;

fn gpus(n: usize, size: u64) -> Vec<GpuBars> {
    (0..n).map(|_| GpuBars::port(vec![size])).collect()
}

fn ovmf(phys_bits: u32, pdpe1gb: bool) -> Setup {
    Setup {
        pdpe1gb,
        ..Setup::q35(
            Firmware::Ovmf(OvmfRules::STABLE_202211),
            phys_bits,
            CpuVendor::Amd,
        )
    }
}

fn seabios(phys_bits: u32) -> Setup {
    Setup {
        firmware: Firmware::SEABIOS_1_16_2,
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
    // 2025.02 trusts GuestPhysBits (C5, 202408) and is otherwise 202308's.
    assert_eq!(
        OvmfRules::for_release(2025, 2),
        OvmfRules {
            guest_phys_bits: true,
            ..OvmfRules::STABLE_202308
        }
    );
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
            qemu: QemuRules::of(
                QemuVersion(7, 2),
                Some(QemuVersion(7, if hole { 2 } else { 0 })),
            ),
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
    let g = GpuBars::port(vec![128 * GIB, 32 << 20, 16 << 20]);
    let w = g.port_window().unwrap();
    assert_eq!(w.align, 128 * GIB);
    assert_eq!(w.size, 128 * GIB + (48 << 20));
    // Eight of them in SeaBIOS's window: 8 strides of 256 GiB, the last
    // port's window too rounded up to its largest child (E3: pciinit.c
    // 1.16.2 L976 `size = ALIGN(sum, align)`; lab L20).
    let b = seabios(46).boot(&vec![g; 8]).unwrap();
    assert_eq!(b.aperture.start, 0x20_0000_0000);
    assert_eq!(b.crs.unwrap().end, 0x20_0000_0000 + 8 * 256 * GIB - 1);
}

#[test]
fn ram_splits_at_4g_as_qemu_does() {
    const GIB: u64 = 1 << 30;
    assert_eq!(ram_end(Machine::Q35, GIB), GIB);
    assert_eq!(ram_end(Machine::Q35, 512 * GIB), FOUR_GIB + 510 * GIB);
    assert_eq!(ram_end(Machine::I440fx, 4 * GIB), FOUR_GIB + GIB);
}

// The review's test vectors V1-V18 (docs/firmware-window.md, "Test
// vectors"): each gives upstream's answer, from the source at the tag
// named, or from the boot (B1-B9) or lab row (L-rows) that measured it.

const MIB: u64 = 1 << 20;

fn seabios_v(v: (u32, u32, u32)) -> Firmware {
    Firmware::SeaBios(SeabiosRules::of(SeabiosVersion(v.0, v.1, v.2)))
}

fn ovmf_v(v: &str) -> Firmware {
    Firmware::Ovmf(OvmfRules::of(
        crate::parse::release::edk2_build(v).expect("a release"),
    ))
}

fn vm(fw: Firmware, pb: u32, vendor: CpuVendor, ram: u64) -> Setup {
    Setup {
        ram_end: ram_end(Machine::Q35, ram),
        ..Setup::q35(fw, pb, vendor)
    }
}

fn each(n: usize, bars: &[u64]) -> Vec<GpuBars> {
    (0..n).map(|_| GpuBars::port(bars.to_vec())).collect()
}

fn usable(b: &Boot) -> Vec<bool> {
    b.gpus.iter().map(|g| g.usable).collect()
}

#[test]
fn v1_seabios_1_16_3_shifts_below_the_ht_entry_and_wraps() {
    // E8, E6a: 7 x 128 GiB at 40 bits on AMD: top - size = 128 GiB, which
    // overlaps [0xFD_0000_0000, 1 TiB), so the base goes 896 GiB lower and
    // wraps past zero: nothing usable (lab L15).
    let s = vm(seabios_v((1, 16, 3)), 40, CpuVendor::Amd, GIB);
    // (L15 and L16 read the firmware's placement back: `firmware_placed`;
    // what the kernel then places itself is kernel.rs's.)
    let b = s.boot(&each(7, &[128 * GIB])).unwrap();
    assert_eq!((b.origin, b.firmware_placed), (OriginKind::SeabiosTop, 0));
    // From -768 GiB: the BARs at -128 GiB (its last byte 2^64-1) and at 0
    // read back as unprogrammed (lab: the seed case's wrapped BARs).
    assert_eq!(b.gpus.iter().filter(|g| g.programmed).count(), 5);
    // 4 of them: base 512 GiB - 512 GiB = 0: the port at 0 lies over RAM
    // and below 4 GiB; the three above it are aligned and reachable
    // (inference from the rule; not run).
    assert_eq!(s.boot(&each(4, &[128 * GIB])).unwrap().firmware_placed, 3);
    // 5 with 64 GiB of RAM (pad mode): 640 GiB from -256 GiB wraps; the
    // ports mapped from 128 and 256 GiB stay aligned (inference; the
    // lab's wrapped boots, 8 x (128 GiB + 32 MiB), are in kernel.rs).
    let big = vm(seabios_v((1, 16, 3)), 40, CpuVendor::Amd, 64 * GIB);
    assert_eq!(big.boot(&each(5, &[128 * GIB])).unwrap().firmware_placed, 2);
    // 8 (lab L16: wrapped).
    assert_eq!(s.boot(&each(8, &[128 * GIB])).unwrap().firmware_placed, 0);
    // The fixes: phys-bits 41, or SeaBIOS 1.16.2, or an Intel vCPU at 40
    // bits (untrusted: above RAM).
    let at41 = Setup {
        phys_bits: 41,
        ..s.clone()
    };
    assert_eq!(at41.boot(&each(7, &[128 * GIB])).unwrap().placed, 7);
    let old = Setup {
        firmware: Firmware::SEABIOS_1_16_2,
        ..s.clone()
    };
    assert_eq!(old.boot(&each(7, &[128 * GIB])).unwrap().placed, 7);
}

#[test]
fn v2_seabios_1_16_3_pad_mode_misaligns_multi_bar_ports() {
    let g = [128 * GIB, 32 * MIB, 16 * MIB];
    // E9a: ports of ALIGN(128G+48M, 2^46>>11 = 32 GiB) = 160 GiB in an
    // 8 TiB window at 0x3800_0000_0000, the port of the highest bus
    // mapped first: only the GPUs of buses 8 and 4 keep the 128 GiB BAR
    // aligned (lab boot, 2026-12-02: SeaBIOS 1.16.3, AMD, 46 bits, 64 GiB,
    // 8 x (128 GiB + 32 MiB): 04:00 and 08:00 placed).
    let s = vm(seabios_v((1, 16, 3)), 46, CpuVendor::Amd, 64 * GIB);
    let b = s.boot(&each(8, &g)).unwrap();
    // (The 8 TiB is the size SeaBIOS places by; what it programs, the
    // aperture here, spans the 8 ports: 1280 GiB.)
    assert_eq!(b.aperture.start, 0x3800_0000_0000);
    assert_eq!(b.aperture.size(), 1280 * GIB);
    assert_eq!(
        usable(&b),
        [false, false, false, true, false, false, false, true]
    );
    // 1.17.0: E9b keeps the 128 GiB alignment, E6b puts the top at 2^44:
    // 256 GiB ports in 2 TiB at 0xE00_0000_0000, all placed.
    let s = vm(seabios_v((1, 17, 0)), 46, CpuVendor::Amd, 64 * GIB);
    let b = s.boot(&each(8, &g)).unwrap();
    assert_eq!((b.aperture.start, b.placed), (0xE00_0000_0000, 8));
    // V2b: 1 GiB of RAM, no pad mode: 256 GiB ports (E3), 2 TiB at
    // 0x3E00_0000_0000, all placed.
    let s = vm(seabios_v((1, 16, 3)), 46, CpuVendor::Amd, GIB);
    let b = s.boot(&each(8, &g)).unwrap();
    assert_eq!((b.aperture.start, b.placed), (0x3E00_0000_0000, 8));
}

#[test]
fn v3_debian_13_ovmf_honours_a_small_x_pcimmio64mb() {
    // F2: 2025.02-8+deb13u1 carries 9ac1704af6 (lab L9).
    let s = Setup {
        pdpe1gb: true,
        mmio64: Some(64 * GIB),
        ..vm(ovmf_v("2025.02-8+deb13u1"), 46, CpuVendor::Amd, 16 * GIB)
    };
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!(
        (b.origin, b.aperture.start, b.placed),
        (OriginKind::OvmfMmio64, 0x10_0000_0000, 1)
    );
    // Upstream 2025.02 treats it as a minimum: the 8 TiB dynamic window.
    let up = Setup {
        firmware: ovmf_v("2025.02"),
        ..s
    };
    assert_eq!(up.boot(&each(8, &[32 * GIB])).unwrap().placed, 8);
}

#[test]
fn ubuntu_24_04_ovmf_honours_a_small_x_pcimmio64mb_from_its_fourth_update() {
    // F9: 2024.02-2ubuntu0.4 cherry-picked the patch of F2. Lab boot m1 of
    // vm-tests/lab/ovmf-mmio64-exact on 2024.02-2ubuntu0.10: 4 x 32 GiB
    // on root ports, EPYC at 46 bits with 1 GiB pages, 16 GiB of RAM,
    // X-PciMmio64Mb=65536: the window at 64 GiB, one device placed.
    let s = Setup {
        pdpe1gb: true,
        mmio64: Some(64 * GIB),
        ..vm(ovmf_v("2024.02-2ubuntu0.10"), 46, CpuVendor::Amd, 16 * GIB)
    };
    let b = s.boot(&each(4, &[32 * GIB])).unwrap();
    assert_eq!(
        (b.origin, b.aperture.start, b.placed),
        (OriginKind::OvmfMmio64, 0x10_0000_0000, 1)
    );
    // Its builds before the fourth update, as upstream: the value is a
    // minimum and the 8 TiB dynamic window holds all four.
    let before = Setup {
        firmware: ovmf_v("2024.02-2ubuntu0.3"),
        ..s
    };
    assert_eq!(before.boot(&each(4, &[32 * GIB])).unwrap().placed, 4);
}

#[test]
fn v4_guest_phys_bits_makes_a_40_bit_intel_vcpu_trusted() {
    // A6 + C5 (inference: needs KVM on Linux 6.10+).
    let new = Setup {
        qemu: QemuRules::of(QemuVersion(10, 0), None),
        guest_phys_bits: Some(40),
        ..vm(ovmf_v("2025.02"), 40, CpuVendor::Intel, 16 * GIB)
    };
    let b = new.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!(
        (b.origin, b.aperture.start, b.placed),
        (OriginKind::OvmfDynamic, 0xE0_0000_0000, 3)
    );
    // Older stacks: the classic 32 GiB window, 1 placed.
    let old = Setup {
        guest_phys_bits: None,
        ..new.clone()
    };
    assert_eq!(old.boot(&each(8, &[32 * GIB])).unwrap().placed, 1);
    let q72 = Setup {
        qemu: QemuRules::V7_2,
        ..new.clone()
    };
    assert_eq!(q72.boot(&each(8, &[32 * GIB])).unwrap().placed, 1);
    // Sharper: one 64 GiB BAR with 2025.05 fits the 128 GiB window.
    let one = Setup {
        firmware: ovmf_v("2025.05"),
        ..new
    };
    assert_eq!(one.boot(&each(1, &[64 * GIB])).unwrap().placed, 1);
}

#[test]
fn v5_named_models_have_1g_pages() {
    // A5 (boot B1): EPYC at 46 bits: 8 TiB at 0x3800_0000_0000.
    let s = Setup {
        pdpe1gb: cpu_models::pdpe1gb("EPYC").unwrap(),
        ..vm(ovmf_v("2022.11"), 46, CpuVendor::Amd, 512 * MIB)
    };
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!((b.aperture.start, b.placed), (0x3800_0000_0000, 8));
    assert_eq!(cpu_models::pdpe1gb("Icelake-Server"), Some(true));
}

#[test]
fn v6_empty_hot_plug_ports_take_padding() {
    // D2 (boots B2 and the control B5).
    let s = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB);
    assert_eq!(s.boot(&each(1, &[128 * GIB])).unwrap().placed, 1);
    let three = Setup {
        empty_ports: 3,
        ..s
    };
    let b = three.boot(&each(1, &[128 * GIB])).unwrap();
    assert_eq!(b.placed, 0);
    assert!(!b.gpus[0].programmed);
}

#[test]
fn v7_ovmf_rejects_the_largest_device_first() {
    // D3 (boot B3): the 128 GiB device is rejected, the 32 GiB one kept.
    let s = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 16 * GIB);
    let g = vec![
        GpuBars::port(vec![128 * GIB, 32 * MIB]),
        GpuBars::port(vec![32 * GIB, 32 * MIB]),
    ];
    let b = s.boot(&g).unwrap();
    assert_eq!(usable(&b), [false, true]);
}

#[test]
fn v8_ovmf_on_i440fx_abandons_the_root_bus() {
    // D4 (boot B6): nothing programmed; the kernel gets QEMU's 2 GiB hole.
    let s = Setup {
        machine: Machine::I440fx,
        ..vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB)
    };
    let g: Vec<GpuBars> = (0..3)
        .map(|_| GpuBars::new(vec![64 * GIB], Attach::Bus0))
        .collect();
    let b = s.boot(&g).unwrap();
    assert!(b.bus_abandoned);
    assert!(b.gpus.iter().all(|g| !g.programmed));
    assert_eq!(b.crs, Some(Range::new(0x1_0000_0000, 0x1_7FFF_FFFF)));
    // Two of them fit the 128 GiB window: nothing to reject, all placed.
    assert_eq!(s.boot(&g[..2]).unwrap().placed, 2);
}

#[test]
fn d8_ovmf_abandons_the_root_bus_when_its_rejections_leave_nothing_64_bit() {
    // D8 (lab boots of campaign record 1256 and its variants): 4 x 256 GiB
    // single-BAR devices on root ports, a 32 GiB window at 40 bits on
    // Intel. Every device is rejected, nothing is left in the window, and
    // OVMF gives up on the whole root bus.
    let s = vm(ovmf_v("2025.02"), 40, CpuVendor::Intel, 128 * GIB);
    let b = s.boot(&each(4, &[256 * GIB])).unwrap();
    assert!(b.bus_abandoned && b.nothing_left);
    assert_eq!(b.placed, 0);
    // A 32 GiB X-PciMmio64Mb pads no port either (lab b3).
    let exact = Setup {
        mmio64: Some(32 * GIB),
        ..s.clone()
    };
    assert!(exact.boot(&each(4, &[256 * GIB])).unwrap().bus_abandoned);
    // The same with one device, and behind Proxmox's empty ports.
    assert!(s.boot(&each(1, &[256 * GIB])).unwrap().bus_abandoned);
    let ports = Setup {
        empty_ports: 4,
        ..s.clone()
    };
    assert!(ports.boot(&each(4, &[256 * GIB])).unwrap().bus_abandoned);
    // A virtio NIC's 64-bit BAR left on bus 0: the bus is allocated.
    let nic = Setup {
        others: vec![GpuBars::new(
            vec![proxmox::VIRTIO_BAR],
            proxmox::virtio_attach(false),
        )],
        ..s.clone()
    };
    let b = nic.boot(&each(4, &[256 * GIB])).unwrap();
    assert!(!b.bus_abandoned);
    assert_eq!(b.placed, 0);
    // A GPU-shaped device keeps its 32 MiB function: allocated.
    let shaped: Vec<GpuBars> = (0..4).map(|_| split(256 * GIB, Attach::RootPort)).collect();
    assert!(!s.boot(&shaped).unwrap().bus_abandoned);
    // 16 GiB devices: two are kept, nothing abandoned.
    let b = s.boot(&each(4, &[16 * GIB])).unwrap();
    assert_eq!((b.bus_abandoned, b.placed), (false, 2));
    // A 64 GiB X-PciMmio64Mb pads the ports the rejections empty.
    let padded = Setup {
        mmio64: Some(64 * GIB),
        ..s.clone()
    };
    assert!(!padded.boot(&each(4, &[256 * GIB])).unwrap().bus_abandoned);
    // Nothing rejected, nothing abandoned.
    assert!(!s.boot(&[]).unwrap().bus_abandoned);
    // D4 is not D8: GPUs on bus 0 are never rejected.
    let pc = Setup {
        machine: Machine::I440fx,
        ..vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB)
    };
    let bus0: Vec<GpuBars> = (0..3)
        .map(|_| GpuBars::new(vec![64 * GIB], Attach::Bus0))
        .collect();
    let b = pc.boot(&bus0).unwrap();
    assert!(b.bus_abandoned && !b.nothing_left);
}

#[test]
fn v9_seabios_on_i440fx_packs_bars_across_devices() {
    // E4 (boot B7).
    let s = Setup {
        machine: Machine::I440fx,
        ..vm(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, 512 * MIB)
    };
    let g: Vec<GpuBars> = (0..4)
        .map(|_| GpuBars::new(vec![128 * GIB, 32 * MIB], Attach::Bus0))
        .collect();
    let b = s.boot(&g).unwrap();
    assert_eq!(b.placed, 4);
    assert_eq!(b.crs, Some(Range::new(0x20_0000_0000, 0xA0_07FF_FFFF)));
}

#[test]
fn v10_gpus_behind_one_bridge_take_no_padding() {
    // D5, G6 (boot B9): 4 of 8 placed.
    let s = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, GIB);
    let g: Vec<GpuBars> = (0..8)
        .map(|_| GpuBars::new(vec![32 * GIB], Attach::Bridge(0)))
        .collect();
    let b = s.boot(&g).unwrap();
    assert_eq!(b.placed, 4);
    // The earlier devices behind the bridge are the ones rejected (B9).
    assert_eq!(
        usable(&b),
        [false, false, false, false, true, true, true, true]
    );
    assert_eq!(s.boot(&each(8, &[32 * GIB])).unwrap().placed, 3);
}

#[test]
fn v11_the_memory_hot_plug_area_moves_the_window() {
    // B3, B9 (boot B8): -m 1G,slots=255,maxmem=512G: reserved-memory-end
    // 770 GiB, the window from 800 GiB, the 8th GPU beyond 1 TiB.
    let s = Setup {
        device_memory: 511 * GIB + 255 * GIB,
        ..vm(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, GIB)
    };
    assert_eq!(s.memory_map().reserved_end, Some(770 * GIB));
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!(b.placed, 7);
    assert_eq!(b.crs, Some(Range::new(0xC8_0000_0000, 0xFF_FFFF_FFFF)));
}

#[test]
fn v12_x_pcimmio64mb_above_16_tib_is_ignored() {
    // C2 (boot B4): the dynamic window, 3 placed.
    let s = Setup {
        mmio64: Some(32 * TIB),
        ..vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB)
    };
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!((b.origin, b.placed), (OriginKind::OvmfDynamic, 3));
    assert_eq!(b.crs.unwrap().start, 0xE0_0000_0000);
}

#[test]
fn v13_qemu_7_0_and_older_has_no_phys_bits_check() {
    // B4, B6, F8: QEMU 6.2 starts with a 1 TiB hole at 40 bits.
    let s = Setup {
        qemu: QemuRules::of(QemuVersion(6, 2), None),
        hole64: Some(TIB),
        ..vm(ovmf_v("2022.02"), 40, CpuVendor::Amd, 8 * GIB)
    };
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!(
        (b.origin, b.aperture.start, b.placed),
        (OriginKind::OvmfClassic, 0x8_0000_0000, 1)
    );
    assert_eq!(b.crs, Some(Range::new(0x8_0000_0000, 0xFF_FFFF_FFFF)));
    // 7.1 and later refuse it.
    let new = Setup {
        qemu: QemuRules::V7_2,
        ..s
    };
    assert!(matches!(
        new.boot(&each(8, &[32 * GIB])),
        Err(NoBoot::QemuRefuses { .. })
    ));
}

#[test]
fn v14_a_host_phys_bits_limit_caps_the_width() {
    // A3/H3: host-passthrough with limit 40 on an Intel host is a 40-bit
    // Intel vCPU: the classic window, 1 placed (the reader applies the
    // limit: commands/plan).
    let s = vm(ovmf_v("2023.08"), 40, CpuVendor::Intel, GIB);
    let s = Setup { pdpe1gb: true, ..s };
    assert_eq!(s.boot(&each(8, &[32 * GIB])).unwrap().placed, 1);
}

#[test]
fn v15_seabios_1_17_0_puts_the_top_at_2_44() {
    // E6b: placed by a 2 TiB size (pad mode) below 2^44; the BARs span
    // 1 TiB of it.
    let s = vm(seabios_v((1, 17, 0)), 46, CpuVendor::Amd, 64 * GIB);
    let b = s.boot(&each(8, &[128 * GIB])).unwrap();
    assert_eq!(
        (b.aperture.start, b.aperture.size(), b.placed),
        (0xE00_0000_0000, TIB, 8)
    );
    // 1.16.3 at 2^46: 8 TiB at 0x3800_0000_0000 (lab L14's layout).
    let s = vm(seabios_v((1, 16, 3)), 46, CpuVendor::Amd, 64 * GIB);
    assert_eq!(
        s.boot(&each(8, &[128 * GIB])).unwrap().aperture.start,
        0x3800_0000_0000
    );
}

#[test]
fn v16_proxmox_3_20230228_4_caps_at_46() {
    // F4.
    let s = Setup {
        pdpe1gb: true,
        ..vm(ovmf_v("3.20230228-4"), 48, CpuVendor::Amd, 64 * GIB)
    };
    let b = s.boot(&each(8, &[128 * GIB])).unwrap();
    assert_eq!((b.aperture.start, b.placed), (0x3800_0000_0000, 8));
}

#[test]
fn v17_no_ht_move_on_machine_types_7_0_and_older() {
    // C10 with B5: no e820 entry, the window stays at 0xE0_0000_0000.
    let s = Setup {
        qemu: QemuRules::of(QemuVersion(7, 2), Some(QemuVersion(7, 0))),
        ..vm(ovmf_v("2023.08"), 40, CpuVendor::Amd, 8 * GIB)
    };
    let b = s.boot(&each(8, &[32 * GIB])).unwrap();
    assert_eq!((b.aperture.start, b.placed), (0xE0_0000_0000, 3));
    // Machine types 7.1+: below the HT entry, at 0xC0_0000_0000.
    let new = Setup {
        qemu: QemuRules::V7_2,
        ..s
    };
    assert_eq!(
        new.boot(&each(8, &[32 * GIB])).unwrap().aperture.start,
        0xC0_0000_0000
    );
}

#[test]
fn v18_rhel_host_phys_bits_given_as_input() {
    // A1: RHEL's qemu-kvm default (host-phys-bits on) is not read from the
    // host (out of scope, docs/firmware-window.md); given as phys-bits 46
    // with EPYC-Milan's own 1 GiB pages, all 8 fit.
    let s = Setup {
        pdpe1gb: cpu_models::pdpe1gb("EPYC-Milan").unwrap(),
        ..vm(ovmf_v("2024.02"), 46, CpuVendor::Amd, 64 * GIB)
    };
    assert_eq!(s.boot(&each(8, &[32 * GIB])).unwrap().placed, 8);
}

#[test]
fn v19_a_port_window_ending_at_2_64_collapses_the_kernels_window() {
    // B7 (audit §1; campaign boots 2026-12-03, SeaBIOS 1.16.3 and 1.17.0,
    // QEMU 7.2, q35, qemu64 AMD 40 bits, 512 MiB, 5 x 128 GiB on root
    // ports): the layout wraps to -256 GiB, the port at -128 GiB ends at
    // 2^64 and is counted, upb + 1 is 0, x-pci-hole64-fix raises it to
    // 4 GiB + 32 GiB. `root bus resource [mem 0x100000000-0x8ffffffff
    // window]`; none of the five placed, the firmware left the BARs at 0
    // and at -128 GiB unprogrammed.
    for v in [(1, 16, 3), (1, 17, 0)] {
        let s = Setup {
            ram_end: ram_end(Machine::Q35, 512 * MIB),
            ..Setup::q35(seabios_v(v), 40, CpuVendor::Amd)
        };
        let b = s.boot(&each(5, &[128 * GIB])).unwrap();
        assert_eq!(
            b.crs,
            Some(Range::new(0x1_0000_0000, 0x8_ffff_ffff)),
            "{v:?}"
        );
        assert!(b.crs_wrapped);
        assert_eq!(b.placed, 0, "{v:?}");
        assert_eq!(b.gpus.iter().filter(|g| !g.programmed).count(), 2);
        // pci=realloc moves nothing into 32 GiB.
        assert_eq!(b.realloc_gpus, Some(vec![false; 5]));
        // Without x-pci-hole64-fix (machine types 2.10 and older, B7f) the
        // span reaches 2^64 - 1, and the kernel keeps what 40 bits
        // address. (Such a machine type has no HT entry to shift below,
        // so the rule alone is set here.)
        assert!(!QemuRules::of(QemuVersion(7, 2), Some(QemuVersion(2, 10))).hole64_fix);
        let old = Setup {
            qemu: QemuRules {
                hole64_fix: false,
                ..QemuRules::V7_2
            },
            ..s.clone()
        };
        let b = old.boot(&each(5, &[128 * GIB])).unwrap();
        assert_eq!(b.crs, Some(Range::new(FOUR_GIB, TIB - 1)));
    }
    // 7 x 128 GiB with 1 GiB of RAM (campaign boot 2026-12-03): from -768
    // GiB, the port at -128 GiB again ends at 2^64: none placed.
    let s = vm(seabios_v((1, 16, 3)), 40, CpuVendor::Amd, GIB);
    let b = s.boot(&each(7, &[128 * GIB])).unwrap();
    assert_eq!(b.crs, Some(Range::new(0x1_0000_0000, 0x8_ffff_ffff)));
    assert_eq!(b.placed, 0);
    // 4 x 128 GiB: from 0, no entry ends at 2^64; the span runs from
    // 4 GiB (the port at 0 clipped) to 512 GiB.
    let b = s.boot(&each(4, &[128 * GIB])).unwrap();
    assert_eq!(b.crs, Some(Range::new(FOUR_GIB, 512 * GIB - 1)));
    assert!(!b.crs_wrapped);
}

#[test]
fn v20_seabios_1_17_0_reads_pad_mode_from_fw_cfg() {
    // E7b: opt/org.seabios/pci64 (pciinit.c rel-1.17.0 L1205-1213). With
    // 64 GiB of RAM pad mode is on by default: the 1 TiB of ports placed by
    // a 2 TiB size below 2^44 (V15); "off" places them by their own size,
    // from 2^44 - 1 TiB.
    let s = vm(seabios_v((1, 17, 0)), 46, CpuVendor::Amd, 64 * GIB);
    let start = |s: &Setup| s.boot(&each(8, &[128 * GIB])).unwrap().aperture.start;
    assert_eq!(start(&s), 0xE00_0000_0000);
    let off = Setup {
        seabios_pci64: Some(false),
        ..s.clone()
    };
    assert_eq!(start(&off), 0xF00_0000_0000);
    // "on" with 1 GiB of RAM: pad mode all the same.
    let small = vm(seabios_v((1, 17, 0)), 46, CpuVendor::Amd, GIB);
    let on = Setup {
        seabios_pci64: Some(true),
        ..small.clone()
    };
    assert_eq!(start(&small), 0xF00_0000_0000);
    assert_eq!(start(&on), 0xE00_0000_0000);
    // 1.16.3 has no such file.
    let old = vm(seabios_v((1, 16, 3)), 46, CpuVendor::Amd, 64 * GIB);
    let old_off = Setup {
        seabios_pci64: Some(false),
        ..old.clone()
    };
    assert_eq!(start(&old), start(&old_off));
}

#[test]
fn v21_a_named_model_starts_from_its_first_release() {
    // A5: every model QEMU 7.2.0 lacks, at the release before its first
    // (QEMU: "unable to find CPU model") and at its first.
    let before = |v: QemuVersion| match v {
        QemuVersion(a, 0) => QemuVersion(a - 1, 2),
        QemuVersion(a, b) => QemuVersion(a, b - 1),
    };
    let mut newer = 0;
    for m in cpu_models::MODELS {
        let at = |q: QemuVersion| Setup {
            cpu_model: Some(*m),
            qemu: QemuRules::of(q, None),
            ..vm(seabios_v((1, 16, 3)), 40, CpuVendor::Amd, GIB)
        };
        match m.since {
            Some(v) => {
                newer += 1;
                assert!(
                    matches!(at(before(v)).qemu_starts(), Err(NoBoot::QemuRejects { .. })),
                    "{}",
                    m.name
                );
                assert_eq!(at(v).qemu_starts(), Ok(()), "{}", m.name);
            }
            None => assert_eq!(at(QemuVersion(7, 2)).qemu_starts(), Ok(()), "{}", m.name),
        }
    }
    // SapphireRapids, GraniteRapids, SierraForest, ClearwaterForest,
    // EPYC-Genoa, YongFeng, EPYC-Turin.
    assert_eq!(newer, 7);
    // A6: guest-phys-bits=N is QEMU 9.1's property, and must be 32 to
    // phys-bits.
    let gpb = |q: (u32, u32), n: u32| Setup {
        guest_phys_bits_arg: Some(n),
        qemu: QemuRules::of(QemuVersion(q.0, q.1), None),
        ..vm(ovmf_v("2025.02"), 40, CpuVendor::Intel, GIB)
    };
    assert!(gpb((9, 0), 40).qemu_starts().is_err());
    assert_eq!(gpb((9, 1), 40).qemu_starts(), Ok(()));
    assert!(gpb((9, 1), 41).qemu_starts().is_err());
    assert!(gpb((9, 1), 31).qemu_starts().is_err());
    assert_eq!(gpb((9, 1), 0).qemu_starts(), Ok(()));
}

#[test]
fn seabios_keeps_small_64bit_bars_below_4g_without_pad_mode() {
    // E1: two 256 MiB BARs fit q35's 32-bit window: no 64-bit window.
    let s = vm(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, GIB);
    let b = s.boot(&each(2, &[256 * MIB])).unwrap();
    assert_eq!((b.origin, b.placed), (OriginKind::SeabiosBelow4g, 2));
    assert!(b.aperture.end < 0xFEC0_0000);
    // The kernel's 64-bit window is QEMU's hole from 4 GiB.
    assert_eq!(b.crs.unwrap().start, 0x1_0000_0000);
    // With 8 GiB, 2 GiB of it below 4 GiB (B1e): the 32-bit window starts
    // at 0xC000_0000 as with 1 GiB, and they stay there (the model took
    // the low RAM to reach 4 GiB and went above RAM).
    let big = vm(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, 8 * GIB);
    let b = big.boot(&each(2, &[256 * MIB])).unwrap();
    assert_eq!((b.origin, b.placed), (OriginKind::SeabiosBelow4g, 2));
    // 1.16.3 with RAM above 4 GiB (pad mode) always goes high.
    let p = vm(seabios_v((1, 16, 3)), 46, CpuVendor::Amd, 8 * GIB);
    assert_eq!(
        p.boot(&each(2, &[256 * MIB])).unwrap().origin,
        OriginKind::SeabiosTop
    );
}

/// A GPU whose small 64-bit BAR sits in function 1, as the campaign's
/// stand-ins have it.
fn split(vram: u64, attach: Attach) -> GpuBars {
    GpuBars {
        bars: vec![vram, 32 * MIB],
        funcs: vec![0, 1],
        attach,
    }
}

#[test]
fn ovmf_rejects_a_function_and_keeps_the_gpus_other_one() {
    // D3 per function (campaign record 0036: OVMF 2026.08, 37 bits with
    // pdpe1gb, one 64 GiB stand-in, four empty ports): the VRAM function is
    // rejected, the 32 MiB one is placed at the aperture's base, 32 GiB,
    // and the port's window is that function alone.
    let s = Setup {
        pdpe1gb: true,
        empty_ports: 4,
        ..vm(ovmf_v("2026.08"), 37, CpuVendor::Intel, GIB)
    };
    let b = s.boot(&[split(64 * GIB, Attach::RootPort)]).unwrap();
    assert_eq!(b.placed, 0);
    assert!(!b.gpus[0].programmed);
    assert_eq!(b.crs.map(|r| r.start), Some(32 * GIB));
    // Both BARs in function 0 (a real GPU): rejected together, nothing
    // of the GPU in the window.
    let one = s.boot(&[GpuBars::port(vec![64 * GIB, 32 * MIB])]).unwrap();
    assert_eq!(one.placed, 0);
    assert_ne!(one.crs.map(|r| r.start), Some(32 * GIB));
}

#[test]
fn ovmf_keeps_the_small_functions_behind_a_bridge() {
    // Campaign record 0021: OVMF 2025.02, AMD qemu64 at 39 bits, six
    // 32 GiB stand-ins behind one pci-bridge: every VRAM function rejected,
    // the six 32 MiB functions kept in the bridge's window at 32 GiB.
    let s = vm(ovmf_v("2025.02-8+deb13u1"), 39, CpuVendor::Amd, GIB);
    let g: Vec<GpuBars> = (0..6).map(|_| split(32 * GIB, Attach::Bridge(0))).collect();
    let b = s.boot(&g).unwrap();
    assert_eq!(b.placed, 0);
    assert!(b.gpus.iter().all(|g| !g.programmed));
    assert_eq!(b.crs.map(|r| r.start), Some(32 * GIB));
}

#[test]
fn a_port_that_keeps_a_function_takes_the_padding_when_larger() {
    // D1 with D3 (campaign --config, 2026-12-02, OVMF 2025.02, QEMU
    // 10.0.2, Intel at 44 bits with pdpe1gb: a 2 TiB window from 14 TiB,
    // 8 GiB padding): two 1 TiB stand-ins and an empty port. The second
    // GPU's VRAM function is rejected; its port keeps the 32 MiB function
    // and gets the 8 GiB padding all the same (0xf02_0000_0000-
    // 0xf03_ffff_ffff), the empty port the next 8 GiB. The guest's window
    // ends there.
    let s = Setup {
        pdpe1gb: true,
        empty_ports: 1,
        ..vm(ovmf_v("2025.02-8+deb13u1"), 44, CpuVendor::Intel, GIB)
    };
    let g = [
        split(1 << 40, Attach::RootPort),
        split(1 << 40, Attach::RootPort),
    ];
    let b = s.boot(&g).unwrap();
    assert_eq!(usable(&b), [true, false]);
    assert_eq!(b.crs.map(|r| r.start), Some(0xE00_0000_0000));
    assert_eq!(b.crs.map(|r| r.end), Some(0xF05_FFFF_FFFF));
}

fn proxmox_layout(s: Setup) -> Setup {
    Setup {
        layout: Layout::Proxmox,
        ..s
    }
}

#[test]
fn g6b_proxmox_has_its_pci_bridges_whatever_they_hold() {
    // pve-q35-4.0.cfg: pci.0-pci.3 behind pcidmi; QemuServer.pm: pci.1
    // and pci.2 on bus 0 of i440fx. The plain layout has only the GPUs'.
    let q35 = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB);
    let g = each(1, &[64 * GIB]);
    assert_eq!(
        proxmox_layout(q35.clone()).pci_bridges(&g),
        PciBridges {
            present: vec![0, 1, 2, 3],
            on_bus0: false
        }
    );
    assert!(q35.pci_bridges(&g).present.is_empty());
    let pc = proxmox_layout(Setup {
        machine: Machine::I440fx,
        ..q35
    });
    let behind = vec![GpuBars::new(vec![16 * GIB], Attach::Bridge(3))];
    assert_eq!(
        pc.pci_bridges(&behind),
        PciBridges {
            present: vec![1, 2, 3],
            on_bus0: true
        }
    );
}

#[test]
fn g6b_ovmf_pads_proxmoxs_bridges_as_it_pads_ports() {
    // Each of the four bridges takes a root port's padding (512 MiB at
    // 40 bits, v6): the 128 GiB GPU that fills the 128 GiB window alone
    // no longer fits, a 64 GiB one does, 2 GiB further up.
    let s = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, 512 * MIB);
    assert_eq!(s.boot(&each(1, &[128 * GIB])).unwrap().placed, 1);
    let p = proxmox_layout(s.clone());
    assert_eq!(p.boot(&each(1, &[128 * GIB])).unwrap().placed, 0);
    let plain = s.boot(&each(1, &[64 * GIB])).unwrap();
    let pve = p.boot(&each(1, &[64 * GIB])).unwrap();
    assert_eq!(pve.placed, 1);
    let (a, b) = (plain.crs.unwrap(), pve.crs.unwrap());
    assert_eq!(b.end - a.end, 2 * GIB, "{a:?} {b:?}");
}

#[test]
fn g6b_proxmox_ports_for_hostpci4_and_later_come_first() {
    // PCI.pm print_pcie_root_port: hostpci4+ at 10.x/11.x, below
    // ich9-pcie-port-1..4 at 1c.x.
    let s = vm(ovmf_v("2022.11"), 40, CpuVendor::Amd, GIB);
    let g = each(6, &[16 * GIB]);
    assert_eq!(s.ports_in_bus_order(&g), [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        proxmox_layout(s.clone()).ports_in_bus_order(&g),
        [4, 5, 0, 1, 2, 3]
    );
}

#[test]
fn g6c_further_devices_are_placed_but_not_reported() {
    // A virtio device's 16 KiB modern BAR beside the GPUs: the boot
    // reports the GPUs only, and a small BAR changes none of their fates.
    let s = Setup {
        machine: Machine::I440fx,
        ..vm(Firmware::SEABIOS_1_16_2, 40, CpuVendor::Amd, 512 * MIB)
    };
    let g: Vec<GpuBars> = (0..2)
        .map(|_| GpuBars::new(vec![64 * GIB], Attach::Bus0))
        .collect();
    let alone = s.boot(&g).unwrap();
    let with = Setup {
        others: vec![GpuBars::new(
            vec![proxmox::VIRTIO_BAR],
            proxmox::virtio_attach(false),
        )],
        ..s.clone()
    }
    .boot(&g)
    .unwrap();
    assert_eq!(with.gpus.len(), 2);
    assert_eq!((alone.placed, with.placed), (2, 2));
    // It is placed with them: the root window grows past the GPUs'.
    assert!(with.crs.unwrap().end > alone.crs.unwrap().end);
}

#[test]
fn realloc_third_try_releases_the_root_bus_when_a_port_window_failed() {
    // Campaign seed 20261203 record 1613: SeaBIOS 1.16.3, Proxmox's q35
    // layout (the DMI bridge's pci-bridges: two deep, three tries with
    // realloc), 2 x (128 GiB + 32 MiB) on root ports, two empty ports, an
    // Intel vCPU at 46 bits, 512 GiB of RAM, a 512 GiB root window. The
    // firmware misaligns bus 1's 128 GiB BAR; round 2 finds no room for
    // its port's 192 GiB window; the third try releases every root-bus
    // window and places both ports' first: 2 of 2 (the guest's log,
    // records/logs/seed-20261203-1613-dmesg-pci.txt).
    let s = Setup {
        qemu: QemuRules::of(crate::model::release::QemuVersion(10, 0), None),
        empty_ports: 2,
        guest_mem: Some(GIB),
        ..proxmox_layout(vm(seabios_v((1, 16, 3)), 46, CpuVendor::Intel, 512 * GIB))
    };
    let g = each(2, &[128 * GIB, 32 * MIB]);
    assert_eq!(s.bus_depth(&g), 2);
    let b = s.boot(&g).unwrap();
    assert_eq!(b.crs, Some(Range::new(0x3800_0000_0000, 0x387f_ffff_ffff)));
    assert_eq!(usable(&b), [false, true]);
    assert_eq!(b.realloc_gpus, Some(vec![true, true]));
    // Root ports only: one deep, two tries, no third: round 2's answer.
    let plain = Setup {
        layout: Layout::Plain,
        ..s.clone()
    };
    assert_eq!(plain.bus_depth(&g), 1);
    let b = plain.boot(&g).unwrap();
    assert_eq!(
        b.realloc_gpus.map(|v| v.iter().filter(|p| **p).count()),
        Some(1)
    );
}
