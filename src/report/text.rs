//! The text form, for people: a verdict line, each GPU with its BARs, the
//! diagnosis with its numbers, the hints, the warnings.

use crate::decide::hint::Hint;
use crate::model::size::human;
use crate::report::{Report, Verdict};
use std::fmt::Write as _;

fn opt_human(v: Option<u64>) -> String {
    v.map(human).unwrap_or_else(|| "unknown".into())
}

pub(crate) fn render(r: &Report) -> String {
    let mut s = String::new();
    let verdict = match r.verdict {
        Verdict::Ok => "OK",
        Verdict::Fail => "FAIL",
        Verdict::Unknown => "UNKNOWN",
    };
    let expected = r
        .expected
        .map(|e| format!(" of {e} expected"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "gpu-preflight: {verdict}: {} GPU(s){expected}, diagnosis {}",
        r.found,
        r.diagnosis.as_str()
    );
    if let Some(h) = r.hints.first() {
        let _ = writeln!(s, "next step: {} [{}]", h.id.label(), h.id);
    }
    gpus(r, &mut s);
    diagnosis(r, &mut s);
    if let Some(p) = &r.p2p {
        crate::report::p2p::text(p, &mut s);
    }
    hints_and_warnings(&mut s, &r.hints, &r.warnings);
    s
}

/// Each GPU with its BARs, then the devices not taken for GPUs that
/// failed.
fn gpus(r: &Report, s: &mut String) {
    for g in &r.gpus {
        let line = format!(
            "  {} [{}:{}] {:<4} {}",
            g.bdf,
            g.vendor.as_deref().unwrap_or("????"),
            g.device.as_deref().unwrap_or("????"),
            if g.ok { "ok" } else { "FAIL" },
            g.name.as_deref().unwrap_or("")
        );
        let _ = writeln!(s, "{}", line.trim_end());
        for b in &g.bars {
            let kind = if b.io {
                "io".to_string()
            } else if !b.type_known {
                "mem (type unknown)".to_string()
            } else {
                format!(
                    "{}{}",
                    if b.mem64 { "64-bit" } else { "32-bit" },
                    if b.prefetchable { " pref" } else { "" }
                )
            };
            let place = match b.start {
                Some(a) => format!("at {a:#x}"),
                None => format!("<{}>", b.state.as_str()),
            };
            let src = match (b.size_source, b.assigned) {
                (Some(src), false) => format!(" (size from {})", src.as_str()),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "      BAR {} {kind} {} {place}{src}",
                b.index,
                opt_human(b.size)
            );
        }
    }
    for u in r
        .unassigned
        .iter()
        .filter(|u| !r.gpus.iter().any(|g| g.bdf == u.bdf))
    {
        let _ = writeln!(
            s,
            "  {} BAR {} unassigned ({})",
            u.bdf,
            u.bar,
            opt_human(u.size)
        );
    }
}

/// The diagnosis with the numbers behind it: need, window, origin, CPU,
/// realloc, firmware.
fn diagnosis(r: &Report, s: &mut String) {
    let _ = writeln!(s, "diagnosis: {}: {}", r.diagnosis.as_str(), r.summary);
    let c = &r.capacity;
    // The windows window_bytes adds up, so that the line is one fact.
    let windows: Vec<String> = c
        .windows
        .iter()
        .filter(|w| w.counted)
        .map(|w| {
            format!(
                "{:#x}-{:#x} ({}, from {})",
                w.start,
                w.end,
                human(w.size),
                w.source.as_str()
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  needed:   {} of 64-bit prefetchable space",
        opt_human(c.needed_bytes)
    );
    let _ = writeln!(
        s,
        "  window:   {}{}",
        match c.window_bytes {
            Some(0) => "none (no 64-bit root bus window)".to_string(),
            w => opt_human(w),
        },
        if windows.is_empty() {
            String::new()
        } else {
            format!(" = {}", windows.join(" + "))
        }
    );
    if let Some(o) = origin_line(&c.window_origin) {
        let _ = writeln!(s, "  origin:   {o}");
    }
    let _ = writeln!(
        s,
        "  cpu:      {}",
        c.phys_bits
            .map(|b| format!("{b} physical address bits ({})", human(1u64 << b.min(63))))
            .unwrap_or_else(|| "physical address bits unknown".into())
    );
    let _ = writeln!(
        s,
        "  realloc:  pci=realloc {}",
        if r.realloc_active {
            "active"
        } else {
            "not active"
        }
    );
    let f = &r.firmware;
    let _ = writeln!(
        s,
        "  firmware: {} ({}), platform {}{}",
        f.kind.as_str(),
        f.bios_vendor.as_deref().unwrap_or("unknown vendor"),
        f.platform.as_str(),
        match f.platform_confidence {
            Some(c) => format!(
                " ({} confidence: {})",
                c.as_str(),
                f.platform_signs.join("; ")
            ),
            None => " (no DMI, hypervisor or device sign in the input)".to_string(),
        }
    );
    if let Some(fw) = &f.fw_cfg {
        let _ = writeln!(s, "  fw_cfg:   {}", crate::report::fw_cfg::text(fw));
    }
}

/// `OVMF's dynamic window: 128 GiB at 0xe000000000, the top eighth of 40
/// bits (edk2-stable202211 rules)`; `None` when nothing is known.
fn origin_line(o: &crate::decide::origin::WindowOrigin) -> Option<String> {
    use crate::decide::window::OriginKind as K;
    let what = match o.kind {
        K::OvmfDynamic => "OVMF's window, the top eighth of its address width",
        K::OvmfClassic => "OVMF's classic window above RAM (it did not trust the vCPU's width)",
        K::OvmfMmio64 => "OVMF's window of the size X-PciMmio64Mb gives",
        K::SeabiosAboveRam => "SeaBIOS placed the BARs right above RAM",
        K::SeabiosTop => "SeaBIOS placed the BARs at the top of the address space",
        K::SeabiosBelow4g => "SeaBIOS placed the 64-bit BARs below 4 GiB (they fit there)",
        K::BareMetal | K::Hypervisor | K::Unknown => return None,
    };
    let mut s = what.to_string();
    if let (Some(start), Some(size)) = (o.aperture_start, o.aperture_bytes) {
        s.push_str(&format!(": {} at {start:#x}", human(size)));
    }
    if let Some(w) = o.firmware_width_bits {
        s.push_str(&format!(", {w} address bits"));
    }
    if let Some(h) = o.hole64_bytes {
        s.push_str(&format!(", QEMU's hole {}", human(h)));
    }
    if let Some(r) = o.rules {
        s.push_str(&format!(" ({r})"));
    }
    if o.model_agrees == Some(false) {
        s.push_str("; the model does not reproduce this window: its predictions are estimates");
    }
    for f in &o.facts {
        s.push_str(&format!("; {f}"));
    }
    Some(s)
}

/// The closing lines of a text report, `check`'s and `plan`'s alike.
pub(crate) fn hints_and_warnings(s: &mut String, hints: &[Hint], warnings: &[String]) {
    if !hints.is_empty() {
        let _ = writeln!(s, "hints:");
        for h in hints {
            let _ = writeln!(s, "  [{}] {}", h.id, h.text);
        }
    }
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
}
