//! The kernel log of 2.6.1x-2.6.2x, whose PCI messages open with `PCI: `
//! and name the device inside the text rather than before it.

use super::device::{index_ref, old_reg_resource, register_ref};
use super::resource::{decimal, hex_range};
use super::{Event, FailReason, LogResource, Parsed, Space};
use crate::model::pci::PciAddress;
use crate::parse::hex::hex_u64;
use crate::parse::words::Needle;

/// The 2.6.1x-2.6.2x messages that open with `PCI: ` and put the address
/// elsewhere:
/// - `PCI: 0000:02:00.0 reg 14 32bit mmio: [d0000000, dfffffff]` (enumeration;
///   also `64bit mmio`, `io port`, `... pref`),
/// - `PCI: bridge 0000:00:0b.0 io port: [e000, efff]`,
/// - `PCI: Cannot allocate resource region 1 of device 0000:41:00.0`,
/// - `PCI: Failed to allocate mem resource #1:10000000@f0000000 for 0000:41:00.0`,
/// - `got res [c0000000:cfffffff] bus [...] flags 1208 for BAR 1 of 0000:81:00.0`,
/// - `PCI: moved device 0000:81:00.0 resource 1 (1208) to c0000000`.
pub(super) fn old_pci_message(line: &str) -> Option<Parsed> {
    static CANNOT: Needle = Needle::new("Cannot allocate resource region ");
    static FAILED: Needle = Needle::new("Failed to allocate ");
    static GOT_RES: Needle = Needle::new("got res [");
    static MOVED: Needle = Needle::new("PCI: moved device ");
    static UPDATING: Needle = Needle::new("Error while updating region ");
    if let Some(at) = CANNOT.find(line) {
        let (n, r) = decimal(&line[at + "Cannot allocate resource region ".len()..])?;
        let bdf = r.strip_prefix(" of device ")?.trim().parse().ok()?;
        return Some(Parsed::Event(Event::AssignFailed {
            bdf,
            res: index_ref(n)?,
            resource: None,
            reason: FailReason::ClaimRefused,
        }));
    }
    if let Some(at) = FAILED.find(line) {
        let r = &line[at + "Failed to allocate ".len()..];
        let (space, r) = if let Some(r) = r.strip_prefix("mem resource #") {
            (Space::Mem, r)
        } else {
            (Space::Io, r.strip_prefix("I/O resource #")?)
        };
        let (n, r) = decimal(r)?;
        let (size, r) = r.strip_prefix(':')?.split_once('@')?;
        let bdf = r.split_once(" for ")?.1.trim().parse().ok()?;
        return Some(Parsed::Event(Event::AssignFailed {
            bdf,
            res: index_ref(n)?,
            resource: Some(LogResource {
                space,
                start: None,
                size: hex_u64(size)?,
                mem64: false,
                prefetchable: false,
            }),
            reason: FailReason::FailedToAssign,
        }));
    }
    // 2.4's drivers/pci/setup-res.c `pci_update_resource()`: the BAR read
    // back other than the address the kernel wrote (`(new != check)`), so
    // the device does not decode the range it was given (corpus 395).
    if let Some(at) = UPDATING.find(line) {
        let r = &line[at + "Error while updating region ".len()..];
        let (bdf, r) = r.split_once('/')?;
        let (n, r) = decimal(r)?;
        r.trim_start().starts_with('(').then_some(())?;
        return Some(Parsed::Event(Event::AssignFailed {
            bdf: bdf.trim().parse().ok()?,
            res: index_ref(n)?,
            resource: None,
            reason: FailReason::FailedToAssign,
        }));
    }
    if let Some(at) = GOT_RES.find(line) {
        let r = &line[at + "got res [".len()..];
        let (range, r) = r.split_once(']')?;
        let (start, end) = range.split_once(':')?;
        let (start, end) = (hex_u64(start)?, hex_u64(end)?);
        let r = &r[r.find(" for BAR ")? + " for BAR ".len()..];
        let (n, r) = decimal(r.trim_start())?;
        let bdf = r.strip_prefix(" of ")?.trim().parse().ok()?;
        return Some(Parsed::Event(Event::Assigned {
            bdf,
            res: index_ref(n)?,
            resource: LogResource {
                space: Space::Mem,
                start: Some(start).filter(|s| *s != 0),
                size: end.checked_sub(start)?.checked_add(1)?,
                mem64: false,
                prefetchable: false,
            },
        }));
    }
    if let Some(at) = MOVED.find(line) {
        let r = &line[at + "PCI: moved device ".len()..];
        let (bdf, r) = r.split_once(" resource ")?;
        let (n, r) = decimal(r)?;
        let (_, to) = r.rsplit_once(" to ")?;
        return Some(Parsed::Event(Event::Assigned {
            bdf: bdf.trim().parse().ok()?,
            res: index_ref(n)?,
            resource: LogResource {
                space: Space::Mem,
                start: Some(hex_u64(to.trim())?).filter(|s| *s != 0),
                size: 0,
                mem64: false,
                prefetchable: false,
            },
        }));
    }
    let at = line.find("PCI: ")?;
    let r = &line[at + "PCI: ".len()..];
    if let Some(r) = r.strip_prefix("Resource ") {
        // `00009000-0000901f (f=101, d=0, p=0)`: flags 0x100 I/O, 0x200
        // memory, 0x1000 prefetchable (2.6.12's IORESOURCE_* values).
        let (range, r) = r.split_once(" (f=")?;
        let (start, end) = hex_range(range)?;
        let flags = hex_u64(r.split(',').next()?)?;
        let space = match flags & 0x300 {
            0x100 => Space::Io,
            0x200 => Space::Mem,
            _ => return None,
        };
        return Some(Parsed::OldResource(LogResource {
            space,
            start: None,
            size: end.checked_sub(start)?.checked_add(1)?,
            mem64: false,
            prefetchable: flags & 0x1000 != 0,
        }));
    }
    if let Some(r) = r.strip_prefix("bridge ") {
        let (bdf, _) = r.split_once(' ')?;
        return Some(Parsed::Bridge(bdf.parse().ok()?));
    }
    // `0000:02:00.0 reg 14 32bit mmio: [d0000000, dfffffff]`
    let (bdf, r) = r.split_once(" reg ")?;
    let bdf: PciAddress = bdf.parse().ok()?;
    let (offset, r) = r.split_once(' ')?;
    let res = register_ref(hex_u64(offset)?)?;
    let (kind, range) = r.split_once(": [")?;
    let (start, end) = range.strip_suffix(']')?.split_once(',')?;
    let (start, end) = (hex_u64(start.trim())?, hex_u64(end.trim())?);
    Some(Parsed::Event(Event::Probed {
        bdf,
        res,
        resource: old_reg_resource(kind, start, end)?,
    }))
}
