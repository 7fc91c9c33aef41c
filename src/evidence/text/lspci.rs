//! What lspci (`-v`, `-vv`, `-x`) and QEMU's `info pci` print of a
//! device, merged into the replay: their regions state the BARs' final
//! condition.

use super::replay::{BarSeen, DeviceSeen, Outcome};
use crate::model::pci::PciAddress;
use crate::parse::lspci::{self, LspciDevice, LspciRegion, RegionAddr};
use crate::parse::qemu_info_pci;
use std::collections::BTreeMap;

/// Merges every listing in `text`: whether there was one, and whether
/// `Region` lines without their device's header (`lspci -vvv | grep
/// Region`) show a memory BAR without an address: whose it is is not in
/// the text, but it stands between every GPU and `ok`.
pub(super) fn merge_listings(
    text: &str,
    devs: &mut BTreeMap<PciAddress, DeviceSeen>,
) -> (bool, bool) {
    let mut evidence = false;
    let mut headless_failed = false;
    for l in lspci::parse(text) {
        evidence = true;
        if l.headless {
            headless_failed |= l.regions.iter().any(|r| {
                !r.io && matches!(r.address, RegionAddr::Unassigned | RegionAddr::Ignored)
            });
            continue;
        }
        merge_lspci(devs.entry(l.bdf).or_default(), &l);
    }
    for l in qemu_info_pci::parse(text) {
        evidence = true;
        merge_lspci(devs.entry(l.bdf).or_default(), &l);
    }
    (evidence, headless_failed)
}

/// Adds what lspci printed of a device. Its regions state the BARs' final
/// condition and replace what the log said of the same BAR.
fn merge_lspci(d: &mut DeviceSeen, l: &LspciDevice) {
    if let Some(v) = l.vendor_id() {
        d.vendor = Some(v);
    }
    if let Some(v) = l.device_id() {
        d.device = Some(v);
    }
    if let Some(c) = l.class_code() {
        d.class.get_or_insert(u32::from(c) << 8);
    }
    if l.has_bus_line {
        // Only type 1 and type 2 headers print a bus line.
        d.header_type.get_or_insert(1);
    }
    let mut taken = Vec::new();
    for r in &l.regions {
        let index = region_index(d, r, &taken);
        taken.push(index);
        let seen = BarSeen {
            outcome: match r.address {
                RegionAddr::Assigned(_) | RegionAddr::Virtual(_) => Outcome::Assigned,
                RegionAddr::Unassigned | RegionAddr::Ignored => Outcome::Failed,
            },
            io: r.io,
            mem64: r.mem64,
            prefetchable: r.prefetchable,
            size: r.size.or_else(|| d.bars.get(&index).and_then(|b| b.size)),
            start: match r.address {
                RegionAddr::Assigned(a) | RegionAddr::Virtual(a) => Some(a),
                RegionAddr::Unassigned | RegionAddr::Ignored => None,
            },
            had_address: r.address == RegionAddr::Ignored,
            from_lspci: true,
            type_known: r.typed,
            claim_only: false,
        };
        d.bars.insert(index, seen);
    }
}

/// The BAR a region is. `lspci -v` prints no numbers and skips BARs a
/// device does not implement, so a counted index is wrong once one is
/// missing before it; when the kernel log named this device's BARs, the
/// region is the first of those, not yet matched, of the same kind and
/// (where both are known) size.
fn region_index(d: &DeviceSeen, r: &LspciRegion, taken: &[u8]) -> u8 {
    if !r.index_inferred {
        return r.index;
    }
    d.bars
        .iter()
        .filter(|(i, b)| {
            !b.from_lspci
                && !taken.contains(i)
                && b.io == r.io
                && b.mem64 == r.mem64
                && b.prefetchable == r.prefetchable
                && (b.size.is_none() || r.size.is_none() || b.size == r.size)
        })
        .map(|(i, _)| *i)
        .next()
        .unwrap_or(r.index)
}
