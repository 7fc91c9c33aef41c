//! The guest firmware's own debug log, where it says what 64-bit window it
//! made: a fact of the firmware's side, no device's failure, and a sign
//! that the machine is a QEMU guest.

use super::HostMessage;
use crate::parse::hex::{hex_after, hex_u64};

/// OVMF's debug log: `PlatformDynamicMmioWindow:   MMIO Space 0x100000000000
/// (16384 GB)`.
pub(super) fn ovmf_window(line: &str) -> Option<HostMessage> {
    if !line.contains("PlatformDynamicMmioWindow") {
        return None;
    }
    Some(HostMessage::OvmfMmioWindow {
        bytes: hex_after(line, "MMIO Space ")?,
    })
}

/// SeaBIOS's debug log: `PCI: 64: 00000e0000000000 - 00000e0240000000`
/// (src/fw/pciinit.c `pci_bios_map_devices()`, rel-1.16.3 L1158: `PCI: 64:
/// %016llx - %016llx`, printed when it places 64-bit BARs above 4 GiB, and
/// before it maps each of them, `PCI: map device bdf=... bar N, addr ...`).
/// Both numbers have sixteen digits; anything else is not this line.
pub(super) fn seabios_window(line: &str) -> Option<HostMessage> {
    let rest = &line[line.find("PCI: 64: ")? + "PCI: 64: ".len()..];
    let (start, end) = rest.trim_end().split_once(" - ")?;
    if start.len() != 16 || end.len() != 16 {
        return None;
    }
    let (start, end) = (hex_u64(start)?, hex_u64(end)?);
    (end > start).then_some(HostMessage::SeabiosWindow64 { start, end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seabios_64_bit_window() {
        assert_eq!(
            seabios_window("  PCI: 64: 00000e0000000000 - 00000e0240000000"),
            Some(HostMessage::SeabiosWindow64 {
                start: 0xe00_0000_0000,
                end: 0xe02_4000_0000
            })
        );
        // The 32-bit window's line, a short number, an empty window: none.
        assert_eq!(
            seabios_window("PCI: 32: 0000000080000000 - 00000000fec00000"),
            None
        );
        assert_eq!(seabios_window("PCI: 64: e0000000000 - e0240000000"), None);
        assert_eq!(
            seabios_window("PCI: 64: 0000000000000000 - 0000000000000000"),
            None
        );
    }
}
