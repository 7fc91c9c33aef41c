//! `explain`: the same diagnosis from saved text when there is no live
//! system to read: dmesg, `journalctl -k`, `lspci -v`/`-vv`, mixed, partial
//! or wrapped as bug reports paste them.
//!
//! The text is replayed in order: a BAR that failed and was later assigned
//! (the kernel's realloc retry) ends up assigned. Every endpoint whose memory
//! BAR ends up without an address is named; I/O BARs, ROMs, SR-IOV VF BARs
//! and bridge windows are not BAR failures of a device.

use crate::bars::{Bar, BarState, SizeSource};
use crate::check::log_facts;
use crate::diagnosis::{self, Evidence, Gpu, Window, WindowSource};
use crate::hints;
use crate::kernel_log::{self, Event, LogResource, ResourceRef, Space};
use crate::lspci_text::{self, RegionAddr};
use crate::pci::PciAddress;
use crate::report::{self, Report};
use crate::select::{self, Selector};
use crate::system::Firmware;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug)]
pub enum ExplainError {
    Read(PathBuf, std::io::Error),
    NoEvidence,
}

impl std::fmt::Display for ExplainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExplainError::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            ExplainError::NoEvidence => write!(
                f,
                "no PCI resource messages or lspci device entries in the input: nothing to explain"
            ),
        }
    }
}

impl std::error::Error for ExplainError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Seen during enumeration only.
    Probed,
    Failed,
    Assigned,
}

#[derive(Debug, Clone, Copy)]
struct BarSeen {
    outcome: Outcome,
    io: bool,
    mem64: bool,
    prefetchable: bool,
    size: Option<u64>,
    start: Option<u64>,
    /// The firmware had programmed an address (lspci's `<ignored>`).
    had_address: bool,
    from_lspci: bool,
}

#[derive(Debug, Default, Clone)]
struct DeviceSeen {
    vendor: Option<u16>,
    device: Option<u16>,
    class: Option<u32>,
    bridge: bool,
    nvidia_driver: bool,
    bars: BTreeMap<u8, BarSeen>,
}

fn note(bar: &mut Option<BarSeen>, outcome: Outcome, r: Option<&LogResource>) {
    let b = bar.get_or_insert(BarSeen {
        outcome,
        io: false,
        mem64: false,
        prefetchable: false,
        size: None,
        start: None,
        had_address: false,
        from_lspci: false,
    });
    // A failure after an assignment (a later boot in the same file, or the
    // kernel releasing it) wins, and so does an assignment after a failure.
    if outcome != Outcome::Probed || b.outcome == Outcome::Probed {
        b.outcome = outcome;
    }
    if let Some(r) = r {
        b.io = r.space == Space::Io;
        b.mem64 |= r.mem64;
        b.prefetchable |= r.prefetchable;
        if r.size > 0 && r.size != u64::MAX {
            b.size = Some(r.size);
        }
        match outcome {
            Outcome::Assigned => b.start = r.start.filter(|s| *s != 0),
            Outcome::Probed => {
                b.start = r.start.filter(|s| *s != 0);
                b.had_address |= b.start.is_some();
            }
            Outcome::Failed => {}
        }
    }
}

/// Reads the files as one text (each lossily: a log with stray bytes is
/// still a log) and explains it.
pub fn run(
    files: &[PathBuf],
    selectors: &[Selector],
    expect: Option<usize>,
) -> Result<Report, ExplainError> {
    let mut text = String::new();
    for f in files {
        text.push_str(&crate::root::read_lossy(f).map_err(|e| ExplainError::Read(f.clone(), e))?);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    explain_text(&text, selectors, expect)
}

pub fn explain_text(
    text: &str,
    selectors: &[Selector],
    expect: Option<usize>,
) -> Result<Report, ExplainError> {
    let started = std::time::Instant::now();
    let events = kernel_log::parse_log(text);
    let lspci = lspci_devices(text);
    let facts = log_facts(&events);
    let mut devs: BTreeMap<PciAddress, DeviceSeen> = BTreeMap::new();
    let mut evidence = false;
    for e in &events {
        match e {
            Event::Function {
                bdf,
                vendor,
                device,
                class,
                header_type,
            } => {
                let d = devs.entry(*bdf).or_default();
                d.vendor = Some(*vendor);
                d.device = Some(*device);
                d.class = Some(*class);
                d.bridge |= *header_type == 1 || class >> 8 == 0x0604;
                evidence = true;
            }
            Event::Probed {
                bdf,
                res: ResourceRef::Bar(i),
                resource,
            } => {
                let d = devs.entry(*bdf).or_default();
                let mut slot = d.bars.get(i).copied();
                note(&mut slot, Outcome::Probed, Some(resource));
                d.bars.insert(*i, slot.expect("just noted"));
                evidence = true;
            }
            Event::AssignFailed {
                bdf, res, resource, ..
            } => {
                let d = devs.entry(*bdf).or_default();
                match res {
                    ResourceRef::Bar(i) => {
                        let mut slot = d.bars.get(i).copied();
                        note(&mut slot, Outcome::Failed, resource.as_ref());
                        d.bars.insert(*i, slot.expect("just noted"));
                    }
                    ResourceRef::BridgeWindow => d.bridge = true,
                    _ => {}
                }
                evidence = true;
            }
            Event::Assigned { bdf, res, resource } => {
                let d = devs.entry(*bdf).or_default();
                match res {
                    ResourceRef::Bar(i) => {
                        let mut slot = d.bars.get(i).copied();
                        note(&mut slot, Outcome::Assigned, Some(resource));
                        d.bars.insert(*i, slot.expect("just noted"));
                    }
                    ResourceRef::BridgeWindow => d.bridge = true,
                    _ => {}
                }
                evidence = true;
            }
            Event::NvrmBarZero {
                bdf: Some(bdf),
                bar,
            } => {
                // The NVIDIA driver numbers BARs as config space does.
                let d = devs.entry(*bdf).or_default();
                d.nvidia_driver = true;
                d.vendor.get_or_insert(crate::pci::VENDOR_NVIDIA);
                let mut slot = d.bars.get(bar).copied();
                note(&mut slot, Outcome::Failed, None);
                d.bars.insert(*bar, slot.expect("just noted"));
                evidence = true;
            }
            _ => {}
        }
    }
    for l in &lspci {
        evidence = true;
        let d = devs.entry(l.bdf).or_default();
        if let Some(v) = l.vendor {
            d.vendor = Some(v);
        }
        if let Some(v) = l.device {
            d.device = Some(v);
        }
        if let Some(c) = l.class {
            d.class.get_or_insert(u32::from(c) << 8);
        }
        d.bridge |= l.bridge;
        for r in &l.regions {
            let seen = BarSeen {
                outcome: if r.address.is_some() {
                    Outcome::Assigned
                } else {
                    Outcome::Failed
                },
                io: r.io,
                mem64: r.mem64,
                prefetchable: r.prefetchable,
                size: r.size.or_else(|| d.bars.get(&r.index).and_then(|b| b.size)),
                start: r.address,
                had_address: r.ignored,
                from_lspci: true,
            };
            d.bars.insert(r.index, seen);
        }
    }
    if !evidence {
        return Err(ExplainError::NoEvidence);
    }

    let mut gpus = Vec::new();
    let mut other_failed = Vec::new();
    for (addr, d) in &devs {
        if d.bridge {
            continue;
        }
        let is_gpu = match (d.vendor, d.device, d.class) {
            (Some(v), Some(dev), Some(c)) => select::is_selected(selectors, v, dev, c),
            // Only the NVIDIA driver's complaint names it: a GPU, unless the
            // user chose other devices.
            _ => d.nvidia_driver && selectors.is_empty(),
        };
        let bars: Vec<Bar> = d
            .bars
            .iter()
            .filter(|(i, _)| **i < 6)
            .map(|(i, b)| Bar {
                index: *i,
                state: match b.outcome {
                    Outcome::Failed if b.had_address => BarState::Ignored,
                    Outcome::Failed => BarState::Unassigned,
                    // Enumerated and never complained about: the kernel kept
                    // the firmware's address.
                    Outcome::Probed | Outcome::Assigned => BarState::Assigned,
                },
                io: b.io,
                mem64: b.mem64,
                prefetchable: b.prefetchable,
                start: if b.outcome == Outcome::Failed {
                    None
                } else {
                    b.start
                },
                size: b.size,
                size_source: b.size.map(|_| {
                    if b.from_lspci {
                        SizeSource::Lspci
                    } else {
                        SizeSource::KernelLog
                    }
                }),
            })
            .collect();
        if is_gpu {
            gpus.push(Gpu {
                addr: *addr,
                vendor: d.vendor.unwrap_or(0),
                device: d.device.unwrap_or(0),
                class: d.class.unwrap_or(0),
                bars,
                upstream: Vec::new(),
                root_bus: None,
                ids_known: d.vendor.is_some() && d.device.is_some() && d.class.is_some(),
            });
        } else {
            other_failed.extend(
                bars.iter()
                    .filter(|b| b.fails_gpu())
                    .map(|b| (*addr, b.index, b.size)),
            );
        }
    }
    diagnosis::fill_sizes(&mut gpus, &events);

    let ev = Evidence {
        gpus,
        expected: expect,
        windows: facts
            .windows
            .iter()
            .map(|(range, bus)| Window {
                range: *range,
                source: WindowSource::KernelLog,
                bus: *bus,
            })
            .collect(),
        windows_known: facts.windows_seen,
        phys_bits: None,
        unaddressable_from: facts.unaddressable_from,
        // The command line if the log kept it; a realloc retry shows the
        // kernel reallocated whatever the command line said.
        realloc_active: facts.realloc_retried
            || facts
                .command_line
                .as_deref()
                .is_some_and(crate::cmdline::realloc_active),
        realloc_advised: facts.realloc_advised,
        firmware: firmware_from_log(text),
        other_failed,
        bridges: Vec::new(),
    };
    let d = diagnosis::diagnose(&ev);
    let h = hints::hints(&ev, &d);
    Ok(report::build(started, "explain", &ev, &d, &h, Vec::new()))
}

/// What the boot log tells of the machine: the `DMI:` line names vendor and
/// product; OVMF announces itself as `EFI v2.70 by EDK II`, SeaBIOS leaves
/// its name in the BIOS version.
fn firmware_from_log(text: &str) -> Firmware {
    let mut fw = Firmware::default();
    for line in text.lines() {
        if let Some(i) = line.find("DMI: ") {
            let dmi = &line[i + 5..];
            let (machine, bios) = dmi.split_once(", BIOS ").unwrap_or((dmi, ""));
            if let Some(product) = machine.strip_prefix("QEMU ") {
                fw.sys_vendor = Some("QEMU".into());
                fw.product_name = Some(product.trim().to_string());
            } else if !machine.trim().is_empty() {
                fw.sys_vendor = Some(machine.trim().to_string());
            }
            if !bios.is_empty() {
                fw.bios_version = Some(bios.trim().to_string());
                if bios.contains("seabios") || bios.contains("rel-1.") || bios.contains("debian-1.")
                {
                    fw.bios_vendor = Some("SeaBIOS".into());
                }
            }
        }
        if line.contains("by EDK II") {
            fw.bios_vendor = Some("EFI Development Kit II / OVMF".into());
        }
    }
    fw
}

/// An lspci device entry, reduced to what the diagnosis uses.
struct LspciEntry {
    bdf: PciAddress,
    vendor: Option<u16>,
    device: Option<u16>,
    /// Base class and subclass.
    class: Option<u16>,
    bridge: bool,
    regions: Vec<LspciBar>,
}

struct LspciBar {
    index: u8,
    io: bool,
    mem64: bool,
    prefetchable: bool,
    size: Option<u64>,
    /// The address lspci printed; `None` for `<unassigned>`/`<ignored>`.
    address: Option<u64>,
    ignored: bool,
}

fn lspci_devices(text: &str) -> Vec<LspciEntry> {
    lspci_text::parse(text)
        .into_iter()
        .map(|d| {
            let class = d.class.or_else(|| class_from_name(&d.class_name));
            LspciEntry {
                bdf: d.bdf,
                vendor: d.vendor.or_else(|| vendor_from_name(&d.name)),
                device: d.device.or_else(|| device_from_name(&d.name)),
                class,
                bridge: d.bus.is_some()
                    || class.is_some_and(|c| c >> 8 == 0x06)
                    || d.class_name.contains("bridge"),
                regions: d
                    .regions
                    .iter()
                    .map(|r| LspciBar {
                        index: r.index,
                        io: r.io,
                        mem64: r.mem64,
                        prefetchable: r.prefetchable,
                        size: r.size,
                        address: match r.address {
                            RegionAddr::Assigned(a) | RegionAddr::Virtual(a) => Some(a),
                            RegionAddr::Unassigned | RegionAddr::Ignored => None,
                        },
                        ignored: r.address == RegionAddr::Ignored,
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Plain `lspci -v` prints class names, not numbers.
fn class_from_name(name: &str) -> Option<u16> {
    Some(match name {
        "VGA compatible controller" => 0x0300,
        "XGA compatible controller" => 0x0301,
        "3D controller" => 0x0302,
        "Display controller" => 0x0380,
        "Processing accelerators" => 0x1200,
        "PCI bridge" => 0x0604,
        "Host bridge" => 0x0600,
        "ISA bridge" => 0x0601,
        _ => return None,
    })
}

/// ... nor vendor ids: the GPU vendors' names will do.
fn vendor_from_name(name: &str) -> Option<u16> {
    use crate::pci::{VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA};
    if name.starts_with("NVIDIA") {
        Some(VENDOR_NVIDIA)
    } else if name.starts_with("Advanced Micro Devices")
        || name.starts_with("AMD")
        || name.starts_with("ATI")
    {
        Some(VENDOR_AMD)
    } else if name.starts_with("Intel") {
        Some(VENDOR_INTEL)
    } else {
        None
    }
}

/// `NVIDIA Corporation Device 1b80`: a device too new for the ids file.
fn device_from_name(name: &str) -> Option<u16> {
    let (_, id) = name.rsplit_once(" Device ")?;
    let id = id.split_whitespace().next()?;
    (id.len() == 4)
        .then(|| u16::from_str_radix(id, 16).ok())
        .flatten()
}
