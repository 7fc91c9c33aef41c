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
