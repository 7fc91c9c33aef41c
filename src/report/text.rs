//! The text form, for people: the opening lines (`lead`), the address
//! map (`map`), the diagnosis with its numbers, the hints, the warnings,
//! wrapped to the screen (`wrap`).

use crate::decide::hint::Hint;
use crate::model::bar::BarState;
use crate::model::platform::Confidence;
use crate::model::size::human;
use crate::report::wrap::{wrap, Screen};
use crate::report::{lead, map, Mode, Report, Verdict};
use std::fmt::Write as _;

fn opt_human(v: Option<u64>) -> String {
    v.map(human).unwrap_or_else(|| "unknown".into())
}

pub(crate) fn render(r: &Report) -> String {
    render_for(r, Screen::PLAIN)
}

/// The report for `screen`: the opening lines, the address map (`check`)
/// or the GPUs as the input gave them (`explain`), the diagnosis's
/// numbers, peer-to-peer, the hints; prose wrapped to the width, the map
/// and the line to paste as they are.
pub(crate) fn render_for(r: &Report, screen: Screen) -> String {
    let (lead, paste) = lead::lines(r);
    let mut s = wrap(&lead, screen.width);
    s.push_str(paste.as_deref().unwrap_or(""));
    let mut body = String::new();
    if r.mode == Mode::Explain {
        gpus(r, &mut body);
    } else {
        s.push('\n');
        s.push_str(&map::from_report(r).render(screen.utf8));
        others(r, &mut body);
    }
    diagnosis(r, &mut body);
    if let Some(p) = &r.p2p {
        if r.unassigned.is_empty() {
            crate::report::p2p::text(p, &mut body);
        } else {
            let _ = writeln!(
                body,
                "peer-to-peer: judged once the BARs fit ({} GPUs{})",
                p.gpus.len(),
                p.p2p_path
                    .map(|l| format!(", p2p_path {}", l.as_str()))
                    .unwrap_or_default()
            );
        }
    }
    lead::hints(&mut body, &r.hints);
    hints_and_warnings(&mut body, &[], &r.warnings);
    if !body.is_empty() {
        s.push('\n');
        s.push_str(&wrap(&body, screen.width));
    }
    s
}

/// Each GPU with its BARs (`explain`: the input's account of them), then
/// the devices not taken for GPUs that failed.
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
            // A BAR taken as placed whose address the input does not show
            // (a log cut after enumeration): not "<assigned>", which reads
            // as an address seen.
            let place = match (b.start, b.state) {
                (Some(a), _) => format!("at {a:#x}"),
                (None, BarState::Assigned) => "<address not shown>".to_string(),
                (None, state) => format!("<{}>", state.as_str()),
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
    others(r, s);
}

/// The devices not taken for GPUs that failed.
fn others(r: &Report, s: &mut String) {
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

/// The diagnosis with the numbers behind it: window, origin, CPU and
/// realloc, firmware (the need is in the opening lines' `why`, the whole
/// sentence where it is not cut short).
fn diagnosis(r: &Report, s: &mut String) {
    if r.mode == Mode::Explain && lead::why(r) != r.summary {
        let _ = writeln!(s, "diagnosis: {}: {}", r.diagnosis.as_str(), r.summary);
    }
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
    // The map draws the firmware's window in check's report.
    if let Some(o) = origin_line(&c.window_origin, r.mode == Mode::Check) {
        let _ = writeln!(s, "  origin:   {o}");
    }
    // The map draws the CPU's reach; a healthy report without realloc
    // needs no line for them.
    let drawn = r.mode == Mode::Check && c.phys_bits.is_some();
    if drawn && r.verdict == Verdict::Ok && !r.realloc_active {
        return firmware(r, s);
    }
    let _ = writeln!(
        s,
        "  cpu:      {}; pci=realloc {}",
        c.phys_bits
            .map(|b| format!("{b} physical address bits ({})", human(1u64 << b.min(63))))
            .unwrap_or_else(|| "physical address bits unknown".into()),
        if r.realloc_active {
            "active"
        } else {
            "not active"
        }
    );
    firmware(r, s);
}

/// The firmware and the platform judged, with the signs where in doubt.
fn firmware(r: &Report, s: &mut String) {
    let f = &r.firmware;
    let _ = writeln!(
        s,
        "  firmware: {} ({}), platform {}{}{}",
        f.kind.as_str(),
        f.bios_vendor.as_deref().unwrap_or("unknown vendor"),
        f.platform.as_str(),
        match f.platform_confidence {
            // Sure: said plainly, the signs are in the JSON form; in doubt,
            // the signs are why.
            Some(Confidence::High) if r.mode == Mode::Check => String::new(),
            Some(c) => format!(
                " ({} confidence: {})",
                c.as_str(),
                f.platform_signs.join("; ")
            ),
            None => " (no DMI, hypervisor or device sign in the input)".to_string(),
        },
        f.layer
            .map_or(String::new(), |l| format!(", managed by {}", l.name()))
    );
    if let Some(fw) = &f.fw_cfg {
        let _ = writeln!(s, "  fw_cfg:   {}", crate::report::fw_cfg::text(fw));
    }
}

/// `OVMF's dynamic window: 128 GiB at 0xe000000000, the top eighth of 40
/// bits (edk2-stable202211 rules)`; `None` when nothing is known.
fn origin_line(o: &crate::decide::origin::WindowOrigin, drawn: bool) -> Option<String> {
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
    if let (Some(start), Some(size), false) = (o.aperture_start, o.aperture_bytes, drawn) {
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
