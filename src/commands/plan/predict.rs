//! What the model predicts for the plan's GPUs, and why, in the report's
//! words: where the firmware places them, what the guest kernel adds,
//! or why the VM never reaches its kernel.

use super::{usage, PlanError, PlanOptions};
use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::prescribe::Model;
use crate::decide::sizing::{align_up, Block};
use crate::decide::window::proxmox;
use crate::decide::window::topology::parse_topology;
use crate::decide::window::{Attach, GpuBars, Machine, NoBoot, Setup};
use crate::model::size::human;
use crate::report::plan::{Placement, PlanGpu, Predicted, WindowSpan};

/// `--layout`: whose bus layout the VM has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// qemu-server's (decide/window/proxmox.rs).
    Proxmox,
}

/// `--layout`, checked against the machine and `--topology`: Proxmox puts
/// a hostpci on a root port (pcie=1) or behind pci.0/pci.2 (pcie=0) on
/// q35, on bus 0 or behind pci.2 on i440fx, whatever pcie says there.
pub(super) fn layout(o: &PlanOptions, machine: Machine) -> Result<Option<Layout>, PlanError> {
    let Some(l) = o.layout.as_deref() else {
        return Ok(None);
    };
    if l != "proxmox" {
        return Err(usage(format!("--layout {l:?}: expected proxmox")));
    }
    let t = o.topology.as_deref().and_then(parse_topology);
    match (machine, t) {
        (Machine::Q35, None | Some(Attach::RootPort) | Some(Attach::Bridge(_)))
        | (Machine::I440fx, None | Some(Attach::Bus0)) => Ok(Some(Layout::Proxmox)),
        (Machine::Q35, _) => Err(usage(
            "--layout proxmox on q35: --topology root-ports (pcie=1) or bridge (pcie=0)",
        )),
        (Machine::I440fx, _) => Err(usage(
            "--layout proxmox on pc: qemu-server puts every hostpci on bus 0 or pci.2 (--topology bus0)",
        )),
    }
}

/// The GPUs as the firmware sees them: their 64-bit prefetchable BARs, and
/// where they sit: with --layout proxmox where qemu-server puts hostpci
/// N, else --topology, else the configuration's, else the machine's
/// default (a root port each on q35, bus 0 on i440fx).
pub(super) fn firmware_gpus(
    o: &PlanOptions,
    setup: &Setup,
    gpus: &[PlanGpu],
) -> Result<Vec<GpuBars>, PlanError> {
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
    let layout = layout(o, setup.machine)?;
    let default_attach = match setup.machine {
        Machine::Q35 => Attach::RootPort,
        Machine::I440fx => Attach::Bus0,
    };
    Ok(gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let counted = || g.bars.iter().filter(|b| b.counted);
            let attach = match layout {
                Some(Layout::Proxmox) => proxmox::attach(
                    setup.machine == Machine::Q35,
                    flag_attach == Some(Attach::RootPort),
                    u32::try_from(i).unwrap_or(u32::MAX),
                ),
                None => flag_attach.or(g.attach).unwrap_or(default_attach),
            };
            GpuBars {
                bars: counted().map(|b| b.size).collect(),
                funcs: counted().map(|b| b.function).collect(),
                attach,
            }
        })
        .filter(|g| !g.bars.is_empty())
        .collect())
}

/// What the GPUs' root ports take packed together, largest alignment
/// first.
pub(super) fn span(firmware_gpus: &[GpuBars]) -> Option<u64> {
    let ports: Vec<Block> = firmware_gpus
        .iter()
        .filter_map(GpuBars::port_window)
        .collect();
    let mut sorted = ports.clone();
    sorted.sort_by_key(|b| std::cmp::Reverse(b.align));
    sorted
        .iter()
        .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
}

/// The prediction, with the window the guest kernel is offered.
pub(super) fn predict(
    m: &Model,
    setup: &Setup,
    firmware_gpus: &[GpuBars],
    realloc: bool,
    needed: Option<u64>,
) -> (Predicted, Option<WindowSpan>) {
    let n = firmware_gpus.len();
    let phys_bits = setup.phys_bits;
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
    match m.predict(setup, realloc) {
        Err(NoBoot::QemuRefuses { limit, end }) => (
            no_boot(format!(
                "QEMU will refuse to start: its 64-bit hole would end at {end:#x}, past {limit:#x}, the last address {phys_bits} bits reach (\"phys-bits too low\")"
            ), "qemu_refuses"),
            None,
        ),
        Err(NoBoot::QemuRejects { why }) => (
            no_boot(format!("QEMU will refuse to start: {why}"), "qemu_refuses"),
            None,
        ),
        Err(NoBoot::FirmwareHangs { end, width }) => (
            no_boot(format!(
                "OVMF will hang before the kernel starts: its aperture would end at {end:#x}, beyond the {width} address bits it uses"
            ), "firmware_hangs"),
            None,
        ),
        Ok(p) => {
            let boot = setup.boot(firmware_gpus).ok();
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
                .map(|b| m.placement(b, realloc))
                .unwrap_or_default();
            let wrapped = p.kind != DiagnosisKind::Ok && boot.as_ref().is_some_and(|b| {
                b.origin == crate::decide::window::OriginKind::SeabiosTop
                    && (b.aperture.start >= 1u64.checked_shl(phys_bits).unwrap_or(u64::MAX)
                        || b.aperture.start < crate::model::range::FOUR_GIB)
            });
            let collapsed = boot
                .as_ref()
                .filter(|b| b.crs_wrapped)
                .and_then(|b| b.crs)
                .map(|c| format!("; one of its windows ends exactly at 2^64, which QEMU counts, so the window QEMU offers the guest kernel wraps and is only its {} hole from {:#x}", human(c.size()), c.start))
                .unwrap_or_default();
            let why = if wrapped {
                format!("SeaBIOS moves its window below an e820 reservation it overlaps (QEMU's AMD HyperTransport range) by its own size, which takes it below zero or onto RAM: the BARs it maps there are unusable{collapsed} ({why})")
            } else if boot.as_ref().is_some_and(|b| b.nothing_left) {
                format!("OVMF rejected every device that asks for 64-bit space, and with nothing left there it gives up on the whole root bus: no device on it, not the disk controller either, is programmed ({why})")
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
    }
}
