//! Why a GPU driver gave up on a device, where it says: a reason that
//! names the device goes to it; one that names none goes to the probe
//! failure of its vendor's GPU that follows it (`Causes`).

use super::device_seen::{of_vendor, DeviceSeen};
use crate::model::pci::{PciAddress, VENDOR_NVIDIA};
use crate::parse::kernel_log::{DriverCause, Event, ProbeDoubt};
use std::collections::BTreeMap;

/// A driver's reasons that name no device, each given to the probe failure
/// (or failed initialisation) of its vendor's GPU that follows it: the driver
/// prints its reason, then the driver core or the RM its failure. One left
/// at the end goes to the last such failure before it (an excerpt that
/// kept a later attempt's reason), or to the one NVIDIA GPU the text has.
#[derive(Default)]
pub(super) struct Causes {
    pub(super) pending: Vec<DriverCause>,
    /// The last probe failure of each vendor's GPU.
    last_probe: BTreeMap<u16, PciAddress>,
    last_init: Option<PciAddress>,
}

impl Causes {
    pub(super) fn follow(&mut self, devs: &mut BTreeMap<PciAddress, DeviceSeen>, e: &Event) {
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

    pub(super) fn finish(self, devs: &mut BTreeMap<PciAddress, DeviceSeen>) {
        for c in self.pending {
            let last = if c.at_probe() {
                self.last_probe.get(&c.vendor()).copied()
            } else {
                self.last_init
            };
            let to = last.or(match of_vendor(devs, c.vendor()).as_slice() {
                [one] => Some(*one),
                _ => None,
            });
            if let Some(a) = to {
                explain(devs.entry(a).or_default(), c);
            }
        }
    }
}

/// NVIDIA counted one failed probe (`Event::NvidiaProbesFailed`) and the
/// text names one NVIDIA GPU whose probe failure it does not show: that
/// GPU's, as the driver core's line an excerpt left out would say, where
/// NVIDIA gave a reason to explain it (a cause or a doubt, `named` holding
/// the doubts said of an address). A count alone says nothing of a region,
/// and is not made one.
pub(super) fn counted_failure(
    devs: &BTreeMap<PciAddress, DeviceSeen>,
    counted: u32,
    causes: &Causes,
    named: &BTreeMap<PciAddress, ProbeDoubt>,
) -> Option<Event> {
    let mut gpus = of_vendor(devs, VENDOR_NVIDIA);
    gpus.extend(named.keys().filter(|a| !devs.contains_key(a)));
    let [one] = gpus.as_slice() else {
        return None;
    };
    let d = devs.get(one);
    let reason = named.contains_key(one)
        || d.is_some_and(|d| d.probe_explained || d.doubt.is_some())
        || causes
            .pending
            .iter()
            .any(|c| c.at_probe() && c.vendor() == VENDOR_NVIDIA);
    (counted == 1 && reason && !d.is_some_and(|d| d.probe_failed)).then_some(Event::ProbeFailed {
        bdf: *one,
        vendor: VENDOR_NVIDIA,
    })
}

/// The driver's reason, given to its device.
pub(super) fn explain(d: &mut DeviceSeen, c: DriverCause) {
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

/// The doubts kept aside until a probe failure they speak for: one said
/// without a device (`Event::UnnamedDoubt`), for the next probe failure of
/// its vendor's GPU; NVIDIA's reasons said of an address
/// (`ProbeDoubt::NvidiaReason`), for a probe failure of that address after
/// it. Neither names a device by itself (a suspend's or a removal's
/// message names one too).
#[derive(Default)]
pub(super) struct Doubts {
    unnamed: Option<(u16, ProbeDoubt)>,
    pub(super) named: BTreeMap<PciAddress, ProbeDoubt>,
}

impl Doubts {
    /// Keeps `e` if it is such a doubt.
    pub(super) fn keep(&mut self, e: &Event) -> bool {
        match e {
            Event::UnnamedDoubt { vendor, doubt } => self.unnamed = Some((*vendor, *doubt)),
            Event::DriverDoubt {
                bdf,
                doubt: doubt @ ProbeDoubt::NvidiaReason,
                ..
            } => {
                self.named.insert(*bdf, *doubt);
            }
            _ => return false,
        }
        true
    }

    /// Gives a probe failure the doubt kept for it.
    pub(super) fn apply(&mut self, devs: &mut BTreeMap<PciAddress, DeviceSeen>, e: &Event) {
        let Event::ProbeFailed { bdf, vendor } = e else {
            return;
        };
        let named = self.named.remove(bdf);
        let unnamed = self.unnamed.filter(|(v, _)| v == vendor).map(|(_, d)| d);
        if unnamed.is_some() {
            self.unnamed = None;
        }
        if let Some(doubt) = named.or(unnamed) {
            devs.entry(*bdf).or_default().doubt.get_or_insert(doubt);
        }
    }
}
