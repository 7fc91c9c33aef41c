//! What the kernel log adds to the evidence, for `check` and `explain`
//! alike: root bus windows, reallocation, the command line, the part of
//! the address space the CPU cannot reach, and the sizes and failures of
//! BARs that sysfs cannot show.

use crate::evidence::{Gpu, Window, WindowSource};
use crate::model::bar::{Bar, BarState, SizeSource};
use crate::model::pci::PciAddress;
use crate::parse::kernel_log::{Event, ResourceRef, Space};
use crate::parse::procfs::RootWindow;

/// What the kernel log says beyond per-device events.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct LogFacts {
    /// 64-bit root bus windows, with their root bus.
    pub windows: Vec<RootWindow>,
    /// The log lists root bus memory windows at all (so an empty
    /// `windows` means none above 4 GiB).
    pub windows_known: bool,
    /// `No. N try to assign unassigned res`: reallocation ran.
    pub realloc_retried: bool,
    pub unaddressable_from: Option<u64>,
    pub realloc_advised: bool,
    pub command_line: Option<String>,
    /// Where the firmware's RAM map ends (exclusive): the `BIOS-e820`
    /// usable ranges, which a `mem=` does not shorten.
    pub ram_end: Option<u64>,
    /// The firmware map's reserved ranges above 4 GiB, in order.
    pub reserved: Vec<crate::model::range::Range>,
}

impl LogFacts {
    pub(crate) fn from_events(events: &[Event]) -> LogFacts {
        let mut f = LogFacts::default();
        for e in events {
            match e {
                Event::RootBusWindow { bus, resource } if resource.space == Space::Mem => {
                    f.windows_known = true;
                    // A root window is never printed in the `size` form:
                    // no start is a zero start (`[mem 0x00000000-0xffffffffff]`,
                    // the whole space a `pci=nocrs` kernel takes).
                    if let Some(start) = resource.start.or((resource.size > 0).then_some(0)) {
                        let end = start.saturating_add(resource.size.saturating_sub(1));
                        if let Some(r) = crate::model::range::Range::new(start, end).above_4g() {
                            // A log may hold several boots or repeat itself.
                            let w = (r, Some(*bus));
                            if !f.windows.contains(&w) {
                                f.windows.push(w);
                            }
                        }
                    }
                }
                Event::ReallocRetry { .. } => f.realloc_retried = true,
                Event::NotCpuAddressable(r) => {
                    f.unaddressable_from =
                        Some(f.unaddressable_from.map_or(r.start, |u| u.min(r.start)));
                }
                Event::ReallocAdvised => f.realloc_advised = true,
                Event::CommandLine(c) => f.command_line = Some(c.clone()),
                Event::E820Usable(r) => {
                    let end = r.end.saturating_add(1);
                    f.ram_end = Some(f.ram_end.map_or(end, |e| e.max(end)));
                }
                Event::E820Reserved(r) => {
                    if let Some(r) = r.above_4g() {
                        if !f.reserved.contains(&r) {
                            f.reserved.push(r);
                        }
                    }
                }
                _ => {}
            }
        }
        f
    }

    /// The log's root bus windows as evidence windows.
    pub(crate) fn evidence_windows(&self) -> Vec<Window> {
        as_windows(&self.windows, WindowSource::KernelLog)
    }
}

pub(crate) fn as_windows(w: &[RootWindow], source: WindowSource) -> Vec<Window> {
    w.iter()
        .map(|(range, bus)| Window {
            range: *range,
            source,
            bus: *bus,
        })
        .collect()
}

/// sysfs cannot always tell a failed BAR from an absent one: without config
/// space, or when the register reads zero (a 32-bit BAR the firmware never
/// programmed looks unimplemented). The kernel log can: a BAR that sysfs
/// does not show and whose last word in the log is a failure is unassigned.
pub(crate) fn with_failures_from_log(addr: PciAddress, seen: &[Bar], events: &[Event]) -> Vec<Bar> {
    let mut bars = seen.to_vec();
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
            } if *bdf == addr && *n == i => Some((false, *resource)),
            Event::Assigned {
                bdf,
                res: ResourceRef::Bar(n),
                resource,
            } if *bdf == addr && *n == i => Some((true, Some(*resource))),
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
                type_known: r.is_some(),
            });
        }
    }
    bars.sort_by_key(|b| b.index);
    bars
}

/// Fills in the size of BARs that sysfs could not size: from the kernel
/// log first, then from an identical sibling GPU whose same BAR was placed.
pub(crate) fn fill_sizes(gpus: &mut [Gpu], events: &[Event]) {
    for g in gpus.iter_mut() {
        for b in g
            .bars
            .iter_mut()
            .filter(|b| b.size.is_none() || !b.type_known)
        {
            let from_log = events.iter().rev().find_map(|e| match e {
                Event::Probed {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource,
                }
                | Event::Released {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource,
                }
                | Event::Assigned {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource,
                } if *bdf == g.addr && *i == b.index && resource.size > 0 => Some(*resource),
                Event::AssignFailed {
                    bdf,
                    res: ResourceRef::Bar(i),
                    resource: Some(r),
                    ..
                } if *bdf == g.addr && *i == b.index && r.size > 0 => Some(*r),
                _ => None,
            });
            if let Some(r) = from_log {
                if b.size.is_none() {
                    b.size = Some(r.size);
                    b.size_source = Some(SizeSource::KernelLog);
                }
                if !b.type_known {
                    b.io = r.space == Space::Io;
                    b.mem64 = r.mem64;
                    b.prefetchable = r.prefetchable;
                    b.type_known = true;
                }
            }
        }
    }
    // An identical GPU whose same BAR was placed gives its size (and type,
    // where a driver's complaint left it unknown).
    let known: Vec<(u16, u16, Bar)> = gpus
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .filter(|b| b.assigned() && b.size.is_some())
                .map(move |b| (g.vendor, g.device, *b))
        })
        .collect();
    for g in gpus.iter_mut() {
        for b in g
            .bars
            .iter_mut()
            .filter(|b| b.size.is_none() || !b.type_known)
        {
            if let Some((.., s)) = known
                .iter()
                .find(|(v, d, k)| *v == g.vendor && *d == g.device && k.index == b.index)
            {
                if b.size.is_none() {
                    b.size = s.size;
                    b.size_source = Some(SizeSource::Sibling);
                }
                if !b.type_known && s.type_known {
                    b.io = s.io;
                    b.mem64 = s.mem64;
                    b.prefetchable = s.prefetchable;
                    b.type_known = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_window_from_zero_is_a_window() {
        // Corpus 66: a pci=nocrs kernel's whole address space, 40 bits.
        let events = crate::parse::kernel_log::parse_log(
            "pci_bus 0000:00: root bus resource [mem 0x00000000-0xffffffffff]\n",
        );
        let f = LogFacts::from_events(&events);
        assert!(f.windows_known);
        let w: Vec<_> = f.windows.iter().map(|(r, _)| (r.start, r.end)).collect();
        assert_eq!(w, [(1 << 32, (1 << 40) - 1)]);
    }
    use crate::model::pci::RootBus;
    use crate::model::range::Range;
    use crate::parse::kernel_log::parse_log;

    const G: u64 = 1 << 30;

    fn gpu(n: u8, size: Option<u64>, assigned: bool) -> Gpu {
        Gpu {
            addr: PciAddress {
                domain: 0,
                bus: n,
                device: 0,
                function: 0,
            },
            vendor: 0x10de,
            device: 0x2330,
            class: 0x030200,
            bars: vec![Bar {
                index: 2,
                state: if assigned {
                    BarState::Assigned
                } else {
                    BarState::Ignored
                },
                io: false,
                mem64: true,
                prefetchable: true,
                start: assigned.then_some(0x100_0000_0000),
                size,
                size_source: size.map(|_| SizeSource::Sysfs),
                type_known: true,
            }],
            upstream: vec![],
            root_bus: None,
            ids_known: true,
        }
    }

    #[test]
    fn sizes_come_from_the_log_then_from_siblings() {
        let mut gpus: Vec<Gpu> = (1..=8)
            .map(|n| gpu(n, (n <= 3).then_some(32 * G), n <= 3))
            .collect();
        let events = parse_log(
            "pci 0000:04:00.0: BAR 2 [mem size 0x800000000 64bit pref]: can't assign; no space\n",
        );
        fill_sizes(&mut gpus, &events);
        assert!(gpus.iter().all(|g| g.bars[0].size == Some(32 * G)));
        assert_eq!(gpus[3].bars[0].size_source, Some(SizeSource::KernelLog));
        assert_eq!(gpus[5].bars[0].size_source, Some(SizeSource::Sibling));
    }

    #[test]
    fn facts_from_a_boot_log() {
        let events = parse_log(
            "\
[0.0] BIOS-e820: [mem 0x00000000feffc000-0x00000000feffffff] reserved
[0.0] BIOS-e820: [mem 0x000000fd00000000-0x000000ffffffffff] reserved
[0.0] BIOS-e820: [mem 0x000000fd00000000-0x000000ffffffffff] reserved
[0.1] Command line: ro pci=realloc
[0.2] acpi PNP0A08:00: host bridge window [mem 0x2000000000-0x11fffffffff window] ([0x10000000000-0x11fffffffff] ignored, not CPU addressable)
[0.3] pci_bus 0000:00: root bus resource [mem 0x80000000-0xafffffff window]
[0.3] pci_bus 0000:00: root bus resource [mem 0x2000000000-0xffffffffff window]
[0.3] pci_bus 0000:00: root bus resource [mem 0x2000000000-0xffffffffff window]
[0.9] pci_bus 0000:00: Some PCI device resources are unassigned, try booting with pci=realloc
[1.0] pci_bus 0000:00: No. 2 try to assign unassigned res
",
        );
        let f = LogFacts::from_events(&events);
        assert!(f.windows_known && f.realloc_retried && f.realloc_advised);
        assert_eq!(
            f.windows,
            vec![(
                Range::new(0x20_0000_0000, 0xff_ffff_ffff),
                Some(RootBus { domain: 0, bus: 0 })
            )]
        );
        assert_eq!(f.unaddressable_from, Some(0x100_0000_0000));
        // Reserved above 4 GiB only, each once (QEMU's HyperTransport range).
        assert_eq!(f.reserved, vec![Range::new(0xfd_0000_0000, 0xff_ffff_ffff)]);
        assert_eq!(f.command_line.as_deref(), Some("ro pci=realloc"));
        assert_eq!(f.evidence_windows()[0].source, WindowSource::KernelLog);
    }

    #[test]
    fn a_bar_sysfs_cannot_see_takes_its_last_word_from_the_log() {
        let addr: PciAddress = "0000:01:00.0".parse().unwrap();
        let events = parse_log(
            "\
pci 0000:01:00.0: BAR 0 [mem size 0x01000000]: can't assign; no space
pci 0000:01:00.0: BAR 4 [mem size 0x01000000]: can't assign; no space
pci 0000:01:00.0: BAR 4 [mem 0xfd000000-0xfdffffff]: assigned
",
        );
        let bars = with_failures_from_log(addr, &[], &events);
        assert_eq!(bars.len(), 1);
        assert_eq!((bars[0].index, bars[0].state), (0, BarState::Unassigned));
        assert_eq!(bars[0].size, Some(16 << 20));
    }
}
