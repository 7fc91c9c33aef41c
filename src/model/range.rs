//! Address ranges, both ends inclusive, as the kernel prints them.

/// `[start, end]`, both inclusive: `0xe000000000-0xf89fffffff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Range {
    pub start: u64,
    pub end: u64,
}

pub(crate) const FOUR_GIB: u64 = 1 << 32;

impl Range {
    pub(crate) fn new(start: u64, end: u64) -> Range {
        Range { start, end }
    }

    /// Bytes covered; an inverted range (the kernel's way of printing a
    /// window it has not opened) counts as one byte, never as a wrap.
    pub(crate) fn size(&self) -> u64 {
        self.end.saturating_sub(self.start).saturating_add(1)
    }

    /// The part above 4 GiB, where 64-bit BARs of GPU size can only go.
    /// Ranges wholly below 4 GiB (or inverted) give `None`.
    pub(crate) fn above_4g(self) -> Option<Range> {
        if self.end < FOUR_GIB || self.end < self.start {
            return None;
        }
        Some(Range {
            start: self.start.max(FOUR_GIB),
            end: self.end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_the_part_above_4g() {
        let r = Range::new(0xe0_0000_0000, 0xf8_9fff_ffff);
        assert_eq!(r.size(), 0x18_a000_0000);
        assert_eq!(r.above_4g(), Some(r));
        assert_eq!(
            Range::new(0x8000_0000, 0x1_7fff_ffff).above_4g(),
            Some(Range::new(FOUR_GIB, 0x1_7fff_ffff))
        );
        assert_eq!(Range::new(0x8000_0000, 0xafff_ffff).above_4g(), None);
        assert_eq!(Range::new(0x2_0000_0000, 0x1_0000_0000).above_4g(), None);
        assert_eq!(Range::new(0, u64::MAX).size(), u64::MAX);
    }
}
