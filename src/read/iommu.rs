//! The IOMMU as the system shows it: the ACPI tables that announce one
//! (`DMAR` for Intel VT-d and QEMU's intel-iommu, `IVRS` for AMD-Vi), the
//! units the kernel bound (`/sys/class/iommu`), an Intel unit's capability
//! register, and whether a function has an IOMMU group. Widths are parsed
//! in `parse::iommu`.

use crate::model::pci::PciAddress;
use crate::read::root::Root;
use crate::read::sysfs::DEVICES_DIR;

/// The ACPI IOMMU tables present, and the head of DMAR (its address width
/// is at byte 36; the table is root-only to read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AcpiTables {
    pub present: Vec<String>,
    pub dmar_head: Option<Vec<u8>>,
}

pub(crate) fn acpi_tables(root: &Root) -> AcpiTables {
    let mut out = AcpiTables::default();
    for t in ["DMAR", "IVRS"] {
        let path = format!("sys/firmware/acpi/tables/{t}");
        if root.exists(&path) {
            out.present.push(t.into());
            if t == "DMAR" {
                out.dmar_head = root.read_bytes(&path, 64).ok();
            }
        }
    }
    out
}

/// The IOMMU units the kernel bound (`dmar0`, `ivhd0`), sorted.
pub(crate) fn units(root: &Root) -> Vec<String> {
    root.list("sys/class/iommu").unwrap_or_default()
}

/// An Intel unit's capability register, as sysfs prints it.
pub(crate) fn vtd_cap(root: &Root, unit: &str) -> Option<String> {
    root.read_trimmed(&format!("sys/class/iommu/{unit}/intel-iommu/cap"))
}

/// Whether a function has an `iommu_group` link.
pub(crate) fn has_group(root: &Root, addr: PciAddress) -> bool {
    root.is_there(&format!("{DEVICES_DIR}/{addr}/iommu_group"))
}
