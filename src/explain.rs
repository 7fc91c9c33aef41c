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
use crate::diagnosis::{self, Evidence, Gpu, WindowSource};
use crate::hints;
use crate::kernel_log::{self, Event, LogResource, ResourceRef, Space};
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
        let bytes = std::fs::read(f).map_err(|e| ExplainError::Read(f.clone(), e))?;
        text.push_str(&String::from_utf8_lossy(&bytes));
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
            .map(|r| (*r, WindowSource::KernelLog))
            .collect(),
        phys_bits: None,
        unaddressable_from: facts.unaddressable_from,
        realloc_active: facts
            .command_line
            .as_deref()
            .is_some_and(crate::cmdline::realloc_active),
        realloc_advised: facts.realloc_advised,
        firmware: firmware_from_log(text),
        other_failed,
    };
    let d = diagnosis::diagnose(&ev);
    let h = hints::hints(&ev, &d);
    Ok(report::build("explain", &ev, &d, &h, Vec::new()))
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

fn lspci_devices(_text: &str) -> Vec<LspciEntry> {
    Vec::new()
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn pci_line() -> impl Strategy<Value = String> {
        let bdf =
            (0u8..4, 0u8..32, 0u8..8).prop_map(|(b, d, f)| format!("0000:{b:02x}:{d:02x}.{f}"));
        let tail = prop_oneof![
            Just("[10de:2330] type 00 class 0x030200".to_string()),
            (0u8..6, 20u32..38).prop_map(|(i, s)| format!(
                "BAR {i} [mem size 0x{:x} 64bit pref]: can't assign; no space",
                1u64 << s
            )),
            (0u8..6, 20u32..38).prop_map(|(i, s)| format!(
                "BAR {i} [mem 0x{:x}-0x{:x} 64bit pref]: assigned",
                1u64 << 40,
                (1u64 << 40) + (1u64 << s) - 1
            )),
            (0u8..6).prop_map(|i| format!(
                "reg 0x{:x}: [mem 0x00000000-0x3ffffffff 64bit pref]",
                0x10 + 4 * i
            )),
            "\\PC{0,40}",
        ];
        (bdf, tail).prop_map(|(b, t)| format!("[    1.0] pci {b}: {t}"))
    }

    proptest! {
        #[test]
        fn explain_never_panics_on_noise(text in "\\PC{0,600}") {
            let _ = explain_text(&text, &[], None);
        }

        #[test]
        fn explain_is_consistent_on_pci_like_logs(lines in proptest::collection::vec(pci_line(), 1..40), expect in proptest::option::of(0usize..4)) {
            let text = lines.join("\n");
            if let Ok(r) = explain_text(&text, &[], expect) {
                let failed = r.gpus.iter().any(|g| !g.ok) || !r.unassigned.is_empty();
                prop_assert_eq!(r.verdict == crate::report::Verdict::Fail, failed || r.expected.is_some_and(|e| e > r.found));
                for u in &r.unassigned {
                    prop_assert!(u.bar < 6);
                }
            }
        }
    }
}
