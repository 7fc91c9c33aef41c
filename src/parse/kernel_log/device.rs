//! A device's own message, after its `NAME DDDD:BB:DD.F: ` anchor:
//! enumeration (`[10de:2330] type 00 class ...`, `reg 0x14: [...]`, `BAR 2
//! [mem ...]`), and each verdict on a resource in the wording of its era:
//! `BAR 1: can't allocate resource` (2.6.2x), `BAR 1: no space for [...]` /
//! `failed to assign` / `assigned` (2.6.3x-6.7), `BAR 1 [mem ...]: can't
//! assign; no space` (6.8 on), `can't claim`, `can't reserve`, `releasing`.

use super::resource::{decimal, hex_range, resource};
use super::{Event, FailReason, LogResource, Parsed, ResourceRef, Space};
use crate::model::pci::PciAddress;
use crate::parse::hex::hex_u64;

pub(super) fn device_message(bdf: PciAddress, msg: &str) -> Option<Parsed> {
    // The old wording indents bridge windows under "PCI bridge to".
    let msg = msg.trim_start();
    if let Some(r) = msg.strip_prefix('[') {
        return function(bdf, r).map(Parsed::Event);
    }
    // 2.6.2x (drivers/pci/setup-bus.c `pci_setup_bridge()`, v2.6.28):
    // printed by the assignment pass (`pci_bus_assign_resources()`) once
    // the devices of the secondary bus have their BARs, each failure among
    // them printed before it (setup-res.c `pci_assign_resource()`: `can't
    // allocate mem resource`), a success not.
    if let Some(bus) = msg.strip_prefix("PCI bridge, secondary bus ") {
        let secondary = bus
            .trim()
            .split_once(':')
            .filter(|(domain, _)| u32::from_str_radix(domain, 16) == Ok(bdf.domain))
            .and_then(|(_, b)| u8::from_str_radix(b, 16).ok());
        return Some(match secondary {
            Some(b) => Parsed::BridgeProgrammed(bdf, b),
            None => Parsed::Bridge(bdf),
        });
    }
    if msg.starts_with("PCI bridge to ") {
        return Some(Parsed::Bridge(bdf));
    }
    // arch/x86/pci/fixup.c `pci_fixup_video`, a fixup declared for
    // PCI_CLASS_DISPLAY_VGA only: `Video device with shadowed ROM at`.
    if msg.starts_with("Boot video device")
        || msg.starts_with("Video device with shadowed ROM")
        || (msg.starts_with("vgaarb: ") && (msg.contains("VGA device") || msg.contains("boot VGA")))
    {
        return Some(Parsed::Event(Event::VgaDevice { bdf }));
    }
    if msg.starts_with("not enough MMIO resources for SR-IOV") {
        return Some(Parsed::Event(Event::SriovSpace { bdf }));
    }
    let event = if let Some(r) = msg.strip_prefix("reg ") {
        old_enumeration(bdf, r)
    } else if let Some(r) = msg.strip_prefix("can't claim BAR ") {
        old_claim(bdf, r)
    } else if let Some(r) = msg.strip_prefix("VF(n) BAR") {
        // drivers/pci/iov.c `sriov_init()` before 6.x: `VF(n) BAR0 space:
        // [mem ...] (contains BAR0 for 16 VFs)`, the VFs' space sized.
        let (n, r) = decimal(r)?;
        let (resource, _) = resource(r.strip_prefix(" space:")?)?;
        (n <= 5).then_some(Event::Probed {
            bdf,
            res: ResourceRef::VfBar(n as u8),
            resource,
        })
    } else if let Some(r) = msg.strip_prefix("VF BAR ") {
        let (n, r) = decimal(r)?;
        if n > 5 {
            return None;
        }
        new_wording(bdf, ResourceRef::VfBar(n as u8), r)
    } else if let Some(r) = msg.strip_prefix("BAR ") {
        let (n, r) = decimal(r)?;
        let res = index_ref(n)?;
        match r.strip_prefix(':') {
            Some(verdict) => old_verdict(bdf, res, verdict),
            None => bad_alignment(bdf, res, r).or_else(|| new_wording(bdf, res, r)),
        }
    } else if let Some(r) = msg.strip_prefix("ROM ") {
        new_wording(bdf, ResourceRef::Rom, r)
    } else if let Some(r) = msg.strip_prefix("bridge window ") {
        window_sized(bdf, r)
            .or_else(|| window_relaxed(bdf, r))
            .or_else(|| new_wording(bdf, ResourceRef::BridgeWindow, r))
    } else if let Some(r) = msg.strip_prefix("Assigned bridge window ") {
        cannot_fit(bdf, r)
    } else {
        None
    };
    event.map(Parsed::Event)
}

/// The kernel's resource index as the old wording prints it: 0-5 BARs, 6 the
/// ROM, 7-12 SR-IOV VF BARs, 13-16 bridge windows; without SR-IOV support
/// windows start at 7 (corpus 17, 51), which `parse_log` sorts out.
pub(super) fn index_ref(n: u32) -> Option<ResourceRef> {
    Some(match n {
        0..=5 => ResourceRef::Bar(n as u8),
        6 => ResourceRef::Rom,
        7..=12 => ResourceRef::Numbered(n as u8),
        13..=16 => ResourceRef::SriovNumberedWindow,
        _ => return None,
    })
}

/// `[10de:15f8] type 00 class 0x030200` with optional trailing text
/// (`PCIe Legacy Endpoint` in current kernels). `r` follows the `[`.
fn function(bdf: PciAddress, r: &str) -> Option<Event> {
    let (ids, r) = r.split_once(']')?;
    let (vendor, device) = ids.split_once(':')?;
    if vendor.len() != 4 || device.len() != 4 {
        return None;
    }
    let vendor = hex_u64(vendor)? as u16;
    let device = hex_u64(device)? as u16;
    let r = r.trim_start().strip_prefix("type ")?;
    let (ty, r) = r.split_once(' ').unwrap_or((r, ""));
    if ty.is_empty() || ty.len() > 2 {
        return None;
    }
    let header_type = hex_u64(ty)? as u8;
    let r = r.trim_start().strip_prefix("class ")?.strip_prefix("0x")?;
    // Only the digits: a logfmt wrapper may follow with `\n"`.
    let digits = r.bytes().take_while(u8::is_ascii_hexdigit).count();
    if digits == 0 || digits > 6 {
        return None;
    }
    let class = hex_u64(&r[..digits])? as u32;
    Some(Event::Function {
        bdf,
        vendor,
        device,
        class,
        header_type,
        // Filled in by `parse_log`, which has the whole line.
        secs: None,
    })
}

/// A config-space register offset as a resource: 0x10-0x24 are BARs 0-5,
/// 0x30 a type 0 header's ROM and 0x38 a bridge's. SR-IOV BARs are printed
/// at their offset in the capability, which the log does not give.
pub(super) fn register_ref(offset: u64) -> Option<ResourceRef> {
    match offset {
        0x10..=0x24 if offset % 4 == 0 => Some(ResourceRef::Bar(((offset - 0x10) / 4) as u8)),
        0x30 | 0x38 => Some(ResourceRef::Rom),
        _ => None,
    }
}

/// Old enumeration: `reg 0x14: [mem 0x00000000-0x3ffffffff 64bit pref]`.
/// `r` follows `reg `.
fn old_enumeration(bdf: PciAddress, r: &str) -> Option<Event> {
    let (head, r) = r.split_once(':')?;
    let (offset, kind) = head.split_once(' ').unwrap_or((head, ""));
    let res = register_ref(hex_u64(offset)?)?;
    if kind.is_empty() {
        let (resource, _) = resource(r)?;
        return Some(Event::Probed { bdf, res, resource });
    }
    // 2.6.2x (drivers/pci/probe.c `pci_read_bases()`, v2.6.28): `reg 14
    // 32bit mmio: [0xfc000000-0xfcffffff]`; the range is the firmware's
    // address.
    let inner = r.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (start, end) = hex_range(inner)?;
    Some(Event::Probed {
        bdf,
        res,
        resource: old_reg_resource(kind, start, end)?,
    })
}

/// The resource of 2.6.x's enumeration line `reg 14 KIND: [range]`, KIND
/// `32bit mmio`, `64bit mmio` or `io port`, with ` pref` where it is: the
/// firmware's address (none at 0) and the size.
pub(super) fn old_reg_resource(kind: &str, start: u64, end: u64) -> Option<LogResource> {
    let (space, mem64) = match kind.split_whitespace().next()? {
        "32bit" => (Space::Mem, false),
        "64bit" => (Space::Mem, true),
        "io" => (Space::Io, false),
        _ => return None,
    };
    Some(LogResource {
        space,
        start: Some(start).filter(|s| *s != 0),
        size: end.checked_sub(start)?.checked_add(1)?,
        mem64,
        prefetchable: kind.contains("pref"),
    })
}

/// Old wording after `BAR n:`: `no space for [mem size 0x400000000 64bit
/// pref]`, `failed to assign [...]`, `assigned [...]`, `releasing [...]`,
/// and older still `can't allocate resource` / `can't allocate mem
/// resource [0x0-0xfffffff]` (2.6.2x, the bracket a size), `can't reserve
/// [mem ...]` (the range is taken by another owner, e.g. a boot
/// framebuffer: the BAR has its address).
fn old_verdict(bdf: PciAddress, res: ResourceRef, r: &str) -> Option<Event> {
    let r = r.trim_start();
    if let Some(r) = r.strip_prefix("can't allocate ") {
        return old_allocate(bdf, res, r);
    }
    let (reason, r) = if let Some(r) = r.strip_prefix("no space for") {
        (Some(FailReason::NoSpace), r)
    } else if let Some(r) = r.strip_prefix("failed to assign") {
        (Some(FailReason::FailedToAssign), r)
    } else if let Some(r) = r.strip_prefix("can't assign") {
        // `(bogus alignment)` and friends.
        (Some(FailReason::FailedToAssign), r)
    } else if let Some(r) = r
        .strip_prefix("assigned")
        .or_else(|| r.strip_prefix("can't reserve"))
    {
        (None, r)
    } else if let Some(r) = r.strip_prefix("releasing") {
        let (resource, _) = resource(r)?;
        return Some(Event::Released { bdf, res, resource });
    } else {
        return None;
    };
    let parsed = resource(r).map(|(res, _)| res);
    match reason {
        Some(reason) => Some(Event::AssignFailed {
            bdf,
            res,
            resource: parsed,
            reason,
        }),
        None => Some(Event::Assigned {
            bdf,
            res,
            resource: parsed?,
        }),
    }
}

/// 2.6.2x: `BAR 2 bad alignment 400000000: [0x0-0x3ffffffff]`
/// (drivers/pci/setup-bus.c `pbus_size_mem()`, v2.6.28: an alignment past
/// 2 GiB, which that sizing does not handle; the BAR's flags are cleared
/// and it is never assigned). `r` follows `BAR n`.
fn bad_alignment(bdf: PciAddress, res: ResourceRef, r: &str) -> Option<Event> {
    let rest = r.strip_prefix(" bad alignment ")?;
    let (_, range) = rest.split_once(": [")?;
    let (start, end) = hex_range(range.split(']').next()?.trim())?;
    Some(Event::AssignFailed {
        bdf,
        res,
        resource: Some(LogResource {
            space: Space::Mem,
            start: None,
            size: end.checked_sub(start)?.checked_add(1)?,
            mem64: false,
            prefetchable: false,
        }),
        reason: FailReason::FailedToAssign,
    })
}

/// 2.6.2x: `can't allocate resource`, `can't allocate mem resource
/// [0x0-0xfffffff]`, `can't allocate I/O resource [...]` (`io` in some
/// releases). `r` follows
/// `can't allocate `. The bare form is the claim of the firmware's address
/// (arch/x86/pci/i386.c `pcibios_allocate_resources()`, v2.6.28), which
/// then keeps the size, drops the address ("We'll assign a new address
/// later") and leaves the BAR to `pci_assign_unassigned_resources()`:
/// `FailReason::ClaimRefused`, as today's `can't claim`. The typed forms are
/// that assignment failing (drivers/pci/setup-res.c
/// `pci_assign_resource()`), as is `can't allocate resource (bogus
/// alignment)`.
fn old_allocate(bdf: PciAddress, res: ResourceRef, r: &str) -> Option<Event> {
    let (space, r) = if let Some(r) = r.strip_prefix("mem ") {
        (Some(Space::Mem), r)
    } else if let Some(r) = r.strip_prefix("io ").or_else(|| r.strip_prefix("I/O ")) {
        (Some(Space::Io), r)
    } else {
        (None, r)
    };
    let r = r.strip_prefix("resource")?.trim_start();
    let resource = match (space, r.strip_prefix('[')) {
        (Some(space), Some(inner)) => {
            let (start, end) = hex_range(inner.split(']').next()?.trim())?;
            Some(LogResource {
                space,
                start: None,
                size: end.checked_sub(start)?.checked_add(1)?,
                mem64: false,
                prefetchable: false,
            })
        }
        (Some(space), None) => Some(LogResource {
            space,
            start: None,
            size: 0,
            mem64: false,
            prefetchable: false,
        }),
        _ => None,
    };
    let reason = if space.is_none() && r.is_empty() {
        FailReason::ClaimRefused
    } else {
        FailReason::FailedToAssign
    };
    Some(Event::AssignFailed {
        bdf,
        res,
        resource,
        reason,
    })
}

/// Old wording: `can't claim BAR 1 [mem ...]: no compatible bridge window`
/// (or `: address conflict with ...`). `r` follows `can't claim BAR `.
fn old_claim(bdf: PciAddress, r: &str) -> Option<Event> {
    let (n, r) = decimal(r)?;
    let parsed = resource(r).map(|(res, _)| res);
    Some(Event::AssignFailed {
        bdf,
        res: index_ref(n)?,
        resource: parsed,
        reason: FailReason::CantClaim,
    })
}

/// `[mem A-B 64bit pref] shrunken by 0x00000007e4400000` after `bridge
/// window `.
fn window_sized(bdf: PciAddress, r: &str) -> Option<Event> {
    let (window, rest) = resource(r)?;
    let by = rest.trim_start().strip_prefix("shrunken by ")?;
    Some(Event::WindowShrunk {
        bdf,
        window,
        by: hex_u64(by.split_whitespace().next()?)?,
    })
}

/// `[mem A-B 64bit pref] to [bus 03] requires relaxed alignment rules`
/// (or `to [bus 02-04]`) after `bridge window ` (drivers/pci/setup-bus.c
/// `pbus_size_mem()`, since commit 566f1dd52816 "PCI: Relax bridge window
/// tail sizing rules", 2024): printed while sizing, right after the
/// parent's `cannot fit ... required for` this bridge (both come from the
/// one branch taken when the strict size finds no room upstream), before
/// anything is assigned, which can still fail. The kernel then asks only
/// for what the devices on those buses need, its tail unaligned. The range
/// printed is no measure of that: before the kernel fixed its stale print
/// it is the window's old range (`[mem 0x00000000-0x000fffff]` in
/// reports), after it the alignment and the size, or `[mem size ...]`; so
/// only the bridge and its buses are kept of it.
fn window_relaxed(bdf: PciAddress, r: &str) -> Option<Event> {
    let (window, rest) = resource(r)?;
    let range = rest
        .trim()
        .strip_prefix("to [bus ")?
        .strip_suffix("] requires relaxed alignment rules")?;
    let (first, last) = range.split_once('-').unwrap_or((range, range));
    let bus = |t: &str| u8::from_str_radix(t, 16).ok();
    Some(Event::WindowRelaxed {
        bdf,
        window,
        buses: (bus(first)?, bus(last)?),
    })
}

/// `[mem 0x6000000000-0x601bffffff 64bit pref] to [bus 03-2c] cannot fit
/// 0xc00000000 required for 0000:03:00.0 bridging to [bus 04-2c]` after
/// `Assigned bridge window `.
fn cannot_fit(parent: PciAddress, r: &str) -> Option<Event> {
    let (window, rest) = resource(r)?;
    let at = rest.find(" cannot fit ")?;
    let rest = &rest[at + " cannot fit ".len()..];
    let (required, rest) = rest.split_once(' ')?;
    let child = rest
        .strip_prefix("required for ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(Event::WindowCannotFit {
        parent,
        window,
        required: hex_u64(required)?,
        child,
    })
}

/// Current wording: `<name> [resource]` then nothing (enumeration) or `: `
/// and a verdict. `r` follows the name.
fn new_wording(bdf: PciAddress, res: ResourceRef, r: &str) -> Option<Event> {
    let (resource, rest) = resource(r)?;
    // A typeless resource is no BAR's: only a window lost its type
    // (6.18), and an expansion ROM the kernel left unset prints so (`ROM
    // [??? 0x00000000 flags 0x20000000]: can't assign; bogus alignment`,
    // corpus 254, the seventh collection's a01).
    if resource.space == Space::Other
        && !matches!(res, ResourceRef::BridgeWindow | ResourceRef::Rom)
    {
        return None;
    }
    let rest = rest.trim();
    if rest.is_empty() {
        return Some(Event::Probed { bdf, res, resource });
    }
    let verdict = rest.strip_prefix(':')?.trim_start();
    let reason = if let Some(why) = verdict.strip_prefix("can't assign") {
        if why.contains("no space") {
            FailReason::NoSpace
        } else {
            FailReason::FailedToAssign
        }
    } else if verdict.starts_with("failed to assign") {
        FailReason::FailedToAssign
    } else if verdict.starts_with("can't claim") {
        FailReason::CantClaim
    } else if verdict == "assigned" || verdict.starts_with("can't reserve") {
        // `can't reserve`: another owner holds the range; the BAR has it.
        return Some(Event::Assigned { bdf, res, resource });
    } else if verdict == "releasing" {
        // It had this address; what follows says where it ends up.
        return Some(Event::Probed { bdf, res, resource });
    } else {
        // `contains BAR 0 for 1 VFs`, `disabled`, ... say nothing new.
        return None;
    };
    Some(Event::AssignFailed {
        bdf,
        res,
        resource: Some(resource),
        reason,
    })
}
