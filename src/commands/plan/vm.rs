//! The VM the firmware will see: firmware build and its rules, QEMU release,
//! machine type and version, vCPU (model, address bits, 1 GiB pages,
//! vendor, GuestPhysBits), RAM and memory hot-plug, QEMU's hole and OVMF's
//! aperture, empty hot-plug ports; from flags over the configuration over
//! the host's packages over defaults, every default said once in `assumed`
//! with the flag that settles it.

use super::config::{parse_accel, Accel, Config};
use super::{usage, PlanError, PlanOptions};
use crate::decide::window::rules::bundled_seabios;
use crate::decide::window::{cpu_models, qemu};
use crate::decide::window::{
    ram_end, Firmware, Layout, Machine, OvmfRules, QemuRules, QemuVersion, SeabiosRules, Setup,
    QEMU_DEFAULT_PHYS_BITS,
};
use crate::evidence::host::{HostEvidence, ASSUMED_HOST_PHYS_BITS};
use crate::model::platform::{Cpu, CpuVendor};
use crate::parse::release::installed_version;
use crate::parse::release::{edk2_build, machine_version, qemu_version, seabios_version};
use crate::report::plan::VmReport;

/// The QEMU release: `--qemu`, else the host's package, else 7.2's rules,
/// or the first release of the named CPU model (`needs`) where that is
/// later.
fn qemu_release(
    host: &HostEvidence,
    o: &PlanOptions,
    needs: Option<(&str, QemuVersion)>,
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
            match needs.filter(|(_, v)| *v > QemuVersion(7, 2)) {
                Some((model, v)) => {
                    assumed.push(format!(
                        "QEMU {v} (CPU model {model} came with it): {why}; give --qemu VERSION"
                    ));
                    Ok(v)
                }
                None => {
                    assumed.push(format!(
                        "QEMU 7.1 or later (the rules of Debian 12's 7.2): {why}; give --qemu VERSION"
                    ));
                    Ok(QemuVersion(7, 2))
                }
            }
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
                    // F7: QEMU's own build boots the SeaBIOS it bundles; a
                    // distribution's QEMU its seabios package's.
                    let why = match found {
                        Some((pkg, v)) => format!("{pkg} {v} is no SeaBIOS version"),
                        None => "no seabios or pve-qemu-kvm package found".into(),
                    };
                    let s = bundled_seabios(qemu_v);
                    assumed.push(format!(
                        "SeaBIOS {s}, the one QEMU {qemu_v} bundles: {why}; give --firmware seabios:VERSION"
                    ));
                    (s, None)
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
    /// The named model QEMU must have.
    named: Option<cpu_models::CpuModel>,
    /// Its width was set before QEMU's accelerator realized it (`host`,
    /// `max` under KVM, host-phys-bits, `phys-bits=N`), so QEMU 9.1+ can
    /// derive a GuestPhysBits from it (A6m).
    width_set: bool,
    /// `host-phys-bits-limit`, where the host's width is taken.
    limit: Option<u32>,
}

/// The vCPU: its model, address bits, 1 GiB pages and vendor, from flags
/// over the configuration over the host's CPU.
fn vcpu(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    accel: Accel,
    assumed: &mut Vec<String>,
) -> Result<Vcpu, PlanError> {
    // A named model has QEMU's 40 bits and its own 1 GiB pages
    // (cpu_models); `host` has the host's; the vendor is the host's under
    // KVM, the model's own under TCG.
    let host_cpu: Option<Cpu> = host.cpu;
    let model = o
        .cpu
        .clone()
        .or(c.cpu_model.clone())
        .unwrap_or_else(|| "qemu64".into());
    let tcg = accel == Accel::Tcg;
    let host_named = model == "host" || (o.cpu.is_none() && c.cpu_host);
    if tcg && host_named {
        return Err(usage(format!(
            "cpu {model}: QEMU has no host CPU model without KVM (\"CPU model 'host' requires KVM or HVF\")"
        )));
    }
    // A3/A2: `host`, and `max` under KVM, take the host's width
    // (host-cpu.c host_cpu_max_instance_init sets host-phys-bits); `max`
    // under TCG is its own model, AMD at 40 bits with 1 GiB pages.
    let tcg_max = tcg && model == "max";
    let is_host = !tcg && (host_named || model == "max");
    let host_bits = || host.host_phys_bits().unwrap_or(ASSUMED_HOST_PHYS_BITS);
    if (is_host || c.phys_bits_host || c.host_bits_assumed) && host.host_phys_bits().is_none() {
        assumed.push(format!(
            "{ASSUMED_HOST_PHYS_BITS} host address bits (no /proc/cpuinfo under the root)"
        ));
    }
    // A1 downstream: RHEL's qemu-kvm turns host-phys-bits on for named
    // models (qemu-kvm 8.1.0-4 hw/i386/pc.c pc_rhel_compat: host-phys-bits
    // on, limit 48); not read from the host, said.
    if !is_host && o.phys_bits.is_none() && c.phys_bits.is_none() && host.redhat_release {
        assumed.push("QEMU's 40 address bits for a named model, as upstream; RHEL-family qemu-kvm gives the host's, at most 48 (host-phys-bits on, host-phys-bits-limit 48): give --phys-bits N".into());
    }
    let host_width = is_host || c.phys_bits_host;
    let mut phys_bits = if host_width {
        qemu::host_phys_bits(host_bits(), c.phys_bits_limit)
    } else {
        c.phys_bits.unwrap_or(QEMU_DEFAULT_PHYS_BITS)
    };
    let mut width_set = host_width || c.phys_bits.is_some();
    if let Some(b) = o.phys_bits {
        if !qemu::PHYS_BITS_ACCEPTED.contains(&b) {
            return Err(usage(format!(
                "--phys-bits {b}: QEMU refuses a 64-bit vCPU outside 32 to 52 bits"
            )));
        }
        phys_bits = b;
        width_set = true;
    }
    let named = if tcg_max {
        Some(cpu_models::TCG_MAX)
    } else if is_host {
        None
    } else {
        cpu_models::model(&model).copied()
    };
    let mut pdpe1gb = if is_host || c.host_model {
        host_cpu.and_then(|h| h.pdpe1gb).unwrap_or(true)
    } else {
        // A5/H4: the named model's own flag.
        match named {
            Some(m) => m.pdpe1gb,
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
        None => vendor(host_cpu, c, &model, named, tcg, assumed),
    };
    Ok(Vcpu {
        model,
        phys_bits,
        pdpe1gb,
        vendor,
        named: named.filter(|_| !tcg_max),
        width_set,
        limit: c.phys_bits_limit.filter(|_| host_width),
    })
}

/// The vendor the vCPU reports, without `--cpu-vendor`: one the
/// configuration forces (qemu-server's `vendor=`, cpu_models), else under
/// TCG the model's own, under KVM the host's for every model
/// (target/i386/host-cpu.c host_cpu_instance_init), said where the two
/// differ; the model's own where the host's is not known.
fn vendor(
    host_cpu: Option<Cpu>,
    c: &Config,
    model: &str,
    named: Option<cpu_models::CpuModel>,
    tcg: bool,
    assumed: &mut Vec<String>,
) -> Option<CpuVendor> {
    if let Some(v) = c.vendor {
        return Some(v);
    }
    // libvirt's host-model is the host's CPU, vendor included.
    let own = named.filter(|_| !c.host_model).map(|m| m.vendor);
    if tcg {
        if let Some(v) = own {
            return Some(v.cpu_vendor());
        }
    }
    match (host_cpu.and_then(|h| h.vendor), own) {
        (Some(h), Some(v)) if h != v.cpu_vendor() => {
            assumed.push(format!(
                "the host's vendor for CPU model {model}: under KVM QEMU gives every model the host's; {model}'s own is {} (under TCG, or with vendor=, as Proxmox sets it): give --cpu-vendor",
                v.name()
            ));
            Some(h)
        }
        (Some(h), _) => Some(h),
        (None, Some(v)) => {
            assumed.push(format!(
                "CPU model {model}'s own vendor, {} (no /proc/cpuinfo under the root; under KVM the host's): give --cpu-vendor",
                v.name()
            ));
            Some(v.cpu_vendor())
        }
        (None, None) => {
            assumed.push(
                "an Intel vCPU vendor (no /proc/cpuinfo under the root; give --cpu-vendor)".into(),
            );
            None
        }
    }
}

/// The model's setup and the report's account of the VM.
pub(super) fn resolve(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    warnings: &mut Vec<String>,
) -> Result<(Setup, VmReport), PlanError> {
    let mut assumed: Vec<String> = Vec::new();
    let accel = match o.accel.as_deref() {
        Some(a) => {
            parse_accel(a).ok_or_else(|| usage(format!("--accel {a:?}: expected kvm or tcg")))?
        }
        None => c.accel.unwrap_or(Accel::Kvm),
    };
    let mut cpu_assumed: Vec<String> = Vec::new();
    let Vcpu {
        model,
        phys_bits,
        pdpe1gb,
        vendor,
        named,
        width_set,
        limit,
    } = vcpu(host, o, c, accel, &mut cpu_assumed)?;
    let needs = named.and_then(|m| Some((m.name, m.since?)));
    let qemu_v = qemu_release(host, o, needs, &mut assumed)?;
    let (firmware, version) = firmware(host, o, c, qemu_v, &mut assumed)?;
    let (machine, machine_v) = machine(o, c, &mut assumed)?;
    let qemu = QemuRules::of(qemu_v, machine_v);
    assumed.extend(cpu_assumed);

    // A6/A6m: GuestPhysBits. `--guest-phys-bits` is what the vCPU reports;
    // a configuration's `guest-phys-bits=N` is QEMU's property (checked by
    // QEMU); else what QEMU derives under KVM.
    let guest_phys_bits = match (o.guest_phys_bits, c.guest_phys_bits) {
        (Some(g), _) => Some(g),
        (None, Some(g)) => Some(g),
        (None, None) => {
            let kvm = accel == Accel::Kvm && qemu.guest_phys_bits_auto && width_set;
            let g = kvm.then(|| {
                qemu::kvm_guest_phys_bits(
                    host.host_phys_bits().unwrap_or(ASSUMED_HOST_PHYS_BITS),
                    phys_bits,
                    limit,
                )
            });
            if g.is_some() && matches!(firmware, Firmware::Ovmf(r) if r.guest_phys_bits) {
                assumed.push("a GuestPhysBits from KVM, as Linux 6.10 and later report it (older host kernels report none: give --guest-phys-bits 0)".into());
            }
            g
        }
    };
    let (ram, boot_ram, device_memory) = super::config::memory(o, c, &mut assumed);
    let hole64 = o.hole64.or(c.hole64);
    let mmio64 = o.mmio64.or(c.mmio64);
    if mmio64.is_some() && !matches!(firmware, Firmware::Ovmf(_)) {
        warnings.push("X-PciMmio64Mb is an OVMF setting; SeaBIOS ignores it".into());
    }
    if c.seabios_pci64.is_some()
        && !matches!(firmware, Firmware::SeaBios(r) if r.pad == crate::decide::window::rules::PadMode::RamOrFwCfg)
    {
        warnings.push("opt/org.seabios/pci64 is read by SeaBIOS 1.17.0 and later only; this firmware ignores it".into());
    }
    let setup = Setup {
        firmware,
        machine,
        qemu,
        phys_bits,
        vendor,
        pdpe1gb,
        guest_phys_bits,
        guest_phys_bits_arg: c.guest_phys_bits,
        cpu_model: named,
        ram_end: ram_end(machine, boot_ram),
        device_memory,
        hole64,
        mmio64,
        seabios_pci64: c.seabios_pci64,
        empty_ports: o.empty_ports.or(c.empty_ports).unwrap_or(0),
        layout: super::config::layout(o, c),
        others: super::config::others(o, c, machine),
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
        layout: (setup.layout == Layout::Proxmox).then_some("proxmox"),
        devices64_bytes: setup.others.iter().flat_map(|g| g.bars.clone()).collect(),
        assumed,
    };
    Ok((setup, vm))
}
