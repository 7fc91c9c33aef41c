use super::*;
use crate::model::bar::{BarState, SizeSource};
use crate::model::pci::VENDOR_AMD;

#[test]
fn a_device_takes_the_root_bus_only_where_its_domain_has_one() {
    let w = |domain, bus, start: u64| Window {
        range: crate::model::range::Range::new(start, start + 0xfff_ffff),
        source: crate::evidence::WindowSource::KernelLog,
        bus: Some(RootBus { domain, bus }),
    };
    let dev = |domain, bus| PciAddress {
        domain,
        bus,
        device: 0,
        function: 0,
    };
    let one_each = [w(0, 0, 0xc_0000_0000), w(1, 0, 0xc_1000_0000)];
    assert_eq!(
        sole_root_bus(&one_each, dev(1, 1)),
        Some(RootBus { domain: 1, bus: 0 })
    );
    // Two root buses in the domain: which is the device's is not said.
    let two = [w(0, 0, 0xc_0000_0000), w(0, 0x80, 0xd_0000_0000)];
    assert_eq!(sole_root_bus(&two, dev(0, 0x81)), None);
    // Two windows of one root bus are still one root bus.
    let same = [w(0, 0, 0xc_0000_0000), w(0, 0, 0xd_0000_0000)];
    assert_eq!(
        sole_root_bus(&same, dev(0, 1)),
        Some(RootBus { domain: 0, bus: 0 })
    );
    // A root bus numbered above the device's cannot be its.
    let high = [w(0, 0x80, 0xd_0000_0000)];
    assert_eq!(sole_root_bus(&high, dev(0, 1)), None);
    // No window in the device's domain, or none with a bus.
    assert_eq!(sole_root_bus(&one_each, dev(2, 1)), None);
    let unknown = [Window {
        bus: None,
        ..w(0, 0, 0xc_0000_0000)
    }];
    assert_eq!(sole_root_bus(&unknown, dev(0, 1)), None);
}

#[test]
fn a_failure_then_an_assignment_is_assigned() {
    let ev = gather(
        "\
pci 0000:01:00.0: [10de:2330] type 00 class 0x030200
pci 0000:01:00.0: BAR 1 [mem size 0x2000000000 64bit pref]: can't assign; no space
pci 0000:01:00.0: BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: assigned
",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(ev.gpus.len(), 1);
    assert!(ev.gpus[0].ok());
    assert_eq!(ev.gpus[0].bars[0].size, Some(128 << 30));
}

#[test]
fn a_refused_firmware_address_is_ignored_not_unassigned() {
    let ev = gather(
        "\
pci 0000:01:00.0: [10de:2330] type 00 class 0x030200
pci 0000:01:00.0: BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: can't claim; no compatible bridge window
",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(ev.gpus[0].bars[0].state, BarState::Ignored);
}

#[test]
fn an_amdgpu_large_bar_fallback_names_a_healthy_gpu() {
    let ev = gather(
        "[   12.3] amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large BAR.\n",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(ev.gpus.len(), 1);
    assert_eq!(ev.gpus[0].vendor, VENDOR_AMD);
    assert!(ev.gpus[0].ok() && !ev.gpus[0].ids_known);
}

#[test]
fn amdgpu_failing_to_start_after_a_failed_resize_lost_its_bar() {
    // amdgpu_device_resize_fb_bar returns -ENODEV to the memory
    // controller's start only when BAR 0 or the doorbells are left without
    // an address after the resize.
    let named = "[ 5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).\n[ 5.2] amdgpu 0000:25:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -19\n";
    let ev = gather(named, &[], None).unwrap();
    assert_eq!(ev.gpus.len(), 1);
    assert!(!ev.gpus[0].ok());
    assert_eq!(ev.resize_lost.len(), 1);
    // The journal's older form names no device.
    let unnamed = "febr 08 12:57:43 h kernel: [drm:amdgpu_device_resize_fb_bar [amdgpu]] *ERROR* Problem resizing BAR0 (-16).\nfebr 08 12:57:43 h kernel: [drm:amdgpu_device_init.cold.33 [amdgpu]] *ERROR* sw_init of IP block <gmc_v9_0> failed -19\n";
    let ev = gather(unnamed, &[], None).unwrap();
    assert_eq!(ev.unnamed_failed.len(), 1);
    // The resize's problem alone, the driver going on: nothing lost.
    let ev = gather(
        "[ 5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).\n",
        &[],
        None,
    )
    .unwrap();
    assert!(ev.unnamed_failed.is_empty() && ev.resize_lost.is_empty());
    assert!(ev.gpus.iter().all(|g| g.ok()));
    // Two GPUs interleaved: each start follows its own resize.
    let two = "[ 5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).\n[ 5.2] amdgpu 0000:26:00.0: amdgpu: Problem resizing BAR0 (-16).\n[ 5.3] amdgpu 0000:25:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -19\n[ 5.4] amdgpu 0000:26:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -19\n";
    assert_eq!(gather(two, &[], None).unwrap().resize_lost.len(), 2);
    // Another GPU's start, or another error than -ENODEV: nothing lost.
    for text in [
        "[ 5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).\n[ 5.3] amdgpu 0000:26:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -19\n",
        "[ 5.1] amdgpu 0000:25:00.0: amdgpu: Problem resizing BAR0 (-16).\n[ 5.3] amdgpu 0000:25:00.0: amdgpu: sw_init of IP block <gmc_v9_0> failed -12\n",
    ] {
        let ev = gather(text, &[], None).unwrap();
        assert!(ev.resize_lost.is_empty(), "{text}");
    }
    // A 6.15 kernel's rollback emptied BAR 0 and amdgpu mapped it anyway:
    // a range of length 0 requested after the resize (the seventh
    // collection's c01). Its older message names no device: the text's one
    // AMD GPU.
    let released =
        "[12.1] amdgpu 0000:06:00.0: BAR 2 [mem 0x6000000000-0x60001fffff 64bit pref]: releasing\n\
        [12.2] [drm:amdgpu_device_resize_fb_bar [amdgpu]] *ERROR* Problem resizing BAR0 (-16).\n\
        [12.3] amdgpu 0000:06:00.0: BAR 2 [mem 0x6000000000-0x60001fffff 64bit pref]: assigned\n";
    let mapped = "[12.4] resource: resource sanity check: requesting [mem 0x0000000000000000-0xffffffffffffffff], which spans more than PCI Bus 0000:00 [mem 0x000a0000-0x000bffff window]\n";
    let ev = gather(&format!("{released}{mapped}"), &[], None).unwrap();
    assert_eq!(ev.resize_lost, ["0000:06:00.0".parse().unwrap()]);
    assert!(ev.unnamed_failed.is_empty());
    // Without the mapping, or the mapping without a resize: nothing lost.
    let ev = gather(released, &[], None).unwrap();
    assert!(ev.resize_lost.is_empty() && ev.gpus.iter().all(|g| g.ok()));
    let other =
        "[12.1] amdgpu 0000:06:00.0: BAR 2 [mem 0x6000000000-0x60001fffff 64bit pref]: assigned\n";
    let ev = gather(&format!("{other}{mapped}"), &[], None).unwrap();
    assert!(ev.resize_lost.is_empty() && ev.gpus.iter().all(|g| g.ok()));
}

#[test]
fn a_window_a_resize_released_and_could_not_grow_is_put_back() {
    // pci_reassign_bridge_resources releases the windows up to the root
    // (old wording `BAR 15: releasing`) and puts them back when the larger
    // ones do not fit: the failure to grow is no lost window.
    let resize = "[ 1.165960] pcieport 0000:00:1d.4: BAR 15: releasing [mem 0x4000000000-0x4011ffffff 64bit pref]\n[ 1.165962] pcieport 0000:00:1d.4: BAR 15: no space for [mem size 0xc00000000 64bit pref]\n[ 1.165963] pcieport 0000:00:1d.4: BAR 15: failed to assign [mem size 0xc00000000 64bit pref]\n";
    assert!(gather(resize, &[], None).unwrap().bridge_short.is_empty());
    // The same failure with no release before it: the window is short.
    let lost: String = resize.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert_eq!(gather(&lost, &[], None).unwrap().bridge_short.len(), 1);
}

#[test]
fn a_cannot_fit_the_relaxed_sizing_answers_is_no_short_window() {
    // The log of "PCI: Relax bridge window tail sizing rules" (linux-pci,
    // 2024), after the patch: 24 GiB required with the strict alignment,
    // 16 GiB + 16 MiB with the relaxed, which is assigned, and every BAR
    // below it placed.
    let relaxed = "\
pcieport 0000:01:00.0: Assigned bridge window [mem 0x6000000000-0x6400ffffff 64bit pref] to [bus 02-04] cannot fit 0x600000000 required for 0000:02:01.0 bridging to [bus 03]
pci 0000:02:01.0: bridge window [mem 0x6000000000-0x6400ffffff 64bit pref] to [bus 03] requires relaxed alignment rules
pci 0000:02:01.0: bridge window [mem 0x6000000000-0x6400ffffff 64bit pref]: assigned
pci 0000:03:00.0: BAR 2 [mem 0x6000000000-0x63ffffffff 64bit pref]: assigned
pci 0000:03:00.0: BAR 0 [mem 0x6400000000-0x6400ffffff 64bit pref]: assigned
";
    assert!(gather(relaxed, &[], None).unwrap().bridge_short.is_empty());
    // Without the relaxed line the assigned window is short of the 24 GiB.
    let strict: String = relaxed
        .lines()
        .filter(|l| !l.contains("relaxed"))
        .map(|l| format!("{l}\n"))
        .collect();
    let short = gather(&strict, &[], None).unwrap().bridge_short;
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].need, Some(0x6_0000_0000));
}

#[test]
fn a_relaxed_window_is_measured_by_the_bars_below_it_not_by_its_printed_range() {
    // Before the kernel stopped printing a stale range, the relaxed line
    // shows the window's old one (here 4 GiB) whatever the devices need:
    // the 16 GiB + 16 MiB of BARs on bus 03 do not fit the 4 GiB assigned.
    let stale = "\
pci 0000:03:00.0: BAR 0 [mem 0x00000000-0x00ffffff 64bit pref]
pci 0000:03:00.0: BAR 2 [mem 0x00000000-0x3ffffffff 64bit pref]
pcieport 0000:01:00.0: Assigned bridge window [mem 0x6000000000-0x60ffffffff 64bit pref] to [bus 02-04] cannot fit 0x600000000 required for 0000:02:01.0 bridging to [bus 03]
pci 0000:02:01.0: bridge window [mem 0x6000000000-0x60ffffffff 64bit pref] to [bus 03] requires relaxed alignment rules
pci 0000:02:01.0: bridge window [mem 0x6000000000-0x60ffffffff 64bit pref]: assigned
";
    let short = gather(stale, &[], None).unwrap().bridge_short;
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].need, Some(0x4_0100_0000));
    assert_eq!(short[0].window, Some(0x1_0000_0000));
    // The devices' BARs elsewhere (another bus) are not this bridge's:
    // relaxed, and nothing below it shown, no shortfall is claimed.
    let elsewhere = stale.replace("pci 0000:03:00.0", "pci 0000:05:00.0");
    assert!(gather(&elsewhere, &[], None)
        .unwrap()
        .bridge_short
        .is_empty());
    // A relaxed line of the other kind (not prefetchable) leaves the
    // strict requirement standing for this one.
    let other_kind = stale.replace(
        "[mem 0x6000000000-0x60ffffffff 64bit pref] to [bus 03] requires",
        "[mem 0x80000000-0x800fffff] to [bus 03] requires",
    );
    let short = gather(&other_kind, &[], None).unwrap().bridge_short;
    assert_eq!(short[0].need, Some(0x6_0000_0000));
    // A 64-bit prefetchable window holds only the 64-bit prefetchable
    // BARs: a 32-bit prefetchable one goes to the other window.
    let mixed = stale
        .replace(
            "0x00000000-0x00ffffff 64bit pref",
            "0x00000000-0x00ffffff pref",
        )
        .replace("0x6000000000-0x60ffffffff", "0x6000000000-0x63ffffffff");
    assert!(gather(&mixed, &[], None).unwrap().bridge_short.is_empty());
    // A size the log gives after the relaxed line (a resize asking for
    // more) is not what the window was sized for.
    let resize = format!(
        "{}pci 0000:03:00.0: BAR 2 [mem size 0x800000000 64bit pref]: can't assign; no space\n",
        stale.replace("0x6000000000-0x60ffffffff", "0x6000000000-0x6400ffffff")
    );
    assert!(gather(&resize, &[], None).unwrap().bridge_short.is_empty());
    // Every BAR below assigned in the end: the window held them, whatever
    // the sizes say.
    let held = format!(
        "{stale}pci 0000:03:00.0: BAR 2 [mem 0x6000000000-0x63ffffffff 64bit pref]: assigned\npci 0000:03:00.0: BAR 0 [mem 0x6400000000-0x6400ffffff 64bit pref]: assigned\n"
    );
    assert!(gather(&held, &[], None).unwrap().bridge_short.is_empty());
}

#[test]
fn an_old_kernels_refused_claim_is_settled_by_the_assignment_pass() {
    // 2.6.28: the claim of the firmware's address fails, the assignment
    // pass gives the bus's devices new BARs, printing only failures, and
    // then the bridge's line (Ubuntu 9.04, two NVIDIA cards).
    let log = "\
[    0.437700] pci 0000:03:00.0: [10de:0622] type 00 class 0x030000
[    0.437720] pci 0000:03:00.0: reg 10 32bit mmio: [0xfc000000-0xfcffffff]
[    0.437743] pci 0000:03:00.0: reg 14 64bit mmio: [0xb0000000-0xbfffffff]
[    0.452796] pci 0000:03:00.0: BAR 0: can't allocate resource
[    0.452913] pci 0000:03:00.0: BAR 1: can't allocate resource
[    0.518777] pci 0000:02:03.0: PCI bridge, secondary bus 0000:03
";
    // Each BAR of the GPU as the text leaves it.
    let states = |text: &str| -> Vec<BarState> {
        let ev = gather(text, &[], None).unwrap();
        ev.gpus[0].bars.iter().map(|b| b.state).collect()
    };
    let assigned = states(log);
    assert_eq!(assigned, [BarState::Assigned, BarState::Assigned]);
    // A failure of the assignment itself, printed before the bridge's
    // line, stays one.
    let failed = log.replace(
        "[    0.518777]",
        "[    0.500000] pci 0000:03:00.0: BAR 1: can't allocate mem resource [0x0-0xfffffff]\n[    0.518777]",
    );
    assert_eq!(states(&failed), [BarState::Assigned, BarState::Ignored]);
    // So does a BAR the sizing gave up on (an alignment past 2 GiB).
    let bad = log.replace(
        "[    0.518777]",
        "[    0.450000] pci 0000:03:00.0: BAR 1 bad alignment 400000000: [0x0-0x3ffffffff]\n[    0.518777]",
    );
    assert_eq!(states(&bad), [BarState::Assigned, BarState::Ignored]);
    // Another bus's bridge settles nothing here: the claim's outcome is
    // not in the text, neither a failure nor an address (`unknown`; the
    // kernel prints the assignment's own failure where it fails).
    let other = log.replace("secondary bus 0000:03", "secondary bus 0000:04");
    assert_eq!(states(&other), [BarState::Assigned, BarState::Assigned]);
    let ev = gather(&other, &[], None).unwrap();
    assert!(ev.gpus[0].bars.iter().all(|b| b.start.is_none()));
    assert_eq!(ev.unproven.len(), 1);
    // 2.6.13 names no bridge's secondary bus; its pass's failure line for
    // another device of the bus says the pass ran, which placed the BARs it
    // names no failure of (corpus 425).
    let log = "\
pci 0000:02:05.0: [10de:0622] type 00 class 0x030000
PCI: Cannot allocate resource region 1 of device 0000:02:05.0
PCI: Cannot allocate resource region 1 of device 0000:02:05.1
PCI: Failed to allocate mem resource #1:100000@d0e00000 for 0000:02:05.1
";
    assert_eq!(states(log), [BarState::Assigned]);
    let own =
        format!("{log}PCI: Failed to allocate mem resource #1:1000000@d0e00000 for 0000:02:05.0\n");
    assert_eq!(states(&own), [BarState::Unassigned]);
    let elsewhere = log.replace("for 0000:02:05.1", "for 0000:03:05.1");
    assert_eq!(states(&elsewhere), [BarState::Assigned]);
    assert_eq!(gather(&elsewhere, &[], None).unwrap().unproven.len(), 1);
}

#[test]
fn a_resize_that_took_is_no_fallback() {
    // i915's resize took; a later failure of another BAR of the GPU is its
    // own, not a resize's that fell back (`resize_lost`).
    let took = "\
pci 0000:03:00.0: [8086:56a0] type 00 class 0x030000
i915 0000:03:00.0: [drm] BAR2 resized to 16384M
pci 0000:03:00.0: BAR 0 [mem size 0x01000000 64bit]: can't assign; no space
";
    let ev = gather(took, &[], None).unwrap();
    assert!(!ev.gpus[0].ok());
    assert!(ev.resize_lost.is_empty());
    // The same with the resize refused: the fallback is named.
    let refused = took.replace(
        "[drm] BAR2 resized to 16384M",
        "[drm] Failed to resize BAR2 to 16384M (-ENOSPC)",
    );
    assert_eq!(gather(&refused, &[], None).unwrap().resize_lost.len(), 1);
}

#[test]
fn counted_lspci_regions_take_the_index_the_log_gave() {
    // BAR 0 not implemented: `lspci -v` counts the 64-bit BAR as 0,
    // the log says it is BAR 2.
    let text = "\
pci 0000:01:00.0: [1af4:1110] type 00 class 0x050000
pci 0000:01:00.0: BAR 2 [mem size 0x800000000 64bit pref]: can't assign; no space
01:00.0 RAM memory: Red Hat, Inc. Inter-VM shared memory (rev 01)
\tMemory at <unassigned> (64-bit, prefetchable) [size=32G]
";
    let sel = vec![Selector::Vendor(0x1af4)];
    let ev = gather(text, &sel, None).unwrap();
    let bars = &ev.gpus[0].bars;
    assert_eq!(bars.len(), 1, "{bars:?}");
    assert_eq!((bars[0].index, bars[0].state), (2, BarState::Unassigned));
    assert_eq!(bars[0].size_source, Some(SizeSource::Lspci));
}

#[test]
fn an_io_bar_never_has_memory_flags() {
    for text in [
        // fuzz/regressions/explain/crash-fb908c89...: memory flags
        // must not stick to a BAR a later line calls I/O.
        "o 0000:01:00.0: BAR 2[mem 0 pref]\ni 0000:01:00.0: [10de:2204]type 0 class 0x30000\ni 0000:01:00.0: BAR 2[io 0]",
        // fuzz/regressions/explain/crash-f1927ae3...: no kernel prints
        // `[io ... pref]`, and the BAR it names is not prefetchable.
        "i 0000:01:00.0: [10de:2204]type 0 class 0x30000\nc 0000:01:00.0: BAR 5[io 0 pref]\n",
    ] {
        let ev = gather(text, &[], None).unwrap();
        let b = ev.gpus[0].bars[0];
        assert!(b.io && !b.mem64 && !b.prefetchable, "{text:?}: {b:?}");
    }
}

#[test]
fn ok_needs_addresses_and_a_driver_complaint_counts_against_it() {
    // (text, failed BARs of 01:00.0, the case when nothing failed,
    // whether the driver complained)
    for (what, text, failed, unproven) in [
        (
            "a header alone",
            "01:00.0 VGA compatible controller: NVIDIA Corporation GP104 [GeForce GTX 1080]\n",
            vec![],
            Some(false),
        ),
        (
            "a driver line alone",
            "[    5.1] nouveau 0000:01:00.0: DRM: unknown chipset\n",
            vec![],
            Some(false),
        ),
        (
            "NVRM's header and the probe, no BARn line (corpus 68's shape)",
            "01:00.0 3D controller: NVIDIA Corporation Device 3182 (rev a1)\nRegion 0: Memory at 2000000000 (64-bit, prefetchable) [size=64M]\nRegion 4: Memory at 2004000000 (64-bit, prefetchable) [size=32M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid\nnvidia: probe of 0000:01:00.0 failed with error -1\n",
            vec![2],
            None,
        ),
        (
            "NVRM's header alone, the one NVIDIA device",
            "01:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)\n\tRegion 0: Memory at fa000000 (32-bit, non-prefetchable) [size=16M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n",
            vec![1],
            None,
        ),
        (
            "amdgpu's probe failed (-12): a complaint, no BAR named",
            "amdgpu 0001:01:00.0: Fatal error during GPU init\namdgpu: probe of 0001:01:00.0 failed with error -12\n",
            vec![],
            Some(true),
        ),
        (
            "xe's resize fell back: the old BAR stays",
            "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\npci 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: Failed to resize BAR2 to 16384M (-ENOSPC)\n",
            vec![],
            None,
        ),
        (
            "amdgpu reports its VRAM: the memory controller's view, there for a BAR 0 without an address too",
            "amdgpu 0000:01:00.0: VRAM: 8176M 0x000000F400000000 - 0x000000F5FEFFFFFF (8176M used)\n",
            vec![],
            Some(false),
        ),
    ] {
        let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
        let g = ev
            .gpus
            .iter()
            .find(|g| g.addr.bus == 1)
            .unwrap_or_else(|| panic!("{what}: {:?}", ev.gpus));
        let bars: Vec<u8> = g.bars.iter().filter(|b| b.fails_gpu()).map(|b| b.index).collect();
        assert_eq!(bars, failed, "{what}: {:?}", g.bars);
        assert_eq!(
            ev.unproven.first().map(|u| u.2),
            unproven,
            "{what}: {:?}",
            ev.unproven
        );
    }
}

#[test]
fn driver_messages_that_are_signs_of_their_own() {
    // (what, text, third region alone, resize lost)
    for (what, text, third, lost) in [
        (
            "NVRM's third region alone, no PCI core line",
            "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
            true,
            false,
        ),
        (
            "NVRM's VRAM region and the third: a window too small",
            "NVRM: BAR1 is 0M @ 0x0 (PCI:0000:01:00.0)\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
            false,
            false,
        ),
        (
            "NVRM's third region and the kernel failed BAR 3 itself",
            "pci 0000:01:00.0: BAR 3: no space for [mem size 0x02000000 64bit pref]\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
            false,
            false,
        ),
        (
            "xe's resize fell back and the old size found no place",
            "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\nxe 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: [drm] Failed to resize BAR2 to 16384M (-ENOSPC)\nxe 0000:01:00.0: BAR 2 [mem size 0x10000000 64bit pref]: can't assign; no space\n",
            false,
            true,
        ),
        (
            "xe's resize fell back and the old BAR stayed",
            "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\nxe 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: [drm] Failed to resize BAR2 to 16384M (-ENOSPC)\n",
            false,
            false,
        ),
        (
            "NVRM's header alone, BARs 0 and 4 shown: region unnamed",
            "01:00.0 3D controller: NVIDIA Corporation Device 3182 (rev a1)\nRegion 0: Memory at 2000000000 (64-bit, prefetchable) [size=64M]\nRegion 4: Memory at 2004000000 (64-bit, prefetchable) [size=32M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid\nnvidia: probe of 0000:01:00.0 failed with error -1\n",
            false,
            false,
        ),
    ] {
        let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
        let unnamed = what.contains("unnamed");
        assert_eq!(!ev.inferred.is_empty(), unnamed, "{what}");
        assert_eq!(!ev.nvrm_third_region_only.is_empty(), third, "{what}");
        assert_eq!(!ev.resize_lost.is_empty(), lost, "{what}");
    }
}

#[test]
fn a_device_enumerated_long_after_boot_was_rescanned() {
    let bdf = |s: &str| s.parse::<PciAddress>().unwrap();
    let failed =
        "[  150.162295] pci 0000:53:00.0: BAR 2: no space for [mem size 0x400000000 64bit pref]";
    for (line, want) in [
        ("[  150.161565] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", Some(150)),
        ("> [    92.923533] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", Some(92)),
        ("Sep 21 10:24:30 host kernel: [   67.48] pci 0000:53:00.0: [10de:15f8] type 00 class 0x030200", Some(67)),
        // No timestamp, or only another function's enumeration.
        ("pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", None),
        ("[  150.161565] pci 0000:53:00.1: [8086:56c0] type 00 class 0x038000", None),
    ] {
        let ev = gather(&format!("{line}\n{failed}\n"), &[], None).unwrap();
        let got = ev.rescanned.iter().find(|(a, _)| *a == bdf("0000:53:00.0"));
        assert_eq!(got.map(|(_, s)| *s), want, "{line}");
    }
    let text = "[  150.161565] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000\n[  150.162295] pci 0000:53:00.0: BAR 2: no space for [mem size 0x400000000 64bit pref]\n";
    let ev = gather(text, &[], None).unwrap();
    assert_eq!(ev.rescanned, [(bdf("0000:53:00.0"), 150)]);
    // The same failure at boot is no rescan.
    let ev = gather(&text.replace("150.16", "  1.16"), &[], None).unwrap();
    assert!(ev.rescanned.is_empty(), "{:?}", ev.rescanned);
}

#[test]
fn gpus_named_without_a_class_line() {
    // (text, the GPUs, the devices with a failed BAR)
    for (what, text, gpus, failed) in [
        (
            "vgaarb's VGA device, its vendor from the audio function (corpus 109)",
            "pci 0000:01:00.0: vgaarb: VGA device added: decodes=io+mem,owns=none,locks=none\npci 0000:01:00.1: [1002:aac8] type 00 class 0x040300\npci 0000:01:00.0: BAR 0: assigned [mem 0x600000000-0x60fffffff 64bit pref]\n",
            vec!["0000:01:00.0"],
            vec![],
        ),
        (
            "QEMU's monitor names the GPU by class and ids (corpus 67)",
            "  Bus  1, device   0, function 0:\n    3D controller: PCI device 10de:2901\n      BAR2: 64 bit prefetchable memory at 0xffffffffffffffff [0x3ffffffffe].\n",
            vec!["0000:01:00.0"],
            vec!["0000:01:00.0"],
        ),
        (
            "QXL is an emulated adapter, not a GPU (corpus 77)",
            "pci 0000:01:00.0: [1b36:0100] type 00 class 0x038000\npci 0000:01:00.0: BAR 0: no space for [mem size 0x04000000]\npci 0000:01:00.0: BAR 0: failed to assign [mem size 0x04000000]\n",
            vec![],
            vec!["0000:01:00.0"],
        ),
        (
            "a board's root port at 00:00.0, no class line (corpus 120)",
            "pci 0002:00:00.0: BAR 0: failed to assign [mem size 0x40000000]\n",
            vec![],
            vec![],
        ),
    ] {
        let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
        let g: Vec<String> = ev.gpus.iter().map(|g| g.addr.to_string()).collect();
        assert_eq!(g, gpus, "{what}");
        let mut f: Vec<String> = ev
            .gpus
            .iter()
            .filter(|g| !g.ok())
            .map(|g| g.addr.to_string())
            .chain(ev.other_failed.iter().map(|o| o.bdf.to_string()))
            .collect();
        f.dedup();
        assert_eq!(f, failed, "{what}");
    }
}

#[test]
fn a_wide_bar_on_a_pci_bridge_slot_is_a_vms_hot_plug() {
    let slot = "pci 0000:01:02.0: BAR 1: no space for [mem size 0x10000000 64bit pref]\npci 0000:01:02.0: BAR 1: failed to assign [mem size 0x10000000 64bit pref]\n";
    let ev = gather(slot, &[], None).unwrap();
    assert!(ev.hotplug.iter().any(|(vm, _)| *vm), "{:?}", ev.hotplug);
    // Device 0 below a port, as every PCIe GPU sits: no sign.
    let port = slot.replace("01:02.0", "01:00.0");
    assert!(gather(&port, &[], None).unwrap().hotplug.is_empty());
}

#[test]
fn region_lines_in_html_markup_are_read() {
    let text = "$ lspci -vvv -s 05:00.0 | grep Region<br>\n&nbsp;&nbsp;Region 0: Memory at fa000000 (32-bit, non-prefetchable) [size=16M]<br>\n&nbsp;&nbsp;Region 1: Memory at &lt;unassigned&gt; (64-bit, prefetchable) [size=16G]<br>\n";
    let ev = gather(text, &[Selector::Vendor(0x10de)], None).unwrap();
    let d = &ev.gpus;
    assert!(d.is_empty() || !d[0].ok(), "{d:?}");
    assert_eq!(ev.other_failed.len() + d.len(), 1, "{ev:?}");
}

#[test]
fn nothing_pci_is_no_evidence() {
    assert!(gather("hello\nworld\n", &[], None).is_none());
}

#[test]
fn nvidias_resize_that_found_no_space_is_an_attempt_not_the_bars_outcome() {
    // The PCI core prints a bound device through its driver: this is
    // nv_resize_pcie_bars() asking for 32 GiB (the seventh collection's
    // d07, whose GPUs kept their 256 MiB BAR 1).
    let tried =
        "nvidia 0000:c3:00.0: BAR 1 [mem size 0x800000000 64bit pref]: can't assign; no space\n";
    let ev = gather(tried, &[], None).unwrap();
    assert_eq!(ev.gpus.len(), 1);
    assert!(ev.gpus[0].ok());
    assert_eq!(ev.unproven.len(), 1);
    assert!(ev.unproven[0].1.contains("resize"), "{}", ev.unproven[0].1);
    // The driver's own word that even the old size was lost.
    let lost = format!("{tried}NVRM: FATAL: Failed to re-allocate BAR1.\n");
    let ev = gather(&lost, &[], None).unwrap();
    assert!(!ev.gpus[0].ok());
    // The fallback placed: assigned.
    let kept = format!("{tried}nvidia 0000:c3:00.0: BAR 1 [mem 0x38000000000-0x3800fffffff 64bit pref]: assigned\n");
    let ev = gather(&kept, &[], None).unwrap();
    assert!(
        ev.gpus[0].ok() && ev.unproven.is_empty(),
        "{:?}",
        ev.unproven
    );
    // The same failure through `pci` (enumeration, no driver yet): failed.
    let ev = gather(&tried.replace("nvidia ", "pci "), &[], None).unwrap();
    assert_eq!(ev.other_failed.len(), 1);
}

#[test]
fn a_gpu_fallen_off_the_bus_at_probe_explains_the_probes_failure() {
    // As the seventh collection's d10 shows it (the ids on the first line,
    // rewrapped): the registers read all ones, so the probe's -1 is no
    // region's.
    let text =
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d04) installed in this system has\n\
                NVRM: fallen off the bus and is not responding to commands.\n\
                nvidia: probe of 0000:01:00.0 failed with error -1\n";
    let ev = gather(text, &[], None).unwrap();
    assert!(ev.gpus[0].ok());
    assert!(
        ev.unproven.iter().all(|(_, _, complaint)| !complaint),
        "{:?}",
        ev.unproven
    );
    assert_eq!(ev.driver_gave_up.len(), 1);
}

#[test]
fn nvidias_lost_bar_1_is_the_latest_attempts() {
    // Two GPUs tried; the second's fallback failed too (review of the
    // resize reading: with two attempts the loss went to nobody, a false
    // ok).
    let enum_ = "pci 0000:c3:00.0: [10de:2204] type 00 class 0x030000\npci 0000:c4:00.0: [10de:2204] type 00 class 0x030000\n";
    let tried = |b: &str| {
        format!("nvidia {b}: BAR 1 [mem size 0x800000000 64bit pref]: can't assign; no space\n")
    };
    let text = format!(
        "{enum_}{}{}NVRM: FATAL: Failed to re-allocate BAR1.\nNVRM: Fatal Error while attempting to resize PCIe BARs.\n",
        tried("0000:c3:00.0"),
        tried("0000:c4:00.0")
    );
    let ev = gather(&text, &[], None).unwrap();
    let failed: Vec<String> = ev
        .gpus
        .iter()
        .filter(|g| !g.ok())
        .map(|g| g.addr.to_string())
        .collect();
    assert_eq!(failed, ["0000:c4:00.0"]);
    assert!(ev.unnamed_failed.is_empty(), "{:?}", ev.unnamed_failed);
    // With no attempt and two GPUs: a loss of a GPU the text does not name.
    let ev = gather(
        &format!("{enum_}NVRM: FATAL: Failed to re-allocate BAR1.\n"),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(ev.unnamed_failed.len(), 1);
    // A quoted line is not the log.
    let ev = gather(
        &format!("{enum_}$ grep 'NVRM: FATAL: Failed to re-allocate BAR1' log\n"),
        &[],
        None,
    )
    .unwrap();
    assert!(ev.unnamed_failed.is_empty());
}
