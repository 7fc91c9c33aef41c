//! The targets of a system's files: the kernel command line and the
//! settings, a sysfs function's BARs, `/proc/iomem`, `/proc/cpuinfo`, the
//! fw_cfg files.

use super::{check_bar, check_bus, check_range, text};
use crate::model::fw_cfg::MMIO64_MAX_MB;
use crate::model::range::FOUR_GIB;
use crate::parse::settings::{parse_timeout, Settings, MAX_TIMEOUT_TENTHS};
use crate::parse::{cmdline, fw_cfg as fwc, platform, procfs, resource};

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
    // What the windows hold lies in a window, as the same text gives it.
    let children = procfs::iomem_window_children(&t);
    for r in &children {
        let held = matches!(&windows, Ok(Some(ws))
            if ws.iter().any(|(w, _)| w.start <= r.start && r.end <= w.end));
        assert!(r.start <= r.end && held, "{r:?} in {windows:?}");
    }
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

/// A fw_cfg file as `qemu_fw_cfg` shows it: byte 0 picks which (its value
/// mod 4: `X-PciMmio64Mb`, SeaBIOS's `pci64`, `reserved-memory-end`,
/// `e820`), the rest is the file's bytes.
pub fn fw_cfg(data: &[u8]) {
    let Some((&which, raw)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(mb) = fwc::ovmf_mmio64_mb(raw) {
                assert!(mb <= MMIO64_MAX_MB, "{mb}");
                // Printed back as QEMU's `string=` would hold it, the same.
                assert_eq!(fwc::ovmf_mmio64_mb(format!("{mb}").as_bytes()), Ok(mb));
                assert_eq!(fwc::ovmf_mmio64_mb(format!("{mb}\n").as_bytes()), Ok(mb));
            }
        }
        1 => {
            if let Some(on) = fwc::seabios_pci64(raw) {
                let word = raw.split(|&b| b == 0).next().unwrap_or_default();
                assert!(
                    matches!(word, b"1" | b"on" | b"yes" | b"0" | b"off" | b"no"),
                    "{word:?}"
                );
                assert_eq!(on, matches!(word, b"1" | b"on" | b"yes"));
            }
        }
        2 => {
            let r = fwc::reserved_memory_end(raw);
            assert_eq!(r.is_ok(), raw.len() == 8, "{r:?}");
        }
        _ => match fwc::e820(raw) {
            Ok(map) => {
                assert_eq!(map.len() * 20, raw.len());
                assert!(!map.is_empty());
                let back: Vec<u8> = map
                    .iter()
                    .flat_map(|e| {
                        let mut b = e.start.to_le_bytes().to_vec();
                        b.extend_from_slice(&e.length.to_le_bytes());
                        b.extend_from_slice(&e.kind.to_le_bytes());
                        b
                    })
                    .collect();
                assert_eq!(back, raw, "e820 round trip");
            }
            Err(_) => assert!(raw.is_empty() || raw.len() % 20 != 0),
        },
    }
}
