//! `plan --p2p`'s decision: on the host, before the VM starts, whether the
//! driver's P2P gate will open in the guest, and why not. From what the
//! configuration sets (`PveConfig::p2p`, `Domain::p2p`, or `--gpu`), the
//! QEMU release (`--qemu`, else the host's package: where the clique
//! capability can go), each GPU's host config space (is 0xC8 free), ACS
//! on the bridges above the GPUs and the host IOMMU's address width, all
//! read beforehand (`evidence::host`). The lines to paste are the clique
//! change in `decide::syntax`'s terms.
//!
//! Proxmox (qemu-server `PVE/QemuServer/PCI.pm`, `print_hostpci_devices`):
//! a `hostpciN` entry that yields one function gets the device id
//! `hostpciN`; one that yields several (a bare `41:00`: every function)
//! gets `hostpciN.0`, `hostpciN.1`... which `-set device.ID.PROP=V` cannot
//! name (QEMU splits its argument at the first dots: group, id, property).
//! `cpu: ...,hidden=1` is QEMU's `kvm=off`. libvirt (formatdomain, "QEMU
//! command-line passthrough"): `<qemu:override><qemu:device alias=...>
//! <qemu:frontend><qemu:property name=... type=... value=.../>`, libvirt
//! 8.2 or later; libvirt passes `-device` as JSON, which `-set` cannot
//! change. `<features><kvm><hidden state='on'/>` hides KVM.

use crate::decide::hint::Change;
use crate::decide::syntax::{self, Hypervisor, VmGpu, VmGpus};
use crate::decide::window::QemuRules;
use crate::evidence::host::{HostEvidence, HostIommu, VmConfig};
use crate::model::p2p::{GateVerdict, VmDevice, VmP2p};
use crate::model::pci::PciAddress;
use crate::model::release::QemuVersion;
use crate::model::select::is_gpu_class;
use crate::parse::address::device_spec;
use crate::parse::pci_caps::{self, ACS_REQUEST_REDIRECT};
use crate::parse::qemu_args::CLIQUE;
use crate::parse::release::{installed_version, qemu_version};
use serde::Serialize;

/// Where the VM's configuration comes from: it decides QEMU's device ids
/// and how a setting is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VmKind {
    Proxmox,
    Libvirt,
    /// `--gpu` flags: QEMU's own command line.
    Qemu,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PlanP2p {
    /// `granted` when every GPU gets one clique and nothing stands in the
    /// way; `refused` otherwise; `unknown` with fewer than two GPUs.
    pub driver_gate: GateVerdict,
    pub devices: Vec<PlanP2pDevice>,
    pub kvm_hidden: bool,
    /// The host's QEMU package and version, when dpkg knows it.
    pub qemu_package: Option<String>,
    /// The release `--qemu` gave, whose rules then place the clique in
    /// place of the package's; absent without the flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qemu_given: Option<String>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct PlanP2pLines {
    pub proxmox: Vec<String>,
    pub libvirt: Option<String>,
    pub qemu: String,
}

/// The gate, its problems and the lines that set the clique for the VM
/// configuration `host` read (its devices; `gpu_flags`, the `--gpu`
/// devices, without one), with `qemu_given` the release `--qemu` names
/// (which wins over the host's package) and `window_end` the end of the
/// guest's 64-bit window as the plan predicts it.
pub(crate) fn plan(
    host: &HostEvidence,
    gpu_flags: &[String],
    qemu_given: Option<QemuVersion>,
    window_end: Option<u64>,
) -> PlanP2p {
    let (kind, vm) = match &host.vm {
        Ok(c @ VmConfig::Proxmox(_)) => (VmKind::Proxmox, c.p2p().unwrap_or_default()),
        Ok(c @ VmConfig::Libvirt(_)) => (VmKind::Libvirt, c.p2p().unwrap_or_default()),
        _ => (VmKind::Qemu, VmP2p::of_flags(gpu_flags)),
    };
    let mut problems = Vec::new();
    let package = installed_version(&host.packages, &["pve-qemu-kvm", "qemu-system-x86"]);
    // The clique rules of the release (P1, P2 in decide::window::rules),
    // and the release as the problems name it.
    let (qemu, named) = match (qemu_given, &package) {
        (Some(v), _) => (Some(v), format!("QEMU {v} (--qemu)")),
        (None, Some((pkg, v))) => (qemu_version(v), format!("{pkg} {v}")),
        (None, None) => (None, String::new()),
    };
    let qemu = qemu.map(|v| QemuRules::of(v, None));
    if qemu.is_some_and(|r| !r.clique) {
        problems.push(format!(
            "{named} is older than QEMU 2.11: it has no {CLIQUE}"
        ));
    }

    // The GPUs among the devices: GPU-class on the host (a display
    // controller or an accelerator), or a mapping (not resolved here:
    // taken as one).
    let mut devices = Vec::new();
    let mut gpus: Vec<&VmDevice> = Vec::new();
    let (mut bare, mut lists, mut no_alias) = (Vec::new(), Vec::new(), Vec::new());
    for d in &vm.devices {
        let spec = d.hosts.first().and_then(|h| device_spec(h));
        let first = spec.map(|s| s.first);
        let is_gpu = d.mapping || first.and_then(|a| host.class(a)).is_none_or(is_gpu_class);
        if !is_gpu {
            continue;
        }
        // qemu-server names the functions hostpciN.0, hostpciN.1... when
        // the entry yields more than one: a `;` list, or a bare BDF of a
        // multi-function device (`print_hostpci_devices`, `$multifunction`).
        let listed = d.hosts.len() > 1;
        let all_functions = spec.is_some_and(|s| s.all_functions);
        let multi = listed
            || all_functions
                && first.is_some_and(|a| host.slot(a).len() > 1 || !host.slot(a).contains(&a));
        let device_id = match kind {
            VmKind::Proxmox if multi => format!("{}.0", d.name),
            _ => d.name.clone(),
        };
        let targetable = kind != VmKind::Proxmox || !multi;
        let clique = vm
            .cliques
            .iter()
            .find(|(id, _)| *id == device_id)
            .map(|(_, v)| v.clone());
        if kind == VmKind::Proxmox && listed {
            lists.push(d.name.clone());
        } else if kind == VmKind::Proxmox && multi {
            bare.push(d.name.clone());
        }
        if kind == VmKind::Libvirt && d.name.is_empty() {
            no_alias.push(d.hosts.join(";"));
        }
        let config = first.and_then(|a| host.function(a)?.config.as_deref());
        let place_text = clique_offset(&d.name, config, qemu, &mut problems);
        let acs_redirect = first.map(|a| acs_redirect(host, a)).unwrap_or_default();
        gpus.push(d);
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
    naming_problems(&bare, &lists, &no_alias, &mut problems);
    if vm.kvm_hidden {
        problems.push(match kind {
            VmKind::Libvirt => "<kvm><hidden state='on'/> hides KVM: NVIDIA's driver then grants no P2P in the guest; remove it".into(),
            _ => "cpu: ...,hidden=1 hides KVM (QEMU kvm=off): NVIDIA's driver then grants no P2P in the guest, whatever the clique; drop hidden=1".into(),
        });
    }
    if vm.commandline_set {
        problems.push("<qemu:commandline> sets the clique with -set: libvirt passes -device as JSON, which -set cannot change (QEMU refuses); use <qemu:override>".into());
    }
    let HostIommu {
        width_bits: iommu_width_bits,
        units: iommu_units,
    } = host.iommu.clone().unwrap_or_default();
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
    let lines = lines(kind, &vm, &gpus, &devices);
    PlanP2p {
        driver_gate,
        devices,
        kvm_hidden: vm.kvm_hidden,
        qemu_package: package.map(|(p, v)| format!("{p} {v}")),
        qemu_given: qemu_given.map(|v| v.to_string()),
        iommu_width_bits,
        iommu_units,
        problems,
        lines,
    }
}

/// The lines to paste: every GPU in clique 0, KVM shown where it is
/// hidden; the configuration's own (Proxmox, libvirt) and QEMU's.
fn lines(kind: VmKind, vm: &VmP2p, gpus: &[&VmDevice], devices: &[PlanP2pDevice]) -> PlanP2pLines {
    let mut change = Change {
        kvm_signature_visible: vm.kvm_hidden.then_some(true),
        ..Change::default()
    };
    change.vfio_pci_properties.insert(CLIQUE.into(), "0".into());
    let vm_gpus = VmGpus {
        gpus: gpus
            .iter()
            .zip(devices)
            .map(|(g, d)| VmGpu {
                name: &g.name,
                hosts: &g.hosts,
                targetable: d.targetable,
            })
            .collect(),
        args: &vm.args,
    };
    let of = |h| syntax::device_lines(h, &change, &vm_gpus);
    PlanP2pLines {
        proxmox: match kind {
            VmKind::Proxmox => of(Hypervisor::Proxmox),
            _ => Vec::new(),
        },
        libvirt: match kind {
            VmKind::Libvirt => of(Hypervisor::Libvirt).pop(),
            _ => None,
        },
        qemu: of(Hypervisor::Qemu).join(" "),
    }
}

/// Where QEMU will put the clique capability in a GPU's config space
/// (`config`, 256 bytes or more to tell), by the release's rules (P1, P2);
/// a problem when it cannot.
fn clique_offset(
    name: &str,
    config: Option<&[u8]>,
    qemu: Option<QemuRules>,
    problems: &mut Vec<String>,
) -> Option<String> {
    let placement = config
        .filter(|c| c.len() >= 256)
        .and_then(pci_caps::clique_placement);
    match (placement, qemu) {
        (None, _) => None,
        (Some(p), Some(r)) if !r.clique_d4 => Some(if p.c8_free {
            "0xc8".to_string()
        } else {
            problems.push(format!("{name}: 0xC8 of its config space is taken and QEMU before 8.1 puts the clique only there: the VM will not start with the clique set; QEMU 8.1 or later puts it at 0xD4"));
            "none (QEMU before 8.1 needs 0xC8)".to_string()
        }),
        (Some(p), _) => Some(match p.offset {
            Some(o) => format!("{o:#x}"),
            None => {
                problems.push(format!("{name}: both 0xC8 and 0xD4 of its config space are taken: QEMU cannot add the capability and will not start"));
                "none".into()
            }
        }),
    }
}

/// The host bridges above `a` with ACS P2P Request Redirect on.
fn acs_redirect(host: &HostEvidence, a: PciAddress) -> Vec<String> {
    host.function(a)
        .map(|f| f.upstream.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|b| {
            host.function(*b)
                .and_then(|f| f.config.as_deref())
                .and_then(pci_caps::acs_control)
                .is_some_and(|c| c & ACS_REQUEST_REDIRECT != 0)
        })
        .map(|b| b.to_string())
        .collect()
}

/// Entries whose GPU QEMU's `-set` or libvirt's override cannot name:
/// Proxmox's bare BDFs and function lists, libvirt's `<hostdev>`s
/// without an alias.
fn naming_problems(
    bare: &[String],
    lists: &[String],
    no_alias: &[String],
    problems: &mut Vec<String>,
) {
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
}
