//! Hyper-V's own messages and listings about a VM's devices
//! (`HostMessage`): its start error, its DDA survey, its GPU partitioning.

use super::HostMessage;
use crate::parse::hex::{hex_after, hex_at};

/// Hyper-V's VM start error (the dialog's and `Start-VM`'s text; "above
/// the the" in some releases): `The upper MMIO region (0x00000017dffff000)
/// is above the supported physical address range. Make sure that the upper
/// MMIO region is below 0x0000001000000000.`, or only `... specifies an
/// upper MMIO region that is above the supported physical address range`.
pub(super) fn hyperv_upper_mmio(flat: &str) -> Option<HostMessage> {
    let said =
        flat.contains("upper MMIO region") && flat.contains("supported physical address range");
    if !said {
        return None;
    }
    let top = hex_after(flat, "upper MMIO region (");
    let limit = flat
        .find("upper MMIO region is below ")
        .and_then(|at| hex_at(&flat[at + "upper MMIO region is below ".len()..]));
    Some(HostMessage::HypervUpperMmio { top, limit })
}

/// Hyper-V's start error for a VM's virtual PCI Express port: `Virtual
/// Pci Express Port (Instance ID ...): Failed to Power on with Error 'A
/// hypervisor feature is not available to the user'. (0xC035001E)` (the
/// seventh collection's d03: DDA on a client edition of Windows). The
/// port, with the status code or its sentence.
pub(super) fn hyperv_feature_unavailable(flat: &str) -> bool {
    // The code alone is no port's: WSL 2 and nested virtualisation print it
    // too.
    let port = flat.to_ascii_lowercase().contains("pci express port");
    port && (flat.contains("0xC035001E")
        || flat.contains("A hypervisor feature is not available to the user"))
}

/// SurveyDDA.ps1's verdicts on a device it cannot assign; each ends in
/// `Not assignable` (one or two spaces before it, a full stop or none).
pub(super) fn hyperv_not_assignable(line: &str) -> bool {
    line.contains("Not assignable")
        && [
            "BIOS kept control of PCI Express for this device",
            "BIOS requires that this device remain attached to BIOS-owned memory",
            "Old-style PCI device, switch port, etc",
            "Legacy, non-VGA PCI device",
        ]
        .iter()
        .any(|w| line.contains(w))
}

/// A property line of Hyper-V's GPU partitioning cmdlets: a host's
/// `Get-VMHostPartitionableGpu` and a VM's `Get-VMGpuPartitionAdapter`
/// both print `MinPartitionVRAM`, `MaxPartitionVRAM` and
/// `OptimalPartitionVRAM` as `Name : value` (corpus 270).
pub(super) fn gpu_partition(line: &str) -> bool {
    let Some((key, value)) = line.split_once(':') else {
        return false;
    };
    matches!(
        key.trim(),
        "MinPartitionVRAM" | "MaxPartitionVRAM" | "OptimalPartitionVRAM"
    ) && value.trim().bytes().all(|b| b.is_ascii_digit())
        && !value.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_partition_listing_by_its_properties() {
        assert!(gpu_partition("OptimalPartitionVRAM    : 1000000000"));
        assert!(gpu_partition("MinPartitionVRAM : 0"));
        assert!(!gpu_partition("OptimalPartitionVRAM    :"));
        assert!(!gpu_partition("TotalVRAM               : 1000000000"));
        assert!(!gpu_partition("the OptimalPartitionVRAM: is too small"));
        assert!(!gpu_partition("MaxPartitionVRAM : lots"));
    }
}
