//! The verdict, and the one sentence that says why, with the numbers that
//! decided it.

use crate::decide::diagnosis::{Case, Diagnosis, DiagnosisKind};
use crate::decide::host;
use crate::evidence::{BridgeShort, Evidence, ShortHow};
use crate::model::size::human;
use crate::parse::hypervisor::HostMessage;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Ok,
    Fail,
    /// `explain` only: nothing failed, but the input does not show the
    /// GPUs' BARs with addresses.
    Unknown,
}

/// The check's verdict: `ok` when every GPU is there with its BARs placed;
/// `unknown` when nothing failed but the input does not show the BARs with
/// addresses and no driver complained; `fail` otherwise, and also when
/// peer-to-peer was expected and a gate refuses it (`p2p_refused`: the
/// section is advice otherwise).
pub(crate) fn verdict(ev: &Evidence, d: &Diagnosis, p2p_refused: bool) -> Verdict {
    if p2p_refused {
        Verdict::Fail
    } else if d.kind == DiagnosisKind::Ok {
        Verdict::Ok
    } else if (d.case == Case::NoAddressEvidence
        && !ev.unproven.iter().any(|(_, _, complaint)| *complaint))
        || matches!(
            d.case,
            Case::HostTrace { .. } | Case::OnlySmallDevices | Case::ClaimPending
        )
    {
        Verdict::Unknown
    } else {
        Verdict::Fail
    }
}

/// `plan`'s verdict: `ok` when the model predicts every GPU's BARs
/// placed and assigned in the guest (`ok`), `fail` otherwise.
pub(crate) fn predicted(ok: bool) -> Verdict {
    if ok {
        Verdict::Ok
    } else {
        Verdict::Fail
    }
}

/// The report's summary: `describe`, and what failed beside the devices'
/// own BARs (SR-IOV VF space), which no hint is about.
pub(crate) fn summary(ev: &Evidence, d: &Diagnosis) -> String {
    let mut s = describe(ev, d);
    if !ev.vf_failed.is_empty() {
        let (who, its, own) = match ev.vf_failed.as_slice() {
            [one] => (one.to_string(), "its", "the device's own BARs"),
            many => (
                many.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                "their",
                "the devices' own BARs",
            ),
        };
        s.push_str(&format!(
            "; apart from {own}, the SR-IOV VF BARs of {who} got no space, so {its} virtual functions cannot be enabled"
        ));
    }
    s
}

/// `Case::ClaimPending`'s sentence.
fn claim_pending(ev: &Evidence) -> String {
    format!(
        "no BAR failure the text shows, but the firmware's address of a BAR of {} could not be claimed (`Cannot allocate resource region`) and the kernel's new assignment after it is not in the text (where that fails too the kernel says `Failed to allocate mem resource`); the device has no class in the text, so it may be a GPU",
        ev.claims_pending_named()
    )
}

/// The sentence that says why, with the numbers that decided it.
pub(crate) fn describe(ev: &Evidence, d: &Diagnosis) -> String {
    let found = ev.gpus.len();
    let need = d
        .needed_bytes
        .map(human)
        .unwrap_or_else(|| "an unknown amount of".into());
    let win = d
        .window_bytes
        .map(human)
        .unwrap_or_else(|| "unknown".into());
    let unassigned = format!("{} memory BAR(s) unassigned", d.failed_bars);
    match d.case {
        Case::Missing => format!(
            "{found} of {} expected GPUs present; every BAR of those present is assigned",
            ev.expected.unwrap_or(found)
        ),
        Case::NoGpu => "no GPU found, nothing to check (give --expect to require GPUs)".into(),
        Case::Healthy => healthy(ev),
        Case::OnlyOtherDevices => format!(
            "{unassigned}, all on devices not taken for GPUs: the numbers here are about the GPUs' 64-bit space and do not cover them"
        ),
        Case::OnlySmallDevices => format!(
            "{unassigned}, none on a device the text shows is a GPU; those that may be one ({}) show only BARs under 1 MiB, where a GPU has a register or VRAM BAR of 1 MiB or more: whether a GPU failed is not in the text",
            ev.maybe_gpus_failed().join(", ")
        ),
        Case::ClaimPending => claim_pending(ev),
        Case::OnlyNonGpu => format!(
            "{}; not counted for the GPUs, as the text shows these devices are none: {}",
            if found == 0 {
                "no GPU in the input".to_string()
            } else {
                format!("{found} GPU(s), every memory BAR assigned")
            },
            ev.other_failed
                .iter()
                .map(|o| format!(
                    "{} BAR {} unassigned ({})",
                    o.bdf,
                    o.bar,
                    o.not_gpu.as_ref().map(|n| n.words()).unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Case::Unnamed => format!(
            "{unassigned}, of a device the text does not name: {}; which device it is, and its window, are not in the text",
            ev.unnamed_failed.join("; ")
        ),
        Case::Only32Bit => format!(
            "{unassigned}, no GPU's 64-bit prefetchable BAR among them: the shortage is in the 32-bit window below 4 GiB (or the firmware rejected the device), which these numbers do not cover"
        ),
        Case::TypeUnknown => format!(
            "{unassigned}, known only from messages that give neither the BAR's type nor its size (a driver's complaint, or an old kernel's): whether the 64-bit window or the one below 4 GiB fell short is not in the text"
        ),
        Case::PastAddressLimit => format!(
            "{unassigned}: the GPUs need {need} of 64-bit space, which from the window start would end at {:#x}, past the {} the CPU can address{}",
            d.needed_end.unwrap_or(0),
            human(d.addressable_limit.unwrap_or(0)),
            ev.cpu.phys_bits
                .map(|b| format!(" ({b} physical address bits)"))
                .unwrap_or_default()
        ),
        Case::Unaddressable => format!(
            "{unassigned}: the kernel dropped part of the firmware's 64-bit window as not CPU addressable (from {:#x})",
            ev.unaddressable_from.unwrap_or(0)
        ),
        Case::TooSmall { tight } => {
            let mut s = format!(
                "{unassigned}: the GPUs need {need} of 64-bit prefetchable space (bridge windows aligned as the kernel sizes them) but the root bus offers {}",
                if d.window_bytes == Some(0) {
                    "no 64-bit window at all".to_string()
                } else {
                    format!("a {win} window")
                }
            );
            if let Some(t) = tight {
                s.push_str(&format!(
                    "; the BARs alone add up to {}, which kernels that relax bridge alignment may squeeze in",
                    human(t)
                ));
            }
            s
        }
        Case::Fits => format!(
            "{unassigned}: the {win} 64-bit window has room for the {need} the GPUs need; the firmware did not place them and the kernel was not asked to (pci=realloc is off)"
        ),
        Case::NoRoom { bar, free, bridge } => format!(
            "{unassigned}: the {win} window would have room for the {need} needed, but what the kernel placed there and the ranges reserved in it leave {} free in pieces, none with an aligned place for {}, even with pci=realloc",
            human(free),
            match bridge {
                None => format!("a {} BAR", human(bar)),
                Some(b) => format!("bridge {b}'s {} window (its GPUs' BARs, placed whole)", human(bar)),
            }
        ),
        Case::FitsReallocActive => format!(
            "{unassigned}: the {win} window has room for the {need} needed and pci=realloc is active, yet the kernel did not place them (bridge reservations or a hot-plug slot may hold the space)"
        ),
        Case::DriverReason => format!(
            "{found} GPU(s), none with a failed BAR: the driver gave up on each for a reason it names that is no BAR, so the BARs are not what failed: {}",
            ev.unproven
                .iter()
                .map(|(a, why, _)| format!("{a}: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Case::NoAddressEvidence => format!(
            "{found} GPU(s), none with a failed BAR, but the input does not show that every memory BAR has an address: {}; `lspci -vvv` of the GPUs, or the whole boot log, would",
            ev.unproven
                .iter()
                .map(|(a, why, _)| format!("{a}: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Case::HypervMmio { need } => format!(
            "Hyper-V could not fit the VM's assigned devices in its MMIO gap: they need {} ({need:#x}, hv_pci's \"Need ... of MMIO space\"), so the GPU never appears on a PCI bus in the guest",
            human(need)
        ),
        Case::BridgeShort(b) => bridge_short(&b),
        Case::Host { at } => host::sentence(&ev.host_messages[at]),
        Case::HostNotes => format!(
            "no device's BAR failed and no GPU is in the input, which holds only the host side's messages: {}",
            host_notes(ev)
        ),
        // A VM that never powered on has no guest lines to ask.
        Case::HostTrace { at } => match ev.host_messages[at] {
            HostMessage::VmwarePowerOn { .. } => host::sentence(&ev.host_messages[at]),
            _ => format!(
                "{}; the guest's own PCI lines would say whether it got its BARs",
                host::sentence(&ev.host_messages[at])
            ),
        },
        Case::MissingFacts { size, window } => {
            let mut missing_facts = Vec::new();
            if size {
                missing_facts.push("the size of a failed BAR");
            }
            if window {
                missing_facts
                    .push("the 64-bit root bus window (run as root, or give the boot's kernel log)");
            }
            format!(
                "{unassigned}; not enough evidence to say why, missing {}",
                missing_facts.join(" and ")
            )
        }
    }
}

/// Every GPU's memory BARs assigned: those the text shows, and those of
/// a GPU its driver runs (`Evidence::driver_runs`), with what the host
/// side's messages say beside them.
fn healthy(ev: &Evidence) -> String {
    let mut s = format!("{} GPU(s), every memory BAR assigned", ev.gpus.len());
    if !ev.driver_runs.is_empty() {
        s.push_str(&format!(
            " (the text shows no BAR of {}; NVIDIA's driver reported faults of {} at run time, which it does only on a GPU whose adapter started with its regions)",
            ev.driver_runs
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if ev.driver_runs.len() == 1 { "it" } else { "them" }
        ));
    }
    if !ev.host_messages.is_empty() {
        s.push_str(": ");
        s.push_str(&host_notes(ev));
    }
    s
}

/// What each of the host side's messages is, in one sentence.
fn host_notes(ev: &Evidence) -> String {
    ev.host_messages
        .iter()
        .map(host::sentence)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A short bridge window, in numbers.
fn bridge_short(b: &BridgeShort) -> String {
    let size = |v: Option<u64>| v.map(human).unwrap_or_else(|| "an unknown size".into());
    let (need, window) = (size(b.need), size(b.window));
    let lack = match (b.need, b.window) {
        (Some(n), Some(w)) if n > w => format!(", {} short", human(n - w)),
        _ => String::new(),
    };
    match b.how {
        ShortHow::CannotFit => format!(
            "the kernel could not fit the {need} bridge {} needs for its devices in its parent's window and gave it a {window} window{lack}: the devices below it cannot all have their BARs, though no line in the text says which failed",
            b.bridge
        ),
        ShortHow::Shrunk => format!(
            "the kernel shrank bridge {}'s window to {window}, below the {need} its devices need{lack}: the devices below it cannot all have their BARs, though no line in the text says which failed",
            b.bridge
        ),
        ShortHow::Failed => format!(
            "bridge {}'s {need} memory window got no space, and the text shows no device below it: what the window was sized for, the BARs of the devices below, got none",
            b.bridge
        ),
        ShortHow::Sized => format!(
            "bridge {}'s 64-bit prefetchable window is {window}, and the GPUs below it need {need} (sized as the kernel sizes bridge windows){lack}: the root window has room and pci=realloc is active, so the bridge's sizing is what fell short",
            b.bridge
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::diagnosis::diagnose;

    #[test]
    fn the_verdict_is_the_bars_unless_expected_p2p_is_refused() {
        let healthy = Evidence::default();
        let d = diagnose(&healthy);
        assert_eq!(verdict(&healthy, &d, false), Verdict::Ok);
        assert_eq!(verdict(&healthy, &d, true), Verdict::Fail);
        let failing = crate::decide::tests::nvrm_only(Default::default(), false);
        let d = diagnose(&failing);
        assert_eq!(verdict(&failing, &d, false), Verdict::Fail);
        // Nothing failed, but no BAR is shown with an address.
        let mut unproven = Evidence {
            gpus: failing.gpus.clone(),
            unproven: vec![(failing.gpus[0].addr, "no BAR shown".into(), false)],
            ..Evidence::default()
        };
        unproven.gpus[0].bars.clear();
        let d = diagnose(&unproven);
        assert_eq!(d.case, Case::NoAddressEvidence, "{d:?}");
        assert_eq!(verdict(&unproven, &d, false), Verdict::Unknown);
        // A driver's complaint makes it a failure.
        unproven.unproven[0].2 = true;
        assert_eq!(verdict(&unproven, &d, false), Verdict::Fail);
    }
}
