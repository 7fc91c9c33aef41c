//! Peer-to-peer: three gates, each with its verdict and its fix, one
//! module each, judged on a system's evidence (`decide`) or on pasted text
//! (`text`), and on the host before the VM starts for `plan --p2p`
//! (`plan`, the driver's gate and the lines that open it):
//!
//! - `driver`: NVIDIA's driver grants P2P under KVM only between GPUs in
//!   one GPUDirect clique, and only where it sees KVM's signature.
//! - `path`: NCCL uses P2P only up to its path level.
//! - `host`: QEMU must map every peer's BARs into the IOMMU.
//!
//! The verdicts are advice: the boot verdict stays the BARs' unless
//! `--expect-p2p` / `gpu_preflight.expect_p2p=1` asks otherwise.

use crate::decide::hint::Hint;
use crate::evidence::p2p::P2pEvidence;
use crate::model::p2p::{CliqueCap, GateVerdict, PathLevel};
use crate::model::pci::PciAddress;
use crate::model::size::human;
use serde::Serialize;

mod driver;
mod host;
mod path;
pub(crate) mod plan;
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

impl P2p {
    /// Peer-to-peer was expected (`--expect-p2p`,
    /// `gpu_preflight.expect_p2p=1`) and a gate refuses it: the check
    /// fails.
    pub(crate) fn fails_check(&self) -> bool {
        self.expected && self.verdict == GateVerdict::Refused
    }
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

/// The three gates on a system's evidence.
pub(crate) fn decide(ev: &P2pEvidence, expected: bool) -> P2p {
    let mut hints = Vec::new();
    let kvm = driver::kvm(ev);
    let driver = driver::judge(ev, &kvm, &mut hints);
    let paths = path::judge(ev, kvm.in_vm, &mut hints);
    let host = host::judge(ev, &mut hints);
    let gates = Gates {
        driver,
        path: paths.gate,
        host,
    };
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
        one_clique: driver::one_clique(ev),
        kvm: kvm.report,
        pairs: paths.pairs,
        p2p_path: paths.worst,
        nccl: paths.nccl,
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
