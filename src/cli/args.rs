//! The command line: the only place that knows clap. Each command's
//! arguments convert into that command's plain options.

use crate::commands::boot::BootOptions;
use crate::commands::publish::PublishOptions;
use crate::commands::remediate::RemediateOptions;
use crate::evidence::system::SystemSource;
use crate::model::platform::Platform;
use crate::model::select::Selector;
use crate::read::root::Root;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "gpu-preflight",
    version,
    about = "Check that every GPU has its PCI BARs assigned, and say what fixes it when not"
)]
pub(crate) struct Cli {
    /// More log output on stderr (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once per run; the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    /// Inspect this system (or the tree at --root) and report.
    Check(CheckArgs),
    /// Diagnose from saved text: dmesg, journalctl -k, lspci -v/-vv.
    Explain(ExplainArgs),
    /// Run at boot from the initramfs hook: check, leave the report in
    /// /run/gpu-preflight, log the verdict. Exit 4 only in strict mode on failure.
    Boot(BootArgs),
    /// Make the next boot carry pci=realloc when the diagnosis calls for it (once).
    Remediate(RemediateArgs),
    /// In the running system: publish the boot's metrics, remediate if configured.
    Publish(PublishArgs),
    /// On the host, before the VM starts: will its GPUs fit, and what to change if not.
    Plan(PlanArgs),
}

fn parse_size(s: &str) -> Result<u64, String> {
    crate::parse::size::size(s)
}

/// `--bar SIZE[@FN]`: FN is the GPU's PCI function (0-7) the BAR sits in.
fn parse_bar(s: &str) -> Result<(u64, u8), String> {
    let (size, func) = match s.split_once('@') {
        Some((size, f)) => {
            let f: u8 = Some(f)
                .filter(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|f| f.parse().ok())
                .filter(|f| *f < 8)
                .ok_or_else(|| format!("{s:?}: the function after @ is 0 to 7"))?;
            (size, f)
        }
        None => (s, 0),
    };
    Ok((parse_size(size)?, func))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlanFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct PlanArgs {
    /// Directory that plays the host's root (its /etc/pve, /sys, /proc).
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,

    /// A Proxmox VM: its id (/etc/pve/qemu-server/VMID.conf under --root) or a config file.
    #[arg(long, value_name = "VMID|FILE")]
    pub proxmox: Option<String>,

    /// A libvirt domain's XML (`virsh dumpxml`).
    #[arg(long, value_name = "FILE")]
    pub libvirt: Option<PathBuf>,

    /// A host GPU to pass through: its BARs are read from the host's sysfs. Repeatable.
    #[arg(long = "gpu", value_name = "BDF")]
    pub gpu: Vec<String>,

    /// This many GPUs, each with the --bar sizes given (64-bit prefetchable).
    #[arg(long, value_name = "N")]
    pub gpus: Option<usize>,

    /// A 64-bit prefetchable BAR of each GPU (512M, 32G, 1T). Repeatable.
    /// SIZE@FN puts it in the GPU's function FN (default 0): OVMF rejects
    /// a function at a time.
    #[arg(long, value_name = "SIZE[@FN]", value_parser = parse_bar)]
    pub bar: Vec<(u64, u8)>,

    /// Guest RAM.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub ram: Option<u64>,

    /// The RAM the guest kernel uses, when its command line limits it
    /// (`mem=`): what the kernel keeps clear of BARs it places itself.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub guest_mem: Option<u64>,

    /// ovmf or seabios, with a version where known (ovmf:2022.11, seabios:1.16.2).
    #[arg(long, value_name = "FIRMWARE[:VERSION]")]
    pub firmware: Option<String>,

    /// q35 or pc.
    #[arg(long, value_name = "TYPE")]
    pub machine: Option<String>,

    /// vCPU physical address bits.
    #[arg(long, value_name = "N")]
    pub phys_bits: Option<u32>,

    /// A vCPU flag (pdpe1gb; -pdpe1gb removes it). Repeatable.
    #[arg(long = "cpu-flag", value_name = "FLAG", allow_hyphen_values = true)]
    pub cpu_flags: Vec<String>,

    /// The vCPU model, or host.
    #[arg(long, value_name = "MODEL|host")]
    pub cpu: Option<String>,

    /// The vendor the vCPU reports (amd, intel) [default: the host's].
    #[arg(long, value_name = "VENDOR")]
    pub cpu_vendor: Option<String>,

    /// QEMU's pci-hole64-size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub hole64: Option<u64>,

    /// OVMF's X-PciMmio64Mb, as a size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub mmio64: Option<u64>,

    /// The guest boots with pci=realloc.
    #[arg(long)]
    pub realloc: bool,

    /// Empty hot-plug root ports beside the GPUs' (OVMF pads each).
    #[arg(long, value_name = "N")]
    pub empty_ports: Option<usize>,

    /// The QEMU release (7.2, 10.0.2) [default: the host's pve-qemu-kvm or qemu-system-x86].
    #[arg(long, value_name = "VERSION")]
    pub qemu: Option<String>,

    /// Where the GPUs sit: root-ports, bridge, bus0 [default: q35 root-ports, pc bus0].
    #[arg(long, value_name = "TOPOLOGY")]
    pub topology: Option<String>,

    /// How the VM's buses are laid out: proxmox (qemu-server's: on q35 the
    /// pcidmi bridge with pci.0-pci.3 and four root ports, on pc the pci.1
    /// and pci.2 bridges; the GPUs are hostpci0, 1, ... and sit where
    /// qemu-server puts them, --topology root-ports being pcie=1).
    #[arg(long, value_name = "LAYOUT")]
    pub layout: Option<String>,

    /// A further device (not a GPU) with a 64-bit prefetchable BAR of SIZE,
    /// such as a virtio device's 16K: on bus 0 of pc, behind pci.0 with
    /// --layout proxmox on q35, else behind a root port of its own. Repeatable.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub device64: Vec<u64>,

    /// Memory hot-plug: QEMU's maxmem.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub maxmem: Option<u64>,

    /// Memory hot-plug: QEMU's slots.
    #[arg(long, value_name = "N")]
    pub mem_slots: Option<u32>,

    /// A 32-bit BAR of each GPU (16M), which goes in the 32-bit window. Repeatable.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub bar32: Vec<u64>,

    /// The GuestPhysBits KVM reports to the vCPU (QEMU 9.1+, Linux 6.10+).
    #[arg(long, value_name = "N")]
    pub guest_phys_bits: Option<u32>,

    /// How QEMU runs the vCPU (kvm, tcg): under KVM a named CPU model reports the host's vendor, under TCG its own, and `max` is AMD with 40 bits [default: kvm].
    #[arg(long, value_name = "ACCEL")]
    pub accel: Option<String>,

    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,

    /// Also say whether the GPUs will get P2P in the guest (the GPUDirect clique), with the lines to paste.
    #[arg(long)]
    pub p2p: bool,
}

impl PlanArgs {
    pub(crate) fn options(&self) -> crate::commands::plan::PlanOptions {
        crate::commands::plan::PlanOptions {
            root: self.root.clone(),
            proxmox: self.proxmox.clone(),
            libvirt: self.libvirt.clone(),
            gpu: self.gpu.clone(),
            gpus: self.gpus,
            bar: self.bar.clone(),
            ram: self.ram,
            guest_mem: self.guest_mem,
            firmware: self.firmware.clone(),
            machine: self.machine.clone(),
            phys_bits: self.phys_bits,
            cpu_flags: self.cpu_flags.clone(),
            cpu: self.cpu.clone(),
            cpu_vendor: self.cpu_vendor.clone(),
            hole64: self.hole64,
            mmio64: self.mmio64,
            realloc: self.realloc,
            empty_ports: self.empty_ports,
            p2p: self.p2p,
            qemu: self.qemu.clone(),
            topology: self.topology.clone(),
            layout: self.layout.clone(),
            device64: self.device64.clone(),
            maxmem: self.maxmem,
            mem_slots: self.mem_slots,
            bar32: self.bar32.clone(),
            guest_phys_bits: self.guest_phys_bits,
            accel: self.accel.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
    Prometheus,
}

/// The directory that plays the system root.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct RootArg {
    /// Directory that plays the system root.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
}

/// A saved kernel log instead of the live one.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct LogArg {
    /// Read the kernel log from this dmesg or journalctl -k text instead of /dev/kmsg.
    #[arg(long, value_name = "FILE")]
    pub dmesg: Option<PathBuf>,
}

/// The configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct ConfigArg {
    /// Configuration file [default: /etc/gpu-preflight.conf under the root].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Which GPUs to look at, and how many there must be.
#[derive(Debug, Clone, Args)]
pub(crate) struct SelectionArgs {
    /// GPU selector replacing the default (display controllers minus emulated
    /// adapters): VENDOR:DEVICE, VENDOR:* or class:CCSS, hex. Repeatable.
    #[arg(long = "match", value_name = "SELECTOR", value_parser = parse_selector)]
    pub selectors: Vec<Selector>,

    /// Number of GPUs that must be present.
    #[arg(long, value_name = "N")]
    pub expect: Option<usize>,
}

fn parse_selector(s: &str) -> Result<Selector, String> {
    s.parse()
}

#[derive(Debug, Clone, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub root: RootArg,

    #[command(flatten)]
    pub log: LogArg,

    #[command(flatten)]
    pub selection: SelectionArgs,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Also write the verdict and hints to /dev/kmsg (stderr if it cannot be opened).
    #[arg(long)]
    pub kmsg: bool,

    /// Fail the check when a peer-to-peer gate refuses (the P2P section is advice otherwise).
    #[arg(long)]
    pub expect_p2p: bool,
}

impl CheckArgs {
    pub(crate) fn source(&self) -> SystemSource {
        SystemSource {
            root: Root::new(&self.root.root),
            dmesg: self.log.dmesg.clone(),
            selectors: self.selection.selectors.clone(),
            expect: self.selection.expect,
            cmdline: None,
        }
    }
}

/// The platform the text comes from, as `explain --platform` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlatformArg {
    /// A real machine.
    BareMetal,
    /// A QEMU/KVM guest: Proxmox, libvirt, KubeVirt, OpenStack, LXD/Incus, Kata, plain QEMU.
    Qemu,
    /// A VMware ESXi/Workstation VM.
    Vmware,
    /// A Hyper-V VM (Azure too).
    Hyperv,
    /// Another hypervisor's VM: Xen, Cloud Hypervisor, bhyve, Firecracker...
    OtherVm,
}

impl PlatformArg {
    pub(crate) fn platform(self) -> Platform {
        match self {
            PlatformArg::BareMetal => Platform::BareMetal,
            PlatformArg::Qemu => Platform::Qemu,
            PlatformArg::Vmware => Platform::Vmware,
            PlatformArg::Hyperv => Platform::HyperV,
            PlatformArg::OtherVm => Platform::OtherVm,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ExplainArgs {
    /// Saved dmesg, journalctl -k or lspci -v text; several files are read as one.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub selection: SelectionArgs,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// The platform the text comes from, where the text does not show it (or shows it wrongly):
    /// the hints are then for it. A GPU's host (the machine that passes it to a VM) is bare-metal.
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub platform: Option<PlatformArg>,
}

#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct BootArgs {
    #[command(flatten)]
    pub root: RootArg,

    #[command(flatten)]
    pub config: ConfigArg,

    /// Where to write report.json and metrics.prom [default: /run/gpu-preflight under the root].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    #[command(flatten)]
    pub log: LogArg,
}

impl BootArgs {
    pub(crate) fn options(&self) -> BootOptions {
        BootOptions {
            root: self.root.root.clone(),
            config: self.config.config.clone(),
            out_dir: self.out_dir.clone(),
            dmesg: self.log.dmesg.clone(),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RemediateArgs {
    #[command(flatten)]
    pub root: RootArg,

    /// Print the exact change and touch nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Write our files but do not run the boot loader tool (update-grub, grubby).
    #[arg(long)]
    pub no_regenerate: bool,

    /// Remove our change (and regenerate the boot loader configuration).
    #[arg(long, conflicts_with_all = ["dmesg", "selectors", "expect"])]
    pub undo: bool,

    /// With --root: run the boot loader tool as `chroot ROOT TOOL` (the
    /// caller has mounted /dev, /proc and /sys in ROOT).
    #[arg(long)]
    pub chroot: bool,

    #[command(flatten)]
    pub config: ConfigArg,

    #[command(flatten)]
    pub log: LogArg,

    #[command(flatten)]
    pub selection: SelectionArgs,
}

impl RemediateArgs {
    pub(crate) fn options(&self) -> RemediateOptions {
        RemediateOptions {
            root: self.root.root.clone(),
            dry_run: self.dry_run,
            no_regenerate: self.no_regenerate,
            undo: self.undo,
            chroot: self.chroot,
            config: self.config.config.clone(),
            dmesg: self.log.dmesg.clone(),
            selectors: self.selection.selectors.clone(),
            expect: self.selection.expect,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct PublishArgs {
    #[command(flatten)]
    pub root: RootArg,

    #[command(flatten)]
    pub config: ConfigArg,

    /// Where the boot step left its files [default: /run/gpu-preflight under the root].
    #[arg(long, value_name = "DIR")]
    pub in_dir: Option<PathBuf>,
}

impl PublishArgs {
    pub(crate) fn options(&self) -> PublishOptions {
        PublishOptions {
            root: self.root.root.clone(),
            config: self.config.config.clone(),
            in_dir: self.in_dir.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_boot_fast_path_means_what_clap_would_parse() {
        let cli = Cli::try_parse_from(["gpu-preflight", "boot"]).unwrap();
        match cli.command {
            Command::Boot(args) => assert_eq!(args.options(), BootOptions::defaults()),
            other => panic!("parsed as {other:?}"),
        }
        assert_eq!(cli.verbose, 0);
    }

    #[test]
    fn a_signed_selector_is_a_usage_error() {
        for bad in ["+10d:*", "10de:+233", "class:+302"] {
            let e = Cli::try_parse_from(["gpu-preflight", "check", "--match", bad]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad}");
        }
    }
}
