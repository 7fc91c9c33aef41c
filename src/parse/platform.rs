//! The machine as a boot log describes it, for `explain`, which has no
//! `/sys/class/dmi/id` to read: the kernel's `DMI:` line names vendor,
//! product and BIOS version; OVMF announces itself as `EFI v2.70 by EDK II`,
//! SeaBIOS leaves its name in the BIOS version.

use crate::model::platform::{Cpu, CpuVendor, Firmware};

/// Firmware and machine from the boot log's `DMI:` line, the EFI banner
/// (`efi: EFI v2.70 by EDK II`, `... by VMware, Inc.`), and, where there is
/// no DMI line, `Hypervisor detected:`.
///
/// A VMware VM's DMI tells its firmware: legacy BIOS VMs are a `VMware
/// Virtual Platform` with Phoenix's `BIOS 6.00`, EFI VMs a `VMware7,1` (or
/// later) with `BIOS VMW...` and an EFI banner. `bios_vendor` is set as
/// sysfs would give it, which is what the hints read.
pub(crate) fn firmware_from_log(text: &str) -> Firmware {
    let mut fw = Firmware::default();
    let mut efi_by: Option<String> = None;
    let mut hypervisor: Option<String> = None;
    for line in text.lines() {
        if let Some(i) = line.find("DMI: ") {
            let dmi = &line[i + 5..];
            let (machine, bios) = dmi.split_once(", BIOS ").unwrap_or((dmi, ""));
            if let Some(product) = machine.strip_prefix("QEMU ") {
                fw.sys_vendor = Some("QEMU".into());
                fw.product_name = Some(product.trim().to_string());
            } else if let Some(product) = machine.strip_prefix("VMware, Inc. ") {
                fw.sys_vendor = Some("VMware, Inc.".into());
                fw.product_name = Some(product.split('/').next().unwrap_or("").trim().to_string());
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
        if let Some(i) = line.find("efi: EFI v") {
            if let Some((_, by)) = line[i..].split_once(" by ") {
                efi_by = Some(by.trim().to_string());
            }
        }
        if let Some(i) = line.find("Hypervisor detected: ") {
            hypervisor = Some(line[i + "Hypervisor detected: ".len()..].trim().to_string());
        }
    }
    match efi_by.as_deref() {
        Some(by) if by.contains("EDK II") => {
            fw.bios_vendor = Some("EFI Development Kit II / OVMF".into());
        }
        Some(by) if fw.bios_vendor.is_none() => fw.bios_vendor = Some(by.to_string()),
        _ => {}
    }
    let vmware = fw
        .sys_vendor
        .as_deref()
        .is_some_and(|v| v.contains("VMware"));
    if vmware && efi_by.is_none() && fw.bios_vendor.is_none() {
        let legacy = fw.product_name.as_deref() == Some("VMware Virtual Platform")
            || fw
                .bios_version
                .as_deref()
                .is_some_and(|v| v.starts_with("6.00"));
        if legacy {
            fw.bios_vendor = Some("Phoenix Technologies LTD".into());
        }
    }
    if fw.sys_vendor.is_none() && fw.product_name.is_none() {
        match hypervisor.as_deref() {
            Some(h) if h.starts_with("VMware") => fw.sys_vendor = Some("VMware, Inc.".into()),
            Some(h) if h.contains("Hyper-V") => {
                fw.sys_vendor = Some("Microsoft Corporation".into());
                fw.product_name = Some("Virtual Machine".into());
            }
            Some(h) if h.starts_with("KVM") => fw.product_name = Some("KVM".into()),
            Some(h) if h.starts_with("Xen") => fw.sys_vendor = Some("Xen".into()),
            _ => {}
        }
    }
    fw
}

/// What the log says of the CPU: its vendor (`smpboot: CPU0: Intel(R)
/// Xeon(R) ...`, `... AMD EPYC ...`), and whether it runs under a
/// hypervisor (`Hypervisor detected:`). Address bits are not logged.
pub(crate) fn cpu_from_log(text: &str) -> Cpu {
    let mut cpu = Cpu::default();
    for line in text.lines() {
        if let Some(i) = line.find("smpboot: CPU0: ") {
            let name = &line[i + "smpboot: CPU0: ".len()..];
            cpu.vendor = Some(
                if name.starts_with("Intel") || name.contains("GenuineIntel") {
                    CpuVendor::Intel
                } else if name.starts_with("AMD") || name.contains("AuthenticAMD") {
                    CpuVendor::Amd
                } else {
                    CpuVendor::Other
                },
            );
        }
        if line.contains("Hypervisor detected: ") {
            cpu.hypervisor = Some(true);
        }
    }
    cpu
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

    #[test]
    fn vmware_legacy_bios_and_efi_vms() {
        // The DMI line of corpus 32 (a legacy BIOS VM).
        let legacy = firmware_from_log(
            "[    0.000000] DMI: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 02/27/2020\n",
        );
        assert_eq!(legacy.platform(), Platform::Vmware);
        assert_eq!(
            legacy.product_name.as_deref(),
            Some("VMware Virtual Platform")
        );
        assert!(legacy.bios_vendor.as_deref().unwrap().contains("Phoenix"));
        let efi = firmware_from_log(
            "[    0.000000] efi: EFI v2.70 by VMware, Inc.\n[    0.000000] DMI: VMware, Inc. VMware7,1/440BX Desktop Reference Platform, BIOS VMW71.00V.21805430.B64.2305221830 05/22/2023\n",
        );
        assert_eq!(efi.platform(), Platform::Vmware);
        assert_eq!(efi.bios_vendor.as_deref(), Some("VMware, Inc."));
    }

    #[test]
    fn the_hypervisor_line_when_there_is_no_dmi_line() {
        for (line, want) in [
            ("Hypervisor detected: VMware", Platform::Vmware),
            ("Hypervisor detected: Microsoft Hyper-V", Platform::HyperV),
            ("Hypervisor detected: KVM", Platform::OtherVm),
            ("Hypervisor detected: Xen HVM", Platform::OtherVm),
        ] {
            assert_eq!(firmware_from_log(line).platform(), want, "{line}");
            assert_eq!(cpu_from_log(line).hypervisor, Some(true));
        }
        // DMI wins.
        let fw = firmware_from_log("DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 0.0.0 02/06/2015\nHypervisor detected: KVM\n");
        assert_eq!(fw.platform(), Platform::Qemu);
    }

    #[test]
    fn cpu_vendor_from_smpboot() {
        let intel = cpu_from_log("[    0.390000] smpboot: CPU0: Intel(R) Xeon(R) Platinum 8480+ (family: 0x6, model: 0x8f, stepping: 0x8)");
        assert_eq!(intel.vendor, Some(CpuVendor::Intel));
        let amd = cpu_from_log("smpboot: CPU0: AMD EPYC 9654 96-Core Processor (family: 0x19, model: 0x11, stepping: 0x1)");
        assert_eq!(amd.vendor, Some(CpuVendor::Amd));
        assert_eq!(cpu_from_log("nothing").vendor, None);
    }
}
