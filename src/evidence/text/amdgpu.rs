//! amdgpu's resize of its VRAM BAR, followed to its outcome: a failed
//! resize (`Problem resizing BAR0 (-16).`, `Not enough PCI address space
//! for a large BAR.`) that the memory controller's start then fails on
//! with -ENODEV (`sw_init of IP block <gmc_v9_0> failed -19`), or that a
//! mapping of length 0 follows (`Event::EmptyMapping`), lost a BAR.

use super::replay::{DeviceSeen, Outcome};
use crate::model::pci::{PciAddress, VENDOR_AMD};
use crate::parse::kernel_log::Event;
use std::collections::BTreeMap;

/// -ENODEV, what `amdgpu_device_resize_fb_bar` returns for a lost BAR.
const ENODEV: u32 = 19;

/// What the log's amdgpu resize messages say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Resize {
    /// A resize failed at all (PCI evidence).
    pub(super) seen: bool,
    /// An AMD GPU the text does not name lost its VRAM or doorbell BAR.
    pub(super) lost_unnamed: bool,
}

/// Follows each failed resize to its device's memory controller start.
/// After a failed resize that start fails with -ENODEV only when the VRAM
/// or the doorbell BAR was left without an address (amdgpu_device.c
/// `amdgpu_device_resize_fb_bar`: -ENODEV when BAR 0 is unset or the
/// doorbells cannot be mapped): the resize lost a BAR. The message does
/// not say which of the two; BAR 0, the VRAM, is the one named. Another
/// error, or no failed resize of that device before, says nothing of the
/// BARs. A start cut before its error is taken as the resize's outcome.
pub(super) fn resize(events: &[Event], devs: &mut BTreeMap<PciAddress, DeviceSeen>) -> Resize {
    let mut out = Resize::default();
    // The failed resizes not yet followed, by device (`None`: unnamed).
    let mut pending: Vec<Option<PciAddress>> = Vec::new();
    for e in events {
        match e {
            Event::AmdgpuResizeProblem { bdf } | Event::AmdgpuLargeBar { bdf } => {
                if let Some(b) = bdf {
                    amd(devs.entry(*b).or_default());
                }
                if !pending.contains(bdf) {
                    pending.push(*bdf);
                }
                out.seen |= matches!(e, Event::AmdgpuResizeProblem { .. });
            }
            // A range of length 0 mapped after a failed resize: the
            // latest resize's VRAM BAR, emptied by its rollback and mapped
            // anyway (no -ENODEV follows then).
            Event::EmptyMapping => {
                let Some(resized) = pending.pop() else {
                    continue;
                };
                match resized {
                    Some(b) => lost(devs.entry(b).or_default()),
                    None => out.lost_unnamed = true,
                }
                out.seen = true;
            }
            Event::AmdgpuGmcFailed { bdf, errno } => {
                // Its own resize first, else one the text does not name;
                // an unnamed start takes the one resize there is.
                let at = match bdf {
                    Some(_) => pending
                        .iter()
                        .position(|p| p == bdf)
                        .or_else(|| pending.iter().position(Option::is_none)),
                    None => (pending.len() == 1).then_some(0),
                };
                let Some(at) = at else { continue };
                let resized = pending.remove(at);
                if errno.is_some_and(|n| n != ENODEV) {
                    continue;
                }
                match bdf.or(resized) {
                    Some(b) => lost(devs.entry(b).or_default()),
                    None => out.lost_unnamed = true,
                }
                out.seen = true;
            }
            _ => {}
        }
    }
    // An older kernel's message names no device (`[drm:amdgpu_device_
    // resize_fb_bar [amdgpu]] *ERROR* ...`): the one AMD GPU the text has,
    // where it has one (as NVIDIA's unnamed region goes to its one GPU).
    if out.lost_unnamed {
        let amd: Vec<PciAddress> = devs
            .iter()
            .filter(|(_, d)| d.driver_vendor == Some(VENDOR_AMD) && !d.is_bridge())
            .map(|(a, _)| *a)
            .collect();
        if let [one] = amd[..] {
            if let Some(d) = devs.get_mut(&one) {
                lost(d);
                out.lost_unnamed = false;
            }
        }
    }
    out
}

/// The resize lost the device's VRAM BAR.
fn lost(d: &mut DeviceSeen) {
    amd(d);
    d.resized = true;
    d.resize_fell_back = true;
    d.note(0, Outcome::Failed, None);
}

fn amd(d: &mut DeviceSeen) {
    d.driver_vendor = Some(VENDOR_AMD);
    d.vendor.get_or_insert(VENDOR_AMD);
}
