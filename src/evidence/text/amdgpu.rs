//! amdgpu's resize of its VRAM BAR, followed to its outcome: a failed
//! resize (`Problem resizing BAR0 (-16).`) that the memory controller's
//! start then fails on (`sw_init of IP block <gmc_v9_0> failed -19`) lost
//! a BAR.

use super::replay::{DeviceSeen, Outcome};
use crate::model::pci::{PciAddress, VENDOR_AMD};
use crate::parse::kernel_log::Event;
use std::collections::BTreeMap;

/// What the log's amdgpu resize messages say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Resize {
    /// A resize failed at all (PCI evidence).
    pub(super) seen: bool,
    /// An AMD GPU the text does not name lost its VRAM or doorbell BAR.
    pub(super) lost_unnamed: bool,
}

/// Follows each failed resize to the memory controller's start after it.
/// That start fails after a failed resize only when the VRAM or the
/// doorbell BAR was left without an address (amdgpu_device.c
/// `amdgpu_device_resize_fb_bar`: -ENODEV when BAR 0 is unset or the
/// doorbells cannot be mapped): the resize lost a BAR, which is BAR 0 of
/// the device the lines name. Without a failed resize before it, the start
/// failed for something else and says nothing of the BARs.
pub(super) fn resize(events: &[Event], devs: &mut BTreeMap<PciAddress, DeviceSeen>) -> Resize {
    let mut out = Resize::default();
    let mut pending: Option<Option<PciAddress>> = None;
    for e in events {
        match e {
            Event::AmdgpuResizeProblem { bdf } => {
                if let Some(b) = bdf {
                    amd(devs.entry(*b).or_default());
                }
                pending = Some(*bdf);
                out.seen = true;
            }
            Event::AmdgpuGmcFailed { bdf } => match pending.take().map(|r| bdf.or(r)) {
                Some(Some(b)) => {
                    let d = devs.entry(b).or_default();
                    amd(d);
                    d.resized = true;
                    d.resize_fell_back = true;
                    d.note(0, Outcome::Failed, None);
                }
                Some(None) => out.lost_unnamed = true,
                None => {}
            },
            _ => {}
        }
    }
    out
}

fn amd(d: &mut DeviceSeen) {
    d.driver_vendor = Some(VENDOR_AMD);
    d.vendor.get_or_insert(VENDOR_AMD);
}
