//! The kernel log replayed in order: what it says of each function and
//! each BAR so far. A failure after an assignment wins, and so does an
//! assignment after a failure (the kernel's realloc retry).

pub(super) use super::bar_seen::{BarSeen, Outcome};
use super::causes::{self, explain, Causes, Doubts};
pub(super) use super::device_seen::DeviceSeen;
use crate::model::pci::{PciAddress, VENDOR_AMD, VENDOR_NVIDIA};
use crate::parse::kernel_log::{Event, FailReason, LogResource, ResourceRef};
use std::collections::BTreeMap;

/// The functions the log names and what it says of them.
pub(super) struct Replay {
    pub(super) devs: BTreeMap<PciAddress, DeviceSeen>,
    /// The log holds PCI evidence at all.
    pub(super) evidence: bool,
    /// `NVRM: ... is invalid` headers: each says one region of one device
    /// is; the `BARn is 0M` line after it (when kept) says which.
    pub(super) nvrm_invalid: usize,
    /// `NVRM: BARn is ...` lines that name no device the text can read
    /// (cut, or an old driver's garbled tag): region, and whether empty.
    pub(super) nvrm_unnamed: Vec<(u8, bool)>,
    /// PCI core failures whose device the text cut off.
    pub(super) unnamed: Vec<(ResourceRef, Option<LogResource>)>,
}

/// Replays the log's events in order.
pub(super) fn replay(events: &[Event]) -> Replay {
    let mut devs: BTreeMap<PciAddress, DeviceSeen> = BTreeMap::new();
    let mut evidence = false;
    let mut nvrm_invalid = 0usize;
    let mut nvrm_unnamed = Vec::new();
    let mut causes = Causes::default();
    let mut unnamed = Vec::new();
    let mut nvidia_failed = 0;
    let mut doubts = Doubts::default();
    for e in events {
        match e {
            Event::Function {
                bdf,
                vendor,
                device,
                class,
                header_type,
                secs,
            } => {
                let d = devs.entry(*bdf).or_default();
                d.vendor = Some(*vendor);
                d.device = Some(*device);
                d.class = Some(*class);
                d.header_type = Some(*header_type);
                // The first enumeration with a time since boot.
                d.enumerated_at = d.enumerated_at.or(*secs);
                evidence = true;
            }
            Event::Probed {
                bdf,
                res: ResourceRef::Bar(i),
                resource,
            }
            | Event::Released {
                bdf,
                res: ResourceRef::Bar(i),
                resource,
            } => {
                devs.entry(*bdf)
                    .or_default()
                    .note(*i, Outcome::Probed, Some(resource));
                evidence = true;
            }
            // A window or a VF BAR sized: PCI evidence, no BAR of the
            // device's own.
            Event::Probed { bdf, res, .. } | Event::Released { bdf, res, .. } => {
                let d = devs.entry(*bdf).or_default();
                d.has_windows |= *res == ResourceRef::BridgeWindow;
                evidence = true;
            }
            Event::AssignFailed {
                bdf,
                res,
                resource,
                reason,
            } => {
                failed(&mut devs, *bdf, *res, resource.as_ref(), *reason);
                evidence = true;
            }
            Event::BridgeProgrammed { bdf, secondary } => {
                settle_claims(&mut devs, *bdf, *secondary);
                evidence = true;
            }
            Event::Assigned { bdf, res, resource } => {
                let d = devs.entry(*bdf).or_default();
                match res {
                    ResourceRef::Bar(i) => d.note(*i, Outcome::Assigned, Some(resource)),
                    ResourceRef::VfBar(n) => {
                        d.vf_failed.remove(n);
                    }
                    ResourceRef::BridgeWindow => d.has_windows = true,
                    _ => {}
                }
                evidence = true;
            }
            Event::NvrmInvalid => {
                nvrm_invalid += 1;
                evidence = true;
            }
            Event::NvrmBar {
                bdf: None,
                bar,
                zero,
            } => {
                nvrm_unnamed.push((*bar, *zero));
                evidence = true;
            }
            Event::DriverCause { bdf, cause } => {
                match bdf {
                    Some(b) => explain(devs.entry(*b).or_default(), *cause),
                    None => causes.pending.push(*cause),
                }
                evidence = true;
            }
            Event::UnnamedFailed { res, resource } => {
                unnamed.push((*res, *resource));
                evidence = true;
            }
            Event::WindowCannotFit { parent, child, .. } => {
                devs.entry(*parent).or_default().has_windows = true;
                devs.entry(*child).or_default().has_windows = true;
                evidence = true;
            }
            Event::WindowShrunk { bdf, .. } | Event::WindowRelaxed { bdf, .. } => {
                devs.entry(*bdf).or_default().has_windows = true;
                evidence = true;
            }
            Event::SriovSpace { bdf } => {
                let d = devs.entry(*bdf).or_default();
                d.bound = true;
                d.vf_space_short = true;
                evidence = true;
            }
            Event::NvidiaProbesFailed { count } => nvidia_failed = nvidia_failed.max(*count),
            e if doubts.keep(e) => {}
            e => {
                doubts.apply(&mut devs, e);
                causes.follow(&mut devs, e);
                evidence |= driver_event(&mut devs, e);
            }
        }
    }
    if let Some(e) = causes::counted_failure(&devs, nvidia_failed, &causes, &doubts.named) {
        doubts.apply(&mut devs, &e);
        causes.follow(&mut devs, &e);
        driver_event(&mut devs, &e);
    }
    causes.finish(&mut devs);
    Replay {
        devs,
        evidence,
        nvrm_invalid,
        nvrm_unnamed,
        unnamed,
    }
}

/// A resource the log says failed (`Event::AssignFailed`).
fn failed(
    devs: &mut BTreeMap<PciAddress, DeviceSeen>,
    bdf: PciAddress,
    res: ResourceRef,
    resource: Option<&LogResource>,
    reason: FailReason,
) {
    // The assignment pass that failed here placed the bus's other BARs
    // too: a claim of the firmware's address lost before it (2.6's `Cannot
    // allocate resource region`) that no failure line of this pass names
    // got an address; a line of its own after this one fails it again
    // (corpus 425: a SCSI controller's function 1 fails, function 0's
    // claim is settled).
    if reason == FailReason::FailedToAssign {
        settle_claims(devs, bdf, bdf.bus);
    }
    let d = devs.entry(bdf).or_default();
    match res {
        ResourceRef::Bar(i) => {
            d.note(i, Outcome::Failed, resource);
            if let Some(b) = d.bars.get_mut(&i) {
                b.claim_only = reason == FailReason::ClaimRefused && resource.is_none();
            }
            // `can't claim` with an address: the firmware had programmed
            // one, which the kernel refused.
            if reason == FailReason::CantClaim && resource.is_some_and(|r| r.start.is_some()) {
                if let Some(b) = d.bars.get_mut(&i) {
                    b.had_address = true;
                }
            }
        }
        ResourceRef::BridgeWindow => d.has_windows = true,
        ResourceRef::VfBar(n) => {
            d.vf_failed.insert(n);
        }
        _ => {}
    }
}

/// 2.6.2x's assignment pass has given the devices of `bdf`'s secondary
/// bus their BARs and printed each failure before the bridge's line
/// (`Event::BridgeProgrammed`): a BAR whose firmware address the claim
/// refused, with no failure since, is assigned at an address the log does
/// not say.
fn settle_claims(devs: &mut BTreeMap<PciAddress, DeviceSeen>, bdf: PciAddress, secondary: u8) {
    let below = devs
        .iter_mut()
        .filter(|(a, _)| a.domain == bdf.domain && a.bus == secondary);
    for (_, d) in below {
        for b in d.bars.values_mut() {
            if b.claim_only && b.outcome == Outcome::Failed {
                b.outcome = Outcome::Assigned;
                b.start = None;
                b.claim_only = false;
            }
        }
    }
}

/// What a GPU driver's message says of its device; `false` for an event
/// that is not one.
fn driver_event(devs: &mut BTreeMap<PciAddress, DeviceSeen>, e: &Event) -> bool {
    match e {
        Event::NvrmBar {
            bdf: Some(bdf),
            bar,
            zero,
        } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(VENDOR_NVIDIA);
            d.vendor.get_or_insert(VENDOR_NVIDIA);
            d.nvrm_bar = true;
            // A region with a size has an address, one the driver
            // could not use (an old driver's BAR above 4 GiB).
            d.resized |= !*zero;
            // Placed once the device's own BARs are known (below).
            if *zero {
                d.nvrm_zero.push(*bar);
            }
        }
        Event::GpuDriver { bdf, vendor } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(*vendor);
            d.vendor.get_or_insert(*vendor);
        }
        Event::VgaDevice { bdf } => {
            devs.entry(*bdf).or_default().vga = true;
        }
        Event::OtherDriver { bdf, name } => {
            devs.entry(*bdf)
                .or_default()
                .other_driver
                .get_or_insert_with(|| name.clone());
        }
        Event::AmdgpuLargeBar { bdf: Some(bdf) } => {
            // amdgpu could not resize its VRAM BAR and kept the one it
            // had: the device is an AMD GPU, and nothing failed.
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(VENDOR_AMD);
            d.vendor.get_or_insert(VENDOR_AMD);
            d.resized = true;
            d.kept_bars();
        }
        Event::DriverMapped { bdf, fell_back } => {
            // A resize that fell back: the `can't assign` before was
            // for the larger size, and the old BAR stayed in place. One
            // that took: the BAR is assigned at the larger size.
            let d = devs.entry(*bdf).or_default();
            d.resized = true;
            d.resize_fell_back |= *fell_back;
            d.kept_bars();
        }
        Event::ProbeFailed { bdf, vendor } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(*vendor);
            d.vendor.get_or_insert(*vendor);
            d.probe_failed = true;
            // A doubt speaks for the one probe failure after it.
            match d.doubt.take() {
                Some(doubt) => d.probe_doubt = Some(doubt),
                None => d.probe_undoubted = true,
            }
        }
        Event::DriverBar {
            bdf,
            vendor,
            bar,
            start,
            size,
        } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(*vendor);
            d.vendor.get_or_insert(*vendor);
            let b = d
                .bars
                .entry(*bar)
                .or_insert_with(|| BarSeen::new(Outcome::Assigned));
            b.outcome = Outcome::Assigned;
            b.start = Some(*start);
            b.size.get_or_insert(*size);
        }
        Event::DriverRunning { bdf, vendor } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(*vendor);
            d.vendor.get_or_insert(*vendor);
            d.running = true;
        }
        Event::DriverDoubt { bdf, vendor, doubt } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(*vendor);
            d.vendor.get_or_insert(*vendor);
            d.doubt = Some(*doubt);
        }
        Event::InitFailed { bdf } => {
            let d = devs.entry(*bdf).or_default();
            d.driver_vendor = Some(VENDOR_NVIDIA);
            d.vendor.get_or_insert(VENDOR_NVIDIA);
            d.init_failed = true;
        }
        _ => return false,
    }
    true
}
