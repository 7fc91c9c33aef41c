//! A function's `resource` file and the BAR registers in its config space,
//! decoded into the model's BARs and bridge windows with the per-BAR verdict
//! lspci would print.
//!
//! A BAR the kernel failed to place has an all-zero `resource` line, the same
//! as a BAR that does not exist. The BAR register in config space tells them
//! apart: an implemented memory BAR keeps its type bits (0x4 = 64-bit,
//! 0x8 = prefetchable) even when no address was programmed. When the register
//! also holds address bits the firmware programmed an address that the kernel
//! then refused (lspci's `<ignored>`); with no address bits it is plainly
//! `<unassigned>`. Sizes are never probed by writing config space.

use crate::model::bar::{Bar, BarState, BridgeWindow, SizeSource};
use crate::model::range::Range;
use crate::parse::hex::hex_u64;
use std::fmt;

/// `include/linux/ioport.h` flag bits as they appear in `resource`.
pub(crate) mod flags {
    pub(crate) const IO: u64 = 0x100;
    pub(crate) const MEM: u64 = 0x200;
    pub(crate) const PREFETCH: u64 = 0x2000;
    pub(crate) const MEM_64: u64 = 0x10_0000;
    pub(crate) const DISABLED: u64 = 0x1000_0000;
    pub(crate) const UNSET: u64 = 0x2000_0000;
}

/// Resource indices in `resource`: BARs 0-5, ROM 6, then (with SR-IOV
/// compiled in) VF BARs 7-12 and bridge windows 13-16; without SR-IOV the
/// bridge windows follow the ROM directly.
const ROM_INDEX: usize = 6;

/// One line of a `resource` file: `0x%016x 0x%016x 0x%016x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ResourceLine {
    pub start: u64,
    pub end: u64,
    pub flags: u64,
}

impl ResourceLine {
    pub(crate) fn is_empty(&self) -> bool {
        self.start == 0 && self.end == 0 && self.flags == 0
    }

    /// The resource has a size (end >= start and some type flag).
    pub(crate) fn size(&self) -> Option<u64> {
        if self.flags & (flags::IO | flags::MEM) == 0 || self.end < self.start {
            return None;
        }
        (self.end - self.start).checked_add(1)
    }

    /// The kernel placed it: it has an address and is not marked unset.
    pub(crate) fn is_assigned(&self) -> bool {
        self.start != 0
            && self.size().is_some()
            && self.flags & (flags::UNSET | flags::DISABLED) == 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceError {
    pub line: usize,
    pub text: String,
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: not three hex numbers: {:?}",
            self.line + 1,
            self.text
        )
    }
}

/// Parses a `resource` file. A malformed line becomes `None` at its index
/// and an error, so one bad line never hides the others.
pub(crate) fn parse_resource(text: &str) -> (Vec<Option<ResourceLine>>, Vec<ResourceError>) {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, l) in text.lines().enumerate() {
        match parse_resource_line(l) {
            Some(r) => lines.push(Some(r)),
            None => {
                errors.push(ResourceError {
                    line: i,
                    text: l.chars().take(80).collect(),
                });
                lines.push(None);
            }
        }
    }
    (lines, errors)
}

fn parse_resource_line(l: &str) -> Option<ResourceLine> {
    let mut it = l.split_ascii_whitespace().map(hex_u64);
    let r = ResourceLine {
        start: it.next()??,
        end: it.next()??,
        flags: it.next()??,
    };
    if it.next().is_some() {
        return None;
    }
    Some(r)
}

fn dword(config: &[u8], off: usize) -> Option<u32> {
    let b = config.get(off..off + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Header type (config offset 0x0e, multi-function bit masked).
pub(crate) fn header_type(config: &[u8]) -> Option<u8> {
    config.get(0x0e).map(|b| b & 0x7f)
}

/// Number of BAR registers the header layout has.
fn bar_count(header_type: Option<u8>) -> usize {
    match header_type {
        Some(0) | None => 6,
        Some(1) => 2,
        Some(2) => 1,
        Some(_) => 0,
    }
}

const CONFIG_BARS: usize = 0x10;

/// Decodes the standard BARs from the config header and the kernel's
/// `resource` lines. `config` may be the unprivileged 64 bytes, the root's
/// 256, or missing/short: then the resource lines alone decide, and an
/// all-zero line is taken as "not implemented" (we cannot tell otherwise).
pub(crate) fn decode_bars(config: Option<&[u8]>, resources: &[Option<ResourceLine>]) -> Vec<Bar> {
    let config = config.filter(|c| c.len() >= 0x28);
    let count = bar_count(config.and_then(header_type));
    let mut bars = Vec::new();
    let mut i = 0;
    while i < count {
        let res = resources.get(i).copied().flatten().unwrap_or_default();
        let mut reg = config.and_then(|c| dword(c, CONFIG_BARS + 4 * i));
        if reg == Some(0xffff_ffff) {
            // A function that fell off the bus reads all ones.
            reg = Some(0);
        }
        let index = i as u8;
        i += 1;
        let kernel_addr = res.is_assigned().then_some(res.start);
        let res_size = res.size();
        let (io, mem64, prefetchable, hw_addr) = match reg {
            Some(r) if r & 1 == 1 => (true, false, false, u64::from(r & !0x3)),
            Some(r) if r != 0 => {
                let mem64 = (r >> 1) & 0x3 == 0x2;
                let mut hw = u64::from(r & !0xf);
                if mem64 {
                    // The upper half lives in the next register, which
                    // therefore is no BAR of its own.
                    if let Some(hi) = config.and_then(|c| dword(c, CONFIG_BARS + 4 * i)) {
                        hw |= u64::from(hi) << 32;
                    }
                    i += 1;
                }
                (false, mem64, r & 0x8 != 0, hw)
            }
            _ => {
                if res.is_empty() {
                    continue;
                }
                // Contradictory flags (I/O and 64-bit) read as I/O.
                let io = res.flags & flags::IO != 0;
                let mem64 = !io && res.flags & flags::MEM_64 != 0;
                if mem64 && reg.is_none() {
                    i += 1;
                }
                (io, mem64, !io && res.flags & flags::PREFETCH != 0, 0)
            }
        };
        let state = if kernel_addr.is_some() {
            BarState::Assigned
        } else if hw_addr != 0 {
            BarState::Ignored
        } else {
            BarState::Unassigned
        };
        bars.push(Bar {
            index,
            state,
            io,
            mem64,
            prefetchable,
            start: kernel_addr,
            size: res_size,
            size_source: res_size.map(|_| SizeSource::Sysfs),
            type_known: true,
        });
    }
    bars
}

/// The windows of a bridge (header type 1), those the kernel assigned.
pub(crate) fn bridge_windows(resources: &[Option<ResourceLine>]) -> Vec<BridgeWindow> {
    // With SR-IOV compiled in (17 lines) the windows sit at 13..16,
    // otherwise right after the ROM.
    let first = if resources.len() >= 17 {
        13
    } else {
        ROM_INDEX + 1
    };
    resources
        .iter()
        .skip(first)
        .take(4)
        .flatten()
        .filter(|r| r.is_assigned())
        .map(|r| BridgeWindow {
            io: r.flags & flags::IO != 0,
            prefetchable: r.flags & flags::PREFETCH != 0,
            mem64: r.flags & flags::MEM_64 != 0,
            range: Range::new(r.start, r.end),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with_bars(regs: &[u32]) -> Vec<u8> {
        let mut c = vec![0u8; 64];
        for (i, r) in regs.iter().enumerate() {
            c[0x10 + 4 * i..0x14 + 4 * i].copy_from_slice(&r.to_le_bytes());
        }
        c
    }

    const ZERO: &str = "0x0000000000000000 0x0000000000000000 0x0000000000000000";

    #[test]
    fn resource_lines_parse_and_bad_lines_are_kept_apart() {
        let text = format!(
            "0x00000000fe000000 0x00000000feffffff 0x0000000000040200\ngarbage\n{ZERO}\n0x1 0x2\n"
        );
        let (lines, errs) = parse_resource(&text);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].unwrap().size(), Some(0x100_0000));
        assert!(lines[0].unwrap().is_assigned());
        assert!(lines[1].is_none() && lines[3].is_none());
        assert!(lines[2].unwrap().is_empty());
        assert_eq!(errs.iter().map(|e| e.line).collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn failed_64bit_pref_bar_with_address_bits_is_ignored_like_lspci() {
        // ivshmem under OVMF: BAR0 32-bit mem assigned, BAR2 64-bit pref
        // whose upper dword firmware left at 0xfffffff8.
        let cfg = config_with_bars(&[0xfebd_1000, 0, 0x0000_000c, 0xffff_fff8, 0, 0]);
        let res = format!("0x00000000febd1000 0x00000000febd10ff 0x0000000000040200\n{ZERO}\n{ZERO}\n{ZERO}\n{ZERO}\n{ZERO}\n{ZERO}\n");
        let (lines, _) = parse_resource(&res);
        let bars = decode_bars(Some(&cfg), &lines);
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].state, BarState::Assigned);
        assert_eq!(bars[0].size, Some(256));
        assert_eq!(bars[1].index, 2);
        assert_eq!(bars[1].state, BarState::Ignored);
        assert!(bars[1].mem64 && bars[1].prefetchable && bars[1].fails_gpu());
        assert_eq!(bars[1].size, None);
    }

    #[test]
    fn implemented_bar_without_any_address_is_unassigned() {
        let cfg = config_with_bars(&[0, 0, 0x0000_000c, 0, 0, 0]);
        let (lines, _) = parse_resource(&format!("{ZERO}\n{ZERO}\n{ZERO}\n{ZERO}\n"));
        let bars = decode_bars(Some(&cfg), &lines);
        assert_eq!(bars.len(), 1);
        assert_eq!((bars[0].index, bars[0].state), (2, BarState::Unassigned));
    }

    #[test]
    fn assigned_64bit_bar_spans_two_registers() {
        let cfg = config_with_bars(&[0, 0, 0x0000_000c, 0x0000_0020, 0, 0]);
        let res = format!("{ZERO}\n{ZERO}\n0x0000002000000000 0x0000003fffffffff 0x000000000014220c\n{ZERO}\n{ZERO}\n{ZERO}\n");
        let (lines, _) = parse_resource(&res);
        let bars = decode_bars(Some(&cfg), &lines);
        assert_eq!(bars.len(), 1);
        assert_eq!(bars[0].start, Some(0x20_0000_0000));
        assert_eq!(bars[0].size, Some(128 << 30));
        assert!(bars[0].assigned() && bars[0].mem64 && bars[0].prefetchable);
    }

    #[test]
    fn io_bar_never_fails_a_gpu() {
        let cfg = config_with_bars(&[0, 0, 0, 0, 0, 0x0000_0001]);
        let bars = decode_bars(Some(&cfg), &[]);
        assert_eq!(bars.len(), 1);
        assert!(bars[0].io && !bars[0].assigned() && !bars[0].fails_gpu());
    }

    #[test]
    fn without_config_resource_lines_decide() {
        let res = format!("0x00000000fe000000 0x00000000feffffff 0x0000000000040200\n{ZERO}\n0x0000000000000000 0x0000001fffffffff 0x000000002014220c\n");
        let (lines, _) = parse_resource(&res);
        let bars = decode_bars(None, &lines);
        assert_eq!(bars.len(), 2);
        assert!(bars[0].assigned());
        // Marked unset by the kernel but sized: unassigned with a known size.
        assert_eq!(
            (bars[1].index, bars[1].state, bars[1].size),
            (2, BarState::Unassigned, Some(128 << 30))
        );
    }

    #[test]
    fn bridge_header_has_two_bars_and_windows() {
        let mut cfg = config_with_bars(&[0, 0, 0, 0, 0, 0]);
        cfg[0x0e] = 0x01;
        let mut res = vec![ZERO.to_string(); 17];
        res[13] = "0x000000000000c000 0x000000000000cfff 0x0000000000000101".into();
        res[15] = "0x0000002000000000 0x0000003fffffffff 0x0000000000102201".into();
        let (lines, _) = parse_resource(&res.join("\n"));
        assert!(decode_bars(Some(&cfg), &lines).is_empty());
        let w = bridge_windows(&lines);
        assert_eq!(w.len(), 2);
        assert!(w[0].io);
        assert!(w[1].prefetchable && w[1].mem64 && w[1].range.start == 0x20_0000_0000);
    }

    #[test]
    fn all_ones_config_reads_as_absent() {
        let cfg = config_with_bars(&[0xffff_ffff; 6]);
        assert!(decode_bars(Some(&cfg), &[]).is_empty());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn line() -> impl Strategy<Value = ResourceLine> {
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(start, end, flags)| ResourceLine {
            start,
            end,
            flags,
        })
    }

    proptest! {
        #[test]
        fn resource_lines_round_trip(lines in proptest::collection::vec(line(), 0..20)) {
            let text: String = lines.iter().map(|l| format!("0x{:016x} 0x{:016x} 0x{:016x}\n", l.start, l.end, l.flags)).collect();
            let (parsed, errors) = parse_resource(&text);
            prop_assert!(errors.is_empty());
            prop_assert_eq!(parsed, lines.into_iter().map(Some).collect::<Vec<_>>());
        }

        #[test]
        fn resource_parser_never_panics(text in "\\PC{0,400}") {
            let (lines, errors) = parse_resource(&text);
            prop_assert_eq!(lines.len(), text.lines().count());
            prop_assert_eq!(errors.len(), lines.iter().filter(|l| l.is_none()).count());
        }

        #[test]
        fn bar_decoding_never_panics_and_stays_in_range(
            config in proptest::collection::vec(any::<u8>(), 0..80),
            lines in proptest::collection::vec(proptest::option::of(line()), 0..18),
        ) {
            let bars = decode_bars(Some(&config), &lines);
            prop_assert!(bars.len() <= 6);
            let mut last = None;
            for b in &bars {
                prop_assert!(b.index < 6);
                prop_assert!(last.is_none_or(|l| b.index > l), "indices ascend");
                last = Some(b.index);
                prop_assert_eq!(b.assigned(), b.start.is_some());
                prop_assert!(!(b.io && b.mem64));
            }
            let _ = decode_bars(None, &lines);
            let _ = bridge_windows(&lines);
        }
    }
}
