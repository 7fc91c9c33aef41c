//! Every kind of change on every platform: which platforms can make it,
//! and that what each writes carries the change's values.

use super::*;
use crate::decide::hint::BootFirmware;
use crate::model::platform::QemuMachine;

const GIB: u64 = 1 << 30;

/// One change of each kind, with what its lines must show.
fn kinds() -> Vec<(&'static str, Change, Vec<&'static str>)> {
    let c = Change::default;
    vec![
        (
            "a CPU flag",
            Change {
                cpu_flags_add: vec!["pdpe1gb"],
                ..c()
            },
            vec!["pdpe1gb"],
        ),
        (
            "address bits",
            Change {
                phys_bits_min: Some(44),
                ..c()
            },
            vec!["44"],
        ),
        (
            "address bits and a flag",
            Change {
                phys_bits_min: Some(43),
                cpu_flags_add: vec!["pdpe1gb"],
                ..c()
            },
            vec!["43", "pdpe1gb"],
        ),
        (
            "OVMF's aperture",
            Change {
                fw_cfg: vec![aperture(256 * GIB)],
                ..c()
            },
            vec!["X-PciMmio64Mb", "262144"],
        ),
        (
            "QEMU's hole",
            Change {
                qemu_globals: vec![hole64(QemuMachine::Q35, 512 * GIB)],
                ..c()
            },
            vec!["hole64"],
        ),
        (
            "another -global",
            Change {
                qemu_globals: vec![("ICH9-LPC.disable_s3".into(), "1".into())],
                ..c()
            },
            vec!["ICH9-LPC.disable_s3=1"],
        ),
        (
            "64-bit MMIO space",
            Change {
                mmio64_bytes_min: Some(512 * GIB),
                ..c()
            },
            vec!["512"],
        ),
        (
            "MMIO space both sides of 4 GiB",
            Change {
                mmio64_bytes_min: Some(64 * GIB),
                mmio32_bytes_min: Some(3 * GIB),
                ..c()
            },
            vec!["64"],
        ),
        (
            "EFI firmware",
            Change {
                boot_firmware: Some(BootFirmware::Efi),
                ..c()
            },
            vec!["EFI"],
        ),
        (
            "a root port's reservations",
            Change {
                pcie_root_port_properties: root_port_reserve(Some(32 * GIB), 64 << 20),
                ..c()
            },
            vec![],
        ),
        (
            "a root port's room below 4 GiB",
            Change {
                pcie_root_port_properties: root_port_reserve(None, 256 << 20),
                ..c()
            },
            vec![],
        ),
        (
            "a vfio-pci property",
            Change {
                vfio_pci_properties: [("x-nv-gpudirect-clique".to_string(), "0".to_string())]
                    .into(),
                ..c()
            },
            vec!["x-nv-gpudirect-clique", "0"],
        ),
        (
            "KVM's signature",
            Change {
                kvm_signature_visible: Some(true),
                ..c()
            },
            vec!["kvm"],
        ),
        (
            "a PCIe switch",
            Change {
                pcie_switch: Some(true),
                ..c()
            },
            vec![],
        ),
        (
            "a vIOMMU's width",
            Change {
                viommu_aw_bits_min: Some(48),
                ..c()
            },
            vec!["48"],
        ),
        (
            "kernel parameters",
            Change {
                kernel_cmdline_add: vec!["pci=realloc".into()],
                ..c()
            },
            vec![],
        ),
        (
            "NCCL's environment",
            Change {
                nccl_env: [("NCCL_P2P_LEVEL".to_string(), "PHB".to_string())].into(),
                ..c()
            },
            vec![],
        ),
    ]
}

/// Which platforms make each kind, in `Hypervisor::ALL`'s order: Proxmox,
/// libvirt, LXD, QEMU, Kata, VMware, Hyper-V.
fn able(kind: &str) -> [bool; 7] {
    match kind {
        "a CPU flag"
        | "address bits"
        | "address bits and a flag"
        | "QEMU's hole"
        | "another -global"
        | "KVM's signature"
        | "a PCIe switch"
        | "a vIOMMU's width"
        | "a vfio-pci property" => [true, true, false, true, false, false, false],
        "OVMF's aperture" => [true, true, true, true, false, false, false],
        "64-bit MMIO space" | "MMIO space both sides of 4 GiB" => {
            [false, false, false, false, false, true, true]
        }
        "EFI firmware" => [false, false, false, false, false, true, false],
        "a root port's reservations" | "a root port's room below 4 GiB" => {
            [false, false, false, true, true, false, false]
        }
        // The guest's settings are no platform's.
        "kernel parameters" | "NCCL's environment" => [false; 7],
        _ => unreachable!("{kind}"),
    }
}

#[test]
fn every_change_kind_on_every_platform() {
    for (kind, change, shows) in kinds() {
        for (p, can) in Hypervisor::ALL.iter().zip(able(kind)) {
            let phrase = p.syntax().phrase(&change, 2);
            assert_eq!(phrase.is_some(), can, "{kind} on {p:?}: {phrase:?}");
            let Some(phrase) = phrase else { continue };
            for s in &shows {
                assert!(phrase.contains(s), "{kind} on {p:?}: {phrase}");
            }
            // The root port's sizes on the platforms that take sizes.
            for (k, v) in &change.pcie_root_port_properties {
                if *p == Hypervisor::Qemu {
                    assert!(phrase.contains(&format!("{k}={v}")), "{phrase}");
                }
            }
            assert!(super::able(&change, &Hypervisor::ALL).contains(p));
        }
    }
}

#[test]
fn the_values_as_each_platform_writes_them() {
    let hole = Change {
        qemu_globals: vec![hole64(QemuMachine::I440fx, 64 * GIB)],
        ..Change::default()
    };
    let l = list(&hole, &Hypervisor::ALL, 1).unwrap();
    assert!(
        l.contains("`-global i440FX-pcihost.pci-hole64-size=64G`"),
        "{l}"
    );
    // libvirt's hole is in KiB, on i440fx's pci-root.
    assert!(l.contains("model='pci-root'"), "{l}");
    assert!(
        l.contains("<pcihole64 unit='KiB'>67108864</pcihole64>"),
        "{l}"
    );
    assert_eq!(hole64_bytes(&hole), Some((64 * GIB, true)));
    let ap = Change {
        fw_cfg: vec![aperture(64 * GIB)],
        ..Change::default()
    };
    assert_eq!(aperture_mib(&ap), Some(65536));
    // Proxmox's -set per GPU, with the VM's hostpci numbers.
    let clique = Change {
        vfio_pci_properties: [("x-nv-gpudirect-clique".to_string(), "0".to_string())].into(),
        ..Change::default()
    };
    let l = list(&clique, &[Hypervisor::Proxmox], 3).unwrap();
    assert!(
        l.contains("-set device.hostpci2.x-nv-gpudirect-clique=0`"),
        "{l}"
    );
    assert!(!l.contains("hostpci3"), "{l}");
    let mmio = Change {
        mmio64_bytes_min: Some(512 * GIB),
        mmio32_bytes_min: Some(3 * GIB),
        ..Change::default()
    };
    let v = instruction(Hypervisor::Vmware, &mmio);
    assert!(v.starts_with("With the VM powered off, "), "{v}");
    assert!(v.contains("`pciPassthru.64bitMMIOSizeGB = \"512\"`"), "{v}");
    let h = instruction(Hypervisor::HyperV, &mmio);
    assert!(h.starts_with("With the VM shut down: "), "{h}");
    assert!(h.contains("-HighMemoryMappedIoSpace 512GB"), "{h}");
    assert!(h.contains("-LowMemoryMappedIoSpace 3GB"), "{h}");
    // A platform with no hint of its own has no instruction.
    assert_eq!(instruction(Hypervisor::Proxmox, &mmio), "");
    let k = Change {
        kernel_cmdline_add: vec![hotplug_reserve(32 * GIB, 64 << 20)],
        ..Change::default()
    };
    let g = kernel_cmdline(&k).unwrap();
    assert!(
        g.contains("--args=pci=realloc,hpmmioprefsize=32G,hpmemsize=64M`"),
        "{g}"
    );
    // remediate adds pci=realloc and nothing else.
    assert!(!g.contains("remediate"), "{g}");
    let r = Change {
        kernel_cmdline_add: vec!["pci=realloc".into()],
        ..Change::default()
    };
    assert!(kernel_cmdline(&r)
        .unwrap()
        .contains("gpu-preflight remediate"));
    let n = Change {
        nccl_env: [
            ("NCCL_P2P_LEVEL".to_string(), "PHB".to_string()),
            ("NCCL_P2P_DISABLE".to_string(), String::new()),
        ]
        .into(),
        ..Change::default()
    };
    assert_eq!(nccl_env(&n), "NCCL_P2P_LEVEL=PHB");
}

#[test]
fn each_platform_says_how_its_vm_restarts_and_shows_its_gpus() {
    let r = restart(&Hypervisor::ALL);
    assert!(
        r.starts_with("It takes effect when the VM is stopped and started again: Proxmox: "),
        "{r}"
    );
    assert!(
        r.contains("; libvirt: `virsh shutdown` then `virsh start`."),
        "{r}"
    );
    assert!(r.ends_with("A reboot inside the guest keeps the old settings."));
    assert_eq!(
        restart(&[Hypervisor::Qemu, Hypervisor::Kata]),
        "It takes effect when the VM is stopped and started again. A reboot inside the guest keeps the old settings."
    );
    let p = passthrough(&Hypervisor::ALL);
    for name in ["Proxmox: ", "libvirt: ", "QEMU: "] {
        assert!(p.contains(name), "{p}");
    }
}

#[test]
fn a_named_vm_gets_its_own_lines() {
    let change = Change {
        cpu_flags_add: vec!["pdpe1gb"],
        phys_bits_min: Some(44),
        qemu_globals: vec![hole64(QemuMachine::Q35, 1024 * GIB)],
        fw_cfg: vec![aperture(256 * GIB)],
        ..Change::default()
    };
    let proxmox = VmTarget::Proxmox {
        vmid: "100".into(),
        cpu: "host".into(),
        args: "-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=65536 -smbios type=1".into(),
    };
    let libvirt = VmTarget::Libvirt {
        name: "inference".into(),
    };
    let vm = |target| NamedVm {
        target,
        has_hole64: false,
        has_mmio64: true,
    };
    let p = for_vm(&change, Side::Host, &vm(&proxmox));
    assert!(
        p.contains("`qm set 100 --cpu host,flags=+pdpe1gb,phys-bits=44`"),
        "{p}"
    );
    // The aperture there is replaced, the rest of the line kept.
    assert!(
        p.contains("--args '-smbios type=1 -global q35-pcihost.pci-hole64-size=1024G -fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=262144'"),
        "{p}"
    );
    assert!(
        p.ends_with("a reboot inside the guest keeps the old QEMU process"),
        "{p}"
    );
    let l = for_vm(&change, Side::Host, &vm(&libvirt));
    assert!(l.starts_with("`virsh edit inference`: "), "{l}");
    assert!(
        l.contains("<maxphysaddr mode='emulate' bits='44'/> in <cpu>"),
        "{l}"
    );
    assert!(
        l.contains("<pcihole64 unit='KiB'>1073741824</pcihole64>"),
        "{l}"
    );
    assert!(l.contains("string=262144'/> in <qemu:commandline>"), "{l}");
    assert!(l.contains(", in place of the X-PciMmio64Mb there"), "{l}");
    let q = for_vm(&change, Side::Host, &vm(&VmTarget::Qemu));
    assert!(q.contains("`-cpu <model>,+pdpe1gb,phys-bits=44`"), "{q}");
    assert!(q.ends_with("then start a new QEMU process"), "{q}");
    // A guest change is the guest's, whatever the VM.
    let guest = Change {
        kernel_cmdline_add: vec!["pci=realloc".into()],
        ..Change::default()
    };
    let g = for_vm(&guest, Side::Guest, &vm(&proxmox));
    assert!(g.starts_with("in the guest: "), "{g}");
    assert!(!g.contains("qm "), "{g}");
}

#[test]
fn each_gpu_of_a_named_vm_gets_the_device_property() {
    let change = Change {
        vfio_pci_properties: [("x-nv-gpudirect-clique".to_string(), "0".to_string())].into(),
        kvm_signature_visible: Some(true),
        ..Change::default()
    };
    let whole = vec!["0000:41:00".to_string()];
    let listed = vec!["0000:42:00.0".to_string(), "0000:42:00.1".to_string()];
    let one = vec!["0000:43:00.0".to_string()];
    let vm = VmGpus {
        gpus: vec![
            VmGpu {
                name: "hostpci0",
                hosts: &whole,
                targetable: false,
            },
            VmGpu {
                name: "hostpci1",
                hosts: &listed,
                targetable: false,
            },
            VmGpu {
                name: "",
                hosts: &one,
                targetable: true,
            },
        ],
        args: "-smbios type=1 -set device.hostpci0.x-nv-gpudirect-clique=3",
    };
    let p = device_lines(Hypervisor::Proxmox, &change, &vm);
    assert_eq!(p.len(), 4, "{p:?}");
    // The entries -set cannot name become the GPU's function alone.
    assert!(p[0].starts_with("hostpci0: 0000:41:00.0,pcie=1  (was 0000:41:00:"));
    assert!(p[1].starts_with("hostpci1: 0000:42:00.0,pcie=1  (was 0000:42:00.0;0000:42:00.1:"));
    // The args line keeps the VM's own arguments, its old clique dropped.
    assert_eq!(
        p[2],
        "args: -smbios type=1 -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.x-nv-gpudirect-clique=0 -set device..x-nv-gpudirect-clique=0"
    );
    assert_eq!(p[3], "cpu: (the same, without hidden=1)");
    let l = device_lines(Hypervisor::Libvirt, &change, &vm);
    assert_eq!(l.len(), 1);
    assert!(l[0].starts_with("<qemu:override><qemu:device alias='hostpci0'>"));
    // A hostdev without an alias is named as the problems ask it be.
    assert!(l[0].contains("<qemu:device alias='ua-gpu2'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device></qemu:override>"), "{l:?}");
    let q = device_lines(Hypervisor::Qemu, &change, &vm);
    assert_eq!(
        q,
        [
            "-device vfio-pci,host=0000:41:00.0,x-nv-gpudirect-clique=0",
            "-device vfio-pci,host=0000:42:00.0,x-nv-gpudirect-clique=0",
            "-device vfio-pci,host=0000:43:00.0,x-nv-gpudirect-clique=0",
        ]
    );
    // The same writer as the hints' generic lines.
    let generic = list(&change, &[Hypervisor::Qemu], 1).unwrap();
    assert!(
        generic.contains("`-device vfio-pci,host=...,x-nv-gpudirect-clique=0`"),
        "{generic}"
    );
    // Platforms without such lines, and a change without properties.
    assert!(device_lines(Hypervisor::Vmware, &change, &vm).is_empty());
    let none = Change {
        kvm_signature_visible: Some(true),
        ..Change::default()
    };
    assert!(device_lines(Hypervisor::Proxmox, &none, &vm).is_empty());
}
