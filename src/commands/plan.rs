//! `gpu-preflight plan`: on the host, before the VM starts, whether its GPUs
//! will fit, and the smallest configuration change if not. The same model
//! and prescriptions as `check` (`decide::firmware`, `decide::prescribe`),
//! fed from a Proxmox or libvirt configuration and the host's own sysfs,
//! or from flags; flags win over the configuration.

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::firmware::{
    Firmware, GpuBars, Machine, NoBoot, OvmfRules, Setup, QEMU_DEFAULT_PHYS_BITS,
};
use crate::decide::hints::{plan_hints, VmTarget};
use crate::decide::prescribe::{model_origin, Model};
use crate::decide::sizing::{align_up, packed_size, Block};
use crate::model::pci::PciAddress;
use crate::model::platform::{Cpu, CpuVendor};
use crate::model::range::FOUR_GIB;
use crate::model::size::human;
use crate::parse::{libvirt, proxmox, qemu_args};
use crate::read::host;
use crate::read::root::Root;
use crate::report::plan::{
    self, PlanBar, PlanCapacity, PlanGpu, PlanReport, Predicted, VmReport, WindowSpan,
};
use crate::report::HintReport;
use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

#[derive(Debug, Clone, Default)]
pub(crate) struct PlanOptions {
    pub root: PathBuf,
    pub proxmox: Option<String>,
    pub libvirt: Option<PathBuf>,
    pub gpu: Vec<String>,
    pub gpus: Option<usize>,
    pub bar: Vec<u64>,
    pub ram: Option<u64>,
    /// `ovmf`, `ovmf:2022.11`, `seabios`, `seabios:1.16.3`.
    pub firmware: Option<String>,
    /// `q35` or `pc`.
    pub machine: Option<String>,
    pub phys_bits: Option<u32>,
    pub cpu_flags: Vec<String>,
    /// A CPU model, or `host`.
    pub cpu: Option<String>,
    /// `amd` or `intel`: the vendor the vCPU reports (under KVM, the
    /// host's).
    pub cpu_vendor: Option<String>,
    pub hole64: Option<u64>,
    pub mmio64: Option<u64>,
    pub realloc: bool,
    pub empty_ports: Option<usize>,
}

/// Why there is no plan.
#[derive(Debug)]
pub(crate) enum PlanError {
    /// Bad arguments or a malformed configuration: exit 2.
    Usage(String),
    /// An input that cannot be read: exit 3.
    Unreadable(String),
}

/// What the configuration says, before flags override it.
#[derive(Debug, Default)]
struct Config {
    source: String,
    /// The configuration file, for messages.
    file: Option<String>,
    firmware: Option<String>,
    machine: Option<String>,
    ram: Option<u64>,
    cpu_model: Option<String>,
    cpu_prop: String,
    flags: Vec<(bool, String)>,
    phys_bits: Option<u32>,
    phys_bits_host: bool,
    hole64: Option<u64>,
    mmio64: Option<u64>,
    args: String,
    /// (file and line for messages, host devices).
    gpus: Vec<(String, Vec<PciAddress>)>,
    target: Option<VmTarget>,
    warnings: Vec<String>,
}

fn usage(msg: impl Into<String>) -> PlanError {
    PlanError::Usage(msg.into())
}

/// `0000:41:00.0`, `41:00.0` (one function), `41:00` (all of them).
fn host_functions(root: &Root, spec: &str) -> Result<Vec<PciAddress>, String> {
    if let Ok(a) = spec.parse::<PciAddress>() {
        return Ok(vec![a]);
    }
    let whole: PciAddress = format!("{spec}.0")
        .parse()
        .map_err(|_| format!("{spec:?} is not a PCI address"))?;
    let f = host::functions_of(root, whole.domain, whole.bus, whole.device);
    if f.is_empty() {
        return Err(format!("no PCI device {spec} on this host"));
    }
    Ok(f)
}

fn from_proxmox(root: &Root, arg: &str) -> Result<Config, PlanError> {
    let path = host::proxmox_config_path(root, arg);
    let shown = path.display().to_string();
    let text = host::read_file(&path).map_err(PlanError::Unreadable)?;
    let pve = proxmox::parse_config(&text)
        .map_err(|e| usage(format!("{shown} line {}: {}", e.line, e.msg)))?;
    let vmid = if arg.bytes().all(|b| b.is_ascii_digit()) {
        arg.to_string()
    } else {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "<vmid>".into())
    };
    let mut c = Config {
        source: format!("proxmox:{vmid}"),
        file: Some(shown.clone()),
        firmware: Some(pve.bios.clone().unwrap_or_else(|| "seabios".into())),
        machine: Some(pve.machine.clone().unwrap_or_else(|| "pc".into())),
        ram: Some(pve.memory_mib.unwrap_or(512) << 20),
        args: pve.args.clone().unwrap_or_default(),
        ..Config::default()
    };
    let cpu = pve
        .cpu
        .clone()
        .unwrap_or_else(|| proxmox::parse_cpu("").expect("the default parses"));
    c.cpu_model = Some(cpu.model.clone());
    c.cpu_prop = text
        .lines()
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| l.strip_prefix("cpu:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "kvm64".into());
    c.flags = cpu.flags.clone();
    match cpu.phys_bits {
        Some(proxmox::PhysBits::Bits(b)) => c.phys_bits = Some(b),
        Some(proxmox::PhysBits::Host) => c.phys_bits_host = true,
        None => {}
    }
    let args_line = text
        .lines()
        .take_while(|l| !l.starts_with('['))
        .position(|l| l.starts_with("args:"))
        .map(|i| i + 1)
        .unwrap_or(0);
    let w = qemu_args::window_args(&qemu_args::words(&c.args))
        .map_err(|e| usage(format!("{shown} line {args_line}: args: {e}")))?;
    c.hole64 = w.hole64;
    c.mmio64 = w.mmio64;
    if pve.memory_hotplug {
        c.warnings.push("memory hotplug is on: QEMU's 64-bit hole then starts above the hot-plug area, which the prediction does not model".into());
    }
    let mapping_text = pve
        .hostpci
        .iter()
        .any(|h| h.mapping.is_some())
        .then(|| host::read_file(&root.join("etc/pve/mapping/pci.cfg")))
        .transpose()
        .map_err(PlanError::Unreadable)?;
    let node = host::node_name(root);
    for h in &pve.hostpci {
        let at = format!("{shown} line {}", h.line);
        let specs = match &h.mapping {
            Some(name) => {
                proxmox::mapping_paths(mapping_text.as_deref().unwrap_or(""), name, node.as_deref())
                    .ok_or_else(|| {
                        usage(format!(
                            "{at}: mapping {name:?} is not in /etc/pve/mapping/pci.cfg"
                        ))
                    })?
            }
            None => h.hosts.clone(),
        };
        let mut funcs = Vec::new();
        for spec in &specs {
            funcs.extend(
                host_functions(root, spec)
                    .map_err(|e| PlanError::Unreadable(format!("{at}: {e}")))?,
            );
        }
        c.gpus.push((at, funcs));
    }
    c.target = Some(VmTarget::Proxmox {
        vmid,
        cpu: c.cpu_prop.clone(),
        args: c.args.clone(),
    });
    Ok(c)
}

fn from_libvirt(root: &Root, path: &Path) -> Result<Config, PlanError> {
    let shown = path.display().to_string();
    let text = host::read_file(path).map_err(PlanError::Unreadable)?;
    let d = libvirt::parse_domain(&text)
        .map_err(|(line, e)| usage(format!("{shown} line {line}: {e}")))?;
    let name = d.name.clone().unwrap_or_else(|| "<vm>".into());
    let mut c = Config {
        source: format!("libvirt:{name}"),
        file: Some(shown.clone()),
        firmware: Some(if d.efi {
            "ovmf".into()
        } else {
            "seabios".into()
        }),
        machine: d.machine.clone(),
        ram: d.memory,
        hole64: d.pcihole64.or(d.window.hole64),
        mmio64: d.window.mmio64,
        flags: d.cpu.features.clone(),
        phys_bits: d.cpu.phys_bits,
        phys_bits_host: d.cpu.phys_bits_host,
        ..Config::default()
    };
    c.cpu_model = Some(match d.cpu.mode.as_deref() {
        Some("host-passthrough") | Some("maximum") => {
            // QEMU's `-cpu host` takes the host's address width.
            if d.cpu.phys_bits.is_none() {
                c.phys_bits_host = true;
            }
            "host".into()
        }
        _ => d.cpu.model.clone().unwrap_or_else(|| "qemu64".into()),
    });
    for a in &d.hostdevs {
        let funcs = host_functions(root, a)
            .map_err(|e| PlanError::Unreadable(format!("{shown}: <hostdev> {e}")))?;
        c.gpus.push((format!("{shown} <hostdev {a}>"), funcs));
    }
    c.target = Some(VmTarget::Libvirt { name });
    Ok(c)
}

/// Display controllers (class 03) and processing accelerators (class 12).
fn is_gpu_class(class: u32) -> bool {
    matches!(class >> 16, 0x03 | 0x12)
}

/// `ovmf:2022.11` -> rules; a Proxmox `4.2025.02-4` or Debian `2022.11-6`
/// package version carries the release too.
fn edk2_release(v: &str) -> Option<(u32, u32)> {
    let v = v.split(['-', '+', '~']).next()?;
    // Proxmox's older `3.20230228`: a date.
    if let Some(d) = v
        .split('.')
        .find(|p| p.len() == 8 && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some((d[..4].parse().ok()?, d[4..6].parse().ok()?));
    }
    let parts: Vec<&str> = v.split('.').collect();
    let (y, m) = match parts.as_slice() {
        [y, m] | [_, y, m] if y.len() == 4 => (*y, *m),
        [_, y, m, ..] if y.len() == 4 => (*y, *m),
        _ => return None,
    };
    Some((y.parse().ok()?, m.parse().ok()?))
}

/// SeaBIOS from 1.16.3 on places the window at the top.
fn seabios_top(v: &str) -> Option<bool> {
    let v = v.trim_start_matches("rel-").split(['-', '+', '~']).next()?;
    let n: Vec<u32> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    Some(n >= vec![1, 16, 3])
}

fn ram_end(machine: Machine, ram: u64) -> u64 {
    // Where QEMU splits RAM at 4 GiB (docs/firmware-window.md, "RAM
    // layout"): q35 keeps 2 GiB below from 2.75 GiB on, i440fx 3 GiB from
    // 3.5 GiB on.
    let (threshold, below) = match machine {
        Machine::Q35 => (0xb000_0000, 2 * GIB),
        Machine::I440fx => (0xe000_0000, 3 * GIB),
    };
    if ram >= threshold {
        FOUR_GIB + (ram - below)
    } else {
        ram
    }
}

pub(crate) fn run(o: &PlanOptions) -> Result<PlanReport, PlanError> {
    let root = Root::new(&o.root);
    if o.proxmox.is_some() && o.libvirt.is_some() {
        return Err(usage("give --proxmox or --libvirt, not both"));
    }
    let mut c = match (&o.proxmox, &o.libvirt) {
        (Some(p), _) => from_proxmox(&root, p)?,
        (_, Some(l)) => from_libvirt(&root, l)?,
        _ => Config {
            source: "flags".into(),
            ..Config::default()
        },
    };
    let mut assumed: Vec<String> = Vec::new();
    let mut warnings = std::mem::take(&mut c.warnings);

    // GPUs: by hand, by host address, or the configuration's.
    let mut gpus: Vec<PlanGpu> = Vec::new();
    if o.gpus.is_some() || !o.bar.is_empty() {
        let n = o.gpus.ok_or_else(|| usage("--bar needs --gpus N"))?;
        if o.bar.is_empty() {
            return Err(usage("--gpus needs at least one --bar SIZE"));
        }
        for _ in 0..n {
            gpus.push(PlanGpu {
                host: Vec::new(),
                bars: o
                    .bar
                    .iter()
                    .map(|s| PlanBar {
                        bdf: None,
                        index: None,
                        size: *s,
                        mem64: true,
                        prefetchable: true,
                        counted: true,
                    })
                    .collect(),
            });
        }
    } else {
        let mut sources = Vec::new();
        for (at, funcs) in c.gpus.clone() {
            // A passed-through NIC or disk controller is not a GPU: its
            // (small) BARs are left out, and said so.
            match funcs.first().and_then(|f| host::class_of(&root, *f)) {
                Some(class) if !is_gpu_class(class) => warnings.push(format!(
                    "{at}: {} has class {class:06x}, not a display controller or accelerator: left out",
                    funcs[0]
                )),
                _ => sources.push((at, funcs)),
            }
        }
        for g in &o.gpu {
            let funcs = host_functions(&root, g)
                .map_err(|e| PlanError::Unreadable(format!("--gpu {g}: {e}")))?;
            sources.push((format!("--gpu {g}"), funcs));
        }
        for (at, funcs) in sources {
            let mut bars = Vec::new();
            for f in &funcs {
                let host_bars = host::host_bars(&root, *f)
                    .map_err(|e| PlanError::Unreadable(format!("{at}: {e}")))?;
                bars.extend(host_bars.iter().map(|b| PlanBar {
                    bdf: Some(f.to_string()),
                    index: Some(b.index),
                    size: b.size.unwrap_or(0),
                    mem64: b.mem64,
                    prefetchable: b.prefetchable,
                    counted: b.counts_for_window(),
                }));
            }
            gpus.push(PlanGpu {
                host: funcs.iter().map(|f| f.to_string()).collect(),
                bars,
            });
        }
    }
    if gpus.is_empty() {
        return Err(usage(format!(
            "{}: no GPU to plan for (give --gpu BDF, --gpus N --bar SIZE, or a configuration with hostpci/hostdev entries)",
            c.file.as_deref().unwrap_or(&c.source)
        )));
    }

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
            let found = fw_version.clone().or_else(|| {
                host::dpkg_version(
                    &root,
                    &["pve-edk2-firmware-ovmf", "pve-edk2-firmware", "ovmf"],
                )
                .map(|(_, v)| v)
            });
            let rules = match found.as_deref() {
                Some(v) => {
                    let (y, m) = edk2_release(v).ok_or_else(|| {
                        usage(format!(
                            "--firmware ovmf:{v}: expected an edk2 release such as 2022.11"
                        ))
                    })?;
                    OvmfRules::for_release(y, m)
                }
                None => {
                    assumed.push("OVMF with the rules of edk2-stable202211 (Debian 12's); give --firmware ovmf:VERSION".into());
                    OvmfRules::STABLE_202211
                }
            };
            (Firmware::Ovmf(rules), found)
        }
        "seabios" | "bios" => {
            // Debian's and Ubuntu's QEMU boot the `seabios` package's build;
            // Proxmox bundles its own in pve-qemu-kvm (not looked up).
            let fw_version = fw_version
                .clone()
                .or_else(|| host::dpkg_version(&root, &["seabios"]).map(|(_, v)| v));
            let top = match fw_version.as_deref() {
                Some(v) => seabios_top(v).ok_or_else(|| {
                    usage(format!(
                        "--firmware seabios:{v}: expected a version such as 1.16.2"
                    ))
                })?,
                None => {
                    assumed.push(
                        "SeaBIOS 1.16.2 placement (above RAM); give --firmware seabios:VERSION"
                            .into(),
                    );
                    false
                }
            };
            (Firmware::SeaBios { top }, fw_version)
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
    let host_cpu: Option<Cpu> = host::host_cpu(&root);
    let model = o
        .cpu
        .clone()
        .or(c.cpu_model.clone())
        .unwrap_or_else(|| "qemu64".into());
    let is_host = model == "host" || model == "max";
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
    };
    let firmware_gpus: Vec<GpuBars> = gpus
        .iter()
        .map(|g| GpuBars {
            bars: g
                .bars
                .iter()
                .filter(|b| b.counted)
                .map(|b| b.size)
                .collect(),
        })
        .filter(|g| !g.bars.is_empty())
        .collect();
    if firmware_gpus.is_empty() {
        return Err(usage(format!(
            "{}: none of the devices has a 64-bit prefetchable BAR",
            c.source
        )));
    }
    let mut m = Model::new(setup.clone(), firmware_gpus.clone(), o.realloc)
        .ok_or_else(|| usage("a BAR size overflows"))?;
    m.assumed = Vec::new();

    let n = firmware_gpus.len();
    let needed = packed_size(&m.kernel_gpus);
    let span: Option<u64> = {
        let ports: Vec<Block> = firmware_gpus
            .iter()
            .filter_map(GpuBars::port_window)
            .collect();
        let mut sorted = ports.clone();
        sorted.sort_by_key(|b| std::cmp::Reverse(b.align));
        sorted
            .iter()
            .try_fold(0u64, |cur, b| align_up(cur, b.align)?.checked_add(b.size))
    };
    // A VM that will not get as far as its kernel: every GPU is lost.
    let no_boot = |why: String| Predicted {
        ok: false,
        diagnosis: None,
        unassigned_gpus: n,
        boots: false,
        why,
    };
    let (predicted, window) = match m.predict(&setup, o.realloc) {
        Err(NoBoot::QemuRefuses { limit, end }) => (
            no_boot(format!(
                "QEMU will refuse to start: its 64-bit hole would end at {end:#x}, past {limit:#x}, the last address {phys_bits} bits reach (\"phys-bits too low\")"
            )),
            None,
        ),
        Err(NoBoot::FirmwareHangs { end, width }) => (
            no_boot(format!(
                "OVMF will hang before the kernel starts: its aperture would end at {end:#x}, beyond the {width} address bits it uses"
            )),
            None,
        ),
        Ok(p) => {
            let boot = setup.boot(&firmware_gpus).ok();
            let window = boot.as_ref().and_then(|b| b.crs).map(|c| WindowSpan {
                start: c.start,
                end: c.end,
                size: c.size(),
            });
            let placed = boot.as_ref().map(|b| b.placed).unwrap_or(0);
            let aperture = boot
                .as_ref()
                .map(|b| format!("a {} window at {:#x}", human(b.aperture.size()), b.aperture.start))
                .unwrap_or_default();
            let why = match p.kind {
                DiagnosisKind::Ok if placed >= n => format!("the firmware places all {n} GPUs in {aperture}"),
                DiagnosisKind::Ok => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}; with pci=realloc the guest kernel places the rest"
                ),
                DiagnosisKind::FirmwareLeftUnassigned => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}; the window the guest kernel is offered has room for all, with pci=realloc in the guest"
                ),
                DiagnosisKind::PhysBitsTooSmall => format!(
                    "the firmware places {placed} of {n} GPUs in {aperture}: the rest need addresses beyond the vCPU's {phys_bits} bits"
                ),
                _ => format!("the firmware places {placed} of {n} GPUs in {aperture}: the GPUs need {} and the window is too small", needed.map(human).unwrap_or_default()),
            };
            (
                Predicted {
                    ok: p.kind == DiagnosisKind::Ok,
                    diagnosis: Some(p.kind),
                    unassigned_gpus: p.unassigned,
                    boots: true,
                    why,
                },
                window,
            )
        }
    };
    let target = c.target.clone().unwrap_or(VmTarget::Qemu);
    let hints: Vec<HintReport> = if predicted.ok {
        Vec::new()
    } else {
        let why = format!("Predicted: {}.", predicted.why);
        plan_hints(&m, &target, &why)
            .into_iter()
            .map(|h| HintReport {
                id: h.id,
                text: h.text,
                side: h.side,
                restart: h.restart,
                change: h.change,
                expect: h.expect,
                boots_to_ok: h.boots_to_ok,
            })
            .collect()
    };
    if !predicted.ok && hints.is_empty() {
        warnings.push("no configuration change the model knows makes every GPU fit: fewer GPUs, smaller BARs (Resizable BAR off on the host), or a host CPU with more address bits".into());
    }
    m.assumed.clear();
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
    let capacity = PlanCapacity {
        needed_bytes: needed,
        firmware_span_bytes: span,
        window_origin: model_origin(&m),
        window,
    };
    Ok(plan::new(vm, gpus, capacity, predicted, hints, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_from_package_versions() {
        assert_eq!(edk2_release("2022.11"), Some((2022, 11)));
        assert_eq!(edk2_release("2022.11-6+deb12u2"), Some((2022, 11)));
        assert_eq!(edk2_release("4.2025.02-4~bpo12+1"), Some((2025, 2)));
        assert_eq!(edk2_release("3.20230228-4"), Some((2023, 2)));
        assert_eq!(edk2_release("new"), None);
        assert_eq!(seabios_top("1.16.2"), Some(false));
        assert_eq!(seabios_top("1.16.3-2"), Some(true));
        assert_eq!(seabios_top("rel-1.17.0"), Some(true));
        assert_eq!(seabios_top("new"), None);
    }

    #[test]
    fn ram_splits_at_4g_as_qemu_does() {
        assert_eq!(ram_end(Machine::Q35, GIB), GIB);
        assert_eq!(ram_end(Machine::Q35, 512 * GIB), FOUR_GIB + 510 * GIB);
        assert_eq!(ram_end(Machine::I440fx, 4 * GIB), FOUR_GIB + GIB);
    }
}
