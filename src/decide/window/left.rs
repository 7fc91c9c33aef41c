//! What a firmware left on the root bus for QEMU and the guest kernel to
//! read: each bridge window and bus-0 BAR as programmed, what QEMU counts
//! of it for its 64-bit `_CRS` window, and what the kernel places again
//! when it cannot claim it (`kernel.rs` says what the kernel does with
//! them; the firmware files build them).

use crate::decide::sizing::Block;
use crate::model::range::{Range, FOUR_GIB};

/// A window (or a bus-0 BAR) a firmware programmed on the root bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Left {
    /// [start, end) as programmed, what the kernel can claim; `None` when
    /// it does not end below 2^64.
    pub range: Option<(u64, u64)>,
    /// What QEMU counts of it in the root bus's 64-bit span, [lob, upb]
    /// inclusive (`pci_dev_get_w64`); `None`: not counted.
    pub qemu: Option<(u64, u64)>,
    /// The GPUs whose BARs are in it.
    pub gpus: Vec<usize>,
    /// The window the kernel gives it when it places it again.
    pub kernel: Option<Block>,
    /// A device's BAR, not a bridge's window: the kernel may put it back
    /// where the firmware left it (`revert`).
    pub bar: bool,
    /// The GPUs' BARs inside a bridge's window as they read back: (GPU,
    /// address, size). Known for SeaBIOS's windows; what the kernel keeps
    /// of a window it clips (`claim`).
    pub bars: Vec<(usize, u64, u64)>,
    /// A bridge that decodes subtractively (q35's DMI-to-PCI bridge): the
    /// windows behind it. When the kernel cannot claim the bridge's own
    /// window, it claims theirs from the root window (`split`); when the
    /// bridge's window finds no room, they take from the root window one by
    /// one (`assign`).
    pub parts: Vec<Part>,
}

/// A window behind a subtractively decoding bridge: its GPUs, the window
/// the kernel gives it, and where the firmware programmed it ([start,
/// end); `None` when it, or the bridge's window, does not end below 2^64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub gpus: Vec<usize>,
    pub kernel: Option<Block>,
    pub range: Option<(u64, u64)>,
}

impl Left {
    /// A bridge's prefetchable window programmed at `base` with `size`
    /// bytes: its limit register is `base + size - 1` in u64 (SeaBIOS
    /// pciinit.c `pci_region_map_one_entry`, rel-1.16.3 L1078), and QEMU
    /// counts it from max(base, 4 GiB) when the limit is at or above that
    /// (`pci_dev_get_w64`).
    pub(crate) fn window(base: u64, size: u64, gpus: Vec<usize>, kernel: Option<Block>) -> Left {
        let limit = base.wrapping_add(size).wrapping_sub(1);
        let lob = base.max(FOUR_GIB);
        Left {
            range: base.checked_add(size).map(|end| (base, end)),
            qemu: (size > 0 && limit >= lob).then_some((lob, limit)),
            gpus,
            kernel,
            bar: false,
            bars: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// The window with the GPUs' BARs in it: (GPU, address, size).
    pub(crate) fn with_bars(mut self, bars: Vec<(usize, u64, u64)>) -> Left {
        self.bars = bars;
        self
    }

    /// The windows behind a subtractively decoding bridge (`parts`).
    pub(crate) fn with_parts(mut self, parts: Vec<Part>) -> Left {
        self.parts = parts;
        self
    }

    /// A 64-bit BAR of a bus-0 device written with `at`: it reads back
    /// aligned down to its size. QEMU takes it as unmapped at 0, when it
    /// wraps, and when it ends at 2^64 (`pci_bar_address`: `!new_addr`,
    /// `last <= new_addr`, `last == PCI_BAR_UNMAPPED`, `last >=
    /// HWADDR_MAX`), else counts it from max(address, 4 GiB).
    pub(crate) fn bar(at: u64, size: u64, gpus: Vec<usize>) -> Left {
        let align = size.checked_next_power_of_two().unwrap_or(1 << 63).max(1);
        let a = at & !(align - 1);
        let last = a.wrapping_add(size).wrapping_sub(1);
        let mapped = a != 0 && last > a && last != u64::MAX;
        let lob = a.max(FOUR_GIB);
        Left {
            range: a.checked_add(size).filter(|_| a != 0).map(|end| (a, end)),
            qemu: (mapped && last >= lob).then_some((lob, last)),
            gpus,
            kernel: Block::bar(size),
            bar: true,
            bars: Vec::new(),
            parts: Vec::new(),
        }
    }
}

/// QEMU's span of what is in use on the root bus, [lob, upb] inclusive
/// (`pci_bus_get_w64_range`: the union of what each device counts).
pub(crate) fn qemu_w64(left: &[Left]) -> Option<(u64, u64)> {
    left.iter()
        .filter_map(|l| l.qemu)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

impl Left {
    /// A subtractive bridge's child window at `range`, claimed as the root
    /// bus's own (`split`).
    pub(super) fn claimed_part(p: &Part, range: (u64, u64)) -> Left {
        Left {
            range: Some(range),
            qemu: None,
            gpus: p.gpus.clone(),
            kernel: p.kernel,
            bar: false,
            bars: Vec::new(),
            parts: Vec::new(),
        }
    }
}

/// The root bus as the kernel sees it: its 64-bit window (`crs`), the
/// 32-bit ones a window left below 4 GiB can be clipped into (`low`,
/// [start, end)), and how many bridges deep the tree below it is
/// (`Setup::bus_depth`: with realloc, the kernel tries depth + 1 times).
pub(crate) struct RootWindows<'a> {
    pub crs: Range,
    pub low: &'a [(u64, u64)],
    pub depth: u32,
}
