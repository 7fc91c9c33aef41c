//! `gpu-preflight plan`: on the host, before the VM starts, whether its GPUs
//! will fit, and the smallest configuration change if not. The same model
//! and prescriptions as `check` (`decide::window`, `decide::prescribe`),
//! fed from a Proxmox or libvirt configuration and the host's own sysfs
//! (`config`), or from flags; flags win over the configuration (`vm`).

use crate::decide::hint::Hint;
use crate::decide::hints::{plan_hints, VmTarget};
use crate::decide::origin::model_origin;
use crate::decide::p2p;
use crate::decide::prescribe::Model;
use crate::decide::sizing::packed_size;
use crate::decide::summary;
use crate::evidence::host::{self, HostEvidence, VmConfig, Wanted};
use crate::parse::release::qemu_version;
use crate::read::root::Root;
use crate::report::plan::{self, PlanCapacity, PlanReport};
use config::Config;
use std::path::PathBuf;

mod config;
mod predict;
mod pve;
#[cfg(test)]
mod tests;
mod vm;

#[derive(Debug, Clone, Default)]
pub(crate) struct PlanOptions {
    pub root: PathBuf,
    pub proxmox: Option<String>,
    pub libvirt: Option<PathBuf>,
    pub gpu: Vec<String>,
    pub gpus: Option<usize>,
    /// `--bar SIZE[@FN]`: a size and the GPU's function it sits in.
    pub bar: Vec<(u64, u8)>,
    pub ram: Option<u64>,
    /// The guest kernel's `mem=`.
    pub guest_mem: Option<u64>,
    /// `ovmf`, `ovmf:2022.11`, `seabios`, `seabios:1.16.3`.
    pub firmware: Option<String>,
    /// `q35` or `pc`.
    pub machine: Option<String>,
    pub phys_bits: Option<u32>,
    pub cpu_flags: Vec<String>,
    /// A CPU model, or `host`.
    pub cpu: Option<String>,
    /// `amd` or `intel`: the vendor the vCPU reports (under KVM, the
    /// host's).
    pub cpu_vendor: Option<String>,
    pub hole64: Option<u64>,
    pub mmio64: Option<u64>,
    pub realloc: bool,
    pub empty_ports: Option<usize>,
    /// Also the driver's P2P gate and the clique lines (`--p2p`).
    pub p2p: bool,
    /// `7.2`, `10.0.2`: the QEMU release.
    pub qemu: Option<String>,
    /// `root-ports`, `bridge`, `bus0`.
    pub topology: Option<String>,
    /// `proxmox`: qemu-server's buses, the GPUs hostpci0, 1, ...
    pub layout: Option<String>,
    /// Further devices' 64-bit prefetchable BARs (`--device64`).
    pub device64: Vec<u64>,
    pub maxmem: Option<u64>,
    pub mem_slots: Option<u32>,
    /// 32-bit BARs of each GPU given by hand (`--bar32`).
    pub bar32: Vec<u64>,
    pub guest_phys_bits: Option<u32>,
    /// `kvm` or `tcg`: how QEMU runs the vCPU.
    pub accel: Option<String>,
}

/// Why there is no plan.
#[derive(Debug)]
pub(crate) enum PlanError {
    /// Bad arguments or a malformed configuration: exit 2.
    Usage(String),
    /// An input that cannot be read: exit 3.
    Unreadable(String),
}

pub(super) fn usage(msg: impl Into<String>) -> PlanError {
    PlanError::Usage(msg.into())
}

/// The plan: the host read once (`evidence::host`), then decided on.
pub(crate) fn run(o: &PlanOptions) -> Result<PlanReport, PlanError> {
    if o.proxmox.is_some() && o.libvirt.is_some() {
        return Err(usage("give --proxmox or --libvirt, not both"));
    }
    let host = gather(o);
    decide(o, &host)
}

/// Everything the plan reads, before it decides anything.
fn gather(o: &PlanOptions) -> HostEvidence {
    host::gather(
        &Root::new(&o.root),
        Wanted {
            proxmox: o.proxmox.as_deref(),
            libvirt: o.libvirt.as_deref(),
            gpu: &o.gpu,
            by_hand: o.gpus.is_some() || !o.bar.is_empty(),
            p2p: o.p2p,
        },
    )
}

/// What the configuration `--proxmox` or `--libvirt` names says, or
/// nothing (flags): config.rs reads a libvirt domain, pve.rs a Proxmox
/// VM.
fn read_config(host: &HostEvidence) -> Result<Config, PlanError> {
    match host
        .vm
        .as_ref()
        .map_err(|e| PlanError::Unreadable(e.clone()))?
    {
        VmConfig::Proxmox(p) => pve::from_proxmox(p, host),
        VmConfig::Libvirt(l) => config::from_libvirt(l, host),
        VmConfig::None => Ok(Config {
            source: "flags".into(),
            ..Config::default()
        }),
    }
}

/// The plan from what was read: no file is opened from here on.
fn decide(o: &PlanOptions, host: &HostEvidence) -> Result<PlanReport, PlanError> {
    let mut c = read_config(host)?;
    let mut warnings = std::mem::take(&mut c.warnings);
    let gpus = config::gpus(host, o, &c, &mut warnings)?;
    // --layout proxmox: the root ports qemu-server makes that no hostpci
    // takes, unless --empty-ports says.
    if o.layout.as_deref() == Some("proxmox") && o.empty_ports.is_none() {
        let machine = o
            .machine
            .as_deref()
            .or(c.machine.as_deref())
            .unwrap_or("q35");
        let pcie = o.topology.as_deref() == Some("root-ports");
        c.empty_ports = Some(crate::decide::window::proxmox::empty_ports(
            machine.contains("q35"),
            (0..gpus.len()).map(|i| (pcie, u32::try_from(i).unwrap_or(u32::MAX))),
        ));
    }
    let (setup, vm) = vm::resolve(host, o, &c, &mut warnings)?;

    let firmware_gpus = predict::firmware_gpus(o, &setup, &gpus)?;
    if firmware_gpus.is_empty() {
        return Err(usage(format!(
            "{}: none of the devices has a 64-bit prefetchable BAR",
            c.source
        )));
    }
    let mut m = Model::new(setup.clone(), firmware_gpus.clone(), o.realloc)
        .ok_or_else(|| usage("a BAR size overflows"))?;
    m.assumed = Vec::new();

    let needed = packed_size(&m.need);
    let span = predict::span(&firmware_gpus);
    let (predicted, window) = predict::predict(&m, &setup, &firmware_gpus, o.realloc, needed);
    let target = c.target.clone().unwrap_or(VmTarget::Qemu);
    let hints: Vec<Hint> = if predicted.ok {
        Vec::new()
    } else {
        plan_hints(&m, &target, &format!("Predicted: {}.", predicted.why))
    };
    // Under KVM a vCPU with more address bits than the host's can be
    // given addresses the host cannot map.
    if let Some(host_bits) = host.host_phys_bits() {
        for h in &hints {
            if let Some(b) = h.change.phys_bits_min {
                if b > host_bits {
                    warnings.push(format!("[{}] asks for {b} address bits and this host's CPU has {host_bits}: under KVM the guest could be given addresses the host cannot reach; run the VM on a host with more, or with fewer or smaller GPUs", h.id));
                }
            }
        }
    }
    // A VM QEMU does not start for an argument it rejects has its reason.
    let rejected = matches!(
        m.predict(&setup, o.realloc),
        Err(crate::decide::window::NoBoot::QemuRejects { .. })
    );
    if !predicted.ok && hints.is_empty() && !rejected {
        warnings.push("no configuration change the model knows makes every GPU fit: fewer GPUs, smaller BARs (Resizable BAR off on the host), or a host CPU with more address bits".into());
    }
    m.assumed.clear();
    let capacity = PlanCapacity {
        needed_bytes: needed,
        firmware_span_bytes: span,
        window_origin: model_origin(&m),
        window,
    };
    let window_end = capacity.window.as_ref().map(|w| w.end);
    let verdict = summary::predicted(predicted.ok);
    let mut report = plan::new(verdict, vm, gpus, capacity, predicted, hints, warnings);
    if o.p2p {
        // --qemu was checked when the VM was resolved.
        let qemu = o.qemu.as_deref().and_then(qemu_version);
        report.p2p = Some(p2p::plan::plan(host, &o.gpu, qemu, window_end));
    }
    Ok(report)
}
