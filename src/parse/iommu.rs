//! An IOMMU's address width, from the two places it is written: the ACPI
//! DMAR table's header and an Intel unit's capability register.

/// DMAR's host address width: byte 36 of the table, plus one (Intel VT-d
/// specification, 8.1 "DMA Remapping Reporting Structure": Host Address
/// Width is N-1). `None` for a table too short or not DMAR.
pub(crate) fn dmar_address_width(table: &[u8]) -> Option<u32> {
    (table.len() > 36 && &table[..4] == b"DMAR").then(|| u32::from(table[36]) + 1)
}

/// An Intel unit's MGAW from its capability register as sysfs prints it
/// (`/sys/class/iommu/dmar0/intel-iommu/cap`, hex): bits 21:16, plus one
/// (VT-d specification, 11.4.2 "Capability Register").
pub(crate) fn vtd_mgaw(cap: &str) -> Option<u32> {
    let c = u64::from_str_radix(cap.trim().trim_start_matches("0x"), 16).ok()?;
    Some(((c >> 16) & 0x3f) as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmar_header_and_capability_register() {
        let mut t = vec![0u8; 48];
        t[..4].copy_from_slice(b"DMAR");
        t[36] = 38;
        assert_eq!(dmar_address_width(&t), Some(39));
        assert_eq!(dmar_address_width(&t[..36]), None);
        t[0] = b'X';
        assert_eq!(dmar_address_width(&t), None);
        // QEMU's intel-iommu with aw-bits=39: MGAW 38 in bits 21:16.
        assert_eq!(vtd_mgaw("d2008c22260286"), Some(39));
        assert_eq!(vtd_mgaw("0x00000000002f0000"), Some(48));
        assert_eq!(vtd_mgaw("zz"), None);
        assert_eq!(vtd_mgaw(""), None);
    }
}
