//! What the text says of one function so far, as the log is replayed
//! (`replay`).

use super::bar_seen::{BarSeen, Outcome};
use crate::model::pci::{is_bridge, PciAddress};
use crate::parse::kernel_log::{LogResource, ProbeDoubt};
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
    pub(super) fn kept_bars(&mut self) {
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

/// The devices of `vendor` the text names that are no bridge.
pub(super) fn of_vendor(devs: &BTreeMap<PciAddress, DeviceSeen>, vendor: u16) -> Vec<PciAddress> {
    devs.iter()
        .filter(|(_, d)| d.vendor == Some(vendor) && !d.is_bridge())
        .map(|(a, _)| *a)
        .collect()
}

/// A VGA function the text names without its vendor: function 0 of a
/// card whose other function (its audio) has ids is that vendor's.
pub(super) fn vga_vendors(devs: &mut BTreeMap<PciAddress, DeviceSeen>) {
    let siblings: Vec<(PciAddress, u16)> = devs
        .iter()
        .filter_map(|(a, d)| Some((*a, d.vendor?)))
        .collect();
    for (addr, d) in devs.iter_mut() {
        if d.vga && d.vendor.is_none() {
            d.vendor = siblings
                .iter()
                .find(|(s, _)| {
                    s.domain == addr.domain && s.bus == addr.bus && s.device == addr.device
                })
                .map(|(_, v)| *v);
        }
    }
}

/// The devices not taken for GPUs that the text gives no class, whose
/// BAR's only failure is its claim of the firmware's address
/// (`BarSeen::claim_only`): whether they got a new one is not in it. As
/// in `select`, function 0 of a device with no driver named but a GPU's
/// or none, and not device 00.0 of bus 0 (the host bridge, whose BARs a
/// 2.6 kernel often could not claim: corpus 335).
pub(super) fn claims_pending(
    devs: &BTreeMap<PciAddress, DeviceSeen>,
    gpus: &[crate::evidence::Gpu],
) -> Vec<PciAddress> {
    devs.iter()
        .filter(|(a, d)| {
            d.class.is_none()
                && !d.is_bridge()
                && a.function == 0
                && (a.bus, a.device) != (0, 0)
                && d.other_driver.is_none()
                && !gpus.iter().any(|g| g.addr == **a)
        })
        .filter(|(_, d)| {
            d.bars
                .values()
                .any(|b| !b.io && b.claim_only && b.outcome == Outcome::Failed)
        })
        .map(|(a, _)| *a)
        .collect()
}
