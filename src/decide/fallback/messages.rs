//! What the drivers' and the kernel's own messages say, which comes
//! before the space: a BAR the kernel lost in a failed resize, a device a
//! rescan long after boot failed, a BAR NVIDIA's driver refuses for its
//! type, two contiguous root windows the kernel kept apart. None of these
//! is fixed by a larger window.

use super::{plain, Ctx};
use crate::decide::hint::{Hint, HintId, Restart, Side};
use crate::decide::space;
use crate::evidence::Evidence;
use crate::model::pci::PciAddress;
use crate::model::platform::Platform;
use crate::model::size::human;

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
pub(super) fn resize_rollback(c: &Ctx) -> Option<Hint> {
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
pub(super) fn rescan(c: &Ctx) -> Option<Hint> {
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
pub(super) fn vmm_prefetchable(c: &Ctx) -> Option<Hint> {
    let bdf =
        c.ev.nvrm_third_region_only
            .first()
            .filter(|_| explains_all(c.ev, &c.ev.nvrm_third_region_only))?;
    let branch = if c.ev.platform() == Platform::Unknown {
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

/// The kernel left a bridge's window smaller than the devices below it
/// need (`Case::BridgeShort`): its bridge window sizing. From a change
/// reported on 6.11 until dc4b4d04e1ca (2026-02), `adjust_bridge_window()`
/// could shrink a window below what `pbus_size_mem()` computed, printing
/// only `cannot fit ... required for` and the `shrunken by` debug line
/// (linux-pci, 2025-08; tests/corpus 148). The firmware's window is not
/// what is short, so no firmware setting comes first.
pub(super) fn window_sizing(c: &Ctx, bridge: PciAddress) -> Hint {
    plain(
        HintId::KernelWindowSizing,
        format!(
            "{} The kernel sized the window of bridge {bridge} smaller than its devices need: a fault of its bridge window sizing (reported from 6.11, when it began shrinking a window to what the parent had left, until commit dc4b4d04e1ca in 2026; 6.18 lost a window's type until e5f72cb9cea5). \
             Boot a kernel with those fixes (or the one this machine ran before 6.11) and send this log to linux-pci@vger.kernel.org; behind a hot-plug bridge (Thunderbolt) the kernel's reservation for it helps meanwhile.",
            c.why
        ),
        Side::Guest,
        Some(Restart::Reboot),
    )
}

/// Two contiguous root windows this kernel did not join, and a BAR that
/// fits only across them (`space::split_root_window`): the kernel's to
/// fix, not the firmware's, whose windows are right.
pub(super) fn split_window(c: &Ctx) -> Option<Hint> {
    let s = space::split_root_window(c.ev)?;
    let which = match c.ev.kernel {
        Some((major, minor)) => format!("This kernel ({major}.{minor}) is older than 5.16: boot 5.16 or later."),
        None => "Boot 5.16 or later (`uname -r` says which this is); where this already is one, the two windows differ in type, which no kernel joins, and the firmware's windows are what is short.".to_string(),
    };
    Some(plain(
        HintId::KernelRootWindowJoin,
        format!(
            "{} The root bus windows {:#x}-{:#x} and {:#x}-{:#x} are contiguous: a {} BAR fits across their join but in no window alone, and the kernel placed no BAR across two windows. \
             Linux joins a host bridge's contiguous windows of one type from 5.16 (commit 7c3855c423b1, \"PCI: Coalesce host bridge contiguous apertures\"; 5.15's stable updates have it too). {which} \
             pci=realloc re-places BARs inside one window and does not join them.",
            c.why,
            s.first.start,
            s.first.end,
            s.second.start,
            s.second.end,
            human(s.bar)
        ),
        Side::Guest,
        Some(Restart::Reboot),
    ))
}
