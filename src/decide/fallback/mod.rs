//! Hints where no firmware model predicts: bare metal, VMware, Hyper-V, a
//! guest the model cannot describe, and every `unknown` diagnosis. They
//! follow from the diagnosis and the platform judgement alone, ranked for
//! the platform; where the platform is not known, the VM and the
//! bare-metal branch both, each saying how to tell which one applies, and
//! last the one command that collects what would settle it. What the
//! drivers' own messages say comes first (`messages`); then a real
//! machine's steps (`metal`) or a VM's (`vm`).
//!
//! A hint id keeps its meaning wherever it is given: `guest-pci-realloc`
//! is the kernel's own `pci=realloc` (in a guest or on bare metal alike),
//! `firmware-above-4g` the firmware setup's 64-bit decoding.

mod host;
mod messages;
mod metal;
mod vm;

use crate::decide::diagnosis::{Case, Diagnosis, DiagnosisKind};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::sizing::recommended_window;
use crate::decide::space;
use crate::decide::summary::describe;
use crate::decide::syntax;
use crate::evidence::{Evidence, ShortHow};
use crate::model::platform::Platform;
use crate::model::size::{human, pow2_ceil};
use crate::parse::hypervisor::HostMessage;
use messages::{rescan, resize_rollback, split_window, vmm_prefetchable, window_sizing};
use metal::{above_4g, bare_metal, smaller_bars};
use vm::{at_40_bits, hyperv, phys_bits, qemu_window, vm, vmware};

const GIB: u64 = 1 << 30;

/// How to tell a VM from a real machine, said once in each branch.
const HOW_TO_TELL: &str = "`systemd-detect-virt` prints `none` on a real machine and the hypervisor's name in a VM (or: `grep -c hypervisor /proc/cpuinfo` prints 0 on a real machine)";

/// The one command that collects what every report needs.
const COLLECT: &str = "`sudo gpu-preflight check` on the machine itself; or save `{ sudo dmesg; sudo lspci -nn -vvv; grep -m1 -w flags /proc/cpuinfo; cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name /sys/class/dmi/id/bios_vendor; } > pci.txt` from the failing boot and run `gpu-preflight explain pci.txt`";

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
    // A GPU whose start failed with no cause named: the hints for a
    // region without an address, on that condition.
    let start_failed = !complaint && !ev.start_failed.is_empty();
    let complaint = complaint || start_failed;
    // The outcome is the question: the kernel's next pass, not shown.
    if d.case == Case::ClaimPending {
        return vec![collect(format!(
            "The kernel refused the firmware's address for a BAR of {} and then gave it one the text does not show: `lspci -vv -s {}` shows the address it has now, and the boot log says \"Failed to allocate mem resource\" for it where the kernel found none.",
            ev.claims_pending_named(),
            ev.claims_pending[0]
        ))];
    }
    // What the host side refused is fixed there, whatever else the input
    // shows of the guest.
    if let Case::Host { at } = d.case {
        let c = Ctx {
            ev,
            d,
            why: format!("{}.", describe(ev, d)),
            rec: recommended_window(d.needed_bytes.unwrap_or(0)),
            past_limit: false,
        };
        return host::hints(&c, &ev.host_messages[at]);
    }
    // VMware's power-on failure without its cause: the step that answers
    // it most often, said as a condition on vmware.log.
    if let Case::HostTrace { at } = d.case {
        if let HostMessage::VmwarePowerOn { explained: false } = ev.host_messages[at] {
            let c = Ctx {
                ev,
                d,
                why: "If vmware.log shows \"PCIPassthru: total number of pages needed (N) exceeds limit (M)\" before the power-on failure, the passthrough BARs need more MMIO space than the VM offers. The size below is the least; give at least twice the GPUs' total memory, rounded up to a power of two.".to_string(),
                rec: recommended_window(0),
                past_limit: false,
            };
            return vmware(&c);
        }
    }
    // A bridge window the kernel sized too small: its sizing first, then
    // (behind a hot-plug bridge) the reservation.
    if let Case::BridgeShort(b) = d.case {
        if b.how != ShortHow::Failed {
            let c = Ctx {
                ev,
                d,
                why: format!("{}.", describe(ev, d)),
                rec: recommended_window(d.needed_bytes.unwrap_or(0)),
                past_limit: false,
            };
            let mut out = vec![window_sizing(&c, b.bridge)];
            out.extend(hotplug(&c, false));
            return out;
        }
    }
    let window_failed = matches!(d.case, Case::BridgeShort(_));
    if d.failed_bars == 0 && ev.hyperv_mmio_short.is_none() && !complaint && !window_failed {
        return Vec::new();
    }
    let numbers = d.needed_bytes.is_some() && d.window_bytes.is_some();
    let why = if numbers {
        format!(
            "The GPUs need {} of 64-bit prefetchable space; the root bus window is {}.",
            human(d.needed_bytes.unwrap_or(0)),
            human(d.window_bytes.unwrap_or(0))
        )
    } else if start_failed {
        format!(
            "NVIDIA's driver could not start {} and names no cause; a BAR without an address is one (others: GSP firmware, power, the GPU's state). If lspci -vvv shows a memory BAR of it \"<unassigned>\" or without its Region 1, or the log holds \"BARn is 0M\", this is the fix.",
            ev.start_failed
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
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
    let platform = ev.platform();
    // What the drivers' own messages say comes before the space: a BAR the
    // kernel lost in a failed resize, one that fits only across two root
    // windows the kernel kept apart, or one NVIDIA's driver refuses for
    // its type, is not fixed by a larger window.
    let mut out: Vec<Hint> = resize_rollback(&c).into_iter().collect();
    out.extend(split_window(&c));
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
    // Whether a GPU failed at all is the first question where no device
    // that failed looks like one: the steps above hold only if it did.
    if d.case == Case::OnlySmallDevices {
        let maybe = ev.maybe_gpus_failed();
        out.retain(|h| h.id != HintId::CollectEvidence);
        out.insert(
            0,
            collect(format!(
                "Whether a GPU is among the devices that failed is not in the text: {} shows only BARs under 1 MiB, where a GPU has a register or VRAM BAR of 1 MiB or more; {} names it, and the steps below hold only if it is a GPU.",
                maybe.join(", "),
                maybe
                    .iter()
                    .map(|a| format!("`lspci -nn -s {a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
    out
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
            .map(|s| pow2_ceil(s).max(256 << 20));
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
                syntax::guest_steps(&change, syntax::first_for(c.ev))
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
mod tests;
