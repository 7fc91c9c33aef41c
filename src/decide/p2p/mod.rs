//! Peer-to-peer: three gates, each with its verdict and its fix.
//!
//! - The driver's: in a guest whose CPUID says KVM, NVIDIA's driver grants
//!   P2P between two GPUs only when both carry QEMU's clique capability
//!   with the same id (open-gpu-kernel-modules, `p2p_caps.c` and the KVM
//!   hypervisor code; QEMU `hw/vfio/pci-quirks.c`). With KVM hidden the
//!   driver takes the VM for bare metal and the emulated chipset for one
//!   it does not know: no grant.
//! - NCCL's path gate: NCCL walks each GPU's sysfs path (`src/graph/
//!   xml.cc`, `topo.cc`) and uses P2P only up to its level (`paths.cc`,
//!   `ncclTopoCheckP2p`: `PXB` by default; `SYS` for at most two GPUs on
//!   an AMD CPU; `NCCL_P2P_LEVEL` overrides, `NCCL_P2P_DISABLE=1` is off).
//! - The host's: QEMU must map every peer's BARs into the IOMMU. Nothing in
//!   the guest proves it; a vIOMMU narrower than the BARs' addresses is
//!   the one refusal visible from inside.
//!
//! The verdicts are advice: the boot verdict stays the BARs' unless
//! `--expect-p2p` / `gpu_preflight.expect_p2p=1` asks otherwise.

use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::syntax::{self, Platform as Syntax};
use crate::evidence::p2p::{P2pEvidence, P2pGpu};
use crate::model::p2p::{CliqueCap, GateVerdict, PathLevel};
use crate::model::pci::PciAddress;
use crate::model::platform::CpuVendor;
use crate::model::size::human;
use crate::parse::nccl::{level_setting, LevelSetting};
use crate::read::cpuid::CpuidView;
use serde::Serialize;

#[cfg(test)]
mod tests;
mod text;

pub(crate) use text::from_text;

const NVIDIA: u16 = 0x10de;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct P2p {
    /// `refused` when a gate refuses, `granted` when all grant, else
    /// `unknown`.
    pub verdict: GateVerdict,
    /// `--expect-p2p` or `gpu_preflight.expect_p2p=1`: a refusal fails the
    /// check.
    pub expected: bool,
    pub gpus: Vec<P2pGpuReport>,
    /// All NVIDIA GPUs carry the capability with one id; null when some
    /// could not be read, or there is no NVIDIA GPU.
    pub one_clique: Option<bool>,
    pub kvm: KvmReport,
    pub pairs: Vec<PairReport>,
    /// The farthest pair's level: what NCCL's gate compares.
    pub p2p_path: Option<PathLevel>,
    pub nccl: NcclReport,
    pub viommu: ViommuReport,
    pub gates: Gates,
    pub hints: Vec<Hint>,
    pub note: String,
    /// Judged from pasted text (`explain`): no config space, CPUID or
    /// vIOMMU was seen.
    #[serde(skip)]
    pub from_text: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct P2pGpuReport {
    pub bdf: PciAddress,
    /// `found`, `absent` or `unreadable`.
    pub clique_capability: &'static str,
    pub clique: Option<u8>,
    pub clique_offset: Option<u8>,
    pub config_bytes: usize,
    pub numa_node: Option<i64>,
    pub vram_bar: Option<u8>,
    pub vram_bar_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct KvmReport {
    /// KVM's signature is visible to the guest (what the driver checks);
    /// null when nothing says.
    pub visible: Option<bool>,
    /// Leaf 0x40000000's signature, read in-process (live system only).
    pub cpuid_signature: Option<String>,
    /// The `hypervisor` CPU flag (/proc/cpuinfo): a VM, visible or not.
    pub cpuinfo_hypervisor: Option<bool>,
    /// The kernel log's `Hypervisor detected:` name; null without one.
    pub kernel_log: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PairReport {
    pub a: PciAddress,
    pub b: PciAddress,
    pub level: PathLevel,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NcclSettingReport {
    pub name: String,
    pub value: String,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NcclReport {
    pub settings: Vec<NcclSettingReport>,
    /// The level NCCL will allow (null: off, or unknown).
    pub p2p_level: Option<PathLevel>,
    /// `default`, `NCCL_P2P_LEVEL`, `NCCL_P2P_DISABLE`, `NCCL_TOPO_FILE`.
    pub level_source: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ViommuReport {
    pub present: bool,
    pub tables: Vec<String>,
    pub address_width_bits: Option<u32>,
    pub iommu_units: Vec<String>,
    pub gpu_iommu_groups: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Gate {
    pub verdict: GateVerdict,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Gates {
    pub driver: Gate,
    pub path: Gate,
    pub host: Gate,
}

impl Gates {
    /// `refused` when a gate refuses, `granted` when all grant, else
    /// `unknown`.
    pub(crate) fn overall(&self) -> GateVerdict {
        let all = [self.driver.verdict, self.path.verdict, self.host.verdict];
        if all.contains(&GateVerdict::Refused) {
            GateVerdict::Refused
        } else if all.iter().all(|v| *v == GateVerdict::Granted) {
            GateVerdict::Granted
        } else {
            GateVerdict::Unknown
        }
    }
}

/// `p2p-nccl-level`: let NCCL use P2P up to `level`, a guest setting the
/// next NCCL process reads.
/// `text` is given the setting as it is written (`NCCL_P2P_LEVEL=PHB`).
fn nccl_level_hint(level: PathLevel, text: impl FnOnce(&str) -> String) -> Hint {
    let mut change = Change::default();
    change
        .nccl_env
        .insert("NCCL_P2P_LEVEL".into(), level.as_str().into());
    let text = text(&syntax::nccl_env(&change));
    Hint::new(HintId::P2pNcclLevel, text, Side::Guest, None, change)
}

/// The PCI path between two GPUs as NCCL classifies it. Bridges a GPU's
/// sysfs path passes are NCCL's PCI nodes; a root bus is a host bridge
/// (a CPU node). GPU to bridge is `PIX`, bridge to bridge `PXB`, through a
/// host bridge `PHB`, between host bridges of different NUMA nodes `SYS`
/// (the path's type is its worst link: `ncclTopoSetPaths`).
pub(crate) fn path_level(a: &P2pGpu, b: &P2pGpu) -> PathLevel {
    if a.root_bus != b.root_bus {
        return match (a.numa_node, b.numa_node) {
            (Some(x), Some(y)) if x >= 0 && y >= 0 && x != y => PathLevel::Sys,
            _ => PathLevel::Phb,
        };
    }
    let ra: Vec<_> = a.upstream.iter().rev().collect();
    let rb: Vec<_> = b.upstream.iter().rev().collect();
    let common = ra.iter().zip(&rb).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return PathLevel::Phb;
    }
    if ra.len() == common && rb.len() == common {
        PathLevel::Pix
    } else {
        PathLevel::Pxb
    }
}

/// NCCL's own level when nothing is set.
fn default_level(cpu: Option<CpuVendor>, gpus: usize) -> PathLevel {
    if cpu == Some(CpuVendor::Amd) && gpus <= 2 {
        PathLevel::Sys
    } else {
        PathLevel::Pxb
    }
}

fn cap_word(c: CliqueCap) -> &'static str {
    match c {
        CliqueCap::Found { .. } => "found",
        CliqueCap::Absent => "absent",
        CliqueCap::Unreadable { .. } => "unreadable",
    }
}

fn gate(verdict: GateVerdict, why: impl Into<String>) -> Gate {
    Gate {
        verdict,
        why: why.into(),
    }
}

/// The clique fix for `n` GPUs, in each hypervisor's syntax.
fn clique_hint(n: usize, why: &str) -> Hint {
    let mut change = Change::default();
    change
        .vfio_pci_properties
        .insert("x-nv-gpudirect-clique".into(), "0".into());
    Hint::new(
        HintId::P2pGpudirectClique,
        format!(
            "{why} Put every GPU in GPUDirect clique 0 (QEMU 2.11 or later). {}. {}",
            syntax::list(
                &change,
                &[Syntax::Proxmox, Syntax::Libvirt, Syntax::Qemu],
                n
            )
            .unwrap_or_default(),
            Restart::Vm.then()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

fn kvm_hint() -> Hint {
    let change = Change {
        kvm_signature_visible: Some(true),
        ..Change::default()
    };
    Hint::new(
        HintId::P2pKvmVisible,
        format!(
            "KVM is hidden from the guest (the `hypervisor` flag is set but CPUID shows no KVM signature): NVIDIA's driver then takes the VM for bare metal and grants no P2P on the emulated chipset. {}. Drivers since R465 no longer need KVM hidden for GeForce passthrough. {}",
            syntax::list(&change, &[Syntax::Proxmox, Syntax::Libvirt, Syntax::Qemu], 1)
                .unwrap_or_default(),
            Restart::Vm.then()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// `p2p-pcie-switch`: the GPUs behind one emulated switch, a VM's remedy
/// for a PHB path.
fn switch_hint() -> Hint {
    let change = Change {
        pcie_switch: Some(true),
        ..Change::default()
    };
    Hint::new(
        HintId::P2pPcieSwitch,
        format!(
            "Or put the GPUs behind one emulated PCIe switch, so they are PXB apart: {}. {}",
            syntax::list(
                &change,
                &[Syntax::Qemu, Syntax::Proxmox, Syntax::Libvirt],
                1
            )
            .unwrap_or_default(),
            Restart::Vm.then()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// `p2p-viommu-aw-bits`: a vIOMMU of `w` bits does not reach `end`.
fn viommu_hint(w: u32, end: u64) -> Hint {
    let change = Change {
        viommu_aw_bits_min: Some(48),
        ..Change::default()
    };
    Hint::new(
        HintId::P2pViommuAwBits,
        format!(
            "The guest's vIOMMU translates {w} address bits and the GPUs' BARs reach {end:#x}: QEMU cannot map the peers' BARs for DMA (\"PCI peer-to-peer transactions on BARs are not supported\"). Give it 48: {}. Or drop the vIOMMU if the guest does not need it. {}",
            syntax::list(&change, &[Syntax::Qemu, Syntax::Libvirt, Syntax::Proxmox], 1)
                .unwrap_or_default(),
            Restart::Vm.then()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

pub(crate) fn decide(ev: &P2pEvidence, expected: bool) -> P2p {
    let n = ev.gpus.len();
    let nvidia: Vec<&P2pGpu> = ev.gpus.iter().filter(|g| g.vendor == NVIDIA).collect();
    let mut hints = Vec::new();

    // The KVM signature.
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

    // Cliques.
    let cliques: Vec<Option<u8>> = nvidia
        .iter()
        .map(|g| match g.clique {
            CliqueCap::Found { clique, .. } => Some(clique),
            _ => None,
        })
        .collect();
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
    let one_clique = if nvidia.is_empty() || !unreadable.is_empty() {
        None
    } else {
        Some(cliques.iter().all(Option::is_some) && cliques.windows(2).all(|w| w[0] == w[1]))
    };

    let driver = if n < 2 {
        gate(GateVerdict::Unknown, "fewer than two GPUs: no peer")
    } else if nvidia.is_empty() {
        gate(
            GateVerdict::Unknown,
            "no NVIDIA GPU: the clique capability is what NVIDIA's driver reads; other drivers decide otherwise (a stand-in cannot carry it: QEMU adds it to NVIDIA display-class devices only)",
        )
    } else if !in_vm {
        gate(
            GateVerdict::Unknown,
            "not a VM: the driver decides by the chipset, which config space does not show",
        )
    } else if hidden {
        hints.push(kvm_hint());
        gate(
            GateVerdict::Refused,
            "the guest is a VM but KVM's CPUID signature is hidden (no `Hypervisor detected: KVM`): the driver grants no P2P",
        )
    } else if visible == Some(false) {
        gate(
            GateVerdict::Unknown,
            format!(
                "the hypervisor is not KVM ({}): the clique capability is QEMU/KVM's",
                log_name
                    .clone()
                    .or_else(|| cpuid_signature.clone())
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
                unreadable.iter().map(|g| g.addr.to_string()).collect::<Vec<_>>().join(", ")
            ),
        )
    } else if !absent.is_empty() {
        let why = format!(
            "{} of {} NVIDIA GPUs carry no GPUDirect clique capability ({}): under KVM the driver grants no P2P to them.",
            absent.len(),
            nvidia.len(),
            absent.iter().map(|g| g.addr.to_string()).collect::<Vec<_>>().join(", ")
        );
        hints.push(clique_hint(nvidia.len(), &why));
        gate(GateVerdict::Refused, why)
    } else if one_clique == Some(false) {
        let ids: Vec<String> = nvidia
            .iter()
            .zip(&cliques)
            .map(|(g, c)| format!("{} in {}", g.addr, c.unwrap_or(0)))
            .collect();
        let why = format!(
            "the GPUs are in different cliques ({}): the driver grants P2P only within one.",
            ids.join(", ")
        );
        hints.push(clique_hint(nvidia.len(), &why));
        gate(GateVerdict::Refused, why)
    } else if visible.is_none() {
        gate(
            GateVerdict::Unknown,
            format!(
                "all {} NVIDIA GPUs carry clique {}, but whether KVM's signature is visible is not known (CPUID not read, no kernel log from the boot's start)",
                nvidia.len(),
                cliques.first().copied().flatten().unwrap_or(0)
            ),
        )
    } else {
        gate(
            GateVerdict::Granted,
            format!(
                "KVM's signature is visible and all {} NVIDIA GPUs carry clique {}",
                nvidia.len(),
                cliques.first().copied().flatten().unwrap_or(0)
            ),
        )
    };

    // Paths.
    let mut pairs = Vec::new();
    for (i, a) in ev.gpus.iter().enumerate() {
        for b in &ev.gpus[i + 1..] {
            pairs.push(PairReport {
                a: a.addr,
                b: b.addr,
                level: path_level(a, b),
            });
        }
    }
    let worst = pairs.iter().map(|p| p.level).max();
    let get = |k: &str| {
        ev.nccl
            .iter()
            .find(|s| s.name == k)
            .map(|s| s.value.as_str())
    };
    let setting = level_setting(get("NCCL_P2P_DISABLE"), get("NCCL_P2P_LEVEL"));
    let topo_file = get("NCCL_TOPO_FILE");
    let (allowed, level_source) = match setting {
        LevelSetting::Default | LevelSetting::Ignored => {
            (Some(default_level(ev.cpu_vendor, n)), "default")
        }
        LevelSetting::Level(l) => (Some(l), "NCCL_P2P_LEVEL"),
        LevelSetting::Off => (
            None,
            if level_setting(get("NCCL_P2P_DISABLE"), None) == LevelSetting::Off {
                "NCCL_P2P_DISABLE"
            } else {
                "NCCL_P2P_LEVEL"
            },
        ),
    };
    // A level NCCL does not read leaves its default in force: say so.
    let ignored = if setting == LevelSetting::Ignored {
        format!(
            "NCCL ignores NCCL_P2P_LEVEL={:?} (it knows only its path names, upper case, and numbers), so its default applies: ",
            get("NCCL_P2P_LEVEL").unwrap_or_default()
        )
    } else {
        String::new()
    };
    let path = match (worst, setting) {
        (None, _) => gate(GateVerdict::Unknown, "fewer than two GPUs: no pair"),
        (Some(_), _) if topo_file.is_some() => gate(
            GateVerdict::Unknown,
            format!(
                "NCCL_TOPO_FILE={}: NCCL reads the topology from that file, not from sysfs",
                topo_file.unwrap_or_default()
            ),
        ),
        (Some(_), LevelSetting::Off) => {
            let mut change = Change::default();
            change
                .nccl_env
                .insert("NCCL_P2P_DISABLE".into(), String::new());
            change
                .nccl_env
                .insert("NCCL_P2P_LEVEL".into(), String::new());
            hints.push(Hint::new(
                HintId::P2pNcclEnable,
                format!(
                    "NCCL's P2P is switched off by {level_source} ({}): remove it from /etc/nccl.conf and the job's environment.",
                    ev.nccl
                        .iter()
                        .filter(|s| s.name == level_source)
                        .map(|s| format!("{}={} in {}", s.name, s.value, s.source))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Side::Guest,
                None,
                change,
            ));
            gate(
                GateVerdict::Refused,
                format!("{level_source} turns NCCL's P2P off"),
            )
        }
        (Some(w), _) => {
            let a = allowed.unwrap_or(PathLevel::Pxb);
            if w <= a {
                gate(
                    GateVerdict::Granted,
                    format!(
                        "{ignored}the farthest pair is {} apart and NCCL allows up to {} ({level_source})",
                        w.as_str(),
                        a.as_str()
                    ),
                )
            } else {
                let why = format!(
                    "{ignored}the farthest GPUs are {} apart and NCCL allows P2P only up to {} ({level_source}): it will copy through host memory (`via SHM`).",
                    w.as_str(),
                    a.as_str()
                );
                hints.push(nccl_level_hint(w, |set| {
                    format!(
                        "{why} Set `{set}` in /etc/nccl.conf (or the job's environment); no restart, the next NCCL process reads it."
                    )
                }));
                let same_bus = ev.gpus.windows(2).all(|p| p[0].root_bus == p[1].root_bus);
                // An emulated switch is a VM's remedy only.
                if w == PathLevel::Phb && same_bus && in_vm {
                    hints.push(switch_hint());
                }
                gate(GateVerdict::Refused, why)
            }
        }
    };

    // The host.
    let bar_end = ev.gpus.iter().filter_map(|g| g.bar_end).max();
    let host = match (ev.viommu.address_width_bits, bar_end) {
        (Some(w), Some(end)) if w < 64 && end > (1u64 << w) => {
            hints.push(viommu_hint(w, end));
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
    };

    let gates = Gates { driver, path, host };
    let verdict = gates.overall();
    P2p {
        verdict,
        expected,
        gpus: ev
            .gpus
            .iter()
            .map(|g| P2pGpuReport {
                bdf: g.addr,
                clique_capability: cap_word(g.clique),
                clique: match g.clique {
                    CliqueCap::Found { clique, .. } => Some(clique),
                    _ => None,
                },
                clique_offset: match g.clique {
                    CliqueCap::Found { offset, .. } => Some(offset),
                    _ => None,
                },
                config_bytes: g.config_bytes,
                numa_node: g.numa_node,
                vram_bar: g.vram_bar.map(|b| b.0),
                vram_bar_bytes: g.vram_bar.map(|b| b.1),
            })
            .collect(),
        one_clique,
        kvm: KvmReport {
            visible,
            cpuid_signature,
            cpuinfo_hypervisor: ev.hypervisor_flag,
            kernel_log: log_name,
        },
        pairs,
        p2p_path: worst,
        nccl: NcclReport {
            settings: ev
                .nccl
                .iter()
                .map(|s| NcclSettingReport {
                    name: s.name.clone(),
                    value: s.value.clone(),
                    source: s.source.clone(),
                })
                .collect(),
            p2p_level: if topo_file.is_some() { None } else { allowed },
            level_source: if topo_file.is_some() {
                "NCCL_TOPO_FILE"
            } else {
                level_source
            },
        },
        viommu: ViommuReport {
            present: ev.viommu.present(),
            tables: ev.viommu.tables.clone(),
            address_width_bits: ev.viommu.address_width_bits,
            iommu_units: ev.viommu.units.clone(),
            gpu_iommu_groups: ev.viommu.gpu_groups,
        },
        gates,
        hints,
        note: NOTE.into(),
        from_text: false,
    }
}

/// Said with every P2P section: no gate seen from the guest proves
/// delivery.
pub(crate) const NOTE: &str = "nothing before the driver loads proves P2P delivers the right data (a grant has given wrong data on GeForce cards under QEMU): after it loads, run a copy test that checks the destination (cuda-samples p2pBandwidthLatencyTest, or NCCL's all_reduce_perf with -c 1)";

/// A one-line size for the text form.
pub(crate) fn vram(g: &P2pGpuReport) -> String {
    match (g.vram_bar, g.vram_bar_bytes) {
        (Some(i), Some(b)) => format!("BAR {i} {}", human(b)),
        _ => "no 64-bit prefetchable BAR".into(),
    }
}
