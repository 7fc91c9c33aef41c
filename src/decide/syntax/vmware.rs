//! VMware ESXi and Workstation: the VM's options in the vSphere client,
//! its advanced configuration parameters for passthrough, made with the VM
//! powered off.

use super::Syntax;
use crate::decide::hint::{BootFirmware, Change};

const GIB: u64 = 1 << 30;

/// The settings of a change, without the VM's name.
fn settings(c: &Change) -> Vec<String> {
    let mut out = Vec::new();
    if c.boot_firmware == Some(BootFirmware::Efi) {
        out.push("set VM Options > Boot Options > Firmware: EFI".to_string());
    }
    if let Some(b) = c.mmio64_bytes_min {
        out.push(format!(
            "add in VM Options > Advanced > Configuration Parameters: {}",
            mmio(b)
        ));
    }
    out
}

/// The 64-bit MMIO parameters, which only EFI firmware reads.
fn mmio(bytes: u64) -> String {
    format!(
        "`pciPassthru.use64bitMMIO = \"TRUE\"` and `pciPassthru.64bitMMIOSizeGB = \"{}\"` (EFI firmware only)",
        bytes.div_ceil(GIB)
    )
}

pub(super) struct Vmware;

impl Syntax for Vmware {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut parts = Vec::new();
        if c.boot_firmware == Some(BootFirmware::Efi) {
            parts.push("VM Options > Boot Options > Firmware: EFI".to_string());
        }
        if let Some(b) = c.mmio64_bytes_min {
            parts.push(mmio(b));
        }
        (!parts.is_empty()).then(|| format!("VMware: {}", parts.join(", and ")))
    }

    fn instruction(&self, c: &Change) -> Option<String> {
        let s = settings(c);
        (!s.is_empty()).then(|| format!("With the VM powered off, {}", s.join(", and ")))
    }
}
