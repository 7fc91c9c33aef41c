//! Hints where no firmware model predicts: bare metal, VMware, Hyper-V, a
//! guest the model cannot describe, and every `unknown` diagnosis. They
//! follow from the diagnosis and the platform judgement alone, ranked for
//! the platform; where the platform is not known, the VM and the
//! bare-metal branch both, each saying how to tell which one applies, and
//! last the one command that collects what would settle it.
//!
//! A hint id keeps its meaning wherever it is given: `guest-pci-realloc`
//! is the kernel's own `pci=realloc` (in a guest or on bare metal alike),
//! `firmware-above-4g` the firmware setup's 64-bit decoding.

use crate::decide::diagnosis::{Case, Diagnosis, DiagnosisKind};
use crate::decide::hint::{BootFirmware, Change, Hint, HintId, Restart, Side};
use crate::decide::space;
use crate::decide::summary::describe;
use crate::decide::syntax::{self, Platform as Syntax};
use crate::evidence::Evidence;
use crate::model::pci::PciAddress;
use crate::model::platform::{FirmwareKind, Platform, QemuMachine};
use crate::model::size::human;

const GIB: u64 = 1 << 30;

/// How to tell a VM from a real machine, said once in each branch.
const HOW_TO_TELL: &str = "`systemd-detect-virt` prints `none` on a real machine and the hypervisor's name in a VM (or: `grep -c hypervisor /proc/cpuinfo` prints 0 on a real machine)";

/// The one command that collects what every report needs.
const COLLECT: &str = "`sudo gpu-preflight check` on the machine itself; or save `{ sudo dmesg; sudo lspci -nn -vvv; grep -m1 -w flags /proc/cpuinfo; cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name /sys/class/dmi/id/bios_vendor; } > pci.txt` from the failing boot and run `gpu-preflight explain pci.txt`";

/// A window size to recommend where the model cannot compute one: twice
/// the need, as a power of two in GiB.
pub(crate) fn recommended_window(needed: u64) -> u64 {
    needed
        .saturating_mul(2)
        .max(64 * GIB)
        .checked_next_power_of_two()
        .unwrap_or(1 << 62)
}

/// Physical address bits that reach `end`.
pub(crate) fn bits_for(end: u64) -> u32 {
    64 - end.saturating_sub(1).leading_zeros()
}

fn plain(id: HintId, text: String, side: Side, restart: Option<Restart>) -> Hint {
    Hint::new(id, text, side, restart, Change::default())
}

/// What the hints need to know beside the diagnosis.
struct Ctx<'a> {
    ev: &'a Evidence,
    d: &'a Diagnosis,
    /// The opening sentence: the numbers, or the summary where they are
    /// missing.
    why: String,
    /// Window size to recommend.
    rec: u64,
    /// The need ends past what the CPU addresses.
    past_limit: bool,
}

/// The hints for a failure no model predicts, best first.
pub(crate) fn hints(ev: &Evidence, d: &Diagnosis) -> Vec<Hint> {
    let complaint = ev.unproven.iter().any(|(_, _, c)| *c);
    if d.failed_bars == 0 && ev.hyperv_mmio_short.is_none() && !complaint {
        return Vec::new();
    }
    let numbers = d.needed_bytes.is_some() && d.window_bytes.is_some();
    let why = if numbers {
        format!(
            "The GPUs need {} of 64-bit prefetchable space; the root bus window is {}.",
            human(d.needed_bytes.unwrap_or(0)),
            human(d.window_bytes.unwrap_or(0))
        )
    } else {
        format!("{}.", describe(ev, d))
    };
    let limit = d.addressable_limit;
    let c = Ctx {
        ev,
        d,
        why,
        rec: recommended_window(d.needed_bytes.unwrap_or(0)),
        past_limit: d.kind == DiagnosisKind::PhysBitsTooSmall
            || matches!((d.needed_end, limit), (Some(e), Some(l)) if e > l),
    };
    let platform = ev.firmware.platform();
    // What the drivers' own messages say comes before the space: a BAR the
    // kernel lost in a failed resize, or one NVIDIA's driver refuses for
    // its type, is not fixed by a larger window.
    let mut out: Vec<Hint> = resize_rollback(&c).into_iter().collect();
    if platform != Platform::BareMetal {
        out.extend(vmm_prefetchable(&c));
    }
    // In a VM a device enumerated late was hot-plugged, which the VM's
    // hot-plug hint covers; a hot-plug bridge has its own reservation.
    if matches!(platform, Platform::BareMetal | Platform::Unknown) && ev.hotplug.is_empty() {
        out.extend(rescan(&c));
    }
    out.extend(match platform {
        Platform::BareMetal => bare_metal(&c),
        Platform::Vmware => vmware(&c),
        Platform::HyperV => vec![hyperv(&c)],
        Platform::Qemu | Platform::OtherVm => vm(&c),
        Platform::Unknown => unknown(&c),
    });
    out
}

/// Every failing GPU has the sign: a sign of one GPU does not lead the
/// hints where another failed without it (its space may be short).
fn explains_all(ev: &Evidence, with_sign: &[PciAddress]) -> bool {
    ev.gpus
        .iter()
        .filter(|g| !g.ok())
        .all(|g| with_sign.contains(&g.addr))
}

/// A driver's resize failed and fell back, and the BAR still has no
/// address: the kernel released the BAR to resize it and did not restore
/// it (reported for 6.18-rc1 on linux-pci, "BAR resizing broken in 6.18",
/// tests/corpus 101). The old size had its place before the attempt, so
/// no window setting is the first step.
fn resize_rollback(c: &Ctx) -> Option<Hint> {
    let bdf =
        c.ev.resize_lost
            .first()
            .filter(|_| explains_all(c.ev, &c.ev.resize_lost))?;
    Some(plain(
        HintId::KernelResizeRollback,
        format!(
            "{} The driver of {bdf} tried to resize its BAR, the resize failed and fell back, and the kernel then had no place even for the old size, which the BAR held before the attempt: \
             the kernel lost the BAR in the roll-back, a kernel fault (reported on linux-pci for 6.18-rc1). \
             Boot the kernel this machine ran before (or a later one with the roll-back fixed) and send this log to linux-pci@vger.kernel.org; a larger window is not the first step.",
            c.why
        ),
        Side::Guest,
        Some(Restart::Reboot),
    ))
}

/// The failed device was first enumerated a minute or more after boot: a
/// rescan (`remove` then `rescan` in sysfs) or a hot-add. At boot the
/// firmware had placed it; on a rescan the kernel sizes the bridge
/// windows itself, and before "PCI: Relax bridge window tail sizing
/// rules" (Ilpo Jarvinen, 2023-12, kernel bugzilla 216795, tests/corpus
/// 107) it asked for more than the window the firmware had left (an
/// SR-IOV device's VF BARs as optional size), so the device got nothing.
fn rescan(c: &Ctx) -> Option<Hint> {
    let rescanned: Vec<PciAddress> = c.ev.rescanned.iter().map(|(a, _)| *a).collect();
    let (bdf, secs) =
        c.ev.rescanned
            .first()
            .filter(|_| explains_all(c.ev, &rescanned))?;
    Some(plain(
        HintId::KernelRescanSizing,
        format!(
            "{} The kernel enumerated {bdf} {secs} s after boot: it came with a rescan or a hot-add, not with the boot, and on a rescan the kernel sizes the bridge windows itself rather than keeping the firmware's placement. \
             Boot with the device in place instead of removing and rescanning it (the firmware places it at boot); where it must be rescanned, use a kernel with \"PCI: Relax bridge window tail sizing rules\", \
             whose rescan fits into the window the firmware gave the bridge (kernel bugzilla 216795: an SR-IOV GPU's VF BARs made the older kernels ask for far more).",
            c.why
        ),
        Side::Guest,
        Some(Restart::Reboot),
    ))
}

/// NVIDIA's driver names only its third region (PCI BAR 3) as 0M and no
/// kernel line failed the BAR: the driver counts a 64-bit BAR only when it
/// is prefetchable, and a VMM that exposes it non-prefetchable gets this
/// message with the BAR in place (open-gpu-kernel-modules #344 and
/// cloud-hypervisor #4353, tests/corpus 58, 61, 83). A window too small
/// fails the larger VRAM BAR (region 1) first or with it. Not on bare
/// metal, whose BARs are the GPU's own.
fn vmm_prefetchable(c: &Ctx) -> Option<Hint> {
    let bdf =
        c.ev.nvrm_third_region_only
            .first()
            .filter(|_| explains_all(c.ev, &c.ev.nvrm_third_region_only))?;
    let branch = if c.ev.firmware.platform() == Platform::Unknown {
        "If this is a VM: "
    } else {
        ""
    };
    Some(plain(
        HintId::VmmBarPrefetchable,
        format!(
            "{} {branch}NVIDIA's driver says only its third region (PCI BAR 3, the small 64-bit BAR after the VRAM BAR) of {bdf} is 0M at 0x0, and no kernel line says that BAR failed. \
             The driver takes a 64-bit BAR only when it is prefetchable, so this is what it prints when the VMM exposes the GPU's BARs as non-prefetchable. \
             In the VM run `sudo lspci -vv -s {bdf}`: if Region 3 has an address but does not say `prefetchable`, the BAR is in place and the VMM must expose it prefetchable as the physical GPU does \
             (update the VMM, or report it to its project: cloud-hypervisor did this, open-gpu-kernel-modules issue 344); if Region 3 is `<unassigned>`, the window is short: take the next hint.",
            c.why
        ),
        Side::Host,
        Some(Restart::Vm),
    ))
}

fn bare_metal(c: &Ctx) -> Vec<Hint> {
    let (ev, d) = (c.ev, c.d);
    let need = d.needed_bytes.unwrap_or(0);
    let limit = d.addressable_limit;
    if c.past_limit && limit.is_some_and(|l| need >= l || d.needed_end.is_some_and(|e| e > l)) {
        return vec![smaller_bars(c)];
    }
    let mut out = Vec::new();
    if let Some(h) = hotplug(c, false) {
        out.push(h);
    }
    // An ARM or PowerPC board: its host bridge's window is the board's
    // (device tree), not a PC firmware's, and it has no firmware setup
    // with 64-bit decoding to turn on; the kernel may still re-place
    // within the window, which is all there is to do where it has room.
    let room = matches!((d.needed_bytes, d.window_bytes), (Some(n), Some(w)) if n <= w);
    if let Some(sign) = ev.firmware.signs.device_tree.as_deref() {
        if !room {
            out.push(space::board_window(&c.why, ev, sign));
        }
        out.extend((!ev.realloc_active).then(|| realloc(c, "", false)));
        if out.is_empty() {
            // Room, pci=realloc on, and still unassigned: what fell short
            // is in lines this text does not have.
            out.push(collect(format!(
                "{} This is not an x86 PC ({sign}); its window has room for the BARs and the kernel re-placed them with pci=realloc, yet BARs stayed unassigned: \
                 which bridge window fell short is in the PCI lines of the whole boot log.",
                c.why
            )));
        }
        return out;
    }
    // The kernel's own step first where it asked for it, the window has
    // room or only the space below 4 GiB fell short (which Above 4G
    // Decoding does not grow); the firmware's otherwise.
    let realloc_first = ev.realloc_advised
        || d.kind == DiagnosisKind::FirmwareLeftUnassigned
        || space::only_low(ev)
        || refused(ev);
    let realloc = (!ev.realloc_active).then(|| realloc(c, "", false));
    if realloc_first {
        out.extend(realloc.clone());
    }
    out.push(above_4g(c, ""));
    if !realloc_first {
        out.extend(realloc);
    }
    out
}

fn smaller_bars(c: &Ctx) -> Hint {
    plain(
        HintId::SmallerBars,
        format!(
            "{} The CPU addresses {} ({} bits): no firmware setting places the GPUs' BARs beyond that. \
             Make them smaller or fewer: turn \"Resizable BAR\" off in the firmware setup (the GPUs then ask for small BARs), or fit fewer GPUs to this machine.",
            c.why,
            human(c.d.addressable_limit.unwrap_or(0)),
            c.ev.cpu.phys_bits.map(|b| b.to_string()).unwrap_or_else(|| "its".into())
        ),
        Side::Firmware,
        Some(Restart::Reboot),
    )
}

/// The firmware setup's part: 64-bit decoding, UEFI rather than CSM, a
/// firmware update. `branch` opens the sentence where the platform is not
/// known.
fn above_4g(c: &Ctx, branch: &str) -> Hint {
    let need = c.d.needed_bytes.unwrap_or(0);
    let size = match (c.d.needed_bytes, c.d.addressable_limit) {
        (None, _) => None,
        (Some(_), Some(l)) => Some(c.rec.min(l / 2).max(need.next_power_of_two())),
        (Some(_), None) => Some(c.rec),
    };
    let mmioh = match size {
        Some(s) => format!(
            " (where offered, set the MMIO high base/size, \"MMIOH\", to at least {})",
            human(s)
        ),
        None => " (where offered, a large MMIO high size, \"MMIOH\")".to_string(),
    };
    plain(
        HintId::FirmwareAbove4g,
        format!(
            "{} {branch}In the system firmware setup enable \"Above 4G Decoding\" (also \"64-bit MMIO\" or \"Memory Mapped I/O above 4GB\"){mmioh}, \
             and boot in UEFI mode rather than legacy BIOS/CSM (a CSM boot places no large 64-bit BAR; \"Resizable BAR\" needs UEFI too); \
             enable \"Resizable BAR\" only if the GPUs need it. If the setting is missing, update the system firmware: older releases place no BAR above 4 GiB.",
            c.why
        ),
        Side::Firmware,
        Some(Restart::Reboot),
    )
}

/// The kernel's own `pci=realloc`, on bare metal or in a guest. `branch`
/// opens the sentence where the platform is not known.
fn realloc(c: &Ctx, branch: &str, guest: bool) -> Hint {
    let whose = match (branch.is_empty(), guest) {
        (true, true) => "The guest kernel",
        (true, false) => "The kernel",
        (false, _) => "the kernel",
    };
    let advised = if c.ev.realloc_advised {
        " The kernel itself asked for it (\"try booting with pci=realloc\")."
    } else {
        ""
    };
    let change = Change {
        kernel_cmdline_add: vec!["pci=realloc".into()],
        ..Change::default()
    };
    Hint::new(
        HintId::GuestPciRealloc,
        format!(
            "{} {branch}{whose} can release and re-place the bridge windows itself: add `pci=realloc` to its command line.{advised} \
             {}. {}; on some boards it makes things worse, and `pci=realloc=off` undoes it.",
            c.why,
            syntax::kernel_cmdline(&change).unwrap_or_default(),
            Restart::Reboot.sentence()
        ),
        Side::Guest,
        Some(Restart::Reboot),
        change,
    )
}

/// A GPU behind a hot-plug bridge (bare metal: Thunderbolt, a hot-plug
/// slot) or hot-plugged into a VM: the reservation is what is short.
fn hotplug(c: &Ctx, vm: bool) -> Option<Hint> {
    let signs: Vec<&str> =
        c.ev.hotplug
            .iter()
            .filter(|(in_vm, _)| *in_vm == vm || !vm)
            .map(|(_, w)| w.as_str())
            .collect();
    if signs.is_empty() {
        return None;
    }
    let size =
        c.ev.gpus
            .iter()
            .flat_map(|g| g.bars.iter())
            .filter_map(|b| b.size)
            .max()
            .map(|s| s.next_power_of_two().max(256 << 20));
    let pref = size.unwrap_or(32 * GIB);
    let signs = signs.join(", ");
    Some(if vm {
        let change = Change {
            pcie_root_port_properties: syntax::root_port_reserve(Some(pref), 64 << 20),
            ..Change::default()
        };
        Hint::new(
            HintId::VmHotplugReserve,
            format!(
                "{} The GPU was hot-plugged ({signs}) behind a bridge or port that reserved no room for its BARs. \
                 Plug it at boot onto a PCIe root port of its own that reserves room: {}",
                c.why,
                syntax::host_steps(&change, &Syntax::QEMU)
            ),
            Side::Host,
            Some(Restart::Vm),
            change,
        )
    } else {
        let param = syntax::hotplug_reserve(pref, 64 << 20);
        let change = Change {
            kernel_cmdline_add: vec![param.clone()],
            ..Change::default()
        };
        Hint::new(
            HintId::KernelHotplugReserve,
            format!(
                "{} The GPU sits behind a hot-plug bridge ({signs}), for which the kernel reserves only a few MiB unless told more. \
                 Reserve room on the kernel command line with `{param}`: {}; behind Thunderbolt also allow the device in the firmware setup and `boltctl`. {}.",
                c.why,
                syntax::kernel_cmdline(&change).unwrap_or_default(),
                Restart::Reboot.sentence()
            ),
            Side::Guest,
            Some(Restart::Reboot),
            change,
        )
    })
}

fn vmware(c: &Ctx) -> Vec<Hint> {
    let mut out = Vec::new();
    if c.ev.firmware.legacy_bios() {
        let change = Change {
            boot_firmware: Some(BootFirmware::Efi),
            ..Change::default()
        };
        out.push(Hint::new(
            HintId::VmwareEfi,
            format!(
                "{} This VM boots with legacy BIOS, which places no 64-bit BAR of this size; VMware's 64-bit MMIO settings need EFI firmware. \
                 {} (the guest's boot loader must be an EFI one: convert the disk to GPT or reinstall the boot loader).",
                c.why,
                syntax::instruction(Syntax::Vmware, &change)
            ),
            Side::Host,
            Some(Restart::Vm),
            change,
        ));
    }
    let change = Change {
        mmio64_bytes_min: Some(c.rec),
        ..Change::default()
    };
    out.push(Hint::new(
        HintId::Vmware64bitMmio,
        format!(
            "{} {}.",
            c.why,
            syntax::instruction(Syntax::Vmware, &change)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    ));
    out
}

fn hyperv(c: &Ctx) -> Hint {
    let rec = match c.ev.hyperv_mmio_short {
        Some(need) => recommended_window(need),
        None => c.rec,
    };
    let change = Change {
        mmio64_bytes_min: Some(rec),
        mmio32_bytes_min: (c.d.case == Case::Only32Bit).then_some(3 * GIB),
        ..Change::default()
    };
    Hint::new(
        HintId::HypervMmio,
        format!(
            "{} {}.",
            c.why,
            syntax::instruction(Syntax::HyperV, &change)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// A 64-bit root window the log shows ends at 2^40 - 1, or the CPU has 40
/// address bits: the reach of QEMU's default vCPU.
fn at_40_bits(c: &Ctx) -> bool {
    // Space below 4 GiB is no matter of address bits.
    if c.d.case == Case::Only32Bit {
        return false;
    }
    c.ev.cpu.phys_bits == Some(40) || c.ev.windows.iter().any(|w| w.range.end == (1u64 << 40) - 1)
}

fn phys_bits(c: &Ctx, branch: &str) -> Hint {
    let bits =
        c.d.needed_end
            .map(|e| bits_for(e).max(41))
            .unwrap_or(41)
            .clamp(41, 52);
    let change = Change {
        cpu_flags_add: vec!["pdpe1gb"],
        phys_bits_min: Some(bits),
        ..Change::default()
    };
    let able = syntax::able(&change, &Syntax::QEMU);
    Hint::new(
        HintId::CpuPhysBits,
        format!(
            "{} {branch}Give the vCPU at least {bits} physical address bits (the host CPU must have them too; with OVMF also 1 GiB pages, pdpe1gb). \
             {}; other hypervisors: the VM's CPU configuration. {}",
            c.why,
            syntax::list(&change, &able, 1).unwrap_or_default(),
            syntax::restart(&able)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// The QEMU window settings, without a prediction. `branch` opens the
/// first where the platform is not known; the aperture's hint then says
/// VMware's and Hyper-V's 64-bit MMIO space too.
fn qemu_window(c: &Ctx, branch: &str) -> Vec<Hint> {
    let ev = c.ev;
    let others = !branch.is_empty();
    let change = Change {
        fw_cfg: vec![syntax::aperture(c.rec)],
        mmio64_bytes_min: others.then_some(c.rec),
        ..Change::default()
    };
    let others = match syntax::list(&change, &[Syntax::Vmware, Syntax::HyperV], 1) {
        Some(l) if others => format!(" Other hypervisors' 64-bit MMIO space: {l}."),
        _ => String::new(),
    };
    let able = syntax::able(&change, &Syntax::QEMU);
    let aperture = Hint::new(
        HintId::OvmfMmio64Aperture,
        format!(
            "{} {branch}With OVMF, set its 64-bit aperture to {} MiB (it must end within the address bits OVMF uses, or the firmware hangs): {}.{others} {}",
            c.why,
            c.rec >> 20,
            syntax::list(&change, &able, 1).unwrap_or_default(),
            syntax::restart(&able)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    );
    let machine = ev.firmware.qemu_machine().unwrap_or(QemuMachine::Q35);
    let change = Change {
        qemu_globals: vec![syntax::hole64(machine, c.rec)],
        ..Change::default()
    };
    let hole = Hint::new(
        HintId::QemuPciHole64Size,
        format!(
            "{} Enlarge QEMU's 64-bit PCI hole to {} GiB{}. QEMU refuses to start a VM whose hole ends past what the vCPU addresses. {}",
            c.why,
            c.rec / GIB,
            if ev.realloc_active { "" } else { "; the guest then needs `pci=realloc`" },
            syntax::host_steps(&change, &Syntax::QEMU)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    );
    if ev.firmware.kind() == FirmwareKind::SeaBios {
        vec![hole, aperture]
    } else {
        vec![aperture, hole]
    }
}

fn vm(c: &Ctx) -> Vec<Hint> {
    let mut out = Vec::new();
    if let Some(h) = hotplug(c, true) {
        out.push(h);
    }
    if c.past_limit || c.d.case == Case::Unaddressable || at_40_bits(c) {
        out.push(phys_bits(c, ""));
        return out;
    }
    // 32-bit BARs behind a port: its window below 4 GiB is short, which
    // no 64-bit hole or aperture grows.
    let behind_port = c.ev.gpus.iter().any(|g| g.addr.bus > 0 && failed(g))
        || c.ev.other_failed.iter().any(|o| o.bdf.bus > 0);
    if space::only_low(c.ev) && behind_port {
        out.push(space::vm_port_low(&c.why, c.ev));
        out.extend((!c.ev.realloc_active).then(|| realloc(c, "", true)));
        return out;
    }
    // In a VM the failed BAR is most often one the firmware could not
    // place in its window, which pci=realloc cannot grow (FIELD-NOTES.md
    // §3): the window first, unless the kernel itself asked for realloc.
    let unknown = c.d.kind == DiagnosisKind::Unknown;
    let realloc = (unknown && !c.ev.realloc_active).then(|| realloc(c, "", true));
    if c.ev.realloc_advised {
        out.extend(realloc.clone());
    }
    out.extend(qemu_window(c, ""));
    if !c.ev.realloc_advised {
        out.extend(realloc);
    }
    out
}

fn unknown(c: &Ctx) -> Vec<Hint> {
    let mut out = Vec::new();
    let metal = format!("If this is a real machine ({HOW_TO_TELL}): ");
    let guest = "If this is a VM: ";
    if let Some(h) = hotplug(c, c.ev.hotplug.iter().all(|(vm, _)| *vm)) {
        out.push(h);
    }
    // A root window that ends exactly at 1 TiB is what a 40-bit vCPU
    // (QEMU's default) leaves the guest.
    if at_40_bits(c) {
        out.push(phys_bits(c, guest));
    }
    let realloc = (!c.ev.realloc_active)
        .then(|| realloc(c, "Whether this is a VM or a real machine, ", false));
    // The kernel's own advice first, where only the space below 4 GiB fell
    // short (Above 4G Decoding does not grow it: the bridge windows there
    // are the kernel's to re-place), and where the firmware placed a BAR
    // the kernel refused (`refused`); else the firmware setup, which
    // on a real machine is the usual fix (and its update), before realloc.
    let realloc_first = c.ev.realloc_advised || space::only_low(c.ev) || refused(c.ev);
    if realloc_first {
        out.extend(realloc.clone());
    }
    if c.past_limit {
        out.push(smaller_bars(c));
    }
    out.push(above_4g(c, &metal));
    if !realloc_first {
        out.extend(realloc);
    }
    out.extend(qemu_window(c, guest).into_iter().take(1));
    let collect = collect(format!(
        "The input does not say what machine this is{}.",
        if only_inferred(c.ev) {
            ", nor which BAR failed: a driver says a region is invalid without naming it, and the BAR taken for it is only the first the text shows no address for"
        } else if c.d.needed_bytes.is_none() {
            " nor how large the failed BARs are"
        } else {
            ""
        }
    ));
    // Neither the machine nor the failed BAR is in the text: every step
    // above is a guess at both, and what settles them comes first.
    if only_inferred(c.ev) {
        out.insert(0, collect);
    } else {
        out.push(collect);
    }
    out
}

/// `collect-evidence`: what the text leaves open (`lead`), then the one
/// command that gathers it.
fn collect(lead: String) -> Hint {
    plain(
        HintId::CollectEvidence,
        format!("{lead} To settle it, run {COLLECT}."),
        Side::Guest,
        None,
    )
}

/// Every failure the text shows is one it does not name: a driver's
/// complaint placed at the first region without an address
/// (`Evidence::inferred`), no other device failed.
fn only_inferred(ev: &Evidence) -> bool {
    !ev.inferred.is_empty()
        && ev.other_failed.is_empty()
        && ev
            .gpus
            .iter()
            .filter(|g| !g.ok())
            .all(|g| ev.inferred.contains(&g.addr))
}

/// The firmware placed a GPU's 64-bit BAR and the kernel refused the
/// address (`Memory at <ignored>` in lspci, `can't claim` with an
/// address): the address lies outside the windows the kernel took for the
/// bridges above. The firmware did place the 64-bit BAR, so its setup's
/// 64-bit decoding is not what is missing; the kernel's own re-placement,
/// `pci=realloc`, is the step that places it (kvm list 2023, tests/corpus
/// 134: "I boot with pci=realloc which fixes it"). A 32-bit BAR refused so
/// is an old firmware's misplacement (corpus 86: a BIOS that put the VRAM
/// BAR over the AGP aperture), which stays the firmware's to fix.
fn refused(ev: &Evidence) -> bool {
    ev.gpus.iter().flat_map(|g| g.bars.iter()).any(|b| {
        !b.io && b.type_known && b.mem64 && b.state == crate::model::bar::BarState::Ignored
    })
}

/// A GPU with a memory BAR that has no address.
fn failed(g: &crate::evidence::Gpu) -> bool {
    g.bars
        .iter()
        .any(|b| !b.io && b.state != crate::model::bar::BarState::Assigned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::diagnosis::diagnose;
    use crate::decide::tests::{nvrm_only, typed};
    use crate::model::platform::Signs;

    fn ids(ev: &Evidence) -> Vec<HintId> {
        let d = diagnose(ev);
        assert_eq!(d.kind, DiagnosisKind::Unknown, "{:?}", d.case);
        crate::decide::hints::hints(ev, &d, None)
            .iter()
            .map(|h| h.id)
            .collect()
    }

    #[test]
    fn every_unknown_failure_gets_next_steps_ranked_for_its_platform() {
        let s = |f: fn(&mut Signs)| {
            let mut s = Signs::default();
            f(&mut s);
            s
        };
        for (what, ev, want) in [
            (
                "platform unknown: both branches, then what settles it",
                nvrm_only(Signs::default(), false),
                vec![
                    HintId::FirmwareAbove4g,
                    HintId::GuestPciRealloc,
                    HintId::OvmfMmio64Aperture,
                    HintId::CollectEvidence,
                ],
            ),
            (
                "bare metal (a device tree): the board's window, no PC or VM setting",
                nvrm_only(s(|s| s.device_tree = Some("device tree: x".into())), false),
                vec![HintId::PlatformWindowTooSmall, HintId::GuestPciRealloc],
            ),
            (
                "bare metal where the kernel asked for pci=realloc",
                nvrm_only(s(|s| s.cpu_flag = Some(false)), true),
                vec![HintId::GuestPciRealloc, HintId::FirmwareAbove4g],
            ),
            (
                "a KVM guest: the window first",
                nvrm_only(s(|s| s.hypervisor_line = Some("KVM".into())), false),
                vec![
                    HintId::OvmfMmio64Aperture,
                    HintId::QemuPciHole64Size,
                    HintId::GuestPciRealloc,
                ],
            ),
            (
                "a KVM guest whose kernel asked for pci=realloc",
                nvrm_only(s(|s| s.hypervisor_line = Some("KVM".into())), true),
                vec![
                    HintId::GuestPciRealloc,
                    HintId::OvmfMmio64Aperture,
                    HintId::QemuPciHole64Size,
                ],
            ),
            (
                "a VMware guest",
                nvrm_only(s(|s| s.hypervisor_line = Some("VMware".into())), false),
                vec![HintId::Vmware64bitMmio],
            ),
            (
                "a Hyper-V guest",
                nvrm_only(
                    s(|s| s.hypervisor_line = Some("Microsoft Hyper-V".into())),
                    false,
                ),
                vec![HintId::HypervMmio],
            ),
        ] {
            assert_eq!(ids(&ev), want, "{what}");
        }
        // NVIDIA's register BAR 0 alone (`NVRM: BAR0 is 0M`): the space
        // below 4 GiB, the kernel's to re-place, before Above 4G Decoding.
        for signs in [Signs::default(), s(|s| s.cpu_flag = Some(false))] {
            let mut ev = nvrm_only(signs, false);
            ev.gpus[0].bars[0].index = 0;
            assert_eq!(
                ids(&ev)[..2],
                [HintId::GuestPciRealloc, HintId::FirmwareAbove4g]
            );
        }
        // Another vendor's BAR 0 of no known type says nothing of its space.
        let mut ev = nvrm_only(Signs::default(), false);
        ev.gpus[0].bars[0].index = 0;
        ev.gpus[0].vendor = 0x1002;
        assert_eq!(ids(&ev)[0], HintId::FirmwareAbove4g);
        // A Thunderbolt enclosure on a real machine: the bridge's
        // reservation first.
        let mut ev = nvrm_only(s(|s| s.cpu_flag = Some(false)), false);
        ev.hotplug = vec![(false, "a Thunderbolt controller".into())];
        assert_eq!(ids(&ev)[0], HintId::KernelHotplugReserve);
        // A Kata VM's hot-plug: the VM's root port.
        let mut ev = nvrm_only(Signs::default(), false);
        ev.hotplug = vec![(true, "a Kata Containers VM".into())];
        assert_eq!(ids(&ev)[0], HintId::VmHotplugReserve);
    }

    fn first(ev: &Evidence) -> HintId {
        let d = diagnose(ev);
        crate::decide::hints::hints(ev, &d, None)[0].id
    }

    #[test]
    fn the_space_that_fell_short_decides_the_first_step() {
        let kvm = || Signs {
            hypervisor_line: Some("KVM".into()),
            ..Signs::default()
        };
        let metal = || Signs {
            cpu_flag: Some(false),
            ..Signs::default()
        };
        let board = || Signs {
            device_tree: Some("Rockchip's PCIe host driver".into()),
            ..Signs::default()
        };
        for (what, ev, want) in [
            (
                "a VM, a register BAR behind a port: the port's room below 4 GiB",
                typed(kvm(), 1, false, false),
                HintId::VmHotplugReserve,
            ),
            (
                "a VM, a 64-bit BAR behind a port: the 64-bit window",
                typed(kvm(), 1, true, true),
                HintId::OvmfMmio64Aperture,
            ),
            (
                "bare metal, a register BAR: the kernel's re-placement",
                typed(metal(), 1, false, false),
                HintId::GuestPciRealloc,
            ),
            (
                "bare metal, an old GPU's 32-bit VRAM aperture: the firmware",
                typed(metal(), 1, false, true),
                HintId::FirmwareAbove4g,
            ),
            (
                "unknown, a register BAR: the kernel's re-placement",
                typed(Signs::default(), 1, false, false),
                HintId::GuestPciRealloc,
            ),
            (
                "a device-tree board: its own window",
                typed(board(), 1, true, true),
                HintId::PlatformWindowTooSmall,
            ),
        ] {
            assert_eq!(first(&ev), want, "{what}");
        }
        // Only a device not taken for a GPU failed (QEMU's QXL on a root
        // port): its 32-bit BARs decide it the same way.
        let other = |low: bool| {
            let mut ev = typed(kvm(), 1, false, false);
            ev.gpus.clear();
            ev.other_failed = vec![crate::evidence::OtherFailure {
                bdf: PciAddress {
                    domain: 0,
                    bus: 1,
                    device: 0,
                    function: 0,
                },
                bar: 0,
                size: Some(64 << 20),
                low,
            }];
            ev
        };
        assert_eq!(first(&other(true)), HintId::VmHotplugReserve);
        assert_eq!(first(&other(false)), HintId::OvmfMmio64Aperture);
        let ev = typed(board(), 1, true, true);
        let d = diagnose(&ev);
        let h = &crate::decide::hints::hints(&ev, &d, None)[0];
        assert!(h.text.contains("Rockchip's PCIe host driver"), "{}", h.text);
        assert!(h.text.contains("16 MiB"), "{}", h.text);
        assert!(h.text.contains("`ranges`"), "{}", h.text);
        assert!(!h.text.contains("Above 4G"), "{}", h.text);
    }

    #[test]
    fn what_the_drivers_say_comes_before_the_space() {
        let kvm = || Signs {
            hypervisor_line: Some("KVM".into()),
            ..Signs::default()
        };
        let metal = || Signs {
            cpu_flag: Some(false),
            ..Signs::default()
        };
        let third = |signs: Signs| {
            let mut ev = nvrm_only(signs, false);
            ev.gpus[0].bars[0].index = 3;
            ev.nvrm_third_region_only = vec![ev.gpus[0].addr];
            ev
        };
        let lost = |signs: Signs| {
            let mut ev = typed(signs, 3, true, true);
            ev.resize_lost = vec![ev.gpus[0].addr];
            ev
        };
        let ignored = |signs: Signs| {
            let mut ev = typed(signs, 6, true, true);
            let b = &mut ev.gpus[0].bars[0];
            (b.state, b.size) = (crate::model::bar::BarState::Ignored, None);
            ev
        };
        for (what, ev, want) in [
            (
                "NVRM's third region alone, platform unknown: the VMM's BAR type",
                third(Signs::default()),
                HintId::VmmBarPrefetchable,
            ),
            (
                "NVRM's third region alone in a KVM guest",
                third(kvm()),
                HintId::VmmBarPrefetchable,
            ),
            (
                "NVRM's third region alone on bare metal: no VMM to blame",
                third(metal()),
                HintId::FirmwareAbove4g,
            ),
            (
                "a resize that fell back and lost the BAR, bare metal",
                lost(metal()),
                HintId::KernelResizeRollback,
            ),
            (
                "a resize that fell back and lost the BAR, on a board",
                lost(Signs {
                    device_tree: Some("a device tree".into()),
                    ..Signs::default()
                }),
                HintId::KernelResizeRollback,
            ),
            (
                "a BAR the firmware placed and the kernel refused, platform unknown",
                ignored(Signs::default()),
                HintId::GuestPciRealloc,
            ),
            (
                "a BAR the firmware placed and the kernel refused, bare metal",
                ignored(metal()),
                HintId::GuestPciRealloc,
            ),
            (
                "a 32-bit BAR the firmware placed and the kernel refused: the firmware's",
                {
                    let mut ev = ignored(metal());
                    ev.gpus[0].bars[0].mem64 = false;
                    ev
                },
                HintId::FirmwareAbove4g,
            ),
            (
                "the same 64-bit BAR never placed, bare metal: the firmware setup",
                typed(metal(), 6, true, true),
                HintId::FirmwareAbove4g,
            ),
        ] {
            assert_eq!(first(&ev), want, "{what}");
        }
        // The hint names the device and how to tell the two causes apart;
        // where the platform is unknown, that it is the VM branch.
        let ev = third(Signs::default());
        let d = diagnose(&ev);
        let h = &hints(&ev, &d)[0];
        assert!(h.text.contains("If this is a VM: NVIDIA's"), "{}", h.text);
        let kvm_ev = third(kvm());
        let d = diagnose(&kvm_ev);
        assert!(!hints(&kvm_ev, &d)[0].text.contains("If this is a VM"));
        assert!(h.text.contains("lspci -vv -s 0000:01:00.0"), "{}", h.text);
        assert!(h.text.contains("<unassigned>"), "{}", h.text);
        // A failed BAR the text does not name, on a machine it does not
        // name: what settles both comes first; on a known machine, the
        // machine's order stays.
        let inferred = |signs: Signs| {
            let mut ev = nvrm_only(signs, false);
            ev.inferred = vec![ev.gpus[0].addr];
            ev
        };
        assert_eq!(first(&inferred(Signs::default())), HintId::CollectEvidence);
        assert_eq!(first(&inferred(kvm())), HintId::OvmfMmio64Aperture);
        assert_eq!(first(&inferred(metal())), HintId::FirmwareAbove4g);
        let ev = inferred(Signs::default());
        let d = diagnose(&ev);
        let h = hints(&ev, &d);
        assert!(h[0].text.contains("nor which BAR failed"), "{}", h[0].text);
        assert_eq!(
            h.iter().filter(|h| h.id == HintId::CollectEvidence).count(),
            1
        );
        // A failure on a rescan long after boot: boot with the device
        // first, on bare metal or an unknown machine; in a VM the device
        // was hot-plugged, and a hot-plug bridge has its own reservation.
        let rescanned = |signs: Signs| {
            let mut ev = typed(signs, 0x53, true, true);
            ev.rescanned = vec![(ev.gpus[0].addr, 150)];
            ev
        };
        assert_eq!(
            first(&rescanned(Signs::default())),
            HintId::KernelRescanSizing
        );
        assert_eq!(first(&rescanned(metal())), HintId::KernelRescanSizing);
        assert_eq!(first(&rescanned(kvm())), HintId::OvmfMmio64Aperture);
        let mut ev = rescanned(metal());
        ev.hotplug = vec![(false, "a Thunderbolt controller".into())];
        assert_eq!(first(&ev), HintId::KernelHotplugReserve);
        // A second failing GPU without the sign: the sign does not lead.
        let mut ev = third(Signs::default());
        let mut other = ev.gpus[0].clone();
        other.addr.bus = 2;
        other.bars[0].index = 1;
        ev.gpus.push(other);
        assert_eq!(first(&ev), HintId::FirmwareAbove4g);
        // Without the sign, an NVRM-only BAR 3 keeps the platform's order.
        let mut ev = third(Signs::default());
        ev.nvrm_third_region_only.clear();
        assert_eq!(first(&ev), HintId::FirmwareAbove4g);
    }

    #[test]
    fn branches_say_how_to_tell_and_how_to_settle_it() {
        let ev = nvrm_only(Signs::default(), false);
        let d = diagnose(&ev);
        let h = hints(&ev, &d);
        let metal = h.iter().find(|h| h.id == HintId::FirmwareAbove4g).unwrap();
        assert!(
            metal
                .text
                .contains("If this is a real machine (`systemd-detect-virt`"),
            "{}",
            metal.text
        );
        assert!(metal.text.contains("CSM"), "{}", metal.text);
        let either = h.iter().find(|h| h.id == HintId::GuestPciRealloc).unwrap();
        assert!(
            either
                .text
                .contains("Whether this is a VM or a real machine, the kernel can"),
            "{}",
            either.text
        );
        let vm = h
            .iter()
            .find(|h| h.id == HintId::OvmfMmio64Aperture)
            .unwrap();
        assert!(vm.text.contains("If this is a VM"), "{}", vm.text);
        let last = h.last().unwrap();
        assert_eq!(last.id, HintId::CollectEvidence);
        assert!(
            last.text.contains("sudo gpu-preflight check"),
            "{}",
            last.text
        );
        // The kernel's step keeps its meaning off a VM: no "guest" there.
        let bm = nvrm_only(
            Signs {
                cpu_flag: Some(false),
                ..Signs::default()
            },
            true,
        );
        let d = diagnose(&bm);
        let r = &hints(&bm, &d)[0];
        assert_eq!(r.id, HintId::GuestPciRealloc);
        assert!(!r.text.contains("guest"), "{}", r.text);
        assert_eq!(r.change.kernel_cmdline_add, ["pci=realloc"]);
    }

    #[test]
    fn a_board_with_room_in_its_window_gets_the_kernels_step_alone() {
        // Corpus 135's shape where the window had room: nothing in a PC's
        // firmware setup applies to a device-tree board.
        let mut ev = nvrm_only(
            Signs {
                device_tree: Some("a device tree".into()),
                ..Signs::default()
            },
            false,
        );
        let bar = &mut ev.gpus[0].bars[0];
        (bar.mem64, bar.prefetchable, bar.type_known) = (true, true, true);
        bar.size = Some(256 << 20);
        ev.windows.push(crate::evidence::Window {
            range: crate::model::range::Range::new(0xc_0000_0000, 0xc_3fff_ffff),
            source: crate::evidence::WindowSource::KernelLog,
            bus: None,
        });
        ev.windows_known = true;
        let d = diagnose(&ev);
        assert_eq!(
            d.kind,
            DiagnosisKind::FirmwareLeftUnassigned,
            "{:?}",
            d.case
        );
        let ids = |ev: &Evidence, d: &Diagnosis| -> Vec<HintId> {
            crate::decide::hints::hints(ev, d, None)
                .iter()
                .map(|h| h.id)
                .collect()
        };
        assert_eq!(ids(&ev, &d), [HintId::GuestPciRealloc]);
        // With pci=realloc already on, the step left is to read the rest
        // of the boot log: never no step at all.
        ev.realloc_active = true;
        let d = diagnose(&ev);
        assert_eq!(ids(&ev, &d), [HintId::CollectEvidence]);
    }
}
