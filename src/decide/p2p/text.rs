//! The P2P gates judged from pasted text (`explain`): each gate's module
//! reads its part (`nvidia-smi topo -p2p r`, `topo -m` and NCCL's `via`
//! lines, QEMU's warning).

use super::{driver, host, path, Gates, KvmReport, P2p, ViommuReport, NOTE};
use crate::model::platform::CpuVendor;
use crate::parse::p2p_text::P2pText;

/// `cpu`: the CPU vendor the rest of the input showed, if any (NCCL's
/// default level depends on it for two GPUs).
pub(crate) fn from_text(t: &P2pText, expected: bool, cpu: Option<CpuVendor>) -> P2p {
    let mut hints = Vec::new();
    let driver = driver::from_text(t, &mut hints);
    let paths = path::from_text(t, cpu, &mut hints);
    let host = host::from_text(t, &mut hints);
    let gates = Gates {
        driver,
        path: paths.gate,
        host,
    };
    P2p {
        verdict: gates.overall(),
        expected,
        gpus: Vec::new(),
        one_clique: None,
        kvm: KvmReport {
            visible: None,
            cpuid_signature: None,
            cpuinfo_hypervisor: None,
            kernel_log: None,
        },
        pairs: paths.pairs,
        p2p_path: paths.worst,
        nccl: paths.nccl,
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
