//! What a Proxmox VM configuration or a libvirt domain says of the VM,
//! with the host's devices it passes through, before flags override it.

use super::{usage, PlanError, PlanOptions};
use crate::decide::hints::VmTarget;
use crate::decide::window::{self, Attach};
use crate::evidence::host::{
    HostEvidence, LibvirtVm, ProxmoxVm, VmConfig, ASSUMED_HOST_PHYS_BITS, CPU_MODELS,
};
use crate::model::pci::PciAddress;
use crate::model::platform::CpuVendor;
use crate::model::select::is_gpu_class;
use crate::parse::{proxmox, qemu_args};
use crate::report::plan::{PlanBar, PlanGpu};

/// How QEMU runs the vCPU: `--accel`, else the configuration's (libvirt's
/// `<domain type='qemu'>`), else KVM, which a VM with passed-through GPUs
/// runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Accel {
    Kvm,
    Tcg,
}

pub(super) fn parse_accel(v: &str) -> Option<Accel> {
    match v.to_ascii_lowercase().as_str() {
        "kvm" => Some(Accel::Kvm),
        "tcg" => Some(Accel::Tcg),
        _ => None,
    }
}

/// What the configuration says, before flags override it.
#[derive(Debug, Default)]
pub(super) struct Config {
    pub source: String,
    /// The configuration file, for messages.
    pub file: Option<String>,
    pub firmware: Option<String>,
    pub machine: Option<String>,
    pub ram: Option<u64>,
    pub cpu_model: Option<String>,
    /// A custom model reported as `host` or `max`: the host's vCPU.
    pub cpu_host: bool,
    pub cpu_prop: String,
    pub flags: Vec<(bool, String)>,
    pub phys_bits: Option<u32>,
    pub phys_bits_host: bool,
    pub hole64: Option<u64>,
    pub mmio64: Option<u64>,
    /// SeaBIOS's `opt/org.seabios/pci64` from the QEMU arguments.
    pub seabios_pci64: Option<bool>,
    pub args: String,
    /// (file and line for messages, host devices).
    pub gpus: Vec<(String, Vec<PciAddress>)>,
    /// Where each of `gpus` sits, when the configuration says.
    pub attach: Vec<Attach>,
    /// Hot-plug root ports the configuration has without a device.
    pub empty_ports: Option<usize>,
    /// libvirt `host-model`: a named model with the host's features.
    pub host_model: bool,
    /// libvirt `<maxphysaddr mode='passthrough' limit='N'/>`.
    pub phys_bits_limit: Option<u32>,
    /// Proxmox `cpu: ...,guest-phys-bits=N`.
    pub guest_phys_bits: Option<u32>,
    /// A vendor the configuration sets (qemu-server's `vendor=`).
    pub vendor: Option<CpuVendor>,
    /// libvirt's `<domain type='qemu'>`: TCG.
    pub accel: Option<Accel>,
    /// Memory hot-plug: maxmem, slots, and the RAM QEMU boots with.
    pub maxmem: Option<u64>,
    pub mem_slots: Option<u32>,
    pub static_ram: Option<u64>,
    pub target: Option<VmTarget>,
    /// The host's width was taken at `ASSUMED_HOST_PHYS_BITS` (memory
    /// hot-plug's maximum without `/proc/cpuinfo`).
    pub host_bits_assumed: bool,
    pub warnings: Vec<String>,
}

/// What the configuration `--proxmox` or `--libvirt` names says, or
/// nothing (flags).
pub(super) fn read(host: &HostEvidence) -> Result<Config, PlanError> {
    match host
        .vm
        .as_ref()
        .map_err(|e| PlanError::Unreadable(e.clone()))?
    {
        VmConfig::Proxmox(p) => from_proxmox(p, host),
        VmConfig::Libvirt(l) => from_libvirt(l, host),
        VmConfig::None => Ok(Config {
            source: "flags".into(),
            ..Config::default()
        }),
    }
}

const MAX_GPUS: usize = 1024;

/// The GPUs to plan for, with their BARs: by hand (`--gpus N --bar
/// SIZE`), by host address (`--gpu BDF`), or the configuration's.
pub(super) fn gpus(
    host: &HostEvidence,
    o: &PlanOptions,
    c: &Config,
    warnings: &mut Vec<String>,
) -> Result<Vec<PlanGpu>, PlanError> {
    let mut gpus: Vec<PlanGpu> = Vec::new();
    if o.gpus.is_some() || !o.bar.is_empty() {
        let n = o.gpus.ok_or_else(|| usage("--bar needs --gpus N"))?;
        if o.bar.is_empty() {
            return Err(usage("--gpus needs at least one --bar SIZE"));
        }
        // More than any VM is given; the placement is quadratic in it.
        if n > MAX_GPUS {
            return Err(usage(format!("--gpus {n}: at most {MAX_GPUS}")));
        }
        for _ in 0..n {
            // --bar32: 32-bit BARs, which go in the 32-bit window.
            let bar32 = o.bar32.iter().map(|s| PlanBar {
                bdf: None,
                index: None,
                function: 0,
                size: *s,
                mem64: false,
                prefetchable: false,
                counted: false,
            });
            gpus.push(PlanGpu {
                host: Vec::new(),
                bars: o
                    .bar
                    .iter()
                    .map(|(s, f)| PlanBar {
                        bdf: None,
                        index: None,
                        function: *f,
                        size: *s,
                        mem64: true,
                        prefetchable: true,
                        counted: true,
                    })
                    .chain(bar32)
                    .collect(),
                attach: None,
            });
        }
    } else {
        let mut sources = Vec::new();
        for (k, (at, funcs)) in c.gpus.clone().into_iter().enumerate() {
            let attach = c.attach.get(k).copied();
            // A passed-through NIC or disk controller is not a GPU: its
            // (small) BARs are left out, and said so.
            match funcs.first().and_then(|f| host.class(*f)) {
                Some(class) if !is_gpu_class(class) => warnings.push(format!(
                    "{at}: {} has class {class:06x}, not a display controller or accelerator: left out",
                    funcs[0]
                )),
                _ => sources.push((at, funcs, attach)),
            }
        }
        for g in &o.gpu {
            let funcs = host
                .spec(g)
                .map_err(|e| PlanError::Unreadable(format!("--gpu {g}: {e}")))?;
            sources.push((format!("--gpu {g}"), funcs, None));
        }
        for (at, funcs, attach) in sources {
            let mut bars = Vec::new();
            // The guest function of each is its place in the list:
            // qemu-server gives the j-th device of a hostpci entry (every
            // function of `41:00`, or `host=41:00.0;42:00.0`) guest
            // function j (PVE/QemuServer/PCI.pm, print_hostpci_devices:
            // `$addr .= ".$j"`).
            for (k, f) in funcs.iter().enumerate() {
                let function = u8::try_from(k).unwrap_or(u8::MAX);
                let host_bars = host
                    .function(*f)
                    .and_then(|h| h.bars.clone())
                    .unwrap_or_else(|| Err(format!("{f} was not read")))
                    .map_err(|e| PlanError::Unreadable(format!("{at}: {e}")))?;
                bars.extend(host_bars.iter().map(|b| PlanBar {
                    bdf: Some(f.to_string()),
                    index: Some(b.index),
                    function,
                    size: b.size.unwrap_or(0),
                    mem64: b.mem64,
                    prefetchable: b.prefetchable,
                    counted: b.counts_for_window(),
                }));
            }
            gpus.push(PlanGpu {
                host: funcs.iter().map(|f| f.to_string()).collect(),
                bars,
                attach,
            });
        }
    }
    if gpus.is_empty() {
        return Err(usage(format!(
            "{}: no GPU to plan for (give --gpu BDF, --gpus N --bar SIZE, or a configuration with hostpci/hostdev entries)",
            c.file.as_deref().unwrap_or(&c.source)
        )));
    }
    Ok(gpus)
}

fn from_proxmox(p: &ProxmoxVm, host: &HostEvidence) -> Result<Config, PlanError> {
    let (arg, path) = (p.arg.as_str(), &p.path);
    let shown = path.display().to_string();
    let pve = p
        .config
        .as_ref()
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
    let cpu = proxmox_cpu(p, pve, &shown, &mut c)?;
    let w = qemu_args::window_args(&qemu_args::words(&c.args)).map_err(|e| {
        let line = pve.args_line.unwrap_or(0);
        usage(format!("{shown} line {line}: args: {e}"))
    })?;
    c.hole64 = w.hole64;
    c.mmio64 = w.mmio64;
    c.seabios_pci64 = w.seabios_pci64;
    c.guest_phys_bits = cpu.guest_phys_bits;
    if pve.memory_hotplug {
        let host_bits = host.host_phys_bits().unwrap_or_else(|| {
            c.host_bits_assumed = true;
            ASSUMED_HOST_PHYS_BITS
        });
        let phys_bits = match cpu.phys_bits {
            Some(proxmox::PhysBits::Bits(b)) => Some(b),
            Some(proxmox::PhysBits::Host) => Some(host_bits),
            None => None,
        };
        let host_vcpu = matches!(cpu.model.as_str(), "host" | "max");
        c.maxmem = Some(window::proxmox::max_mem(phys_bits, host_vcpu, host_bits));
        c.mem_slots = Some(window::proxmox::HOTPLUG_SLOTS);
        c.static_ram = Some(window::proxmox::HOTPLUG_STATIC_RAM);
    }
    proxmox_gpus(p, pve, host, &shown, &mut c)?;
    c.target = Some(VmTarget::Proxmox {
        vmid,
        cpu: c.cpu_prop.clone(),
        args: c.args.clone(),
    });
    Ok(c)
}

/// The VM's `cpu:` (a custom model resolved through cpu-models.conf) into
/// `c`, and the CPU that results.
fn proxmox_cpu(
    p: &ProxmoxVm,
    pve: &proxmox::PveConfig,
    shown: &str,
    c: &mut Config,
) -> Result<proxmox::PveCpu, PlanError> {
    let cpu = pve
        .cpu
        .clone()
        .unwrap_or_else(|| proxmox::parse_cpu("").expect("the default parses"));
    c.cpu_model = Some(cpu.model.clone());
    let cpu = match cpu.model.strip_prefix("custom-") {
        Some(name) => {
            let line = pve.cpu_value.as_ref().map_or(0, |(_, l)| *l);
            let m = custom_cpu(
                p.cpu_models.as_deref(),
                name,
                cpu.clone(),
                &format!("{shown} line {line}"),
            )?;
            c.cpu_host = matches!(m.model.as_str(), "host" | "max");
            m
        }
        None => cpu,
    };
    c.cpu_prop = pve
        .cpu_value
        .as_ref()
        .map_or_else(|| "kvm64".into(), |(v, _)| v.clone());
    c.flags = cpu.flags.clone();
    // qemu-server forces the vendor of every named model (the reported
    // model of a custom one): cpu_models::proxmox_forced_vendor.
    c.vendor = window::cpu_models::proxmox_forced_vendor(&cpu.model);
    match cpu.phys_bits {
        Some(proxmox::PhysBits::Bits(b)) => c.phys_bits = Some(b),
        Some(proxmox::PhysBits::Host) => c.phys_bits_host = true,
        None => {}
    }
    Ok(cpu)
}

/// Each `hostpciN` (through its mapping, if it names one): its host
/// functions and where qemu-server attaches it (`window::proxmox`), with
/// the root ports left empty.
fn proxmox_gpus(
    p: &ProxmoxVm,
    pve: &proxmox::PveConfig,
    host: &HostEvidence,
    shown: &str,
    c: &mut Config,
) -> Result<(), PlanError> {
    let q35 = c.machine.as_deref().is_some_and(|m| m.contains("q35"));
    if let Some(Err(e)) = &p.mappings {
        return Err(PlanError::Unreadable(e.clone()));
    }
    let node = p.node.clone();
    for h in &pve.hostpci {
        let at = format!("{shown} line {}", h.line);
        let specs = match &h.mapping {
            Some(name) => {
                let m = p.mapped.get(name).cloned().flatten().ok_or_else(|| {
                    usage(format!(
                        "{at}: mapping {name:?} is not in /etc/pve/mapping/pci.cfg"
                    ))
                })?;
                if m.node.is_some() && m.node != node {
                    c.warnings.push(format!(
                        "{at}: mapping {name:?} has no device for node {}; planned with node {}'s ({})",
                        node.as_deref().unwrap_or("(unknown: no /etc/hostname)"),
                        m.node.as_deref().unwrap_or(""),
                        m.paths.join(";")
                    ));
                }
                m.paths
            }
            None => h.hosts.clone(),
        };
        let mut funcs = Vec::new();
        for spec in &specs {
            funcs.extend(
                host.spec(spec)
                    .map_err(|e| PlanError::Unreadable(format!("{at}: {e}")))?,
            );
        }
        c.gpus.push((at, funcs));
        c.attach.push(window::proxmox::attach(q35, h.pcie, h.index));
    }
    c.empty_ports = Some(window::proxmox::empty_ports(
        q35,
        pve.hostpci.iter().map(|h| (h.pcie, h.index)),
    ));
    Ok(())
}

/// `cpu: custom-NAME`: the model of that name in cpu-models.conf, with the
/// VM's own flags after its flags and the VM's `phys-bits` over its own
/// (as Proxmox combines them). A model that is not there is an error:
/// Proxmox does not start the VM.
fn custom_cpu(
    cpu_models: Option<&str>,
    name: &str,
    vm: proxmox::PveCpu,
    at: &str,
) -> Result<proxmox::PveCpu, PlanError> {
    let model = match cpu_models {
        Some(text) => proxmox::custom_cpu_model(text, name)
            .map_err(|e| usage(format!("{CPU_MODELS} line {}: {}", e.line, e.msg)))?,
        None => None,
    };
    let Some(mut m) = model else {
        return Err(usage(format!(
            "{at}: cpu: custom-{name}: no cpu-model {name} in {CPU_MODELS}, and Proxmox does not start a VM without its model"
        )));
    };
    m.flags.extend(vm.flags);
    m.phys_bits = vm.phys_bits.or(m.phys_bits);
    m.guest_phys_bits = vm.guest_phys_bits.or(m.guest_phys_bits);
    Ok(m)
}

fn from_libvirt(l: &LibvirtVm, host: &HostEvidence) -> Result<Config, PlanError> {
    let shown = l.path.display().to_string();
    let d = l
        .domain
        .as_ref()
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
        seabios_pci64: d.window.seabios_pci64,
        flags: d.cpu.features.clone(),
        phys_bits: d.cpu.phys_bits,
        phys_bits_host: d.cpu.phys_bits_host,
        phys_bits_limit: d.cpu.phys_bits_limit,
        host_model: d.cpu.mode.as_deref() == Some("host-model"),
        accel: d.tcg.then_some(Accel::Tcg),
        maxmem: d.max_memory.map(|(m, _)| m),
        mem_slots: d.max_memory.map(|(_, s)| s),
        empty_ports: Some(window::topology::libvirt_empty_ports(
            &d.root_ports,
            &d.used_buses,
        )),
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
    for h in &d.hostdevs {
        let a = &h.address;
        let funcs = host
            .spec(a)
            .map_err(|e| PlanError::Unreadable(format!("{shown}: <hostdev> {e}")))?;
        c.gpus.push((format!("{shown} <hostdev {a}>"), funcs));
    }
    c.target = Some(VmTarget::Libvirt { name });
    Ok(c)
}
