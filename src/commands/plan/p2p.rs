//! `plan --p2p`: whether the driver's P2P gate will open in the guest
//! (decided in `decide::p2p::plan` from what `evidence::host` read), and
//! the exact lines that open it, written here.

use super::PlanOptions;
use crate::decide::p2p::plan::{self, PlanP2p, PlanP2pDevice, PlanP2pLines, VmKind};
use crate::evidence::host::{HostEvidence, VmConfig};
use crate::model::p2p::VmP2p;
use crate::parse::address::device_spec;
use crate::parse::qemu_args;

pub(super) fn plan(host: &HostEvidence, o: &PlanOptions, window_end: Option<u64>) -> PlanP2p {
    let (kind, vm) = match &host.vm {
        Ok(c @ VmConfig::Proxmox(_)) => (VmKind::Proxmox, c.p2p().unwrap_or_default()),
        Ok(c @ VmConfig::Libvirt(_)) => (VmKind::Libvirt, c.p2p().unwrap_or_default()),
        _ => (VmKind::Qemu, VmP2p::of_flags(&o.gpu)),
    };
    let mut p = plan::plan(kind, &vm, host, window_end);
    p.lines = lines(kind, &vm, &p.devices);
    p
}

/// The lines to paste: every GPU in clique 0.
fn lines(kind: VmKind, vm: &VmP2p, devices: &[PlanP2pDevice]) -> PlanP2pLines {
    let qemu = devices
        .iter()
        .map(|d| {
            let h = d.host.split(';').next().unwrap_or("");
            let h = device_spec(h)
                .map(|a| a.first.to_string())
                .unwrap_or_else(|| h.to_string());
            format!("-device vfio-pci,host={h},x-nv-gpudirect-clique=0")
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = PlanP2pLines {
        proxmox: Vec::new(),
        libvirt: None,
        qemu,
    };
    match kind {
        VmKind::Proxmox => {
            for (d, v) in devices.iter().zip(
                vm.devices
                    .iter()
                    .filter(|v| devices.iter().any(|d| d.name == v.name)),
            ) {
                if !d.targetable {
                    let h = v.hosts.first().map(String::as_str).unwrap_or("");
                    let was = v.hosts.join(";");
                    if v.hosts.len() > 1 {
                        out.proxmox.push(format!("{}: {h},pcie=1  (was {was}: the other functions then need their own hostpciN if wanted)", d.name));
                    } else {
                        out.proxmox.push(format!("{}: {h}.0,pcie=1  (was {h}: the other functions, e.g. the audio {h}.1, then need their own hostpciN if wanted)", d.name));
                    }
                }
            }
            let sets: Vec<String> = devices
                .iter()
                .map(|d| format!("-set device.{}.x-nv-gpudirect-clique=0", d.name))
                .collect();
            let kept = qemu_args::args_without_cliques(&vm.args);
            out.proxmox.push(format!(
                "args: {}{}",
                if kept.is_empty() {
                    String::new()
                } else {
                    format!("{kept} ")
                },
                sets.join(" ")
            ));
            if vm.kvm_hidden {
                out.proxmox.push("cpu: (the same, without hidden=1)".into());
            }
        }
        VmKind::Libvirt => {
            let devs: Vec<String> = devices
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let alias = if d.name.is_empty() { format!("ua-gpu{i}") } else { d.name.clone() };
                    format!("<qemu:device alias='{alias}'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device>")
                })
                .collect();
            out.libvirt = Some(format!("<qemu:override>{}</qemu:override>", devs.join("")));
        }
        _ => {}
    }
    out
}
