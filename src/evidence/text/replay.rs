//! The kernel log replayed in order: what it says of each function and
//! each BAR so far. A failure after an assignment wins, and so does an
//! assignment after a failure (the kernel's realloc retry).

pub(super) use super::bar_seen::{BarSeen, Outcome};
use crate::model::pci::{is_bridge, PciAddress, VENDOR_AMD, VENDOR_NVIDIA};
use crate::parse::kernel_log::{
    DriverCause, Event, FailReason, LogResource, ProbeDoubt, ResourceRef,
};
use std::collections::BTreeMap;

/// What the text says of one function so far.
#[derive(Debug, Default, Clone)]
pub(super) struct DeviceSeen {
    pub(super) vendor: Option<u16>,
    pub(super) device: Option<u16>,
    pub(super) class: Option<u32>,
    pub(super) header_type: Option<u8>,
    /// A bridge window line names it: only bridges have windows.
    pub(super) has_windows: bool,
    /// A GPU driver is bound to it or complains about it (`nvidia
    /// 0000:...:`, NVIDIA's `NVRM:`, amdgpu's large BAR message): that
    /// driver's vendor.
    pub(super) driver_vendor: Option<u16>,
    /// A driver of no GPU, display or accelerator is bound to it.
    pub(super) other_driver: Option<String>,
    /// Its SR-IOV VF BARs that failed and were not assigned after (`VF
    /// BAR n`, old `BAR 7..12`), and whether the kernel said its VFs lack
    /// MMIO space: its virtual functions' space, not its own BARs.
    pub(super) vf_failed: std::collections::BTreeSet<u8>,
    pub(super) vf_space_short: bool,
    /// `Boot video device`, `vgaarb`: a VGA-class display device.
    pub(super) vga: bool,
    /// NVIDIA's regions (its own count) that `NVRM:` says have no size.
    pub(super) nvrm_zero: Vec<u8>,
    /// An `NVRM:` line named one of its regions.
    pub(super) nvrm_bar: bool,
    /// A GPU driver's probe of it failed (`probe of ... failed with error`).
    pub(super) probe_failed: bool,
    /// NVIDIA's driver could not bring it up (`RmInitAdapter failed`).
    pub(super) init_failed: bool,
    /// A GPU driver kept its BAR after a resize that fell back: the driver
    /// read the BAR's address.
    pub(super) resized: bool,
    /// A GPU driver said its BAR resize failed and fell back (`Failed to
    /// resize BAR`, `Small BAR device`).
    pub(super) resize_fell_back: bool,
    /// Its driver runs on it: it asked for its SR-IOV virtual functions,
    /// which the PCI core lets only a bound driver do.
    pub(super) bound: bool,
    /// NVIDIA's driver runs it (`Event::DriverRunning`): its memory BARs
    /// had addresses, though the text may show none of them.
    pub(super) running: bool,
    /// Its driver's line that makes a probe failure after it a doubt
    /// (`Event::DriverDoubt`), and the doubt its probe failure came after.
    pub(super) doubt: Option<ProbeDoubt>,
    pub(super) probe_doubt: Option<ProbeDoubt>,
    /// A probe failure of it came with no doubt before it (another boot's
    /// counts too): a complaint whatever a later one says.
    pub(super) probe_undoubted: bool,
    /// Its driver's probe failure, or its adapter's failed initialisation,
    /// came with a reason the driver names that is no BAR without an
    /// address (`DriverCause`).
    pub(super) probe_explained: bool,
    pub(super) init_explained: bool,
    /// NVIDIA's driver tried to resize this BAR and found no space
    /// (`Event::NvidiaResizeTried`): the BAR's outcome is the driver's
    /// fallback, which the text may not show.
    pub(super) resize_tried: Option<u8>,
    /// NVIDIA's driver refused a 64-bit BAR of it above 4 GiB: the BAR
    /// has an address.
    pub(super) above_4g: bool,
    /// Seconds since boot of its first timestamped enumeration line.
    pub(super) enumerated_at: Option<u64>,
    pub(super) bars: BTreeMap<u8, BarSeen>,
}

impl DeviceSeen {
    /// Its driver's probe failed with no reason named and no doubt before
    /// it (`ProbeDoubt`). Every probe failure sets `probe_undoubted` or
    /// `probe_doubt`.
    pub(super) fn probe_complaint(&self) -> bool {
        self.probe_undoubted && !self.probe_explained
    }

    /// The doubt its unexplained probe failure came after, where every
    /// failure of it did.
    pub(super) fn probe_doubted(&self) -> Option<ProbeDoubt> {
        self.probe_doubt
            .filter(|_| !self.probe_explained && !self.probe_undoubted)
    }

    pub(super) fn is_bridge(&self) -> bool {
        self.has_windows || is_bridge(self.class, self.header_type)
    }

    /// The driver kept the BARs it had (a resize that fell back): a
    /// memory BAR's failure before was for the larger size.
    fn kept_bars(&mut self) {
        for b in self.bars.values_mut().filter(|b| !b.io) {
            if b.outcome == Outcome::Failed {
                b.outcome = Outcome::Assigned;
            }
        }
    }

    pub(super) fn note(&mut self, index: u8, outcome: Outcome, r: Option<&LogResource>) {
        self.bars
            .entry(index)
            .or_insert_with(|| BarSeen::new(outcome))
            .merge(outcome, r);
    }
}

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
            e => {
                causes.follow(&mut devs, e);
                evidence |= driver_event(&mut devs, e);
            }
        }
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

/// A driver's reasons that name no device, each given to the probe failure
/// (or failed initialisation) of its vendor's GPU that follows it: the driver
/// prints its reason, then the driver core or the RM its failure. One left
/// at the end goes to the last such failure before it (an excerpt that
/// kept a later attempt's reason), or to the one NVIDIA GPU the text has.
#[derive(Default)]
struct Causes {
    pending: Vec<DriverCause>,
    /// The last probe failure of each vendor's GPU.
    last_probe: BTreeMap<u16, PciAddress>,
    last_init: Option<PciAddress>,
}

impl Causes {
    fn follow(&mut self, devs: &mut BTreeMap<PciAddress, DeviceSeen>, e: &Event) {
        let (bdf, at_probe, vendor) = match e {
            Event::ProbeFailed { bdf, vendor } => (*bdf, true, *vendor),
            Event::InitFailed { bdf } => (*bdf, false, VENDOR_NVIDIA),
            _ => return,
        };
        if at_probe {
            self.last_probe.insert(vendor, bdf);
        } else {
            self.last_init = Some(bdf);
        }
        let d = devs.entry(bdf).or_default();
        self.pending.retain(|c| {
            if c.at_probe() == at_probe && c.vendor() == vendor {
                explain(d, *c);
                false
            } else {
                true
            }
        });
    }

    fn finish(self, devs: &mut BTreeMap<PciAddress, DeviceSeen>) {
        for c in self.pending {
            let last = if c.at_probe() {
                self.last_probe.get(&c.vendor()).copied()
            } else {
                self.last_init
            };
            let of_vendor: Vec<PciAddress> = devs
                .iter()
                .filter(|(_, d)| d.vendor == Some(c.vendor()) && !d.is_bridge())
                .map(|(a, _)| *a)
                .collect();
            let to = last.or(match of_vendor.as_slice() {
                [one] => Some(*one),
                _ => None,
            });
            if let Some(a) = to {
                explain(devs.entry(a).or_default(), c);
            }
        }
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
                b.claim_only = reason == FailReason::CantClaim && resource.is_none();
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

/// The driver's reason, given to its device.
fn explain(d: &mut DeviceSeen, c: DriverCause) {
    let vendor = c.vendor();
    d.driver_vendor.get_or_insert(vendor);
    d.vendor.get_or_insert(vendor);
    if c.ends_probe_and_start() {
        d.probe_explained = true;
        d.init_explained = true;
    } else if c.at_probe() {
        d.probe_explained = true;
    } else {
        d.init_explained = true;
    }
    d.above_4g |= c == DriverCause::BarAbove4g;
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
