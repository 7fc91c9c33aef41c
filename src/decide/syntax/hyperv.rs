//! Hyper-V: `Set-VM` in PowerShell on the host, with the VM shut down. A
//! GPU assigned with Discrete Device Assignment needs its MMIO space and
//! write-combining under the guest's control together (Microsoft's DDA
//! deployment guide), so the one comes with the other.

use super::Syntax;
use crate::decide::hint::Change;

const GIB: u64 = 1 << 30;

/// `512MB`, `2GB`: Set-VM's sizes, in the largest whole unit.
fn size(bytes: u64) -> String {
    if bytes % GIB == 0 {
        format!("{}GB", bytes / GIB)
    } else {
        format!("{}MB", bytes.div_ceil(1 << 20))
    }
}

/// The settings of a change; `None` without MMIO space in it. A gap at
/// most `mmio64_bytes_max` (Hyper-V's start error: it ends past what the
/// host's CPU addresses) is set as that size.
fn settings(c: &Change) -> Option<String> {
    if let Some(max) = c.mmio64_bytes_max {
        return Some(format!(
            "`Set-VM -VMName <vm> -HighMemoryMappedIoSpace {}`",
            size(max)
        ));
    }
    let high = c.mmio64_bytes_min?;
    let low = c
        .mmio32_bytes_min
        .map(|l| {
            format!(
                " and, for the BARs below 4 GiB, `-LowMemoryMappedIoSpace {}GB`",
                l.div_ceil(GIB)
            )
        })
        .unwrap_or_default();
    Some(format!(
        "`Set-VM -VMName <vm> -HighMemoryMappedIoSpace {}GB`{low} and `Set-VM -VMName <vm> -GuestControlledCacheTypes $true` (both needed for GPUs assigned with DDA)",
        high.div_ceil(GIB)
    ))
}

pub(super) struct HyperV;

impl Syntax for HyperV {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        settings(c).map(|s| format!("Hyper-V: {s}"))
    }

    fn instruction(&self, c: &Change) -> Option<String> {
        settings(c).map(|s| format!("With the VM shut down: {s}"))
    }
}
