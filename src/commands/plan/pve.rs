//! What a Proxmox VM's configuration says of the VM (qemu-server's
//! reading of it: decide/window/proxmox.rs), with the host's devices it
//! passes through, before flags override it.

use super::config::Config;
use super::{usage, PlanError};
use crate::decide::hints::VmTarget;
use crate::decide::window::{self, Attach, Layout};
use crate::evidence::host::{HostEvidence, ProxmoxVm, ASSUMED_HOST_PHYS_BITS, CPU_MODELS};
use crate::parse::{proxmox, qemu_args};

pub(super) fn from_proxmox(p: &ProxmoxVm, host: &HostEvidence) -> Result<Config, PlanError> {
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
    // G6b/G6c: qemu-server's buses, and its virtio devices on them.
    let q35 = c.machine.as_deref().is_some_and(|m| m.contains("q35"));
    c.layout = Some(Layout::Proxmox);
    c.others = pve
        .virtio_buses
        .iter()
        .map(|b| {
            let at = match b {
                0 => window::proxmox::virtio_attach(q35),
                n => Attach::Bridge(*n),
            };
            (window::proxmox::VIRTIO_BAR, Some(at))
        })
        .collect();
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
