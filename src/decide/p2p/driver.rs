//! The driver's gate: in a guest whose CPUID says KVM, NVIDIA's driver
//! grants P2P between two GPUs only when both carry QEMU's clique
//! capability with the same id (open-gpu-kernel-modules, `p2p_caps.c` and
//! the KVM hypervisor code; QEMU `hw/vfio/pci-quirks.c`). With KVM hidden
//! the driver takes the VM for bare metal and the emulated chipset for
//! one it does not know: no grant.

use super::{gate, Gate, KvmReport, NVIDIA};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::syntax::{self, Hypervisor};
use crate::evidence::p2p::{P2pEvidence, P2pGpu};
use crate::model::p2p::{CliqueCap, GateVerdict};
use crate::model::platform::CpuidView;
use crate::parse::p2p_text::P2pText;
use std::collections::BTreeSet;

/// Whether the guest is a VM and sees KVM's signature.
pub(super) struct Kvm {
    pub report: KvmReport,
    pub in_vm: bool,
    /// A VM whose hypervisor hides its signature.
    pub hidden: bool,
}

/// What CPUID, cpuinfo and the kernel log say of the hypervisor.
pub(super) fn kvm(ev: &P2pEvidence) -> Kvm {
    let log_name = ev.log_hypervisor.clone().flatten();
    let (visible, cpuid_signature) = match &ev.cpuid {
        CpuidView::Hypervisor { signature } => (
            Some(signature.starts_with("KVMKVMKVM")),
            Some(signature.clone()),
        ),
        CpuidView::NoHypervisor => (Some(false), None),
        CpuidView::NotRead => (
            match (&ev.log_hypervisor, ev.hypervisor_flag) {
                (Some(Some(name)), _) => Some(name == "KVM"),
                // The kernel names every hypervisor whose signature it
                // sees (arch/x86/kernel/cpu/hypervisor.c); a VM without
                // the line hides it.
                (Some(None), Some(true)) => Some(false),
                _ => None,
            },
            None,
        ),
    };
    let in_vm = ev.hypervisor_flag == Some(true)
        || matches!(ev.cpuid, CpuidView::Hypervisor { .. })
        || log_name.is_some();
    let hidden = in_vm
        && visible == Some(false)
        && log_name.is_none()
        && match &ev.cpuid {
            CpuidView::Hypervisor { signature } => signature.is_empty(),
            _ => true,
        };
    Kvm {
        report: KvmReport {
            visible,
            cpuid_signature,
            cpuinfo_hypervisor: ev.hypervisor_flag,
            kernel_log: log_name,
        },
        in_vm,
        hidden,
    }
}

/// The NVIDIA GPUs' cliques: all in one, `None` when some could not be
/// read or there is no NVIDIA GPU.
pub(super) fn one_clique(ev: &P2pEvidence) -> Option<bool> {
    let nvidia: Vec<&P2pGpu> = ev.gpus.iter().filter(|g| g.vendor == NVIDIA).collect();
    if nvidia.is_empty()
        || nvidia
            .iter()
            .any(|g| matches!(g.clique, CliqueCap::Unreadable { .. }))
    {
        return None;
    }
    let cliques: Vec<Option<u8>> = nvidia.iter().map(|g| clique(g.clique)).collect();
    Some(cliques.iter().all(Option::is_some) && cliques.windows(2).all(|w| w[0] == w[1]))
}

fn clique(c: CliqueCap) -> Option<u8> {
    match c {
        CliqueCap::Found { clique, .. } => Some(clique),
        _ => None,
    }
}

fn bdfs(gpus: &[&P2pGpu]) -> String {
    gpus.iter()
        .map(|g| g.addr.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The gate on a system's evidence, its fixes added to `hints`.
pub(super) fn judge(ev: &P2pEvidence, kvm: &Kvm, hints: &mut Vec<Hint>) -> Gate {
    let nvidia: Vec<&P2pGpu> = ev.gpus.iter().filter(|g| g.vendor == NVIDIA).collect();
    let cliques: Vec<Option<u8>> = nvidia.iter().map(|g| clique(g.clique)).collect();
    let unreadable: Vec<&P2pGpu> = nvidia
        .iter()
        .copied()
        .filter(|g| matches!(g.clique, CliqueCap::Unreadable { .. }))
        .collect();
    let absent: Vec<&P2pGpu> = nvidia
        .iter()
        .copied()
        .filter(|g| g.clique == CliqueCap::Absent)
        .collect();
    let visible = kvm.report.visible;
    if ev.gpus.len() < 2 {
        gate(GateVerdict::Unknown, "fewer than two GPUs: no peer")
    } else if nvidia.is_empty() {
        gate(
            GateVerdict::Unknown,
            "no NVIDIA GPU: the clique capability is what NVIDIA's driver reads; other drivers decide otherwise (a stand-in cannot carry it: QEMU adds it to NVIDIA display-class devices only)",
        )
    } else if !kvm.in_vm {
        gate(
            GateVerdict::Unknown,
            "not a VM: the driver decides by the chipset, which config space does not show",
        )
    } else if kvm.hidden {
        hints.push(kvm_hint(first(ev)));
        gate(
            GateVerdict::Refused,
            "the guest is a VM but KVM's CPUID signature is hidden (no `Hypervisor detected: KVM`): the driver grants no P2P",
        )
    } else if visible == Some(false) {
        gate(
            GateVerdict::Unknown,
            format!(
                "the hypervisor is not KVM ({}): the clique capability is QEMU/KVM's",
                kvm.report
                    .kernel_log
                    .clone()
                    .or_else(|| kvm.report.cpuid_signature.clone())
                    .unwrap_or_default()
            ),
        )
    } else if !unreadable.is_empty() {
        let bytes = unreadable
            .iter()
            .map(|g| match g.clique {
                CliqueCap::Unreadable { bytes } => bytes,
                _ => 0,
            })
            .min()
            .unwrap_or(0);
        gate(
            GateVerdict::Unknown,
            format!(
                "only {bytes} bytes of config space were readable for {}: the capability list is past them; run as root",
                bdfs(&unreadable)
            ),
        )
    } else if !absent.is_empty() {
        let why = format!(
            "{} of {} NVIDIA GPUs carry no GPUDirect clique capability ({}): under KVM the driver grants no P2P to them.",
            absent.len(),
            nvidia.len(),
            bdfs(&absent)
        );
        hints.push(clique_hint(nvidia.len(), &why, first(ev)));
        gate(GateVerdict::Refused, why)
    } else if one_clique(ev) == Some(false) {
        let ids: Vec<String> = nvidia
            .iter()
            .zip(&cliques)
            .map(|(g, c)| format!("{} in {}", g.addr, c.unwrap_or(0)))
            .collect();
        let why = format!(
            "the GPUs are in different cliques ({}): the driver grants P2P only within one.",
            ids.join(", ")
        );
        hints.push(clique_hint(nvidia.len(), &why, first(ev)));
        gate(GateVerdict::Refused, why)
    } else {
        let id = cliques.first().copied().flatten().unwrap_or(0);
        match visible {
            None => gate(
                GateVerdict::Unknown,
                format!(
                    "all {} NVIDIA GPUs carry clique {id}, but whether KVM's signature is visible is not known (CPUID not read, no kernel log from the boot's start)",
                    nvidia.len()
                ),
            ),
            Some(_) => gate(
                GateVerdict::Granted,
                format!(
                    "KVM's signature is visible and all {} NVIDIA GPUs carry clique {id}",
                    nvidia.len()
                ),
            ),
        }
    }
}

/// The gate on pasted text: `nvidia-smi topo -p2p r` is the driver's own
/// answer.
pub(super) fn from_text(t: &P2pText, hints: &mut Vec<Hint>) -> Gate {
    let refused: Vec<&(u32, u32, bool)> = t.p2p_read.iter().filter(|p| !p.2).collect();
    if !refused.is_empty() {
        let why = format!(
            "the driver reports P2P not supported between {} GPU pair(s) (`nvidia-smi topo -p2p r`): in a KVM guest, the GPUs lack one shared GPUDirect clique, or KVM is hidden.",
            refused.len() / 2 + refused.len() % 2
        );
        // The GPUs the matrix names, counted: their indices are the
        // paste's and may be any number.
        let named: BTreeSet<u32> = t.p2p_read.iter().flat_map(|p| [p.0, p.1]).collect();
        hints.push(clique_hint(named.len().max(2), &why, None));
        hints.push(kvm_hint(None));
        gate(GateVerdict::Refused, why)
    } else if !t.p2p_read.is_empty() {
        gate(
            GateVerdict::Granted,
            "the driver reports OK for every pair (`nvidia-smi topo -p2p r`)",
        )
    } else {
        gate(
            GateVerdict::Unknown,
            "no `nvidia-smi topo -p2p r` matrix in the input",
        )
    }
}

/// The syntax the guest's hints give: its management layer's, if its DMI
/// names one.
pub(super) fn first(ev: &P2pEvidence) -> Option<Hypervisor> {
    ev.layer.map(Hypervisor::of)
}

/// The clique fix for `n` GPUs, in each hypervisor's syntax (the guest's
/// layer's alone, where `layer` names one).
fn clique_hint(n: usize, why: &str, layer: Option<Hypervisor>) -> Hint {
    let mut change = Change::default();
    change
        .vfio_pci_properties
        .insert("x-nv-gpudirect-clique".into(), "0".into());
    let (lines, close) = syntax::p2p_lines(
        &change,
        layer,
        &[Hypervisor::Proxmox, Hypervisor::Libvirt, Hypervisor::Qemu],
        n,
    );
    Hint::new(
        HintId::P2pGpudirectClique,
        format!(
            "{why} Put every GPU in GPUDirect clique {} (QEMU 2.11 or later). {lines}. {close}",
            change.vfio_pci_properties["x-nv-gpudirect-clique"],
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

fn kvm_hint(layer: Option<Hypervisor>) -> Hint {
    let change = Change {
        kvm_signature_visible: Some(true),
        ..Change::default()
    };
    let (lines, close) = syntax::p2p_lines(
        &change,
        layer,
        &[Hypervisor::Proxmox, Hypervisor::Libvirt, Hypervisor::Qemu],
        1,
    );
    Hint::new(
        HintId::P2pKvmVisible,
        format!(
            "KVM is hidden from the guest (the `hypervisor` flag is set but CPUID shows no KVM signature): NVIDIA's driver then takes the VM for bare metal and grants no P2P on the emulated chipset. {lines}. Drivers since R465 no longer need KVM hidden for GeForce passthrough. {close}",
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}
