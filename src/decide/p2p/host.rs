//! The host's gate: QEMU must map every peer's BARs into the IOMMU.
//! Nothing in the guest proves it; a vIOMMU narrower than the BARs'
//! addresses is the one refusal visible from inside, and QEMU's own
//! warning the one a pasted host log shows.

use super::{gate, Gate};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::syntax::{self, Hypervisor};
use crate::evidence::p2p::P2pEvidence;
use crate::model::p2p::GateVerdict;
use crate::parse::p2p_text::P2pText;

/// The address width a vIOMMU is given: Intel's VT-d 48-bit (4-level)
/// tables, what QEMU's intel-iommu takes beside 39.
const VIOMMU_AW_BITS: u32 = 48;

/// The gate on a system's evidence, its fix added to `hints`.
pub(super) fn judge(ev: &P2pEvidence, hints: &mut Vec<Hint>) -> Gate {
    let bar_end = ev.gpus.iter().filter_map(|g| g.bar_end).max();
    match (ev.viommu.address_width_bits, bar_end) {
        (Some(w), Some(end)) if w < 64 && end > (1u64 << w) => {
            hints.push(viommu_hint(w, end, super::driver::first(ev)));
            gate(
                GateVerdict::Refused,
                format!("the vIOMMU's {w} address bits do not reach the BARs (up to {end:#x})"),
            )
        }
        _ => gate(
            GateVerdict::Unknown,
            if ev.viommu.present() {
                "a vIOMMU is present (its width not readable, or wide enough); whether the host maps the peers' BARs is not visible from the guest"
            } else {
                "whether the host maps every peer's BARs into its IOMMU (and routes between root ports) is not visible from the guest"
            },
        ),
    }
}

/// The gate on pasted text: QEMU's warning that it could not map a BAR.
pub(super) fn from_text(t: &P2pText, hints: &mut Vec<Hint>) -> Gate {
    if !t.qemu_bar_warning {
        return gate(GateVerdict::Unknown, "no QEMU log in the input");
    }
    hints.push(Hint::new(
        HintId::P2pHostBarMapping,
        "QEMU could not map a peer's BARs into the host IOMMU (\"PCI peer-to-peer transactions on BARs are not supported\"): the host IOMMU's address width is narrower than the guest's BAR addresses (see the host's `DMAR: Host address width` or AMD-Vi lines and `/sys/class/iommu/*/intel-iommu/cap`), or the VFIO backend is iommufd on a kernel that cannot map device memory. Give the vCPU no more physical address bits than the host IOMMU translates (`phys-bits=`), so the firmware places the BARs lower, or use the legacy VFIO container. Then stop and start the VM.".into(),
        Side::Host,
        Some(Restart::Vm),
        Change::default(),
    ));
    gate(
        GateVerdict::Refused,
        "QEMU said \"PCI peer-to-peer transactions on BARs are not supported\"",
    )
}

/// `p2p-viommu-aw-bits`: a vIOMMU of `w` bits does not reach `end`.
fn viommu_hint(w: u32, end: u64, layer: Option<Hypervisor>) -> Hint {
    let change = Change {
        viommu_aw_bits_min: Some(VIOMMU_AW_BITS),
        ..Change::default()
    };
    let (lines, close) = syntax::p2p_lines(
        &change,
        layer,
        &[Hypervisor::Qemu, Hypervisor::Libvirt, Hypervisor::Proxmox],
        1,
    );
    Hint::new(
        HintId::P2pViommuAwBits,
        format!(
            "The guest's vIOMMU translates {w} address bits and the GPUs' BARs reach {end:#x}: QEMU cannot map the peers' BARs for DMA (\"PCI peer-to-peer transactions on BARs are not supported\"). Give it {VIOMMU_AW_BITS}: {lines}. Or drop the vIOMMU if the guest does not need it. {close}",
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}
