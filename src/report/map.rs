//! The address map: a drawing to scale of the guest's physical address
//! space, one row per thing in it (RAM and the hole below 4 GiB, the
//! firmware's 64-bit window, the kernel's window, the CPU's reach, the
//! GPUs' BARs where they are or where they would have to go), for `check`
//! (`from_report`) and `plan` (`plan::map`) alike.
//!
//! The scale is logarithmic (RAM of a few GiB and a window at 64 TiB must
//! both show), a whole number of columns per address bit, from 1 GiB
//! (everything below it in the first column) to past the CPU's reach.
//! Plain lines of at most 80 columns, so that the journal keeps them as
//! drawn; ASCII unless the locale says UTF-8.

use crate::decide::sizing::align_up;
use crate::model::size::human;
use crate::report::Report;

/// Where the scale starts: 2^30, 1 GiB.
const LO_BIT: u32 = 30;
/// Columns of the labels on the left, and the most the scale takes.
const LABEL: usize = 14;
const SCALE_MAX: usize = 40;
const WIDTH: usize = 80;

/// What the map draws, in addresses; `from_report` and `from_plan` fill
/// it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Map {
    /// The end (exclusive) of RAM.
    pub ram_end: Option<u64>,
    /// The lowest address of the 32-bit PCI hole that RAM leaves below
    /// 4 GiB (the lowest 32-bit BAR seen).
    pub hole32: Option<u64>,
    /// The firmware's 64-bit window: start, size.
    pub firmware: Option<(u64, u64)>,
    /// The kernel's 64-bit windows: start, end inclusive.
    pub kernel: Vec<(u64, u64)>,
    pub phys_bits: Option<u32>,
    pub gpus: Vec<Row>,
    /// `plan`: the GPUs' places are the model's, not seen.
    pub predicted: bool,
}

/// A row of GPUs alike (state and largest BAR), with their BARs' places.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub label: String,
    pub note: String,
    /// Addresses of BARs placed.
    pub placed: Vec<u64>,
    /// Addresses where BARs left out would have to go.
    pub wanted: Vec<u64>,
}

struct Glyphs {
    ram: char,
    hole: char,
    firmware: char,
    kernel: char,
    reach: char,
    limit: char,
    placed: char,
    wanted: char,
    axis: char,
    tick: char,
}

const ASCII: Glyphs = Glyphs {
    ram: '=',
    hole: ':',
    firmware: '~',
    kernel: '*',
    reach: '-',
    limit: '|',
    placed: '#',
    wanted: '?',
    axis: '-',
    tick: '+',
};

const UTF8: Glyphs = Glyphs {
    ram: '█',
    hole: '░',
    firmware: '▒',
    kernel: '▓',
    reach: '─',
    limit: '┤',
    placed: '■',
    wanted: '□',
    axis: '─',
    tick: '┼',
};

/// The scale: columns per address bit and the bit where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scale {
    pub per_bit: usize,
    pub hi_bit: u32,
}

impl Scale {
    /// A scale that reaches past `top` (the highest address drawn) and
    /// the CPU's `phys_bits`.
    pub(crate) fn fitting(top: u64, phys_bits: Option<u32>) -> Scale {
        let top_bit = 64 - top.leading_zeros();
        let hi = top_bit.max(phys_bits.unwrap_or(0)).max(LO_BIT + 8);
        // To the next labelled tick, so that the scale ends on one.
        let span = (hi - LO_BIT).div_ceil(4) * 4;
        let per_bit = (SCALE_MAX / span as usize).clamp(1, 4);
        let span = if per_bit == 1 {
            span.div_ceil(8) * 8
        } else {
            span
        };
        Scale {
            per_bit,
            hi_bit: (LO_BIT + span).min(64),
        }
    }

    /// Columns of the scale, its end tick included.
    pub(crate) fn width(self) -> usize {
        (self.hi_bit - LO_BIT) as usize * self.per_bit + 1
    }

    /// The column (from the scale's start) of `addr`: the whole part of
    /// log2(addr) above 1 GiB, times the columns per bit.
    pub(crate) fn column(self, addr: u64) -> usize {
        if addr < 1 << LO_BIT {
            return 0;
        }
        let c = ((addr as f64).log2() - f64::from(LO_BIT)) * self.per_bit as f64;
        (c.floor() as usize).min(self.width() - 1)
    }

    /// Bits between labelled ticks: every 16x, or 256x where the columns
    /// are too few for the labels.
    fn tick_bits(self) -> u32 {
        if self.per_bit == 1 {
            8
        } else {
            4
        }
    }
}

/// `1G`, `16G`, `256G`, `4T`, ...
fn tick_label(bit: u32) -> String {
    let units = ["G", "T", "P", "E"];
    let b = bit - LO_BIT;
    format!("{}{}", 1u64 << (b % 10), units[(b / 10) as usize])
}

impl Map {
    fn top(&self) -> u64 {
        let mut top = self.ram_end.unwrap_or(0);
        if let Some((s, n)) = self.firmware {
            top = top.max(s.saturating_add(n));
        }
        for (_, e) in &self.kernel {
            top = top.max(*e);
        }
        for r in &self.gpus {
            for a in r.placed.iter().chain(&r.wanted) {
                top = top.max(*a);
            }
        }
        top
    }

    pub(crate) fn scale(&self) -> Scale {
        Scale::fitting(self.top(), self.phys_bits)
    }

    /// The drawing, lines of at most 80 columns.
    pub(crate) fn render(&self, utf8: bool) -> String {
        let g = if utf8 { &UTF8 } else { &ASCII };
        let sc = self.scale();
        let mut out = format!(
            "{}address map, log scale: {} RAM {} hole {} fw {} kernel {} BAR {} to go\n",
            if self.predicted { "predicted " } else { "" },
            g.ram,
            g.hole,
            g.firmware,
            g.kernel,
            g.placed,
            g.wanted
        );
        // Room after the last tick for its label.
        let mut ticks = vec![' '; sc.width() + 3];
        let mut axis = vec![g.axis; sc.width()];
        let mut bit = LO_BIT;
        while bit <= sc.hi_bit {
            let c = (bit - LO_BIT) as usize * sc.per_bit;
            axis[c] = g.tick;
            for (i, ch) in tick_label(bit).chars().enumerate() {
                if let Some(t) = ticks.get_mut(c + i) {
                    *t = ch;
                }
            }
            bit += sc.tick_bits();
        }
        line(&mut out, "", &ticks, "");
        line(&mut out, "", &axis, "");
        if let Some(end) = self.ram_end.filter(|e| *e > 0) {
            let mut row = vec![' '; sc.width()];
            fill(&mut row, sc, 0, end - 1, g.ram);
            if let Some(h) = self.hole32.filter(|h| *h < 1 << 32 && end > 1 << 32) {
                fill(&mut row, sc, h, (1 << 32) - 1, g.hole);
            }
            line(&mut out, "RAM", &row, &format!("ends {end:#x}"));
        }
        if let Some((s, n)) = self.firmware.filter(|(_, n)| *n > 0) {
            let mut row = vec![' '; sc.width()];
            fill(&mut row, sc, s, s.saturating_add(n - 1), g.firmware);
            line(
                &mut out,
                "fw window",
                &row,
                &format!("{} @{s:#x}", human(n)),
            );
        }
        if !self.kernel.is_empty() {
            let mut row = vec![' '; sc.width()];
            for (s, e) in &self.kernel {
                fill(&mut row, sc, *s, *e, g.kernel);
            }
            let total: u64 = self.kernel.iter().map(|(s, e)| e - s + 1).sum();
            let (s, _) = self.kernel[0];
            line(
                &mut out,
                "kernel window",
                &row,
                &format!("{} @{s:#x}", human(total)),
            );
        }
        if let Some(b) = self.phys_bits.filter(|b| (1..64).contains(b)) {
            let mut row = vec![' '; sc.width()];
            let limit = 1u64 << b;
            fill(&mut row, sc, 0, limit - 1, g.reach);
            row[sc.column(limit)] = g.limit;
            line(
                &mut out,
                "CPU reach",
                &row,
                &format!("{b} bits, {}", human(limit)),
            );
        }
        for r in &self.gpus {
            let mut row = vec![' '; sc.width()];
            for a in &r.wanted {
                row[sc.column(*a)] = g.wanted;
            }
            for a in &r.placed {
                row[sc.column(*a)] = g.placed;
            }
            line(&mut out, &r.label, &row, &r.note);
        }
        out
    }
}

fn fill(row: &mut [char], sc: Scale, start: u64, end: u64, ch: char) {
    row[sc.column(start)..=sc.column(end)].fill(ch);
}

/// `label` in its column, the scale, then `note`, cut to 80 columns.
fn line(out: &mut String, label: &str, row: &[char], note: &str) {
    let mut l = format!("{label:<LABEL$}");
    l.extend(row.iter());
    if !note.is_empty() {
        l.push(' ');
        l.push_str(note);
    }
    let l: String = l.trim_end().chars().take(WIDTH).collect();
    out.push_str(&l);
    out.push('\n');
}

/// `01:00.0` for `0000:01:00.0`; the domain kept where it is not 0.
fn short_bdf(bdf: &str) -> &str {
    bdf.strip_prefix("0000:").unwrap_or(bdf)
}

/// One GPU as a row takes it: its name (a BDF), whether it is placed,
/// its largest BAR, and its BARs' places.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Gpu {
    pub name: String,
    pub ok: bool,
    pub big: u64,
    pub placed: Vec<u64>,
    pub wanted: Vec<u64>,
}

/// Consecutive GPUs alike (`ok`, largest BAR) in one row.
pub(crate) fn group(gpus: Vec<Gpu>) -> Vec<Row> {
    let mut rows: Vec<(Vec<String>, Gpu)> = Vec::new();
    for g in gpus {
        match rows.last_mut() {
            Some((names, r)) if r.ok == g.ok && r.big == g.big => {
                names.push(g.name);
                r.placed.extend(g.placed);
                r.wanted.extend(g.wanted);
            }
            _ => rows.push((vec![g.name.clone()], g)),
        }
    }
    rows.into_iter()
        .map(|(names, g)| {
            let Gpu {
                ok,
                big,
                placed,
                wanted,
                ..
            } = g;
            let state = if ok { "ok" } else { "FAIL" };
            let label = match names.as_slice() {
                [one] => format!("{} {state}", short_bdf(one)),
                _ => format!("{} GPUs {state}", names.len()),
            };
            let size = human(big);
            let note = match (names.len(), ok) {
                (1, true) => format!("{size} BAR"),
                (n, true) => format!("{n}x {size} BAR"),
                (n, false) => format!("{n}x {size}, {} to go", wanted.len()),
            };
            Row {
                label,
                note,
                placed,
                wanted,
            }
        })
        .collect()
}

/// The map of what `check` saw: the BARs where they are, those left out
/// packed after them in the kernel's window, as they would have to go.
pub(crate) fn from_report(r: &Report) -> Map {
    let c = &r.capacity;
    let kernel: Vec<(u64, u64)> = c
        .windows
        .iter()
        .filter(|w| w.counted)
        .map(|w| (w.start, w.end))
        .collect();
    let hole32 = r
        .gpus
        .iter()
        .flat_map(|g| &g.bars)
        .filter(|b| b.assigned && !b.io)
        .filter_map(|b| b.start)
        .filter(|a| *a < 1 << 32 && *a >= 1 << 20)
        .min();
    let window = kernel.first().copied();
    // Where the first BAR left out would go: after the highest placed
    // 64-bit BAR in the window, or at its start.
    let mut next = window.map(|(s, e)| {
        r.gpus
            .iter()
            .flat_map(|g| &g.bars)
            .filter(|b| b.assigned && b.mem64)
            .filter_map(|b| Some(b.start? + b.size?))
            .filter(|end| *end > s && *end <= e.saturating_add(1))
            .max()
            .unwrap_or(s)
    });
    let items = r
        .gpus
        .iter()
        .map(|g| {
            let mem = g.bars.iter().filter(|b| !b.io);
            let big = mem.clone().filter_map(|b| b.size).max().unwrap_or(0);
            let placed = mem
                .clone()
                .filter(|b| b.assigned)
                .filter_map(|b| b.start)
                .collect();
            let mut wanted = Vec::new();
            for b in mem.filter(|b| !b.assigned) {
                if let (Some(n), Some(size)) = (next, b.size.filter(|s| *s > 0)) {
                    if let Some(at) = align_up(n, size) {
                        wanted.push(at);
                        next = at.checked_add(size);
                    }
                }
            }
            Gpu {
                name: g.bdf.to_string(),
                ok: g.ok,
                big,
                placed,
                wanted,
            }
        })
        .collect();
    Map {
        ram_end: c.window_origin.ram_end,
        hole32,
        firmware: c
            .window_origin
            .aperture_start
            .zip(c.window_origin.aperture_bytes),
        kernel,
        phys_bits: c.phys_bits,
        gpus: group(items),
        predicted: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn eight_gpus() -> Map {
        Map {
            ram_end: Some(0x2_4000_0000),
            hole32: Some(0xc000_0000),
            firmware: Some((0xe0_0000_0000, 128 * GIB)),
            kernel: vec![(0xe0_0000_0000, 0xf8_9fff_ffff)],
            phys_bits: Some(46),
            gpus: vec![
                Row {
                    label: "3 GPUs ok".into(),
                    note: "3x 32 GiB BAR".into(),
                    placed: vec![0xe0_0000_0000, 0xe8_0000_0000, 0xf0_0000_0000],
                    wanted: vec![],
                },
                Row {
                    label: "01:00.0 ok".into(),
                    note: String::new(),
                    placed: vec![0x1000_0000_0000],
                    wanted: vec![],
                },
                Row {
                    label: "5 GPUs FAIL".into(),
                    note: String::new(),
                    placed: vec![],
                    wanted: vec![0xf8_0000_0000, 0x100_0000_0000, 0x108_0000_0000],
                },
            ],
            predicted: false,
        }
    }

    /// The character of `row` (by label) at the scale's column `c`.
    fn at(text: &str, label: &str, c: usize) -> char {
        let l = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in\n{text}"));
        l.chars().nth(LABEL + c).unwrap_or(' ')
    }

    #[test]
    fn a_placed_bars_mark_lands_where_its_address_says() {
        let m = eight_gpus();
        let sc = m.scale();
        assert_eq!(
            sc,
            Scale {
                per_bit: 2,
                hi_bit: 46
            }
        );
        for utf8 in [false, true] {
            let text = m.render(utf8);
            let (placed, wanted) = if utf8 { ('■', '□') } else { ('#', '?') };
            // 0xe000000000 is 2^39.8: bit 9.8 above 1 GiB, column 19.
            assert_eq!(sc.column(0xe0_0000_0000), 19);
            assert_eq!(at(&text, "3 GPUs ok", 19), placed);
            // 2^44 exactly: column 28, the tick labelled 16T.
            assert_eq!(sc.column(0x1000_0000_0000), 28);
            assert_eq!(at(&text, "01:00.0 ok", 28), placed);
            assert_eq!(at(&text, "01:00.0 ok", 27), ' ');
            // 2^40 is the tick labelled 1T, column 20.
            assert_eq!(at(&text, "5 GPUs FAIL", 20), wanted);
            // The CPU's reach ends at 2^46, column 32.
            assert_eq!(at(&text, "CPU reach", 32), if utf8 { '┤' } else { '|' });
            for l in text.lines() {
                assert!(l.chars().count() <= 80, "{l:?}");
                assert!(!l.ends_with(' '), "{l:?}");
            }
        }
    }

    #[test]
    fn the_scale_is_labelled_at_its_ticks() {
        let text = eight_gpus().render(false);
        let lines: Vec<&str> = text.lines().collect();
        let ticks = lines[1];
        let axis = lines[2];
        for (label, bit) in [
            ("1G", 30),
            ("16G", 34),
            ("256G", 38),
            ("4T", 42),
            ("64T", 46),
        ] {
            let c = LABEL + (bit - 30) * 2;
            assert_eq!(&ticks[c..c + label.len()], label, "{ticks}");
            assert_eq!(&axis[c..=c], "+", "{axis}");
        }
        // RAM to 9 GiB (2^33.2, column 6) with the hole from 3 GiB (2^31.6,
        // column 3) to 4 GiB: RAM, hole, RAM again.
        let ram = lines[3];
        assert!(ram.starts_with("RAM           ===:=== "), "{ram}");
        assert!(text.is_ascii());
        assert!(!eight_gpus().render(true).is_ascii());
    }

    #[test]
    fn a_wide_cpu_gets_a_coarser_scale_that_still_fits() {
        let mut m = eight_gpus();
        m.phys_bits = Some(57);
        let sc = m.scale();
        assert_eq!(sc.per_bit, 1);
        assert!(LABEL + sc.width() < 80);
        for l in m.render(true).lines() {
            assert!(l.chars().count() <= 80, "{l:?}");
        }
        assert_eq!(tick_label(46), "64T");
        assert_eq!(tick_label(50), "1P");
    }

    #[test]
    fn alike_gpus_share_a_row_and_the_left_out_go_after_the_placed() {
        let gpu = |name: &str, ok, placed: Vec<u64>, wanted: Vec<u64>| Gpu {
            name: name.into(),
            ok,
            big: 32 * GIB,
            placed,
            wanted,
        };
        let rows = group(vec![
            gpu("0000:01:00.0", true, vec![1], vec![]),
            gpu("0000:02:00.0", true, vec![2], vec![]),
            gpu("0000:03:00.0", false, vec![], vec![3]),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, "2 GPUs ok");
        assert_eq!(rows[0].placed, [1, 2]);
        assert_eq!(rows[1].label, "03:00.0 FAIL");
        assert_eq!(rows[1].note, "1x 32 GiB, 1 to go");
    }
}
