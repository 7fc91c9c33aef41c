//! The text report's opening lines, what a person needs on the first
//! screen: the verdict, what failed, why (one line with the numbers), the
//! next step and the line to paste for it.

use crate::decide::diagnosis::DiagnosisKind;
use crate::model::platform::Platform;
use crate::model::size::human;
use crate::report::{Report, Verdict};
use std::fmt::Write as _;

/// The verdict line, as it has always read (scripts look for it).
pub(crate) fn verdict_line(r: &Report) -> String {
    let verdict = match r.verdict {
        Verdict::Ok => "OK",
        Verdict::Fail => "FAIL",
        Verdict::Unknown => "UNKNOWN",
    };
    let expected = r
        .expected
        .map(|e| format!(" of {e} expected"))
        .unwrap_or_default();
    format!(
        "gpu-preflight: {verdict}: {} GPU(s){expected}, diagnosis {}",
        r.found,
        r.diagnosis.as_str()
    )
}

/// `BAR 2 (32 GiB) of 04:00.0, 05:00.0`: the BARs left out, alike ones
/// together; `None` when none is.
pub(crate) fn failed(r: &Report) -> Option<String> {
    let mut groups: Vec<(u8, Option<u64>, Vec<String>)> = Vec::new();
    for u in &r.unassigned {
        let bdf = u.bdf.to_string();
        let bdf = bdf.strip_prefix("0000:").unwrap_or(&bdf).to_string();
        match groups.iter_mut().find(|g| g.0 == u.bar && g.1 == u.size) {
            Some(g) => g.2.push(bdf),
            None => groups.push((u.bar, u.size, vec![bdf])),
        }
    }
    let mut parts: Vec<String> = groups
        .iter()
        .map(|(bar, size, who)| {
            format!(
                "BAR {bar} ({}) of {}",
                size.map(human).unwrap_or_else(|| "size unknown".into()),
                who.join(", ")
            )
        })
        .collect();
    if let Some(e) = r.expected.filter(|e| *e > r.found) {
        parts.push(format!("{} of {e} expected GPUs missing", e - r.found));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The numbers that decided it, in one line where they are known.
pub(crate) fn why(r: &Report) -> String {
    let c = &r.capacity;
    let need = c.needed_bytes.map(human);
    let win = c.window_bytes.filter(|w| *w > 0).map(human);
    let at = c
        .windows
        .iter()
        .find(|w| w.counted)
        .map(|w| format!(" at {:#x}", w.start))
        .unwrap_or_default();
    match (r.diagnosis, need, win) {
        // A window with room by size whose free pieces hold no aligned
        // place (`Case::NoRoom`): the summary says it with the numbers.
        (DiagnosisKind::WindowTooSmall, Some(n), Some(w))
            if c.needed_bytes
                .zip(c.window_bytes)
                .is_none_or(|(n, w)| n > w) =>
        {
            format!("need {n} of 64-bit space; the window{at} has {w}")
        }
        (DiagnosisKind::PhysBitsTooSmall, Some(n), _) => format!(
            "need {n}, up to {:#x}, past {}",
            c.needed_end.unwrap_or(0),
            c.phys_bits
                .map(|b| format!("the {} of the CPU's {b} bits", human(1u64 << b.min(63))))
                .unwrap_or_else(|| "the CPU's reach".into())
        ),
        (DiagnosisKind::Ok, Some(n), Some(w)) => {
            format!("{}; {n} in a {w} window", r.summary)
        }
        _ => r.summary.clone(),
    }
}

/// Commands a hint quotes to look at something, not to change it.
const LOOK: &[&str] = &[
    "grep ",
    "cat ",
    "lspci",
    "dmesg",
    "journalctl",
    "nvidia-smi",
];

/// The line to paste for the next step: the first command in its text
/// that changes something (a quoted span with a blank in it), else the
/// first quoted setting.
pub(crate) fn paste(text: &str) -> Option<&str> {
    let spans: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    spans
        .iter()
        .find(|s| s.contains(' ') && !LOOK.iter().any(|l| s.starts_with(l)))
        .or(spans.first())
        .copied()
        .filter(|s| !s.is_empty())
}

/// The opening lines, each a line of prose but the one to paste, which
/// comes back apart so that no wrapping breaks it.
pub(crate) fn lines(r: &Report) -> (String, Option<String>) {
    let mut s = String::new();
    let _ = writeln!(s, "{}", verdict_line(r));
    if let Some(f) = failed(r) {
        let _ = writeln!(s, "failed:    {f}");
    }
    let _ = writeln!(s, "why:       {}", why(r));
    if !r.platform_branches.is_empty() {
        // No platform shown and none told: the step on each of the two
        // likeliest comes first, and the command that tells them apart
        // is the line to paste.
        platform_branches(r, &mut s);
        return (s, Some("  paste:   systemd-detect-virt\n".into()));
    }
    let next = r.hints.first();
    if let Some(h) = next {
        let _ = writeln!(s, "next step: {} [{}]", h.id.label(), h.id);
    }
    let paste = next
        .and_then(|h| paste(&h.text))
        .map(|p| format!("  paste:   {p}\n"));
    (s, paste)
}

/// Where the input does not show the platform: the first step on each of
/// the two likeliest, and the one command that tells them apart.
fn platform_branches(r: &Report, s: &mut String) {
    let steps: Vec<String> = r
        .platform_branches
        .iter()
        .map(|b| {
            let on = match b.platform {
                Platform::BareMetal => "on a real machine",
                Platform::Qemu => {
                    "in a QEMU/KVM VM (Proxmox, libvirt, KubeVirt, OpenStack, LXD/Incus, Kata)"
                }
                _ => "in a VM",
            };
            format!("{on}: {} [{}]", b.hint.label(), b.hint)
        })
        .collect();
    let _ = writeln!(
        s,
        "platform:  not shown in the input; {}; `systemd-detect-virt` (or `cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name`) on the machine tells which, and `--platform` gives it",
        steps.join("; ")
    );
}

/// The hints: the next step's in full, a paragraph, then the others by
/// their lead line (the JSON form carries every text).
pub(crate) fn hints(s: &mut String, hints: &[crate::decide::hint::Hint]) {
    let Some((first, rest)) = hints.split_first() else {
        return;
    };
    let _ = writeln!(s, "hints:");
    let _ = writeln!(s, "  [{}] {}", first.id, first.text);
    for h in rest {
        let _ = writeln!(s, "  or [{}]: {}", h.id, h.id.label());
    }
}

#[cfg(test)]
mod tests {
    use super::paste;

    #[test]
    fn the_line_to_paste_is_the_first_command_in_the_hint() {
        assert_eq!(
            paste("Set `X-PciMmio64Mb=262144` (MiB). QEMU: `-fw_cfg name=opt/ovmf/X,string=1`."),
            Some("-fw_cfg name=opt/ovmf/X,string=1")
        );
        assert_eq!(
            paste("Add `pci=realloc` to the kernel command line."),
            Some("pci=realloc")
        );
        assert_eq!(
            paste("Bits (`grep -m1 'address sizes' /proc/cpuinfo`). `qm set 1 --cpu x`"),
            Some("qm set 1 --cpu x")
        );
        assert_eq!(paste("Nothing quoted."), None);
        assert_eq!(paste("An empty `` span."), None);
    }
}
