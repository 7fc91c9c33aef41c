//! The fallback's hints, ranked for each platform and each sign.

use super::*;
use crate::decide::diagnosis::diagnose;
use crate::decide::hint::HintId;
use crate::decide::tests::{nvrm_only, typed};
use crate::model::pci::PciAddress;
use crate::model::platform::Signs;

fn ids(ev: &Evidence) -> Vec<HintId> {
    let d = diagnose(ev);
    assert_eq!(d.kind, DiagnosisKind::Unknown, "{:?}", d.case);
    crate::decide::hints::hints(ev, &d, None)
        .iter()
        .map(|h| h.id)
        .collect()
}

#[test]
fn every_unknown_failure_gets_next_steps_ranked_for_its_platform() {
    let s = |f: fn(&mut Signs)| {
        let mut s = Signs::default();
        f(&mut s);
        s
    };
    for (what, ev, want) in [
        (
            "platform unknown: both branches, then what settles it",
            nvrm_only(Signs::default(), false),
            vec![
                HintId::FirmwareAbove4g,
                HintId::GuestPciRealloc,
                HintId::OvmfMmio64Aperture,
                HintId::CollectEvidence,
            ],
        ),
        (
            "bare metal (a device tree): the board's window, no PC or VM setting",
            nvrm_only(s(|s| s.device_tree = Some("device tree: x".into())), false),
            vec![HintId::PlatformWindowTooSmall, HintId::GuestPciRealloc],
        ),
        (
            "bare metal where the kernel asked for pci=realloc",
            nvrm_only(s(|s| s.cpu_flag = Some(false)), true),
            vec![HintId::GuestPciRealloc, HintId::FirmwareAbove4g],
        ),
        (
            "a KVM guest: the window first",
            nvrm_only(s(|s| s.hypervisor_line = Some("KVM".into())), false),
            vec![
                HintId::OvmfMmio64Aperture,
                HintId::QemuPciHole64Size,
                HintId::GuestPciRealloc,
            ],
        ),
        (
            "a KVM guest whose kernel asked for pci=realloc",
            nvrm_only(s(|s| s.hypervisor_line = Some("KVM".into())), true),
            vec![
                HintId::GuestPciRealloc,
                HintId::OvmfMmio64Aperture,
                HintId::QemuPciHole64Size,
            ],
        ),
        (
            "a VMware guest, its firmware not shown",
            nvrm_only(s(|s| s.hypervisor_line = Some("VMware".into())), false),
            vec![HintId::VmwareEfi, HintId::Vmware64bitMmio],
        ),
        (
            "a VMware guest booted by EFI",
            nvrm_only(
                s(|s| {
                    s.hypervisor_line = Some("VMware".into());
                    s.efi_by = Some("VMware, Inc.".into());
                }),
                false,
            ),
            vec![HintId::Vmware64bitMmio],
        ),
        (
            "a Hyper-V guest",
            nvrm_only(
                s(|s| s.hypervisor_line = Some("Microsoft Hyper-V".into())),
                false,
            ),
            vec![HintId::HypervMmio],
        ),
    ] {
        assert_eq!(ids(&ev), want, "{what}");
    }
    // NVIDIA's register BAR 0 alone (`NVRM: BAR0 is 0M`): the space
    // below 4 GiB, the kernel's to re-place, before Above 4G Decoding.
    for signs in [Signs::default(), s(|s| s.cpu_flag = Some(false))] {
        let mut ev = nvrm_only(signs, false);
        ev.gpus[0].bars[0].index = 0;
        assert_eq!(
            ids(&ev)[..2],
            [HintId::GuestPciRealloc, HintId::FirmwareAbove4g]
        );
    }
    // Another vendor's BAR 0 of no known type says nothing of its space.
    let mut ev = nvrm_only(Signs::default(), false);
    ev.gpus[0].bars[0].index = 0;
    ev.gpus[0].vendor = 0x1002;
    assert_eq!(ids(&ev)[0], HintId::FirmwareAbove4g);
    // A Thunderbolt enclosure on a real machine: the bridge's
    // reservation first.
    let mut ev = nvrm_only(s(|s| s.cpu_flag = Some(false)), false);
    ev.hotplug = vec![(false, "a Thunderbolt controller".into())];
    assert_eq!(ids(&ev)[0], HintId::KernelHotplugReserve);
    // A Kata VM's hot-plug: the VM's root port.
    let mut ev = nvrm_only(Signs::default(), false);
    ev.hotplug = vec![(true, "a Kata Containers VM".into())];
    assert_eq!(ids(&ev)[0], HintId::VmHotplugReserve);
}

fn first(ev: &Evidence) -> HintId {
    let d = diagnose(ev);
    crate::decide::hints::hints(ev, &d, None)[0].id
}

#[test]
fn the_space_that_fell_short_decides_the_first_step() {
    let kvm = || Signs {
        hypervisor_line: Some("KVM".into()),
        ..Signs::default()
    };
    let metal = || Signs {
        cpu_flag: Some(false),
        ..Signs::default()
    };
    let board = || Signs {
        device_tree: Some("Rockchip's PCIe host driver".into()),
        ..Signs::default()
    };
    for (what, ev, want) in [
        (
            "a VM, a register BAR behind a port: the port's room below 4 GiB",
            typed(kvm(), 1, false, false),
            HintId::VmHotplugReserve,
        ),
        (
            "a VM, a 64-bit BAR behind a port: the 64-bit window",
            typed(kvm(), 1, true, true),
            HintId::OvmfMmio64Aperture,
        ),
        (
            "bare metal, a register BAR: the kernel's re-placement",
            typed(metal(), 1, false, false),
            HintId::GuestPciRealloc,
        ),
        (
            "bare metal, an old GPU's 32-bit VRAM aperture: the firmware",
            typed(metal(), 1, false, true),
            HintId::FirmwareAbove4g,
        ),
        (
            "unknown, a register BAR: the kernel's re-placement",
            typed(Signs::default(), 1, false, false),
            HintId::GuestPciRealloc,
        ),
        (
            "a device-tree board: its own window",
            typed(board(), 1, true, true),
            HintId::PlatformWindowTooSmall,
        ),
    ] {
        assert_eq!(first(&ev), want, "{what}");
    }
    // Only a device not taken for a GPU failed (QEMU's QXL on a root
    // port): its 32-bit BARs decide it the same way.
    let other = |low: bool| {
        let mut ev = typed(kvm(), 1, false, false);
        ev.gpus.clear();
        ev.other_failed = vec![crate::evidence::OtherFailure {
            bdf: PciAddress {
                domain: 0,
                bus: 1,
                device: 0,
                function: 0,
            },
            bar: 0,
            size: Some(64 << 20),
            low,
            small: false,
            not_gpu: None,
        }];
        ev
    };
    assert_eq!(first(&other(true)), HintId::VmHotplugReserve);
    assert_eq!(first(&other(false)), HintId::OvmfMmio64Aperture);
    // In a VM, NVIDIA's BAR 0 known from its driver alone is a device the
    // firmware rejected whole: the 64-bit window, not the port's room
    // below 4 GiB (corpus 24, 419, 423).
    let mut ev = nvrm_only(kvm(), false);
    ev.gpus[0].bars[0].index = 0;
    assert_eq!(first(&ev), HintId::OvmfMmio64Aperture);
    let d = diagnose(&ev);
    let later: Vec<HintId> = crate::decide::hints::hints(&ev, &d, None)
        .iter()
        .map(|h| h.id)
        .collect();
    assert!(later.contains(&HintId::VmHotplugReserve), "{later:?}");
    ev.gpus[0].bars[0].type_known = true;
    assert_eq!(first(&ev), HintId::VmHotplugReserve);
    let ev = typed(board(), 1, true, true);
    let d = diagnose(&ev);
    let h = &crate::decide::hints::hints(&ev, &d, None)[0];
    assert!(h.text.contains("Rockchip's PCIe host driver"), "{}", h.text);
    assert!(h.text.contains("16 MiB"), "{}", h.text);
    assert!(h.text.contains("`ranges`"), "{}", h.text);
    assert!(!h.text.contains("Above 4G"), "{}", h.text);
}

#[test]
fn what_the_drivers_say_comes_before_the_space() {
    let kvm = || Signs {
        hypervisor_line: Some("KVM".into()),
        ..Signs::default()
    };
    let metal = || Signs {
        cpu_flag: Some(false),
        ..Signs::default()
    };
    let third = |signs: Signs| {
        let mut ev = nvrm_only(signs, false);
        ev.gpus[0].bars[0].index = 3;
        ev.nvrm_third_region_only = vec![ev.gpus[0].addr];
        ev
    };
    let lost = |signs: Signs| {
        let mut ev = typed(signs, 3, true, true);
        ev.resize_lost = vec![ev.gpus[0].addr];
        ev
    };
    let ignored = |signs: Signs| {
        let mut ev = typed(signs, 6, true, true);
        let b = &mut ev.gpus[0].bars[0];
        (b.state, b.size) = (crate::model::bar::BarState::Ignored, None);
        ev
    };
    for (what, ev, want) in [
        (
            "NVRM's third region alone, platform unknown: the VMM's BAR type",
            third(Signs::default()),
            HintId::VmmBarPrefetchable,
        ),
        (
            "NVRM's third region alone in a KVM guest",
            third(kvm()),
            HintId::VmmBarPrefetchable,
        ),
        (
            "NVRM's third region alone on bare metal: no VMM to blame",
            third(metal()),
            HintId::FirmwareAbove4g,
        ),
        (
            "a resize that fell back and lost the BAR, bare metal",
            lost(metal()),
            HintId::KernelResizeRollback,
        ),
        (
            "a resize that fell back and lost the BAR, on a board",
            lost(Signs {
                device_tree: Some("a device tree".into()),
                ..Signs::default()
            }),
            HintId::KernelResizeRollback,
        ),
        (
            "a BAR the firmware placed and the kernel refused, platform unknown",
            ignored(Signs::default()),
            HintId::GuestPciRealloc,
        ),
        (
            "a BAR the firmware placed and the kernel refused, bare metal",
            ignored(metal()),
            HintId::GuestPciRealloc,
        ),
        (
            "a 32-bit BAR the firmware placed and the kernel refused: the firmware's",
            {
                let mut ev = ignored(metal());
                ev.gpus[0].bars[0].mem64 = false;
                ev
            },
            HintId::FirmwareAbove4g,
        ),
        (
            "the same 64-bit BAR never placed, bare metal: the firmware setup",
            typed(metal(), 6, true, true),
            HintId::FirmwareAbove4g,
        ),
    ] {
        assert_eq!(first(&ev), want, "{what}");
    }
    // The hint names the device and how to tell the two causes apart;
    // where the platform is unknown, that it is the VM branch.
    let ev = third(Signs::default());
    let d = diagnose(&ev);
    let h = &hints(&ev, &d)[0];
    assert!(h.text.contains("If this is a VM: NVIDIA's"), "{}", h.text);
    let kvm_ev = third(kvm());
    let d = diagnose(&kvm_ev);
    assert!(!hints(&kvm_ev, &d)[0].text.contains("If this is a VM"));
    assert!(h.text.contains("lspci -vv -s 0000:01:00.0"), "{}", h.text);
    assert!(h.text.contains("<unassigned>"), "{}", h.text);
    // A failed BAR the text does not name, on a machine it does not
    // name: what settles both comes first; on a known machine, the
    // machine's order stays.
    let inferred = |signs: Signs| {
        let mut ev = nvrm_only(signs, false);
        ev.inferred = vec![ev.gpus[0].addr];
        ev
    };
    assert_eq!(first(&inferred(Signs::default())), HintId::CollectEvidence);
    assert_eq!(first(&inferred(kvm())), HintId::OvmfMmio64Aperture);
    assert_eq!(first(&inferred(metal())), HintId::FirmwareAbove4g);
    let ev = inferred(Signs::default());
    let d = diagnose(&ev);
    let h = hints(&ev, &d);
    assert!(h[0].text.contains("nor which BAR failed"), "{}", h[0].text);
    assert_eq!(
        h.iter().filter(|h| h.id == HintId::CollectEvidence).count(),
        1
    );
    // A failure on a rescan long after boot: boot with the device
    // first, on bare metal or an unknown machine; in a VM the device
    // was hot-plugged, and a hot-plug bridge has its own reservation.
    let rescanned = |signs: Signs| {
        let mut ev = typed(signs, 0x53, true, true);
        ev.rescanned = vec![(ev.gpus[0].addr, 150)];
        ev
    };
    assert_eq!(
        first(&rescanned(Signs::default())),
        HintId::KernelRescanSizing
    );
    assert_eq!(first(&rescanned(metal())), HintId::KernelRescanSizing);
    assert_eq!(first(&rescanned(kvm())), HintId::OvmfMmio64Aperture);
    let mut ev = rescanned(metal());
    ev.hotplug = vec![(false, "a Thunderbolt controller".into())];
    assert_eq!(first(&ev), HintId::KernelHotplugReserve);
    // A second failing GPU without the sign: the sign does not lead.
    let mut ev = third(Signs::default());
    let mut other = ev.gpus[0].clone();
    other.addr.bus = 2;
    other.bars[0].index = 1;
    ev.gpus.push(other);
    assert_eq!(first(&ev), HintId::FirmwareAbove4g);
    // Without the sign, an NVRM-only BAR 3 keeps the platform's order.
    let mut ev = third(Signs::default());
    ev.nvrm_third_region_only.clear();
    assert_eq!(first(&ev), HintId::FirmwareAbove4g);
}

#[test]
fn branches_say_how_to_tell_and_how_to_settle_it() {
    let ev = nvrm_only(Signs::default(), false);
    let d = diagnose(&ev);
    let h = hints(&ev, &d);
    let metal = h.iter().find(|h| h.id == HintId::FirmwareAbove4g).unwrap();
    assert!(
        metal
            .text
            .contains("If this is a real machine (`systemd-detect-virt`"),
        "{}",
        metal.text
    );
    assert!(metal.text.contains("CSM"), "{}", metal.text);
    let either = h.iter().find(|h| h.id == HintId::GuestPciRealloc).unwrap();
    assert!(
        either
            .text
            .contains("Whether this is a VM or a real machine, the kernel can"),
        "{}",
        either.text
    );
    let vm = h
        .iter()
        .find(|h| h.id == HintId::OvmfMmio64Aperture)
        .unwrap();
    assert!(vm.text.contains("If this is a VM"), "{}", vm.text);
    let last = h.last().unwrap();
    assert_eq!(last.id, HintId::CollectEvidence);
    assert!(
        last.text.contains("sudo gpu-preflight check"),
        "{}",
        last.text
    );
    // The kernel's step keeps its meaning off a VM: no "guest" there.
    let bm = nvrm_only(
        Signs {
            cpu_flag: Some(false),
            ..Signs::default()
        },
        true,
    );
    let d = diagnose(&bm);
    let r = &hints(&bm, &d)[0];
    assert_eq!(r.id, HintId::GuestPciRealloc);
    assert!(!r.text.contains("guest"), "{}", r.text);
    assert_eq!(r.change.kernel_cmdline_add, ["pci=realloc"]);
}

#[test]
fn a_board_with_room_in_its_window_gets_the_kernels_step_alone() {
    // Corpus 135's shape where the window had room: nothing in a PC's
    // firmware setup applies to a device-tree board.
    let mut ev = nvrm_only(
        Signs {
            device_tree: Some("a device tree".into()),
            ..Signs::default()
        },
        false,
    );
    let bar = &mut ev.gpus[0].bars[0];
    (bar.mem64, bar.prefetchable, bar.type_known) = (true, true, true);
    bar.size = Some(256 << 20);
    ev.windows.push(crate::evidence::Window {
        range: crate::model::range::Range::new(0xc_0000_0000, 0xc_3fff_ffff),
        source: crate::evidence::WindowSource::KernelLog,
        bus: None,
    });
    ev.windows_known = true;
    let d = diagnose(&ev);
    assert_eq!(
        d.kind,
        DiagnosisKind::FirmwareLeftUnassigned,
        "{:?}",
        d.case
    );
    let ids = |ev: &Evidence, d: &Diagnosis| -> Vec<HintId> {
        crate::decide::hints::hints(ev, d, None)
            .iter()
            .map(|h| h.id)
            .collect()
    };
    assert_eq!(ids(&ev, &d), [HintId::GuestPciRealloc]);
    // With pci=realloc already on, the step left is to read the rest
    // of the boot log: never no step at all.
    ev.realloc_active = true;
    let d = diagnose(&ev);
    assert_eq!(ids(&ev, &d), [HintId::CollectEvidence]);
}

/// Two contiguous windows of one root bus that the kernel printed apart
/// and a BAR that fits only across their join: the kernel that joins them
/// first (tests/corpus 393's numbers). A BAR that fits one window (of the
/// pair or another), windows with a gap between them, windows of two
/// buses, or a kernel of 5.16 on say nothing of it.
#[test]
fn a_bar_that_fits_only_across_two_contiguous_windows_is_the_kernels() {
    use crate::evidence::{Window, WindowSource};
    use crate::model::pci::RootBus;
    use crate::model::range::Range;
    let root = |bus: u8| Some(RootBus { domain: 0, bus });
    let case = |second_start: u64, second_bus: u8, size: u64| {
        let mut ev = typed(
            Signs {
                cpu_flag: Some(false),
                ..Signs::default()
            },
            7,
            true,
            true,
        );
        ev.gpus[0].bars[0].size = Some(size);
        ev.windows = vec![
            Window {
                range: Range::new(0x100_2020_0000, 0x100_303f_ffff),
                source: WindowSource::KernelLog,
                bus: root(0),
            },
            Window {
                range: Range::new(second_start, 0x100_401f_ffff),
                source: WindowSource::KernelLog,
                bus: root(second_bus),
            },
        ];
        ev
    };
    let ev = case(0x100_3040_0000, 0, 256 << 20);
    let split = crate::decide::space::split_root_window(&ev).expect("split");
    assert_eq!(
        (split.first.end, split.second.start, split.bar),
        (0x100_303f_ffff, 0x100_3040_0000, 256 << 20)
    );
    let d = diagnose(&ev);
    let h = &crate::decide::hints::hints(&ev, &d, None)[0];
    assert_eq!(h.id, HintId::KernelRootWindowJoin, "{}", h.text);
    assert!(h.text.contains("0x10020200000-0x100303fffff"), "{}", h.text);
    assert!(h.text.contains("256 MiB"), "{}", h.text);
    assert!(h.text.contains("uname -r"), "{}", h.text);
    // The banner's release: an older kernel is told so.
    let mut old = case(0x100_3040_0000, 0, 256 << 20);
    old.kernel = Some((5, 13));
    let d = diagnose(&old);
    let h = &crate::decide::hints::hints(&old, &d, None)[0];
    assert!(h.text.contains("(5.13) is older than 5.16"), "{}", h.text);
    let mut new = case(0x100_3040_0000, 0, 256 << 20);
    new.kernel = Some((6, 8));
    let mut elsewhere = case(0x100_3040_0000, 0, 256 << 20);
    elsewhere.windows.push(Window {
        range: Range::new(0x200_0000_0000, 0x20f_ffff_ffff),
        source: WindowSource::KernelLog,
        bus: root(0),
    });
    for (what, ev) in [
        ("fits one window", case(0x100_3040_0000, 0, 128 << 20)),
        ("a gap between", case(0x100_3050_0000, 0, 256 << 20)),
        ("two buses", case(0x100_3040_0000, 0x80, 256 << 20)),
        ("a kernel that joins them: they differ in type", new),
        ("another window holds it", elsewhere),
    ] {
        assert_eq!(crate::decide::space::split_root_window(&ev), None, "{what}");
        let d = diagnose(&ev);
        let ids: Vec<HintId> = crate::decide::hints::hints(&ev, &d, None)
            .iter()
            .map(|h| h.id)
            .collect();
        assert!(
            !ids.contains(&HintId::KernelRootWindowJoin),
            "{what}: {ids:?}"
        );
    }
}
