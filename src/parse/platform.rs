//! The machine as a boot log describes it, for `explain`, which has no
//! `/sys/class/dmi/id` to read: the kernel's `DMI:` line names vendor,
//! product and BIOS version; OVMF announces itself as `EFI v2.70 by EDK II`,
//! SeaBIOS leaves its name in the BIOS version.

use crate::model::platform::Firmware;

pub(crate) fn firmware_from_log(text: &str) -> Firmware {
    let mut fw = Firmware::default();
    for line in text.lines() {
        if let Some(i) = line.find("DMI: ") {
            let dmi = &line[i + 5..];
            let (machine, bios) = dmi.split_once(", BIOS ").unwrap_or((dmi, ""));
            if let Some(product) = machine.strip_prefix("QEMU ") {
                fw.sys_vendor = Some("QEMU".into());
                fw.product_name = Some(product.trim().to_string());
            } else if !machine.trim().is_empty() {
                fw.sys_vendor = Some(machine.trim().to_string());
            }
            if !bios.is_empty() {
                fw.bios_version = Some(bios.trim().to_string());
                if bios.contains("seabios") || bios.contains("rel-1.") || bios.contains("debian-1.")
                {
                    fw.bios_vendor = Some("SeaBIOS".into());
                }
            }
        }
        if line.contains("by EDK II") {
            fw.bios_vendor = Some("EFI Development Kit II / OVMF".into());
        }
    }
    fw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::{FirmwareKind, Platform, QemuMachine};

    #[test]
    fn qemu_guests_from_their_dmi_and_efi_lines() {
        let fw = firmware_from_log(
            "[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS rel-1.16.2-0-gea1b7a073390-prebuilt.qemu.org 04/01/2014\n",
        );
        assert_eq!(fw.kind(), FirmwareKind::SeaBios);
        assert_eq!(fw.platform(), Platform::Qemu);
        assert_eq!(fw.qemu_machine(), Some(QemuMachine::Q35));
        let fw = firmware_from_log(
            "[    0.000000] efi: EFI v2.70 by EDK II\n[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 0.0.0 02/06/2015\n",
        );
        assert_eq!(fw.kind(), FirmwareKind::Ovmf);
        assert_eq!(fw.bios_version.as_deref(), Some("0.0.0 02/06/2015"));
        let fw = firmware_from_log(
            "DMI: Supermicro SYS-4029GP-TRT/X11DPG-OT-CPU, BIOS 3.1 01/12/2020\n",
        );
        assert_eq!(
            fw.sys_vendor.as_deref(),
            Some("Supermicro SYS-4029GP-TRT/X11DPG-OT-CPU")
        );
        assert_eq!(fw.kind(), FirmwareKind::Unknown);
        assert_eq!(firmware_from_log("nothing here"), Firmware::default());
    }
}
