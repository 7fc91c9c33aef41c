//! Evidence for peer-to-peer (`check`): for each selected GPU its whole
//! config space (the clique capability is past the 64 bytes anyone may
//! read), its NUMA node and VRAM BAR; the KVM signature (CPUID in-process
//! on the live system, the `hypervisor` flag and the kernel log's
//! `Hypervisor detected:` line everywhere); NCCL's settings from
//! `/etc/nccl.conf` and the environment; a vIOMMU (ACPI DMAR/IVRS tables,
//! `/sys/class/iommu`, the GPUs' IOMMU groups).

use crate::evidence::Evidence;
use crate::model::layer::Layer;
use crate::model::p2p::CliqueCap;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::{CpuVendor, CpuidView};
use crate::parse::{self, nccl, pci_caps};
use crate::read::cpuid;
use crate::read::root::Root;
use crate::read::{iommu, sysfs};

/// One GPU as P2P sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct P2pGpu {
    pub addr: PciAddress,
    pub vendor: u16,
    pub class: u32,
    pub clique: CliqueCap,
    /// Bytes of config space read (256 or 4096 as root, 64 otherwise).
    pub config_bytes: usize,
    /// Nearest bridge first.
    pub upstream: Vec<PciAddress>,
    pub root_bus: Option<RootBus>,
    pub numa_node: Option<i64>,
    /// The largest 64-bit prefetchable BAR: the VRAM aperture peers write
    /// through.
    pub vram_bar: Option<(u8, u64)>,
    /// The end (last address + 1) of the highest BAR, for the vIOMMU's
    /// address width.
    pub bar_end: Option<u64>,
}

/// Where an `NCCL_*` setting was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NcclSetting {
    pub name: String,
    pub value: String,
    /// `etc/nccl.conf` (as on the system) or `environment`.
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Viommu {
    /// ACPI tables present: `DMAR` (Intel VT-d, QEMU's intel-iommu),
    /// `IVRS` (AMD-Vi).
    pub tables: Vec<String>,
    /// DMAR's host address width (byte 36, plus one): what the vIOMMU
    /// translates. Root-only to read.
    pub address_width_bits: Option<u32>,
    /// Entries of `/sys/class/iommu`.
    pub units: Vec<String>,
    /// Some GPU has an `iommu_group` link.
    pub gpu_groups: bool,
}

impl Viommu {
    pub(crate) fn present(&self) -> bool {
        !self.tables.is_empty() || !self.units.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct P2pEvidence {
    pub gpus: Vec<P2pGpu>,
    pub cpuid: CpuidView,
    /// `hypervisor` in /proc/cpuinfo's flags.
    pub hypervisor_flag: Option<bool>,
    /// `None`: no kernel log was read; `Some(None)`: a log without a
    /// `Hypervisor detected:` line; `Some(Some(name))`: the name it gave.
    pub log_hypervisor: Option<Option<String>>,
    pub cpu_vendor: Option<CpuVendor>,
    pub nccl: Vec<NcclSetting>,
    pub viommu: Viommu,
    pub warnings: Vec<String>,
    /// The management layer the guest's DMI names, whose syntax the
    /// hints give (`decide::syntax`).
    pub layer: Option<Layer>,
}

/// Reads what P2P needs beyond the BAR evidence. `log_hypervisor` is what
/// the kernel log the BAR check read says of the hypervisor
/// (`parse::platform::log_hypervisor_seen`). CPUID and the environment are
/// this machine's: read only when the root is the live system, so a
/// captured tree gives the same report anywhere.
pub(crate) fn gather(
    root: &Root,
    ev: &Evidence,
    log_hypervisor: Option<Option<String>>,
) -> P2pEvidence {
    let live = root.is_live();
    let cpuid = if live {
        cpuid::view(&cpuid::LiveCpuid)
    } else {
        CpuidView::NotRead
    };
    let env = if live {
        nccl_env(std::env::vars_os())
    } else {
        Vec::new()
    };
    gather_with(root, ev, log_hypervisor, cpuid, &env)
}

/// The environment's `NCCL_*` pairs. Not `std::env::vars`, which panics on
/// a variable that is not UTF-8 (any variable, NCCL's or not): a value
/// that is not is kept with its bad bytes replaced.
fn nccl_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(String, String)> {
    vars.filter_map(|(k, v)| {
        let k = k.into_string().ok()?;
        k.starts_with("NCCL_")
            .then(|| (k, v.to_string_lossy().into_owned()))
    })
    .collect()
}

/// `gather` with the CPU's answer and the environment given.
fn gather_with(
    root: &Root,
    ev: &Evidence,
    log_hypervisor: Option<Option<String>>,
    cpuid: CpuidView,
    env: &[(String, String)],
) -> P2pEvidence {
    let mut warnings = Vec::new();
    let gpus = ev
        .gpus
        .iter()
        .map(|g| {
            let (clique, config_bytes) = match sysfs::config(root, g.addr, 4096) {
                Ok(c) => (pci_caps::clique_cap(&c), c.len()),
                Err(e) => {
                    warnings.push(e);
                    (CliqueCap::Unreadable { bytes: 0 }, 0)
                }
            };
            let counted = g
                .bars
                .iter()
                .filter(|b| b.mem64 && b.prefetchable && b.size.is_some());
            let vram_bar = counted
                .max_by_key(|b| b.size)
                .and_then(|b| Some((b.index, b.size?)));
            let bar_end = g
                .bars
                .iter()
                .filter_map(|b| b.start?.checked_add(b.size?))
                .max();
            P2pGpu {
                addr: g.addr,
                vendor: g.vendor,
                class: g.class,
                clique,
                config_bytes,
                upstream: g.upstream.clone(),
                root_bus: g.root_bus,
                numa_node: sysfs::numa_node(root, g.addr),
                vram_bar,
                bar_end,
            }
        })
        .collect::<Vec<_>>();

    let mut nccl = Vec::new();
    if let Ok(t) = root.read_text("etc/nccl.conf") {
        for (name, value) in nccl::parse_conf(&t) {
            nccl.push(NcclSetting {
                name,
                value,
                source: "/etc/nccl.conf".into(),
            });
        }
    }
    for (name, value) in env.iter().filter(|(k, _)| k.starts_with("NCCL_")) {
        // The environment wins over the file (NCCL's initEnv).
        nccl.retain(|s| s.name != *name);
        nccl.push(NcclSetting {
            name: name.clone(),
            value: value.clone(),
            source: "environment".into(),
        });
    }

    let acpi = iommu::acpi_tables(root);
    let viommu = Viommu {
        address_width_bits: acpi
            .dmar_head
            .as_deref()
            .and_then(parse::iommu::dmar_address_width),
        tables: acpi.present,
        units: iommu::units(root),
        gpu_groups: gpus.iter().any(|g| iommu::has_group(root, g.addr)),
    };

    P2pEvidence {
        gpus,
        cpuid,
        hypervisor_flag: ev.cpu.hypervisor,
        log_hypervisor,
        cpu_vendor: ev.cpu.vendor,
        nccl,
        viommu,
        warnings,
        layer: ev.firmware.layer(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn a_variable_that_is_not_utf8_is_no_panic() {
        let bad = || OsString::from_vec(b"\xff".to_vec());
        let vars = vec![
            (OsString::from("BAD"), bad()),
            (OsString::from_vec(b"NCCL_\xff".to_vec()), bad()),
            (OsString::from("NCCL_P2P_LEVEL"), OsString::from("PHB")),
            (OsString::from("NCCL_DEBUG"), bad()),
        ];
        assert_eq!(
            nccl_env(vars.into_iter()),
            [
                ("NCCL_P2P_LEVEL".to_string(), "PHB".to_string()),
                ("NCCL_DEBUG".to_string(), "\u{fffd}".to_string())
            ]
        );
    }
}
