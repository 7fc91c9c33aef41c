//! The Prometheus form, for node_exporter's textfile collector. Every
//! series is a gauge.

use crate::decide::diagnosis::DiagnosisKind;
use crate::report::{Report, Verdict};
use std::fmt::Write as _;

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The textfile, all series.
pub(crate) fn render(r: &Report) -> String {
    let mut s = String::new();
    let mut metric = |name: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(s, "# HELP gpu_preflight_{name} {help}");
        let _ = writeln!(s, "# TYPE gpu_preflight_{name} gauge");
        for (labels, v) in samples {
            let _ = writeln!(s, "gpu_preflight_{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    metric(
        "ok",
        "1 when every selected GPU is present with every memory BAR assigned.",
        &one(f64::from(u8::from(r.verdict == Verdict::Ok))),
    );
    metric(
        "diagnosis",
        "The diagnosis, one series per kind, 1 for the current one.",
        &DiagnosisKind::ALL
            .iter()
            .map(|k| {
                (
                    format!("{{diagnosis=\"{}\"}}", k.as_str()),
                    f64::from(u8::from(*k == r.diagnosis)),
                )
            })
            .collect::<Vec<_>>(),
    );
    metric("gpus_found", "Selected GPUs present.", &one(r.found as f64));
    if let Some(e) = r.expected {
        metric(
            "gpus_expected",
            "GPUs that must be present.",
            &one(e as f64),
        );
    }
    metric(
        "unassigned_bars",
        "Memory BARs of selected GPUs without an address.",
        &one(r.unassigned.len() as f64),
    );
    metric(
        "realloc_active",
        "1 when the kernel command line has pci=realloc.",
        &one(f64::from(u8::from(r.realloc_active))),
    );
    if let Some(n) = r.capacity.needed_bytes {
        metric(
            "needed_bytes",
            "64-bit prefetchable space the selected GPUs need.",
            &one(n as f64),
        );
    }
    if let Some(w) = r.capacity.window_bytes {
        metric(
            "window_bytes",
            "Size of the 64-bit root bus windows.",
            &one(w as f64),
        );
    }
    if let Some(b) = r.capacity.phys_bits {
        metric(
            "phys_bits",
            "CPU physical address bits.",
            &one(f64::from(b)),
        );
    }
    metric(
        "check_duration_seconds",
        "Time the check took to read and decide.",
        &one(r.elapsed_ms as f64 / 1000.0),
    );
    metric(
        "gpu_ok",
        "1 when this GPU has every memory BAR assigned.",
        &r.gpus
            .iter()
            .map(|g| {
                (
                    format!(
                        "{{bdf=\"{}\",vendor=\"{}\",device=\"{}\",name=\"{}\"}}",
                        g.bdf,
                        g.vendor.as_deref().unwrap_or(""),
                        g.device.as_deref().unwrap_or(""),
                        label(g.name.as_deref().unwrap_or(""))
                    ),
                    f64::from(u8::from(g.ok)),
                )
            })
            .collect::<Vec<_>>(),
    );
    metric(
        "hint",
        "Hints given, by id.",
        &r.hints
            .iter()
            .map(|h| (format!("{{id=\"{}\"}}", h.id), 1.0))
            .collect::<Vec<_>>(),
    );
    crate::report::cause::prometheus(r.unplaced_by_configuration.as_ref(), &mut s);
    if let Some(p) = &r.p2p {
        crate::report::p2p::prometheus(p, &mut s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("plain"), "plain");
        assert_eq!(label("a\"b"), "a\\\"b");
        assert_eq!(label("a\\b"), "a\\\\b");
        assert_eq!(label("a\nb"), "a\\nb");
    }
}
