//! Entry points for the fuzz targets in `fuzz/` (see fuzz/README.md): one
//! function per target, bytes in. Each turns the bytes into text as the
//! program does (files are read lossily), runs the parsers, and asserts what
//! must hold for any input, so that the fuzzer finds wrong answers as well
//! as panics. Not an API: hidden, and free to change with the parsers.

use crate::model::bar::Bar;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::range::Range;
use crate::parse::address::root_bus;
use std::borrow::Cow;

mod host;
mod log;
mod system;

pub use host::{host_config, p2p};
pub use log::{explain, kernel_log, lspci};
pub use system::{cmdline, cpuinfo, fw_cfg, iomem, settings, sysfs_bars};

/// What the program makes of a file's bytes (`read_lossy`).
fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Text whose lines are the same with a newline appended (one ending in a
/// lone `\r` is not: `lines()` would then drop the `\r`).
fn newline_is_neutral(t: &str) -> bool {
    !t.ends_with('\r')
}

fn check_bdf(bdf: PciAddress) {
    let back: PciAddress = bdf.to_string().parse().expect("a printed address parses");
    assert_eq!(back, bdf, "address round trip");
}

fn check_bus(bus: RootBus) {
    assert_eq!(root_bus(&bus.to_string()), Some(bus), "root bus round trip");
}

fn check_range(r: Range) {
    assert!(r.end >= r.start, "inverted range {r:?}");
}

/// A BAR of the model: an address only when assigned, a size only with
/// where it came from. From sysfs (`strict`) also: every assigned BAR has
/// an address, and its size is not zero and does not run past 2^64 (the
/// text `explain` reads may say anything of a size).
fn check_bar(b: &Bar, strict: bool) {
    assert!(b.index <= 5, "BAR index {}", b.index);
    assert!(b.start.is_none() || b.assigned(), "{b:?}");
    assert_eq!(b.size.is_some(), b.size_source.is_some(), "{b:?}");
    assert!(
        !b.io || !(b.mem64 || b.prefetchable),
        "an I/O BAR with memory flags: {b:?}"
    );
    if strict {
        assert_eq!(b.assigned(), b.start.is_some(), "{b:?}");
        if let Some(n) = b.size {
            assert!(n > 0, "{b:?}");
            if let Some(s) = b.start {
                assert!(s.checked_add(n - 1).is_some(), "BAR past 2^64: {b:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Target = fn(&[u8]);

    const TARGETS: [(&str, Target); 11] = [
        ("explain", explain),
        ("kernel_log", kernel_log),
        ("lspci", lspci),
        ("cmdline", cmdline),
        ("settings", settings),
        ("sysfs_bars", sysfs_bars),
        ("iomem", iomem),
        ("cpuinfo", cpuinfo),
        ("host_config", host_config),
        ("p2p", p2p),
        ("fw_cfg", fw_cfg),
    ];

    /// The invariants hold on the saved logs (the fuzzers start from them).
    #[test]
    fn every_target_takes_the_corpus_and_nothing() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut inputs: Vec<(String, Vec<u8>)> = vec![
            ("empty".into(), Vec::new()),
            ("a newline".into(), b"\n".to_vec()),
            ("bad UTF-8".into(), vec![0xff, 0xfe]),
        ];
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "txt") {
                inputs.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
        for (name, target) in TARGETS {
            for (what, i) in &inputs {
                let r = std::panic::catch_unwind(|| target(i));
                assert!(r.is_ok(), "fuzz target {name} on {what}");
            }
        }
    }
}
