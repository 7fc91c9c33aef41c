//! Evidence from a system (`check`): sysfs for the functions and their
//! BARs, `/proc` for windows, address bits and the command line, DMI for
//! the firmware and fw_cfg for what the host told it, and the kernel log
//! for what those cannot show; then P2P's (`evidence::p2p`), from the same
//! reads.

use crate::evidence::log::{as_windows, fill_sizes, with_failures_from_log, LogFacts};
use crate::evidence::p2p::{self, P2pEvidence};
use crate::evidence::{Evidence, Gpu, WindowSource};
use crate::model::select::{is_selected, Selector};
use crate::parse::{cmdline, kernel_log, platform};
use crate::read::fw_cfg;
use crate::read::kmsg::{self, LogFileError};
use crate::read::root::Root;
use crate::read::sysfs::{self, NoDevices};
use crate::read::system;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub(crate) struct SystemSource {
    pub root: Root,
    /// Kernel log text file (dmesg or `journalctl -k`) instead of the live
    /// log.
    pub dmesg: Option<PathBuf>,
    /// Replaces the default GPU selection when non-empty.
    pub selectors: Vec<Selector>,
    pub expect: Option<usize>,
    /// The kernel command line when the caller has read it already (the
    /// boot step, for its settings), `Some(None)` when that failed; `None`:
    /// read `proc/cmdline` here.
    pub cmdline: Option<Option<String>>,
}

/// Why a system cannot be inspected at all.
#[derive(Debug)]
pub(crate) enum CannotInspect {
    /// No PCI devices directory under the root.
    NoSysfs(NoDevices),
    /// The kernel log file given with `--dmesg` cannot be read.
    Dmesg(LogFileError),
}

impl fmt::Display for CannotInspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CannotInspect::NoSysfs(NoDevices(p, e)) => {
                write!(f, "cannot list PCI devices in {}: {e}", p.display())
            }
            CannotInspect::Dmesg(LogFileError(p, e)) => {
                write!(f, "cannot read kernel log {}: {e}", p.display())
            }
        }
    }
}

/// What `check` knows of a system, read in one pass.
#[derive(Debug)]
pub(crate) struct Gathered {
    pub evidence: Evidence,
    /// The peer-to-peer evidence, when there are two GPUs or more or it
    /// was asked for.
    pub p2p: Option<P2pEvidence>,
    /// Every warning met on the way, each naming its file: the BAR
    /// evidence's, then P2P's.
    pub warnings: Vec<String>,
}

/// Reads the system once and gathers the evidence: the BAR check's, and
/// P2P's when there are two GPUs or more or `expect_p2p` asks for it. The
/// kernel log is read once; what P2P needs of it (`Hypervisor detected:`)
/// is taken from that one read.
pub(crate) fn gather(src: &SystemSource, expect_p2p: bool) -> Result<Gathered, CannotInspect> {
    let (evidence, mut warnings, log_hypervisor) = gather_bars(src)?;
    let p2p = (evidence.gpus.len() >= 2 || expect_p2p)
        .then(|| p2p::gather(&src.root, &evidence, log_hypervisor));
    if let Some(p) = &p2p {
        warnings.extend(p.warnings.iter().cloned());
    }
    Ok(Gathered {
        evidence,
        p2p,
        warnings,
    })
}

/// What the kernel log says of the hypervisor, as P2P needs it
/// (`parse::platform::log_hypervisor_seen`).
type LogHypervisor = Option<Option<String>>;

/// The BAR check's evidence, its warnings, and what the log says of the
/// hypervisor.
fn gather_bars(
    src: &SystemSource,
) -> Result<(Evidence, Vec<String>, LogHypervisor), CannotInspect> {
    let keep = |v, d, c| is_selected(&src.selectors, v, d, c);
    let scan = sysfs::scan(&src.root, &keep).map_err(CannotInspect::NoSysfs)?;
    let mut warnings = scan.warnings.clone();
    let log_text = kmsg::read_log(&src.root, src.dmesg.as_deref(), &mut warnings)
        .map_err(CannotInspect::Dmesg)?;
    let events = kernel_log::parse_log(&log_text);
    let facts = LogFacts::from_events(&events);

    let mut gpus: Vec<Gpu> = scan
        .functions
        .iter()
        .filter(|f| !f.is_bridge() && !f.virtual_fn && keep(f.vendor, f.device, f.class))
        .map(|f| Gpu {
            addr: f.addr,
            vendor: f.vendor,
            device: f.device,
            class: f.class,
            bars: with_failures_from_log(f.addr, &f.bars, &events),
            upstream: f.upstream.clone(),
            root_bus: f.root_bus,
            ids_known: true,
        })
        .collect();
    fill_sizes(&mut gpus, &events);

    let cmdline = match &src.cmdline {
        Some(read) => read.clone(),
        None => src.root.read_text("proc/cmdline").ok(),
    }
    .or_else(|| facts.command_line.clone());
    if cmdline.is_none() {
        warnings.push("no kernel command line (proc/cmdline): pci=realloc taken as off".into());
    }
    let realloc_active = cmdline.as_deref().is_some_and(cmdline::realloc_active);

    // iomem with real addresses is the authority; the log stands in for an
    // unprivileged reader, who sees only zeros there.
    let (windows, windows_known) = match system::root_windows(&src.root, &mut warnings) {
        Some(w) => (as_windows(&w, WindowSource::Iomem), true),
        None => (facts.evidence_windows(), facts.windows_known),
    };
    let cpu = system::cpu(&src.root, &mut warnings);
    // Root ports (bridges on a root bus) with no selected GPU below them.
    let empty_root_ports = scan
        .functions
        .iter()
        .filter(|f| f.is_bridge() && f.upstream.is_empty())
        .filter(|p| !gpus.iter().any(|g| g.upstream.last() == Some(&p.addr)))
        .count();

    let mut above: Vec<_> = gpus
        .iter()
        .flat_map(|g| g.upstream.iter().copied())
        .collect();
    above.sort();
    above.dedup();
    let bridges = above
        .iter()
        .filter_map(|a| scan.get(*a))
        .map(|f| (f.addr, f.windows.clone()))
        .collect();
    // One platform judgement from every sign there is: DMI, the kernel
    // log's own lines, the CPU's flag and every device on the bus (not only
    // the selected ones: an emulated VGA or a BMC says what the machine is).
    let mut firmware = system::firmware(&src.root);
    firmware.fw_cfg = Some(fw_cfg::read(&src.root, &mut warnings));
    firmware.signs = platform::signs_from_log(&log_text);
    firmware.signs.cpu_flag = cpu.hypervisor;
    for f in &scan.functions {
        firmware.signs.add_device(f.vendor, f.device);
    }
    let ev = Evidence {
        gpus,
        expected: src.expect,
        windows,
        windows_known,
        cpu,
        ram_end: facts.ram_end.or_else(|| system::ram_end(&src.root)),
        reserved: facts.reserved.clone(),
        window_busy: system::window_children(&src.root),
        empty_root_ports,
        unaddressable_from: facts.unaddressable_from,
        realloc_active,
        realloc_advised: facts.realloc_advised,
        firmware,
        other_failed: Vec::new(),
        bridges,
        hyperv_mmio_short: platform::hyperv_mmio_need(&log_text),
        kernel: platform::kernel_release(&log_text),
        hotplug: platform::hotplug_signs(&log_text),
        // sysfs shows every BAR with its address.
        unproven: Vec::new(),
        driver_gave_up: Vec::new(),
        driver_runs: Vec::new(),
        start_failed: Vec::new(),
        vfio_host: None,
        // Driver messages, read only from pasted text.
        nvrm_third_region_only: Vec::new(),
        resize_lost: Vec::new(),
        inferred: Vec::new(),
        rescanned: Vec::new(),
        // The host's messages are not in a guest's own log.
        host_messages: Vec::new(),
        vf_failed: Vec::new(),
        unnamed_failed: Vec::new(),
        claims_pending: Vec::new(),
        bridge_short: Vec::new(),
        platform_told: None,
    };
    Ok((ev, warnings, platform::log_hypervisor_seen(&log_text)))
}
