//! What a Proxmox VM configuration (pve.rs) or a libvirt domain says of
//! the VM, with the host's devices it passes through, before flags
//! override it.

use super::{usage, PlanError, PlanOptions};
use crate::decide::hints::VmTarget;
use crate::decide::window::{self, Attach, GpuBars, Layout, Machine};
use crate::evidence::host::{HostEvidence, LibvirtVm};
use crate::model::pci::PciAddress;
use crate::model::platform::CpuVendor;
use crate::model::select::is_gpu_class;
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
    /// Whose bus layout the VM has (a Proxmox VM: qemu-server's).
    pub layout: Option<Layout>,
    /// Further devices with a 64-bit prefetchable BAR (size, and where
    /// when the configuration says; else where the layout puts them).
    pub others: Vec<(u64, Option<Attach>)>,
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

pub(super) fn from_libvirt(l: &LibvirtVm, host: &HostEvidence) -> Result<Config, PlanError> {
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
    // Its virtio devices' 64-bit BARs: on bus 0, or on a root port of
    // their own (libvirt's q35 layout), or where the layout puts them.
    c.others = d
        .virtio_buses
        .iter()
        .map(|b| {
            let at = b.map(|b| {
                if b == 0 {
                    Attach::Bus0
                } else {
                    Attach::RootPort
                }
            });
            (window::proxmox::VIRTIO_BAR, at)
        })
        .collect();
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

/// Guest RAM as given, the RAM QEMU boots with (Proxmox's memory
/// hot-plug boots 1 GiB), and the hot-plug area above it.
pub(super) fn memory(o: &PlanOptions, c: &Config, assumed: &mut Vec<String>) -> (u64, u64, u64) {
    let ram = o.ram.or(c.ram).unwrap_or_else(|| {
        assumed.push("1 GiB of guest RAM (give --ram)".into());
        window::qemu::GIB
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
    (
        ram,
        boot_ram,
        window::qemu::device_memory(maxmem, boot_ram, slots),
    )
}

/// Whose bus layout the VM has: `--layout`, else the configuration's
/// (a Proxmox VM has qemu-server's).
pub(super) fn layout(o: &PlanOptions, c: &Config) -> Layout {
    match o.layout.as_deref() {
        Some("proxmox") => Layout::Proxmox,
        _ => c.layout.unwrap_or(Layout::Plain),
    }
}

/// The further devices with 64-bit prefetchable BARs: the configuration's
/// and `--device64`'s, each where the VM puts such a device: on bus 0 of
/// i440fx, behind Proxmox's `pci.0` on q35 (G6c), else on a root port of
/// its own.
pub(super) fn others(o: &PlanOptions, c: &Config, machine: Machine) -> Vec<GpuBars> {
    let q35 = machine == Machine::Q35;
    let attach = match (layout(o, c), q35) {
        (_, false) => Attach::Bus0,
        (Layout::Proxmox, true) => window::proxmox::virtio_attach(true),
        (Layout::Plain, true) => Attach::RootPort,
    };
    c.others
        .iter()
        .map(|(size, at)| (*size, at.unwrap_or(attach)))
        .chain(o.device64.iter().map(|s| (*s, attach)))
        .map(|(size, attach)| GpuBars {
            bars: vec![size],
            funcs: Vec::new(),
            attach,
        })
        .collect()
}
