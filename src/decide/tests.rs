//! Across the hints: every id, on every path that builds it (the model's
//! prescriptions, `plan`'s, the fallback, `space`, peer-to-peer from a
//! system and from text), carries in `change` exactly what its text tells
//! to set on its side, with the same values. The evidence builders here
//! serve the hint modules' own tests too.

use crate::decide::diagnosis::{diagnose, Case, Diagnosis, DiagnosisKind};
use crate::decide::hint::{Change, Hint, HintId, Side};
use crate::decide::predict::Model;
use crate::decide::syntax::VmTarget;
use crate::decide::window::{
    Firmware as Fw, GpuBars, Machine, OvmfRules, SeabiosRules, SeabiosVersion, Setup,
};
use crate::decide::{hints, p2p, space, summary};
use crate::evidence::p2p::{NcclSetting, P2pEvidence, P2pGpu, Viommu};
use crate::evidence::{Evidence, Gpu};
use crate::model::bar::{Bar, BarState};
use crate::model::p2p::{CliqueCap, PathLevel};
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::CpuidView;
use crate::model::platform::{CpuVendor, Firmware, Signs};
use crate::parse::p2p_text::P2pText;
use std::collections::BTreeSet;

const GIB: u64 = 1 << 30;

/// A GPU known from `NVRM: BAR1 is 0M` alone: a failed BAR of no
/// known type or size, on the platform the signs give.
pub(super) fn nvrm_only(signs: Signs, advised: bool) -> Evidence {
    Evidence {
        gpus: vec![Gpu {
            addr: PciAddress {
                domain: 0,
                bus: 1,
                device: 0,
                function: 0,
            },
            vendor: 0x10de,
            device: 0,
            class: 0,
            bars: vec![Bar {
                index: 1,
                state: BarState::Unassigned,
                io: false,
                mem64: false,
                prefetchable: false,
                start: None,
                size: None,
                size_source: None,
                type_known: false,
            }],
            upstream: vec![],
            root_bus: None,
            ids_known: false,
        }],
        realloc_advised: advised,
        firmware: Firmware {
            signs,
            ..Firmware::default()
        },
        ..Evidence::default()
    }
}

/// A GPU with one failed memory BAR of a known type and size.
pub(super) fn typed(signs: Signs, bus: u8, mem64: bool, pref: bool) -> Evidence {
    let mut ev = nvrm_only(signs, false);
    ev.gpus[0].addr.bus = bus;
    let b = &mut ev.gpus[0].bars[0];
    (b.index, b.mem64, b.prefetchable, b.type_known) = (0, mem64, pref, true);
    b.size = Some(16 << 20);
    ev
}

pub(super) fn metal(phys_bits: u32, gpus: usize) -> Evidence {
    use crate::evidence::{Window, WindowSource};
    use crate::model::bar::SizeSource;
    use crate::model::platform::Cpu;
    use crate::model::range::Range;
    let gpus = (0..gpus)
        .map(|n| Gpu {
            addr: PciAddress {
                domain: 0,
                bus: n as u8 + 1,
                device: 0,
                function: 0,
            },
            vendor: 0x10de,
            device: 0x2330,
            class: 0x030200,
            bars: vec![Bar {
                index: 1,
                state: if n == 0 {
                    BarState::Unassigned
                } else {
                    BarState::Assigned
                },
                io: false,
                mem64: true,
                prefetchable: true,
                start: None,
                size: Some(128 * GIB),
                size_source: Some(SizeSource::Sysfs),
                type_known: true,
            }],
            upstream: vec![],
            root_bus: None,
            ids_known: true,
        })
        .collect();
    Evidence {
        gpus,
        windows: vec![Window {
            range: Range::new(0x20_0000_0000, 0xff_ffff_ffff),
            source: WindowSource::Iomem,
            bus: None,
        }],
        windows_known: true,
        cpu: Cpu {
            phys_bits: Some(phys_bits),
            ..Cpu::default()
        },
        firmware: Firmware {
            bios_vendor: Some("American Megatrends International, LLC.".into()),
            sys_vendor: Some("Supermicro".into()),
            ..Firmware::default()
        },
        ..Evidence::default()
    }
}

/// A setting, as a hint's text names it or its change holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Knob {
    PhysBits(u32),
    Flag(String),
    FwCfg(String, String),
    Hole64(u64),
    Global(String, String),
    Mmio64(u64),
    Mmio64Max(u64),
    Mmio32(u64),
    Efi,
    RootPort(String, String),
    Vfio(String, String),
    KvmVisible,
    Switch,
    ViommuAw(u32),
    Cmdline(String),
    Nccl(String, String),
}

impl Knob {
    /// Made in the guest (its kernel, NCCL), not in the VM's settings.
    fn guest(&self) -> bool {
        matches!(self, Knob::Cmdline(_) | Knob::Nccl(..))
    }
}

/// The start of `s` up to where a setting's value ends.
fn value(s: &str) -> &str {
    let end = s
        .find(['`', '\'', '"', ' ', ',', '<', ')', ';'])
        .unwrap_or(s.len());
    &s[..end]
}

/// Each value in `text` that follows `marker`.
fn after<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    text.match_indices(marker)
        .map(|(i, _)| value(&text[i + marker.len()..]))
        .collect()
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

fn gib(s: &str) -> Option<u64> {
    num::<u64>(s.strip_suffix("GB")?).map(|g| g * GIB)
}

/// The code spans of `text` (between backticks).
fn spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// The settings a hint's text names with a value.
fn named(text: &str) -> BTreeSet<Knob> {
    let mut k = BTreeSet::new();
    for v in after(text, "phys-bits=")
        .into_iter()
        .chain(after(text, "bits='"))
    {
        k.extend(num(v).map(Knob::PhysBits));
    }
    for m in ["flags=+", ",+", "<feature policy='require' name='"] {
        k.extend(
            after(text, m)
                .into_iter()
                .filter(|f| !f.is_empty())
                .map(|f| Knob::Flag(f.into())),
        );
    }
    for (i, _) in text.match_indices("name=") {
        let rest = &text[i + 5..];
        if let Some((name, tail)) = rest.split_once(",string=") {
            if !name.contains([' ', '`']) {
                k.insert(Knob::FwCfg(name.into(), value(tail).into()));
            }
        }
    }
    for v in after(text, "X-PciMmio64Mb=") {
        k.insert(Knob::FwCfg("opt/ovmf/X-PciMmio64Mb".into(), v.into()));
    }
    for g in after(text, "-global ") {
        let Some((key, v)) = g.split_once('=') else {
            continue;
        };
        // Two -global properties are settings of their own.
        if key.ends_with(".pci-hole64-size") {
            k.extend(crate::parse::size::size(v).ok().map(Knob::Hole64));
        } else if key == "intel-iommu.aw-bits" {
            k.extend(num(v).map(Knob::ViommuAw));
        } else {
            k.insert(Knob::Global(key.into(), v.into()));
        }
    }
    for v in after(text, "<pcihole64 unit='KiB'>") {
        k.extend(num::<u64>(v).map(|kib| Knob::Hole64(kib << 10)));
    }
    for v in after(text, "64bitMMIOSizeGB = \"") {
        k.extend(num::<u64>(v).map(|g| Knob::Mmio64(g * GIB)));
    }
    for v in after(text, "-HighMemoryMappedIoSpace ") {
        k.extend(gib(v).map(Knob::Mmio64));
        // A size in MB is the most the gap may take (`hyperv_below`).
        k.extend(
            v.strip_suffix("MB")
                .and_then(num::<u64>)
                .map(|m| Knob::Mmio64Max(m << 20)),
        );
    }
    for v in after(text, "-LowMemoryMappedIoSpace ") {
        k.extend(gib(v).map(Knob::Mmio32));
    }
    if text.contains("Firmware: EFI") {
        k.insert(Knob::Efi);
    }
    for p in ["pref64-reserve", "mem-reserve"] {
        for v in after(text, &format!("{p}=")) {
            k.insert(Knob::RootPort(p.into(), v.into()));
        }
    }
    for v in after(text, "x-nv-gpudirect-clique=") {
        k.insert(Knob::Vfio("x-nv-gpudirect-clique".into(), v.into()));
    }
    for (i, _) in text.match_indices("<qemu:property name='") {
        let rest = &text[i..];
        let (name, val) = (after(rest, "name='")[0], after(rest, "value='")[0]);
        k.insert(Knob::Vfio(name.into(), val.into()));
    }
    if ["kvm=off", "hidden=1", "<hidden state='on'/>"]
        .iter()
        .any(|m| text.contains(m))
    {
        k.insert(Knob::KvmVisible);
    }
    if text.contains("x3130-upstream") || text.contains("pcie-switch-upstream-port") {
        k.insert(Knob::Switch);
    }
    for v in after(text, "aw-bits=")
        .into_iter()
        .chain(after(text, "aw='"))
    {
        k.extend(num(v).map(Knob::ViommuAw));
    }
    // The guest's: kernel parameters in code spans and grubby's --args,
    // except the one the text offers to undo it (`pci=realloc=off`).
    for s in spans(text) {
        if s.starts_with("pci=") && !s.ends_with("=off") {
            k.insert(Knob::Cmdline(s.into()));
        }
        if let Some(a) = s.split_once("--args=").map(|(_, a)| a) {
            k.insert(Knob::Cmdline(a.trim_matches('"').into()));
        }
        if let Some((key, v)) = s
            .split_once('=')
            .filter(|(key, _)| key.starts_with("NCCL_"))
        {
            k.insert(Knob::Nccl(key.into(), v.into()));
        }
    }
    k
}

/// The settings a change holds. A setting removed (an empty NCCL value)
/// is said in words, not as a value.
fn held(c: &Change) -> BTreeSet<Knob> {
    let mut k = BTreeSet::new();
    k.extend(c.phys_bits_min.map(Knob::PhysBits));
    k.extend(c.cpu_flags_add.iter().map(|f| Knob::Flag((*f).into())));
    k.extend(
        c.fw_cfg
            .iter()
            .map(|(n, v)| Knob::FwCfg(n.clone(), v.clone())),
    );
    for (key, v) in &c.qemu_globals {
        match key.strip_suffix(".pci-hole64-size") {
            Some(_) => k.insert(Knob::Hole64(crate::parse::size::size(v).unwrap())),
            None => k.insert(Knob::Global(key.clone(), v.clone())),
        };
    }
    k.extend(c.mmio64_bytes_min.map(Knob::Mmio64));
    k.extend(c.mmio64_bytes_max.map(Knob::Mmio64Max));
    k.extend(c.mmio32_bytes_min.map(Knob::Mmio32));
    k.extend(c.boot_firmware.map(|_| Knob::Efi));
    k.extend(
        c.pcie_root_port_properties
            .iter()
            .map(|(p, v)| Knob::RootPort(p.clone(), v.clone())),
    );
    k.extend(
        c.vfio_pci_properties
            .iter()
            .map(|(p, v)| Knob::Vfio(p.clone(), v.clone())),
    );
    k.extend(
        c.kvm_signature_visible
            .filter(|v| *v)
            .map(|_| Knob::KvmVisible),
    );
    k.extend(c.pcie_switch.filter(|v| *v).map(|_| Knob::Switch));
    k.extend(c.viommu_aw_bits_min.map(Knob::ViommuAw));
    k.extend(
        c.kernel_cmdline_add
            .iter()
            .map(|p| Knob::Cmdline(p.clone())),
    );
    k.extend(
        c.nccl_env
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(n, v)| Knob::Nccl(n.clone(), v.clone())),
    );
    k
}

/// A host or guest hint's text and change name the same settings of its
/// side; a host step of two parts (the host's settings with the guest's
/// kernel parameters, made first) names those of both; a firmware-setup
/// hint has no machine-readable change.
fn assert_consistent(path: &str, h: &Hint) {
    let held = held(&h.change);
    if h.side == Side::Firmware {
        assert!(held.is_empty(), "{path} [{}]: {held:?}", h.id);
        return;
    }
    let guest = h.side == Side::Guest;
    let both = h.change.is_two_part();
    assert!(!both || h.side == Side::Host, "{path} [{}]", h.id);
    let named: BTreeSet<Knob> = named(&h.text)
        .into_iter()
        .filter(|k| both || k.guest() == guest)
        .collect();
    assert!(
        both || held.iter().all(|k| k.guest() == guest),
        "{path} [{}]: {held:?} on the {:?} side",
        h.id,
        h.side
    );
    assert_eq!(
        named, held,
        "{path} [{}]: text names, change holds\n{}",
        h.id, h.text
    );
}

/// A diagnosis with the numbers `hints` words.
fn diagnosis(kind: DiagnosisKind, needed: u64, window: u64) -> Diagnosis {
    Diagnosis {
        kind,
        case: Case::TooSmall { tight: None },
        needed_bytes: Some(needed),
        window_bytes: Some(window),
        counted_windows: Vec::new(),
        needed_end: None,
        addressable_limit: None,
        missing: 0,
        failed_bars: 8,
    }
}

/// Models whose prescriptions, together, give every id the model has.
fn models() -> Vec<Model> {
    let ovmf = Fw::Ovmf(OvmfRules::STABLE_202211);
    let q35 = |fw, bits, vendor, gpus, bars: Vec<u64>, hole64: Option<u64>| {
        let setup = Setup {
            hole64,
            ..Setup::q35(fw, bits, vendor)
        };
        Model::new(setup, vec![GpuBars::port(bars); gpus], false).unwrap()
    };
    let seabios_1_16_3 = Fw::SeaBios(SeabiosRules::of(SeabiosVersion(1, 16, 3)));
    vec![
        q35(ovmf, 46, CpuVendor::Amd, 8, vec![32 * GIB], None),
        q35(ovmf, 40, CpuVendor::Amd, 8, vec![128 * GIB], None),
        q35(
            Fw::SEABIOS_1_16_2,
            40,
            CpuVendor::Amd,
            8,
            vec![128 * GIB],
            None,
        ),
        q35(ovmf, 46, CpuVendor::Amd, 8, vec![32 * GIB], Some(1 << 40)),
        // The hole together with the width (plan's VM 103 on SeaBIOS 1.16.3).
        Model::new(
            Setup {
                ram_end: crate::decide::window::ram_end(Machine::Q35, 512 * GIB),
                ..Setup::q35(seabios_1_16_3, 40, CpuVendor::Intel)
            },
            vec![GpuBars::port(vec![128 * GIB, 32 << 20]); 2],
            false,
        )
        .unwrap(),
    ]
}

/// Every hint each path builds, with the path's name.
fn every_path() -> Vec<(&'static str, Hint)> {
    let mut out: Vec<(&'static str, Hint)> = Vec::new();
    let d = diagnosis(DiagnosisKind::WindowTooSmall, 256 * GIB, 128 * GIB);
    let targets = [
        VmTarget::Proxmox {
            vmid: "100".into(),
            cpu: "x86-64-v2-AES".into(),
            args: "-smbios type=1,serial=x".into(),
        },
        VmTarget::Libvirt {
            name: "inference".into(),
        },
        VmTarget::Qemu,
    ];
    for m in models() {
        for (i, p) in m.prescribe().iter().enumerate() {
            out.push(("model", hints::render(&d, &m, p, i == 0, None, None)));
        }
        for t in &targets {
            out.extend(
                hints::plan_hints(&m, t, "Predicted: x.")
                    .into_iter()
                    .map(|h| ("plan", h)),
            );
        }
    }
    let signs = |f: fn(&mut Signs)| {
        let mut s = Signs::default();
        f(&mut s);
        s
    };
    let kvm = || signs(|s| s.hypervisor_line = Some("KVM".into()));
    let bare = || signs(|s| s.cpu_flag = Some(false));
    let mut missing = nvrm_only(kvm(), false);
    missing.expected = Some(2);
    let mut vmware = nvrm_only(signs(|s| s.hypervisor_line = Some("VMware".into())), false);
    vmware.firmware.bios_vendor = Some("Phoenix Technologies LTD".into());
    let mut kvm40 = nvrm_only(kvm(), false);
    kvm40.cpu.phys_bits = Some(40);
    let mut thunderbolt = nvrm_only(bare(), false);
    thunderbolt.hotplug = vec![(false, "a Thunderbolt controller".into())];
    let mut kata = nvrm_only(Signs::default(), false);
    kata.hotplug = vec![(true, "a Kata Containers VM".into())];
    let mut third = nvrm_only(Signs::default(), false);
    third.gpus[0].bars[0].index = 3;
    third.nvrm_third_region_only = vec![third.gpus[0].addr];
    let mut lost = typed(bare(), 3, true, true);
    lost.resize_lost = vec![lost.gpus[0].addr];
    let mut rescanned = typed(bare(), 0x53, true, true);
    rescanned.rescanned = vec![(rescanned.gpus[0].addr, 150)];
    let mut inferred = nvrm_only(Signs::default(), false);
    inferred.inferred = vec![inferred.gpus[0].addr];
    // A BAR that fits only across two contiguous root windows (corpus 393).
    let mut joined = typed(bare(), 7, true, true);
    joined.gpus[0].bars[0].size = Some(256 << 20);
    let root = Some(crate::model::pci::RootBus { domain: 0, bus: 0 });
    joined.windows = [
        (0x100_2020_0000, 0x100_303f_ffff),
        (0x100_3040_0000, 0x100_401f_ffff),
    ]
    .map(|(a, b)| crate::evidence::Window {
        range: crate::model::range::Range::new(a, b),
        source: crate::evidence::WindowSource::KernelLog,
        bus: root,
    })
    .to_vec();
    let mut shrunk = nvrm_only(bare(), false);
    shrunk.gpus.clear();
    shrunk.unproven.clear();
    shrunk.bridge_short = vec![crate::evidence::BridgeShort {
        bridge: "0000:03:00.0".parse().unwrap(),
        window: Some(0x1c00_0000),
        need: Some(0xc_0000_0000),
        how: crate::evidence::ShortHow::Shrunk,
    }];
    for ev in [
        nvrm_only(Signs::default(), false),
        nvrm_only(kvm(), false),
        nvrm_only(kvm(), true),
        missing,
        vmware,
        nvrm_only(signs(|s| s.hypervisor_line = Some("VMware".into())), false),
        nvrm_only(
            signs(|s| s.hypervisor_line = Some("Microsoft Hyper-V".into())),
            false,
        ),
        typed(
            signs(|s| s.hypervisor_line = Some("Microsoft Hyper-V".into())),
            1,
            false,
            false,
        ),
        kvm40,
        thunderbolt,
        kata,
        typed(kvm(), 1, false, false),
        typed(
            signs(|s| s.device_tree = Some("a board".into())),
            1,
            true,
            true,
        ),
        third,
        lost,
        rescanned,
        inferred,
        joined,
        shrunk,
        metal(40, 8),
        metal(46, 8),
    ] {
        let d = diagnose(&ev);
        // hints() gives check-passthrough and, without a model, the rest
        // from the fallback.
        for h in hints::hints(&ev, &d, None) {
            let path = if h.id == HintId::CheckPassthrough {
                "model"
            } else {
                "fallback"
            };
            out.push((path, h));
        }
    }
    let ev = typed(kvm(), 1, false, false);
    out.push(("space", space::vm_port_low("Why.", &ev)));
    out.push(("space", space::board_window("Why.", &ev, "a board")));
    out.extend(p2p_hints().into_iter().map(|h| ("p2p", h)));
    out.extend(p2p_text_hints().into_iter().map(|h| ("p2p text", h)));
    out.extend(host_hints().into_iter().map(|h| ("host", h)));
    out
}

/// The hints for every host-side refusal (`decide::host`).
fn host_hints() -> Vec<Hint> {
    use crate::parse::hypervisor::HostMessage as M;
    [
        M::VmwarePages {
            needed: 4206594,
            limit: 917504,
        },
        M::HypervUpperMmio {
            top: Some(0x17_dfff_f000),
            limit: Some(0x10_0000_0000),
        },
        M::QemuPhysBits {
            limit: 0xf_ffff_ffff,
            need: 0x10_7fff_ffff,
            bits: 36,
            passthrough: true,
        },
        M::OpenvmmMmio {
            low: true,
            need: 0x1450_0000,
            have: 0x1400_0000,
        },
        M::DxgkrnlIospace { errno: Some(6) },
        M::CloudHypervisorMapRegion { errno: Some(17) },
        M::BhyveMapFailed,
    ]
    .into_iter()
    .flat_map(|m| {
        let ev = Evidence {
            host_messages: vec![m],
            ..Evidence::default()
        };
        let d = diagnose(&ev);
        hints::hints(&ev, &d, None)
    })
    .collect()
}

fn p2p_gpu(bdf: &str, port: &str, clique: CliqueCap) -> P2pGpu {
    P2pGpu {
        addr: bdf.parse().unwrap(),
        vendor: 0x10de,
        class: 0x030200,
        clique,
        config_bytes: 4096,
        upstream: vec![port.parse().unwrap()],
        root_bus: Some(RootBus { domain: 0, bus: 0 }),
        numa_node: Some(0),
        vram_bar: Some((2, 1 << 38)),
        bar_end: Some(0x1040_0300_0000),
    }
}

/// The peer-to-peer hints a system's evidence gives, each at least once.
fn p2p_hints() -> Vec<Hint> {
    let clique = |c| CliqueCap::Found {
        offset: 0xc8,
        clique: c,
        version: 0,
    };
    let ev = |a: CliqueCap, b: CliqueCap, signature: &str, nccl: &[(&str, &str)]| P2pEvidence {
        gpus: vec![
            p2p_gpu("0000:01:00.0", "0000:00:01.0", a),
            p2p_gpu("0000:02:00.0", "0000:00:02.0", b),
        ],
        cpuid: CpuidView::Hypervisor {
            signature: signature.into(),
        },
        hypervisor_flag: Some(true),
        log_hypervisor: None,
        cpu_vendor: Some(CpuVendor::Intel),
        nccl: nccl
            .iter()
            .map(|(k, v)| NcclSetting {
                name: (*k).into(),
                value: (*v).into(),
                source: "environment".into(),
            })
            .collect(),
        viommu: Viommu::default(),
        warnings: Vec::new(),
        layer: None,
    };
    let kvm = "KVMKVMKVM";
    let mut narrow = ev(clique(0), clique(0), kvm, &[]);
    narrow.viommu.address_width_bits = Some(39);
    [
        ev(clique(0), clique(0), "", &[]),
        ev(CliqueCap::Absent, CliqueCap::Absent, kvm, &[]),
        ev(clique(0), clique(1), kvm, &[]),
        ev(clique(0), clique(0), kvm, &[("NCCL_P2P_DISABLE", "1")]),
        narrow,
    ]
    .iter()
    .flat_map(|e| p2p::decide(e, false).hints)
    .collect()
}

/// The peer-to-peer hints pasted text gives.
fn p2p_text_hints() -> Vec<Hint> {
    let t = P2pText {
        paths: vec![(0, 1, PathLevel::Phb), (0, 2, PathLevel::Phb)],
        p2p_read: vec![(0, 1, false), (1, 0, false)],
        nccl_p2p: 0,
        nccl_shm: 2,
        nccl_level: None,
        qemu_bar_warning: true,
    };
    p2p::from_text(&t, false, Some(CpuVendor::Intel)).hints
}

#[test]
fn every_hint_carries_the_change_its_text_names() {
    let all = every_path();
    for (path, h) in &all {
        assert_consistent(path, h);
    }
    // Every id is built on every path that builds it, so that a new one
    // (or a new path) is checked here too.
    let seen: BTreeSet<(&str, HintId)> = all.iter().map(|(p, h)| (*p, h.id)).collect();
    use HintId as I;
    let want: BTreeSet<(&str, HintId)> = [
        (
            "model",
            [
                I::CpuPdpe1gb,
                I::CpuPhysBits,
                I::OvmfMmio64Aperture,
                I::QemuPciHole64Size,
                I::GuestPciRealloc,
                I::CheckPassthrough,
            ]
            .as_slice(),
        ),
        (
            "plan",
            &[
                I::CpuPdpe1gb,
                I::CpuPhysBits,
                I::OvmfMmio64Aperture,
                I::QemuPciHole64Size,
                I::GuestPciRealloc,
            ],
        ),
        (
            "fallback",
            &[
                I::CpuPhysBits,
                I::OvmfMmio64Aperture,
                I::QemuPciHole64Size,
                I::GuestPciRealloc,
                I::FirmwareAbove4g,
                I::SmallerBars,
                I::VmwareEfi,
                I::Vmware64bitMmio,
                I::HypervMmio,
                I::KernelHotplugReserve,
                I::VmHotplugReserve,
                I::CollectEvidence,
                I::PlatformWindowTooSmall,
                I::VmmBarPrefetchable,
                I::KernelResizeRollback,
                I::KernelRescanSizing,
                I::KernelWindowSizing,
                I::KernelRootWindowJoin,
            ],
        ),
        ("space", &[I::PlatformWindowTooSmall, I::VmHotplugReserve]),
        (
            "p2p",
            &[
                I::P2pGpudirectClique,
                I::P2pKvmVisible,
                I::P2pNcclLevel,
                I::P2pNcclEnable,
                I::P2pPcieSwitch,
                I::P2pViommuAwBits,
            ],
        ),
        (
            "p2p text",
            &[
                I::P2pGpudirectClique,
                I::P2pKvmVisible,
                I::P2pNcclLevel,
                I::P2pHostBarMapping,
            ],
        ),
        (
            "host",
            &[
                I::Vmware64bitMmio,
                I::HypervMmio,
                I::CpuPhysBits,
                I::VmmMmioRange,
                I::VmmBarMapping,
            ],
        ),
    ]
    .iter()
    .flat_map(|(p, ids)| ids.iter().map(move |id| (*p, *id)))
    .collect();
    assert_eq!(seen, want);
    let ids: BTreeSet<HintId> = want.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), HintId::ALL.len());
    // The hole with the width it needs names both.
    assert!(all.iter().any(|(p, h)| *p == "model"
        && h.id == HintId::QemuPciHole64Size
        && h.change.phys_bits_min.is_some()));
}

#[test]
fn a_text_that_names_more_than_its_change_fails_the_check() {
    let h = Hint::new(
        HintId::CpuPhysBits,
        "QEMU: `-cpu <model>,phys-bits=44,+pdpe1gb`.".into(),
        Side::Host,
        None,
        Change {
            phys_bits_min: Some(44),
            ..Change::default()
        },
    );
    let r = std::panic::catch_unwind(|| assert_consistent("test", &h));
    assert!(r.is_err());
    let ok = Hint {
        change: Change {
            cpu_flags_add: vec!["pdpe1gb"],
            ..h.change.clone()
        },
        ..h
    };
    assert_consistent("test", &ok);
}

/// check reads its machine type from DMI's product version (QEMU writes
/// the machine's name there): a `pc-q35-7.0` guest has no AMD hole and no
/// HT entry (B4m), one of 2.10 no x-pci-hole64-fix (B7f); without the
/// version, QEMU 7.2's rules.
#[test]
fn check_takes_the_machine_type_from_dmi() {
    let guest = |version: Option<&str>| {
        let mut ev = metal(40, 2);
        ev.firmware = Firmware {
            bios_vendor: Some("SeaBIOS".into()),
            bios_version: Some("1.16.3-debian-1.16.3-2".into()),
            sys_vendor: Some("QEMU".into()),
            product_name: Some("Standard PC (Q35 + ICH9, 2009)".into()),
            product_version: version.map(str::to_string),
            ..Firmware::default()
        };
        ev.cpu.vendor = Some(CpuVendor::Amd);
        crate::decide::origin::infer(&ev)
            .expect("a QEMU guest")
            .setup
            .qemu
    };
    let q = guest(Some("pc-q35-7.0"));
    assert!(!q.ht_e820 && !q.amd_relocation && q.hole64_fix);
    assert!(!guest(Some("pc-q35-2.10")).hole64_fix);
    let q = guest(Some("pc-q35-10.1"));
    assert!(q.ht_e820 && q.version == crate::decide::window::QemuVersion(10, 1));
    assert_eq!(guest(None), crate::decide::window::QemuRules::V7_2);
    assert_eq!(
        guest(Some("pc-q35-7.2")),
        crate::decide::window::QemuRules::V7_2
    );
}

/// `explain`'s evidence of a text, for the verdict tests below.
fn gather(text: &str, s: &[crate::model::select::Selector], e: Option<usize>) -> Option<Evidence> {
    crate::evidence::text::gather(text, s, e)
}

/// The verdict `explain` reaches on `text`.
fn verdict(text: &str) -> crate::decide::summary::Verdict {
    let ev = gather(text, &[], None).expect("evidence");
    let d = diagnose(&ev);
    crate::decide::summary::verdict(&ev, &d, false)
}

#[test]
fn a_device_the_text_shows_is_no_gpu_does_not_fail_the_check() {
    use crate::decide::summary::Verdict;
    // A NIC, by its class (a Xen PV guest, tests/corpus 181).
    let nic = "\
pci 0000:00:00.0: [10ec:8168] type 00 class 0x020000
pci 0000:00:00.0: reg 0x18: [mem 0xb2100000-0xb2100fff 64bit]
pci 0000:00:00.0: can't claim BAR 2 [mem 0xb2100000-0xb2100fff 64bit]: address conflict with System RAM [mem 0x00100000-0xf9ffffff]
";
    assert_eq!(verdict(nic), Verdict::Ok);
    let ev = gather(nic, &[], None).unwrap();
    assert_eq!(
        ev.other_failed[0].not_gpu,
        Some(crate::evidence::NotGpu::Class(0x020000))
    );
    // A function other than 0 that the text says nothing else of (an NTB
    // endpoint, 180): not a GPU's graphics function.
    let ntb = "pci 0000:01:00.1: BAR 2: failed to assign [mem size 0x04000000 64bit pref]\n";
    assert_eq!(verdict(ntb), Verdict::Ok);
    // Function 0 that the text says nothing of may be a GPU (a paste
    // without class lines, 111).
    let f0 = "pci 0000:01:00.0: BAR 0: no space for [mem size 0x10000000 64bit pref]\n";
    assert_eq!(verdict(f0), Verdict::Fail);
    // An emulated display is a display controller: its failure counts (77).
    let qxl = "\
pci 0000:01:00.0: [1b36:0100] type 00 class 0x038000
pci 0000:01:00.0: BAR 0: failed to assign [mem size 0x04000000]
";
    assert_eq!(verdict(qxl), Verdict::Fail);
    // Function 0 bound to a driver of no GPU (an FPGA board's, a
    // Thunderbolt controller's): not a GPU.
    let fpga = "\
pci 0000:04:00.0: BAR 0 [mem size 0x01000000]: can't assign; no space
litepcie 0000:04:00.0: probe with driver litepcie failed with error -5
";
    assert_eq!(verdict(fpga), Verdict::Ok);
    let ev = gather(fpga, &[], None).unwrap();
    assert_eq!(
        ev.other_failed[0].not_gpu,
        Some(crate::evidence::NotGpu::Driver("litepcie".into()))
    );
    // Bound to a passthrough stub, an accelerator's or a display's
    // driver, or only the PCI core's lines: it may still be a GPU.
    for word in [
        "vfio-pci",
        "nvgrace-gpu-vfio-pci",
        "habanalabs",
        "intel_vpu",
        "mgag200",
        "cirrus-qemu",
        "simpledrm",
        "pcieport",
    ] {
        let text = format!(
            "pci 0000:04:00.0: BAR 0 [mem size 0x01000000]: can't assign; no space\n\
             {word} 0000:04:00.0: enabling device (0000 -> 0002)\n"
        );
        assert_eq!(verdict(&text), Verdict::Fail, "{word}");
    }
    // A word before an address inside another program's message is no
    // driver: QEMU's vfio error, libvirt's reset error.
    for line in [
        "kvm: -device vfio-pci,host=0000:04:00.0: vfio 0000:04:00.0: failed to setup container for group 1",
        "error : virPCIDeviceReset:1039 : internal error: Unable to reset PCI device 0000:04:00.0: no FLR, PM reset or bus reset available",
    ] {
        let text = format!(
            "pci 0000:04:00.0: BAR 0 [mem size 0x01000000]: can't assign; no space\n{line}\n"
        );
        assert_eq!(verdict(&text), Verdict::Fail, "{line}");
    }
    // The driver's word after a journal's or a kmsg record's prefix counts.
    for prefix in [
        "Jan 01 00:00:00 host kernel: ",
        "6,339,5083,-;",
        "[  240.42] ",
    ] {
        let text = format!(
            "pci 0000:04:00.0: BAR 0 [mem size 0x01000000]: can't assign; no space\n\
             {prefix}litepcie 0000:04:00.0: Invalid BAR0 configuration\n"
        );
        assert_eq!(verdict(&text), Verdict::Ok, "{prefix}");
    }
}

#[test]
fn nvidias_header_alone_is_a_failure_of_a_gpu_the_text_does_not_name() {
    use crate::decide::summary::Verdict;
    // The header is printed only before a `BARn is ...` line (a grep that
    // kept one line of two): a region of an NVIDIA GPU is invalid.
    let header = "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n";
    assert_eq!(verdict(header), Verdict::Fail);
    let ev = gather(header, &[], None).unwrap();
    assert_eq!(diagnose(&ev).case, Case::Unnamed);
    // Quoted by a command or a sentence, it is not the log's record.
    for quoted in [
        "$ sudo dmesg | grep \"NVRM: This PCI I/O region assigned to your NVIDIA device is invalid\"\n",
        "I do not get \"NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\" any more\n",
    ] {
        let text = format!("pci 0000:03:00.0: [1002:73bf] type 00 class 0x030000\npci 0000:03:00.0: BAR 0 [mem 0x7c00000000-0x7dffffffff 64bit pref]\n{quoted}");
        assert_eq!(verdict(&text), Verdict::Ok, "{quoted}");
    }
    // With its detail line, or beside the one NVIDIA GPU the text shows,
    // it is placed there, not counted again.
    let both = format!("{header}NVRM: BAR1 is 0M @ 0x0 (PCI:0000:05:00.0)\n");
    let ev = gather(&both, &[], None).unwrap();
    assert!(ev.unnamed_failed.is_empty(), "{:?}", ev.unnamed_failed);
    let listed = format!(
        "01:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100] [10de:20b0]\n\tRegion 0: Memory at e0000000 (32-bit, non-prefetchable) [size=16M]\n{header}"
    );
    let ev = gather(&listed, &[], None).unwrap();
    assert!(ev.unnamed_failed.is_empty(), "{:?}", ev.unnamed_failed);
    assert_eq!(verdict(&listed), Verdict::Fail);
}

#[test]
fn a_device_that_shows_no_bar_a_gpu_has_makes_its_failure_unknown() {
    use crate::decide::summary::Verdict;
    // Only BARs under 1 MiB, on a device the text names by nothing but
    // its address (an FPGA's DMA endpoint, tests/corpus 367): a GPU has a
    // BAR of 16 MiB or more, so whether a GPU failed is not in the text.
    let fpga = "\
pcieport 0000:18:10.0: bridge window [mem size 0x00100000]: can't assign; no space
pci 0000:1b:00.0: BAR 0 [mem size 0x00080000]: failed to assign
pci 0000:1b:00.0: BAR 1 [mem size 0x00010000]: failed to assign
";
    assert_eq!(verdict(fpga), Verdict::Unknown);
    let ev = gather(fpga, &[], None).unwrap();
    let d = diagnose(&ev);
    assert_eq!(d.case, Case::OnlySmallDevices);
    let h = hints::hints(&ev, &d, None);
    assert_eq!(h[0].id, HintId::CollectEvidence, "{h:#?}");
    assert!(h[0].text.contains("0000:1b:00.0"), "{}", h[0].text);
    assert_eq!(
        h.iter().filter(|h| h.id == HintId::CollectEvidence).count(),
        1
    );
    // The same device with a 16 MiB BAR shown (assigned) may be a GPU
    // whose small BAR failed: the failure stands.
    let big = format!("pci 0000:1b:00.0: BAR 2 [mem 0xf0000000-0xf0ffffff]\n{fpga}");
    assert_eq!(verdict(&big), Verdict::Fail);
    // An AMD GPU's 512 KiB register BAR beside its VRAM BAR (12): fails.
    let amd = "\
pci 0000:c5:00.0: BAR 0 [mem 0x61000000000-0x61fffffffff 64bit pref]: assigned
pci 0000:c5:00.0: BAR 5 [mem size 0x00080000]: can't assign; no space
";
    assert_eq!(verdict(amd), Verdict::Fail);
    // A BAR whose size the text does not give may be a GPU's (lspci
    // without `-v`'s sizes, as in 41).
    let sizeless = "\
00:02.0 PCI bridge: Red Hat, Inc. QEMU PCI-PCI bridge
01:01.0 Unassigned class [ff00]: Device 1af4:1110
  Region 1: Memory at <unassigned> (64-bit, prefetchable) [disabled]
";
    let ev = gather(sizeless, &[], None).unwrap();
    assert!(!ev.other_failed.is_empty(), "{ev:?}");
    assert!(
        ev.other_failed.iter().all(|o| !o.small),
        "{:?}",
        ev.other_failed
    );
    // Beside a stronger failure, that failure is the report's: a GPU's
    // driver that gave up, a GPU missing from the expected count.
    let probe = format!("{fpga}amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init\namdgpu 0000:03:00.0: probe with driver amdgpu failed with error -12\n");
    assert_eq!(verdict(&probe), Verdict::Fail);
    let amd_ok = "pci 0000:03:00.0: [1002:73bf] type 00 class 0x030000\npci 0000:03:00.0: BAR 0 [mem 0x7c00000000-0x7dffffffff 64bit pref]\n";
    let ev = gather(&format!("{amd_ok}{fpga}"), &[], Some(2)).unwrap();
    let d = diagnose(&ev);
    assert_eq!(d.kind, DiagnosisKind::GpusMissing, "{:?}", d.case);
    assert_eq!(
        crate::decide::summary::verdict(&ev, &d, false),
        Verdict::Fail
    );
    // Another function of the slot failing beside it (a Polaris GPU's
    // 256 KiB register BAR and its HD audio's 16 KiB BAR, with no other
    // line of either): it may be a GPU with its audio, so it fails.
    let polaris = "\
pci 0000:0c:00.0: BAR 5: no space for [mem size 0x00040000]
pci 0000:0c:00.1: BAR 0: no space for [mem size 0x00004000 64bit]
";
    assert_eq!(verdict(polaris), Verdict::Fail);
    // A small device beside one that may be a GPU with a large BAR: fails.
    let both =
        format!("pci 0000:02:00.0: BAR 0: no space for [mem size 0x10000000 64bit pref]\n{fpga}");
    assert_eq!(verdict(&both), Verdict::Fail);
}

#[test]
fn i915s_graphics_table_without_room_is_no_bar() {
    use crate::decide::summary::Verdict;
    // A 32-bit kernel's i915: its own graphics table had no room for the
    // GuC, and the probe fails with ENOSPC (drm/intel 9080). No BAR failed.
    let ggtt = "\
i915 0000:00:02.0: [drm:i915_init_ggtt [i915]] Failed to reserve top of GGTT for GuC
i915 0000:00:02.0: Device initialization failed (-28)
i915: probe of 0000:00:02.0 failed with error -28
";
    assert_eq!(verdict(ggtt), Verdict::Ok);
    let ev = gather(ggtt, &[], None).unwrap();
    assert_eq!(diagnose(&ev).case, Case::DriverReason);
    // The probe's failure alone, its reason unsaid, still counts.
    let bare: String = ggtt.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert_eq!(verdict(&bare), Verdict::Fail);
}

#[test]
fn nvidias_request_of_bar_0_at_zero_is_a_doubt_for_the_gpu_whose_probe_follows() {
    use crate::decide::summary::Verdict;
    // The ninth collection's b02: four T4s, the fourth's BAR 0 read 0x0
    // when NVIDIA requested it, after its check had found an address.
    let zero = "\
[  204.016893] nvidia 0000:12:00.0: enabling device (0140 -> 0142)
[  204.067287] nvidia 0000:13:00.0: enabling device (0140 -> 0142)
[  204.163230] nvidia 0000:af:00.0: enabling device (0140 -> 0142)
[  204.163286] NVRM: request_mem_region failed for 0M @ 0x0. This can
               NVRM: occur when a driver such as rivatv is loaded and claims
               NVRM: ownership of the device's registers.
[  204.163305] nvidia: probe of 0000:af:00.0 failed with error -1
";
    // Neither a failure nor another driver's claim: unknown, the doubt
    // on the GPU whose probe failed.
    assert_eq!(verdict(zero), Verdict::Unknown);
    let ev = gather(zero, &[], None).unwrap();
    let d = diagnose(&ev);
    let said = crate::decide::summary::describe(&ev, &d);
    assert!(
        said.contains("0000:af:00.0: NVIDIA's driver found its BAR 0 at 0x0"),
        "{said}"
    );
    assert!(ev.unnamed_failed.is_empty(), "{:?}", ev.unnamed_failed);
    // At an address, the range is another driver's: a reason that is no
    // BAR, so not a failure of them either.
    let taken = zero.replace("0M @ 0x0.", "16M @ 0xf6000000.");
    assert!(!crate::decide::summary::describe(
        &gather(&taken, &[], None).unwrap(),
        &diagnose(&gather(&taken, &[], None).unwrap())
    )
    .contains("at 0x0"));
    assert_ne!(verdict(&taken), Verdict::Fail);
    // Without the probe's line the doubt speaks for no GPU.
    let cut: String = zero.lines().take(6).map(|l| format!("{l}\n")).collect();
    assert_ne!(verdict(&cut), Verdict::Fail);
}

#[test]
fn nvidias_own_reasons_that_are_no_bar_do_not_fail_it() {
    use crate::decide::summary::Verdict;
    // The IRQ is checked before the BARs (Bumblebee #638, 155).
    let irq = "\
[ 1428.836717] NVRM: Can't find an IRQ for your NVIDIA card!
[ 1428.836718] NVRM: Please check your BIOS settings.
[ 1428.836721] nvidia: probe of 0000:01:00.0 failed with error -1
";
    // The driver says what failed, and it is no BAR: ok for the BARs, the
    // summary naming the driver's reason.
    assert_eq!(verdict(irq), Verdict::Ok);
    let ev = gather(irq, &[], None).unwrap();
    let d = diagnose(&ev);
    assert_eq!(d.case, Case::DriverReason, "{d:?}");
    assert!(
        crate::decide::summary::describe(&ev, &d).contains("reason it names that is no BAR"),
        "{}",
        crate::decide::summary::describe(&ev, &d)
    );
    // Without a reason the probe failure counts against the BARs.
    assert_eq!(
        verdict("nvidia: probe of 0000:01:00.0 failed with error -1\n"),
        Verdict::Fail
    );
    // An old driver's refusal of a 64-bit BAR above 4 GiB, its PCI tag
    // garbled (160): the BAR has an address.
    let above = "\
[   11.903859] nvidia 0000:00:10.0: PCI INT A -> Link[SGRU] -> GSI 22 (level, low) -> IRQ 22
[   11.903867] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:
[   11.903868] NVRM: BAR1 is 256M @ 0x00000000 (PCI:30000000:01.0)
[   11.903873] NVRM: This is a 64-bit BAR mapped above 4GB by the system BIOS or
[   11.903893] nvidia: probe of 0000:00:10.0 failed with error -1
";
    assert_eq!(verdict(above), Verdict::Ok);
    // RmInitAdapter after a driver assertion (153) is no BAR's failure, and
    // ok for the BARs; alone it is not known (113, 207, 340, 341), its
    // hints said on the condition that lspci shows a region missing; with
    // the region NVIDIA names empty it fails.
    let init = "\
NVRM: nvAssertFailedNoLog: Assertion failed: pVGpu != NULL @ objvgpu.c:148
NVRM: GPU 0000:05:00.0: RmInitAdapter failed! (0x22:0x56:763)
";
    assert_eq!(verdict(init), Verdict::Ok);
    let alone = "NVRM: GPU 0000:05:00.0: RmInitAdapter failed! (0x22:0x56:763)\n";
    assert_eq!(verdict(alone), Verdict::Unknown);
    let ev = gather(alone, &[], None).unwrap();
    assert_eq!(ev.start_failed.len(), 1);
    let hints = crate::decide::fallback::hints(&ev, &diagnose(&ev));
    assert!(!hints.is_empty());
    assert!(
        hints[0]
            .text
            .starts_with("NVIDIA's driver could not start 0000:05:00.0"),
        "{}",
        hints[0].text
    );
    assert_eq!(
        verdict("NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0 (PCI:0000:05:00.0)\nNVRM: GPU 0000:05:00.0: RmInitAdapter failed! (0x22:0x56:763)\n"),
        Verdict::Fail
    );
    // lspci lists the GPU's memory BARs and none is prefetchable: the
    // region it maps its memory through is the one missing, and the start's
    // failure is that region's. With that region listed it is not known.
    let listed = "\
01:00.0 3D controller: NVIDIA Corporation GK210GL [Tesla K80] (rev a1)
\tFlags: fast devsel, IRQ 16
\tMemory at f0000000 (32-bit, non-prefetchable) [size=16M]

NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0xffff:667)
";
    assert_eq!(verdict(listed), Verdict::Fail);
    let with_vram = listed.replace(
        "[size=16M]\n",
        "[size=16M]\n\tMemory at 800000000 (64-bit, prefetchable) [size=16G]\n",
    );
    assert_eq!(verdict(&with_vram), Verdict::Unknown);
    // amdgpu found no video BIOS (342, a VM's iGPU without its ROM file):
    // its probe's failure is that, not a BAR. Without the line, or with
    // NVIDIA's reason instead (given only to an NVIDIA GPU), it fails.
    let rom = "\
    amdgpu: Unable to locate a BIOS ROM
    amdgpu 0000:01:00.0: amdgpu: Fatal error during GPU init
    amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -22
";
    assert_eq!(verdict(rom), Verdict::Ok);
    assert_eq!(
        verdict("amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -22\n"),
        Verdict::Fail
    );
    assert_eq!(
        verdict(&rom.replace(
            "amdgpu: Unable to locate a BIOS ROM",
            "NVRM: Can't find an IRQ for your NVIDIA card!"
        )),
        Verdict::Fail
    );
    // amdgpu went on to its IP blocks' start (203: the PSP's firmware):
    // its register BAR has an address, its doorbell and VRAM BARs are not
    // shown; the probe's failure after it is neither a complaint nor proof.
    let psp = "\
[    9.052130] amdgpu 0000:01:00.0: amdgpu: PSP firmware loading failed
[    9.052134] amdgpu 0000:01:00.0: [drm:amdgpu_device_fw_loading [amdgpu]] *ERROR* hw_init of IP block <psp> failed -22
[    9.052346] amdgpu 0000:01:00.0: amdgpu: Fatal error during GPU init
[    9.052999] amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -22
";
    assert_eq!(verdict(psp), Verdict::Unknown);
    let ev = gather(psp, &[], None).unwrap();
    let said = summary::summary(&ev, &diagnose(&ev));
    assert!(said.contains("amdgpu started its IP blocks"), "{said}");
    // A probe failure before the marker (another boot's) stays one.
    let before = "\
[    5.408787] amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -12
[ 3600.052130] amdgpu 0000:01:00.0: amdgpu: PSP firmware loading failed
";
    assert_eq!(verdict(before), Verdict::Fail);
    // The doubt speaks for the one failure after it: a later boot's bare
    // failure, or an earlier one, still fails.
    let later = format!(
        "{psp}[ 7200.408757] amdgpu 0000:01:00.0: amdgpu: Fatal error during GPU init\n[ 7200.408787] amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -12\n"
    );
    assert_eq!(verdict(&later), Verdict::Fail);
    let earlier = format!(
        "[    5.408787] amdgpu 0000:01:00.0: probe with driver amdgpu failed with error -12\n{psp}"
    );
    assert_eq!(verdict(&earlier), Verdict::Fail);
    // With every memory BAR shown placed, the doubt is moot.
    let shown = format!(
        "pci 0000:01:00.0: [1002:73bf] type 00 class 0x030000\n\
         pci 0000:01:00.0: BAR 0 [mem 0x7000000000-0x73ffffffff 64bit pref]\n\
         pci 0000:01:00.0: BAR 2 [mem 0x7400000000-0x74001fffff 64bit pref]\n\
         pci 0000:01:00.0: BAR 5 [mem 0xfcd00000-0xfcdfffff]\n{psp}"
    );
    assert_eq!(verdict(&shown), Verdict::Ok);
    // amdgpu's memory controller view is there for a BAR 0 without an
    // address too: a failure the text shows stays one.
    let vram = "\
pci 0000:01:00.0: [1002:73bf] type 00 class 0x030000
pci 0000:01:00.0: BAR 0: no space for [mem size 0x400000000 64bit pref]
pci 0000:01:00.0: BAR 0: failed to assign [mem size 0x400000000 64bit pref]
amdgpu 0000:01:00.0: amdgpu: VRAM: 16368M 0x0000008000000000 - 0x00000083FEFFFFFF (16368M used)
amdgpu 0000:01:00.0: amdgpu: Detected VRAM RAM=16368M, BAR=16384M
";
    assert_eq!(verdict(vram), Verdict::Fail);
    // nouveau's probe failing after it found no firmware (corpus 420):
    // missing firmware does that, and so does a BAR 1 without an address;
    // the same probe failure alone fails.
    let nouveau = "\
[  189.304662] nouveau 0000:01:00.0: pmu: firmware unavailable
[  189.320326] nouveau 0000:01:00.0: disp ctor failed, -12
[  189.324214] nouveau: probe of 0000:01:00.0 failed with error -12
";
    assert_eq!(verdict(nouveau), Verdict::Unknown);
    assert_eq!(
        verdict("nouveau: probe of 0000:01:00.0 failed with error -12\n"),
        Verdict::Fail
    );
    // NVIDIA naming the GPU with a reason no reader here knows by name,
    // in none of its region messages' words: the probe's -1 after it is a
    // doubt, not an invented region (the seventh collection's b02 and d10
    // read FAIL at their first run for reasons so worded). The region's
    // own message still fails it, and BARs shown placed make it ok.
    let reason = "\
[    5.101] NVRM: GPU 0000:01:00.0: GPU is lost, skipping nv_pci_probe
[    5.102] nvidia: probe of 0000:01:00.0 failed with error -1
";
    assert_eq!(verdict(reason), Verdict::Unknown);
    let ev = gather(reason, &[], None).unwrap();
    let said = summary::summary(&ev, &diagnose(&ev));
    assert!(
        said.contains("NVIDIA's driver named it with a reason"),
        "{said}"
    );
    let region = format!(
        "[    5.100] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n[    5.100] NVRM: BAR1 is 0M @ 0x0 (PCI:0000:01:00.0)\n{reason}"
    );
    assert_eq!(verdict(&region), Verdict::Fail);
    // NVIDIA's count of failed probes stands for the driver core's line
    // an excerpt left out, given to the one NVIDIA GPU the text names (the
    // eighth collection's a01, an OpenStack guest): with the reason NVIDIA
    // named it is ok for the BARs; with the region's message it fails; with
    // two NVIDIA GPUs it is neither's.
    let unsupported = "\
[99083.966246] NVRM: The NVIDIA GPU 0000:05:00.0 (PCI ID: 10de:26b9)
               NVRM: installed in this system is not supported by the
               NVRM: NVIDIA 570.86.15 driver release.
[99083.967530] NVRM: The NVIDIA probe routine failed for 1 device(s).
[99083.967531] NVRM: None of the NVIDIA devices were initialized.
";
    assert_eq!(verdict(unsupported), Verdict::Ok);
    assert_eq!(
        verdict(&unsupported.replace("failed for 1 device", "was not called for 1 device")),
        Verdict::Unknown
    );
    let region_counted = "\
NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:
NVRM: BAR1 is 0M @ 0x0 (PCI:0000:05:00.0)
NVRM: The NVIDIA probe routine failed for 1 device(s).
";
    assert_eq!(verdict(region_counted), Verdict::Fail);
    let two = format!(
        "{unsupported}pci 0000:06:00.0: [10de:26b9] type 00 class 0x030200\npci 0000:06:00.0: BAR 0 [mem 0xfa000000-0xfaffffff]\n"
    );
    let ev = gather(&two, &[], None).unwrap();
    assert_eq!(ev.gpus.len(), 2);
    assert!(!summary::summary(&ev, &diagnose(&ev)).contains("0000:06:00.0: its driver gave up"));
    // amdgpu's IP blocks started, said without the device as 5.x prints
    // it (the eighth collection's b05, a Xen guest's iGPU): the AMD probe
    // failure after it is a doubt; one before it, or NVIDIA's, is not.
    let psp = "\
[    7.676213] [drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading failed
[    7.676371] [drm:amdgpu_device_fw_loading [amdgpu]] *ERROR* hw_init of IP block <psp> failed -22
[    7.676563] amdgpu 0000:00:05.0: amdgpu: Fatal error during GPU init
[    7.679044] amdgpu: probe of 0000:00:05.0 failed with error -22
";
    assert_eq!(verdict(psp), Verdict::Unknown);
    let before = "\
[    7.679044] amdgpu: probe of 0000:00:05.0 failed with error -22
[    9.676213] [drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading failed
";
    assert_eq!(verdict(before), Verdict::Fail);
    assert_eq!(
        verdict(&psp.replace("amdgpu: probe of", "nvidia: probe of")),
        Verdict::Fail
    );
    // A 2.6 kernel refused the firmware's address of a device's BAR and
    // the text stops there (the eighth collection's b02, whose thread
    // found the BAR moved, and corpus 242): what the next pass did is not
    // in it, so unknown with the step that shows it; the pass's own
    // failure line fails it; the host bridge's refused claim is no GPU's.
    let claim = "\
PCI: Cannot allocate resource region 9 of bridge 0000:00:02.0
PCI: Cannot allocate resource region 0 of device 0000:01:00.0
";
    assert_eq!(verdict(claim), Verdict::Unknown);
    let ev = gather(claim, &[], None).unwrap();
    assert_eq!(
        ev.claims_pending,
        ["0000:01:00.0".parse::<PciAddress>().unwrap()]
    );
    let hints = crate::decide::fallback::hints(&ev, &diagnose(&ev));
    assert_eq!(hints[0].id, HintId::CollectEvidence);
    assert!(
        hints[0].text.contains("lspci -vv -s 0000:01:00.0"),
        "{}",
        hints[0].text
    );
    assert_eq!(
        verdict(&format!(
            "{claim}PCI: Failed to allocate mem resource #0:8000000@f0000000 for 0000:01:00.0\n"
        )),
        Verdict::Fail
    );
    assert_eq!(
        verdict("PCI: Cannot allocate resource region 0 of device 0000:00:00.0\n"),
        Verdict::Ok
    );
    // After review: NVIDIA's reason said of an address names no GPU by
    // itself (a suspend's message), and a GPU whose BARs are shown placed
    // stays ok; NVIDIA's count alone, with no reason given, fails nothing
    // that shows its BARs and invents no region.
    let placed = "\
[    0.500000] pci 0000:01:00.0: [10de:2684] type 00 class 0x030000
[    0.500100] pci 0000:01:00.0: BAR 0 [mem 0xfb000000-0xfbffffff]
[    0.500200] pci 0000:01:00.0: BAR 1 [mem 0x7000000000-0x77ffffffff 64bit pref]
[    0.500300] pci 0000:01:00.0: BAR 3 [mem 0x7800000000-0x7801ffffff 64bit pref]
";
    let suspend = format!("{placed}[ 1234.5] NVRM: GPU 0000:02:00.0: PreserveVideoMemoryAllocations module parameter is set.\n");
    assert_eq!(verdict(&suspend), Verdict::Ok);
    assert_eq!(gather(&suspend, &[], None).unwrap().gpus.len(), 1);
    let counted =
        format!("{placed}[    5.103000] NVRM: The NVIDIA probe routine failed for 1 device(s).\n");
    assert_eq!(verdict(&counted), Verdict::Ok);
    assert_eq!(
        verdict("pci 0000:01:00.0: [10de:2684] type 00 class 0x030000\nNVRM: The NVIDIA probe routine failed for 1 device(s).\n"),
        Verdict::Unknown
    );
    // The claim's refusal, then NVIDIA's own word that the region is
    // empty: the driver's word fails it. A modern `can't claim` cut before
    // its range is no old kernel's bare claim.
    assert_eq!(
        verdict("PCI: Cannot allocate resource region 1 of device 0000:01:00.0\nNVRM: BAR1 is 0M @ 0x0 (PCI:0000:01:00.0)\n"),
        Verdict::Fail
    );
    assert_eq!(
        verdict("pci 0000:01:00.0: [10de:2684] type 00 class 0x030000\npci 0000:01:00.0: can't claim BAR 1: no compatible bridge window\n"),
        Verdict::Fail
    );
    // i915 reads all ones from the registers it mapped (the eighth
    // collection's a02, a Proxmox guest): the device does not answer.
    let mmio = "\
[    3.646912] i915 0000:01:00.0: [drm] *ERROR* Device is non-operational; MMIO access returns 0xFFFFFFFF!
[    3.650742] i915 0000:01:00.0: Device initialization failed (-5)
[    3.650790] i915: probe of 0000:01:00.0 failed with error -5
";
    assert_eq!(verdict(mmio), Verdict::Ok);
    assert_eq!(
        verdict("[    3.650790] i915: probe of 0000:01:00.0 failed with error -5\n"),
        Verdict::Fail
    );
    let placed = format!(
        "pci 0000:01:00.0: [10de:2684] type 00 class 0x030000\n\
         pci 0000:01:00.0: BAR 0 [mem 0xfb000000-0xfbffffff]\n\
         pci 0000:01:00.0: BAR 1 [mem 0x7000000000-0x77ffffffff 64bit pref]\n\
         pci 0000:01:00.0: BAR 3 [mem 0x7800000000-0x7801ffffff 64bit pref]\n{reason}"
    );
    assert_eq!(verdict(&placed), Verdict::Ok);
    // The host side refusing a device for another reason than BAR space
    // is `ok` for the BARs (corpus 400, 408, 414, 426).
    for host in [
        "[ 4.436409] vfio-pci: probe of 10000:01:00.0 failed with error -22\n",
        "qemu-kvm: -device vfio-pci,host=87:00.0,id=hostdev0: vfio: failed to setup container for group 70\n",
        "qemu-system-x86_64: -device vfio-pci,host=01:00.0: vfio error: 0000:01:00.0: failed to add PCI capability 0x11[0x50]@0xb0: table & pba overlap, or they don't fit in BARs, or don't align\n",
        "{\"msg\":\"failed to create GPU host-devices: the number of GPU/s do not match the number of devices:\"}\n",
    ] {
        assert_eq!(verdict(host), Verdict::Ok, "{host}");
    }
    // Its stop before any block, as with BARs without addresses (179).
    let enomem = "\
[    5.408757] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init
[    5.408787] amdgpu 0000:03:00.0: probe with driver amdgpu failed with error -12
";
    assert_eq!(verdict(enomem), Verdict::Fail);
    // An empty region with no address and no NVIDIA GPU named (184).
    let ev = gather(
        "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0\n",
        &[],
        None,
    )
    .unwrap();
    assert!(ev.gpus.is_empty());
    assert_eq!(ev.unnamed_failed.len(), 1);
    assert_eq!(
        verdict("NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0\n"),
        Verdict::Fail
    );
}

#[test]
fn sriov_space_is_not_the_devices_own_and_a_cut_line_is_nobodys() {
    use crate::decide::summary::Verdict;
    // i915 asked for VFs: it runs on the GPU (149).
    let i915 = "\
[ 4593.404028] i915 0000:00:02.0: not enough MMIO resources for SR-IOV
[ 4593.500174] i915 0000:00:02.0: [drm] *ERROR* Failed to enable 2 VFs (-ENOMEM)
";
    let ev = gather(i915, &[], None).unwrap();
    assert_eq!(ev.gpus.len(), 1);
    assert_eq!(verdict(i915), Verdict::Ok);
    // The report says so, apart from the device's own BARs; no hint does.
    let d = diagnose(&ev);
    let summary = crate::decide::summary::summary(&ev, &d);
    assert!(
        summary.contains("SR-IOV VF BARs of 0000:00:02.0 got no space"),
        "{summary}"
    );
    assert!(!crate::decide::summary::describe(&ev, &d).contains("SR-IOV"));
    // VF BARs that failed in the old wording (`BAR 7`, `BAR 10`: 263) and
    // the new (`VF BAR 0`, 12): named, the verdict the device's own.
    for vf in [
        "pci 0000:25:00.0: BAR 7: no space for [mem size 0x00100000 64bit]\npci 0000:25:00.0: BAR 10: failed to assign [mem size 0x00100000 64bit]\n",
        "pci 0000:25:00.0: VF BAR 0 [mem size 0x00400000 64bit pref]: can't assign; no space\n",
    ] {
        let ev = gather(vf, &[], None).unwrap();
        assert_eq!(ev.vf_failed.len(), 1, "{vf}");
        // Placed later (pci=realloc's second pass): nothing to say.
        let later = format!("{vf}pci 0000:25:00.0: VF BAR 0 [mem 0x380000000000-0x3800003fffff 64bit pref]: assigned\npci 0000:25:00.0: BAR 7: assigned [mem 0x380000400000-0x3800004fffff 64bit]\npci 0000:25:00.0: BAR 10: assigned [mem 0x380000500000-0x3800005fffff 64bit]\n");
        assert!(gather(&later, &[], None).unwrap().vf_failed.is_empty(), "{later}");
        assert_eq!(ev.vf_failed[0].to_string(), "0000:25:00.0");
        assert_eq!(verdict(vf), Verdict::Ok, "{vf}");
    }
    // The old wording of the VFs' space (162): evidence, no failure.
    assert_eq!(
        verdict("pci 0000:00:05.0: VF(n) BAR0 space: [mem 0xfc000000-0x13bffffff] (contains BAR0 for 16 VFs)\n"),
        Verdict::Ok
    );
    // A PCI core failure with its device cut off (190).
    let cut = "BAR 1: no space for [mem size 0x400000000 64bit pref]\nBAR 8: no space for [mem size 0x800000000 64bit pref]\n";
    let ev = gather(cut, &[], None).unwrap();
    assert_eq!(ev.unnamed_failed.len(), 1, "{:?}", ev.unnamed_failed);
    assert_eq!(verdict(cut), Verdict::Fail);
    // The new driver-core wording of a failed probe (179).
    let amd = "amdgpu 0000:03:00.0: probe with driver amdgpu failed with error -12\n";
    assert_eq!(verdict(amd), Verdict::Fail);
}

#[test]
fn a_vfio_hosts_text_told_a_vm_gets_the_hosts_hints() {
    use crate::model::platform::Platform;
    // A VFIO host's boot log and lspci (tests/corpus 178), told qemu.
    let text = "\
[    2.941829] pci 0000:2a:00.0: BAR 1: no space for [mem size 0x1000000000 64bit pref]
[    2.941830] pci 0000:2a:00.0: BAR 1: failed to assign [mem size 0x1000000000 64bit pref]
0000:2a:00.0 3D controller: NVIDIA Corporation AD102GL [L20] (rev a1)
\tKernel driver in use: vfio-pci
";
    let mut ev = gather(text, &[], None).unwrap();
    ev.platform_told = Some(Platform::Qemu);
    assert_eq!(ev.platform(), Platform::BareMetal);
    assert!(ev
        .platform_conflict()
        .is_some_and(|c| c.contains("the text is the VM's host's")));
    let d = diagnose(&ev);
    assert_eq!(hints::hints(&ev, &d, None)[0].id, HintId::FirmwareAbove4g);
    // Without the sign, the word of --platform holds.
    let mut guest = gather(&text.replace("vfio-pci", "nvidia"), &[], None).unwrap();
    guest.platform_told = Some(Platform::Qemu);
    assert_eq!(guest.platform(), Platform::Qemu);
}

#[test]
fn check_reports_a_bridge_window_smaller_than_its_gpus_need() {
    use crate::model::bar::BridgeWindow;
    use crate::model::range::Range;
    // Two 128 GiB BARs behind one bridge, the root window with room and
    // pci=realloc on: a 128 GiB prefetchable window is short by one BAR.
    let bridge: PciAddress = "0000:00:01.0".parse().unwrap();
    let with_window = |size: u64| {
        let mut ev = metal(46, 2);
        for g in &mut ev.gpus {
            g.upstream = vec![bridge];
        }
        ev.realloc_active = true;
        ev.bridges = vec![(
            bridge,
            vec![BridgeWindow {
                io: false,
                prefetchable: true,
                mem64: true,
                range: Range::new(0x40_0000_0000, 0x40_0000_0000 + size - 1),
            }],
        )];
        ev
    };
    let ev = with_window(128 * GIB);
    let d = diagnose(&ev);
    assert_eq!(d.kind, DiagnosisKind::BridgeWindowShort, "{d:?}");
    assert_eq!(
        (d.needed_bytes, d.window_bytes),
        (Some(256 * GIB), Some(128 * GIB))
    );
    let text = crate::decide::summary::describe(&ev, &d);
    assert!(
        text.contains("0000:00:01.0") && text.contains("128 GiB short"),
        "{text}"
    );
    assert_eq!(
        hints::hints(&ev, &d, None)[0].id,
        HintId::KernelWindowSizing
    );
    // A window that holds both is not short: the old unknown stands.
    let d = diagnose(&with_window(256 * GIB));
    assert_eq!(d.case, Case::FitsReallocActive, "{d:?}");
}

#[test]
fn a_window_with_room_but_no_aligned_place_left_is_too_small() {
    use crate::model::range::Range;
    // Two 128 GiB BARs on the root bus in an 896 GiB window, realloc on;
    // one placed at 512 GiB. Small ranges the kernel placed split every
    // other 128 GiB-aligned piece, and the top is reserved: 256 GiB fits
    // by size, no piece takes the failed BAR.
    let with_busy = |busy: &[u64]| {
        let mut ev = metal(46, 2);
        ev.realloc_active = true;
        ev.gpus[1].bars[0].start = Some(0x80_0000_0000);
        ev.window_busy = busy
            .iter()
            .map(|s| Range::new(*s, *s + (32 << 20) - 1))
            .collect();
        ev.reserved = vec![Range::new(0xe0_0000_0000, 0xff_ffff_ffff)];
        ev
    };
    let ev = with_busy(&[
        0x30_0000_0000,
        0x50_0000_0000,
        0x70_0000_0000,
        0xb0_0000_0000,
        0xd0_0000_0000,
    ]);
    let d = diagnose(&ev);
    assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{d:?}");
    assert!(
        matches!(d.case, Case::NoRoom { bar, .. } if bar == 128 * GIB),
        "{d:?}"
    );
    let text = crate::decide::summary::describe(&ev, &d);
    assert!(text.contains("aligned place for a 128 GiB BAR"), "{text}");
    // One aligned piece left free ([384, 512) GiB): room, the old unknown.
    let d = diagnose(&with_busy(&[
        0x30_0000_0000,
        0x50_0000_0000,
        0xb0_0000_0000,
        0xd0_0000_0000,
    ]));
    assert_eq!(d.case, Case::FitsReallocActive, "{d:?}");
    // That piece past the CPU's reach (384 GiB) is no room either.
    let four = with_busy(&[
        0x30_0000_0000,
        0x50_0000_0000,
        0xb0_0000_0000,
        0xd0_0000_0000,
    ]);
    assert_eq!(
        crate::decide::room::no_room(&four, Some(0x60_0000_0000)).map(|r| r.size),
        Some(128 * GIB)
    );
    assert_eq!(crate::decide::room::no_room(&four, None), None);
    // A reserved range over the whole window is not taken out of it: the
    // kernel would not have offered the window.
    let mut whole = with_busy(&[]);
    whole.reserved = vec![Range::new(0x10_0000_0000, 0xff_ffff_ffff)];
    assert_eq!(crate::decide::room::no_room(&whole, None), None);
    // Each failed BAR is tried alone: two failed 128 GiB BARs and one
    // aligned piece, one could have had it.
    let mut two = with_busy(&[
        0x30_0000_0000,
        0x50_0000_0000,
        0xb0_0000_0000,
        0xd0_0000_0000,
    ]);
    two.gpus[1].bars[0].state = crate::model::bar::BarState::Unassigned;
    two.gpus[1].bars[0].start = None;
    two.reserved
        .push(Range::new(0x80_0000_0000, 0x9f_ffff_ffff));
    assert_eq!(crate::decide::room::no_room(&two, None), None);
}

#[test]
fn a_failed_bridge_window_with_no_aligned_place_left_is_too_small() {
    use crate::model::range::Range;
    // Campaign seed 20261203 record 0904, its numbers: the 896 GiB window
    // from 128 GiB, realloc on; four root-bus GPUs' 128 GiB BARs placed
    // from 256 GiB (`placed_to`: the last one's start), their small BARs
    // at 128 GiB; two GPUs behind bridge 00:1f.0 (a 128 GiB and a 32 MiB
    // prefetchable BAR each, as the GPU-shaped functions .0 and .1 are
    // counted), the bridge's window failed. Its window, sized for all four
    // and aligned as the kernel aligns it (64 GiB), finds no place in the 256 GiB left at 768
    // GiB; the BARs alone would.
    let bridge: PciAddress = "0000:00:1f.0".parse().unwrap();
    let case = |placed_to: u64| {
        let mut ev = metal(40, 8);
        ev.realloc_active = true;
        for (i, g) in ev.gpus.iter_mut().enumerate() {
            let b = &mut g.bars[0];
            if i < 4 {
                b.state = BarState::Assigned;
                b.start = Some((0x40_0000_0000 + i as u64 * 0x20_0000_0000).min(placed_to));
            } else {
                b.state = BarState::Unassigned;
                b.start = None;
                g.upstream = vec![bridge];
                if i >= 6 {
                    b.size = Some(32 << 20);
                }
            }
        }
        ev.window_busy = vec![Range::new(0x20_0000_0000, 0x20_0820_01ff)];
        ev
    };
    let ev = case(0xa0_0000_0000);
    let d = diagnose(&ev);
    assert_eq!(d.kind, DiagnosisKind::WindowTooSmall, "{d:?}");
    assert!(
        matches!(d.case, Case::NoRoom { bridge: Some(b), bar, .. } if b == bridge && bar > 256 * GIB),
        "{d:?}"
    );
    let text = crate::decide::summary::describe(&ev, &d);
    assert!(text.contains("bridge 0000:00:1f.0's"), "{text}");
    // The fourth GPU's BAR where the third's is (the two at 512 GiB):
    // 384 GiB left free from 640 GiB, room for the bridge's window.
    let d = diagnose(&case(0x80_0000_0000));
    assert_eq!(d.case, Case::FitsReallocActive, "{d:?}");
    // The bridge holds a window: its GPUs' place is inside it, not judged
    // against the root window's free space.
    let mut ev = case(0xa0_0000_0000);
    ev.bridges = vec![(
        bridge,
        vec![crate::model::bar::BridgeWindow {
            io: false,
            prefetchable: true,
            mem64: true,
            range: Range::new(0xc0_0000_0000, 0xff_ffff_ffff),
        }],
    )];
    assert_ne!(diagnose(&ev).kind, DiagnosisKind::WindowTooSmall);
}
