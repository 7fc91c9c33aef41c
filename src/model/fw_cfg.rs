//! What a QEMU host told its firmware through fw_cfg, as the guest read it
//! back: facts where the firmware window's origin is otherwise inferred
//! from where the window sits, or assumed.

use crate::model::range::FOUR_GIB;

/// The largest `X-PciMmio64Mb` OVMF takes: 16 TiB in MiB
/// (OvmfPkg/Library/PlatformInitLib/MemDetect.c, `<= 0x1000000`).
pub(crate) const MMIO64_MAX_MB: u64 = 0x100_0000;

/// The fw_cfg files read, by their names under `by_name/`.
pub(crate) const MMIO64_FILE: &str = "opt/ovmf/X-PciMmio64Mb";
pub(crate) const SEABIOS_PCI64_FILE: &str = "opt/org.seabios/pci64";
pub(crate) const RESERVED_MEMORY_END_FILE: &str = "etc/reserved-memory-end";
pub(crate) const E820_FILE: &str = "etc/e820";
/// In the order the report lists them.
pub(crate) const FILES: [&str; 4] = [
    MMIO64_FILE,
    SEABIOS_PCI64_FILE,
    RESERVED_MEMORY_END_FILE,
    E820_FILE,
];

/// One input as the guest found it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Input<T> {
    /// fw_cfg could not be read (no `qemu_fw_cfg` driver, not QEMU), or the
    /// file could not: what it holds is not known, and a default is taken.
    #[default]
    Unknown,
    /// fw_cfg was read and has no such file: the host did not set it.
    Unset,
    /// Set, but to something its firmware does not take (the text says
    /// why): for the firmware, as good as unset.
    Refused(String),
    /// The value.
    Set(T),
}

impl<T> Input<T> {
    /// The value the firmware works with: `Some(None)` when it is known
    /// to have none (unset or refused), `None` when not known.
    pub(crate) fn known(&self) -> Option<Option<&T>> {
        match self {
            Input::Unknown => None,
            Input::Unset | Input::Refused(_) => Some(None),
            Input::Set(v) => Some(Some(v)),
        }
    }

    pub(crate) fn is_known(&self) -> bool {
        !matches!(self, Input::Unknown)
    }
}

/// One entry of QEMU's `etc/e820` map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct E820Entry {
    pub start: u64,
    pub length: u64,
    /// 1 RAM, 2 reserved (QEMU writes no others).
    pub kind: u32,
}

pub(crate) const E820_RAM: u32 = 1;

/// What the guest read of fw_cfg.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FwCfg {
    /// The driver's directory was there (`/sys/firmware/qemu_fw_cfg`):
    /// without it every input is `Unknown`.
    pub readable: bool,
    /// OVMF's `X-PciMmio64Mb`, in MiB.
    pub mmio64_mb: Input<u64>,
    /// SeaBIOS 1.17.0's `opt/org.seabios/pci64`.
    pub seabios_pci64: Input<bool>,
    /// The end of QEMU's memory hot-plug area.
    pub reserved_memory_end: Input<u64>,
    pub e820: Input<Vec<E820Entry>>,
}

impl FwCfg {
    /// Where RAM ends as the window model counts it (`Setup::ram_end`):
    /// 4 GiB plus the RAM above 4 GiB, wherever QEMU put it, or the end
    /// of the highest RAM below 4 GiB when there is none above.
    pub(crate) fn ram_end(&self) -> Option<u64> {
        let Input::Set(map) = &self.e820 else {
            return None;
        };
        let ram = || map.iter().filter(|e| e.kind == E820_RAM && e.length > 0);
        let above: u64 = ram()
            .filter(|e| e.start >= FOUR_GIB)
            .map(|e| e.length)
            .fold(0, u64::saturating_add);
        if above > 0 {
            return Some(FOUR_GIB.saturating_add(above));
        }
        ram().map(|e| e.start.saturating_add(e.length)).max()
    }

    /// Where RAM above 4 GiB really ends (QEMU may move it to 1 TiB on
    /// AMD): the hot-plug area starts at the next GiB.
    pub(crate) fn ram_top(&self) -> Option<u64> {
        let Input::Set(map) = &self.e820 else {
            return None;
        };
        map.iter()
            .filter(|e| e.kind == E820_RAM && e.length > 0)
            .map(|e| e.start.saturating_add(e.length))
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn ram(start: u64, length: u64) -> E820Entry {
        E820Entry {
            start,
            length,
            kind: E820_RAM,
        }
    }

    #[test]
    fn ram_end_counts_what_lies_above_4g_from_4g() {
        let fw = |map: Vec<E820Entry>| FwCfg {
            readable: true,
            e820: Input::Set(map),
            ..FwCfg::default()
        };
        // 1 GiB, all below 4 GiB.
        assert_eq!(fw(vec![ram(0, GIB)]).ram_end(), Some(GIB));
        // 8 GiB on q35: 2 GiB below, 6 GiB from 4 GiB.
        let q35 = fw(vec![ram(0, 2 * GIB), ram(4 * GIB, 6 * GIB)]);
        assert_eq!(q35.ram_end(), Some(10 * GIB));
        assert_eq!(q35.ram_top(), Some(10 * GIB));
        // AMD, RAM moved to 1 TiB: the model's ram_end is before the move,
        // the top is where it is.
        let moved = fw(vec![
            ram(0, 2 * GIB),
            ram(1 << 40, 1022 * GIB),
            E820Entry {
                start: (1 << 40) - 12 * GIB,
                length: 12 * GIB,
                kind: 2,
            },
        ]);
        assert_eq!(moved.ram_end(), Some(4 * GIB + 1022 * GIB));
        assert_eq!(moved.ram_top(), Some((1 << 40) + 1022 * GIB));
        assert_eq!(FwCfg::default().ram_end(), None);
    }

    #[test]
    fn inputs_say_whether_their_value_is_known() {
        assert_eq!(Input::<u64>::Unknown.known(), None);
        assert_eq!(Input::<u64>::Unset.known(), Some(None));
        assert_eq!(Input::<u64>::Refused("x".into()).known(), Some(None));
        assert_eq!(Input::Set(5u64).known(), Some(Some(&5)));
    }
}
