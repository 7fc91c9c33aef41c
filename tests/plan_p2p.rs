//! `plan --p2p` on copies of the fake Proxmox host (tests/fixtures/
//! plan-proxmox-8x-rtx-pro-6000) with VM configurations written here: the
//! exact lines for Proxmox, libvirt and QEMU; why a `hidden=1` CPU, bare
//! BDF hostpci entries, an old QEMU with 0xC8 taken, a narrow host IOMMU
//! or `-set` under libvirt keep the clique from taking.

pub mod support;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use support::{bin, copy_root, fixture};

const HOST: &str = "plan-proxmox-8x-rtx-pro-6000";

/// The real H200's config space (MSI-X at 0xb0: 0xC8 free), or with MSI-X
/// moved to 0xC8 as Turing and later have it.
fn gpu_config(c8_taken: bool) -> Vec<u8> {
    let mut c = std::fs::read(
        fixture("h200-kvm-passthrough").join("root/sys/devices/pci0000:00/0000:00:06.0/config"),
    )
    .unwrap();
    if c8_taken {
        let msix: Vec<u8> = c[0xb0..0xbc].to_vec();
        c[0xc8..0xd4].copy_from_slice(&msix);
        c[0xb0..0xbc].fill(0);
        c[0x61] = 0xc8;
    }
    c
}

fn host(dir: &Path, qemu: &str, c8_taken: bool, iommu_cap: Option<&str>) {
    copy_root(HOST, dir);
    let status = dir.join("var/lib/dpkg/status");
    let mut s = std::fs::read_to_string(&status).unwrap();
    s.push_str(&format!(
        "\nPackage: pve-qemu-kvm\nStatus: install ok installed\nVersion: {qemu}\n"
    ));
    std::fs::write(&status, s).unwrap();
    for f in ["0000:41:00.0", "0000:42:00.0"] {
        let d = std::fs::canonicalize(dir.join("sys/bus/pci/devices").join(f)).unwrap();
        std::fs::write(d.join("config"), gpu_config(c8_taken)).unwrap();
    }
    if let Some(cap) = iommu_cap {
        let d = dir.join("sys/class/iommu/dmar0/intel-iommu");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cap"), format!("{cap}\n")).unwrap();
    }
}

fn plan(root: &Path, args: &[&str]) -> (i32, Value, String) {
    let run = |fmt: &str| {
        Command::new(bin())
            .arg("plan")
            .arg("--root")
            .arg(root)
            .args(args)
            .args(["--p2p", "--format", fmt])
            .output()
            .unwrap()
    };
    let j = run("json");
    let v: Value = serde_json::from_slice(&j.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&j.stderr)));
    let t = String::from_utf8(run("text").stdout).unwrap();
    (j.status.code().unwrap(), v, t)
}

fn vm(root: &Path, id: &str, conf: &str) {
    std::fs::write(root.join(format!("etc/pve/qemu-server/{id}.conf")), conf).unwrap();
}

const BASE: &str = "bios: ovmf\nmachine: q35\nmemory: 65536\n";

#[test]
fn a_proxmox_vm_with_the_clique_on_both_functions_gets_the_grant() {
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "9.0.2-4", true, None);
    vm(t.path(), "200", &format!("{BASE}cpu: host\nhostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, text) = plan(t.path(), &["--proxmox", "200"]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "granted", "{}", p["problems"]);
    assert_eq!(p["devices"][0]["device_id"], "hostpci0");
    assert_eq!(p["devices"][0]["clique"], "0");
    // QEMU 9.0 with MSI-X at 0xC8: the capability goes to 0xD4.
    assert_eq!(p["devices"][0]["clique_offset"], "0xd4");
    assert!(
        text.contains("p2p: the driver's gate will be granted"),
        "{text}"
    );
}

#[test]
fn accelerators_are_gpus_to_plan_p2p_as_to_plan() {
    // Class 0x1200 (a processing accelerator, as compute-only parts report
    // themselves) is a GPU for plan's window; --p2p once left such GPUs
    // out and judged the gate on none.
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "9.0.2-4", true, None);
    for f in ["0000:41:00.0", "0000:42:00.0"] {
        let d = std::fs::canonicalize(t.path().join("sys/bus/pci/devices").join(f)).unwrap();
        std::fs::write(d.join("class"), "0x120000\n").unwrap();
    }
    vm(t.path(), "209", &format!("{BASE}cpu: host\nhostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "209"]);
    assert_eq!(v["gpus"].as_array().map(Vec::len), Some(2), "{v}");
    let p = &v["p2p"];
    assert_eq!(p["devices"].as_array().map(Vec::len), Some(2), "{p}");
    assert_eq!(p["driver_gate"], "granted", "{}", p["problems"]);
}

#[test]
fn without_the_clique_plan_prints_the_exact_lines() {
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.1.5-6", false, None);
    vm(t.path(), "201", &format!("{BASE}hostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -fw_cfg opt/ovmf/X-PciMmio64Mb,string=262144\n"));
    let (_, v, text) = plan(t.path(), &["--proxmox", "201"]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "refused");
    assert_eq!(
        p["lines"]["proxmox"][0],
        "args: -fw_cfg opt/ovmf/X-PciMmio64Mb,string=262144 -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0"
    );
    assert_eq!(
        p["lines"]["qemu"],
        "-device vfio-pci,host=0000:41:00.0,x-nv-gpudirect-clique=0 -device vfio-pci,host=0000:42:00.0,x-nv-gpudirect-clique=0"
    );
    assert!(text.contains("why: no GPU is given a clique"), "{text}");
    assert_eq!(p["devices"][0]["clique_offset"], "0xc8");
}

#[test]
fn hidden_kvm_and_bare_bdfs_are_told_why_the_clique_will_not_take() {
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.1.5-6", false, None);
    vm(t.path(), "202", &format!("{BASE}cpu: host,hidden=1\nhostpci0: 0000:41:00,pcie=1\nhostpci1: 0000:42:00,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "202"]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "refused");
    assert_eq!(p["kvm_hidden"], true);
    assert_eq!(p["devices"][0]["device_id"], "hostpci0.0");
    assert_eq!(p["devices"][0]["targetable"], false);
    let why = p["problems"].to_string();
    assert!(why.contains("hidden=1 hides KVM"), "{why}");
    assert!(why.contains("without a function"), "{why}");
    assert!(p["lines"]["proxmox"][0]
        .as_str()
        .unwrap()
        .starts_with("hostpci0: 0000:41:00.0,pcie=1"));
}

#[test]
fn a_hostpci_list_of_functions_is_not_targetable_either() {
    // qemu-server names the devices of a `;` list hostpciN.0, hostpciN.1
    // as it does for a bare BDF: `-set device.hostpci0...` names none.
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.1.5-6", false, None);
    vm(t.path(), "203", &format!("{BASE}hostpci0: 0000:41:00.0;0000:41:00.1,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "203"]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "refused", "{p}");
    assert_eq!(p["devices"][0]["device_id"], "hostpci0.0");
    assert_eq!(p["devices"][0]["targetable"], false);
    assert_eq!(p["devices"][1]["targetable"], true);
    assert!(
        p["problems"].to_string().contains("list several functions"),
        "{p}"
    );
    let line = p["lines"]["proxmox"][0].as_str().unwrap();
    assert!(
        line.starts_with("hostpci0: 0000:41:00.0,pcie=1  (was 0000:41:00.0;0000:41:00.1"),
        "{line}"
    );
}

#[test]
fn qemu_before_8_1_cannot_place_the_clique_when_0xc8_is_taken() {
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.0.2-3", true, None);
    vm(t.path(), "203", &format!("{BASE}hostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "203"]);
    assert_eq!(v["p2p"]["driver_gate"], "refused");
    assert!(v["p2p"]["problems"].to_string().contains("QEMU before 8.1"));
    // 8.1: the same VM is granted (0xD4).
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.1.2-1", true, None);
    vm(t.path(), "203", &format!("{BASE}hostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "203"]);
    assert_eq!(
        v["p2p"]["driver_gate"], "granted",
        "{}",
        v["p2p"]["problems"]
    );
}

#[test]
fn qemu_given_on_the_command_line_wins_over_the_package() {
    // The package says 8.0 (0xC8 only, taken: refused); --qemu 8.1 puts
    // the clique at 0xD4, as plan's window model takes --qemu too.
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "8.0.2-3", true, None);
    vm(t.path(), "205", &format!("{BASE}hostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "205"]);
    assert_eq!(v["p2p"]["driver_gate"], "refused");
    assert!(v["p2p"].get("qemu_given").is_none(), "{}", v["p2p"]);
    let (_, v, text) = plan(t.path(), &["--proxmox", "205", "--qemu", "8.1"]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "granted", "{}", p["problems"]);
    assert_eq!(p["devices"][0]["clique_offset"], "0xd4");
    assert_eq!(p["qemu_given"], "8.1");
    assert_eq!(p["qemu_package"], "pve-qemu-kvm 8.0.2-3");
    assert_eq!(v["vm"]["qemu_version"], "8.1", "{}", v["vm"]);
    assert!(text.contains("(QEMU 8.1 from --qemu, "), "{text}");
    // And the other way: a new package, an old --qemu.
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "9.0.2-4", true, None);
    vm(t.path(), "205", &format!("{BASE}hostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "205", "--qemu", "8.0"]);
    assert_eq!(v["p2p"]["driver_gate"], "refused");
    assert!(
        v["p2p"]["problems"].to_string().contains("QEMU before 8.1"),
        "{}",
        v["p2p"]
    );
    // A release without the clique property is named as given.
    let (_, v, _) = plan(t.path(), &["--proxmox", "205", "--qemu", "2.10"]);
    assert!(
        v["p2p"]["problems"]
            .to_string()
            .contains("QEMU 2.10 (--qemu) is older than QEMU 2.11"),
        "{}",
        v["p2p"]
    );
}

#[test]
fn a_narrow_host_iommu_is_named() {
    let t = tempfile::tempdir().unwrap();
    // MGAW field (bits 21:16) 38: 39 bits.
    host(t.path(), "9.0.2-4", false, Some("d2008c40660462"));
    vm(t.path(), "204", &format!("{BASE}cpu: host\nhostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00.0,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0\n"));
    let (_, v, _) = plan(t.path(), &["--proxmox", "204"]);
    assert_eq!(v["p2p"]["iommu_width_bits"], 39);
    assert!(
        v["p2p"]["problems"]
            .to_string()
            .contains("host IOMMU translates 39"),
        "{}",
        v["p2p"]
    );
}

#[test]
fn libvirt_with_and_without_the_override() {
    let t = tempfile::tempdir().unwrap();
    host(t.path(), "9.0.2-4", false, None);
    let dom = |extra: &str, features: &str| {
        format!(
            "<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'><name>g</name><memory unit='GiB'>64</memory><os firmware='efi'><type machine='q35'>hvm</type></os><features>{features}</features><cpu mode='host-passthrough'/><devices>\
<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/></source><alias name='ua-gpu0'/></hostdev>\
<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x42' slot='0x00' function='0x0'/></source><alias name='ua-gpu1'/></hostdev></devices>{extra}</domain>"
        )
    };
    let ov = "<qemu:override><qemu:device alias='ua-gpu0'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device><qemu:device alias='ua-gpu1'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device></qemu:override>";
    let f = t.path().join("with.xml");
    std::fs::write(&f, dom(ov, "")).unwrap();
    let (_, v, _) = plan(t.path(), &["--libvirt", f.to_str().unwrap()]);
    assert_eq!(
        v["p2p"]["driver_gate"], "granted",
        "{}",
        v["p2p"]["problems"]
    );

    let f = t.path().join("without.xml");
    std::fs::write(
        &f,
        dom(
            "<qemu:commandline><qemu:arg value='-set'/><qemu:arg value='device.ua-gpu0.x-nv-gpudirect-clique=0'/></qemu:commandline>",
            "<kvm><hidden state='on'/></kvm>",
        ),
    )
    .unwrap();
    let (_, v, _) = plan(t.path(), &["--libvirt", f.to_str().unwrap()]);
    let p = &v["p2p"];
    assert_eq!(p["driver_gate"], "refused");
    assert_eq!(p["lines"]["libvirt"], ov);
    let why = p["problems"].to_string();
    assert!(why.contains("JSON") && why.contains("hidden"), "{why}");
}

#[test]
fn without_the_flag_plan_has_no_p2p_section() {
    let o = Command::new(bin())
        .arg("plan")
        .arg("--root")
        .arg(fixture(HOST).join("root"))
        .args(["--proxmox", "100", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("p2p").is_none());
}
