//! Entry points for the fuzz targets in `fuzz/` (see fuzz/README.md): one
//! function per target, bytes in. Each turns the bytes into text as the
//! program does (files are read lossily), runs the parsers, and asserts what
//! must hold for any input, so that the fuzzer finds wrong answers as well
//! as panics. Not an API: hidden, and free to change with the parsers.

use crate::evidence::text::gather;
use crate::model::bar::Bar;
use crate::model::pci::{PciAddress, RootBus};
use crate::model::range::{Range, FOUR_GIB};
use crate::parse::address::root_bus;
use crate::parse::kernel_log::{self, Event, LogResource, ResourceRef};
use crate::parse::settings::{parse_timeout, Settings, MAX_TIMEOUT_TENTHS};
use crate::parse::{cmdline, libvirt, lspci, platform, procfs, proxmox, qemu_args, resource};
use crate::report::{self, Mode, Verdict};
use std::borrow::Cow;

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
    let r = report::conclude(
        std::time::Instant::now(),
        Mode::Explain,
        &ev,
        Vec::new(),
        None,
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
    assert!(
        r.unassigned.is_empty() || r.verdict == Verdict::Fail,
        "verdict {:?} with unassigned {:?}",
        r.verdict,
        r.unassigned
    );
    assert!(r.verdict != Verdict::Ok || r.unassigned.is_empty());
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
        Event::Probed { bdf, res, resource } | Event::Assigned { bdf, res, resource } => {
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
        Event::NotCpuAddressable(r) | Event::E820Usable(r) => check_range(*r),
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

/// No quote and no separator: a parameter that prints back as it was.
fn plain(s: &str) -> bool {
    !s.bytes()
        .any(|b| matches!(b, b'"' | b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
}

/// The kernel command line.
pub fn cmdline(data: &[u8]) {
    let t = text(data);
    let params = cmdline::parameters(&t);
    let _ = cmdline::values(&params, "pci").count();
    let _ = cmdline::realloc_active(&t);
    for (k, _) in cmdline::gpu_preflight_settings(&t) {
        assert!(!k.is_empty() && !k.contains('-'), "{k:?}");
    }
    // A `pci=realloc` that parses as the last parameter wins; so does
    // `pci=realloc=off`.
    for (extra, on) in [("realloc", true), ("realloc=off", false)] {
        let more = format!("{t} pci={extra}");
        let last = cmdline::parameters(&more).pop();
        if last == Some(("pci".to_string(), Some(extra.to_string()))) {
            assert_eq!(cmdline::realloc_active(&more), on, "{more:?}");
        }
    }
    // Plain parameters, printed back, parse the same.
    if params
        .iter()
        .all(|(k, v)| plain(k) && v.as_deref().is_none_or(plain))
    {
        let joined: Vec<String> = params
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect();
        assert_eq!(cmdline::parameters(&joined.join(" ")), params);
    }
}

/// `/etc/gpu-preflight.conf`, then (after a NUL byte, if any) the kernel
/// command line.
pub fn settings(data: &[u8]) {
    let t = text(data);
    let (file, line) = t.split_once('\0').unwrap_or((&t, ""));
    let (s, warnings) = Settings::parse(Some(file), "gpu-preflight.conf", line);
    assert!((1..=MAX_TIMEOUT_TENTHS).contains(&s.timeout_tenths));
    assert_ne!(s.expect, Some(0));
    assert!(s.textfile_dir.as_ref().is_none_or(|p| p.is_absolute()));
    let most = file.lines().count() + cmdline::gpu_preflight_settings(line).len();
    assert!(warnings.len() <= most, "{warnings:?}");
    let (_, _) = Settings::parse(None, "gpu-preflight.conf", line);
    for l in file.lines() {
        let v = l.split_once('=').map_or(l, |(_, v)| v).trim();
        if let Ok(tenths) = parse_timeout(v) {
            assert!((1..=MAX_TIMEOUT_TENTHS).contains(&tenths), "{v:?}");
            let again = format!("{}.{}", tenths / 10, tenths % 10);
            assert_eq!(parse_timeout(&again), Ok(tenths), "{v:?}");
        }
    }
}

/// A function in sysfs: byte 0 says whether there is a config space
/// (bit 7 clear) and how long it is (low 7 bits, at most 64); that many
/// bytes follow, then the `resource` file's text.
pub fn sysfs_bars(data: &[u8]) {
    let Some((&flag, rest)) = data.split_first() else {
        return;
    };
    let (config, rest) = if flag & 0x80 == 0 {
        let n = usize::from(flag & 0x7f).min(64).min(rest.len());
        (Some(&rest[..n]), &rest[n..])
    } else {
        (None, rest)
    };
    let t = text(rest);
    let (lines, errors) = resource::parse_resource(&t);
    assert_eq!(lines.len(), t.lines().count());
    assert_eq!(errors.len(), lines.iter().filter(|l| l.is_none()).count());
    for r in lines.iter().flatten() {
        let printed = format!("0x{:016x} 0x{:016x} 0x{:016x}", r.start, r.end, r.flags);
        let (again, bad) = resource::parse_resource(&printed);
        assert!(bad.is_empty());
        assert_eq!(again, vec![Some(*r)], "resource line round trip");
    }
    if let Some(c) = config {
        let h = resource::header_type(c);
        assert_eq!(h.is_some(), c.len() > 0x0e);
        assert!(h.is_none_or(|h| h < 0x80));
    }
    for cfg in [config, None] {
        let bars = resource::decode_bars(cfg, &lines);
        bars.iter().for_each(|b| check_bar(b, true));
        assert!(
            bars.windows(2).all(|w| w[0].index < w[1].index),
            "BARs out of order: {bars:?}"
        );
        let most = match cfg.filter(|c| c.len() >= 0x28).map(resource::header_type) {
            Some(Some(1)) => 2,
            Some(Some(2)) => 1,
            Some(Some(h)) if h != 0 => 0,
            _ => 6,
        };
        assert!(bars.iter().all(|b| usize::from(b.index) < most), "{bars:?}");
    }
    let windows = resource::bridge_windows(&lines);
    assert!(windows.len() <= 4);
    for w in &windows {
        check_range(w.range);
        assert_ne!(w.range.start, 0);
    }
}

/// `/proc/iomem`.
pub fn iomem(data: &[u8]) {
    let t = text(data);
    let windows = procfs::iomem_root_windows(&t);
    let ram_end = procfs::iomem_ram_end(&t);
    if let Some(e) = ram_end {
        assert!(e > 0);
    }
    match windows {
        Err(_) => assert_eq!(ram_end, None, "the same text parsed once and not twice"),
        Ok(None) => {}
        Ok(Some(ws)) => {
            for (r, bus) in ws {
                check_range(r);
                assert!(r.start >= FOUR_GIB, "{r:?}");
                if let Some(b) = bus {
                    check_bus(b);
                }
            }
        }
    }
}

/// `/proc/cpuinfo`, and the same text as a boot log's DMI and EFI lines.
pub fn cpuinfo(data: &[u8]) {
    let t = text(data);
    let cpu = procfs::cpuinfo(&t);
    assert!(cpu.phys_bits.is_none_or(|b| (1..=64).contains(&b)));
    let fw = platform::firmware_from_log(&t);
    let _ = (fw.kind(), fw.platform(), fw.qemu_machine());
    if let Some(v) = &fw.sys_vendor {
        assert!(!v.is_empty() && v.trim() == v, "{v:?}");
    }
}

/// QEMU argument lines: words quoted back split the same, and a line with
/// the window settings taken out has none left.
fn check_words(line: &str) {
    let ws = qemu_args::words(line);
    let _ = qemu_args::window_args(&ws);
    let again: Vec<String> = ws.iter().map(|w| qemu_args::quote(w)).collect();
    assert_eq!(qemu_args::words(&again.join(" ")), ws, "{again:?}");
    let rest = qemu_args::without_window_args(line, true, true);
    if let Ok(w) = qemu_args::window_args(&qemu_args::words(&rest)) {
        assert_eq!(w, qemu_args::WindowArgs::default(), "{rest:?}");
    }
}

/// `plan`'s host-side inputs. Byte 0 picks the parser: `p` a Proxmox VM
/// configuration, `c` its `cpu:` value, `m` a `pci.cfg` (then a line with
/// the mapping's name, a line with the node), `l` a libvirt domain, `q` a
/// QEMU argument line, `s` a size, `M` a `cpu-models.conf` after a line
/// with the model's name; any other byte picks one by its value.
pub fn host_config(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let t = text(rest);
    let which = match which {
        b'p' => 0,
        b'c' => 1,
        b'm' => 2,
        b'l' => 3,
        b'q' => 4,
        b's' => 5,
        b'M' => 6,
        b => b % 7,
    };
    match which {
        0 => {
            if let Ok(c) = proxmox::parse_config(&t) {
                if let Some(cpu) = &c.cpu {
                    check_phys_bits(cpu);
                }
                for h in &c.hostpci {
                    assert!(!h.hosts.is_empty() || h.mapping.is_some(), "{h:?}");
                }
                if let Some(a) = &c.args {
                    check_words(a);
                }
            }
        }
        1 => {
            if let Ok(cpu) = proxmox::parse_cpu(&t) {
                check_phys_bits(&cpu);
            }
        }
        2 => {
            let mut lines = t.splitn(3, '\n');
            let name = lines.next().unwrap_or("");
            let node = lines.next().filter(|n| !n.is_empty());
            let _ = proxmox::mapping_paths(lines.next().unwrap_or(""), name, node);
        }
        3 => {
            if let Ok(d) = libvirt::parse_domain(&t) {
                assert!(d.cpu.phys_bits.is_none_or(|b| (8..=64).contains(&b)));
                for h in &d.hostdevs {
                    let a: PciAddress = h.parse().expect("a hostdev is an address");
                    assert_eq!(&a.to_string(), h);
                }
            }
        }
        4 => check_words(&t),
        6 => {
            let (name, conf) = t.split_once('\n').unwrap_or((&t, ""));
            if let Ok(Some(cpu)) = proxmox::custom_cpu_model(conf, name) {
                check_phys_bits(&cpu);
            }
        }
        _ => {
            if let Ok(n) = crate::parse::size::size(&t) {
                assert_eq!(crate::parse::size::size(&n.to_string()), Ok(n), "{t:?}");
            }
        }
    }
}

/// Peer-to-peer inputs. Byte 0 `c`: the rest is a config space (the
/// capability walk, the clique, where QEMU would place it); `v` a Proxmox
/// VM configuration, `x` a libvirt domain (`plan --p2p`); anything else:
/// the rest is text: pasted `nvidia-smi topo` matrices, NCCL logs and QEMU
/// warnings (`explain`), and an `nccl.conf`.
pub fn p2p(data: &[u8]) {
    use crate::model::p2p::CliqueCap;
    use crate::parse::{nccl, p2p_text, pci_caps};
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    if which == b'c' {
        if let Some(caps) = pci_caps::capabilities(rest) {
            assert!(caps.len() <= 48);
            assert!(caps
                .iter()
                .all(|c| c.offset >= 0x40 && c.offset % 4 == 0 && c.id != 0xff));
        }
        match pci_caps::clique_cap(rest) {
            CliqueCap::Found {
                offset,
                clique,
                version,
            } => {
                assert!(clique < 32 && version < 8);
                let at = usize::from(offset);
                assert_eq!(&rest[at + 3..at + 6], b"P2P");
            }
            CliqueCap::Unreadable { bytes } => assert_eq!(bytes, rest.len()),
            CliqueCap::Absent => {}
        }
        if let Some(p) = pci_caps::clique_placement(rest) {
            assert!(p.offset.is_some() || !p.c8_free);
        }
        return;
    }
    let t = text(rest);
    if which == b'v' || which == b'x' {
        use crate::parse::p2p_vm;
        let vm = if which == b'v' {
            p2p_vm::proxmox(&t)
        } else {
            match p2p_vm::libvirt(&t) {
                Ok(v) => v,
                Err(_) => return,
            }
        };
        for (id, _) in &vm.cliques {
            assert!(!id.contains('.'), "a -set id holds no dot: {id:?}");
        }
        let kept = p2p_vm::args_without_cliques(&vm.args);
        assert!(
            p2p_vm::set_cliques(&qemu_args::words(&kept)).is_empty(),
            "{kept:?}"
        );
        return;
    }
    let p = p2p_text::parse(&t);
    // The judgement of what was parsed must not fail either.
    let _ = crate::decide::p2p::from_text(&p, false, None);
    assert!(p.paths.iter().all(|(a, b, _)| a != b), "{p:?}");
    assert!(p.p2p_read.iter().all(|(a, b, _)| a != b), "{p:?}");
    if newline_is_neutral(&t) {
        assert_eq!(p2p_text::parse(&format!("{t}\n")), p, "a trailing newline");
    }
    for (k, v) in nccl::parse_conf(&t) {
        assert!(k.starts_with("NCCL_") && !k.contains(char::is_whitespace));
        let _ = nccl::level_setting(Some(&v), Some(&v));
    }
}

fn check_phys_bits(cpu: &proxmox::PveCpu) {
    if let Some(proxmox::PhysBits::Bits(b)) = cpu.phys_bits {
        assert!((8..=64).contains(&b), "{cpu:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Target = fn(&[u8]);

    const TARGETS: [(&str, Target); 10] = [
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
