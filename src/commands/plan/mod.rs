//! `gpu-preflight plan`: on the host, before the VM starts, whether its GPUs
//! will fit, and the smallest configuration change if not. The same model
//! and prescriptions as `check` (`decide::window`, `decide::prescribe`),
//! fed from a Proxmox or libvirt configuration and the host's own sysfs
//! (`config`), or from flags; flags win over the configuration (`vm`).

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hints::{plan_hints, VmTarget};
use crate::decide::origin::model_origin;
use crate::decide::prescribe::Model;
use crate::decide::sizing::{align_up, packed_size, Block};
use crate::decide::window::topology::parse_topology;
use crate::decide::window::{Attach, GpuBars, Machine, NoBoot};
#[cfg(test)]
use crate::evidence::host::ASSUMED_HOST_PHYS_BITS;
use crate::evidence::host::{self, HostEvidence, Wanted};
use crate::model::size::human;
use crate::read::root::Root;
use crate::report::plan::{self, Placement, PlanCapacity, PlanReport, Predicted, WindowSpan};
use crate::report::HintReport;
use std::path::PathBuf;

mod config;
mod p2p;
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
    pub maxmem: Option<u64>,
    pub mem_slots: Option<u32>,
    /// 32-bit BARs of each GPU given by hand (`--bar32`).
    pub bar32: Vec<u64>,
    pub guest_phys_bits: Option<u32>,
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

/// The plan from what was read: no file is opened from here on.
fn decide(o: &PlanOptions, host: &HostEvidence) -> Result<PlanReport, PlanError> {
    let mut c = config::read(host)?;
    let mut warnings = std::mem::take(&mut c.warnings);
    let gpus = config::gpus(host, o, &c, &mut warnings)?;
    let (setup, vm) = vm::resolve(host, o, &c, &mut warnings)?;
    let phys_bits = setup.phys_bits;

    // Where the GPUs sit: --topology, else the configuration's, else the
    // machine's default (a root port each on q35, bus 0 on i440fx).
    let flag_attach = o
        .topology
        .as_deref()
        .map(|t| {
            parse_topology(t).ok_or_else(|| {
                usage(format!(
                    "--topology {t:?}: expected root-ports, bridge or bus0"
                ))
            })
        })
        .transpose()?;
    let default_attach = match setup.machine {
        Machine::Q35 => Attach::RootPort,
        Machine::I440fx => Attach::Bus0,
    };
    let firmware_gpus: Vec<GpuBars> = gpus
        .iter()
        .map(|g| {
            let counted = || g.bars.iter().filter(|b| b.counted);
            GpuBars {
                bars: counted().map(|b| b.size).collect(),
                funcs: counted().map(|b| b.function).collect(),
                attach: flag_attach.or(g.attach).unwrap_or(default_attach),
            }
        })
        .filter(|g| !g.bars.is_empty())
        .collect();
    if firmware_gpus.is_empty() {
        return Err(usage(format!(
            "{}: none of the devices has a 64-bit prefetchable BAR",
            c.source
        )));
    }
    let mut m = Model::new(setup.clone(), firmware_gpus.clone(), o.realloc)
        .ok_or_else(|| usage("a BAR size overflows"))?;
    m.assumed = Vec::new();

    let n = firmware_gpus.len();
    let needed = packed_size(&m.kernel_gpus);
    let span: Option<u64> = {
        let ports: Vec<Block> = firmware_gpus
            .iter()
            .filter_map(GpuBars::port_window)
            .collect();
        let mut sorted = ports.clone();
        sorted.sort_by_key(|b| std::cmp::Reverse(b.align));
        sorted
            .iter()
            .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
    };
    // A VM that will not get as far as its kernel: every GPU is lost.
    let no_boot = |why: String, kind: &'static str| Predicted {
        ok: false,
        diagnosis: None,
        unassigned_gpus: n,
        boots: false,
        why,
        firmware_unprogrammed_gpus: n,
        bus_abandoned: false,
        no_boot: Some(kind),
        placement: (0..n)
            .map(|gpu| Placement {
                gpu,
                firmware_programmed: false,
                kernel_assigned: false,
            })
            .collect(),
    };
    let (predicted, window) = match m.predict(&setup, o.realloc) {
        Err(NoBoot::QemuRefuses { limit, end }) => (
            no_boot(format!(
                "QEMU will refuse to start: its 64-bit hole would end at {end:#x}, past {limit:#x}, the last address {phys_bits} bits reach (\"phys-bits too low\")"
            ), "qemu_refuses"),
            None,
        ),
        Err(NoBoot::FirmwareHangs { end, width }) => (
            no_boot(format!(
                "OVMF will hang before the kernel starts: its aperture would end at {end:#x}, beyond the {width} address bits it uses"
            ), "firmware_hangs"),
            None,
        ),
        Ok(p) => {
            let boot = setup.boot(&firmware_gpus).ok();
            let window = boot.as_ref().and_then(|b| b.crs).map(|c| WindowSpan {
                start: c.start,
                end: c.end,
                size: c.size(),
            });
            let placed = boot.as_ref().map(|b| b.firmware_placed).unwrap_or(0);
            // What the guest kernel places itself, of what the firmware
            // left where it cannot claim it (decide/window/kernel.rs).
            let by_kernel = boot.as_ref().map_or(0, |b| b.placed.saturating_sub(b.firmware_placed));
            let aperture = boot
                .as_ref()
                .map(|b| format!("a {} window at {:#x}", human(b.aperture.size()), b.aperture.start))
                .unwrap_or_default();
            let aperture = if by_kernel > 0 {
                format!("{aperture}, and the guest kernel places {by_kernel} more itself")
            } else {
                aperture
            };
            let why = match p.kind {
                DiagnosisKind::Ok if placed >= n => format!("the firmware places all {n} GPUs in {aperture}"),
                DiagnosisKind::Ok if placed + by_kernel >= n => format!("the firmware places {placed} of {n} GPUs in {aperture}"),
                DiagnosisKind::Ok => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}; with pci=realloc the guest kernel places the rest"
                ),
                DiagnosisKind::FirmwareLeftUnassigned => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}; the window the guest kernel is offered has room for all, with pci=realloc in the guest"
                ),
                DiagnosisKind::PhysBitsTooSmall => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}: the rest need addresses beyond the vCPU's {phys_bits} bits"
                ),
                _ => format!("the firmware places {placed} of {n} GPUs in {aperture}: the GPUs need {} and the window is too small", needed.map(human).unwrap_or_default()),
            };
            let placement = boot
                .as_ref()
                .map(|b| m.placement(b, o.realloc))
                .unwrap_or_default();
            let wrapped = p.kind != DiagnosisKind::Ok && boot.as_ref().is_some_and(|b| {
                b.origin == crate::decide::window::OriginKind::SeabiosTop
                    && (b.aperture.start >= 1u64.checked_shl(phys_bits).unwrap_or(u64::MAX)
                        || b.aperture.start < crate::model::range::FOUR_GIB)
            });
            let why = if wrapped {
                format!("SeaBIOS moves its window below an e820 reservation it overlaps (QEMU's AMD HyperTransport range) by its own size, which takes it below zero or onto RAM: the BARs it maps there are unusable ({why})")
            } else if boot.as_ref().is_some_and(|b| b.bus_abandoned) {
                format!("OVMF cannot reject a device on the root bus and abandons its whole allocation: no GPU, and not the disk controller, is programmed ({why})")
            } else {
                why
            };
            (
                Predicted {
                    ok: p.kind == DiagnosisKind::Ok,
                    diagnosis: Some(p.kind),
                    unassigned_gpus: p.unassigned,
                    boots: true,
                    why,
                    firmware_unprogrammed_gpus: boot
                        .as_ref()
                        .map_or(0, |b| b.gpus.iter().filter(|g| !g.programmed).count()),
                    bus_abandoned: boot.as_ref().is_some_and(|b| b.bus_abandoned),
                    no_boot: None,
                    placement: placement
                        .iter()
                        .enumerate()
                        .map(|(gpu, (f, k))| Placement {
                            gpu,
                            firmware_programmed: *f,
                            kernel_assigned: *k,
                        })
                        .collect(),
                },
                window,
            )
        }
    };
    let target = c.target.clone().unwrap_or(VmTarget::Qemu);
    let hints: Vec<HintReport> = if predicted.ok {
        Vec::new()
    } else {
        let why = format!("Predicted: {}.", predicted.why);
        plan_hints(&m, &target, &why)
            .into_iter()
            .map(|h| HintReport {
                id: h.id,
                text: h.text,
                side: h.side,
                restart: h.restart,
                change: h.change,
                expect: h.expect,
                boots_to_ok: h.boots_to_ok,
            })
            .collect()
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
    if !predicted.ok && hints.is_empty() {
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
    let mut report = plan::new(vm, gpus, capacity, predicted, hints, warnings);
    if o.p2p {
        report.p2p = Some(p2p::plan(host, o, window_end));
    }
    Ok(report)
}
