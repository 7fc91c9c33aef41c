//! QEMU's monitor `info pci`, as people paste it from the host:
//!
//! ```text
//!   Bus  1, device   0, function 0:
//!     3D controller: PCI device 10de:2901
//!       BAR0: 64 bit prefetchable memory at 0xffffffffffffffff [0x03fffffe].
//!       BAR2: 32 bit memory at 0xfe000000 [0xfe000fff].
//!       BAR5: I/O at 0xc000 [0xc01f].
//! ```
//!
//! Each BAR line gives the address the guest programmed and, in brackets,
//! `address + size - 1`; an address of all ones is QEMU's "not mapped"
//! (hw/pci/pci-hmp-cmds.c, `hmp_info_pci_device`), and its size is then
//! the bracket plus two. The records are `lspci`'s, so that `explain`
//! merges them as it merges lspci's.

use crate::model::pci::PciAddress;
use crate::parse::hex::hex_u64;
use crate::parse::lspci::{LspciDevice, LspciRegion, RegionAddr};

/// `info pci`'s unmapped address.
const UNMAPPED: u64 = u64::MAX;

/// The devices an `info pci` listing in `text` shows.
pub(crate) fn parse(text: &str) -> Vec<LspciDevice> {
    let mut out: Vec<LspciDevice> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(bdf) = device_line(t) {
            out.push(LspciDevice::named(bdf));
            continue;
        }
        let Some(dev) = out.last_mut() else { continue };
        if let Some(r) = bar_line(t) {
            dev.regions.push(r);
        } else if let Some((class, ids)) = t.split_once(": PCI device ") {
            let (v, d) = ids.trim().split_once(':').unwrap_or(("", ""));
            dev.vendor = hex_u64(v).and_then(|v| u16::try_from(v).ok());
            dev.device = hex_u64(d).and_then(|v| u16::try_from(v).ok());
            dev.class = class_code(class.trim());
            dev.class_name = class.trim().to_string();
        }
    }
    out.retain(|d| d.vendor.is_some());
    out
}

/// `Bus  1, device   0, function 0:` (decimal numbers; QEMU has one
/// domain).
fn device_line(t: &str) -> Option<PciAddress> {
    let r = t.strip_prefix("Bus ")?.strip_suffix(':')?;
    let mut parts = r.split(',').map(str::trim);
    let bus: u8 = parts.next()?.parse().ok()?;
    let device: u8 = parts.next()?.strip_prefix("device")?.trim().parse().ok()?;
    let function: u8 = parts
        .next()?
        .strip_prefix("function")?
        .trim()
        .parse()
        .ok()?;
    (device < 32 && function < 8).then_some(PciAddress {
        domain: 0,
        bus,
        device,
        function,
    })
}

/// `3D controller`, `VGA controller`, `Display controller`, `Class 0302`.
fn class_code(name: &str) -> Option<u16> {
    match name {
        "VGA controller" => Some(0x0300),
        "3D controller" => Some(0x0302),
        "Display controller" => Some(0x0380),
        _ => name
            .strip_prefix("Class ")
            .and_then(|c| u16::from_str_radix(c.trim(), 16).ok()),
    }
}

/// `BAR2: 64 bit prefetchable memory at 0x... [0x...].`, `BAR0: I/O at
/// 0xc000 [0xc01f].`
fn bar_line(t: &str) -> Option<LspciRegion> {
    let r = t.strip_prefix("BAR")?;
    let (n, r) = r.split_once(':')?;
    let index: u8 = n.parse().ok().filter(|n| *n <= 5)?;
    let r = r.trim();
    let (io, mem64, prefetchable, r) = if let Some(r) = r.strip_prefix("I/O at ") {
        (true, false, false, r)
    } else {
        let (kind, r) = r.split_once(" memory at ")?;
        let mem64 = kind.starts_with("64 bit");
        (false, mem64, kind.ends_with("prefetchable"), r)
    };
    let (addr, end) = r.split_once(" [")?;
    let addr = hex_u64(addr.trim())?;
    let end = hex_u64(end.trim_end_matches(['.', ']']))?;
    let size = end.wrapping_sub(addr).wrapping_add(1);
    Some(LspciRegion {
        index,
        index_inferred: false,
        io,
        address: if addr == UNMAPPED {
            RegionAddr::Unassigned
        } else {
            RegionAddr::Assigned(addr)
        },
        mem64,
        prefetchable,
        size: (size > 0).then_some(size),
        typed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_qemu_never_mapped() {
        // Corpus 67's listing: every BAR at all ones, sizes in brackets.
        let d = parse(
            "  Bus  1, device   0, function 0:\n    3D controller: PCI device 10de:2901\n      PCI subsystem 10de:1999\n      IRQ 0, pin A\n      BAR0: 64 bit prefetchable memory at 0xffffffffffffffff [0x03fffffe].\n      BAR2: 64 bit prefetchable memory at 0xffffffffffffffff [0x3ffffffffe].\n      BAR4: 64 bit prefetchable memory at 0xffffffffffffffff [0x01fffffe].\n      id \"hostdev0\"\n",
        );
        assert_eq!(d.len(), 1);
        let g = &d[0];
        assert_eq!(g.bdf.to_string(), "0000:01:00.0");
        assert_eq!(
            (g.vendor, g.device, g.class),
            (Some(0x10de), Some(0x2901), Some(0x0302))
        );
        let sizes: Vec<_> = g
            .regions
            .iter()
            .map(|r| (r.index, r.size, r.address))
            .collect();
        assert_eq!(
            sizes,
            [
                (0, Some(64 << 20), RegionAddr::Unassigned),
                (2, Some(256 << 30), RegionAddr::Unassigned),
                (4, Some(32 << 20), RegionAddr::Unassigned)
            ]
        );
    }

    #[test]
    fn mapped_bars_and_io() {
        let d = parse("Bus  0, device   2, function 0:\n  VGA controller: PCI device 1234:1111\n    BAR0: 32 bit prefetchable memory at 0xfd000000 [0xfdffffff].\n    BAR2: 32 bit memory at 0xfebf0000 [0xfebf0fff].\n    BAR5: I/O at 0xc000 [0xc01f].\n");
        let r = &d[0].regions;
        assert_eq!(r[0].address, RegionAddr::Assigned(0xfd00_0000));
        assert_eq!(r[0].size, Some(16 << 20));
        assert!(r[2].io && r[2].size == Some(32));
        assert!(parse("Bus 1, device 99, function 0:\nBAR0: junk\n").is_empty());
    }
}
