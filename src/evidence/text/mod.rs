//! Evidence from saved text (`explain`): dmesg, `journalctl -k`, `lspci
//! -v`/`-vv`, mixed, partial or wrapped as bug reports paste them.
//!
//! The text is replayed in order: a BAR that failed and was later assigned
//! (the kernel's realloc retry) ends up assigned. Every endpoint whose
//! memory BAR ends up without an address is named; I/O BARs, ROMs, SR-IOV
//! VF BARs and bridge windows are not BAR failures of a device.

use crate::evidence::log::{fill_sizes, LogFacts};
use crate::evidence::{Evidence, Gpu, NotGpu, OtherFailure, Window};
use crate::model::bar::Bar;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::Platform;
use crate::model::select::{is_selected, is_selected_without_device, Selector};
use crate::parse::hypervisor::{self, HostMessage};
use crate::parse::kernel_log::{self, LogResource, ProbeDoubt, ResourceRef, Space};
use crate::parse::p2p_text::{self, P2pText};
use crate::parse::{cmdline, paste, platform};
use crate::read::root::read_lossy;
use device_seen::vga_vendors;
use nvidia::Nvidia;
use replay::{replay, DeviceSeen, Outcome, Replay};
use std::collections::BTreeMap;
use std::path::PathBuf;

mod amdgpu;
mod bar_seen;
mod causes;
mod device_seen;
mod lspci;
mod nvidia;
mod replay;
mod windows;

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
    let Replay {
        mut devs,
        mut evidence,
        nvrm_invalid,
        nvrm_unnamed,
        unnamed,
    } = replay(&events);
    let amdgpu = amdgpu::resize(&events, &mut devs);
    evidence |= amdgpu.seen;
    let nvidia_resize = nvidia::resize(&events, &mut devs);
    evidence |= nvidia_resize.seen;
    let (listed, headless_failed) = lspci::merge_listings(text, &mut devs);
    evidence |= listed;
    let hyperv_mmio_short = platform::hyperv_mmio_need(text);
    let host_messages = hypervisor::host_messages(text);
    if !evidence && hyperv_mmio_short.is_none() && host_messages.is_empty() {
        return None;
    }
    let mut unnamed_failed = nvidia::name_unnamed(&mut devs, &nvrm_unnamed, nvrm_invalid);
    unnamed_failed.extend(
        unnamed
            .iter()
            .filter_map(|(res, r)| unnamed_failure(*res, r.as_ref())),
    );
    unnamed_failed.extend(lost_in_resize(&nvidia_resize, &amdgpu));
    let Nvidia {
        third_region_only: nvrm_third_region_only,
        complaints,
        inferred,
    } = nvidia::place(&mut devs, nvrm_invalid);
    vga_vendors(&mut devs);
    let (mut gpus, other_failed) = select(&devs, selectors);
    fill_sizes(&mut gpus, &events);
    let unproven = unproven(&gpus, &devs, &complaints, headless_failed);
    let driver_gave_up = unproven
        .iter()
        .map(|(a, _, _)| *a)
        .filter(|a| {
            let d = &devs[a];
            !headless_failed
                && !complaints.contains(a)
                && ((d.probe_failed && d.probe_explained) || (d.init_failed && d.init_explained))
        })
        .collect();
    let start_failed = unproven
        .iter()
        .filter(|(a, _, complaint)| {
            let d = &devs[a];
            !complaint && d.init_failed && !d.init_explained
        })
        .map(|(a, _, _)| *a)
        .collect();
    let driver_runs = gpus
        .iter()
        .filter(|g| g.ok() && devs[&g.addr].running && !g.bars.iter().any(|b| !b.io))
        .map(|g| g.addr)
        .collect();
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
    let bridge_short = windows::short_bridges(&events, &devs);
    let claims_pending = device_seen::claims_pending(&devs, &gpus);
    let mut hotplug = platform::hotplug_signs(text);
    hotplug.extend(bridge_slot_hotplug(&devs));
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
    for m in &host_messages {
        if let Some((p, what)) = host_sign(m) {
            if !firmware.signs.vm_devices.iter().any(|(_, w)| w == what) {
                firmware.signs.vm_devices.push((p, what.to_string()));
            }
        }
    }

    Some(Evidence {
        gpus,
        expected: expect,
        windows,
        windows_known: facts.windows_known,
        cpu: platform::cpu_from_log(text),
        ram_end: facts.ram_end,
        reserved: facts.reserved.clone(),
        window_busy: Vec::new(),
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
        claims_pending,
        bridges: Vec::new(),
        hyperv_mmio_short,
        kernel: platform::kernel_release(text),
        unproven,
        driver_gave_up,
        driver_runs,
        start_failed,
        vfio_host: platform::vfio_host_sign(text),
        hotplug,
        nvrm_third_region_only,
        resize_lost,
        inferred,
        rescanned,
        host_messages,
        vf_failed: vf_failed(&devs),
        unnamed_failed,
        bridge_short,
        platform_told: None,
    })
}

/// A PCI core failure with its device cut off, in words; `None` for one
/// that is no memory BAR of a device (an I/O BAR, a ROM, a window, a VF
/// BAR), which never fails a device.
fn unnamed_failure(res: ResourceRef, r: Option<&LogResource>) -> Option<String> {
    let r = r?;
    let ResourceRef::Bar(i) = res else {
        return None;
    };
    (r.space == Space::Mem).then(|| {
        format!(
            "BAR {i} ({}{}{}) of a device the text does not name",
            crate::model::size::human(r.size),
            if r.mem64 { ", 64-bit" } else { "" },
            if r.prefetchable { " pref" } else { "" }
        )
    })
}

/// The platform a host-side message names: its hypervisor's or VMM's own
/// words (a host kernel's and OVMF's say only that a VM is involved, or
/// that it is QEMU's firmware).
fn host_sign(m: &HostMessage) -> Option<(Platform, &'static str)> {
    Some(match m.source() {
        "vmware" => (Platform::Vmware, "VMware's own messages (vmx, vSphere)"),
        "hyperv" => (Platform::HyperV, "Hyper-V's own messages"),
        "qemu" => (Platform::Qemu, "QEMU's own messages"),
        "libvirt" | "proxmox" => (Platform::Qemu, "its QEMU stack's own messages"),
        "ovmf" => (Platform::Qemu, "OVMF's debug log"),
        "seabios" => (Platform::Qemu, "SeaBIOS's debug log"),
        "cloud_hypervisor" => (Platform::OtherVm, "Cloud Hypervisor's messages"),
        "openvmm" => (Platform::OtherVm, "OpenVMM's messages"),
        "bhyve" => (Platform::OtherVm, "bhyve's messages"),
        "xen" => (
            Platform::OtherVm,
            "Xen's messages (its hypervisor, device model or pcifront)",
        ),
        _ => return None,
    })
}

/// The devices whose SR-IOV VF BARs failed (`Evidence::vf_failed`).
fn vf_failed(devs: &BTreeMap<PciAddress, DeviceSeen>) -> Vec<PciAddress> {
    devs.iter()
        .filter(|(_, d)| !d.vf_failed.is_empty() || d.vf_space_short)
        .map(|(a, _)| *a)
        .collect()
}

/// The GPUs among the devices the text names (by the selectors, or by a
/// GPU driver's or vgaarb's word), and the other endpoints' failed BARs.
fn select(
    devs: &BTreeMap<PciAddress, DeviceSeen>,
    selectors: &[Selector],
) -> (Vec<Gpu>, Vec<OtherFailure>) {
    let mut gpus = Vec::new();
    let mut other_failed = Vec::new();
    for (addr, d) in devs {
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
            // What the text says it is instead, if anything: a device
            // named only by its address may be a GPU (a paste without
            // class lines).
            let not_gpu = match d.class {
                Some(c) if !matches!(c >> 16, 0x03 | 0x12) => Some(NotGpu::Class(c)),
                None if addr.function > 0 && d.driver_vendor.is_none() && !d.vga => {
                    Some(NotGpu::Function(addr.function))
                }
                None if d.driver_vendor.is_none() && !d.vga => {
                    d.other_driver.clone().map(NotGpu::Driver)
                }
                _ => None,
            };
            // Nothing of it but its address and BARs, and no other
            // function of its slot in the text (a GPU's HD audio is one).
            let alone = d.class.is_none()
                && !devs.keys().any(|a| {
                    a != addr && (a.domain, a.bus, a.device) == (addr.domain, addr.bus, addr.device)
                });
            let mut memory = bars.iter().filter(|b| !b.io).peekable();
            let small = alone
                && memory.peek().is_some()
                && memory.all(|b| b.size.is_some_and(|s| s < OtherFailure::SMALL_DEVICE));
            other_failed.extend(bars.iter().filter(|b| b.fails_gpu()).map(|b| OtherFailure {
                bdf: *addr,
                bar: b.index,
                size: b.size,
                low: b.type_known && !b.mem64 && !b.prefetchable,
                not_gpu: not_gpu.clone(),
                small,
            }));
        }
    }
    (gpus, other_failed)
}

/// GPUs with no failure whose memory BARs the text does not show with
/// addresses, or whose driver complained: why each is not `ok`, and
/// whether it failed where its driver complained.
fn unproven(
    gpus: &[Gpu],
    devs: &BTreeMap<PciAddress, DeviceSeen>,
    complaints: &[PciAddress],
    headless_failed: bool,
) -> Vec<(PciAddress, String, bool)> {
    gpus
        .iter()
        .filter(|g| g.ok())
        .filter_map(|g| {
            let d = &devs[&g.addr];
            // A probe failure after a line that makes it a doubt
            // (`ProbeDoubt`) is no complaint, and no proof either.
            let probe = d.probe_complaint();
            let init = d.init_failed && !d.init_explained;
            // `RmInitAdapter failed` alone is no complaint about a region:
            // the adapter's start fails for many reasons (GSP, power, a
            // confidential VM's mappings, a reset in progress), and where a
            // region is the cause NVIDIA's driver says so first (`BARn is
            // 0M`). Without that, or a BAR the text shows failing, the
            // BARs are not known (corpus 207; a02 and a03 of the third
            // collection of 2026-12-06, each labelled healthy from its
            // thread; 104 and 113 are the failing ones that now read so).
            // Where the text lists the GPU's memory BARs and none is
            // prefetchable, the region the driver maps its memory through
            // is the one missing (every NVIDIA GPU has one): that start's
            // failure is the region's.
            let listed = g.bars.iter().any(|b| !b.io);
            let no_vram_bar = listed && !g.bars.iter().any(|b| !b.io && b.prefetchable);
            let complaint =
                complaints.contains(&g.addr) || probe || (init && no_vram_bar) || headless_failed;
            let why = if headless_failed {
                "the text shows memory BARs without addresses in `Region` lines without their device, and does not say whose"
            } else if complaints.contains(&g.addr) {
                "its driver says a region is invalid though every BAR the text shows has an address"
            } else if probe {
                "its driver's probe failed, and the text shows no BAR of it without an address"
            } else if init {
                "NVIDIA's driver could not initialise it (RmInitAdapter failed), and the text shows no BAR of it without an address"
            } else if let Some(doubt) = d
                .probe_doubted()
                .filter(|_| !listed || g.bars.iter().any(|b| !b.io && b.start.is_none()))
            {
                match doubt {
                    ProbeDoubt::AmdgpuStarted => "amdgpu started its IP blocks (the PSP, its rings) before its probe failed, so its register BAR has an address; its doorbell and VRAM BARs are not shown (amdgpu goes on without them and its rings then time out), nor any other BAR of it",
                    ProbeDoubt::NouveauFirmware => "nouveau found no firmware for it before its probe failed, which missing firmware does; a BAR 1 or 3 without an address fails the probe the same way (-ENOMEM), and the text shows none of its BARs",
                    ProbeDoubt::NvidiaRequestAtZero => "NVIDIA's driver found its BAR 0 at 0x0 when it requested the range (`request_mem_region failed for 0M @ 0x0`), after its own check had found an address there, and its probe failed: the text shows neither a BAR left without an address at boot nor another driver holding it",
                    ProbeDoubt::NvidiaReason => "NVIDIA's driver named it with a reason before its probe failed, in words none of its region messages use (`NVRM: GPU ...`); the probe fails the same way (-1) for a region, and the text shows none of its BARs",
                }
            } else if d.probe_doubted().is_some() {
                // Every memory BAR of it is shown with an address.
                return None;
            } else if d.resized || d.bound || d.running {
                return None;
            } else if d.probe_failed || d.init_failed {
                "its driver gave up on it for a reason the driver names that is no BAR (an IRQ, firmware, its video BIOS, its power, an unsupported GPU, its own graphics table, a device that does not answer), and the text shows none of its BARs with an address"
            } else if d
                .resize_tried
                .is_some_and(|i| g.bars.iter().any(|b| b.index == i && b.start.is_none()))
            {
                "NVIDIA's driver tried to resize its BAR 1 and found no space for the larger size; the driver then steps back to the size the BAR had, and says `NVRM: FATAL: Failed to re-allocate BAR1` only if that fails too, and the text shows no address for the BAR"
            } else if !listed {
                "no memory BAR of it is shown"
            } else if g.bars.iter().any(|b| !b.io && b.start.is_none()) {
                "a memory BAR of it is shown without an address"
            } else {
                return None;
            };
            Some((g.addr, why.to_string(), complaint))
        })
        .collect()
}

/// The BARs a failed resize lost of a GPU the text does not name.
fn lost_in_resize(nvidia: &nvidia::Resize, amdgpu: &amdgpu::Resize) -> Vec<String> {
    let mut out = Vec::new();
    if nvidia.lost_unnamed {
        out.push(
            "BAR 1 of an NVIDIA GPU the text does not name (its driver could not place it again after a resize: `Failed to re-allocate BAR1`)".to_string(),
        );
    }
    if amdgpu.lost_unnamed {
        out.push(
            "the VRAM or doorbell BAR of an AMD GPU the text does not name (amdgpu's memory controller could not start after its failed resize)".to_string(),
        );
    }
    out
}

/// A sign of a VM's hot-plug: a device with a failed 64-bit BAR in slot
/// N > 0 of a bus other than the root bus sits on a conventional PCI
/// bridge (a PCIe port has one slot). No real machine seats a GPU of
/// 64-bit BARs there; QEMU's pci-bridge is where a VM's hot-plugged
/// devices go (Kata's default). A sign beside `platform::hotplug_signs`,
/// weighed by the hints.
fn bridge_slot_hotplug(devs: &BTreeMap<PciAddress, DeviceSeen>) -> Option<(bool, String)> {
    devs.iter().find_map(|(a, d)| {
        let on_bridge = a.bus > 0 && a.device > 0 && !d.is_bridge();
        let wide = d
            .bars
            .values()
            .any(|b| b.mem64 && b.outcome == Outcome::Failed);
        (on_bridge && wide).then_some(*a)
    })
    .map(|a| {
        (
            true,
            format!("{a} sits in slot {} of a conventional PCI bridge, where QEMU's pci-bridge hot-plugs devices", a.device),
        )
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

#[cfg(test)]
mod tests;
