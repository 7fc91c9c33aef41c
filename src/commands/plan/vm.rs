//! The VM the firmware will see: firmware and its release's rules, machine
//! type, vCPU (model, address bits, 1 GiB pages, vendor), RAM, QEMU's hole
//! and OVMF's aperture; from flags over the configuration over defaults,
//! every default said in `assumed`.

use super::config::Config;
use super::{usage, PlanError, PlanOptions};
use crate::decide::firmware::{
    ram_end, Firmware, Machine, OvmfRules, Setup, QEMU_DEFAULT_PHYS_BITS,
};
use crate::model::platform::{Cpu, CpuVendor};
use crate::parse::release::{edk2_release, seabios_top};
use crate::read::host;
use crate::read::root::Root;
use crate::report::plan::VmReport;

const GIB: u64 = 1 << 30;

/// The model's setup and the report's account of the VM.
pub(super) fn resolve(
    root: &Root,
    o: &PlanOptions,
    c: &Config,
    warnings: &mut Vec<String>,
) -> Result<(Setup, VmReport), PlanError> {
    let mut assumed: Vec<String> = Vec::new();
    // Firmware and its rules.
    let fw_arg = o
        .firmware
        .clone()
        .or(c.firmware.clone())
        .unwrap_or_else(|| {
            assumed.push("SeaBIOS (QEMU's default firmware)".into());
            "seabios".into()
        });
    let (fw_name, fw_version) = match fw_arg.split_once(':') {
        Some((n, v)) => (n.to_ascii_lowercase(), Some(v.to_string())),
        None => (fw_arg.to_ascii_lowercase(), None),
    };
    let (firmware, version) = match fw_name.as_str() {
        "ovmf" | "efi" | "uefi" => {
            // A version given is held to; one read from dpkg that does not
            // name a release is a default, said as such.
            let package = host::dpkg_version(
                root,
                &["pve-edk2-firmware-ovmf", "pve-edk2-firmware", "ovmf"],
            );
            let rules = match (&fw_version, &package) {
                (Some(v), _) => {
                    let (y, m) = edk2_release(v).ok_or_else(|| {
                        usage(format!(
                            "--firmware ovmf:{v}: expected an edk2 release such as 2022.11"
                        ))
                    })?;
                    OvmfRules::for_release(y, m)
                }
                (None, Some((_, v))) if edk2_release(v).is_some() => {
                    let (y, m) = edk2_release(v).expect("just checked");
                    OvmfRules::for_release(y, m)
                }
                (None, found) => {
                    let why = match found {
                        Some((pkg, v)) => format!("{pkg} {v} names no edk2 release"),
                        None => "no OVMF package found".into(),
                    };
                    assumed.push(format!("OVMF with the rules of edk2-stable202211 (Debian 12's): {why}; give --firmware ovmf:VERSION"));
                    OvmfRules::STABLE_202211
                }
            };
            let shown = fw_version.clone().or(package.map(|(_, v)| v));
            (Firmware::Ovmf(rules), shown)
        }
        "seabios" | "bios" => {
            // Debian's and Ubuntu's QEMU boot the `seabios` package's build;
            // Proxmox bundles its own in pve-qemu-kvm (not looked up).
            let package = host::dpkg_version(root, &["seabios"]);
            let top = match (&fw_version, &package) {
                (Some(v), _) => seabios_top(v).ok_or_else(|| {
                    usage(format!(
                        "--firmware seabios:{v}: expected a version such as 1.16.2"
                    ))
                })?,
                (None, Some((_, v))) if seabios_top(v).is_some() => {
                    seabios_top(v).expect("just checked")
                }
                (None, found) => {
                    let why = match found {
                        Some((pkg, v)) => format!("{pkg} {v} is no SeaBIOS version"),
                        None => "no seabios package found".into(),
                    };
                    assumed.push(format!(
                        "SeaBIOS 1.16.2 placement (above RAM): {why}; give --firmware seabios:VERSION"
                    ));
                    false
                }
            };
            let shown = fw_version.clone().or(package.map(|(_, v)| v));
            (Firmware::SeaBios { top }, shown)
        }
        other => {
            return Err(usage(format!(
                "--firmware {other:?}: expected ovmf or seabios"
            )))
        }
    };

    let machine_arg = o.machine.clone().or(c.machine.clone()).unwrap_or_else(|| {
        assumed.push("machine type q35".into());
        "q35".into()
    });
    let machine = if machine_arg.contains("q35") {
        Machine::Q35
    } else if machine_arg == "pc"
        || machine_arg.contains("i440fx")
        || machine_arg.starts_with("pc-")
    {
        Machine::I440fx
    } else {
        return Err(usage(format!(
            "--machine {machine_arg:?}: expected q35 or pc"
        )));
    };

    // The vCPU: a named model has QEMU's 40 bits and no pdpe1gb; `host`
    // has the host's; the vendor is the host's under KVM.
    let host_cpu: Option<Cpu> = host::host_cpu(root);
    let model = o
        .cpu
        .clone()
        .or(c.cpu_model.clone())
        .unwrap_or_else(|| "qemu64".into());
    let is_host = model == "host" || model == "max" || (o.cpu.is_none() && c.cpu_host);
    let mut phys_bits = if is_host || c.phys_bits_host {
        match host_cpu.and_then(|h| h.phys_bits) {
            Some(b) => b,
            None => {
                assumed.push("46 host address bits (no /proc/cpuinfo under the root)".into());
                46
            }
        }
    } else {
        c.phys_bits.unwrap_or(QEMU_DEFAULT_PHYS_BITS)
    };
    if let Some(b) = o.phys_bits {
        if !(8..=64).contains(&b) {
            return Err(usage(format!("--phys-bits {b}: expected 8 to 64")));
        }
        phys_bits = b;
    }
    let mut pdpe1gb = if is_host {
        host_cpu.and_then(|h| h.pdpe1gb).unwrap_or(true)
    } else {
        false
    };
    for (on, f) in &c.flags {
        if f == "pdpe1gb" {
            pdpe1gb = *on;
        }
    }
    for f in &o.cpu_flags {
        match f.trim_start_matches('+') {
            "pdpe1gb" => pdpe1gb = true,
            "-pdpe1gb" => pdpe1gb = false,
            _ => {}
        }
        if f == "-pdpe1gb" {
            pdpe1gb = false;
        }
    }
    let vendor = match o.cpu_vendor.as_deref() {
        Some("amd") | Some("AMD") | Some("AuthenticAMD") => Some(CpuVendor::Amd),
        Some("intel") | Some("Intel") | Some("GenuineIntel") => Some(CpuVendor::Intel),
        Some(v) => return Err(usage(format!("--cpu-vendor {v:?}: expected amd or intel"))),
        None => match host_cpu.and_then(|h| h.vendor) {
            Some(v) => Some(v),
            None => {
                assumed.push("an Intel vCPU vendor (no /proc/cpuinfo under the root)".into());
                None
            }
        },
    };
    let ram = o.ram.or(c.ram).unwrap_or_else(|| {
        assumed.push("1 GiB of guest RAM".into());
        GIB
    });
    let hole64 = o.hole64.or(c.hole64);
    let mmio64 = o.mmio64.or(c.mmio64);
    if mmio64.is_some() && !matches!(firmware, Firmware::Ovmf(_)) {
        warnings.push("X-PciMmio64Mb is an OVMF setting; SeaBIOS ignores it".into());
    }
    let setup = Setup {
        firmware,
        machine,
        phys_bits,
        vendor,
        pdpe1gb,
        ram_end: ram_end(machine, ram),
        hole64,
        mmio64,
        empty_ports: o.empty_ports.unwrap_or(0),
        amd_1tb_hole: machine_version(&machine_arg).is_none_or(|v| v > (7, 0)),
    };
    let vm = VmReport {
        source: c.source.clone(),
        firmware: if matches!(firmware, Firmware::Ovmf(_)) {
            "ovmf"
        } else {
            "seabios"
        },
        firmware_version: version,
        machine: match machine {
            Machine::Q35 => "q35",
            Machine::I440fx => "pc",
        },
        ram_bytes: ram,
        cpu_model: model,
        phys_bits,
        pdpe1gb,
        cpu_vendor: vendor,
        hole64_bytes: hole64,
        mmio64_bytes: mmio64,
        realloc: o.realloc,
        assumed,
    };
    Ok((setup, vm))
}

/// The version a versioned machine type pins (`pc-q35-7.0`,
/// `pc-i440fx-6.2+pve0`, `pc-1.3`); `None` for an alias (`q35`, `pc`),
/// which is the newest.
fn machine_version(machine: &str) -> Option<(u32, u32)> {
    let name = machine.split([',', '+']).next()?;
    let (_, v) = name.rsplit_once('-')?;
    let (major, minor) = v.split_once('.')?;
    Some((major.parse().ok()?, minor.split('.').next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::machine_version;

    #[test]
    fn machine_type_versions() {
        assert_eq!(machine_version("pc-q35-7.0"), Some((7, 0)));
        assert_eq!(machine_version("pc-q35-8.1+pve0"), Some((8, 1)));
        assert_eq!(
            machine_version("pc-i440fx-10.0,viommu=virtio"),
            Some((10, 0))
        );
        assert_eq!(machine_version("pc-1.3"), Some((1, 3)));
        assert_eq!(machine_version("q35"), None);
        assert_eq!(machine_version("pc"), None);
        assert_eq!(machine_version("pc-q35-rhel9.4.0"), None);
    }
}
