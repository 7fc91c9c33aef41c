//! What NVIDIA's driver says of a GPU's regions (`NVRM: BARn is 0M`, a
//! failed probe), placed on the PCI BARs the text shows.

use super::device_seen::of_vendor;
use super::replay::{DeviceSeen, Outcome};
use crate::model::pci::{PciAddress, VENDOR_NVIDIA};
use crate::parse::kernel_log::Event;
use std::collections::BTreeMap;

/// What the driver's messages add to the replay.
pub(super) struct Nvidia {
    /// GPUs whose third region alone the driver found empty (see
    /// `Evidence::nvrm_third_region_only`).
    pub(super) third_region_only: Vec<PciAddress>,
    /// GPUs the driver complained of though every region has an address.
    pub(super) complaints: Vec<PciAddress>,
    /// GPUs whose failed BAR the text does not name, placed at the first
    /// region without an address (`Evidence::inferred`).
    pub(super) inferred: Vec<PciAddress>,
}

/// Names the regions `NVRM:` lines report without a readable device
/// (`nvrm_unnamed`: region, empty) after the one NVIDIA GPU the text has;
/// the empty ones of a text with none, or several, are failures of a GPU
/// it does not name (returned in words). A GPU whose driver refused a
/// 64-bit BAR above 4 GiB (an old driver's `This is a 64-bit BAR mapped
/// above 4GB`) and names no empty region had the BAR's address.
/// `nvrm_invalid`, the count of the driver's `... is invalid` headers: one
/// that no `BARn` line follows, in a text with no NVIDIA device, is a
/// failure of a GPU it does not name too (the header is printed only
/// when a region is invalid, nv_pci_probe()).
pub(super) fn name_unnamed(
    devs: &mut BTreeMap<PciAddress, DeviceSeen>,
    nvrm_unnamed: &[(u8, bool)],
    nvrm_invalid: usize,
) -> Vec<String> {
    let nvidia = of_vendor(devs, VENDOR_NVIDIA);
    let mut unnamed = Vec::new();
    for (bar, zero) in nvrm_unnamed {
        match nvidia.as_slice() {
            [one] => {
                let d = devs.get_mut(one).expect("listed");
                d.nvrm_bar = true;
                d.driver_vendor = Some(VENDOR_NVIDIA);
                if *zero {
                    d.nvrm_zero.push(*bar);
                } else {
                    d.resized = true;
                }
            }
            _ if *zero => unnamed.push(format!(
                "NVIDIA's driver: BAR{bar} is 0M, of a GPU whose address the text does not give"
            )),
            _ => {}
        }
    }
    let named = devs.values().filter(|d| d.nvrm_bar).count();
    let any_nvidia = devs.values().any(|d| {
        !d.is_bridge()
            && (d.vendor == Some(VENDOR_NVIDIA) || d.driver_vendor == Some(VENDOR_NVIDIA))
    });
    if nvrm_invalid > named + nvrm_unnamed.len() && !any_nvidia {
        unnamed.push(
            "NVIDIA's driver: a region of a GPU is invalid (its header, with neither the BARn line nor the GPU's address)"
                .to_string(),
        );
    }
    for d in devs.values_mut() {
        if d.above_4g && d.nvrm_zero.is_empty() {
            // The driver read the BAR's address and refused it.
            d.resized = true;
        }
    }
    unnamed
}

/// Places the driver's empty regions on the devices' BARs, and its
/// complaints that name no region; `nvrm_invalid` is the count of its
/// `... is invalid` headers.
pub(super) fn place(devs: &mut BTreeMap<PciAddress, DeviceSeen>, nvrm_invalid: usize) -> Nvidia {
    // NVIDIA's third region alone, where no PCI core line failed the
    // device: the sign of a BAR the VMM exposes non-prefetchable (see
    // `Evidence::nvrm_third_region_only`). A window too small fails the
    // large VRAM BAR (region 1) first, or with it.
    let nvrm_third_region_only: Vec<PciAddress> = devs
        .iter()
        .filter(|(_, d)| {
            !d.nvrm_zero.is_empty()
                && d.nvrm_zero.iter().all(|n| *n == 2)
                && !d.bars.values().any(|b| b.outcome == Outcome::Failed)
        })
        .map(|(a, _)| *a)
        .collect();
    for d in devs.values_mut() {
        for n in std::mem::take(&mut d.nvrm_zero) {
            if let Some(i) = nvrm_pci_index(d, n) {
                d.note(i, Outcome::Failed, None);
            }
        }
    }
    // The driver's complaint without the line that names the region: the
    // device the driver gave up on (or the one NVIDIA device the text
    // has) failed, at the first of its regions the text shows no address
    // for. When every region has one, the complaint is noted as what
    // stands between the device and `ok`.
    let named_by_nvrm = devs.values().filter(|d| d.nvrm_bar).count();
    let nvidia = of_vendor(devs, VENDOR_NVIDIA);
    let mut complaints = Vec::new();
    let mut inferred = Vec::new();
    for (addr, d) in devs.iter_mut() {
        let unnamed_nvrm = nvrm_invalid > named_by_nvrm && nvidia == [*addr] && !d.nvrm_bar;
        // NVIDIA's probe fails with -1 when a region is invalid; other
        // drivers' failures (amdgpu's -12) need not be a BAR's.
        // A failure after nouveau's missing firmware is a doubt
        // (`ProbeDoubt`), not an inferred region.
        let nvidia_probe = d.probe_complaint() && d.driver_vendor == Some(VENDOR_NVIDIA);
        if !(nvidia_probe || unnamed_nvrm) || d.bars.values().any(|b| b.outcome == Outcome::Failed)
        {
            continue;
        }
        match missing_region(d) {
            Some(i) => {
                d.note(i, Outcome::Failed, None);
                inferred.push(*addr);
            }
            None => complaints.push(*addr),
        }
    }
    Nvidia {
        third_region_only: nvrm_third_region_only,
        complaints,
        inferred,
    }
}

/// The PCI BAR that NVIDIA's region `n` is. The driver counts its memory
/// regions, skipping the upper half of a 64-bit BAR: region n is the n-th
/// memory BAR the text shows for the device, or, where the text shows
/// none, 0, 1, 3 for regions 0, 1, 2 (BAR 0 32-bit, BAR 1 and BAR 3 64-bit
/// on every NVIDIA GPU from G80 to Blackwell whose BARs the fixtures and
/// corpus show: tests/fixtures/h200-kvm-passthrough, corpus 19 and 36, and
/// the 2.6.27 enumeration of a G92 in corpus 20, where BAR 1 is 32-bit and
/// region 2 is still BAR 3). `None` past region 2: no such BAR.
fn nvrm_pci_index(d: &DeviceSeen, n: u8) -> Option<u8> {
    let memory: Vec<u8> = d
        .bars
        .iter()
        .filter(|(i, b)| **i < 6 && b.type_known && !b.io)
        .map(|(i, _)| *i)
        .collect();
    if memory.len() > usize::from(n) && memory.first() == Some(&0) {
        return Some(memory[usize::from(n)]);
    }
    [0, 1, 3].get(usize::from(n)).copied()
}

/// The first region of an NVIDIA-style layout (BAR 0, then two 64-bit
/// BARs: 1 and 3, or 2 and 4 where BAR 0 is itself 64-bit; see
/// `nvrm_pci_index`) the text shows no address for; `None` when each has
/// one.
fn missing_region(d: &DeviceSeen) -> Option<u8> {
    let bar0_64 = d.bars.get(&0).is_some_and(|b| b.mem64);
    let layout: [u8; 3] = if bar0_64 { [0, 2, 4] } else { [0, 1, 3] };
    layout.into_iter().find(|i| {
        d.bars
            .get(i)
            .is_none_or(|b| b.outcome == Outcome::Failed || (b.start.is_none() && !b.had_address))
    })
}

/// What the text shows of NVIDIA's resizes of BAR 1.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Resize {
    /// A resize was tried (PCI evidence).
    pub(super) seen: bool,
    /// The driver lost BAR 1 of a GPU the text does not name.
    pub(super) lost_unnamed: bool,
}

/// NVIDIA's resize of BAR 1 (`Event::NvidiaResizeTried`): an attempt,
/// whose outcome is the driver's fallback. `Event::NvidiaResizeLost` says
/// the fallback failed too; nv_resize_pcie_bars() prints it in the same
/// call as its device's attempt, so it is the latest attempt's, else the
/// one NVIDIA GPU's the text has, else a GPU's the text does not name.
pub(super) fn resize(events: &[Event], devs: &mut BTreeMap<PciAddress, DeviceSeen>) -> Resize {
    let mut out = Resize::default();
    let mut latest: Option<PciAddress> = None;
    // The probe's `Fatal Error while attempting to resize` follows the
    // driver's `FATAL` line of the same attempt: one loss.
    let mut just_lost = false;
    for e in events {
        match e {
            Event::NvidiaResizeTried { bdf, bar } => {
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(VENDOR_NVIDIA);
                d.vendor.get_or_insert(VENDOR_NVIDIA);
                d.resize_tried = Some(*bar);
                d.note(*bar, Outcome::Probed, None);
                latest = Some(*bdf);
                just_lost = false;
                out.seen = true;
            }
            Event::NvidiaResizeLost if latest.is_none() && just_lost => {}
            Event::NvidiaResizeLost => {
                just_lost = true;
                let nvidia = of_vendor(devs, VENDOR_NVIDIA);
                let one = latest.take().or(match nvidia[..] {
                    [a] => Some(a),
                    _ => None,
                });
                match one.and_then(|a| devs.get_mut(&a)) {
                    Some(d) => {
                        d.resize_tried = None;
                        d.note(1, Outcome::Failed, None);
                    }
                    None => out.lost_unnamed = true,
                }
                out.seen = true;
            }
            _ => {}
        }
    }
    out
}
