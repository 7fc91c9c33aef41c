//! The targets of saved and live kernel logs and lspci text: `explain`
//! end to end, the log parser, the lspci parser.

use super::{check_bar, check_bdf, check_bus, check_range, newline_is_neutral, text};
use crate::evidence::text::gather;
use crate::parse::kernel_log::{self, Event, LogResource, ResourceRef};
use crate::parse::lspci;
use crate::report::{self, Mode, Verdict};

/// `explain` on one text, as `explain FILE` runs it: gather the evidence,
/// decide, and render the report as text, JSON, Prometheus and kernel-log
/// records.
pub fn explain(data: &[u8]) {
    // `commands::explain::run` after reading: lossy, newline-terminated.
    let mut t = text(data).into_owned();
    if !t.ends_with('\n') {
        t.push('\n');
    }
    let Some(ev) = gather(&t, &[], None) else {
        return;
    };
    for g in &ev.gpus {
        check_bdf(g.addr);
        g.bars.iter().for_each(|b| check_bar(b, false));
    }
    let r = report::build(
        std::time::Instant::now(),
        Mode::Explain,
        &ev,
        crate::decide::conclude(&ev, None),
        Vec::new(),
    );
    let text = report::text::render(&r);
    let json = report::json::render(&r);
    let _ = report::prometheus::render(&r);
    let records = report::kmsg::records(&r);
    assert!(text.starts_with("gpu-preflight: "), "{text}");
    assert!(records.len() <= report::kmsg::MAX_RECORDS);
    let v: serde_json::Value = serde_json::from_str(&json).expect("the JSON report parses");
    assert_eq!(v["found"].as_u64(), Some(r.gpus.len() as u64));
    assert_eq!(r.found, r.gpus.len());
    // With no expected count, a memory BAR left without an address fails
    // the report, and an OK report has none. A report can fail with none
    // listed (a driver's complaint, Hyper-V's MMIO note, Region lines
    // without their device), or be unknown (no address evidence).
    // A device the evidence shows is no GPU (its class, a non-zero
    // function) is listed without failing the report.
    let gpu_side: Vec<_> = r
        .unassigned
        .iter()
        .filter(|u| {
            !ev.other_failed
                .iter()
                .any(|o| o.bdf == u.bdf && o.not_gpu.is_some())
        })
        .collect();
    // Only devices that show no BAR a GPU has (each under 1 MiB) failed:
    // whether a GPU did is unknown.
    let small_only = !gpu_side.is_empty()
        && gpu_side.iter().all(|u| {
            ev.other_failed
                .iter()
                .any(|o| o.bdf == u.bdf && o.small && o.not_gpu.is_none())
        });
    assert!(
        gpu_side.is_empty()
            || r.verdict == Verdict::Fail
            || (small_only && r.verdict == Verdict::Unknown),
        "verdict {:?} with unassigned {:?}",
        r.verdict,
        r.unassigned
    );
    assert!(r.verdict != Verdict::Ok || gpu_side.is_empty());
    for g in &r.gpus {
        assert_eq!(g.ok, g.bars.iter().all(|b| b.io || b.assigned));
        for b in g.bars.iter().filter(|b| !b.io && !b.assigned) {
            assert!(
                r.unassigned
                    .iter()
                    .any(|u| u.bdf == g.bdf && u.bar == b.index),
                "{}/BAR{} failed but is not listed",
                g.bdf,
                b.index
            );
        }
    }
}

fn check_resource(r: &LogResource) {
    if let Some(s) = r.start {
        assert_ne!(s, 0, "{r:?}");
        if r.size > 0 {
            assert!(s.checked_add(r.size - 1).is_some(), "{r:?}");
        }
    }
}

fn check_event(e: &Event) {
    match e {
        Event::Function { bdf, class, .. } => {
            check_bdf(*bdf);
            assert!(*class <= 0xff_ffff);
        }
        Event::Probed { bdf, res, resource }
        | Event::Released { bdf, res, resource }
        | Event::Assigned { bdf, res, resource } => {
            check_bdf(*bdf);
            check_ref(*res);
            check_resource(resource);
        }
        Event::AssignFailed {
            bdf, res, resource, ..
        } => {
            check_bdf(*bdf);
            check_ref(*res);
            if let Some(r) = resource {
                check_resource(r);
            }
        }
        Event::RootBusWindow { bus, resource } => {
            check_bus(*bus);
            check_resource(resource);
        }
        Event::NotCpuAddressable(r) | Event::E820Usable(r) | Event::E820Reserved(r) => {
            check_range(*r)
        }
        Event::GpuDriver { bdf, .. } | Event::VgaDevice { bdf } => check_bdf(*bdf),
        Event::NvrmBar { bdf: Some(b), .. } | Event::AmdgpuLargeBar { bdf: Some(b) } => {
            check_bdf(*b)
        }
        Event::CommandLine(c) => assert_eq!(c.trim(), c),
        _ => {}
    }
}

fn check_ref(r: ResourceRef) {
    match r {
        ResourceRef::Bar(i) | ResourceRef::VfBar(i) => assert!(i <= 5, "{r:?}"),
        ResourceRef::Rom | ResourceRef::BridgeWindow => {}
        // parse_log resolves these.
        ResourceRef::Numbered(_) | ResourceRef::SriovNumberedWindow => panic!("unresolved {r:?}"),
    }
}

/// The kernel log parser (`parse_log`; `parse_line` is test-only, and is
/// `parse_log` of one line).
pub fn kernel_log(data: &[u8]) {
    let t = text(data);
    let events = kernel_log::parse_log(&t);
    // A line yields at most two events: its message, and the GPU driver
    // it is printed through.
    assert!(events.len() <= 2 * t.lines().count());
    events.iter().for_each(check_event);
    for line in t.lines() {
        assert!(kernel_log::parse_log(line).len() <= 2, "{line:?}");
    }
    if newline_is_neutral(&t) {
        assert_eq!(kernel_log::parse_log(&format!("{t}\n")), events);
    }
}

/// Saved `lspci -v` text.
pub fn lspci(data: &[u8]) {
    let t = text(data);
    let devices = lspci::parse(&t);
    assert!(devices.len() <= t.lines().count());
    for d in &devices {
        check_bdf(d.bdf);
        let _ = (d.class_code(), d.vendor_id(), d.device_id());
        for r in &d.regions {
            assert!(r.index <= 5, "{r:?}");
        }
    }
    if newline_is_neutral(&t) {
        assert_eq!(lspci::parse(&format!("{t}\n")), devices);
        // E-mail quoting changes nothing: each line is read unquoted.
        let quoted: String = t.lines().map(|l| format!("> {l}\n")).collect();
        assert_eq!(
            lspci::parse(&quoted),
            devices,
            "`> ` quoting changed the result"
        );
    }
}
