//! `plan --p2p`'s section: the driver's gate as the configuration will
//! open it, why not, and the lines to paste.

use crate::model::p2p::GateVerdict;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanP2p {
    /// `granted` when every GPU gets one clique and nothing stands in the
    /// way; `refused` otherwise; `unknown` with fewer than two GPUs.
    pub driver_gate: GateVerdict,
    pub devices: Vec<PlanP2pDevice>,
    pub kvm_hidden: bool,
    /// The host's QEMU package and version, when dpkg knows it.
    pub qemu_package: Option<String>,
    /// The narrowest host IOMMU unit's address width.
    pub iommu_width_bits: Option<u32>,
    pub iommu_units: Vec<String>,
    /// Why the gate will not open, each a sentence.
    pub problems: Vec<String>,
    pub lines: PlanP2pLines,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanP2pDevice {
    /// `hostpci0`, a libvirt alias, or `gpuN` for `--gpu`.
    pub name: String,
    pub host: String,
    /// The id QEMU gives the GPU's function (`hostpci1.0` for a
    /// multi-function entry).
    pub device_id: String,
    /// `-set device.ID...` can name it.
    pub targetable: bool,
    /// The clique the configuration sets, or null.
    pub clique: Option<String>,
    /// Where QEMU will put the capability, from the host's config space
    /// and QEMU release; null when either is unknown.
    pub clique_offset: Option<String>,
    /// Host bridges above it with ACS P2P Request Redirect on.
    pub acs_redirect: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanP2pLines {
    pub proxmox: Vec<String>,
    pub libvirt: Option<String>,
    pub qemu: String,
}

pub(crate) fn text(p: &PlanP2p, s: &mut String) {
    let _ = writeln!(
        s,
        "p2p: the driver's gate will be {} (QEMU {}, host IOMMU {})",
        p.driver_gate.as_str(),
        p.qemu_package.as_deref().unwrap_or("release unknown"),
        p.iommu_width_bits
            .map(|w| format!("{w} address bits"))
            .unwrap_or_else(|| "width unknown".into())
    );
    for d in &p.devices {
        let _ = writeln!(
            s,
            "  {} ({}): device id {}{}, clique {}, capability at {}{}",
            if d.name.is_empty() {
                "hostdev without alias"
            } else {
                &d.name
            },
            d.host,
            d.device_id,
            if d.targetable {
                ""
            } else {
                " (not targetable by -set)"
            },
            d.clique.as_deref().unwrap_or("not set"),
            d.clique_offset.as_deref().unwrap_or("unknown"),
            if d.acs_redirect.is_empty() {
                String::new()
            } else {
                format!("; ACS redirect on {}", d.acs_redirect.join(", "))
            }
        );
    }
    for w in &p.problems {
        let _ = writeln!(s, "  why: {w}");
    }
    for l in &p.lines.proxmox {
        let _ = writeln!(s, "  proxmox: {l}");
    }
    if let Some(l) = &p.lines.libvirt {
        let _ = writeln!(s, "  libvirt: {l}");
    }
    let _ = writeln!(s, "  qemu: {}", p.lines.qemu);
}
