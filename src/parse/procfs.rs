//! `/proc/iomem` and `/proc/cpuinfo`: the root bus windows the firmware
//! offered, and the CPU's physical address bits.

use crate::model::pci::RootBus;
use crate::model::platform::{Cpu, CpuVendor};
use crate::model::range::Range;
use crate::parse::address::root_bus;
use procfs_core::FromBufRead;

/// A root bus window and the root bus it belongs to, when known.
pub(crate) type RootWindow = (Range, Option<RootBus>);

/// The root bus windows above 4 GiB listed in `/proc/iomem` as top-level
/// `PCI Bus dddd:bb` entries, with their root bus. An unprivileged reader
/// sees every address as zero: that yields `None` (unknown), while real
/// addresses with no window above 4 GiB yield an empty list.
pub(crate) fn iomem_root_windows(text: &str) -> Result<Option<Vec<RootWindow>>, String> {
    let iomem = procfs_core::Iomem::from_buf_read(text.as_bytes()).map_err(|e| e.to_string())?;
    if iomem.0.iter().all(|(_, m)| m.address == (0, 0)) {
        return Ok(None);
    }
    Ok(Some(
        iomem
            .0
            .iter()
            .filter(|(indent, m)| *indent == 0 && m.name.starts_with("PCI Bus "))
            .filter_map(|(_, m)| {
                let r = Range::new(m.address.0, m.address.1).above_4g()?;
                Some((r, root_bus(&m.name["PCI Bus ".len()..])))
            })
            .collect(),
    ))
}

/// What the 64-bit root bus windows in `/proc/iomem` already hold: the
/// entries right under each top-level `PCI Bus` window above 4 GiB (a
/// device's BAR, a bridge's window, a `Reserved` range the kernel keeps
/// out, QEMU's AMD HyperTransport range among them), each cut to its
/// window's part above 4 GiB (`iomem_root_windows`). Empty when the
/// addresses read as zero or the text does not parse.
pub(crate) fn iomem_window_children(text: &str) -> Vec<Range> {
    let Ok(iomem) = procfs_core::Iomem::from_buf_read(text.as_bytes()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut window: Option<Range> = None;
    for (indent, m) in &iomem.0 {
        if *indent == 0 {
            window = m
                .name
                .starts_with("PCI Bus ")
                .then(|| Range::new(m.address.0, m.address.1).above_4g())
                .flatten();
        } else if let Some(w) = window.filter(|_| *indent == 1) {
            let (s, e) = (m.address.0.max(w.start), m.address.1.min(w.end));
            if s <= e && m.address.1 >= m.address.0 && m.address.1 > 0 {
                out.push(Range::new(s, e));
            }
        }
    }
    out
}

/// The end (exclusive) of the highest `System RAM` range: where the
/// firmware starts looking for room for its 64-bit window. `None` when the
/// addresses read as zero (an unprivileged reader) or there is no RAM line.
pub(crate) fn iomem_ram_end(text: &str) -> Option<u64> {
    let iomem = procfs_core::Iomem::from_buf_read(text.as_bytes()).ok()?;
    iomem
        .0
        .iter()
        .filter(|(indent, m)| *indent == 0 && m.name == "System RAM" && m.address.1 > 0)
        .map(|(_, m)| m.address.1.saturating_add(1))
        .max()
}

/// The first processor's `address sizes`, `vendor_id` and flags.
pub(crate) fn cpuinfo(text: &str) -> Cpu {
    let mut cpu = Cpu::default();
    if !text.contains("processor") {
        return cpu;
    }
    let Ok(info) = procfs_core::CpuInfo::from_buf_read(text.as_bytes()) else {
        return cpu;
    };
    cpu.phys_bits = info
        .get_field(0, "address sizes")
        .and_then(|f| f.split_whitespace().next()?.parse().ok())
        .filter(|b| (1..=64).contains(b));
    cpu.vendor = info.get_field(0, "vendor_id").map(|v| match v.trim() {
        "AuthenticAMD" | "HygonGenuine" => CpuVendor::Amd,
        "GenuineIntel" => CpuVendor::Intel,
        _ => CpuVendor::Other,
    });
    if let Some(flags) = info.get_field(0, "flags") {
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        cpu.pdpe1gb = Some(has("pdpe1gb"));
        cpu.hypervisor = Some(has("hypervisor"));
    }
    cpu
}

#[cfg(test)]
fn cpuinfo_phys_bits(text: &str) -> Option<u32> {
    cpuinfo(text).phys_bits
}

#[cfg(test)]
mod tests {
    use super::*;

    const IOMEM: &str = "00000000-00000fff : Reserved
00001000-0009ffff : System RAM
80000000-afffffff : PCI Bus 0000:00
  80000000-800fffff : PCI Bus 0000:01
e000000000-f89fffffff : PCI Bus 0000:00
  e000000000-e7ffffffff : PCI Bus 0000:01
    e000000000-e7ffffffff : 0000:01:00.0
";

    #[test]
    fn iomem_yields_top_level_64bit_root_windows() {
        let w = iomem_root_windows(IOMEM).unwrap().unwrap();
        let r = Range::new(0xe0_0000_0000, 0xf8_9fff_ffff);
        assert_eq!(w, vec![(r, Some(RootBus { domain: 0, bus: 0 }))]);
        // Real addresses, nothing above 4 GiB: known to be empty.
        let low = "80000000-afffffff : PCI Bus 0000:00\n";
        assert_eq!(iomem_root_windows(low).unwrap(), Some(vec![]));
    }

    #[test]
    fn what_the_64bit_windows_hold() {
        // Campaign seed 20261203 record 0282 (SeaBIOS 1.17.0, AMD, 40 bits,
        // realloc): a GPU's 256 GiB BAR, the bridges' windows and QEMU's
        // HT range under the 768 GiB window; what is nested deeper, and
        // what lies under the window below 4 GiB, is not listed.
        let t = "c0000000-febfffff : PCI Bus 0000:00\n  f8000000-f9ffffff : 0000:00:10.2\n4000000000-ffffffffff : PCI Bus 0000:00\n  4000000000-7fffffffff : 0000:00:11.0\n  8000000000-801fffffff : PCI Bus 0000:02\n    8000000000-800fffffff : 0000:02:01.0\n  fd00000000-ffffffffff : Reserved\n";
        assert_eq!(
            iomem_window_children(t),
            vec![
                Range::new(0x40_0000_0000, 0x7f_ffff_ffff),
                Range::new(0x80_0000_0000, 0x80_1fff_ffff),
                Range::new(0xfd_0000_0000, 0xff_ffff_ffff),
            ]
        );
        assert!(iomem_window_children(
            "00000000-00000000 : PCI Bus 0000:00\n  00000000-00000000 : Reserved\n"
        )
        .is_empty());
        assert!(iomem_window_children("garbage").is_empty());
    }

    #[test]
    fn unprivileged_iomem_gives_no_windows() {
        let zeroed = "00000000-00000000 : PCI Bus 0000:00\n  00000000-00000000 : 0000:00:01.0\n";
        assert_eq!(iomem_root_windows(zeroed).unwrap(), None);
        assert!(iomem_root_windows("garbage").is_err());
    }

    #[test]
    fn ram_end_from_iomem() {
        let t = "00001000-0009ffff : System RAM\n00100000-7fffffff : System RAM\n  01000000-01ffffff : Kernel code\n100000000-27fffffff : System RAM\ne000000000-f89fffffff : PCI Bus 0000:00\n";
        assert_eq!(iomem_ram_end(t), Some(0x2_8000_0000));
        assert_eq!(iomem_ram_end("00000000-00000000 : System RAM\n"), None);
        assert_eq!(iomem_ram_end(IOMEM), Some(0xa_0000));
    }

    #[test]
    fn cpu_vendor_and_flags() {
        let t = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu pse pdpe1gb lm hypervisor\naddress sizes\t: 46 bits physical, 48 bits virtual\n";
        let c = cpuinfo(t);
        assert_eq!(c.phys_bits, Some(46));
        assert_eq!(c.vendor, Some(CpuVendor::Amd));
        assert_eq!((c.pdpe1gb, c.hypervisor), (Some(true), Some(true)));
        let c = cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu lm\n");
        assert_eq!(
            (c.vendor, c.pdpe1gb, c.phys_bits),
            (Some(CpuVendor::Intel), Some(false), None)
        );
        assert_eq!(cpuinfo("garbage"), Cpu::default());
    }

    #[test]
    fn phys_bits_from_cpuinfo() {
        let t = "processor\t: 0\nvendor_id\t: AuthenticAMD\naddress sizes\t: 40 bits physical, 48 bits virtual\n\nprocessor\t: 1\naddress sizes\t: 40 bits physical, 48 bits virtual\n";
        assert_eq!(cpuinfo_phys_bits(t), Some(40));
        assert_eq!(cpuinfo_phys_bits("processor : 0\n"), None);
        assert_eq!(cpuinfo_phys_bits(""), None);
        assert_eq!(
            cpuinfo_phys_bits("processor : 0\naddress sizes : 999 bits physical\n"),
            None
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn iomem_and_cpuinfo_parsers_never_panic(text in "\\PC{0,300}", bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = iomem_root_windows(&text);
            let _ = iomem_ram_end(&text);
            let _ = cpuinfo(&text);
            let lossy = String::from_utf8_lossy(&bytes);
            let _ = iomem_root_windows(&lossy);
            let _ = iomem_ram_end(&lossy);
            let _ = cpuinfo(&lossy);
        }

        #[test]
        fn iomem_windows_round_trip(ranges in proptest::collection::vec((1u64 << 32..1u64 << 52, 1u64..1u64 << 40), 0..6)) {
            let text: String = ranges.iter().enumerate()
                .map(|(i, (s, len))| format!("{:x}-{:x} : PCI Bus 0000:{:02x}\n  {:x}-{:x} : 0000:{:02x}:00.0\n", s, s + len - 1, i, s, s, i + 1))
                .collect();
            let w = iomem_root_windows(&text).unwrap().unwrap_or_default();
            prop_assert_eq!(w.len(), ranges.len());
            for (i, ((r, bus), (s, len))) in w.iter().zip(&ranges).enumerate() {
                prop_assert_eq!((r.start, r.size()), (*s, *len));
                prop_assert_eq!(*bus, Some(RootBus { domain: 0, bus: i as u8 }));
            }
        }
    }
}
