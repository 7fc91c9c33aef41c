//! Which space fell short, where that changes the first step: the windows
//! below 4 GiB (a 32-bit BAR, or NVIDIA's register BAR 0), which no
//! 64-bit setting grows, a board's own host bridge window (an ARM or
//! PowerPC board booted with a device tree), which no PC firmware setup
//! has, and two contiguous root windows a kernel did not join.

use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::sizing::{fits, Block};
use crate::decide::syntax;
use crate::evidence::Evidence;
use crate::model::bar::BarState;
use crate::model::range::Range;
use crate::model::size::{human, pow2_ceil};

const NVIDIA: u16 = 0x10de;

/// Every failed memory BAR of the GPUs is a register BAR below 4 GiB: a
/// 32-bit non-prefetchable one, or NVIDIA's BAR 0 known from `NVRM: BAR0
/// is 0M` alone (its register BAR is 32-bit and non-prefetchable on every
/// NVIDIA GPU). Above 4G Decoding and the 64-bit apertures do not reach
/// that space; the bridge windows below 4 GiB do. (A 32-bit prefetchable
/// BAR is an old GPU's VRAM aperture, whose placement is the firmware's.)
pub(crate) fn only_low(ev: &Evidence) -> bool {
    low(ev, true)
}

/// `only_low` in a VM, where NVIDIA's BAR 0 known from its driver alone
/// does not count: there the VM's firmware rejects the largest consumer
/// of the pool that fell short whole, every BAR of it (edk2
/// MdeModulePkg/Bus/Pci/PciBusDxe/PciResourceSupport.c
/// `PciHostBridgeAdjustAllocation()`, `GetMaxResourceConsumerDevice()` then
/// `RejectPciDevice()`), and the guest kernel cannot fit even its register
/// BAR into a port window sized without it. Which pool fell short the line
/// does not say; the VM pastes of it were fixed in the 64-bit window
/// (corpus 24 and 419: OVMF's aperture; 423: QEMU's hole), none by a
/// port's reservation below 4 GiB, which stays a later hint.
pub(crate) fn only_low_in_vm(ev: &Evidence) -> bool {
    low(ev, false)
}

fn low(ev: &Evidence, nvidia_bar0_alone: bool) -> bool {
    let mut failed = ev
        .gpus
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .filter(|b| !b.io && b.state != BarState::Assigned)
                .map(move |b| (g.vendor, b))
        })
        .peekable();
    if failed.peek().is_none() {
        // Only devices not taken for GPUs failed (an emulated display, a
        // paste without class lines): the same holds for their BARs.
        return !ev.other_failed.is_empty() && ev.other_failed.iter().all(|o| o.low);
    }
    failed.all(|(vendor, b)| {
        if b.type_known {
            !b.mem64 && !b.prefetchable
        } else {
            nvidia_bar0_alone && vendor == NVIDIA && b.index == 0
        }
    })
}

/// The failed memory BARs' sizes where known (a device not taken for a
/// GPU counts: a paste often lacks the class line).
fn failed_sizes(ev: &Evidence) -> impl Iterator<Item = u64> + '_ {
    ev.gpus
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter(|b| !b.io && b.state != BarState::Assigned)
        .filter_map(|b| b.size)
        .chain(ev.other_failed.iter().filter_map(|o| o.size))
        .filter(|s| *s > 0)
}

/// The largest failed BAR's size, for the numbers in a hint.
fn largest_failed(ev: &Evidence) -> Option<u64> {
    failed_sizes(ev).max()
}

/// Two contiguous windows of one root bus, and the failed BAR that fits
/// across their join but in neither alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitWindow {
    pub first: Range,
    pub second: Range,
    pub bar: u64,
}

/// The kernel places a BAR inside one window of its bus, never across two.
/// From 5.16 it joins a host bridge's contiguous windows of the same type
/// before it prints them (drivers/pci/probe.c `pci_register_host_bridge()`,
/// "Coalesce contiguous windows", commit 7c3855c423b1 "PCI: Coalesce host
/// bridge contiguous apertures", in 5.15's stable updates too), so two
/// contiguous windows of one bus in the log or in /proc/iomem are from a
/// kernel without it, or differ in type (which the text does not say). Not
/// where the log's banner gives 5.16 or later, nor where the BAR fits
/// another window of the bus alone. tests/corpus 393: an APU's 256 MiB BAR
/// on an HP EliteDesk 805 G6 (kernel bugzilla 212013), the case that commit
/// fixed.
pub(crate) fn split_root_window(ev: &Evidence) -> Option<SplitWindow> {
    if ev.kernel.is_some_and(|k| k >= (5, 16)) {
        return None;
    }
    let holds = |r: Range, size: u64| Block::bar(size).is_some_and(|b| fits(&[b], &[r]));
    let mut windows: Vec<&crate::evidence::Window> =
        ev.windows.iter().filter(|w| w.bus.is_some()).collect();
    windows.sort_by_key(|w| (w.bus, w.range.start));
    let pairs: Vec<(Range, Range, _)> = windows
        .windows(2)
        .filter(|p| p[0].bus == p[1].bus && p[0].range.end.checked_add(1) == Some(p[1].range.start))
        .map(|p| (p[0].range, p[1].range, p[0].bus))
        .collect();
    failed_sizes(ev)
        .map(pow2_ceil)
        .flat_map(|bar| pairs.iter().map(move |(a, b, bus)| (*a, *b, *bus, bar)))
        .find(|(a, b, bus, bar)| {
            let alone = windows
                .iter()
                .filter(|w| w.bus == *bus)
                .any(|w| holds(w.range, *bar));
            !alone && holds(Range::new(a.start, b.end), *bar)
        })
        .map(|(first, second, _, bar)| SplitWindow { first, second, bar })
}

fn plain(id: HintId, text: String, side: Side, restart: Restart) -> Hint {
    Hint::new(id, text, side, Some(restart), Change::default())
}

/// A board that is not an x86 PC (`sign` says why): its PCIe host
/// controller maps only the CPU addresses its device tree's `ranges` give
/// it, often 64 MiB to 1 GiB, and no kernel option or firmware setup
/// enlarges that.
pub(crate) fn board_window(why: &str, ev: &Evidence, sign: &str) -> Hint {
    let bar = largest_failed(ev)
        .map(|s| format!(" (the largest failed BAR is {})", human(s)))
        .unwrap_or_default();
    plain(
        HintId::PlatformWindowTooSmall,
        format!(
            "{why} This is not an x86 PC ({sign}): the PCIe host controller maps only the address range the board gives it, \
             and that outbound window is smaller than the device's BARs{bar}. No PC firmware setting applies. \
             Enlarge the controller's memory window in the device tree (the `ranges` of its `pcie@` node: a 64-bit prefetchable range at least as large as the BARs, \
             where the SoC has address space for it; see the board's documentation or vendor kernel) and boot with that .dtb; on an ARM server with UEFI, the firmware's PCIe MMIO settings. \
             Some SoCs cannot map a window that large at all: then only a GPU with smaller BARs (a smaller VRAM aperture, Resizable BAR off) works on this board."
        ),
        Side::Firmware,
        Restart::Reboot,
    )
}

/// A VM whose GPU's 32-bit BARs did not fit its port's window below
/// 4 GiB: the port reserves what was plugged at boot, so give it room.
/// The id is the VM's port reservation's, hot-plugged or not.
pub(crate) fn vm_port_low(why: &str, ev: &Evidence) -> Hint {
    let need = largest_failed(ev)
        .map(|s| pow2_ceil(s).max(64 << 20))
        .unwrap_or(64 << 20);
    let change = Change {
        pcie_root_port_properties: syntax::root_port_reserve(None, need),
        ..Change::default()
    };
    let able = syntax::for_guest(&change, syntax::first_for(ev));
    Hint::new(
        HintId::VmHotplugReserve,
        format!(
            "{why} The failed BARs are 32-bit ones, placed in the window below 4 GiB of the port or bridge the device sits behind, which the VM's firmware sized for what it saw at boot; \
             the 64-bit hole and aperture do not reach them. Give the port room below 4 GiB, with the device plugged at boot rather than hot-plugged: {}. \
             A guest kernel with `pci=realloc` can also enlarge a bridge window where the parent has room. {}",
            syntax::list(&change, &able, 1).unwrap_or_default(),
            syntax::restart(&able)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}
