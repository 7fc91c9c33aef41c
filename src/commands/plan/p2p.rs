//! `plan --p2p`: on the host, whether the driver's P2P gate will open in
//! the guest, and the exact lines that open it: what the configuration
//! sets (`PveConfig::p2p`, `Domain::p2p`), the host's QEMU release (where the clique
//! capability can go), each GPU's host config space (is 0xC8 free), the
//! host IOMMU's address width and ACS on the bridges above the GPUs.

use super::{PlanError, PlanOptions};
use crate::model::p2p::{GateVerdict, VmDevice, VmP2p};
use crate::model::pci::PciAddress;
use crate::model::release::QemuVersion;
use crate::model::select::is_gpu_class;
use crate::parse::address::device_spec;
use crate::parse::iommu::vtd_mgaw;
use crate::parse::pci_caps::{self, ACS_REQUEST_REDIRECT};
use crate::parse::release::qemu_version;
use crate::parse::{libvirt, proxmox, qemu_args};
use crate::read::root::{read_file, Root};
use crate::read::{host, iommu, sysfs};
use crate::report::plan_p2p::{PlanP2p, PlanP2pDevice, PlanP2pLines};

/// Clique rules by QEMU release (hw/vfio/pci-quirks.c): the property since
/// 2.11; the 0xD4 fallback since 8.1 ("Support alternate offset for
/// GPUDirect Cliques", merged 2023-06-30 for 8.1).
const CLIQUE_SINCE: QemuVersion = QemuVersion(2, 11);
const D4_SINCE: QemuVersion = QemuVersion(8, 1);

/// The narrowest Intel IOMMU unit's MGAW, and every unit's name.
fn iommu_width(root: &Root) -> (Option<u32>, Vec<String>) {
    let units = iommu::units(root);
    let width = units
        .iter()
        .filter_map(|u| iommu::vtd_cap(root, u).as_deref().and_then(vtd_mgaw))
        .min();
    (width, units)
}

fn parse_addr(h: &str) -> Option<PciAddress> {
    device_spec(h).map(|d| d.first)
}

pub(super) fn plan(
    root: &Root,
    o: &PlanOptions,
    window_end: Option<u64>,
) -> Result<PlanP2p, PlanError> {
    let (kind, vm): (&str, VmP2p) = match (&o.proxmox, &o.libvirt) {
        (Some(p), _) => {
            let path = host::proxmox_config_path(root, p);
            let t = read_file(&path).map_err(PlanError::Unreadable)?;
            let c = proxmox::parse_config(&t).map_err(|e| {
                PlanError::Usage(format!("{} line {}: {}", path.display(), e.line, e.msg))
            })?;
            ("proxmox", c.p2p())
        }
        (_, Some(l)) => {
            let t = read_file(l).map_err(PlanError::Unreadable)?;
            let d = libvirt::parse_domain(&t).map_err(|(line, e)| {
                PlanError::Usage(format!("{} line {line}: {e}", l.display()))
            })?;
            ("libvirt", d.p2p())
        }
        _ => (
            "qemu",
            VmP2p {
                devices: o
                    .gpu
                    .iter()
                    .enumerate()
                    .map(|(i, g)| VmDevice {
                        name: format!("gpu{i}"),
                        hosts: vec![g.clone()],
                        mapping: false,
                        x_vga: false,
                    })
                    .collect(),
                ..VmP2p::default()
            },
        ),
    };
    let mut problems = Vec::new();
    let release = super::dpkg_version(root, &["pve-qemu-kvm", "qemu-system-x86"]);
    let qemu = release.as_ref().and_then(|(_, v)| qemu_version(v));
    if let Some((pkg, v)) = &release {
        if qemu.is_some_and(|r| r < CLIQUE_SINCE) {
            problems.push(format!(
                "{pkg} {v} is older than QEMU 2.11: it has no x-nv-gpudirect-clique"
            ));
        }
    }

    // The GPUs among the devices: GPU-class on the host (a display
    // controller or an accelerator), or a mapping (not resolved here:
    // taken as one).
    let mut devices = Vec::new();
    let (mut bare, mut lists, mut no_alias) = (Vec::new(), Vec::new(), Vec::new());
    for d in &vm.devices {
        let first = d.hosts.first().and_then(|h| parse_addr(h));
        let is_gpu = d.mapping
            || first
                .and_then(|a| sysfs::class(root, a))
                .is_none_or(is_gpu_class);
        if !is_gpu {
            continue;
        }
        // qemu-server names the functions hostpciN.0, hostpciN.1... when
        // the entry yields more than one: a `;` list, or a bare BDF of a
        // multi-function device (`print_hostpci_devices`, `$multifunction`).
        let listed = d.hosts.len() > 1;
        let all_functions = d
            .hosts
            .first()
            .and_then(|h| device_spec(h))
            .is_some_and(|s| s.all_functions);
        let multi = listed
            || all_functions
                && first.is_some_and(|a| {
                    sysfs::functions_of(root, a.domain, a.bus, a.device).len() > 1
                        || !sysfs::present(root, a)
                });
        let device_id = match kind {
            "proxmox" if multi => format!("{}.0", d.name),
            _ => d.name.clone(),
        };
        let targetable = kind != "proxmox" || !multi;
        let clique = vm
            .cliques
            .iter()
            .find(|(id, _)| *id == device_id)
            .map(|(_, v)| v.clone());
        if kind == "proxmox" && listed {
            lists.push(d.name.clone());
        } else if kind == "proxmox" && multi {
            bare.push(d.name.clone());
        }
        if kind == "libvirt" && d.name.is_empty() {
            no_alias.push(d.hosts.join(";"));
        }
        let placement = first
            .and_then(|a| sysfs::config(root, a, 4096).ok())
            .filter(|c| c.len() >= 256)
            .and_then(|c| pci_caps::clique_placement(&c));
        let place_text = match (placement, qemu) {
            (None, _) => None,
            (Some(p), Some(r)) if r < D4_SINCE => Some(if p.c8_free {
                "0xc8".to_string()
            } else {
                problems.push(format!("{}: 0xC8 of its config space is taken and QEMU before 8.1 puts the clique only there: the VM will not start with the clique set; QEMU 8.1 or later puts it at 0xD4", d.name));
                "none (QEMU before 8.1 needs 0xC8)".to_string()
            }),
            (Some(p), _) => Some(match p.offset {
                Some(o) => format!("{o:#x}"),
                None => {
                    problems.push(format!("{}: both 0xC8 and 0xD4 of its config space are taken: QEMU cannot add the capability and will not start", d.name));
                    "none".into()
                }
            }),
        };
        // ACS on the host bridges above it.
        let acs_redirect: Vec<String> = first
            .map(|a| sysfs::upstream(root, a))
            .unwrap_or_default()
            .into_iter()
            .filter(|b| {
                sysfs::config(root, *b, 4096)
                    .ok()
                    .and_then(|c| pci_caps::acs_control(&c))
                    .is_some_and(|c| c & ACS_REQUEST_REDIRECT != 0)
            })
            .map(|b| b.to_string())
            .collect();
        devices.push(PlanP2pDevice {
            name: d.name.clone(),
            host: d.hosts.join(";"),
            device_id,
            targetable,
            clique,
            clique_offset: place_text,
            acs_redirect,
        });
        if d.x_vga {
            problems.push(format!("{}: x-vga=1: some qemu-server releases add kvm=off with it (hiding KVM); check `qm showcmd VMID | grep -o 'kvm=off'`", d.name));
        }
    }
    if !bare.is_empty() {
        problems.push(format!(
            "{} name the GPU without a function (`41:00`), so every function is passed and QEMU's ids are hostpciN.0, hostpciN.1...: `-set device.hostpciN.x-nv-gpudirect-clique=...` then names no device (QEMU refuses to start) and -set cannot name hostpciN.0 (QEMU reads the id up to the next dot); give each GPU's function (`0000:41:00.0`)",
            bare.join(", ")
        ));
    }
    if !lists.is_empty() {
        problems.push(format!(
            "{} list several functions (`0000:41:00.0;0000:41:00.1`), so QEMU's ids are hostpciN.0, hostpciN.1...: -set cannot name them (QEMU reads the id up to the next dot); give the GPU's function alone in its hostpciN",
            lists.join(", ")
        ));
    }
    if !no_alias.is_empty() {
        problems.push(format!(
            "the <hostdev> of {} has no <alias>: give each `<alias name='ua-gpuN'/>` so <qemu:override> can name it",
            no_alias.join(", ")
        ));
    }
    if vm.kvm_hidden {
        problems.push(match kind {
            "libvirt" => "<kvm><hidden state='on'/> hides KVM: NVIDIA's driver then grants no P2P in the guest; remove it".into(),
            _ => "cpu: ...,hidden=1 hides KVM (QEMU kvm=off): NVIDIA's driver then grants no P2P in the guest, whatever the clique; drop hidden=1".into(),
        });
    }
    if vm.commandline_set {
        problems.push("<qemu:commandline> sets the clique with -set: libvirt passes -device as JSON, which -set cannot change (QEMU refuses); use <qemu:override>".into());
    }
    let (iommu_width_bits, iommu_units) = iommu_width(root);
    if let (Some(w), Some(end)) = (iommu_width_bits, window_end) {
        if w < 64 && end > (1u64 << w) {
            problems.push(format!("the host IOMMU translates {w} address bits and the guest's 64-bit window ends at {end:#x}: QEMU cannot map the peers' BARs (\"PCI peer-to-peer transactions on BARs are not supported\"); fewer vCPU address bits keep the BARs lower"));
        }
    }
    let ids: Vec<&str> = devices
        .iter()
        .map(|d| d.clique.as_deref().unwrap_or(""))
        .collect();
    let all_set = !devices.is_empty()
        && ids.iter().all(|c| !c.is_empty())
        && ids.windows(2).all(|w| w[0] == w[1]);
    let driver_gate = if devices.len() < 2 {
        GateVerdict::Unknown
    } else if all_set && problems.is_empty() {
        GateVerdict::Granted
    } else {
        GateVerdict::Refused
    };
    if devices.len() >= 2 && !all_set {
        problems.push(if ids.iter().all(|c| c.is_empty()) {
            "no GPU is given a clique: under KVM the driver grants no P2P".into()
        } else {
            format!("the GPUs' cliques differ or some are not set ({}): the driver grants P2P only within one", ids.iter().map(|c| if c.is_empty() { "-" } else { c }).collect::<Vec<_>>().join(", "))
        });
    }
    let lines = lines(kind, &vm, &devices);
    Ok(PlanP2p {
        driver_gate,
        devices,
        kvm_hidden: vm.kvm_hidden,
        qemu_package: release.map(|(p, v)| format!("{p} {v}")),
        iommu_width_bits,
        iommu_units,
        problems,
        lines,
    })
}

/// The lines to paste: every GPU in clique 0.
fn lines(kind: &str, vm: &VmP2p, devices: &[PlanP2pDevice]) -> PlanP2pLines {
    let qemu = devices
        .iter()
        .map(|d| {
            let h = d.host.split(';').next().unwrap_or("");
            let h = parse_addr(h)
                .map(|a| a.to_string())
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
        "proxmox" => {
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
        "libvirt" => {
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
