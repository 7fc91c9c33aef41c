//! A real machine: its firmware setup's 64-bit decoding, the kernel's own
//! re-placement, a board's window, or, past what the CPU addresses,
//! smaller BARs.

use super::{collect, hotplug, plain, realloc, refused, Ctx};
use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::{Hint, HintId, Restart, Side};
use crate::decide::space;
use crate::model::size::{human, pow2_ceil};

pub(super) fn bare_metal(c: &Ctx) -> Vec<Hint> {
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

pub(super) fn smaller_bars(c: &Ctx) -> Hint {
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
pub(super) fn above_4g(c: &Ctx, branch: &str) -> Hint {
    let need = c.d.needed_bytes.unwrap_or(0);
    let size = match (c.d.needed_bytes, c.d.addressable_limit) {
        (None, _) => None,
        (Some(_), Some(l)) => Some(c.rec.min(l / 2).max(pow2_ceil(need))),
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
