//! The P2P gates judged from pasted text (`explain`).

use super::{
    clique_hint, default_level, gate, kvm_hint, nccl_level_hint, Gates, KvmReport, NcclReport,
    NcclSettingReport, P2p, ViommuReport, NOTE,
};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::model::p2p::{GateVerdict, PathLevel};
use crate::model::platform::CpuVendor;
use crate::parse::nccl::{level_setting, LevelSetting};
use crate::parse::p2p_text::P2pText;
use std::collections::BTreeSet;

/// The same gates from pasted text (`explain`): `nvidia-smi topo -p2p r`
/// is the driver's own answer, `topo -m` the paths, NCCL's `via` lines
/// what it did, QEMU's warning the host's refusal. `cpu`: the CPU vendor
/// the rest of the input showed, if any (NCCL's default level depends on
/// it for two GPUs).
pub(crate) fn from_text(t: &P2pText, expected: bool, cpu: Option<CpuVendor>) -> P2p {
    let mut hints = Vec::new();
    let refused: Vec<&(u32, u32, bool)> = t.p2p_read.iter().filter(|p| !p.2).collect();
    let driver = if !refused.is_empty() {
        let why = format!(
            "the driver reports P2P not supported between {} GPU pair(s) (`nvidia-smi topo -p2p r`): in a KVM guest, the GPUs lack one shared GPUDirect clique, or KVM is hidden.",
            refused.len() / 2 + refused.len() % 2
        );
        // The GPUs the matrix names, counted: their indices are the
        // paste's and may be any number.
        let named: BTreeSet<u32> = t.p2p_read.iter().flat_map(|p| [p.0, p.1]).collect();
        hints.push(clique_hint(named.len().max(2), &why));
        hints.push(kvm_hint());
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
    };
    let worst = t.paths.iter().map(|p| p.2).max();
    let allowed = match t
        .nccl_level
        .as_deref()
        .map(|l| level_setting(None, Some(l)))
    {
        Some(LevelSetting::Level(l)) => Some(l),
        Some(LevelSetting::Off) => None,
        // NCCL's default: PXB, SYS for up to two GPUs on an AMD CPU; not
        // known for two GPUs when the input does not show the CPU.
        _ => {
            let gpus: BTreeSet<u32> = t.paths.iter().flat_map(|p| [p.0, p.1]).collect();
            match cpu {
                Some(_) => Some(default_level(cpu, gpus.len())),
                None if gpus.len() > 2 => Some(PathLevel::Pxb),
                None => None,
            }
        }
    };
    let default_unknown = allowed.is_none() && t.nccl_level.is_none();
    let level_source = if t.nccl_level.is_some() {
        "NCCL_P2P_LEVEL"
    } else {
        "default"
    };
    let path = if t.nccl_shm > 0 && t.nccl_p2p == 0 {
        let why = format!(
            "NCCL connected {} channel(s) through host memory (`via SHM`) and none `via P2P`.",
            t.nccl_shm
        );
        // Through host memory: whatever the CPU, the level did not reach.
        let reached = if default_unknown {
            Some(PathLevel::Pxb)
        } else {
            allowed
        };
        if let Some(w) = worst.filter(|w| reached.is_some_and(|a| *w > a)) {
            hints.push(nccl_level_hint(w, |set| {
                format!("{why} The GPUs are {} apart and NCCL allows up to {}: set `{set}` in /etc/nccl.conf or the job's environment.", w.as_str(), reached.map(PathLevel::as_str).unwrap_or("-"))
            }));
        }
        gate(GateVerdict::Refused, why)
    } else if t.nccl_p2p > 0 {
        gate(
            GateVerdict::Granted,
            format!("NCCL connected {} channel(s) `via P2P`", t.nccl_p2p),
        )
    } else if let Some(w) = worst.filter(|w| default_unknown && *w > PathLevel::Pxb) {
        gate(
            GateVerdict::Unknown,
            format!(
                "the farthest GPUs are {} apart (`nvidia-smi topo -m`): NCCL's default allows that for two GPUs on an AMD CPU (SYS), not on others (PXB), and the input does not show the CPU",
                w.as_str()
            ),
        )
    } else if let Some(w) = worst.filter(|w| default_unknown && *w <= PathLevel::Pxb) {
        gate(
            GateVerdict::Granted,
            format!(
                "the farthest pair is {} apart and NCCL allows at least PXB (default)",
                w.as_str()
            ),
        )
    } else if let (Some(w), Some(a)) = (worst, allowed) {
        if w <= a {
            gate(
                GateVerdict::Granted,
                format!(
                    "the farthest pair is {} apart and NCCL allows up to {} ({level_source})",
                    w.as_str(),
                    a.as_str()
                ),
            )
        } else {
            let why = format!("the farthest GPUs are {} apart (`nvidia-smi topo -m`) and NCCL allows P2P only up to {} ({level_source}).", w.as_str(), a.as_str());
            hints.push(nccl_level_hint(w, |set| {
                format!("{why} Set `{set}` in /etc/nccl.conf or the job's environment.")
            }));
            gate(GateVerdict::Refused, why)
        }
    } else {
        gate(
            GateVerdict::Unknown,
            "no `nvidia-smi topo -m` matrix or NCCL `via` lines in the input",
        )
    };
    let host = if t.qemu_bar_warning {
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
    } else {
        gate(GateVerdict::Unknown, "no QEMU log in the input")
    };
    let gates = Gates { driver, path, host };
    let verdict = gates.overall();
    P2p {
        verdict,
        expected,
        gpus: Vec::new(),
        one_clique: None,
        kvm: KvmReport {
            visible: None,
            cpuid_signature: None,
            cpuinfo_hypervisor: None,
            kernel_log: None,
        },
        pairs: Vec::new(),
        p2p_path: worst,
        nccl: NcclReport {
            settings: t
                .nccl_level
                .iter()
                .map(|l| NcclSettingReport {
                    name: "NCCL_P2P_LEVEL".into(),
                    value: l.clone(),
                    source: "log".into(),
                })
                .collect(),
            p2p_level: allowed,
            level_source,
        },
        viommu: ViommuReport {
            present: false,
            tables: Vec::new(),
            address_width_bits: None,
            iommu_units: Vec::new(),
            gpu_iommu_groups: false,
        },
        gates,
        hints,
        note: NOTE.into(),
        from_text: true,
    }
}
