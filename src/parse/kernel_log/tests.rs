//! Table tests of real log lines, per wording, and property tests.

use super::resource::resource;
use super::*;

fn bdf(s: &str) -> PciAddress {
    s.parse().unwrap()
}

fn mem(start: Option<u64>, size: u64, mem64: bool, pref: bool) -> LogResource {
    LogResource {
        space: Space::Mem,
        start,
        size,
        mem64,
        prefetchable: pref,
    }
}

fn io(start: Option<u64>, size: u64) -> LogResource {
    LogResource {
        space: Space::Io,
        start,
        size,
        mem64: false,
        prefetchable: false,
    }
}

fn failed(b: &str, res: ResourceRef, r: LogResource, reason: FailReason) -> Option<Event> {
    Some(Event::AssignFailed {
        bdf: bdf(b),
        res,
        resource: Some(r),
        reason,
    })
}

#[test]
fn old_wording_failures() {
    let cases = [
        (
            "[    6.480355] pci 0000:01:01.0: BAR 1: no space for [mem size 0x400000000 64bit pref]",
            failed("0000:01:01.0", ResourceRef::Bar(1), mem(None, 0x4_0000_0000, true, true), FailReason::NoSpace),
        ),
        (
            "[    6.480606] pci 0000:01:01.0: BAR 1: failed to assign [mem size 0x400000000 64bit pref]",
            failed("0000:01:01.0", ResourceRef::Bar(1), mem(None, 0x4_0000_0000, true, true), FailReason::FailedToAssign),
        ),
        (
            "pci 0000:01:01.0: BAR 0: no space for [mem size 0x01000000]",
            failed("0000:01:01.0", ResourceRef::Bar(0), mem(None, 0x100_0000, false, false), FailReason::NoSpace),
        ),
        (
            "pci 0000:03:00.0: BAR 0: failed to assign [mem size 0x01000000 64bit]",
            failed("0000:03:00.0", ResourceRef::Bar(0), mem(None, 0x100_0000, true, false), FailReason::FailedToAssign),
        ),
        (
            "pci 0000:01:00.0: can't claim BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: no compatible bridge window",
            failed("0000:01:00.0", ResourceRef::Bar(1), mem(Some(0x100_0000_0000), 0x20_0000_0000, true, true), FailReason::CantClaim),
        ),
        (
            "pci 0000:01:00.0: BAR 14: no space for [mem size 0x02800000]",
            failed("0000:01:00.0", ResourceRef::BridgeWindow, mem(None, 0x280_0000, false, false), FailReason::NoSpace),
        ),
        (
            "pci 0000:00:17.4: BAR 7: no space for [io  size 0x1000]",
            failed("0000:00:17.4", ResourceRef::BridgeWindow, io(None, 0x1000), FailReason::NoSpace),
        ),
        (
            "pci 0000:05:00.0: BAR 7: no space for [mem size 0x00400000 64bit pref]",
            failed("0000:05:00.0", ResourceRef::VfBar(0), mem(None, 0x40_0000, true, true), FailReason::NoSpace),
        ),
        (
            "pci 0000:05:00.0: BAR 6: failed to assign [mem size 0x00080000 pref]",
            failed("0000:05:00.0", ResourceRef::Rom, mem(None, 0x8_0000, false, true), FailReason::FailedToAssign),
        ),
    ];
    for (line, want) in cases {
        assert_eq!(parse_line(line), want, "{line}");
    }
}

#[test]
fn old_wording_truncated_failure_keeps_the_verdict() {
    assert_eq!(
        parse_line("[    6.481227] pci 0000:01:01.0: BAR 0: failed to assign [mem size 0x0100"),
        Some(Event::AssignFailed {
            bdf: bdf("0000:01:01.0"),
            res: ResourceRef::Bar(0),
            resource: None,
            reason: FailReason::FailedToAssign,
        })
    );
    assert_eq!(parse_line("pci 0000:01:01.0: BAR 0: failed to"), None);
}

#[test]
fn old_wording_assigned_and_enumeration() {
    assert_eq!(
        parse_line("[    0.221991] pci 0000:00:01.0: BAR 15: assigned [mem 0x800000000-0xaffffffff 64bit pref]"),
        Some(Event::Assigned {
            bdf: bdf("0000:00:01.0"),
            res: ResourceRef::BridgeWindow,
            resource: mem(Some(0x8_0000_0000), 0x3_0000_0000, true, true),
        })
    );
    assert_eq!(
        parse_line(
            "[    5.233943] pci 0000:01:01.0: reg 0x14: [mem 0x00000000-0x3ffffffff 64bit pref]"
        ),
        Some(Event::Probed {
            bdf: bdf("0000:01:01.0"),
            res: ResourceRef::Bar(1),
            resource: mem(None, 0x4_0000_0000, true, true),
        })
    );
    assert_eq!(
        parse_line("pci 0000:01:01.0: reg 0x1c: [mem 0x00000000-0x01ffffff 64bit pref]"),
        Some(Event::Probed {
            bdf: bdf("0000:01:01.0"),
            res: ResourceRef::Bar(3),
            resource: mem(None, 0x200_0000, true, true),
        })
    );
    assert_eq!(
        parse_line("pci 0000:00:02.0: reg 0x30: [mem 0xfffe0000-0xffffffff pref]"),
        Some(Event::Probed {
            bdf: bdf("0000:00:02.0"),
            res: ResourceRef::Rom,
            resource: mem(Some(0xfffe_0000), 0x2_0000, false, true),
        })
    );
    assert_eq!(
        parse_line("pci 0000:00:02.0: reg 0x20: [io  0xc000-0xc01f]"),
        Some(Event::Probed {
            bdf: bdf("0000:00:02.0"),
            res: ResourceRef::Bar(4),
            resource: io(Some(0xc000), 0x20),
        })
    );
    // SR-IOV capability offsets do not name a BAR.
    assert_eq!(
        parse_line("pci 0000:05:00.0: reg 0x184: [mem 0x00000000-0x0003ffff 64bit pref]"),
        None
    );
    // A bridge's window, indented under "PCI bridge to".
    assert_eq!(
        parse_line("[    0.222024] pci 0000:02:01.0:   bridge window [mem 0x800000000-0x9ffffffff 64bit pref]"),
        Some(Event::Probed {
            bdf: bdf("0000:02:01.0"),
            res: ResourceRef::BridgeWindow,
            resource: mem(Some(0x8_0000_0000), 0x2_0000_0000, true, true),
        })
    );
}

#[test]
fn new_wording() {
    let pref64 = |start, size| mem(start, size, true, true);
    let cases = [
        (
            "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space",
            failed("0000:01:00.0", ResourceRef::Bar(2), pref64(None, 0x20_0000_0000), FailReason::NoSpace),
        ),
        (
            "pci 0000:01:00.0: BAR 2 [mem 0x10000000000-0x11fffffffff 64bit pref]: failed to assign",
            failed("0000:01:00.0", ResourceRef::Bar(2), pref64(Some(0x100_0000_0000), 0x20_0000_0000), FailReason::FailedToAssign),
        ),
        (
            "pci 0000:01:00.0: BAR 2 [mem 0x10000000000-0x11fffffffff 64bit pref]: can't claim; no compatible bridge window",
            failed("0000:01:00.0", ResourceRef::Bar(2), pref64(Some(0x100_0000_0000), 0x20_0000_0000), FailReason::CantClaim),
        ),
        (
            "pci 0000:00:02.0: bridge window [mem size 0x2000000000 64bit pref]: can't assign; no space",
            failed("0000:00:02.0", ResourceRef::BridgeWindow, pref64(None, 0x20_0000_0000), FailReason::NoSpace),
        ),
        (
            "[    4.181312] pci 0000:08:00.0: VF BAR 0 [mem size 0x00400000 64bit pref]: can't assign; no space",
            failed("0000:08:00.0", ResourceRef::VfBar(0), pref64(None, 0x40_0000), FailReason::NoSpace),
        ),
        (
            "[    4.190735] pci 0000:c5:00.0: BAR 4 [io  size 0x0100]: can't assign; no space",
            failed("0000:c5:00.0", ResourceRef::Bar(4), io(None, 0x100), FailReason::NoSpace),
        ),
        (
            "pci 0000:02:00.0: ROM [mem 0xfffe0000-0xffffffff pref]: can't claim; no compatible bridge window",
            failed("0000:02:00.0", ResourceRef::Rom, mem(Some(0xfffe_0000), 0x2_0000, false, true), FailReason::CantClaim),
        ),
        (
            "pci 0000:00:1f.1: BAR 0 [mem 0xfd000000-0xfdffffff 64bit]: can't claim; address conflict with PCI Bus 0000:00 [mem 0xfd000000-0xfdffffff]",
            failed("0000:00:1f.1", ResourceRef::Bar(0), mem(Some(0xfd00_0000), 0x100_0000, true, false), FailReason::CantClaim),
        ),
        (
            "pci 0000:04:00.0: BAR 2 [mem 0xf800000000-0xffffffffff 64bit pref]: assigned",
            Some(Event::Assigned {
                bdf: bdf("0000:04:00.0"),
                res: ResourceRef::Bar(2),
                resource: pref64(Some(0xf8_0000_0000), 0x8_0000_0000),
            }),
        ),
        (
            "[    4.190568] pci 0000:c5:00.0: VF BAR 0 [mem 0x62000000000-0x62fffffffff 64bit pref]: assigned",
            Some(Event::Assigned {
                bdf: bdf("0000:c5:00.0"),
                res: ResourceRef::VfBar(0),
                resource: pref64(Some(0x620_0000_0000), 0x10_0000_0000),
            }),
        ),
        (
            "pci 0000:00:02.0: BAR 0 [mem 0xfe000000-0xfeffffff]",
            Some(Event::Probed {
                bdf: bdf("0000:00:02.0"),
                res: ResourceRef::Bar(0),
                resource: mem(Some(0xfe00_0000), 0x100_0000, false, false),
            }),
        ),
        (
            "[    2.078995] kernel: pci 0000:84:00.0: BAR 5 [io  0x5000-0x507f]",
            Some(Event::Probed {
                bdf: bdf("0000:84:00.0"),
                res: ResourceRef::Bar(5),
                resource: io(Some(0x5000), 0x80),
            }),
        ),
        (
            "[    2.079002] kernel: pci 0000:84:00.0: ROM [mem 0xbc000000-0xbc07ffff pref]",
            Some(Event::Probed {
                bdf: bdf("0000:84:00.0"),
                res: ResourceRef::Rom,
                resource: mem(Some(0xbc00_0000), 0x8_0000, false, true),
            }),
        ),
        (
            "[    2.082218] kernel: pci 0000:84:00.0: VF BAR 2 [mem 0xe05b0000000-0xe05bfffffff 64bit pref]",
            Some(Event::Probed {
                bdf: bdf("0000:84:00.0"),
                res: ResourceRef::VfBar(2),
                resource: pref64(Some(0xe05_b000_0000), 0x1000_0000),
            }),
        ),
    ];
    for (line, want) in cases {
        assert_eq!(parse_line(line), want, "{line}");
    }
}

#[test]
fn new_wording_lines_that_say_nothing_new() {
    for line in [
        "[    2.082205] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]: contains BAR 0 for 1 VFs",
        "pci 0000:00:01.0: bridge window [io  0x1000-0x0fff] to [bus 01] add_size 1000",
        "pci 0000:01:00.0: BAR 2 [bus 00-ff]",
        "pci 0000:84:00.0: Enabling HDA controller",
        "pci 0000:84:00.0: vgaarb: bridge control possible",
        "pnp 00:00: disabling [mem 0xfed40000-0xfed44fff] because it overlaps 0000:03:00.0 BAR 2 [mem 0x00000000-0x1ffffffff 64bit pref]",
        "pci 0000:00:01.0: VF BAR 6 [mem size 0x1000]: can't assign; no space",
    ] {
        assert_eq!(parse_line(line), None, "{line}");
    }
}

#[test]
fn bridge_window_sizing_lines_of_2025_and_2026() {
    // 6.11 to the 2026 fix (setup-bus.c): the parent cannot fit what the
    // child bridge needs, and the debug line of the shrink.
    assert_eq!(
        parse_line("  pcieport 0000:00:07.0: Assigned bridge window [mem 0x6000000000-0x601bffffff 64bit pref] to [bus 03-2c] cannot fit 0xc00000000 required for 0000:03:00.0 bridging to [bus 04-2c]"),
        Some(Event::WindowCannotFit {
            parent: bdf("0000:00:07.0"),
            window: mem(Some(0x60_0000_0000), 0x1c00_0000, true, true),
            required: 0xc_0000_0000,
            child: bdf("0000:03:00.0"),
        })
    );
    assert_eq!(
        parse_line("[    0.512301] pci 0000:03:00.0: bridge window [mem 0x6000000000-0x6c0bffffff 64bit pref] shrunken by 0x00000000bf0000000"),
        Some(Event::WindowShrunk {
            bdf: bdf("0000:03:00.0"),
            window: mem(Some(0x60_0000_0000), 0xc_0c00_0000, true, true),
            by: 0xb_f000_0000,
        })
    );
    // The relaxed sizing's line: the window the devices need with its tail unaligned.
    assert_eq!(
        parse_line("pci 0000:02:01.0: bridge window [mem 0x6000000000-0x6400ffffff 64bit pref] to [bus 03] requires relaxed alignment rules"),
        Some(Event::WindowRelaxed {
            bdf: bdf("0000:02:01.0"),
            window: mem(Some(0x60_0000_0000), 0x4_0100_0000, true, true),
            buses: (3, 3),
        })
    );
    // The same line of a later kernel: a window without an address, a bus
    // range; and a line cut in its range is none.
    match parse_line("pci 0030:01:00.0: bridge window [mem size 0x3fc0000000 64bit pref] to [bus 02-04] requires relaxed alignment rules") {
        Some(Event::WindowRelaxed { bdf: b, buses, .. }) => {
            assert_eq!(b, bdf("0030:01:00.0"));
            assert_eq!(buses, (2, 4));
        }
        other => panic!("{other:?}"),
    }
    assert!(!matches!(
        parse_line("pci 0000:02:01.0: bridge window [mem 0x6000000000-0x6400ffffff 64bit pref] to [bus 0g] requires relaxed alignment rules"),
        Some(Event::WindowRelaxed { .. })
    ));
    // 6.18 lost an I/O window's type: the window fails, typeless.
    let lost = parse_line("[    0.390912] pci 0000:00:1c.0: bridge window [??? 0x00001000-0x00001fff flags 0x20080000]: can't assign; no space");
    match lost {
        Some(Event::AssignFailed {
            res: ResourceRef::BridgeWindow,
            resource: Some(r),
            ..
        }) => assert_eq!(r.space, Space::Other),
        other => panic!("{other:?}"),
    }
    // A BAR never prints typeless: such a line is no BAR's. An unset
    // expansion ROM does.
    assert_eq!(
        parse_line(
            "pci 0000:01:00.0: BAR 0 [??? 0x00001000-0x00001fff flags 0x0]: can't assign; no space"
        ),
        None
    );
    assert!(matches!(
        parse_line("[Sun Apr 13 00:43:11 2025] vfio-pci 0000:c7:00.0: ROM [??? 0x00000000 flags 0x20000000]: can't assign; bogus alignment"),
        Some(Event::AssignFailed { res: ResourceRef::Rom, .. })
    ));
}

#[test]
fn resource_flags() {
    let (r, rest) = resource(" [mem 0x2000000000-0xffffffffff window]: x").unwrap();
    assert_eq!(r.start, Some(0x20_0000_0000));
    assert_eq!(r.size, 0xe0_0000_0000);
    assert!(!r.mem64 && !r.prefetchable);
    assert_eq!(rest, ": x");
    let (r, _) = resource("[mem 0xfe000000-0xfeffffff 64bit pref disabled]").unwrap();
    assert!(r.mem64 && r.prefetchable);
    let (r, _) = resource("[mem 0xfe000000-0xfeffffff pref window]").unwrap();
    assert!(r.prefetchable && !r.mem64);
    // An empty bridge window and a one-byte range.
    assert_eq!(resource("[io  0x1000-0x0fff]").unwrap().0.size, 0);
    assert_eq!(resource("[io  0x0cf8]").unwrap().0.size, 1);
    assert_eq!(
        resource("[mem 0x00000000-0x0fffffff flags 0x200]")
            .unwrap()
            .0
            .size,
        0x1000_0000
    );
    for bad in [
        "[mem 0x0-0xffffffffffffffff]",
        "[mem 0x10000000000000000-0x1]",
        "[mem size 0x]",
        "[mem size 0x+10]",
        "[mem 0x1000-0x1fff bogus]",
        "[bus 00-ff]",
        "[mem 0x1000-0x1fff",
        "mem 0x1000-0x1fff]",
        "[]",
    ] {
        assert_eq!(resource(bad), None, "{bad}");
    }
    assert_eq!(
        resource("[mem size 0x000000000000000000000000000400]")
            .unwrap()
            .0
            .size,
        0x400
    );
}

#[test]
fn enumeration_of_a_function() {
    let want = Some(Event::Function {
        bdf: bdf("0000:01:01.0"),
        vendor: 0x10de,
        device: 0x15f8,
        class: 0x030200,
        header_type: 0,
        secs: None,
    });
    let stamped = |secs| match want.clone() {
        Some(Event::Function {
            bdf,
            vendor,
            device,
            class,
            header_type,
            ..
        }) => Some(Event::Function {
            bdf,
            vendor,
            device,
            class,
            header_type,
            secs,
        }),
        _ => unreachable!(),
    };
    assert_eq!(
        parse_line("[    5.231911] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200"),
        stamped(Some(5))
    );
    assert_eq!(
        parse_line(
            "Sep 21 10:24:30 host kernel: [  150.16] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200"
        ),
        stamped(Some(150))
    );
    // A wall-clock stamp (`dmesg -T`) is no time since boot.
    assert_eq!(
        parse_line(
            "[Sat Sep 21 10:24:30 2024] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200"
        ),
        want
    );
    assert_eq!(
        parse_line("pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200 PCIe Legacy Endpoint"),
        want
    );
    assert_eq!(
        parse_line(
            "pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200 conventional PCI endpoint"
        ),
        want
    );
    assert_eq!(
        parse_line("pci 0000:00:1c.0: [8086:a110] type 01 class 0x060400 PCIe Root Port"),
        Some(Event::Function {
            bdf: bdf("0000:00:1c.0"),
            vendor: 0x8086,
            device: 0xa110,
            class: 0x060400,
            header_type: 1,
            secs: None,
        })
    );
    for bad in [
        "pci 0000:01:01.0: [10de:15f8] type 00",
        "pci 0000:01:01.0: [10de:15f8 type 00 class 0x030200",
        "pci 0000:01:01.0: [10de1:15f8] type 00 class 0x030200",
        "pci 0000:01:01.0: [10de:15f8] type 100 class 0x030200",
        "pci 0000:01:01.0: [10de:15f8] type 00 class 0x1030200",
    ] {
        assert_eq!(parse_line(bad), None, "{bad}");
    }
}

#[test]
fn line_prefixes() {
    let want = failed(
        "0000:01:00.0",
        ResourceRef::Bar(2),
        mem(None, 0x20_0000_0000, true, true),
        FailReason::NoSpace,
    );
    let msg = "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space";
    for prefix in [
        "",
        "[    0.512345] ",
        "[12345.000001] ",
        "Nov 29 10:00:00 host kernel: ",
        "Nov 29 10:00:00.123456 host kernel: ",
        "2024-11-29T10:00:00+0100 host kernel: ",
        "2024-11-29T10:00:00.123456+01:00 gpu-node-7 kernel: ",
        "6,339,5083,-;",
        "4,1234,567890,c;",
        "<6>[    0.5] ",
        "> [    0.5] ",
        ">>>>> ",
        "    ",
        "\t",
        "comment 14: here's my dmesg: [    0.5] ",
    ] {
        assert_eq!(parse_line(&format!("{prefix}{msg}")), want, "{prefix:?}");
    }
    // Carriage returns from a serial console.
    assert_eq!(parse_line(&format!("[    0.5] {msg}\r")), want);
}

#[test]
fn kmsg_dictionary_lines_are_skipped() {
    assert_eq!(parse_line(" SUBSYSTEM=pci"), None);
    assert_eq!(parse_line(" DEVICE=+pci:0000:01:00.0"), None);
    assert!(is_kmsg_continuation(" DEVICE=+pci:0000:01:00.0"));
    assert!(!is_kmsg_continuation(
        "               NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)"
    ));
    let log = "6,339,5083,-;pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space\n SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n";
    assert_eq!(parse_log(log).len(), 1);
}

#[test]
fn root_bus_and_acpi_windows() {
    assert_eq!(
        parse_line(
            "[    0.3] pci_bus 0000:00: root bus resource [mem 0x2000000000-0xffffffffff window]"
        ),
        Some(Event::RootBusWindow {
            bus: RootBus { domain: 0, bus: 0 },
            resource: mem(Some(0x20_0000_0000), 0xe0_0000_0000, false, false),
        })
    );
    assert_eq!(
        parse_line("pci_bus 0001:e0: root bus resource [io  0xe000-0xffff window]"),
        Some(Event::RootBusWindow {
            bus: RootBus {
                domain: 1,
                bus: 0xe0
            },
            resource: io(Some(0xe000), 0x2000),
        })
    );
    assert_eq!(
        parse_line("pci_bus 0000:00: root bus resource [bus 00-ff]"),
        None
    );
    let cases = [
        (
            "acpi PNP0A08:00: host bridge window [mem 0x2000000000-0x11fffffffff window] ([0x10000000000-0x11fffffffff] ignored, not CPU addressable)",
            (0x100_0000_0000, 0x11f_ffff_ffff),
        ),
        (
            "[    6.375368] acpi PNP0A08:07: host bridge window [mem 0x71d60000000-0xffffffffffff window] ([0x80000000000-0xffffffffffff] ignored, not CPU addressable)",
            (0x800_0000_0000, 0xffff_ffff_ffff),
        ),
        (
            "acpi PNP0A03:00: host bridge window [mem 0x10000000000-0x17fffffffff window] (ignored, not CPU addressable)",
            (0x100_0000_0000, 0x17f_ffff_ffff),
        ),
        (
            "pci_root PNP0A08:00: host bridge window [0x2000000000-0x11fffffffff] ([0x10000000000-0x11fffffffff] ignored, not CPU addressable)",
            (0x100_0000_0000, 0x11f_ffff_ffff),
        ),
        (
            "[    0.329069] acpi resource window ([0x100000000-0x17fffffff] ignored, not CPU addressable)",
            (0x1_0000_0000, 0x1_7fff_ffff),
        ),
    ];
    for (line, (start, end)) in cases {
        assert_eq!(
            parse_line(line),
            Some(Event::NotCpuAddressable(Range::new(start, end))),
            "{line}"
        );
    }
}

#[test]
fn realloc_messages_and_drivers() {
    assert_eq!(
        parse_line("pci_bus 0000:00: Some PCI device resources are unassigned, try booting with pci=realloc"),
        Some(Event::ReallocAdvised)
    );
    assert_eq!(
        parse_line("[    1.0] pci_bus 0000:00: No. 2 try to assign unassigned res"),
        Some(Event::ReallocRetry { attempt: 2 })
    );
    assert_eq!(
        parse_line("No. 13 try to assign unassigned res"),
        Some(Event::ReallocRetry { attempt: 13 })
    );
    assert_eq!(parse_line("No. x try to assign unassigned res"), None);
    assert_eq!(
        parse_line("[    7.5] NVRM: BAR1 is 0M @ 0x0 (PCI:0000:56:00.0)"),
        Some(Event::NvrmBar {
            bdf: Some(bdf("0000:56:00.0")),
            bar: 1,
            zero: true,
        })
    );
    // Corpus 02: the continuation line a report indented.
    assert_eq!(
        parse_line("               NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)"),
        Some(Event::NvrmBar {
            bdf: Some(bdf("0000:07:00.0")),
            bar: 0,
            zero: true,
        })
    );
    assert_eq!(
        parse_line("NVRM: BAR2 is 0M @ 0x0 (PCI:56:00.0)"),
        Some(Event::NvrmBar {
            bdf: Some(bdf("0000:56:00.0")),
            bar: 2,
            zero: true,
        })
    );
    assert_eq!(
        parse_line("NVRM: BAR2 is 0M @ 0x0"),
        Some(Event::NvrmBar {
            bdf: None,
            bar: 2,
            zero: true
        })
    );
    // The header counts against `ok` where its detail line was not kept.
    assert_eq!(
        parse_line("NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:"),
        Some(Event::NvrmInvalid)
    );
    // The header and its detail line on one line (a copy that lost the
    // break, with or without the second prefix), and a hand-typed copy
    // that misspells the vendor (corpus 279): the detail line's event.
    let joined = Some(Event::NvrmBar {
        bdf: Some(bdf("0000:01:00.0")),
        bar: 0,
        zero: true,
    });
    for line in [
        "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid: BAR0 is 0M @ 0x0 (PCI:0000:01:00.0)",
        "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid: NVRM: BAR0 is 0M @ 0x0 (PCI:0000:01:00.0)",
        "NVRM: This PCI I/O region assigned to your NVUDUA device is invalid: BAR0 is 0M 0 0x0 (PCI:0000:01:00.0)",
    ] {
        assert_eq!(parse_line(line), joined, "{line}");
    }
    assert_eq!(
        parse_line("NVRM: This PCI I/O region assigned to your NVUDUA device is invalid:"),
        Some(Event::NvrmInvalid)
    );
    // NVIDIA's count of failed probes says nothing of a region by itself
    // (`Event::NvidiaProbesFailed`, given to a GPU only in the replay).
    assert_eq!(
        parse_line("NVRM: The NVIDIA probe routine failed for 2 device(s)."),
        Some(Event::NvidiaProbesFailed { count: 2 })
    );
    assert_eq!(
        parse_line(
            "[   12.3] amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large BAR."
        ),
        Some(Event::AmdgpuLargeBar {
            bdf: Some(bdf("0000:83:00.0"))
        })
    );
    assert_eq!(
        parse_line("[drm] Not enough PCI address space for a large BAR."),
        Some(Event::AmdgpuLargeBar { bdf: None })
    );
}

#[test]
fn the_firmwares_ram_map() {
    assert_eq!(
        parse_line("[    0.000000] BIOS-e820: [mem 0x0000000100000000-0x000000807fffffff] usable"),
        Some(Event::E820Usable(Range::new(0x1_0000_0000, 0x80_7fff_ffff)))
    );
    assert_eq!(
        parse_line(
            "[    0.000000] BIOS-e820: [mem 0x00000000b0000000-0x00000000bfffffff] reserved"
        ),
        Some(Event::E820Reserved(Range::new(0xb000_0000, 0xbfff_ffff)))
    );
    assert_eq!(
        parse_line(
            "[    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] ACPI NVS"
        ),
        None
    );
    assert_eq!(
        parse_line("e820: update [mem 0x00000000-0x00000fff] usable ==> reserved"),
        None
    );
}

#[test]
fn command_lines() {
    let cl = |s: &str| Some(Event::CommandLine(s.to_string()));
    assert_eq!(
        parse_line("[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 pci=realloc"),
        cl("BOOT_IMAGE=/vmlinuz root=/dev/sda1 pci=realloc")
    );
    assert_eq!(
        parse_line("[    0.0] Kernel command line: BOOT_IMAGE=/vmlinuz quiet \r"),
        cl("BOOT_IMAGE=/vmlinuz quiet")
    );
    assert_eq!(
        parse_line("Nov 29 10:00:00 host kernel: Command line: a=b"),
        cl("a=b")
    );
    assert_eq!(parse_line("6,2,0,-;Kernel command line: a=b"), cl("a=b"));
    assert_eq!(parse_line("Command line: "), cl(""));
    assert_eq!(parse_line("systemd: Parsed Command line: x"), None);
}

#[test]
fn corpus_excerpts_as_logs() {
    let log = "\
# header comment mentioning pci 0000:01:01.0: BAR 1: nothing
[    5.231911] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200
[    5.233623] pci 0000:01:01.0: reg 0x10: [mem 0x00000000-0x00ffffff]
[    5.235699] pci 0000:01:01.0: Adding to iommu group 2
[    6.480355] pci 0000:01:01.0: BAR 1: no space for [mem size 0x400000000 64bit pref]
";
    let events = parse_log(log);
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(
        events[2],
        Event::AssignFailed {
            reason: FailReason::NoSpace,
            ..
        }
    ));
}

#[test]
fn healthy_new_format_journal_has_no_failures() {
    let log = "\
[    2.078028] kernel: pci 0000:84:00.0: [10de:2b85] type 00 class 0x030000 PCIe Legacy Endpoint
[    2.078975] kernel: pci 0000:84:00.0: BAR 1 [mem 0xe05c0000000-0xe05cfffffff 64bit pref]
[    2.081207] kernel: pci 0000:84:00.0: Enabling HDA controller
[    2.082204] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]
[    2.082205] kernel: pci 0000:84:00.0: VF BAR 0 [mem 0xe05d4000000-0xe05d403ffff 64bit pref]: contains BAR 0 for 1 VFs
[    2.183919] kernel: pci 0000:84:00.0: vgaarb: bridge control possible
";
    let events = parse_log(log);
    assert_eq!(events.len(), 3, "{events:#?}");
    assert!(events
        .iter()
        .all(|e| matches!(e, Event::Function { .. } | Event::Probed { .. })));
}

#[test]
fn bridge_windows_numbered_from_seven() {
    let log = "\
pci 0000:00:17.3: [15ad:07a0] type 01 class 0x060400
pci 0000:00:02.0: PCI bridge to [bus 01]
pci 0000:00:02.0: BAR 8: no space for [mem size 0x00200000]
pci 0000:00:17.3: BAR 9: failed to assign [mem size 0x00200000 64bit pref]
pci 0000:05:00.0: BAR 9: failed to assign [mem size 0x00200000 64bit pref]
";
    let res: Vec<_> = parse_log(log)
        .into_iter()
        .filter_map(|e| match e {
            Event::AssignFailed { res, .. } => Some(res),
            _ => None,
        })
        .collect();
    assert_eq!(
        res,
        [
            ResourceRef::BridgeWindow,
            ResourceRef::BridgeWindow,
            ResourceRef::VfBar(2)
        ]
    );
}

#[test]
fn wrapped_lines_are_rejoined() {
    let log = "\
pci 0030:01:00.0: BAR 0 [mem 0x6200020000000-0x62000207fffff 64bit pref]: can't claim; address conflict with 0030:01:00.0 [mem
0x6200020000000-0x62000207fffff 64bit pref]
pci 0030:02:01.0: bridge window [mem 0x6200000000000-0x620001fffffff
64bit pref]: can't claim; no compatible bridge window
pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't
  assign; no space
[    1.0] pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit
[    1.1] pci 0000:02:00.0: BAR 2 [mem 0x10000000000-0x11fff
ffffff 64bit pref]: failed to assign
";
    let events = parse_log(log);
    let want = [
        (
            bdf("0030:01:00.0"),
            ResourceRef::Bar(0),
            FailReason::CantClaim,
        ),
        (
            bdf("0030:02:01.0"),
            ResourceRef::BridgeWindow,
            FailReason::CantClaim,
        ),
        (
            bdf("0000:01:00.0"),
            ResourceRef::Bar(2),
            FailReason::NoSpace,
        ),
        (
            bdf("0000:02:00.0"),
            ResourceRef::Bar(2),
            FailReason::FailedToAssign,
        ),
    ];
    assert_eq!(events.len(), want.len(), "{events:#?}");
    for (e, (b, r, why)) in events.iter().zip(want) {
        match e {
            Event::AssignFailed {
                bdf, res, reason, ..
            } => assert_eq!((*bdf, *res, *reason), (b, r, why)),
            other => panic!("{other:?}"),
        }
    }
    let Event::AssignFailed { resource, .. } = &events[3] else {
        unreachable!()
    };
    assert_eq!(resource.unwrap().start, Some(0x100_0000_0000));
    assert_eq!(resource.unwrap().size, 0x20_0000_0000);
}

#[test]
fn garbage_does_not_panic() {
    for line in [
        "pci ",
        "pci 0000:01:00.0: ",
        "pci 0000:01:00.0: BAR",
        "pci 0000:01:00.0: BAR 99999999999999999999: no space for [mem size 0x1]",
        "pci 0000:01:00.0: BAR 2 [mem size 0x123456789abcdef0123456789abcdef]: can't assign; no space",
        "pci 0000:01:00.0: BAR 2 [mem 0xffff-0x1]: assigned",
        "pci 0000:01:00.0: reg 0x: [mem 0x0-0x1]",
        "pci 0000:01:00.0: [",
        "pci 0000:01:00.0: [:] type  class ",
        "pci_bus : root bus resource [mem 0x0-0x1]",
        "pci_bus 0000:00: root bus resource [",
        "NVRM: BAR",
        "NVRM: BAR1 is 0M @ 0x0 (PCI:",
        "NVRM: BAR999 is 0M",
        "(ignored, not CPU addressable)",
        "] ignored, not CPU addressable",
        "[0x10-0x1] ignored, not CPU addressable",
        "No. 99999999999999 try to assign unassigned res",
        "amdgpu Not enough PCI address space for a large BAR",
        "ommand line: ",
        "pci 0000:01:00.0: BAR 2 [mem size 0x2000000000 64bit pref]: can't assign; no space \u{1F600}",
        "pci\u{1F600} 0000:01:00.0:",
    ] {
        let _ = parse_line(line);
        let _ = parse_log(line);
    }
    assert_eq!(
        parse_line("pci 0000:01:00.0: BAR 2 [mem 0xffff-0x1]: assigned"),
        Some(Event::Assigned {
            bdf: bdf("0000:01:00.0"),
            res: ResourceRef::Bar(2),
            resource: mem(Some(0xffff), 0, false, false),
        })
    );
}

mod proptests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Wording {
        Old,
        New,
    }

    fn resource_text(
        space: Space,
        start: Option<u64>,
        size: u64,
        mem64: bool,
        pref: bool,
    ) -> String {
        let mut s = String::from(match space {
            Space::Mem => "mem ",
            Space::Io => "io  ",
            Space::Other => "??? ",
        });
        match start {
            None => s.push_str(&format!("size {size:#x}")),
            Some(a) => s.push_str(&format!("{a:#x}-{:#x}", a + size - 1)),
        }
        if mem64 {
            s.push_str(" 64bit");
        }
        if pref {
            s.push_str(" pref");
        }
        format!("[{s}]")
    }

    fn prefix() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            (0u32..100_000, 0u32..1_000_000).prop_map(|(s, us)| format!("[{s:>5}.{us:06}] ")),
            Just("Nov 29 10:00:00 host kernel: ".to_string()),
            Just("2024-11-29T10:00:00.123456+01:00 host kernel: ".to_string()),
            (0u32..8, 0u64..1_000_000).prop_map(|(p, n)| format!("{p},{n},{n},-;")),
            Just("> ".to_string()),
        ]
    }

    /// Fragments that steer random lines into the parsers' deeper branches.
    fn fragment() -> impl Strategy<Value = String> {
        // `select` over constants is far cheaper than a union of `Just`s
        // or regex strategies in a debug build.
        let words = proptest::sample::select(vec![
            "pci ",
            "pci_bus ",
            "0000:01:00.0: ",
            "0000:00: ",
            "BAR ",
            "VF BAR ",
            "reg 0x",
            "can't claim BAR ",
            "[mem ",
            "[io  ",
            "size ",
            "0x",
            "-",
            "]",
            "[",
            ": ",
            " 64bit pref",
            "can't assign; no space",
            "no space for ",
            "assigned",
            "root bus resource ",
            "NVRM: BAR",
            " is 0M @ 0x0 (PCI:",
            "ignored, not CPU addressable)",
            "No. ",
            " try to assign unassigned res",
            "Command line: ",
            "\n",
        ]);
        prop_oneof![
            8 => words.prop_map(str::to_string),
            1 => (any::<u128>(), 1usize..33).prop_map(|(n, w)| format!("{n:0w$x}")),
            1 => proptest::collection::vec(0x20u8..0x7f, 0..8).prop_map(|b| String::from_utf8(b).unwrap()),
            1 => any::<char>().prop_map(String::from),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_text_does_not_panic(s in proptest::collection::vec(any::<char>(), 0..200).prop_map(String::from_iter)) {
            let _ = parse_line(&s);
            let _ = parse_log(&s);
        }

        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_log(&text);
        }

        #[test]
        fn fragment_soup_does_not_panic(parts in proptest::collection::vec(fragment(), 0..24)) {
            let s: String = parts.concat();
            let _ = parse_log(&s);
            for line in s.lines() {
                let _ = parse_line(line);
            }
        }

        #[test]
        fn failures_round_trip_in_both_wordings(
            pre in prefix(),
            bar in 0u8..6,
            is_io in any::<bool>(),
            // Log2 of the size: BARs are power-of-two sized.
            order in 4u32..45,
            base_blocks in 0u64..0x1000,
            sized in any::<bool>(),
            mem64 in any::<bool>(),
            pref in any::<bool>(),
            wording in prop_oneof![Just(Wording::Old), Just(Wording::New)],
            verdict in 0usize..3,
        ) {
            let space = if is_io { Space::Io } else { Space::Mem };
            let (mem64, pref) = if is_io { (false, false) } else { (mem64, pref) };
            let size = 1u64 << order;
            let start = if sized || base_blocks == 0 { None } else { Some(base_blocks << order) };
            let res = resource_text(space, start, size, mem64, pref);
            let msg = match (wording, verdict) {
                (Wording::Old, 0) => format!("BAR {bar}: no space for {res}"),
                (Wording::Old, 1) => format!("BAR {bar}: failed to assign {res}"),
                (Wording::Old, _) => format!("can't claim BAR {bar} {res}: no compatible bridge window"),
                (Wording::New, 0) => format!("BAR {bar} {res}: can't assign; no space"),
                (Wording::New, 1) => format!("BAR {bar} {res}: failed to assign"),
                (Wording::New, _) => format!("BAR {bar} {res}: can't claim; no compatible bridge window"),
            };
            let line = format!("{pre}pci 0000:3a:00.0: {msg}");
            let reason = [FailReason::NoSpace, FailReason::FailedToAssign, FailReason::CantClaim][verdict];
            let want = LogResource {
                space, start, size, mem64, prefetchable: pref,
            };
            prop_assert_eq!(
                parse_line(&line),
                Some(Event::AssignFailed {
                    bdf: "0000:3a:00.0".parse().unwrap(),
                    res: ResourceRef::Bar(bar),
                    resource: Some(want),
                    reason,
                })
            );
        }

        #[test]
        fn assignments_and_enumeration_round_trip(
            pre in prefix(),
            bar in 0u8..6,
            order in 12u32..48,
            base_blocks in 1u64..0x100,
            mem64 in any::<bool>(),
            pref in any::<bool>(),
            wording in prop_oneof![Just(Wording::Old), Just(Wording::New)],
            probe in any::<bool>(),
        ) {
            let size = 1u64 << order;
            let start = base_blocks << order;
            let res = resource_text(Space::Mem, Some(start), size, mem64, pref);
            let msg = match (wording, probe) {
                (Wording::Old, false) => format!("BAR {bar}: assigned {res}"),
                (Wording::New, false) => format!("BAR {bar} {res}: assigned"),
                (Wording::Old, true) => format!("reg {:#x}: {res}", 0x10 + 4 * bar),
                (Wording::New, true) => format!("BAR {bar} {res}"),
            };
            let got = parse_line(&format!("{pre}pci 0000:00:02.0: {msg}"));
            let want_res = LogResource {
                space: Space::Mem, start: Some(start), size, mem64,
                prefetchable: pref,
            };
            let bdf: PciAddress = "0000:00:02.0".parse().unwrap();
            let want = if probe {
                Event::Probed { bdf, res: ResourceRef::Bar(bar), resource: want_res }
            } else {
                Event::Assigned { bdf, res: ResourceRef::Bar(bar), resource: want_res }
            };
            prop_assert_eq!(got, Some(want));
        }

        #[test]
        fn root_windows_round_trip(start in 0u64..(1 << 52), len in 1u64..(1 << 52), bus in any::<u8>()) {
            let end = start + len - 1;
            let line = format!("pci_bus 0000:{bus:02x}: root bus resource [mem {start:#x}-{end:#x} window]");
            match parse_line(&line) {
                Some(Event::RootBusWindow { bus: b, resource }) => {
                    prop_assert_eq!(b, RootBus { domain: 0, bus });
                    prop_assert_eq!(resource.size, len);
                    prop_assert_eq!(resource.start, Some(start).filter(|s| *s != 0));
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}

/// Lines from tests/corpus/20-55, one per wording the corpus added: what
/// each says, line by line.
#[test]
fn corpus_wordings_line_by_line() {
    let assigned = |b: &str, res, r| {
        Some(Event::Assigned {
            bdf: bdf(b),
            res,
            resource: r,
        })
    };
    let probed = |b: &str, res, r| {
        Some(Event::Probed {
            bdf: bdf(b),
            res,
            resource: r,
        })
    };
    let cases: Vec<(&str, Option<Event>)> = vec![
        // Printed through the bound driver (corpus 28, 29, 31, 46, 48).
        (
            "Jun 04 11:06:17 runtronhw1 kernel: amdgpu 000d:31:00.0: BAR 0: no space for [mem size 0x200000000 64bit pref]",
            failed("000d:31:00.0", ResourceRef::Bar(0), mem(None, 0x2_0000_0000, true, true), FailReason::NoSpace),
        ),
        (
            "amdgpu 0000:69:00.0: BAR 0: assigned [mem 0x2bfb0000000-0x2bfbfffffff 64bit pref]",
            assigned("0000:69:00.0", ResourceRef::Bar(0), mem(Some(0x02bf_b000_0000), 0x1000_0000, true, true)),
        ),
        (
            "[    5.985237] amdgpu 0000:03:00.0: BAR 2: releasing [mem 0x380b0000000-0x380b01fffff 64bit pref]",
            Some(Event::Released {
                bdf: bdf("0000:03:00.0"),
                res: ResourceRef::Bar(2),
                resource: mem(Some(0x0380_b000_0000), 0x20_0000, true, true),
            }),
        ),
        (
            "[   10.800199] xe 0000:19:00.0: BAR 2 [mem 0x27fe0000000-0x27fefffffff 64bit pref]: releasing",
            probed("0000:19:00.0", ResourceRef::Bar(2), mem(Some(0x027f_e000_0000), 0x1000_0000, true, true)),
        ),
        (
            "[   10.923219] xe 0000:19:00.0: BAR 2 [mem size 0x200000000 64bit pref]: can't assign; no space",
            failed("0000:19:00.0", ResourceRef::Bar(2), mem(None, 0x2_0000_0000, true, true), FailReason::NoSpace),
        ),
        // A conflict, not a missing address (corpus 46).
        (
            "[   44.702115] vfio-pci 0000:05:00.0: BAR 0: can't reserve [mem 0xd0000000-0xdfffffff 64bit pref]",
            assigned("0000:05:00.0", ResourceRef::Bar(0), mem(Some(0xd000_0000), 0x1000_0000, true, true)),
        ),
        (
            "pcieport 0000:00:01.1: BAR 15: no space for [mem size 0x300000000 64bit pref]",
            failed("0000:00:01.1", ResourceRef::BridgeWindow, mem(None, 0x3_0000_0000, true, true), FailReason::NoSpace),
        ),
        // 2.6.2x (corpus 20): the claim of the firmware's address, then
        // the assignment after it.
        (
            "[    0.408355] pci 0000:02:00.0: BAR 1: can't allocate resource",
            Some(Event::AssignFailed {
                bdf: bdf("0000:02:00.0"),
                res: ResourceRef::Bar(1),
                resource: None,
                reason: FailReason::ClaimRefused,
            }),
        ),
        // 2.6.28's enumeration, the range with a dash; and the assignment
        // pass's bridge line, which names the secondary bus.
        (
            "[    0.437743] pci 0000:03:00.0: reg 14 64bit mmio: [0xb0000000-0xbfffffff]",
            probed("0000:03:00.0", ResourceRef::Bar(1), mem(Some(0xb000_0000), 0x1000_0000, true, false)),
        ),
        (
            "pci 0000:03:00.0: reg 10 32bit mmio pref: [0xd0000000-0xdfffffff]",
            probed("0000:03:00.0", ResourceRef::Bar(0), mem(Some(0xd000_0000), 0x1000_0000, false, true)),
        ),
        (
            "[    0.518777] pci 0000:02:03.0: PCI bridge, secondary bus 0000:03",
            Some(Event::BridgeProgrammed { bdf: bdf("0000:02:03.0"), secondary: 3 }),
        ),
        ("pci 0000:02:03.0: PCI bridge, secondary bus 0001:03", None),
        (
            "pci 0000:03:00.0: BAR 2 bad alignment 400000000: [0x0-0x3ffffffff]",
            failed("0000:03:00.0", ResourceRef::Bar(2), mem(None, 0x4_0000_0000, false, false), FailReason::FailedToAssign),
        ),
        (
            "pci 0000:03:00.0: BAR 5: can't allocate I/O resource [0x0-0x7f]",
            failed("0000:03:00.0", ResourceRef::Bar(5), io(None, 0x80), FailReason::FailedToAssign),
        ),
        (
            "pci 0000:02:00.0: BAR 1: can't allocate resource (bogus alignment) [0x0-0xfff] flags 0x200",
            Some(Event::AssignFailed {
                bdf: bdf("0000:02:00.0"),
                res: ResourceRef::Bar(1),
                resource: None,
                reason: FailReason::FailedToAssign,
            }),
        ),
        (
            "[    0.455008] pci 0000:02:00.0: BAR 1: can't allocate mem resource [0x0-0xfffffff]",
            failed("0000:02:00.0", ResourceRef::Bar(1), mem(None, 0x1000_0000, false, false), FailReason::FailedToAssign),
        ),
        (
            "[    0.392954] PCI: 0000:02:00.0 reg 14 32bit mmio: [d0000000, dfffffff]",
            probed("0000:02:00.0", ResourceRef::Bar(1), mem(Some(0xd000_0000), 0x1000_0000, false, false)),
        ),
        (
            "[    0.392964] PCI: 0000:02:00.0 reg 1c 64bit mmio: [fa000000, fbffffff]",
            probed("0000:02:00.0", ResourceRef::Bar(3), mem(Some(0xfa00_0000), 0x200_0000, true, false)),
        ),
        (
            "[    0.392968] PCI: 0000:02:00.0 reg 24 io port: [ec00, ec7f]",
            probed("0000:02:00.0", ResourceRef::Bar(5), io(Some(0xec00), 0x80)),
        ),
        // 2.6.12 (corpus 34, 35).
        (
            "PCI: Cannot allocate resource region 1 of device 0000:41:00.0",
            Some(Event::AssignFailed {
                bdf: bdf("0000:41:00.0"),
                res: ResourceRef::Bar(1),
                resource: None,
                reason: FailReason::ClaimRefused,
            }),
        ),
        // 2.4: the BAR read back other than what the kernel wrote (corpus
        // 395).
        (
            "PCI: Error while updating region 01:00.0/0 (b8000000 != a8000000)",
            Some(Event::AssignFailed {
                bdf: bdf("0000:01:00.0"),
                res: ResourceRef::Bar(0),
                resource: None,
                reason: FailReason::FailedToAssign,
            }),
        ),
        ("PCI: Error while updating region 01:00.0/0", None),
        (
            "PCI: Failed to allocate mem resource #1:10000000@f0000000 for 0000:41:00.0",
            failed("0000:41:00.0", ResourceRef::Bar(1), mem(None, 0x1000_0000, false, false), FailReason::FailedToAssign),
        ),
        (
            "   got res [c0000000:cfffffff] bus [c0000000:cfffffff] flags 1208 for BAR 1 of 0000:81:00.0",
            assigned("0000:81:00.0", ResourceRef::Bar(1), mem(Some(0xc000_0000), 0x1000_0000, false, false)),
        ),
        (
            "PCI: moved device 0000:81:00.0 resource 1 (1208) to c0000000",
            assigned("0000:81:00.0", ResourceRef::Bar(1), mem(Some(0xc000_0000), 0, false, false)),
        ),
        // NVIDIA's old address form, no domain and a four-digit bus
        // (corpus 22, 43), and a region with a size: it has an address
        // (corpus 44).
        (
            "[  194.072263] NVRM: BAR1 is 0M @ 0x0 (PCI:0002:00.0)",
            Some(Event::NvrmBar { bdf: Some(bdf("0000:02:00.0")), bar: 1, zero: true }),
        ),
        (
            "   [19907.182246] NVRM: BAR1 is 0M @ 0x00000000 (PCI:0000:10.0)",
            Some(Event::NvrmBar { bdf: Some(bdf("0000:00:10.0")), bar: 1, zero: true }),
        ),
        (
            "    [LEFT][   10.303939] NVRM: BAR1 is 256M @ 0x00000000 (PCI:0001:00.0)[/LEFT]",
            Some(Event::NvrmBar { bdf: Some(bdf("0000:01:00.0")), bar: 1, zero: false }),
        ),
        // A logfmt wrapper's `\n"` after the class (corpus 42).
        (
            r#"level=info msg="[   67.480726] pci 0000:00:06.0: [10de:15f8] type 00 class 0x030200\n""#,
            Some(Event::Function {
                bdf: bdf("0000:00:06.0"),
                vendor: 0x10de,
                device: 0x15f8,
                class: 0x030200,
                header_type: 0,
                secs: Some(67),
            }),
        ),
        // Display devices named as such.
        ("[    0.958379] pci 0000:02:00.0: Boot video device", Some(Event::VgaDevice { bdf: bdf("0000:02:00.0") })),
        ("pci 0000:00:02.0: vgaarb: setting as boot VGA device", Some(Event::VgaDevice { bdf: bdf("0000:00:02.0") })),
        (
            "[    0.565765] pci 0000:00:02.0: Video device with shadowed ROM at [mem 0x000c0000-0x000dffff]",
            Some(Event::VgaDevice { bdf: bdf("0000:00:02.0") }),
        ),
        (
            "vgaarb: device added: PCI:0000:01:00.0,decodes=io+mem,owns=io+mem,locks=none",
            Some(Event::VgaDevice { bdf: bdf("0000:01:00.0") }),
        ),
        // NVRM's `GPU 0000:05:00.0:` prefix: the driver could not bring
        // the GPU up, or (newer drivers) its BAR line; a bare lspci
        // address has no domain.
        (
            "NVRM: GPU 0000:05:00.0: RmInitAdapter failed! (0x24:0x72:1447)",
            Some(Event::InitFailed { bdf: bdf("0000:05:00.0") }),
        ),
        (
            "NVRM: GPU 0000:01:00.0: BAR0 is 0M @ 0x0 (PCI:0000:01:00.0)",
            Some(Event::NvrmBar { bdf: Some(bdf("0000:01:00.0")), bar: 0, zero: true }),
        ),
        // A reason the driver gives that is no BAR (`DriverCause`).
        (
            "NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.",
            Some(Event::DriverCause { bdf: Some(bdf("0000:05:00.0")), cause: DriverCause::InitStep }),
        ),
        // amdgpu's failed resize and its memory controller's start after.
        (
            "febr 08 12:57:43 cluster5 kernel: [drm:amdgpu_device_resize_fb_bar [amdgpu]] *ERROR* Problem resizing BAR0 (-16).",
            Some(Event::AmdgpuResizeProblem { bdf: None }),
        ),
        (
            "febr 08 12:57:43 cluster5 kernel: [drm:amdgpu_device_init.cold.33 [amdgpu]] *ERROR* sw_init of IP block <gmc_v9_0> failed -19",
            Some(Event::AmdgpuGmcFailed { bdf: None, errno: Some(19) }),
        ),
        (
            "[    5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).",
            Some(Event::AmdgpuResizeProblem { bdf: Some(bdf("0000:25:00.0")) }),
        ),
        (
            "[    5.2] amdgpu 0000:25:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -19",
            Some(Event::AmdgpuGmcFailed { bdf: Some(bdf("0000:25:00.0")), errno: Some(19) }),
        ),
        // Cut before its error.
        (
            "kernel: [drm:amdgpu_device_init.cold.33 [amdgpu]] *ERROR* sw_init of IP block <gmc_v9_0>",
            Some(Event::AmdgpuGmcFailed { bdf: None, errno: None }),
        ),
        (
            "NVRM: GPU 0000:13:00.0: GPU does not have the necessary power cables connected.",
            Some(Event::DriverCause { bdf: Some(bdf("0000:13:00.0")), cause: DriverCause::InitStep }),
        ),
        ("[ 1428.836717] NVRM: Can't find an IRQ for your NVIDIA card!", Some(Event::DriverCause { bdf: None, cause: DriverCause::Irq })),
        // BAR 0's range held by another driver; at 0x0, a doubt for the
        // next NVIDIA probe failure (the ninth collection's b02); an
        // address cut off is not 0.
        ("[  204.1] NVRM: request_mem_region failed for 16M @ 0xf6000000. This can", Some(Event::DriverCause { bdf: None, cause: DriverCause::RegionTaken })),
        ("[  204.163286] NVRM: request_mem_region failed for 0M @ 0x0. This can", Some(Event::UnnamedDoubt { vendor: 0x10de, doubt: ProbeDoubt::NvidiaRequestAtZero })),
        ("NVRM: request_mem_region failed for 16M @ 0x0000000000000000. This can", Some(Event::UnnamedDoubt { vendor: 0x10de, doubt: ProbeDoubt::NvidiaRequestAtZero })),
        ("NVRM: request_mem_region failed for 0M @ 0x", Some(Event::DriverCause { bdf: None, cause: DriverCause::RegionTaken })),
        ("NVRM: ignoring the legacy GPU 0000:02:00.0", Some(Event::DriverCause { bdf: Some(bdf("0000:02:00.0")), cause: DriverCause::Unsupported })),
        // The unsupported-GPU message's first line alone, and the open
        // module's third; the fallen-off-bus message, its ids on either
        // line, is another cause.
        (
            "[   19.870736] NVRM: The NVIDIA GPU 48e0:00:00.0 (PCI ID: 10de:1b06)",
            Some(Event::DriverCause { bdf: Some(bdf("48e0:00:00.0")), cause: DriverCause::Unsupported }),
        ),
        (
            "               NVRM: nvidia.ko because it does not include the required GPU",
            Some(Event::DriverCause { bdf: None, cause: DriverCause::Unsupported }),
        ),
        // Its opener without the ids: none of the two messages so opened
        // is a region's, so a doubt, not a named cause.
        ("NVRM: The NVIDIA GPU 0000:01:00.0", Some(Event::DriverDoubt { bdf: bdf("0000:01:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NvidiaReason })),
        // A GPU that does not come back from D3cold, through its driver
        // (the seventh collection's a02); the same through `pci` is none.
        (
            "[   87.412759] nvidia 0000:01:00.0: Unable to change power state from D3cold to D0, device inaccessible",
            Some(Event::DriverCause { bdf: Some(bdf("0000:01:00.0")), cause: DriverCause::Inaccessible { vendor: 0x10de } }),
        ),
        (
            "[   87.412701] nvidia 0000:01:00.0: not ready 65535ms after resume; giving up",
            Some(Event::DriverCause { bdf: Some(bdf("0000:01:00.0")), cause: DriverCause::Inaccessible { vendor: 0x10de } }),
        ),
        ("[   26.485239] nvidia 0000:01:00.0: not ready 8191ms after resume; waiting", None),
        ("pci 0000:01:00.0: Unable to change power state from D3cold to D0, device inaccessible", None),
        (
            "amdgpu 0000:03:00.0: Unable to change power state from D3hot to D0, device inaccessible",
            Some(Event::DriverCause { bdf: Some(bdf("0000:03:00.0")), cause: DriverCause::Inaccessible { vendor: 0x1002 } }),
        ),
        (
            "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d04) installed in this system has",
            Some(Event::DriverCause { bdf: Some(bdf("0000:01:00.0")), cause: DriverCause::Unresponsive }),
        ),
        ("NVRM: fallen off the bus and is not responding to commands.", Some(Event::DriverCause { bdf: None, cause: DriverCause::Unresponsive })),
        ("NVRM: (PCI ID: 10de:1b80) installed in this system has", Some(Event::DriverCause { bdf: None, cause: DriverCause::Unresponsive })),
        (
            "[   12.135536] resource: resource sanity check: requesting [mem 0x0000000000000000-0xffffffffffffffff], which spans more than PCI Bus 0000:00 [mem 0x000a0000-0x000bffff window]",
            Some(Event::EmptyMapping),
        ),
        ("resource sanity check: requesting [mem 0x000c0000-0x000dffff], which spans more than PCI Bus 0000:00 [mem 0x000c0000-0x000c3fff window]", None),
        ("NVRM: This is a 64-bit BAR mapped above 4GB by the system", Some(Event::DriverCause { bdf: None, cause: DriverCause::BarAbove4g })),
        ("NVRM: RmInitAdapter: Cannot initialize GSP firmware RM", Some(Event::DriverCause { bdf: None, cause: DriverCause::InitStep })),
        // radeon without the card's video BIOS (a Raspberry Pi's slot).
        (
            "[   50.329687] radeon 0000:01:00.0: Expecting atombios for evergreen GPU",
            Some(Event::DriverCause { bdf: Some(bdf("0000:01:00.0")), cause: DriverCause::NoVideoBios }),
        ),
        ("amdgpu 0000:01:00.0: Expecting atombios for evergreen GPU", None),
        // i915's own graphics table without room for the GuC (a 32-bit
        // kernel), through the device; another driver's line is none.
        (
            "i915 0000:00:02.0: [drm:i915_init_ggtt [i915]] Failed to reserve top of GGTT for GuC",
            Some(Event::DriverCause { bdf: Some(bdf("0000:00:02.0")), cause: DriverCause::GgttNoRoom }),
        ),
        ("xe 0000:03:00.0: [drm:i915_init_ggtt [i915]] Failed to reserve top of GGTT for GuC", None),
        // The driver core's 5.x wording, through the device.
        (
            "amdgpu 0000:83:00.0: probe with driver amdgpu failed with error -12",
            Some(Event::ProbeFailed { bdf: bdf("0000:83:00.0"), vendor: 0x1002 }),
        ),
        ("ahci 0000:00:17.0: probe with driver ahci failed with error -12", None),
        // SR-IOV's space, not the device's BARs.
        ("i915 0000:00:02.0: not enough MMIO resources for SR-IOV", Some(Event::SriovSpace { bdf: bdf("0000:00:02.0") })),
        (
            "pci 0000:00:05.0: VF(n) BAR0 space: [mem 0xfc000000-0x13bffffff] (contains BAR0 for 16 VFs)",
            Some(Event::Probed {
                bdf: bdf("0000:00:05.0"),
                res: ResourceRef::VfBar(0),
                resource: LogResource { space: Space::Mem, start: Some(0xfc00_0000), size: 0x4000_0000, mem64: false, prefetchable: false },
            }),
        ),
        // A PCI core verdict with its device cut off; its own enumeration
        // is none.
        (
            "BAR 1: no space for [mem size 0x400000000 64bit pref]",
            Some(Event::UnnamedFailed {
                res: ResourceRef::Bar(1),
                resource: Some(LogResource { space: Space::Mem, start: None, size: 0x4_0000_0000, mem64: true, prefetchable: true }),
            }),
        ),
        ("BAR 1 [mem 0x800000000-0x9ffffffff 64bit pref]", None),
        ("nvidia: probe of 0000:01:00.0 failed with error -1", Some(Event::ProbeFailed { bdf: bdf("0000:01:00.0"), vendor: 0x10de })),
        // A `/dev/kmsg` record's priority before the driver's name.
        ("<4>nvidia: probe of 0000:01:00.0 failed with error -1", Some(Event::ProbeFailed { bdf: bdf("0000:01:00.0"), vendor: 0x10de })),
        ("<3>[    4.2] amdgpu: probe of 0000:03:00.0 failed with error -12", Some(Event::ProbeFailed { bdf: bdf("0000:03:00.0"), vendor: 0x1002 })),
        ("<4>e1000e: probe of 0000:03:00.0 failed with error -12", None),
        ("MESSAGE=nvidia: probe of 0000:01:00.0 failed with error -1", Some(Event::ProbeFailed { bdf: bdf("0000:01:00.0"), vendor: 0x10de })),
        // Prose that quotes the line.
        ("Before it I got `nvidia: probe of 0000:01:00.0 failed with error -1` on every boot.", None),
        ("the log said \"nvidia: probe of 0000:01:00.0 failed with error -1\"", None),
        ("# amdgpu: probe of 0000:83:00.0 failed with error -12", None),
        ("xe 0000:03:00.0: Failed to resize BAR2 to 16384M (-ENOSPC)", Some(Event::DriverMapped { bdf: bdf("0000:03:00.0"), fell_back: true })),
        ("[   17.365985] i915 0000:0d:00.0: [drm] BAR2 resized to 16384M", Some(Event::DriverMapped { bdf: bdf("0000:0d:00.0"), fell_back: false })),
        ("xe 0000:03:00.0: [drm] BAR2 resized to 16384MiB", Some(Event::DriverMapped { bdf: bdf("0000:03:00.0"), fell_back: false })),
        ("xe 0000:03:00.0: [drm] BAR resized to 16384M", None),
        // amdgpu's memory controller view and aperture length, there for
        // a BAR 0 without an address too: no mapping.
        ("amdgpu 0000:03:00.0: amdgpu: Detected VRAM RAM=8176M, BAR=256M", None),
        ("amdgpu 0000:03:00.0: amdgpu: Detected VRAM RAM=8176M, BAR=0M", None),
        ("amdgpu 0000:03:00.0: amdgpu: VRAM: 16368M 0x0000008000000000 - 0x00000083FEFFFFFF (16368M used)", None),
        ("e1000e 0000:03:00.0: BAR2 resized to 16384M", None),
        ("01:00.0 VGA compatible controller: NVIDIA Corporation Device 2204 (rev a1)", None),
        ("Mar 27 17:40:36 kernel: NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100", Some(Event::DriverRunning { bdf: bdf("0000:01:00.0"), vendor: 0x10de })),
        ("NVRM: Xid (PCI:0000:41:00 GPU-I:01 GPU-CI:00): 154, GPU recovery action changed", Some(Event::DriverRunning { bdf: bdf("0000:41:00.0"), vendor: 0x10de })),
        // nvidia-drm's registration follows a probe that checks only BAR 0
        // (corpus 65: BAR 1 failed).
        ("[    4.1] [drm] Initialized nvidia-drm 0.0.0 20160202 for 0000:01:00.0 on minor 1", None),
        ("# NVRM: Xid (PCI:0000:01:00): 79", None),
        ("  # NVRM: Xid (PCI:0000:01:00): 79", None),
        ("$ grep 'NVRM: Xid (PCI:0000:01:00)' /var/log/syslog", None),
        ("root@h:~# dmesg | grep 'NVRM: Xid (PCI:0000:01:00)'", None),
        ("NVRM: Xid (PCI:junk): 79", None),
        // amdgpu past its IP blocks' start (corpus 203, 216, 339, 344); its
        // stop before any block (corpus 179, 312), the memory controller's
        // sw_init and a block's sw_init notes are no such sign.
        ("[    9.052134] amdgpu 0000:01:00.0: amdgpu: PSP firmware loading failed", Some(Event::DriverDoubt { bdf: bdf("0000:01:00.0"), vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("amdgpu 0000:c7:00.0: amdgpu: Will use PSP to load VCN firmware", None),
        ("[ 12.0] amdgpu c7e9:00:00.0: [drm:amdgpu_ring_test_helper [amdgpu]] ERROR ring kiq_2.1.0 test failed (-110)", Some(Event::DriverDoubt { bdf: bdf("c7e9:00:00.0"), vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("amdgpu 0000:00:06.0: amdgpu: [gfxhub] page fault (src_id:0 ring:169 vmid:0 pasid:0)", Some(Event::DriverDoubt { bdf: bdf("0000:00:06.0"), vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("amdgpu 0000:03:00.0: [drm:amdgpu_device_init [amdgpu]] *ERROR* hw_init of IP block <gfx_v9_0> failed -110", Some(Event::DriverDoubt { bdf: bdf("0000:03:00.0"), vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("[    5.408757] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init", None),
        ("amdgpu 0000:03:00.0: amdgpu: amdgpu_device_ip_init failed", None),
        ("amdgpu 0000:03:00.0: amdgpu: ring  test failed", None),
        ("radeon 0000:01:00.0: ring 0 test failed (scratch(0x850C)=0xCAFEDEAD)", None),
        // nouveau without the GPU's firmware (corpus 420): a doubt.
        ("[  189.304662] nouveau 0000:01:00.0: pmu: firmware unavailable", Some(Event::DriverDoubt { bdf: bdf("0000:01:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NouveauFirmware })),
        ("nouveau 0000:01:00.0: Direct firmware load for nvidia/tu104/gr/sw_nonctx.bin failed with error -2", Some(Event::DriverDoubt { bdf: bdf("0000:01:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NouveauFirmware })),
        ("nouveau 0000:01:00.0: disp ctor failed, -12", None),
        // amdgpu's IP blocks' start printed without the device (an older
        // kernel's DRM_ERROR): a doubt for the next AMD probe failure.
        ("[    7.676213] [drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading failed", Some(Event::UnnamedDoubt { vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("[drm:amdgpu_device_fw_loading [amdgpu]] *ERROR* hw_init of IP block <psp> failed -22", Some(Event::UnnamedDoubt { vendor: 0x1002, doubt: ProbeDoubt::AmdgpuStarted })),
        ("# [drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading failed", None),
        ("[drm:psp_hw_init] *ERROR* PSP firmware loading failed", None),
        // NVIDIA's own count of failed probes; the count of probes not
        // called (another driver holds the GPU) is not one.
        ("[99083.967530] NVRM: The NVIDIA probe routine failed for 1 device(s).", Some(Event::NvidiaProbesFailed { count: 1 })),
        ("NVRM: The NVIDIA probe routine was not called for 1 device(s).", None),
        ("# NVRM: The NVIDIA probe routine failed for 1 device(s).", None),
        // i915's registers read all ones: the device does not answer.
        ("[    3.646912] i915 0000:01:00.0: [drm] *ERROR* Device is non-operational; MMIO access returns 0xFFFFFFFF!", Some(Event::DriverCause { bdf: Some(bdf("0000:01:00.0")), cause: DriverCause::Inaccessible { vendor: 0x8086 } })),
        // NVIDIA naming a GPU with a reason this reader has no name for
        // and no region's words: a doubt for its probe failure after it.
        // Its region messages, the adapter's start, a GPU vfio-pci holds
        // (a host message), an address without its function and a quoted
        // line are not.
        ("[    5.1] NVRM: GPU 0000:01:00.0: GPU is lost, skipping nv_pci_probe", Some(Event::DriverDoubt { bdf: bdf("0000:01:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NvidiaReason })),
        ("NVRM: GPU 0000:41:00.0: nv_linux_init_open_q() failed!", Some(Event::DriverDoubt { bdf: bdf("0000:41:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NvidiaReason })),
        ("kernel: NVRM: GPU 0000:02:00.0: rm_init_private_state() failed!", Some(Event::DriverDoubt { bdf: bdf("0000:02:00.0"), vendor: 0x10de, doubt: ProbeDoubt::NvidiaReason })),
        ("NVRM: Aborting probe for VF 0000:3b:00.4 since PF is not bound to nvidia driver.", Some(Event::DriverDoubt { bdf: bdf("0000:3b:00.4"), vendor: 0x10de, doubt: ProbeDoubt::NvidiaReason })),
        ("NVRM: GPU 0000:01:00.0: Fatal Error while attempting to resize PCIe BARs.", None),
        ("NVRM: 0000:01:00.0: BAR1 already at requested size.", None),
        ("NVRM: GPU 0000:01:00.0 is already bound to vfio-pci.", None),
        ("NVRM: GPU at PCI:0000:01:00: GPU-29689fa2-005b-bfbd-b7ad-94fde3bc2b16", None),
        ("$ dmesg | grep \"NVRM: GPU 0000:01:00.0: GPU is lost\"", None),
        // The framebuffer hand-over's list of the BARs (corpus 247, 417);
        // a BAR without an address (`0x0 -> ...`) says nothing.
        ("[ 4.567114] amdgpu 0000:40:00.0: remove_conflicting_pci_framebuffers: bar 0: 0x6000000000 -> 0x600fffffff", Some(Event::DriverBar { bdf: bdf("0000:40:00.0"), vendor: 0x1002, bar: 0, start: 0x60_0000_0000, size: 0x1000_0000 })),
        ("radeon 0000:01:00.0: remove_conflicting_pci_framebuffers: bar 2: 0x600000000 -> 0x60001ffff", Some(Event::DriverBar { bdf: bdf("0000:01:00.0"), vendor: 0x1002, bar: 2, start: 0x6_0000_0000, size: 0x2_0000 })),
        ("amdgpu 0000:40:00.0: remove_conflicting_pci_framebuffers: bar 0: 0x0 -> 0xfffffff", None),
        // xe's VRAM BAR as it maps it (corpus 333).
        ("[  7.861] xe 0000:86:00.0: [drm] VISIBLE VRAM: 0x0000381000000000, 0x0000000400000000", Some(Event::DriverBar { bdf: bdf("0000:86:00.0"), vendor: 0x8086, bar: 2, start: 0x3810_0000_0000, size: 0x4_0000_0000 })),
        ("xe 0000:86:00.0: [drm] VISIBLE VRAM: 0x0000000000000000, 0x0000000400000000", None),
        ("amdgpu 0000:40:00.0: remove_conflicting_pci_framebuffers: bar 6: 0xa000 -> 0xafff", None),
    ];
    for (line, want) in cases {
        assert_eq!(parse_line(line), want, "{line}");
    }
}

#[test]
fn a_gpu_driver_printing_through_a_device_names_its_vendor() {
    let events = parse_log(
        "[   13.377535] nvidia 0000:02:00.0: PCI INT A -> Link[LNEB] -> GSI 19 (level, low) -> IRQ 19\n\
         [   12.396508] amdgpu 0002:21:00.0: BAR 0: assigned [mem 0x980000000-0x98fffffff 64bit pref]\n\
         [   10.1] xe 0000:19:00.0: [drm] Small BAR device\n\
         [   10.2] xe 0000:19:00.0: [drm] Attempting to resize bar\n\
         vfio-pci 0000:05:00.0: enabling device (0000 -> 0003)\n",
    );
    let drivers: Vec<(PciAddress, u16)> = events
        .iter()
        .filter_map(|e| match e {
            Event::GpuDriver { bdf, vendor } => Some((*bdf, *vendor)),
            _ => None,
        })
        .collect();
    // Once per device; vfio-pci is not a GPU driver.
    assert_eq!(
        drivers,
        [
            (bdf("0000:02:00.0"), 0x10de),
            (bdf("0002:21:00.0"), 0x1002),
            (bdf("0000:19:00.0"), 0x8086)
        ]
    );
}

#[test]
fn windows_numbered_from_7_make_bridges() {
    // Corpus 51: a kernel without SR-IOV numbers bridge windows 7-10; an
    // I/O "BAR 7" shows it, and then BAR 8/9 are windows too.
    let events = parse_log(
        "pci 0000:00:00.0: BAR 8: assigned [mem 0x60000000-0x600fffff]\n\
         pci 0000:00:01.0: BAR 9: assigned [mem 0x60300000-0x603fffff pref]\n\
         pci 0000:00:00.0: BAR 7: no space for [io  size 0x1000]\n",
    );
    assert!(
        events.iter().all(|e| matches!(
            e,
            Event::Assigned {
                res: ResourceRef::BridgeWindow,
                ..
            } | Event::AssignFailed {
                res: ResourceRef::BridgeWindow,
                ..
            }
        )),
        "{events:?}"
    );
    // With SR-IOV numbering in the same log, BAR 7-12 are VF BARs.
    let events = parse_log(
        "pci 0000:05:00.0: BAR 7: assigned [mem 0x60000000-0x600fffff 64bit pref]\n\
         pci 0000:00:01.0: BAR 13: no space for [io  size 0x1000]\n\
         pci 0000:00:02.0: BAR 7: no space for [io  size 0x1000]\n",
    );
    assert!(
        matches!(
            events[0],
            Event::Assigned {
                res: ResourceRef::VfBar(0),
                ..
            }
        ),
        "{events:?}"
    );
    assert!(matches!(
        events[2],
        Event::AssignFailed {
            res: ResourceRef::BridgeWindow,
            ..
        }
    ));
}

#[test]
fn a_2_6_12_resource_line_types_the_failure_after_it() {
    // Corpus 34: the debug line before "Cannot allocate" is that resource.
    let events = parse_log(
        "PCI: Resource ffffff00-ffffffff (f=101, d=1, p=1)\n\
         in pcibios_allocate_resources\n\
         PCI: Cannot allocate resource region 1 of device 0000:05:06.0\n\
         PCI: Resource f0000000-ffffffff (f=1208, d=1, p=1)\n\
         in pcibios_allocate_resources\n\
         PCI: Cannot allocate resource region 1 of device 0000:41:00.0\n\
         PCI: Cannot allocate resource region 2 of device 0000:41:00.0\n",
    );
    let res: Vec<Option<LogResource>> = events
        .iter()
        .map(|e| match e {
            Event::AssignFailed { resource, .. } => *resource,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        res,
        [
            Some(io(None, 0x100)),
            Some(mem(None, 0x1000_0000, false, true)),
            None
        ]
    );
}
