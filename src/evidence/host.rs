//! `plan`'s evidence: everything it needs from the host, read once and
//! before anything is decided. The VM's configuration (read and parsed
//! once), the Proxmox files it leads to (custom CPU models, PCI mappings,
//! the node's name), the host's CPU, dpkg's status, a RHEL-family sign,
//! the host functions the configuration and `--gpu` name (class, BARs),
//! and for `--p2p` their config space, the bridges above them and the
//! IOMMU.
//!
//! A read that fails is kept as its error, not raised: the decisions
//! (`commands::plan`, `decide::p2p::plan`) raise it where it matters, in
//! the order they always have, so a configuration's first problem is the
//! one reported.

use crate::model::bar::Bar;
use crate::model::p2p::VmP2p;
use crate::model::pci::PciAddress;
use crate::model::platform::Cpu;
use crate::parse::address::device_spec;
use crate::parse::iommu::vtd_mgaw;
use crate::parse::libvirt::{self, Domain};
use crate::parse::proxmox::{self, LineError, MappedPaths, PveConfig};
use crate::parse::release::dpkg_installed;
use crate::read::root::{read_file, Root};
use crate::read::{host, iommu, sysfs};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The host's address width taken when the root has no `/proc/cpuinfo`
/// (a configuration planned away from its host): 46 bits, what Intel's
/// server CPUs have reported since Sandy Bridge-EP and the most any
/// firmware here uses (OVMF caps at 46 from edk2-stable202308, SeaBIOS
/// 1.16.3 at 46). One default for every use: the vCPU of `-cpu host`
/// and Proxmox's maximum for memory hot-plug (qemu-server's own fallback
/// of 36 bits in Memory.pm `get_max_mem` applies only where it cannot
/// read the host's cpuinfo, which a Proxmox node always can). Said in the
/// plan's `assumed` where it is used.
pub(crate) const ASSUMED_HOST_PHYS_BITS: u32 = 46;

/// Proxmox's custom CPU models.
pub(crate) const CPU_MODELS: &str = "/etc/pve/virtual-guest/cpu-models.conf";
/// Proxmox's PCI resource mappings.
pub(crate) const PCI_MAPPINGS: &str = "/etc/pve/mapping/pci.cfg";

/// What to read: the `plan` options that name files and devices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'a> {
    pub proxmox: Option<&'a str>,
    pub libvirt: Option<&'a Path>,
    /// `--gpu BDF`s.
    pub gpu: &'a [String],
    /// GPUs given by hand (`--gpus N --bar SIZE`): no host function's BARs
    /// are read for the window.
    pub by_hand: bool,
    /// `--p2p`.
    pub p2p: bool,
}

/// A Proxmox VM's configuration and the files it leads to.
#[derive(Debug, Clone)]
pub(crate) struct ProxmoxVm {
    /// `--proxmox`'s argument: a VMID or a file.
    pub arg: String,
    pub path: PathBuf,
    pub config: Result<PveConfig, LineError>,
    /// `cpu-models.conf`, when the VM's CPU is `custom-NAME` and the file
    /// is readable.
    pub cpu_models: Option<String>,
    /// `pci.cfg`, when a `hostpci` entry names a mapping.
    pub mappings: Option<Result<String, String>>,
    /// Each mapping named and its devices for this node (`None`: it is not
    /// in `pci.cfg`).
    pub mapped: BTreeMap<String, Option<MappedPaths>>,
    /// This node's name (`/etc/hostname`, short).
    pub node: Option<String>,
}

/// A libvirt domain's XML.
#[derive(Debug, Clone)]
pub(crate) struct LibvirtVm {
    pub path: PathBuf,
    pub domain: Result<Domain, (usize, String)>,
}

/// The configuration `--proxmox` or `--libvirt` names.
#[derive(Debug, Clone)]
pub(crate) enum VmConfig {
    /// Neither: flags only.
    None,
    Proxmox(Box<ProxmoxVm>),
    Libvirt(Box<LibvirtVm>),
}

impl VmConfig {
    /// What the configuration says of peer-to-peer; `None` for flags only
    /// or a configuration that does not parse.
    pub(crate) fn p2p(&self) -> Option<VmP2p> {
        match self {
            VmConfig::None => None,
            VmConfig::Proxmox(p) => p.config.as_ref().ok().map(PveConfig::p2p),
            VmConfig::Libvirt(l) => l.domain.as_ref().ok().map(Domain::p2p),
        }
    }
}

/// One host function as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostFunction {
    /// Its class code, `None` if unreadable.
    pub class: Option<u32>,
    /// Its sized memory BARs, or why they cannot be read; `None` when not
    /// read (a P2P-only function, GPUs given by hand).
    pub bars: Option<Result<Vec<Bar>, String>>,
    /// Its config space as far as it may be read (`--p2p`: 256 or 4096
    /// bytes as root, 64 otherwise).
    pub config: Option<Vec<u8>>,
    /// The bridges above it, nearest first (`--p2p`).
    pub upstream: Vec<PciAddress>,
}

/// The host IOMMU (`--p2p`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostIommu {
    /// The narrowest Intel unit's address width (MGAW).
    pub width_bits: Option<u32>,
    pub units: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct HostEvidence {
    /// The VM's configuration, or why it cannot be read.
    pub vm: Result<VmConfig, String>,
    /// `/proc/cpuinfo`, `None` when absent or saying nothing.
    pub cpu: Option<Cpu>,
    /// dpkg's installed packages and versions.
    pub packages: Vec<(String, String)>,
    /// `/etc/redhat-release` exists.
    pub redhat_release: bool,
    /// Each device named (`hostpci`, a mapping's path, `<hostdev>`,
    /// `--gpu`) and the host functions it stands for, or why none.
    pub specs: BTreeMap<String, Result<Vec<PciAddress>, String>>,
    pub functions: BTreeMap<PciAddress, HostFunction>,
    /// For `--p2p`: the functions present in each device slot a P2P
    /// device names (its function 0 as the key).
    pub slots: BTreeMap<PciAddress, Vec<PciAddress>>,
    pub iommu: Option<HostIommu>,
}

impl HostEvidence {
    /// The host functions a device spec stands for.
    pub(crate) fn spec(&self, spec: &str) -> Result<Vec<PciAddress>, String> {
        self.specs
            .get(spec)
            .cloned()
            .unwrap_or_else(|| Err(format!("{spec:?} was not read")))
    }

    pub(crate) fn function(&self, a: PciAddress) -> Option<&HostFunction> {
        self.functions.get(&a)
    }

    pub(crate) fn class(&self, a: PciAddress) -> Option<u32> {
        self.function(a).and_then(|f| f.class)
    }

    /// The host's address bits, when `/proc/cpuinfo` says.
    pub(crate) fn host_phys_bits(&self) -> Option<u32> {
        self.cpu.and_then(|c| c.phys_bits)
    }

    /// The functions present in `a`'s device slot.
    pub(crate) fn slot(&self, a: PciAddress) -> &[PciAddress] {
        self.slots
            .get(&PciAddress { function: 0, ..a })
            .map_or(&[], Vec::as_slice)
    }
}

/// Reads everything `plan` needs.
pub(crate) fn gather(root: &Root, w: Wanted<'_>) -> HostEvidence {
    let vm = read_vm(root, w);
    let mut specs: Vec<String> = match &vm {
        Ok(VmConfig::Proxmox(p)) => proxmox_specs(p),
        Ok(VmConfig::Libvirt(l)) => l
            .domain
            .as_ref()
            .map(|d| d.hostdevs.iter().map(|h| h.address.clone()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if !w.by_hand {
        specs.extend(w.gpu.iter().cloned());
    }
    let specs: BTreeMap<String, Result<Vec<PciAddress>, String>> = specs
        .into_iter()
        .map(|s| {
            let r = resolve(root, &s);
            (s, r)
        })
        .collect();

    // P2P's devices: the first host function of each entry, and the
    // bridges above it.
    let p2p_devices: BTreeSet<PciAddress> = if w.p2p {
        let view = match &vm {
            Ok(c @ (VmConfig::Proxmox(_) | VmConfig::Libvirt(_))) => c.p2p().unwrap_or_default(),
            _ => VmP2p::of_flags(w.gpu),
        };
        view.devices
            .iter()
            .filter_map(|d| Some(device_spec(d.hosts.first()?)?.first))
            .collect()
    } else {
        BTreeSet::new()
    };

    let mut functions: BTreeMap<PciAddress, HostFunction> = BTreeMap::new();
    if !w.by_hand {
        let wanted: BTreeSet<PciAddress> = specs
            .values()
            .filter_map(|r| r.as_ref().ok())
            .flatten()
            .copied()
            .collect();
        for a in wanted {
            // P2P reads the whole config space of its GPUs; the BARs need
            // the first 64 bytes of it.
            let limit = if p2p_devices.contains(&a) { 4096 } else { 64 };
            let config = sysfs::config(root, a, limit).ok();
            functions.insert(
                a,
                HostFunction {
                    class: sysfs::class(root, a),
                    bars: Some(sysfs::host_bars(root, a, config.as_deref())),
                    config,
                    upstream: Vec::new(),
                },
            );
        }
    }
    let slots = read_p2p(root, &p2p_devices, &mut functions);
    let iommu = w.p2p.then(|| {
        let units = iommu::units(root);
        HostIommu {
            width_bits: units
                .iter()
                .filter_map(|u| iommu::vtd_cap(root, u).as_deref().and_then(vtd_mgaw))
                .min(),
            units,
        }
    });

    HostEvidence {
        vm,
        cpu: host::host_cpu(root),
        packages: host::dpkg_status(root)
            .map(|s| dpkg_installed(&s))
            .unwrap_or_default(),
        redhat_release: host::redhat_release(root),
        specs,
        functions,
        slots,
        iommu,
    }
}

/// What P2P needs of its GPUs beyond their BARs: the whole config space
/// (already read with the BARs where they are the window's GPUs), the
/// bridges above each and theirs (ACS), and the functions in each GPU's
/// slot (one function or several: QEMU's device ids differ).
fn read_p2p(
    root: &Root,
    gpus: &BTreeSet<PciAddress>,
    functions: &mut BTreeMap<PciAddress, HostFunction>,
) -> BTreeMap<PciAddress, Vec<PciAddress>> {
    let mut slots = BTreeMap::new();
    for a in gpus {
        let f = functions.entry(*a).or_default();
        if f.bars.is_none() {
            f.class = sysfs::class(root, *a);
            f.config = sysfs::config(root, *a, 4096).ok();
        }
        f.upstream = sysfs::upstream(root, *a);
        let bridges = f.upstream.clone();
        slots
            .entry(PciAddress { function: 0, ..*a })
            .or_insert_with(|| sysfs::functions_of(root, a.domain, a.bus, a.device));
        for b in bridges {
            functions.entry(b).or_insert_with(|| HostFunction {
                config: sysfs::config(root, b, 4096).ok(),
                ..HostFunction::default()
            });
        }
    }
    slots
}

/// The configuration `--proxmox` or `--libvirt` names, read and parsed
/// once, with the Proxmox files it leads to.
fn read_vm(root: &Root, w: Wanted<'_>) -> Result<VmConfig, String> {
    if let Some(arg) = w.proxmox {
        let path = host::proxmox_config_path(root, arg);
        let text = read_file(&path)?;
        let config = proxmox::parse_config(&text);
        let mut vm = ProxmoxVm {
            arg: arg.to_string(),
            path,
            config,
            cpu_models: None,
            mappings: None,
            mapped: BTreeMap::new(),
            node: host::node_name(root),
        };
        if let Ok(c) = &vm.config {
            let custom = c
                .cpu
                .as_ref()
                .is_some_and(|cpu| cpu.model.starts_with("custom-"));
            if custom {
                vm.cpu_models = read_file(&root.join(CPU_MODELS)).ok();
            }
            let names: Vec<&String> = c
                .hostpci
                .iter()
                .filter_map(|h| h.mapping.as_ref())
                .collect();
            if !names.is_empty() {
                let text = read_file(&root.join(PCI_MAPPINGS));
                if let Ok(t) = &text {
                    for n in names {
                        vm.mapped
                            .insert(n.clone(), proxmox::mapping_paths(t, n, vm.node.as_deref()));
                    }
                }
                vm.mappings = Some(text);
            }
        }
        return Ok(VmConfig::Proxmox(Box::new(vm)));
    }
    if let Some(path) = w.libvirt {
        let text = read_file(path)?;
        return Ok(VmConfig::Libvirt(Box::new(LibvirtVm {
            path: path.to_path_buf(),
            domain: libvirt::parse_domain(&text),
        })));
    }
    Ok(VmConfig::None)
}

/// The device specs a Proxmox configuration names: each `hostpci`'s
/// hosts, or its mapping's paths.
fn proxmox_specs(p: &ProxmoxVm) -> Vec<String> {
    let Ok(c) = &p.config else {
        return Vec::new();
    };
    c.hostpci
        .iter()
        .flat_map(|h| match &h.mapping {
            Some(name) => p
                .mapped
                .get(name)
                .cloned()
                .flatten()
                .map(|m| m.paths)
                .unwrap_or_default(),
            None => h.hosts.clone(),
        })
        .collect()
}

/// `0000:41:00.0`, `41:00.0` (one function), `41:00` (every function the
/// host has of it).
fn resolve(root: &Root, spec: &str) -> Result<Vec<PciAddress>, String> {
    let d = device_spec(spec).ok_or_else(|| format!("{spec:?} is not a PCI address"))?;
    if !d.all_functions {
        return Ok(vec![d.first]);
    }
    let a = d.first;
    let f = sysfs::functions_of(root, a.domain, a.bus, a.device);
    if f.is_empty() {
        return Err(format!("no PCI device {spec} on this host"));
    }
    Ok(f)
}
