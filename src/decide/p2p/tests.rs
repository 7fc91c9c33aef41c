//! The gates' decisions on evidence made here.

use super::path::path_level;
use super::*;
use crate::decide::hint::HintId;
use crate::evidence::p2p::P2pGpu;
use crate::evidence::p2p::{NcclSetting, Viommu};
use crate::model::pci::RootBus;
use crate::model::platform::CpuVendor;
use crate::model::platform::CpuidView;

fn a(s: &str) -> PciAddress {
    s.parse().unwrap()
}

fn gpu(bdf: &str, up: &[&str], bus: u8, numa: i64, clique: CliqueCap) -> P2pGpu {
    P2pGpu {
        addr: a(bdf),
        vendor: NVIDIA,
        class: 0x030200,
        clique,
        config_bytes: 4096,
        upstream: up.iter().map(|u| a(u)).collect(),
        root_bus: Some(RootBus { domain: 0, bus }),
        numa_node: Some(numa),
        vram_bar: Some((2, 1 << 38)),
        bar_end: Some(0x1040_0300_0000),
    }
}

const C0: CliqueCap = CliqueCap::Found {
    offset: 0xc8,
    clique: 0,
    version: 0,
};

#[test]
fn paths_as_nccl_names_them() {
    let root_ports = (
        gpu("0000:01:00.0", &["0000:00:01.0"], 0, 0, C0),
        gpu("0000:02:00.0", &["0000:00:02.0"], 0, 0, C0),
    );
    assert_eq!(path_level(&root_ports.0, &root_ports.1), PathLevel::Phb);
    let switch = (
        gpu(
            "0000:03:00.0",
            &["0000:02:00.0", "0000:01:00.0", "0000:00:02.0"],
            0,
            0,
            C0,
        ),
        gpu(
            "0000:04:00.0",
            &["0000:02:01.0", "0000:01:00.0", "0000:00:02.0"],
            0,
            0,
            C0,
        ),
    );
    assert_eq!(path_level(&switch.0, &switch.1), PathLevel::Pxb);
    let one_bridge = (
        gpu("0000:03:00.0", &["0000:02:00.0"], 0, 0, C0),
        gpu("0000:03:00.1", &["0000:02:00.0"], 0, 0, C0),
    );
    assert_eq!(path_level(&one_bridge.0, &one_bridge.1), PathLevel::Pix);
    let on_root_bus = (
        gpu("0000:00:06.0", &[], 0, 0, C0),
        gpu("0000:00:07.0", &[], 0, 0, C0),
    );
    assert_eq!(path_level(&on_root_bus.0, &on_root_bus.1), PathLevel::Phb);
    let numa = (
        gpu("0000:41:00.0", &[], 0x40, 0, C0),
        gpu("0000:c1:00.0", &[], 0xc0, 1, C0),
    );
    assert_eq!(path_level(&numa.0, &numa.1), PathLevel::Sys);
    let same_numa = (
        gpu("0000:41:00.0", &[], 0x40, 0, C0),
        gpu("0000:61:00.0", &[], 0x60, 0, C0),
    );
    assert_eq!(path_level(&same_numa.0, &same_numa.1), PathLevel::Phb);
}

fn ev(cpuid: CpuidView, cpu: Option<CpuVendor>, nccl: &[(&str, &str)]) -> P2pEvidence {
    P2pEvidence {
        gpus: vec![
            gpu("0000:01:00.0", &["0000:00:01.0"], 0, 0, C0),
            gpu("0000:02:00.0", &["0000:00:02.0"], 0, 0, C0),
        ],
        cpuid,
        hypervisor_flag: Some(true),
        log_hypervisor: None,
        cpu_vendor: cpu,
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
    }
}

#[test]
fn the_cpuid_signature_decides_the_driver_gate() {
    let kvm = CpuidView::Hypervisor {
        signature: "KVMKVMKVM".into(),
    };
    let hidden = CpuidView::Hypervisor {
        signature: String::new(),
    };
    let hyperv = CpuidView::Hypervisor {
        signature: "Microsoft Hv".into(),
    };
    let intel = Some(CpuVendor::Intel);
    assert_eq!(
        decide(&ev(kvm, intel, &[]), false).gates.driver.verdict,
        GateVerdict::Granted
    );
    let p = decide(&ev(hidden, intel, &[]), false);
    assert_eq!(p.gates.driver.verdict, GateVerdict::Refused);
    assert!(p.hints.iter().any(|h| h.id == HintId::P2pKvmVisible));
    assert_eq!(
        decide(&ev(hyperv, intel, &[]), false).gates.driver.verdict,
        GateVerdict::Unknown
    );
    // Without CPUID (a captured tree) and without a log: not known,
    // and the cliques alone grant nothing.
    let p = decide(&ev(CpuidView::NotRead, intel, &[]), false);
    assert_eq!(p.kvm.visible, None);
    assert_eq!(
        p.gates.driver.verdict,
        GateVerdict::Unknown,
        "{}",
        p.gates.driver.why
    );
}

/// A guest whose DMI names its management layer is told that layer's
/// syntax and restart; the generic lines otherwise.
#[test]
fn a_layers_guest_gets_its_layers_syntax() {
    let hidden = || CpuidView::Hypervisor {
        signature: String::new(),
    };
    let kvm_hint = |e: &P2pEvidence| {
        decide(e, false)
            .hints
            .into_iter()
            .find(|h| h.id == HintId::P2pKvmVisible)
            .unwrap()
            .text
    };
    let plain = kvm_hint(&ev(hidden(), Some(CpuVendor::Intel), &[]));
    assert!(
        plain.contains("Proxmox: ") && plain.ends_with("Then stop and start the VM."),
        "{plain}"
    );
    let mut kv = ev(hidden(), Some(CpuVendor::Intel), &[]);
    kv.layer = Some(crate::model::layer::Layer::KubeVirt);
    let t = kvm_hint(&kv);
    assert!(
        t.contains("KubeVirt: `spec.template.spec.domain.features.kvm.hidden: false`"),
        "{t}"
    );
    assert!(t.contains("KubeVirt: `virtctl restart <vm>`"), "{t}");
    assert!(!t.contains("Proxmox"), "{t}");
}

#[test]
fn nccl_levels_and_settings_decide_the_path_gate() {
    let kvm = || CpuidView::Hypervisor {
        signature: "KVMKVMKVM".into(),
    };
    let path = |cpu, nccl: &[(&str, &str)]| decide(&ev(kvm(), cpu, nccl), false).gates.path.verdict;
    use GateVerdict::*;
    assert_eq!(path(Some(CpuVendor::Intel), &[]), Refused, "PHB past PXB");
    assert_eq!(
        path(Some(CpuVendor::Amd), &[]),
        Granted,
        "two GPUs on AMD: SYS"
    );
    assert_eq!(
        path(Some(CpuVendor::Intel), &[("NCCL_P2P_LEVEL", "PHB")]),
        Granted
    );
    assert_eq!(
        path(
            Some(CpuVendor::Intel),
            &[("NCCL_P2P_LEVEL", "PHB"), ("NCCL_P2P_DISABLE", "1")]
        ),
        Refused
    );
    assert_eq!(
        path(
            Some(CpuVendor::Intel),
            &[("NCCL_TOPO_FILE", "/etc/topo.xml")]
        ),
        Unknown
    );
    // Old-style numbers are read; a word NCCL does not know leaves
    // its default (PXB on Intel) in force.
    assert_eq!(
        path(Some(CpuVendor::Intel), &[("NCCL_P2P_LEVEL", "5")]),
        Granted
    );
    let p = decide(
        &ev(kvm(), Some(CpuVendor::Intel), &[("NCCL_P2P_LEVEL", "phb")]),
        false,
    );
    assert_eq!(p.gates.path.verdict, Refused);
    assert!(
        p.gates
            .path
            .why
            .starts_with("NCCL ignores NCCL_P2P_LEVEL=\"phb\""),
        "{}",
        p.gates.path.why
    );
    assert!(p.hints.iter().any(|h| h.id == HintId::P2pNcclLevel));

    // On bare metal the path fix is NCCL's level, never an emulated switch.
    let mut bare = ev(CpuidView::NoHypervisor, Some(CpuVendor::Intel), &[]);
    bare.hypervisor_flag = Some(false);
    let p = decide(&bare, false);
    assert_eq!(p.gates.driver.verdict, Unknown);
    let ids: Vec<HintId> = p.hints.iter().map(|h| h.id).collect();
    assert_eq!(ids, [HintId::P2pNcclLevel]);
}

#[test]
fn a_pasted_gpu_index_sizes_nothing() {
    // GPU numbers come from the paste: a huge one once sized the
    // clique fix (and aborted on the allocation).
    let t =
        crate::parse::p2p_text::parse("\tGPU0\tGPU4000000000\nGPU0\tX\tNS\nGPU4000000000\tNS\tX\n");
    assert_eq!(t.p2p_read.len(), 2);
    let p = from_text(&t, false, None);
    assert_eq!(p.gates.driver.verdict, GateVerdict::Refused);
    let h = p
        .hints
        .iter()
        .find(|h| h.id == HintId::P2pGpudirectClique)
        .unwrap();
    assert_eq!(
        h.text.matches("-set device.hostpci").count(),
        2,
        "{}",
        h.text
    );
}

#[test]
fn a_pasted_matrix_alone_leaves_nccls_default_to_the_cpu() {
    // Two GPUs PHB apart: NCCL's default allows it on AMD only.
    let two = crate::parse::p2p_text::parse("\tGPU0\tGPU1\nGPU0\t X \tPHB\nGPU1\tPHB\t X \n");
    let path =
        |t: &crate::parse::p2p_text::P2pText, cpu| from_text(t, false, cpu).gates.path.verdict;
    assert_eq!(path(&two, None), GateVerdict::Unknown);
    assert_eq!(path(&two, Some(CpuVendor::Intel)), GateVerdict::Refused);
    assert_eq!(path(&two, Some(CpuVendor::Amd)), GateVerdict::Granted);
    // Three GPUs: PXB whatever the CPU.
    let three = crate::parse::p2p_text::parse(
        "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tPHB\tPHB\nGPU1\tPHB\tX\tPHB\nGPU2\tPHB\tPHB\tX\n",
    );
    assert_eq!(path(&three, None), GateVerdict::Refused);
    assert_eq!(path(&three, Some(CpuVendor::Amd)), GateVerdict::Refused);
    // A level in the log decides.
    let mut set = two.clone();
    set.nccl_level = Some("PHB".into());
    assert_eq!(path(&set, None), GateVerdict::Granted);
}
