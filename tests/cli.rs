//! The binary's contract: exit codes, formats, and that it is static.

pub mod support;

use std::process::{Command, Output};
use support::{bin, fixture};

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run gpu-preflight")
}

fn check(case: &str, extra: &[&str]) -> Output {
    let d = fixture(case);
    let root = d.join("root");
    let dmesg = d.join("dmesg.txt");
    let mut a = vec![
        "check",
        "--root",
        root.to_str().unwrap(),
        "--dmesg",
        dmesg.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn exit_0_when_healthy_1_when_a_problem_is_found() {
    assert_eq!(
        check("ovmf-8x16g", &["--match", "1af4:1110"]).status.code(),
        Some(0)
    );
    assert_eq!(
        check("ovmf-8x32g", &["--match", "1af4:1110"]).status.code(),
        Some(1)
    );
    assert_eq!(
        check("ovmf-8x16g", &["--match", "1af4:1110", "--expect", "9"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn exit_2_on_usage_errors() {
    for args in [
        vec!["check", "--match", "nonsense"],
        // from_str_radix alone would take a sign.
        vec!["check", "--match", "+10d:*"],
        vec!["check", "--match", "10de:+233"],
        vec!["check", "--expect", "many"],
        vec!["check", "--format", "xml"],
        vec!["frobnicate"],
        vec![],
        vec!["explain"],
    ] {
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{args:?} says why");
    }
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    assert_eq!(run(&["--version"]).status.code(), Some(0));
}

#[test]
fn exit_3_when_nothing_can_be_inspected() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&["check", "--root", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: cannot list PCI devices in "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let d = fixture("ovmf-8x16g");
    let o = run(&[
        "check",
        "--root",
        d.join("root").to_str().unwrap(),
        "--dmesg",
        "/nonexistent/dmesg.txt",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(run(&["explain", "/nonexistent/log"]).status.code(), Some(3));
}

#[test]
fn prometheus_output_is_well_formed() {
    let o = check(
        "ovmf-8x32g-hole1t",
        &[
            "--match",
            "1af4:1110",
            "--expect",
            "8",
            "--format",
            "prometheus",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("gpu_preflight_ok 0\n"));
    assert!(text.contains("gpu_preflight_diagnosis{diagnosis=\"firmware_left_unassigned\"} 1\n"));
    assert!(text.contains("gpu_preflight_unassigned_bars 5\n"));
    assert!(text.contains("gpu_preflight_hint{id=\"guest-pci-realloc\"} 1\n"));
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').unwrap();
        assert!(name.starts_with("gpu_preflight_"), "{line}");
        value.parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
    }
}

#[test]
fn kmsg_records_fall_back_to_stderr_without_the_device() {
    // The fixture root has no dev/kmsg: the records go to stderr.
    let o = check("ovmf-8x32g-hole1t", &["--match", "1af4:1110", "--kmsg"]);
    let err = String::from_utf8(o.stderr).unwrap();
    let recs: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("gpu-preflight: "))
        .collect();
    assert!(
        recs[0]
            .starts_with("gpu-preflight: verdict=fail diagnosis=firmware_left_unassigned found=8"),
        "{err}"
    );
    assert!(recs
        .iter()
        .any(|r| r.starts_with("gpu-preflight: hint guest-pci-realloc: ")));
    assert!(recs.len() <= 8);
    assert!(recs.iter().all(|r| r.len() < 992));
    // The verdict record carries the check's own duration.
    let elapsed: u64 = recs[0]
        .rsplit_once("elapsed_ms=")
        .unwrap()
        .1
        .parse()
        .unwrap();
    assert!(elapsed < 60_000);
}

/// A static executable has no program interpreter (PT_INTERP): it starts in
/// an initramfs that carries no libc of ours.
#[test]
fn the_binary_is_statically_linked() {
    let elf = std::fs::read(bin()).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(elf[4], 2, "64-bit ELF");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    const PT_INTERP: u32 = 3;
    let types: Vec<u32> = (0..phnum).map(|i| u32_at(phoff + i * phentsize)).collect();
    assert!(!types.is_empty());
    assert!(
        !types.contains(&PT_INTERP),
        "has an ELF interpreter: dynamically linked"
    );
}

#[test]
fn a_warning_is_said_once_in_the_report_and_not_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    support::copy_root("ovmf-8x32g-hole1t", tmp.path());
    std::fs::remove_file(tmp.path().join("proc/iomem")).unwrap();
    let dmesg = fixture("ovmf-8x32g-hole1t").join("dmesg.txt");
    let args = [
        "check",
        "--root",
        tmp.path().to_str().unwrap(),
        "--dmesg",
        dmesg.to_str().unwrap(),
        "--match",
        "1af4:1110",
    ];
    let o = run(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("proc/iomem: No such file").count(), 1, "{out}");
    assert!(
        out.contains("warning: cannot read ") && out.contains("proc/iomem"),
        "{out}"
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // -v asks for the log as well: then stderr has it too.
    let mut v = args.to_vec();
    v.push("-v");
    let o = run(&v);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("proc/iomem"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn with_no_gpu_the_window_line_is_one_fact() {
    // The H200 fixture with no GPU selected: the window total and the
    // windows listed must agree (both root bus windows, 16.25 TiB).
    let o = check("h200-kvm-passthrough", &["--match", "dead:beef"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    // Wrapped to 80 columns: the line and its continuation, rejoined.
    let mut lines = out.lines().skip_while(|l| !l.starts_with("  window:"));
    let mut line = lines.next().unwrap().to_string();
    for more in lines.take_while(|l| l.starts_with("            ")) {
        line.push(' ');
        line.push_str(more.trim_start());
    }
    assert_eq!(
        line,
        "  window:   16.2 TiB = 0x4000000000-0x7fffffffff (256 GiB, from iomem) + 0x100000000000-0x1fffffffffff (16 TiB, from iomem)"
    );
    let o = check(
        "h200-kvm-passthrough",
        &["--match", "dead:beef", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["capacity"]["window_bytes"],
        (256u64 << 30) + (16u64 << 40)
    );
}

/// `explain` on text: the platform the log names decides the hints, and
/// only text without any PCI evidence is "nothing to explain".
fn explain_text(text: &str) -> (i32, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.txt");
    std::fs::write(&path, text).unwrap();
    let o = run(&["explain", path.to_str().unwrap(), "--format", "json"]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code().unwrap(), v)
}

#[test]
fn a_vmware_vm_on_legacy_bios_is_told_to_switch_to_efi() {
    // The DMI line as corpus 32 has it, and a P40's failure.
    let log = "\
[    0.000000] DMI: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 11/12/2020
[    0.000000] Hypervisor detected: VMware
[    0.317212] pci_bus 0000:00: root bus resource [mem 0xc0000000-0xfebfffff window]
[    0.334541] pci 0000:03:00.0: [10de:1b38] type 00 class 0x030200
[    0.335159] pci 0000:03:00.0: reg 0x14: [mem 0x00000000-0x7ffffffff 64bit pref]
[    0.382205] pci 0000:03:00.0: BAR 1: failed to assign [mem size 0x800000000 64bit pref]
";
    let (code, v) = explain_text(log);
    assert_eq!(code, 1);
    assert_eq!(v["firmware"]["platform"], "vmware");
    assert_eq!(v["hints"][0]["id"], "vmware-efi");
    assert_eq!(v["hints"][1]["id"], "vmware-64bit-mmio");
    // The same VM on EFI: the 64-bit MMIO settings, not a firmware switch.
    let efi = log.replace(
        "VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 11/12/2020",
        "VMware7,1/440BX Desktop Reference Platform, BIOS VMW71.00V.21805430.B64.2305221830 05/22/2023",
    );
    let (_, v) = explain_text(&format!(
        "[    0.000000] efi: EFI v2.70 by VMware, Inc.\n{efi}"
    ));
    assert_eq!(v["hints"][0]["id"], "vmware-64bit-mmio");
    assert!(v["hints"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["id"] != "vmware-efi"));
}

/// `explain_text` with more arguments.
fn explain_with(text: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.txt");
    std::fs::write(&path, text).unwrap();
    let mut args = vec!["explain", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    (o.status.code().unwrap(), v, out)
}

#[test]
fn where_every_platform_starts_the_same_the_report_leads_with_that_step() {
    // Only a device that shows no BAR a GPU has failed (an FPGA's, as in
    // tests/corpus 367): which device it is comes first on any platform,
    // so the report asks that, not which platform it is.
    let log = "\
pci 0000:1b:00.0: BAR 0 [mem size 0x00080000]: failed to assign
pci 0000:1b:00.0: BAR 1 [mem size 0x00010000]: failed to assign
";
    let (code, v, _) = explain_with(log, &["--format", "json"]);
    assert_eq!(code, 1);
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["firmware"]["platform_source"], "unknown");
    assert_eq!(v["platform_branches"], serde_json::json!([]));
    assert_eq!(v["hints"][0]["id"], "collect-evidence");
    let (_, _, text) = explain_with(log, &[]);
    assert!(text.lines().any(|l| l.starts_with("next step: ")), "{text}");
    assert!(!text.contains("platform:  not shown"), "{text}");
}

#[test]
fn the_platform_told_decides_the_first_hint_and_the_text_lead_names_both_when_unknown() {
    // A large BAR failed; nothing in the text says what machine it is.
    let log = "pci 0000:09:00.0: BAR 1: no space for [mem size 0x800000000 64bit pref]\n";
    let (_, v, _) = explain_with(log, &["--format", "json"]);
    assert_eq!(v["firmware"]["platform_source"], "unknown");
    let branches: Vec<(String, String)> = v["platform_branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["platform"].as_str().unwrap().into(),
                b["hint"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        branches,
        [
            ("qemu".to_string(), "ovmf-mmio64-aperture".to_string()),
            ("bare_metal".to_string(), "firmware-above-4g".to_string())
        ]
    );
    let (_, _, text) = explain_with(log, &[]);
    // The platform line comes in the opening lines, before the first
    // blank line, in place of a single next step; wrapped, so its
    // continuation lines are joined before looking.
    let opening: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    let at = opening
        .iter()
        .position(|l| l.starts_with("platform:  not shown in the input"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        !opening.iter().any(|l| l.starts_with("next step:")),
        "{text}"
    );
    let lead: String = opening[at..]
        .iter()
        .take_while(|l| !l.starts_with("  paste:"))
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        opening.contains(&"  paste:   systemd-detect-virt"),
        "{text}"
    );
    assert!(lead.contains("[ovmf-mmio64-aperture]") && lead.contains("[firmware-above-4g]"));
    assert!(lead.contains("systemd-detect-virt"), "{lead}");
    for (told, first) in [
        ("bare-metal", "firmware-above-4g"),
        ("qemu", "ovmf-mmio64-aperture"),
        // The text shows no firmware; the VM powered on (fallback/vm.rs).
        ("vmware", "vmware-efi"),
        ("hyperv", "hyperv-mmio"),
    ] {
        let (code, v, _) = explain_with(log, &["--format", "json", "--platform", told]);
        assert_eq!(code, 1);
        assert_eq!(v["firmware"]["platform_source"], "told", "{told}");
        assert_eq!(v["hints"][0]["id"], first, "{told}");
        assert_eq!(v["platform_branches"], serde_json::json!([]), "{told}");
        assert_eq!(v["warnings"], serde_json::json!([]), "{told}");
    }
    // Told beats seen, and the report says where they disagree.
    let dmi = format!("DMI: Supermicro SYS-4029GP-TRT/X11DPG-OT-CPU, BIOS 3.1 01/12/2020\n{log}");
    let (_, v, _) = explain_with(&dmi, &["--format", "json"]);
    assert_eq!(v["firmware"]["platform_source"], "seen");
    let (_, v, _) = explain_with(&dmi, &["--format", "json", "--platform", "qemu"]);
    assert_eq!(v["firmware"]["platform"], "qemu");
    assert_eq!(v["hints"][0]["id"], "ovmf-mmio64-aperture");
    let w = v["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("--platform qemu") && w.contains("bare-metal"),
        "{w}"
    );
    // A KVM guest's signs agree with any VM named.
    let kvm = format!("Hypervisor detected: KVM\n{log}");
    let (_, v, _) = explain_with(&kvm, &["--format", "json", "--platform", "qemu"]);
    assert_eq!(v["warnings"], serde_json::json!([]));
    let (code, _, _) = explain_with(log, &["--platform", "xen"]);
    assert_eq!(code, 2);
}

#[test]
fn any_pci_evidence_gets_a_report_and_none_is_exit_3() {
    // One line through a bound driver is evidence; prose is not.
    let (code, v) = explain_text(
        "amdgpu 0000:0b:00.0: BAR 0: failed to assign [mem size 0x200000000 64bit pref]\n",
    );
    assert_eq!((code, v["verdict"].as_str()), (1, Some("fail")));
    assert_eq!(v["gpus"][0]["bdf"], "0000:0b:00.0");
    let (code, v) = explain_text("NVRM: BAR1 is 0M @ 0x0 (PCI:0000:41:00.0)\n");
    assert_eq!((code, v["diagnosis"].as_str()), (1, Some("unknown")));
    let (code, _) = explain_text("The GPU does not work after the upgrade.\nlspci shows it.\n");
    assert_eq!(code, 3);
    // The root bus's windows alone name no device (corpus 473, a Hyper-V
    // guest with no GPU): nothing to explain, and the error says why.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.txt");
    std::fs::write(
        &path,
        "pci_bus 0000:00: resource 4 [mem 0xfe0000000-0xfffffffff window]\n\
         pci_bus 0000:00: root bus resource [mem 0xf8000000-0xfffbffff window]\n",
    )
    .unwrap();
    let o = run(&["explain", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: no PCI device in the input"),
        "{err}"
    );
}

#[test]
fn a_root_window_to_the_top_of_the_address_space_is_sized_not_overflowed() {
    // The hole a window up to 2^64 - 1 implies is 2^64 - start, which a
    // sum that passes through 2^64 cannot compute (an overflow panic in a
    // debug build, which this test runs).
    let log = "\
[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS unknown 2/2/2022
[    0.000000] efi: EFI v2.70 by EDK II
[    0.300000] pci_bus 0000:00: root bus resource [mem 0x800000000-0xffffffffffffffff window]
[    0.310000] pci 0000:01:00.0: [10de:2331] type 00 class 0x030200
[    0.311000] pci 0000:01:00.0: BAR 1 [mem 0x800000000-0x17ffffffff 64bit pref]
";
    let (code, v) = explain_text(log);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["capacity"]["window_origin"]["hole64_bytes"].as_u64(),
        Some(u64::MAX - 0x8_0000_0000 + 1)
    );
}

/// VMware: EFI first only where the guest booted and its firmware is not
/// shown; an EFI banner, or VMware's own power-on refusal anywhere in the
/// paste, puts the 64-bit MMIO size first (fallback/vm.rs `vmware`).
#[test]
fn vmware_puts_efi_first_only_for_a_booted_guest_of_unknown_firmware() {
    let nvrm = "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0 (PCI:0000:0b:00.0)\n";
    let efi = format!(
        "DMI: VMware, Inc. VMware20,1/440BX Desktop Reference Platform, BIOS VMW201.00V.21805430.B64.2305221830 05/22/2023\nefi: EFI v2.7 by VMware, Inc.\n{nvrm}"
    );
    let bios = format!(
        "DMI: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 11/12/2020\n{nvrm}"
    );
    let refused = "2022-04-22T03:04:15.771Z| vmx| | I005: PCIPassthru: total number of pages needed (4206594) exceeds limit (917504), failing\n";
    let mixed = format!("{refused}{nvrm}");
    for (text, first) in [
        (nvrm.to_string(), "vmware-efi"),
        (bios, "vmware-efi"),
        (efi, "vmware-64bit-mmio"),
        (refused.to_string(), "vmware-64bit-mmio"),
        (mixed, "vmware-64bit-mmio"),
    ] {
        let (_, v, _) = explain_with(&text, &["--format", "json", "--platform", "vmware"]);
        assert_eq!(v["hints"][0]["id"], first, "{text}");
    }
}

/// The binary starts without std's runtime start (src/main.rs), so it
/// ignores SIGPIPE itself: a reader that went away costs the report, not
/// the exit status (killed by the signal, a script would see 141).
#[test]
fn a_closed_pipe_keeps_the_exit_status() {
    let d = fixture("ovmf-8x16g");
    for (case, want) in [("ovmf-8x16g", 0), ("ovmf-8x32g", 1)] {
        let d = d.with_file_name(case);
        let mut child = Command::new(bin())
            .args([
                "check",
                "--match",
                "1af4:1110",
                "--format",
                "json",
                "--root",
            ])
            .arg(d.join("root"))
            .arg("--dmesg")
            .arg(d.join("dmesg.txt"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the report is written.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(want), "{case}: {:?}", o.status);
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{case}");
    }
}

#[test]
fn a_bar_taken_as_placed_without_an_address_says_so_in_the_text_report() {
    // A log cut after enumeration (corpus 287): the BARs as the kernel
    // sized them, no failure, no address.
    let log = "\
[    0.157168] pci 0000:01:00.0: [10de:17fd] type 00 class 0x030200 PCIe Endpoint
[    0.157174] pci 0000:01:00.0: BAR 0 [mem 0x00000000-0x00ffffff]
[    0.157180] pci 0000:01:00.0: BAR 1 [mem 0x00000000-0x7ffffffff 64bit pref]
";
    let (code, _, out) = explain_with(log, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("BAR 1 64-bit pref 32 GiB <address not shown>"),
        "{out}"
    );
    assert!(!out.contains("<assigned>"), "{out}");
    // With the address, the address.
    let placed = format!(
        "{log}[    0.200000] pci 0000:01:00.0: BAR 1 [mem 0x800000000-0xfffffffff 64bit pref]: assigned\n"
    );
    let (_, _, out) = explain_with(&placed, &[]);
    assert!(
        out.contains("BAR 1 64-bit pref 32 GiB at 0x800000000"),
        "{out}"
    );
}
