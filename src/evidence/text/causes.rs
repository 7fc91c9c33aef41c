//! Why a GPU driver gave up on a device, where it says: a reason that
//! names the device goes to it; one that names none goes to the probe
//! failure of its vendor's GPU that follows it (`Causes`).

use super::device_seen::DeviceSeen;
use crate::model::pci::{PciAddress, VENDOR_NVIDIA};
use crate::parse::kernel_log::{DriverCause, Event};
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

/// The NVIDIA devices the text names that are no bridge.
fn nvidia_gpus(devs: &BTreeMap<PciAddress, DeviceSeen>) -> Vec<PciAddress> {
    devs.iter()
        .filter(|(_, d)| d.vendor == Some(VENDOR_NVIDIA) && !d.is_bridge())
        .map(|(a, _)| *a)
        .collect()
}

/// NVIDIA counted one failed probe (`Event::NvidiaProbesFailed`) and the
/// text names one NVIDIA GPU whose probe failure it does not show: that
/// GPU's, as the driver core's line an excerpt left out would say.
pub(super) fn counted_failure(
    devs: &BTreeMap<PciAddress, DeviceSeen>,
    counted: u32,
) -> Option<Event> {
    match nvidia_gpus(devs).as_slice() {
        [one] if counted == 1 && !devs[one].probe_failed => Some(Event::ProbeFailed {
            bdf: *one,
            vendor: VENDOR_NVIDIA,
        }),
        _ => None,
    }
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
