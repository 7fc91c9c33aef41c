//! A VM no model describes: QEMU's window settings without a prediction,
//! its vCPU's address bits, a port's room below 4 GiB, and VMware's and
//! Hyper-V's own settings.

use super::{failed, hotplug, realloc, Ctx, GIB};
use crate::decide::diagnosis::{Case, DiagnosisKind};
use crate::decide::hint::{BootFirmware, Change, Hint, HintId, Restart, Side};
use crate::decide::sizing::{bits_for, recommended_window};
use crate::decide::space;
use crate::decide::syntax::{self, Hypervisor};
use crate::model::platform::{FirmwareKind, QemuMachine};
use crate::parse::hypervisor::HostMessage;

pub(super) fn vm(c: &Ctx) -> Vec<Hint> {
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
    if space::only_low_in_vm(c.ev) && behind_port {
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
    // NVIDIA's BAR 0 alone behind a port (`space::only_low_in_vm`): the
    // port's room below 4 GiB after the window.
    if space::only_low(c.ev) && behind_port {
        out.push(space::vm_port_low(&c.why, c.ev));
    }
    out
}

/// A 64-bit root window the log shows ends at 2^40 - 1, or the CPU has 40
/// address bits: the reach of QEMU's default vCPU.
pub(super) fn at_40_bits(c: &Ctx) -> bool {
    // Space below 4 GiB is no matter of address bits.
    if c.d.case == Case::Only32Bit {
        return false;
    }
    c.ev.cpu.phys_bits == Some(40) || c.ev.windows.iter().any(|w| w.range.end == (1u64 << 40) - 1)
}

pub(super) fn phys_bits(c: &Ctx, branch: &str) -> Hint {
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
    let able = syntax::for_guest(&change, syntax::first_for(c.ev));
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
pub(super) fn qemu_window(c: &Ctx, branch: &str) -> Vec<Hint> {
    let ev = c.ev;
    let others = !branch.is_empty();
    let change = Change {
        fw_cfg: vec![syntax::aperture(c.rec)],
        mmio64_bytes_min: others.then_some(c.rec),
        ..Change::default()
    };
    let others = match syntax::list(&change, &[Hypervisor::Vmware, Hypervisor::HyperV], 1) {
        Some(l) if others => format!(" Other hypervisors' 64-bit MMIO space: {l}."),
        _ => String::new(),
    };
    let able = syntax::for_guest(&change, syntax::first_for(ev));
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
            syntax::guest_steps(&change, syntax::first_for(ev))
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

/// VMware: EFI first where the VM boots with legacy BIOS, and where the
/// text does not show its firmware: a VM that powered on has passed
/// VMware's own check of its passthrough MMIO against the 64-bit MMIO
/// settings (the power-on fails otherwise, "PCIPassthru: total number of
/// pages needed ... exceeds limit", corpus 144 and 145), so a GPU BAR the
/// guest's firmware left unassigned points at the firmware: the legacy
/// BIOS maps no 64-bit BAR of this size (corpus 184, a P40 on a BIOS VM,
/// fixed by EFI). Where EFI is seen, the MMIO size is the step.
pub(super) fn vmware(c: &Ctx) -> Vec<Hint> {
    let mut out = Vec::new();
    let legacy = c.ev.firmware.legacy_bios();
    // VMware's refusal in the text is the power-on failing: the MMIO
    // settings first, whatever else the paste holds.
    let booted = !c.ev.host_messages.iter().any(|m| {
        matches!(
            m,
            HostMessage::VmwarePages { .. } | HostMessage::VmwarePowerOn { .. }
        )
    });
    if legacy || (booted && c.ev.firmware.kind() == FirmwareKind::Unknown) {
        let change = Change {
            boot_firmware: Some(BootFirmware::Efi),
            ..Change::default()
        };
        let firmware = if legacy {
            "This VM boots with legacy BIOS, which places no 64-bit BAR of this size; VMware's 64-bit MMIO settings need EFI firmware."
        } else {
            "The text does not show the VM's firmware. The VM powered on, so VMware accepted its MMIO total (it refuses to power on a VM whose passthrough BARs exceed it); a BAR left unassigned then most likely means a legacy BIOS, which places no 64-bit BAR of this size. Check in the guest: no /sys/firmware/efi means BIOS. If BIOS:"
        };
        out.push(Hint::new(
            HintId::VmwareEfi,
            format!(
                "{} {firmware} \
                 {} (the guest's boot loader must be an EFI one: convert the disk to GPT or reinstall the boot loader).",
                c.why,
                syntax::instruction(Hypervisor::Vmware, &change)
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
            syntax::instruction(Hypervisor::Vmware, &change)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    ));
    out
}

pub(super) fn hyperv(c: &Ctx) -> Hint {
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
            syntax::instruction(Hypervisor::HyperV, &change)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}
