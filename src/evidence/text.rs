//! Evidence from saved text (`explain`): dmesg, `journalctl -k`, `lspci
//! -v`/`-vv`, mixed, partial or wrapped as bug reports paste them.
//!
//! The text is replayed in order: a BAR that failed and was later assigned
//! (the kernel's realloc retry) ends up assigned. Every endpoint whose
//! memory BAR ends up without an address is named; I/O BARs, ROMs, SR-IOV
//! VF BARs and bridge windows are not BAR failures of a device.

use crate::evidence::log::{fill_sizes, LogFacts};
use crate::evidence::{Evidence, Gpu, OtherFailure, Window};
use crate::model::bar::{Bar, BarState, SizeSource};
use crate::model::pci::{is_bridge, PciAddress, RootBus, VENDOR_AMD, VENDOR_NVIDIA};
use crate::model::select::{is_selected, is_selected_without_device, Selector};
use crate::parse::kernel_log::{self, Event, FailReason, LogResource, ResourceRef, Space};
use crate::parse::lspci::{self, LspciDevice, LspciRegion, RegionAddr};
use crate::parse::p2p_text::{self, P2pText};
use crate::parse::{cmdline, paste, platform, qemu_info_pci};
use crate::read::root::read_lossy;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Seen during enumeration only.
    Probed,
    Failed,
    Assigned,
}

/// What the text says of one BAR so far.
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
    /// A resource line or lspci gave io/mem64/prefetchable.
    type_known: bool,
}

impl BarSeen {
    fn new(outcome: Outcome) -> BarSeen {
        BarSeen {
            outcome,
            io: false,
            mem64: false,
            prefetchable: false,
            size: None,
            start: None,
            had_address: false,
            from_lspci: false,
            type_known: false,
        }
    }

    /// Merges one more log line about this BAR. A failure after an
    /// assignment (a later boot in the same file, or the kernel releasing
    /// it) wins, and so does an assignment after a failure.
    fn merge(&mut self, outcome: Outcome, r: Option<&LogResource>) {
        if outcome != Outcome::Probed || self.outcome == Outcome::Probed {
            self.outcome = outcome;
        }
        if let Some(r) = r {
            let io = r.space == Space::Io;
            if self.type_known && self.io != io {
                // Another device at this address (two boots in one file):
                // its type replaces the old one, it does not mix with it.
                self.mem64 = false;
                self.prefetchable = false;
            }
            self.type_known = true;
            self.io = io;
            // `[io ... pref]` is no kernel's wording: an I/O BAR is never
            // 64-bit or prefetchable, whatever else the line says.
            self.mem64 = !io && (self.mem64 || r.mem64);
            self.prefetchable = !io && (self.prefetchable || r.prefetchable);
            if r.size > 0 && r.size != u64::MAX {
                self.size = Some(r.size);
            }
            match outcome {
                Outcome::Assigned => self.start = r.start.filter(|s| *s != 0),
                Outcome::Probed => {
                    self.start = r.start.filter(|s| *s != 0);
                    self.had_address |= self.start.is_some();
                }
                Outcome::Failed => {}
            }
        }
    }

    fn bar(&self, index: u8) -> Bar {
        Bar {
            index,
            state: match self.outcome {
                Outcome::Failed if self.had_address => BarState::Ignored,
                Outcome::Failed => BarState::Unassigned,
                // Enumerated and never complained about: the kernel kept
                // the firmware's address.
                Outcome::Probed | Outcome::Assigned => BarState::Assigned,
            },
            io: self.io,
            mem64: self.mem64,
            prefetchable: self.prefetchable,
            start: if self.outcome == Outcome::Failed {
                None
            } else {
                self.start
            },
            size: self.size,
            size_source: self.size.map(|_| {
                if self.from_lspci {
                    SizeSource::Lspci
                } else {
                    SizeSource::KernelLog
                }
            }),
            type_known: self.type_known,
        }
    }
}

/// What the text says of one function so far.
#[derive(Debug, Default, Clone)]
struct DeviceSeen {
    vendor: Option<u16>,
    device: Option<u16>,
    class: Option<u32>,
    header_type: Option<u8>,
    /// A bridge window line names it: only bridges have windows.
    has_windows: bool,
    /// A GPU driver is bound to it or complains about it (`nvidia
    /// 0000:...:`, NVIDIA's `NVRM:`, amdgpu's large BAR message): that
    /// driver's vendor.
    driver_vendor: Option<u16>,
    /// `Boot video device`, `vgaarb`: a VGA-class display device.
    vga: bool,
    /// NVIDIA's regions (its own count) that `NVRM:` says have no size.
    nvrm_zero: Vec<u8>,
    /// An `NVRM:` line named one of its regions.
    nvrm_bar: bool,
    /// A GPU driver's probe of it failed (`probe of ... failed with error`).
    probe_failed: bool,
    /// NVIDIA's driver could not bring it up (`RmInitAdapter failed`).
    init_failed: bool,
    /// A GPU driver kept its BAR after a resize that fell back: the driver
    /// read the BAR's address.
    resized: bool,
    /// A GPU driver said its BAR resize failed and fell back (`Failed to
    /// resize BAR`, `Small BAR device`).
    resize_fell_back: bool,
    /// Seconds since boot of its first timestamped enumeration line.
    enumerated_at: Option<u64>,
    bars: BTreeMap<u8, BarSeen>,
}

impl DeviceSeen {
    fn is_bridge(&self) -> bool {
        self.has_windows || is_bridge(self.class, self.header_type)
    }

    fn note(&mut self, index: u8, outcome: Outcome, r: Option<&LogResource>) {
        self.bars
            .entry(index)
            .or_insert_with(|| BarSeen::new(outcome))
            .merge(outcome, r);
    }
}

/// What `explain` knows from its files, read once.
#[derive(Debug)]
pub(crate) struct TextEvidence {
    /// `None` when the text holds no PCI resource message and no lspci
    /// device entry at all.
    pub evidence: Option<Evidence>,
    /// Peer-to-peer text: `nvidia-smi topo` matrices, NCCL logs, QEMU's
    /// warnings.
    pub p2p: P2pText,
}

/// Reads the files as one text (each lossily: a log with stray bytes is
/// still a log) and gathers what it says; the first file that cannot be
/// read stops it.
pub(crate) fn from_files(
    files: &[PathBuf],
    selectors: &[Selector],
    expect: Option<usize>,
) -> Result<TextEvidence, (PathBuf, std::io::Error)> {
    let mut text = String::new();
    for f in files {
        text.push_str(&read_lossy(f).map_err(|e| (f.clone(), e))?);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(TextEvidence {
        p2p: p2p_text::parse(&text),
        evidence: gather(&text, selectors, expect),
    })
}

/// The evidence in `text`, `None` when it holds no PCI resource message and
/// no lspci device entry at all.
pub(crate) fn gather(
    text: &str,
    selectors: &[Selector],
    expect: Option<usize>,
) -> Option<Evidence> {
    let text = &*paste::normalize(text);
    let events = kernel_log::parse_log(text);
    let facts = LogFacts::from_events(&events);
    let mut devs: BTreeMap<PciAddress, DeviceSeen> = BTreeMap::new();
    let mut evidence = false;
    // `NVRM: ... is invalid` headers: each says one region of one device
    // is; the `BARn is 0M` line after it (when kept) says which.
    let mut nvrm_invalid = 0usize;
    for e in &events {
        match e {
            Event::Function {
                bdf,
                vendor,
                device,
                class,
                header_type,
                secs,
            } => {
                let d = devs.entry(*bdf).or_default();
                d.vendor = Some(*vendor);
                d.device = Some(*device);
                d.class = Some(*class);
                d.header_type = Some(*header_type);
                // The first enumeration with a time since boot.
                d.enumerated_at = d.enumerated_at.or(*secs);
                evidence = true;
            }
            Event::Probed {
                bdf,
                res: ResourceRef::Bar(i),
                resource,
            } => {
                devs.entry(*bdf)
                    .or_default()
                    .note(*i, Outcome::Probed, Some(resource));
                evidence = true;
            }
            Event::AssignFailed {
                bdf,
                res,
                resource,
                reason,
            } => {
                let d = devs.entry(*bdf).or_default();
                match res {
                    ResourceRef::Bar(i) => {
                        d.note(*i, Outcome::Failed, resource.as_ref());
                        // `can't claim` with an address: the firmware had
                        // programmed one, which the kernel refused.
                        if *reason == FailReason::CantClaim
                            && resource.is_some_and(|r| r.start.is_some())
                        {
                            if let Some(b) = d.bars.get_mut(i) {
                                b.had_address = true;
                            }
                        }
                    }
                    ResourceRef::BridgeWindow => d.has_windows = true,
                    _ => {}
                }
                evidence = true;
            }
            Event::Assigned { bdf, res, resource } => {
                let d = devs.entry(*bdf).or_default();
                match res {
                    ResourceRef::Bar(i) => d.note(*i, Outcome::Assigned, Some(resource)),
                    ResourceRef::BridgeWindow => d.has_windows = true,
                    _ => {}
                }
                evidence = true;
            }
            Event::NvrmBar {
                bdf: Some(bdf),
                bar,
                zero,
            } => {
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(VENDOR_NVIDIA);
                d.vendor.get_or_insert(VENDOR_NVIDIA);
                d.nvrm_bar = true;
                // A region with a size has an address, one the driver
                // could not use (an old driver's BAR above 4 GiB).
                d.resized |= !*zero;
                // Placed once the device's own BARs are known (below).
                if *zero {
                    d.nvrm_zero.push(*bar);
                }
                evidence = true;
            }
            Event::GpuDriver { bdf, vendor } => {
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(*vendor);
                d.vendor.get_or_insert(*vendor);
                evidence = true;
            }
            Event::VgaDevice { bdf } => {
                devs.entry(*bdf).or_default().vga = true;
                evidence = true;
            }
            Event::AmdgpuLargeBar { bdf: Some(bdf) } => {
                // amdgpu could not resize its VRAM BAR and kept the one it
                // had: the device is an AMD GPU, and nothing failed.
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(VENDOR_AMD);
                d.vendor.get_or_insert(VENDOR_AMD);
                d.resized = true;
                for b in d.bars.values_mut().filter(|b| !b.io) {
                    if b.outcome == Outcome::Failed {
                        b.outcome = Outcome::Assigned;
                    }
                }
                evidence = true;
            }
            Event::DriverMapped { bdf } => {
                // A resize that fell back: the `can't assign` before was
                // for the larger size, and the old BAR stayed in place.
                let d = devs.entry(*bdf).or_default();
                d.resized = true;
                d.resize_fell_back = true;
                for b in d.bars.values_mut().filter(|b| !b.io) {
                    if b.outcome == Outcome::Failed {
                        b.outcome = Outcome::Assigned;
                    }
                }
                evidence = true;
            }
            Event::ProbeFailed { bdf, vendor } => {
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(*vendor);
                d.vendor.get_or_insert(*vendor);
                d.probe_failed = true;
                evidence = true;
            }
            Event::InitFailed { bdf } => {
                let d = devs.entry(*bdf).or_default();
                d.driver_vendor = Some(VENDOR_NVIDIA);
                d.vendor.get_or_insert(VENDOR_NVIDIA);
                d.init_failed = true;
                evidence = true;
            }
            Event::NvrmInvalid => {
                nvrm_invalid += 1;
                evidence = true;
            }
            _ => {}
        }
    }
    // `Region` lines without their device's header (`lspci -vvv | grep
    // Region`): whose they are is not in the text, but a memory BAR among
    // them without an address stands between every GPU and `ok`.
    let mut headless_failed = false;
    for l in lspci::parse(text) {
        evidence = true;
        if l.headless {
            headless_failed |= l.regions.iter().any(|r| {
                !r.io && matches!(r.address, RegionAddr::Unassigned | RegionAddr::Ignored)
            });
            continue;
        }
        merge_lspci(devs.entry(l.bdf).or_default(), &l);
    }
    for l in qemu_info_pci::parse(text) {
        evidence = true;
        merge_lspci(devs.entry(l.bdf).or_default(), &l);
    }
    let hyperv_mmio_short = platform::hyperv_mmio_need(text);
    if !evidence && hyperv_mmio_short.is_none() {
        return None;
    }
    // NVIDIA's third region alone, where no PCI core line failed the
    // device: the sign of a BAR the VMM exposes non-prefetchable (see
    // `Evidence::nvrm_third_region_only`). A window too small fails the
    // large VRAM BAR (region 1) first, or with it.
    let nvrm_third_region_only: Vec<PciAddress> = devs
        .iter()
        .filter(|(_, d)| {
            !d.nvrm_zero.is_empty()
                && d.nvrm_zero.iter().all(|n| *n == 2)
                && !d.bars.values().any(|b| b.outcome == Outcome::Failed)
        })
        .map(|(a, _)| *a)
        .collect();
    for d in devs.values_mut() {
        for n in std::mem::take(&mut d.nvrm_zero) {
            if let Some(i) = nvrm_pci_index(d, n) {
                d.note(i, Outcome::Failed, None);
            }
        }
    }
    // The driver's complaint without the line that names the region: the
    // device the driver gave up on (or the one NVIDIA device the text
    // has) failed, at the first of its regions the text shows no address
    // for. When every region has one, the complaint is noted as what
    // stands between the device and `ok`.
    let named_by_nvrm = devs.values().filter(|d| d.nvrm_bar).count();
    let nvidia: Vec<PciAddress> = devs
        .iter()
        .filter(|(_, d)| d.vendor == Some(VENDOR_NVIDIA) && !d.is_bridge())
        .map(|(a, _)| *a)
        .collect();
    let mut complaints = Vec::new();
    let mut inferred = Vec::new();
    for (addr, d) in devs.iter_mut() {
        let unnamed_nvrm = nvrm_invalid > named_by_nvrm && nvidia == [*addr] && !d.nvrm_bar;
        // NVIDIA's probe fails with -1 when a region is invalid; other
        // drivers' failures (amdgpu's -12) need not be a BAR's.
        let nvidia_probe = d.probe_failed && d.driver_vendor == Some(VENDOR_NVIDIA);
        if !(nvidia_probe || unnamed_nvrm) || d.bars.values().any(|b| b.outcome == Outcome::Failed)
        {
            continue;
        }
        match missing_region(d) {
            Some(i) => {
                d.note(i, Outcome::Failed, None);
                inferred.push(*addr);
            }
            None => complaints.push(*addr),
        }
    }

    // A VGA function the text names without its vendor: function 0 of a
    // card whose other function (its audio) has ids is that vendor's.
    let siblings: Vec<(PciAddress, u16)> = devs
        .iter()
        .filter_map(|(a, d)| Some((*a, d.vendor?)))
        .collect();
    for (addr, d) in devs.iter_mut() {
        if d.vga && d.vendor.is_none() {
            d.vendor = siblings
                .iter()
                .find(|(s, _)| {
                    s.domain == addr.domain && s.bus == addr.bus && s.device == addr.device
                })
                .map(|(_, v)| *v);
        }
    }
    let mut gpus = Vec::new();
    let mut other_failed = Vec::new();
    for (addr, d) in &devs {
        // Device 00.0 of a root bus with no class in the text is the root
        // complex's own function (the root port of an ARM or MIPS board's
        // controller, x86's host bridge), whose BARs are the controller's,
        // not an endpoint's.
        let root_complex = addr.bus == 0
            && addr.device == 0
            && addr.function == 0
            && d.class.is_none()
            && d.driver_vendor.is_none();
        if d.is_bridge() || root_complex {
            continue;
        }
        let is_gpu = match (d.vendor, d.device, d.class) {
            (Some(v), Some(dev), Some(c)) => is_selected(selectors, v, dev, c),
            // lspci without -nn names a class and a vendor, not a device.
            (Some(v), None, Some(c)) => is_selected_without_device(selectors, v, c),
            // `lspci -t -nn` gives ids, not a class: only a selector the
            // user gave by id or vendor can take it.
            (Some(v), Some(dev), None) if d.driver_vendor.is_none() => selectors
                .iter()
                .any(|s| !matches!(s, Selector::Class { .. }) && s.matches(v, dev, 0)),
            // Only a GPU driver, or vgaarb's `VGA device added`, names it:
            // a GPU, unless the user chose other devices (an emulated or
            // BMC adapter has its ids in the text, and is not taken).
            _ => (d.driver_vendor.is_some() || d.vga) && selectors.is_empty(),
        };
        let bars: Vec<Bar> = d
            .bars
            .iter()
            .filter(|(i, _)| **i < 6)
            .map(|(i, b)| b.bar(*i))
            .collect();
        if is_gpu {
            gpus.push(Gpu {
                addr: *addr,
                vendor: d.vendor.unwrap_or(0),
                device: d.device.unwrap_or(0),
                class: d.class.or(d.vga.then_some(0x03_0000)).unwrap_or(0),
                bars,
                upstream: Vec::new(),
                root_bus: None,
                ids_known: d.vendor.is_some() && d.device.is_some() && d.class.is_some(),
            });
        } else {
            other_failed.extend(bars.iter().filter(|b| b.fails_gpu()).map(|b| OtherFailure {
                bdf: *addr,
                bar: b.index,
                size: b.size,
                low: b.type_known && !b.mem64 && !b.prefetchable,
            }));
        }
    }
    fill_sizes(&mut gpus, &events);
    let unproven = gpus
        .iter()
        .filter(|g| g.ok())
        .filter_map(|g| {
            let d = &devs[&g.addr];
            let complaint =
                complaints.contains(&g.addr) || d.probe_failed || d.init_failed || headless_failed;
            let why = if headless_failed {
                "the text shows memory BARs without addresses in `Region` lines without their device, and does not say whose"
            } else if complaints.contains(&g.addr) {
                "its driver says a region is invalid though every BAR the text shows has an address"
            } else if d.probe_failed {
                "its driver's probe failed, and the text shows no BAR of it without an address"
            } else if d.init_failed {
                "NVIDIA's driver could not initialise it (RmInitAdapter failed), and the text shows no BAR of it without an address"
            } else if d.resized {
                return None;
            } else if !g.bars.iter().any(|b| !b.io) {
                "no memory BAR of it is shown"
            } else if g.bars.iter().any(|b| !b.io && b.start.is_none()) {
                "a memory BAR of it is shown without an address"
            } else {
                return None;
            };
            Some((g.addr, why.to_string(), complaint))
        })
        .collect();
    // A device with a 64-bit BAR in slot N > 0 of a bus other than the
    // root bus sits on a conventional PCI bridge: a PCIe port has one slot.
    // No real machine seats a GPU of 64-bit BARs there; QEMU's pci-bridge
    // is where a VM's hot-plugged devices go (Kata's default).
    // A resize that fell back and still left a BAR without an address: the
    // last word on the BAR came after the driver's fallback.
    let resize_lost: Vec<PciAddress> = gpus
        .iter()
        .filter(|g| devs[&g.addr].resize_fell_back && !g.ok())
        .map(|g| g.addr)
        .collect();
    let nvrm_third_region_only: Vec<PciAddress> = nvrm_third_region_only
        .into_iter()
        .filter(|a| gpus.iter().any(|g| g.addr == *a))
        .collect();
    // Failed GPUs the kernel first enumerated long after boot: a rescan
    // or hot-add (see `Evidence::rescanned`).
    let rescanned: Vec<(PciAddress, u64)> = gpus
        .iter()
        .filter(|g| !g.ok())
        .filter_map(|g| Some((g.addr, devs[&g.addr].enumerated_at?)))
        .filter(|(_, secs)| *secs >= RESCAN_AFTER_SECS)
        .collect();
    let mut hotplug = platform::hotplug_signs(text);
    if let Some(a) = devs.iter().find_map(|(a, d)| {
        let on_bridge = a.bus > 0 && a.device > 0 && !d.is_bridge();
        let wide = d
            .bars
            .values()
            .any(|b| b.mem64 && b.outcome == Outcome::Failed);
        (on_bridge && wide).then_some(*a)
    }) {
        hotplug.push((
            true,
            format!("{a} sits in slot {} of a conventional PCI bridge, where QEMU's pci-bridge hot-plugs devices", a.device),
        ));
    }
    let windows = facts.evidence_windows();
    for g in &mut gpus {
        g.root_bus = sole_root_bus(&windows, g.addr);
    }
    let mut firmware = platform::firmware_from_log(text);
    for d in devs.values() {
        if let (Some(v), Some(dev)) = (d.vendor, d.device) {
            firmware.signs.add_device(v, dev);
        }
    }

    Some(Evidence {
        gpus,
        expected: expect,
        windows,
        windows_known: facts.windows_known,
        cpu: platform::cpu_from_log(text),
        ram_end: facts.ram_end,
        empty_root_ports: 0,
        unaddressable_from: facts.unaddressable_from,
        // The command line if the log kept it; a realloc retry shows the
        // kernel reallocated whatever the command line said.
        realloc_active: facts.realloc_retried
            || facts
                .command_line
                .as_deref()
                .is_some_and(cmdline::realloc_active),
        realloc_advised: facts.realloc_advised,
        firmware,
        other_failed,
        bridges: Vec::new(),
        hyperv_mmio_short,
        unproven,
        hotplug,
        nvrm_third_region_only,
        resize_lost,
        inferred,
        rescanned,
    })
}

/// A device first enumerated this long after boot came with a rescan
/// (`echo 1 > .../rescan`) or a hot-add (`platform::BOOT_ENUMERATION_SECS`).
const RESCAN_AFTER_SECS: u64 = platform::BOOT_ENUMERATION_SECS;

/// The root bus `dev` hangs from, where the text shows windows of exactly
/// one root bus in its domain, numbered no higher than its own bus. PCI
/// domains (segments) never share a window, so a board with one host
/// bridge per domain (corpus 135: four, 256 MiB each) gives each device
/// its own; with two root buses in the device's domain the text does not
/// say which is its (`None`: every window counts, as before).
fn sole_root_bus(windows: &[Window], dev: PciAddress) -> Option<RootBus> {
    let mut buses = windows
        .iter()
        .filter_map(|w| w.bus)
        .filter(|b| b.domain == dev.domain);
    let first = buses.next()?;
    (buses.all(|b| b == first) && first.bus <= dev.bus).then_some(first)
}

/// The PCI BAR that NVIDIA's region `n` is. The driver counts its memory
/// regions, skipping the upper half of a 64-bit BAR: region n is the n-th
/// memory BAR the text shows for the device, or, where the text shows
/// none, 0, 1, 3 for regions 0, 1, 2 (BAR 0 32-bit, BAR 1 and BAR 3 64-bit
/// on every NVIDIA GPU from G80 to Blackwell whose BARs the fixtures and
/// corpus show: tests/fixtures/h200-kvm-passthrough, corpus 19 and 36, and
/// the 2.6.27 enumeration of a G92 in corpus 20, where BAR 1 is 32-bit and
/// region 2 is still BAR 3). `None` past region 2: no such BAR.
fn nvrm_pci_index(d: &DeviceSeen, n: u8) -> Option<u8> {
    let memory: Vec<u8> = d
        .bars
        .iter()
        .filter(|(i, b)| **i < 6 && b.type_known && !b.io)
        .map(|(i, _)| *i)
        .collect();
    if memory.len() > usize::from(n) && memory.first() == Some(&0) {
        return Some(memory[usize::from(n)]);
    }
    [0, 1, 3].get(usize::from(n)).copied()
}

/// The first region of an NVIDIA-style layout (BAR 0, then two 64-bit
/// BARs: 1 and 3, or 2 and 4 where BAR 0 is itself 64-bit; see
/// `nvrm_pci_index`) the text shows no address for; `None` when each has
/// one.
fn missing_region(d: &DeviceSeen) -> Option<u8> {
    let bar0_64 = d.bars.get(&0).is_some_and(|b| b.mem64);
    let layout: [u8; 3] = if bar0_64 { [0, 2, 4] } else { [0, 1, 3] };
    layout.into_iter().find(|i| {
        d.bars
            .get(i)
            .is_none_or(|b| b.outcome == Outcome::Failed || (b.start.is_none() && !b.had_address))
    })
}

/// Adds what lspci printed of a device. Its regions state the BARs' final
/// condition and replace what the log said of the same BAR.
fn merge_lspci(d: &mut DeviceSeen, l: &LspciDevice) {
    if let Some(v) = l.vendor_id() {
        d.vendor = Some(v);
    }
    if let Some(v) = l.device_id() {
        d.device = Some(v);
    }
    if let Some(c) = l.class_code() {
        d.class.get_or_insert(u32::from(c) << 8);
    }
    if l.has_bus_line {
        // Only type 1 and type 2 headers print a bus line.
        d.header_type.get_or_insert(1);
    }
    let mut taken = Vec::new();
    for r in &l.regions {
        let index = region_index(d, r, &taken);
        taken.push(index);
        let seen = BarSeen {
            outcome: match r.address {
                RegionAddr::Assigned(_) | RegionAddr::Virtual(_) => Outcome::Assigned,
                RegionAddr::Unassigned | RegionAddr::Ignored => Outcome::Failed,
            },
            io: r.io,
            mem64: r.mem64,
            prefetchable: r.prefetchable,
            size: r.size.or_else(|| d.bars.get(&index).and_then(|b| b.size)),
            start: match r.address {
                RegionAddr::Assigned(a) | RegionAddr::Virtual(a) => Some(a),
                RegionAddr::Unassigned | RegionAddr::Ignored => None,
            },
            had_address: r.address == RegionAddr::Ignored,
            from_lspci: true,
            type_known: r.typed,
        };
        d.bars.insert(index, seen);
    }
}

/// The BAR a region is. `lspci -v` prints no numbers and skips BARs a
/// device does not implement, so a counted index is wrong once one is
/// missing before it; when the kernel log named this device's BARs, the
/// region is the first of those, not yet matched, of the same kind and
/// (where both are known) size.
fn region_index(d: &DeviceSeen, r: &LspciRegion, taken: &[u8]) -> u8 {
    if !r.index_inferred {
        return r.index;
    }
    d.bars
        .iter()
        .filter(|(i, b)| {
            !b.from_lspci
                && !taken.contains(i)
                && b.io == r.io
                && b.mem64 == r.mem64
                && b.prefetchable == r.prefetchable
                && (b.size.is_none() || r.size.is_none() || b.size == r.size)
        })
        .map(|(i, _)| *i)
        .next()
        .unwrap_or(r.index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_takes_the_root_bus_only_where_its_domain_has_one() {
        let w = |domain, bus, start: u64| Window {
            range: crate::model::range::Range::new(start, start + 0xfff_ffff),
            source: crate::evidence::WindowSource::KernelLog,
            bus: Some(RootBus { domain, bus }),
        };
        let dev = |domain, bus| PciAddress {
            domain,
            bus,
            device: 0,
            function: 0,
        };
        let one_each = [w(0, 0, 0xc_0000_0000), w(1, 0, 0xc_1000_0000)];
        assert_eq!(
            sole_root_bus(&one_each, dev(1, 1)),
            Some(RootBus { domain: 1, bus: 0 })
        );
        // Two root buses in the domain: which is the device's is not said.
        let two = [w(0, 0, 0xc_0000_0000), w(0, 0x80, 0xd_0000_0000)];
        assert_eq!(sole_root_bus(&two, dev(0, 0x81)), None);
        // Two windows of one root bus are still one root bus.
        let same = [w(0, 0, 0xc_0000_0000), w(0, 0, 0xd_0000_0000)];
        assert_eq!(
            sole_root_bus(&same, dev(0, 1)),
            Some(RootBus { domain: 0, bus: 0 })
        );
        // A root bus numbered above the device's cannot be its.
        let high = [w(0, 0x80, 0xd_0000_0000)];
        assert_eq!(sole_root_bus(&high, dev(0, 1)), None);
        // No window in the device's domain, or none with a bus.
        assert_eq!(sole_root_bus(&one_each, dev(2, 1)), None);
        let unknown = [Window {
            bus: None,
            ..w(0, 0, 0xc_0000_0000)
        }];
        assert_eq!(sole_root_bus(&unknown, dev(0, 1)), None);
    }

    #[test]
    fn a_failure_then_an_assignment_is_assigned() {
        let ev = gather(
            "\
pci 0000:01:00.0: [10de:2330] type 00 class 0x030200
pci 0000:01:00.0: BAR 1 [mem size 0x2000000000 64bit pref]: can't assign; no space
pci 0000:01:00.0: BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: assigned
",
            &[],
            None,
        )
        .unwrap();
        assert_eq!(ev.gpus.len(), 1);
        assert!(ev.gpus[0].ok());
        assert_eq!(ev.gpus[0].bars[0].size, Some(128 << 30));
    }

    #[test]
    fn a_refused_firmware_address_is_ignored_not_unassigned() {
        let ev = gather(
            "\
pci 0000:01:00.0: [10de:2330] type 00 class 0x030200
pci 0000:01:00.0: BAR 1 [mem 0x10000000000-0x11fffffffff 64bit pref]: can't claim; no compatible bridge window
",
            &[],
            None,
        )
        .unwrap();
        assert_eq!(ev.gpus[0].bars[0].state, BarState::Ignored);
    }

    #[test]
    fn an_amdgpu_large_bar_fallback_names_a_healthy_gpu() {
        let ev = gather(
            "[   12.3] amdgpu 0000:83:00.0: amdgpu: Not enough PCI address space for a large BAR.\n",
            &[],
            None,
        )
        .unwrap();
        assert_eq!(ev.gpus.len(), 1);
        assert_eq!(ev.gpus[0].vendor, VENDOR_AMD);
        assert!(ev.gpus[0].ok() && !ev.gpus[0].ids_known);
    }

    #[test]
    fn counted_lspci_regions_take_the_index_the_log_gave() {
        // BAR 0 not implemented: `lspci -v` counts the 64-bit BAR as 0,
        // the log says it is BAR 2.
        let text = "\
pci 0000:01:00.0: [1af4:1110] type 00 class 0x050000
pci 0000:01:00.0: BAR 2 [mem size 0x800000000 64bit pref]: can't assign; no space
01:00.0 RAM memory: Red Hat, Inc. Inter-VM shared memory (rev 01)
\tMemory at <unassigned> (64-bit, prefetchable) [size=32G]
";
        let sel = vec![Selector::Vendor(0x1af4)];
        let ev = gather(text, &sel, None).unwrap();
        let bars = &ev.gpus[0].bars;
        assert_eq!(bars.len(), 1, "{bars:?}");
        assert_eq!((bars[0].index, bars[0].state), (2, BarState::Unassigned));
        assert_eq!(bars[0].size_source, Some(SizeSource::Lspci));
    }

    #[test]
    fn an_io_bar_never_has_memory_flags() {
        for text in [
            // fuzz/regressions/explain/crash-fb908c89...: memory flags
            // must not stick to a BAR a later line calls I/O.
            "o 0000:01:00.0: BAR 2[mem 0 pref]\ni 0000:01:00.0: [10de:2204]type 0 class 0x30000\ni 0000:01:00.0: BAR 2[io 0]",
            // fuzz/regressions/explain/crash-f1927ae3...: no kernel prints
            // `[io ... pref]`, and the BAR it names is not prefetchable.
            "i 0000:01:00.0: [10de:2204]type 0 class 0x30000\nc 0000:01:00.0: BAR 5[io 0 pref]\n",
        ] {
            let ev = gather(text, &[], None).unwrap();
            let b = ev.gpus[0].bars[0];
            assert!(b.io && !b.mem64 && !b.prefetchable, "{text:?}: {b:?}");
        }
    }

    #[test]
    fn ok_needs_addresses_and_a_driver_complaint_counts_against_it() {
        // (text, failed BARs of 01:00.0, the case when nothing failed,
        // whether the driver complained)
        for (what, text, failed, unproven) in [
            (
                "a header alone",
                "01:00.0 VGA compatible controller: NVIDIA Corporation GP104 [GeForce GTX 1080]\n",
                vec![],
                Some(false),
            ),
            (
                "a driver line alone",
                "[    5.1] nouveau 0000:01:00.0: DRM: unknown chipset\n",
                vec![],
                Some(false),
            ),
            (
                "NVRM's header and the probe, no BARn line (corpus 68's shape)",
                "01:00.0 3D controller: NVIDIA Corporation Device 3182 (rev a1)\nRegion 0: Memory at 2000000000 (64-bit, prefetchable) [size=64M]\nRegion 4: Memory at 2004000000 (64-bit, prefetchable) [size=32M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid\nnvidia: probe of 0000:01:00.0 failed with error -1\n",
                vec![2],
                None,
            ),
            (
                "NVRM's header alone, the one NVIDIA device",
                "01:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)\n\tRegion 0: Memory at fa000000 (32-bit, non-prefetchable) [size=16M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n",
                vec![1],
                None,
            ),
            (
                "amdgpu's probe failed (-12): a complaint, no BAR named",
                "amdgpu 0001:01:00.0: Fatal error during GPU init\namdgpu: probe of 0001:01:00.0 failed with error -12\n",
                vec![],
                Some(true),
            ),
            (
                "xe's resize fell back: the old BAR stays",
                "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\npci 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: Failed to resize BAR2 to 16384M (-ENOSPC)\n",
                vec![],
                None,
            ),
            (
                "amdgpu reports its VRAM",
                "amdgpu 0000:01:00.0: VRAM: 8176M 0x000000F400000000 - 0x000000F5FEFFFFFF (8176M used)\n",
                vec![],
                None,
            ),
        ] {
            let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
            let g = ev
                .gpus
                .iter()
                .find(|g| g.addr.bus == 1)
                .unwrap_or_else(|| panic!("{what}: {:?}", ev.gpus));
            let bars: Vec<u8> = g.bars.iter().filter(|b| b.fails_gpu()).map(|b| b.index).collect();
            assert_eq!(bars, failed, "{what}: {:?}", g.bars);
            assert_eq!(
                ev.unproven.first().map(|u| u.2),
                unproven,
                "{what}: {:?}",
                ev.unproven
            );
        }
    }

    #[test]
    fn driver_messages_that_are_signs_of_their_own() {
        // (what, text, third region alone, resize lost)
        for (what, text, third, lost) in [
            (
                "NVRM's third region alone, no PCI core line",
                "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
                true,
                false,
            ),
            (
                "NVRM's VRAM region and the third: a window too small",
                "NVRM: BAR1 is 0M @ 0x0 (PCI:0000:01:00.0)\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
                false,
                false,
            ),
            (
                "NVRM's third region and the kernel failed BAR 3 itself",
                "pci 0000:01:00.0: BAR 3: no space for [mem size 0x02000000 64bit pref]\nNVRM: BAR2 is 0M @ 0x0 (PCI:0000:01:00.0)\n",
                false,
                false,
            ),
            (
                "xe's resize fell back and the old size found no place",
                "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\nxe 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: [drm] Failed to resize BAR2 to 16384M (-ENOSPC)\nxe 0000:01:00.0: BAR 2 [mem size 0x10000000 64bit pref]: can't assign; no space\n",
                false,
                true,
            ),
            (
                "xe's resize fell back and the old BAR stayed",
                "pci 0000:01:00.0: [8086:e20b] type 00 class 0x030000\nxe 0000:01:00.0: BAR 2 [mem size 0x400000000 64bit pref]: can't assign; no space\nxe 0000:01:00.0: [drm] Failed to resize BAR2 to 16384M (-ENOSPC)\n",
                false,
                false,
            ),
            (
                "NVRM's header alone, BARs 0 and 4 shown: region unnamed",
                "01:00.0 3D controller: NVIDIA Corporation Device 3182 (rev a1)\nRegion 0: Memory at 2000000000 (64-bit, prefetchable) [size=64M]\nRegion 4: Memory at 2004000000 (64-bit, prefetchable) [size=32M]\nNVRM: This PCI I/O region assigned to your NVIDIA device is invalid\nnvidia: probe of 0000:01:00.0 failed with error -1\n",
                false,
                false,
            ),
        ] {
            let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
            let unnamed = what.contains("unnamed");
            assert_eq!(!ev.inferred.is_empty(), unnamed, "{what}");
            assert_eq!(!ev.nvrm_third_region_only.is_empty(), third, "{what}");
            assert_eq!(!ev.resize_lost.is_empty(), lost, "{what}");
        }
    }

    #[test]
    fn a_device_enumerated_long_after_boot_was_rescanned() {
        let bdf = |s: &str| s.parse::<PciAddress>().unwrap();
        let failed = "[  150.162295] pci 0000:53:00.0: BAR 2: no space for [mem size 0x400000000 64bit pref]";
        for (line, want) in [
            ("[  150.161565] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", Some(150)),
            ("> [    92.923533] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", Some(92)),
            ("Sep 21 10:24:30 host kernel: [   67.48] pci 0000:53:00.0: [10de:15f8] type 00 class 0x030200", Some(67)),
            // No timestamp, or only another function's enumeration.
            ("pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000", None),
            ("[  150.161565] pci 0000:53:00.1: [8086:56c0] type 00 class 0x038000", None),
        ] {
            let ev = gather(&format!("{line}\n{failed}\n"), &[], None).unwrap();
            let got = ev.rescanned.iter().find(|(a, _)| *a == bdf("0000:53:00.0"));
            assert_eq!(got.map(|(_, s)| *s), want, "{line}");
        }
        let text = "[  150.161565] pci 0000:53:00.0: [8086:56c0] type 00 class 0x038000\n[  150.162295] pci 0000:53:00.0: BAR 2: no space for [mem size 0x400000000 64bit pref]\n";
        let ev = gather(text, &[], None).unwrap();
        assert_eq!(ev.rescanned, [(bdf("0000:53:00.0"), 150)]);
        // The same failure at boot is no rescan.
        let ev = gather(&text.replace("150.16", "  1.16"), &[], None).unwrap();
        assert!(ev.rescanned.is_empty(), "{:?}", ev.rescanned);
    }

    #[test]
    fn gpus_named_without_a_class_line() {
        // (text, the GPUs, the devices with a failed BAR)
        for (what, text, gpus, failed) in [
            (
                "vgaarb's VGA device, its vendor from the audio function (corpus 109)",
                "pci 0000:01:00.0: vgaarb: VGA device added: decodes=io+mem,owns=none,locks=none\npci 0000:01:00.1: [1002:aac8] type 00 class 0x040300\npci 0000:01:00.0: BAR 0: assigned [mem 0x600000000-0x60fffffff 64bit pref]\n",
                vec!["0000:01:00.0"],
                vec![],
            ),
            (
                "QEMU's monitor names the GPU by class and ids (corpus 67)",
                "  Bus  1, device   0, function 0:\n    3D controller: PCI device 10de:2901\n      BAR2: 64 bit prefetchable memory at 0xffffffffffffffff [0x3ffffffffe].\n",
                vec!["0000:01:00.0"],
                vec!["0000:01:00.0"],
            ),
            (
                "QXL is an emulated adapter, not a GPU (corpus 77)",
                "pci 0000:01:00.0: [1b36:0100] type 00 class 0x038000\npci 0000:01:00.0: BAR 0: no space for [mem size 0x04000000]\npci 0000:01:00.0: BAR 0: failed to assign [mem size 0x04000000]\n",
                vec![],
                vec!["0000:01:00.0"],
            ),
            (
                "a board's root port at 00:00.0, no class line (corpus 120)",
                "pci 0002:00:00.0: BAR 0: failed to assign [mem size 0x40000000]\n",
                vec![],
                vec![],
            ),
        ] {
            let ev = gather(text, &[], None).unwrap_or_else(|| panic!("{what}"));
            let g: Vec<String> = ev.gpus.iter().map(|g| g.addr.to_string()).collect();
            assert_eq!(g, gpus, "{what}");
            let mut f: Vec<String> = ev
                .gpus
                .iter()
                .filter(|g| !g.ok())
                .map(|g| g.addr.to_string())
                .chain(ev.other_failed.iter().map(|o| o.bdf.to_string()))
                .collect();
            f.dedup();
            assert_eq!(f, failed, "{what}");
        }
    }

    #[test]
    fn a_wide_bar_on_a_pci_bridge_slot_is_a_vms_hot_plug() {
        let slot = "pci 0000:01:02.0: BAR 1: no space for [mem size 0x10000000 64bit pref]\npci 0000:01:02.0: BAR 1: failed to assign [mem size 0x10000000 64bit pref]\n";
        let ev = gather(slot, &[], None).unwrap();
        assert!(ev.hotplug.iter().any(|(vm, _)| *vm), "{:?}", ev.hotplug);
        // Device 0 below a port, as every PCIe GPU sits: no sign.
        let port = slot.replace("01:02.0", "01:00.0");
        assert!(gather(&port, &[], None).unwrap().hotplug.is_empty());
    }

    #[test]
    fn region_lines_in_html_markup_are_read() {
        let text = "$ lspci -vvv -s 05:00.0 | grep Region<br>\n&nbsp;&nbsp;Region 0: Memory at fa000000 (32-bit, non-prefetchable) [size=16M]<br>\n&nbsp;&nbsp;Region 1: Memory at &lt;unassigned&gt; (64-bit, prefetchable) [size=16G]<br>\n";
        let ev = gather(text, &[Selector::Vendor(0x10de)], None).unwrap();
        let d = &ev.gpus;
        assert!(d.is_empty() || !d[0].ok(), "{d:?}");
        assert_eq!(ev.other_failed.len() + d.len(), 1, "{ev:?}");
    }

    #[test]
    fn nothing_pci_is_no_evidence() {
        assert!(gather("hello\nworld\n", &[], None).is_none());
    }
}
