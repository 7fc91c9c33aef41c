//! Every kind of change on every platform: which platforms can make it,
//! and that what each writes carries the change's values.

use super::*;
use crate::decide::hint::{BootFirmware, HintId};
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
/// libvirt, LXD, QEMU, Kata, VMware, Hyper-V, KubeVirt, OpenStack, Incus,
/// virt-install, LXD's generic `raw.qemu`. A management layer a guest's
/// DMI names says every change a QEMU platform can make (its own setting,
/// its way round, or that it has none), so that its hints are never
/// empty; virt-install has what its options have.
fn able(kind: &str) -> [bool; 12] {
    const T: bool = true;
    const F: bool = false;
    match kind {
        "a CPU flag"
        | "address bits"
        | "address bits and a flag"
        | "QEMU's hole"
        | "another -global"
        | "KVM's signature"
        | "a vIOMMU's width" => [T, T, T, T, F, F, F, T, T, T, T, F],
        "a PCIe switch" | "a vfio-pci property" => [T, T, T, T, F, F, F, T, T, T, F, F],
        "OVMF's aperture" => [T, T, T, T, F, F, F, T, T, T, T, T],
        "64-bit MMIO space" | "MMIO space both sides of 4 GiB" => {
            [F, F, F, F, F, T, T, F, F, F, F, F]
        }
        "EFI firmware" => [F, F, T, F, F, T, F, T, T, T, T, F],
        "a root port's reservations" | "a root port's room below 4 GiB" => {
            [F, F, T, T, T, F, F, T, T, T, F, F]
        }
        // The guest's settings are no platform's.
        "kernel parameters" | "NCCL's environment" => [F; 12],
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
            // The values, whatever the case the platform writes them in
            // (`EFI`, `efi: {}`, `uefi`).
            let lower = phrase.to_lowercase();
            for s in &shows {
                assert!(
                    lower.contains(&s.to_lowercase()),
                    "{kind} on {p:?}: {phrase}"
                );
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

/// What each hint id asks of a platform: its change, where a platform
/// makes it (`None`: the guest's, the firmware setup's, or no settings).
fn change_of(id: HintId) -> Option<Change> {
    let kind = |k: &str| {
        kinds()
            .into_iter()
            .find(|(n, _, _)| *n == k)
            .map(|(_, c, _)| c)
    };
    match id {
        HintId::CpuPdpe1gb => kind("a CPU flag"),
        HintId::CpuPhysBits => kind("address bits and a flag"),
        HintId::OvmfMmio64Aperture => kind("OVMF's aperture"),
        HintId::QemuPciHole64Size => Some(Change {
            phys_bits_min: Some(44),
            ..kind("QEMU's hole")?
        }),
        HintId::VmwareEfi => kind("EFI firmware"),
        HintId::Vmware64bitMmio => kind("64-bit MMIO space"),
        HintId::HypervMmio => kind("MMIO space both sides of 4 GiB"),
        HintId::VmHotplugReserve => kind("a root port's reservations"),
        HintId::P2pGpudirectClique => kind("a vfio-pci property"),
        HintId::P2pKvmVisible => kind("KVM's signature"),
        HintId::P2pPcieSwitch => kind("a PCIe switch"),
        HintId::P2pViommuAwBits => kind("a vIOMMU's width"),
        HintId::GuestPciRealloc
        | HintId::KernelHotplugReserve
        | HintId::P2pNcclLevel
        | HintId::P2pNcclEnable
        | HintId::FirmwareAbove4g
        | HintId::SmallerBars
        | HintId::CheckPassthrough
        | HintId::CollectEvidence
        | HintId::PlatformWindowTooSmall
        | HintId::VmmBarPrefetchable
        | HintId::KernelResizeRollback
        | HintId::KernelRescanSizing
        | HintId::KernelWindowSizing
        | HintId::KernelRootWindowJoin
        | HintId::VmmBarMapping
        | HintId::VmmMmioRange
        | HintId::P2pHostBarMapping => None,
    }
}

/// Every hint id whose change a QEMU platform makes renders in each
/// management layer's syntax alone, with that layer's restart; a guest no
/// layer names keeps the generic lines; virt-install renders what libvirt
/// does but a device's properties and a switch, which it has no option
/// for.
#[test]
fn every_hint_id_in_every_layers_syntax() {
    let layers = [
        (Hypervisor::KubeVirt, "KubeVirt: ", "`virtctl restart <vm>`"),
        (
            Hypervisor::OpenStack,
            "OpenStack: ",
            "`openstack server resize --flavor",
        ),
        (Hypervisor::Lxd, "LXD: ", "`lxc restart <instance>`"),
        (Hypervisor::Incus, "Incus: ", "`incus restart <instance>`"),
    ];
    let mut rendered = 0;
    for id in HintId::ALL {
        let Some(c) = change_of(id) else { continue };
        let generic = super::able(&c, &Hypervisor::QEMU);
        assert_eq!(for_guest(&c, None), generic, "{id}");
        for (layer, name, restart) in layers {
            let steps = guest_steps(&c, Some(layer));
            if generic.is_empty() {
                // VMware's and Hyper-V's own hints, for no QEMU guest.
                continue;
            }
            rendered += 1;
            assert_eq!(for_guest(&c, Some(layer)), [layer], "{id}");
            assert!(steps.starts_with(name), "{id} on {layer:?}: {steps}");
            assert!(steps.contains(restart), "{id} on {layer:?}: {steps}");
            for other in ["Proxmox", "libvirt:", "QEMU:"] {
                assert!(!steps.contains(other), "{id} on {layer:?}: {steps}");
            }
        }
        let libvirt = Hypervisor::Libvirt.syntax().phrase(&c, 1).is_some();
        let virt_install = Hypervisor::VirtInstall.syntax().phrase(&c, 1).is_some();
        let no_option = !c.vfio_pci_properties.is_empty() || c.pcie_switch.is_some();
        assert_eq!(
            virt_install,
            (libvirt && !no_option) || c.boot_firmware.is_some(),
            "{id}"
        );
    }
    assert_eq!(rendered, 4 * 9, "nine ids of QEMU settings, four layers");
}

#[test]
fn each_layer_writes_its_own_knobs() {
    let hole = Change {
        qemu_globals: vec![hole64(QemuMachine::Q35, 512 * GIB)],
        ..Change::default()
    };
    let kv = list(&hole, &[Hypervisor::KubeVirt], 1).unwrap();
    assert!(
        kv.starts_with("KubeVirt: the annotation `alpha.kubevirt.io/pciHole64Size: \"512Gi\"`"),
        "{kv}"
    );
    // Else the sidecar, with libvirt's element in KiB.
    assert!(
        kv.contains("; else a hook sidecar (annotation `hooks.kubevirt.io/hookSidecars`"),
        "{kv}"
    );
    assert!(
        kv.contains("`<pcihole64 unit='KiB'>536870912</pcihole64>`"),
        "{kv}"
    );
    let os = list(&hole, &[Hypervisor::OpenStack], 1).unwrap();
    assert!(os.contains("Nova has no setting for QEMU's 64-bit hole (`-global q35-pcihost.pci-hole64-size=512G`)"), "{os}");
    let lxd = list(&hole, &[Hypervisor::Lxd], 1).unwrap();
    assert_eq!(
        lxd,
        "LXD: `lxc config set <instance> raw.qemu='-global q35-pcihost.pci-hole64-size=512G'` (one value for all of them: keep what it holds)"
    );
    let incus = list(&hole, &[Hypervisor::Incus], 1).unwrap();
    assert!(
        incus.starts_with("Incus: `incus config set <instance> raw.qemu="),
        "{incus}"
    );
    let vi = list(&hole, &[Hypervisor::VirtInstall], 1).unwrap();
    assert!(
        vi.contains("`--controller pci,index=0,model=pcie-root,pcihole64=536870912`"),
        "{vi}"
    );
    // LXD among the generic lines says the aperture alone, as it did.
    assert_eq!(list(&hole, &[Hypervisor::LxdRawQemu], 1), None);

    let bits = Change {
        phys_bits_min: Some(44),
        cpu_flags_add: vec!["pdpe1gb"],
        ..Change::default()
    };
    let os = list(&bits, &[Hypervisor::OpenStack], 1).unwrap();
    assert!(
        os.contains("--property hw:maxphysaddr_mode=emulate --property hw:maxphysaddr_bits=44"),
        "{os}"
    );
    assert!(
        os.contains("`cpu_model_extra_flags = +pdpe1gb` in nova.conf's `[libvirt]` section"),
        "{os}"
    );
    let kv = list(&bits, &[Hypervisor::KubeVirt], 1).unwrap();
    assert!(
        kv.contains("`spec.template.spec.domain.cpu.model: host-passthrough`"),
        "{kv}"
    );
    assert!(
        kv.contains("`<maxphysaddr mode='emulate' bits='44'/>` in `<cpu>`"),
        "{kv}"
    );
    let vi = list(&bits, &[Hypervisor::VirtInstall], 1).unwrap();
    assert!(
        vi.contains("`--cpu <model>,require=pdpe1gb,maxphysaddr.mode=emulate,maxphysaddr.bits=44`"),
        "{vi}"
    );
    let incus = list(&bits, &[Hypervisor::Incus], 1).unwrap();
    assert!(
        incus.contains("a host CPU with 44 address bits and `pdpe1gb`"),
        "{incus}"
    );
    assert!(
        incus.contains("instances.vm.cpu.x86_64.baseline=host"),
        "{incus}"
    );
    let flag = Change {
        cpu_flags_add: vec!["pdpe1gb"],
        ..Change::default()
    };
    let kv = list(&flag, &[Hypervisor::KubeVirt], 1).unwrap();
    assert!(kv.starts_with("KubeVirt: add `{name: pdpe1gb, policy: require}` to `spec.template.spec.domain.cpu.features`"), "{kv}");
    // A sidecar-only setting beside a field of the spec is an addition,
    // not an alternative.
    let p2p = Change {
        vfio_pci_properties: [("x-nv-gpudirect-clique".to_string(), "0".to_string())].into(),
        kvm_signature_visible: Some(true),
        ..Change::default()
    };
    let kv = list(&p2p, &[Hypervisor::KubeVirt], 2).unwrap();
    assert!(
        kv.contains("`spec.template.spec.domain.features.kvm.hidden: false`"),
        "{kv}"
    );
    assert!(
        kv.contains("; and, for what its API has no field for, a hook sidecar"),
        "{kv}"
    );
    assert!(kv.contains("<qemu:device alias='ua-gpu-<name>'>"), "{kv}");
    let efi = Change {
        boot_firmware: Some(BootFirmware::Efi),
        ..Change::default()
    };
    assert!(list(&efi, &[Hypervisor::Lxd], 1)
        .unwrap()
        .contains("boot.mode=uefi-nosecureboot"));
    assert!(list(&efi, &[Hypervisor::Incus], 1)
        .unwrap()
        .contains("security.csm=false"));
    assert!(list(&efi, &[Hypervisor::OpenStack], 1)
        .unwrap()
        .contains("hw_firmware_type=uefi"));
    let wide = Change {
        viommu_aw_bits_min: Some(52),
        ..Change::default()
    };
    assert!(list(&wide, &[Hypervisor::OpenStack], 1)
        .unwrap()
        .contains("a vIOMMU of 52 bits (Nova fixes `aw_bits` at 48)"));
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
        r.contains("; libvirt: `virsh shutdown` then `virsh start`; "),
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
    // LXD among the generic lines names no restart or passthrough of its
    // own; as a guest's layer each says its own.
    assert_eq!(restart(&[Hypervisor::LxdRawQemu]), restart(&[]));
    assert_eq!(guest_passthrough(None), passthrough(&Hypervisor::QEMU));
    for (h, says) in [
        (Hypervisor::KubeVirt, "KubeVirt: `kubectl get vmi <vm>"),
        (
            Hypervisor::OpenStack,
            "OpenStack: the flavor's `pci_passthrough:alias`",
        ),
        (Hypervisor::Lxd, "LXD: `lxc config device show <instance>`"),
        (
            Hypervisor::Incus,
            "Incus: `incus config device show <instance>`",
        ),
    ] {
        assert!(guest_passthrough(Some(h)).starts_with(says), "{h:?}");
        assert!(
            restart(&[h]).contains(&format!("again: {}", &says[..says.find(':').unwrap()])),
            "{h:?}"
        );
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

/// Hyper-V's gap made smaller (its start error: the gap ends past what
/// the host addresses) is set as the size, in MB below a GiB.
#[test]
fn hyperv_sets_a_smaller_gap_as_its_size() {
    let c = Change {
        mmio64_bytes_max: Some(512 << 20),
        ..Change::default()
    };
    assert_eq!(
        super::instruction(Hypervisor::HyperV, &c),
        "With the VM shut down: `Set-VM -VMName <vm> -HighMemoryMappedIoSpace 512MB`"
    );
    let c = Change {
        mmio64_bytes_max: Some(2 << 30),
        ..Change::default()
    };
    assert!(super::instruction(Hypervisor::HyperV, &c).ends_with("-HighMemoryMappedIoSpace 2GB`"));
}
