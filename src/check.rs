//! The `check` pipeline: read sysfs and the kernel log under a root, model
//! devices and BARs, diagnose, hint, and hand back one `Report`.

use crate::bars::{Bar, BarState, SizeSource};
use crate::diagnosis::{self, Evidence, Gpu, Window, WindowSource};
use crate::hints;
use crate::kernel_log::{self, Event, ResourceRef, Space};
use crate::kmsg;
use crate::report::{self, Report};
use crate::root::Root;
use crate::select::{self, Selector};
use crate::sysfs;
use crate::system::{self, Range};
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub root: Root,
    /// Kernel log text file (dmesg or `journalctl -k`) instead of `/dev/kmsg`.
    pub dmesg: Option<PathBuf>,
    /// Replaces the default GPU selection when non-empty.
    pub selectors: Vec<Selector>,
    pub expect: Option<usize>,
}

#[derive(Debug)]
pub enum CheckError {
    /// No PCI devices directory under the root: nothing can be inspected.
    NoSysfs(PathBuf, std::io::Error),
    /// The kernel log file given with `--dmesg` cannot be read.
    Dmesg(PathBuf, std::io::Error),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::NoSysfs(p, e) => {
                write!(f, "cannot list PCI devices in {}: {e}", p.display())
            }
            CheckError::Dmesg(p, e) => write!(f, "cannot read kernel log {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for CheckError {}

/// What the kernel log says beyond per-device events.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LogFacts {
    /// 64-bit root bus windows, with their root bus.
    pub windows: Vec<system::RootWindow>,
    /// The log lists root bus memory windows at all (so an empty
    /// `windows` means none above 4 GiB).
    pub windows_seen: bool,
    /// `No. N try to assign unassigned res`: reallocation ran.
    pub realloc_retried: bool,
    pub unaddressable_from: Option<u64>,
    pub realloc_advised: bool,
    pub command_line: Option<String>,
}

pub fn log_facts(events: &[Event]) -> LogFacts {
    let mut f = LogFacts::default();
    for e in events {
        match e {
            Event::RootBusWindow {
                domain,
                bus,
                resource,
            } if resource.space == Space::Mem => {
                f.windows_seen = true;
                if let Some(start) = resource.start {
                    let end = start.saturating_add(resource.size.saturating_sub(1));
                    if let Some(r) = system::above_4g(Range { start, end }) {
                        // A log may hold several boots or repeat itself.
                        let w = (r, Some((*domain, *bus)));
                        if !f.windows.contains(&w) {
                            f.windows.push(w);
                        }
                    }
                }
            }
            Event::ReallocRetry { .. } => f.realloc_retried = true,
            Event::NotCpuAddressable { start, .. } => {
                f.unaddressable_from = Some(f.unaddressable_from.map_or(*start, |u| u.min(*start)));
            }
            Event::ReallocAdvised => f.realloc_advised = true,
            Event::CommandLine(c) => f.command_line = Some(c.clone()),
            _ => {}
        }
    }
    f
}

/// The kernel log: the file given; else, on the live system, the syslog
/// buffer in one call; else the root's `/dev/kmsg` when it is the real
/// device; else nothing (a fixture tree without a log).
fn read_log(opts: &CheckOptions, warnings: &mut Vec<String>) -> Result<String, CheckError> {
    if let Some(p) = &opts.dmesg {
        return crate::root::read_lossy(p).map_err(|e| CheckError::Dmesg(p.clone(), e));
    }
    if opts.root.is_live() {
        match kmsg::read_syslog_buffer() {
            Ok(t) => return Ok(t),
            Err(e) => log::info!("syslog(READ_ALL): {e}; reading /dev/kmsg instead"),
        }
    }
    let dev = opts.root.join("dev/kmsg");
    if kmsg::is_char_device(&dev) {
        match kmsg::read_all(&dev) {
            Ok(t) => return Ok(t),
            Err(e) => warnings.push(format!(
                "reading {}: {e}; BAR sizes and windows from the log are unknown",
                dev.display()
            )),
        }
    }
    Ok(String::new())
}

/// sysfs cannot always tell a failed BAR from an absent one: without config
/// space, or when the register reads zero (a 32-bit BAR the firmware never
/// programmed looks unimplemented). The kernel log can: a BAR that sysfs
/// does not show assigned and whose last word in the log is a failure is
/// unassigned.
fn with_failures_from_log(f: &sysfs::Function, events: &[Event]) -> Vec<Bar> {
    let mut bars = f.bars.clone();
    for i in 0..6u8 {
        // What sysfs shows (assigned, or failed with its lspci-style
        // state) stands; the log only fills in BARs sysfs cannot see.
        if bars
            .iter()
            .any(|b| b.index == i || (b.mem64 && b.index + 1 == i))
        {
            continue;
        }
        let last = events.iter().rev().find_map(|e| match e {
            Event::AssignFailed {
                bdf,
                res: ResourceRef::Bar(n),
                resource,
                ..
            } if *bdf == f.addr && *n == i => Some((false, *resource)),
            Event::Assigned {
                bdf,
                res: ResourceRef::Bar(n),
                resource,
            } if *bdf == f.addr && *n == i => Some((true, Some(*resource))),
            _ => None,
        });
        if let Some((false, r)) = last {
            bars.push(Bar {
                index: i,
                state: BarState::Unassigned,
                io: r.is_some_and(|r| r.space == Space::Io),
                mem64: r.is_some_and(|r| r.mem64),
                prefetchable: r.is_some_and(|r| r.prefetchable),
                start: None,
                size: r.map(|r| r.size).filter(|s| *s > 0),
                size_source: r.map(|_| SizeSource::KernelLog),
            });
        }
    }
    bars.sort_by_key(|b| b.index);
    bars
}

pub fn run(opts: &CheckOptions) -> Result<Report, CheckError> {
    let started = std::time::Instant::now();
    let keep = |v, d, c| select::is_selected(&opts.selectors, v, d, c);
    let scan = sysfs::scan(&opts.root, &keep).map_err(|(p, e)| CheckError::NoSysfs(p, e))?;
    let mut warnings = scan.warnings.clone();
    let log_text = read_log(opts, &mut warnings)?;
    let events = kernel_log::parse_log(&log_text);
    let facts = log_facts(&events);

    let mut gpus: Vec<Gpu> = scan
        .functions
        .iter()
        .filter(|f| {
            !f.is_bridge()
                && !f.virtual_fn
                && select::is_selected(&opts.selectors, f.vendor, f.device, f.class)
        })
        .map(|f| Gpu {
            addr: f.addr,
            vendor: f.vendor,
            device: f.device,
            class: f.class,
            bars: with_failures_from_log(f, &events),
            upstream: f.upstream.clone(),
            root_bus: f.root_bus,
            ids_known: true,
        })
        .collect();
    diagnosis::fill_sizes(&mut gpus, &events);

    let cmdline = system::read_text(&opts.root, "proc/cmdline")
        .ok()
        .or_else(|| facts.command_line.clone());
    if cmdline.is_none() {
        warnings.push("no kernel command line (proc/cmdline): pci=realloc taken as off".into());
    }
    let realloc_active = cmdline
        .as_deref()
        .is_some_and(crate::cmdline::realloc_active);

    let to_windows = |w: &[system::RootWindow], source| -> Vec<Window> {
        w.iter()
            .map(|(range, bus)| Window {
                range: *range,
                source,
                bus: *bus,
            })
            .collect()
    };
    let iomem = match system::read_text(&opts.root, "proc/iomem") {
        Ok(t) => system::iomem_root_windows(&t).unwrap_or_else(|e| {
            warnings.push(format!("{}: {e}", opts.root.join("proc/iomem").display()));
            None
        }),
        Err(e) => {
            warnings.push(e);
            None
        }
    };
    // iomem with real addresses is the authority; the log stands in for an
    // unprivileged reader, who sees only zeros there.
    let (windows, windows_known) = match iomem {
        Some(w) => (to_windows(&w, WindowSource::Iomem), true),
        None => (
            to_windows(&facts.windows, WindowSource::KernelLog),
            facts.windows_seen,
        ),
    };
    let phys_bits = match system::read_text(&opts.root, "proc/cpuinfo") {
        Ok(t) => {
            let b = system::cpuinfo_phys_bits(&t);
            if b.is_none() {
                warnings.push(format!(
                    "{}: no \"address sizes\" line, physical address bits unknown",
                    opts.root.join("proc/cpuinfo").display()
                ));
            }
            b
        }
        Err(e) => {
            warnings.push(e);
            None
        }
    };

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
    let ev = Evidence {
        gpus,
        expected: opts.expect,
        windows,
        windows_known,
        phys_bits,
        unaddressable_from: facts.unaddressable_from,
        realloc_active,
        realloc_advised: facts.realloc_advised,
        firmware: system::read_firmware(&opts.root),
        other_failed: Vec::new(),
        bridges,
    };
    let d = diagnosis::diagnose(&ev);
    let h = hints::hints(&ev, &d);
    for w in &warnings {
        log::warn!("{w}");
    }
    Ok(report::build(started, "check", &ev, &d, &h, warnings))
}
