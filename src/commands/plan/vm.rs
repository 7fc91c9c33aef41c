//! The VM the firmware will see: firmware build and its rules, QEMU release,
//! machine type and version, vCPU (model, address bits, 1 GiB pages,
//! vendor, GuestPhysBits), RAM and memory hot-plug, QEMU's hole and OVMF's
//! aperture, empty hot-plug ports; from flags over the configuration over
//! the host's packages over defaults, every default said once in `assumed`
//! with the flag that settles it.

use super::config::Config;
use super::{usage, PlanError, PlanOptions};
use crate::decide::window::rules::bundled_seabios;
use crate::decide::window::{cpu_models, qemu};
use crate::decide::window::{
    ram_end, Firmware, Machine, OvmfRules, QemuRules, QemuVersion, SeabiosRules, Setup,
    QEMU_DEFAULT_PHYS_BITS,
};
use crate::evidence::host::{HostEvidence, ASSUMED_HOST_PHYS_BITS};
use crate::model::platform::{Cpu, CpuVendor};
use crate::parse::release::installed_version;
use crate::parse::release::{edk2_build, machine_version, qemu_version, seabios_version};
use crate::report::plan::VmReport;

use crate::decide::window::qemu::GIB;

/// The QEMU release: `--qemu`, else the host's package, else 7.2's rules.
fn qemu_release(
    host: &HostEvidence,
    o: &PlanOptions,
    assumed: &mut Vec<String>,
) -> Result<QemuVersion, PlanError> {
    if let Some(v) = &o.qemu {
        return qemu_version(v).ok_or_else(|| {
            usage(format!(
                "--qemu {v:?}: expected a version such as 7.2 or 10.0.2"
            ))
        });
    }
    match installed_version(&host.packages, &["pve-qemu-kvm", "qemu-system-x86"]) {
        Some((_, v)) if qemu_version(&v).is_some() => Ok(qemu_version(&v).expect("checked")),
        found => {
            let why = match found {
                Some((pkg, v)) => format!("{pkg} {v} names no QEMU release"),
                None => "no pve-qemu-kvm or qemu-system-x86 package found".into(),
            };
            assumed.push(format!(
                "QEMU 7.1 or later (the rules of Debian 12's 7.2): {why}; give --qemu VERSION"
            ));
            Ok(QemuVersion(7, 2))
        }
    }
}

/// The firmware and its rules: `--firmware`, else the configuration's,
/// else SeaBIOS; its build from the flag's version, else the host's
/// package; with the version to show.
fn firmware(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    qemu_v: QemuVersion,
    assumed: &mut Vec<String>,
) -> Result<(Firmware, Option<String>), PlanError> {
    let pve_qemu = installed_version(&host.packages, &["pve-qemu-kvm"]);
    let fw_arg = o
        .firmware
        .clone()
        .or(c.firmware.clone())
        .unwrap_or_else(|| {
            assumed.push("SeaBIOS (QEMU's default firmware; give --firmware)".into());
            "seabios".into()
        });
    let (fw_name, fw_version) = match fw_arg.split_once(':') {
        Some((n, v)) => (n.to_ascii_lowercase(), Some(v.to_string())),
        None => (fw_arg.to_ascii_lowercase(), None),
    };
    Ok(match fw_name.as_str() {
        "ovmf" | "efi" | "uefi" => {
            // A version given is held to; one read from dpkg that does not
            // name a release is a default, said as such.
            let package = installed_version(
                &host.packages,
                &["pve-edk2-firmware-ovmf", "pve-edk2-firmware", "ovmf"],
            );
            let rules = match (&fw_version, &package) {
                (Some(v), _) => OvmfRules::of(edk2_build(v).ok_or_else(|| {
                    usage(format!(
                        "--firmware ovmf:{v}: expected an edk2 release such as 2022.11"
                    ))
                })?),
                (None, Some((_, v))) if edk2_build(v).is_some() => {
                    OvmfRules::of(edk2_build(v).expect("just checked"))
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
            // F7: Proxmox's QEMU boots the SeaBIOS it bundles, by its own
            // version; Debian's and Ubuntu's boot the `seabios` package's.
            let package = installed_version(&host.packages, &["seabios"]);
            let (v, shown) = match (&fw_version, &pve_qemu, &package) {
                (Some(v), _, _) => (
                    seabios_version(v).ok_or_else(|| {
                        usage(format!(
                            "--firmware seabios:{v}: expected a version such as 1.16.3"
                        ))
                    })?,
                    Some(v.clone()),
                ),
                (None, Some((_, pv)), _) => {
                    let q = qemu_version(pv).unwrap_or(qemu_v);
                    let s = bundled_seabios(q);
                    (s, Some(format!("{s} (bundled with pve-qemu-kvm {pv})")))
                }
                (None, None, Some((_, v))) if seabios_version(v).is_some() => {
                    (seabios_version(v).expect("just checked"), Some(v.clone()))
                }
                (None, None, found) => {
                    let why = match found {
                        Some((pkg, v)) => format!("{pkg} {v} is no SeaBIOS version"),
                        None => "no seabios or pve-qemu-kvm package found".into(),
                    };
                    assumed.push(format!(
                        "SeaBIOS 1.16.2 (above RAM): {why}; give --firmware seabios:VERSION"
                    ));
                    (crate::decide::window::SeabiosVersion(1, 16, 2), None)
                }
            };
            (Firmware::SeaBios(SeabiosRules::of(v)), shown)
        }
        other => {
            return Err(usage(format!(
                "--firmware {other:?}: expected ovmf or seabios"
            )))
        }
    })
}

/// The machine type: `--machine`, else the configuration's, else q35;
/// with the version a versioned type pins.
fn machine(
    o: &PlanOptions,
    c: &Config,
    assumed: &mut Vec<String>,
) -> Result<(Machine, Option<QemuVersion>), PlanError> {
    let machine_arg = o.machine.clone().or(c.machine.clone()).unwrap_or_else(|| {
        assumed.push("machine type q35 (give --machine)".into());
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
            "--machine {machine_arg:?}: expected q35, pc, pc-q35-X.Y or pc-i440fx-X.Y"
        )));
    };
    Ok((machine, machine_version(&machine_arg)))
}

/// The vCPU the guest gets.
struct Vcpu {
    model: String,
    phys_bits: u32,
    pdpe1gb: bool,
    vendor: Option<CpuVendor>,
}

/// The vCPU: its model, address bits, 1 GiB pages and vendor, from flags
/// over the configuration over the host's CPU.
fn vcpu(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    assumed: &mut Vec<String>,
) -> Result<Vcpu, PlanError> {
    // The vCPU: a named model has QEMU's 40 bits and its own 1 GiB pages
    // (cpu_models); `host` has the host's; the vendor is the host's under
    // KVM.
    let host_cpu: Option<Cpu> = host.cpu;
    let model = o
        .cpu
        .clone()
        .or(c.cpu_model.clone())
        .unwrap_or_else(|| "qemu64".into());
    let is_host = model == "host" || model == "max" || (o.cpu.is_none() && c.cpu_host);
    let host_bits = || host.host_phys_bits().unwrap_or(ASSUMED_HOST_PHYS_BITS);
    if (is_host || c.phys_bits_host || c.host_bits_assumed) && host.host_phys_bits().is_none() {
        assumed.push(format!(
            "{ASSUMED_HOST_PHYS_BITS} host address bits (no /proc/cpuinfo under the root)"
        ));
    }
    // A1 downstream: RHEL's qemu-kvm turns host-phys-bits on for named
    // models (secondary sources only: tp-qemu's host_phys_bits test, a
    // qemu-devel thread); not modelled, said.
    if !is_host && o.phys_bits.is_none() && c.phys_bits.is_none() && host.redhat_release {
        assumed.push("QEMU's 40 address bits for a named model, as upstream; RHEL-family qemu-kvm is said to give the host's (host-phys-bits, limit 48): give --phys-bits N".into());
    }
    let mut phys_bits = if is_host || c.phys_bits_host {
        qemu::host_phys_bits(host_bits(), c.phys_bits_limit)
    } else {
        c.phys_bits.unwrap_or(QEMU_DEFAULT_PHYS_BITS)
    };
    if let Some(b) = o.phys_bits {
        if !qemu::PHYS_BITS_ACCEPTED.contains(&b) {
            return Err(usage(format!(
                "--phys-bits {b}: QEMU refuses a 64-bit vCPU outside 32 to 52 bits"
            )));
        }
        phys_bits = b;
    }
    let mut pdpe1gb = if is_host || c.host_model {
        host_cpu.and_then(|h| h.pdpe1gb).unwrap_or(true)
    } else {
        // A5/H4: the named model's own flag.
        match cpu_models::pdpe1gb(&model) {
            Some(p) => p,
            None => {
                assumed.push(format!(
                    "CPU model {model} without pdpe1gb (not in the model table; give --cpu-flag pdpe1gb)"
                ));
                false
            }
        }
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
    }
    let vendor = match o.cpu_vendor.as_deref() {
        Some("amd") | Some("AMD") | Some("AuthenticAMD") => Some(CpuVendor::Amd),
        Some("intel") | Some("Intel") | Some("GenuineIntel") => Some(CpuVendor::Intel),
        Some(v) => return Err(usage(format!("--cpu-vendor {v:?}: expected amd or intel"))),
        None => match c.vendor.or(host_cpu.and_then(|h| h.vendor)) {
            Some(v) => Some(v),
            None => {
                assumed.push(
                    "an Intel vCPU vendor (no /proc/cpuinfo under the root; give --cpu-vendor)"
                        .into(),
                );
                None
            }
        },
    };
    Ok(Vcpu {
        model,
        phys_bits,
        pdpe1gb,
        vendor,
    })
}

/// Guest RAM as given, the RAM QEMU boots with (Proxmox's memory
/// hot-plug boots 1 GiB), and the hot-plug area above it.
fn memory(o: &PlanOptions, c: &Config, assumed: &mut Vec<String>) -> (u64, u64, u64) {
    let ram = o.ram.or(c.ram).unwrap_or_else(|| {
        assumed.push("1 GiB of guest RAM (give --ram)".into());
        GIB
    });
    // B3/B9/G10: the memory hot-plug area. Proxmox boots `-m
    // size=1024,slots=255,maxmem=...` with the rest as DIMMs (Memory.pm).
    let maxmem = o.maxmem.or(c.maxmem);
    let boot_ram = if o.ram.is_none() {
        c.static_ram.unwrap_or(ram)
    } else {
        ram
    };
    let slots = o.mem_slots.or(c.mem_slots);
    let slots = match (maxmem, slots) {
        (Some(m), None) if m > boot_ram => {
            assumed.push("255 memory slots (give --mem-slots)".into());
            255
        }
        (_, s) => s.unwrap_or(0),
    };
    (ram, boot_ram, qemu::device_memory(maxmem, boot_ram, slots))
}

/// The model's setup and the report's account of the VM.
pub(super) fn resolve(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    warnings: &mut Vec<String>,
) -> Result<(Setup, VmReport), PlanError> {
    let mut assumed: Vec<String> = Vec::new();
    let qemu_v = qemu_release(host, o, &mut assumed)?;
    let (firmware, version) = firmware(host, o, c, qemu_v, &mut assumed)?;
    let (machine, machine_v) = machine(o, c, &mut assumed)?;
    let qemu = QemuRules::of(qemu_v, machine_v);
    let Vcpu {
        model,
        phys_bits,
        pdpe1gb,
        vendor,
    } = vcpu(host, o, c, &mut assumed)?;

    let guest_phys_bits = o.guest_phys_bits.or(c.guest_phys_bits);
    if guest_phys_bits.is_none()
        && qemu.guest_phys_bits
        && matches!(firmware, Firmware::Ovmf(r) if r.guest_phys_bits)
    {
        assumed.push("no GuestPhysBits (QEMU 9.1+ under KVM on Linux 6.10+ reports min(KVM's, phys-bits); give --guest-phys-bits N)".into());
    }
    let (ram, boot_ram, device_memory) = memory(o, c, &mut assumed);
    let hole64 = o.hole64.or(c.hole64);
    let mmio64 = o.mmio64.or(c.mmio64);
    if mmio64.is_some() && !matches!(firmware, Firmware::Ovmf(_)) {
        warnings.push("X-PciMmio64Mb is an OVMF setting; SeaBIOS ignores it".into());
    }
    let setup = Setup {
        firmware,
        machine,
        qemu,
        phys_bits,
        vendor,
        pdpe1gb,
        guest_phys_bits,
        ram_end: ram_end(machine, boot_ram),
        device_memory,
        hole64,
        mmio64,
        empty_ports: o.empty_ports.or(c.empty_ports).unwrap_or(0),
        guest_mem: match o.guest_mem {
            // mem=0 boots no kernel.
            Some(0) => {
                return Err(usage(
                    "--guest-mem: the guest kernel needs some RAM (a size above 0)",
                ))
            }
            g => g,
        },
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
        qemu_version: qemu_v.to_string(),
        assumed,
    };
    Ok((setup, vm))
}
