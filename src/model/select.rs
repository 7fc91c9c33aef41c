//! Which PCI functions count as GPUs. Selectors are parsed from text in
//! `parse::selector`.

use crate::model::pci::{
    base_class, CLASS_ACCELERATOR, CLASS_DISPLAY, VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selector {
    /// `VENDOR:DEVICE`
    Id { vendor: u16, device: u16 },
    /// `VENDOR:*`
    Vendor(u16),
    /// `class:CCSS` (base class and subclass)
    Class { base: u8, sub: u8 },
}

impl Selector {
    pub(crate) fn matches(&self, vendor: u16, device: u16, class: u32) -> bool {
        match *self {
            Selector::Id {
                vendor: v,
                device: d,
            } => v == vendor && d == device,
            Selector::Vendor(v) => v == vendor,
            Selector::Class { base, sub } => base_class(class) == base && (class >> 8) as u8 == sub,
        }
    }
}

/// Display adapters that hypervisors emulate and server boards solder on
/// for their management console: a guest or host has one beside its GPUs,
/// and it is never one of them.
const NOT_GPUS: &[(u16, Option<u16>, &str)] = &[
    (0x1234, Some(0x1111), "QEMU standard VGA / bochs-display"),
    (0x1af4, Some(0x1050), "virtio-gpu"),
    (0x1af4, Some(0x1010), "virtio-gpu (legacy id)"),
    (0x1b36, Some(0x0100), "QXL"),
    (0x1013, Some(0x00b8), "Cirrus CLGD 5446"),
    (0x15ad, Some(0x0405), "VMware SVGA II"),
    (0x15ad, Some(0x0710), "VMware SVGA"),
    (0x1414, Some(0x5353), "Hyper-V synthetic video"),
    (0x80ee, Some(0xbeef), "VirtualBox graphics"),
    (0x1a03, None, "ASPEED BMC graphics"),
    (0x102b, Some(0x0522), "Matrox G200e server graphics"),
    (0x102b, Some(0x0532), "Matrox G200eW server graphics"),
    (0x102b, Some(0x0533), "Matrox G200eH server graphics"),
    (0x102b, Some(0x0534), "Matrox G200eR server graphics"),
    (0x102b, Some(0x0536), "Matrox G200eW3 server graphics"),
    (0x102b, Some(0x0538), "Matrox G200eH3 server graphics"),
];

/// Whether a display controller is an emulated or management adapter.
fn emulated_display(vendor: u16, device: u16) -> bool {
    NOT_GPUS
        .iter()
        .any(|(v, d, _)| *v == vendor && d.is_none_or(|d| d == device))
}

/// Whether a class code is a GPU's: a display controller (base class
/// 0x03: VGA, 3D, other) or a processing accelerator (0x12, as NVIDIA's
/// and AMD's compute parts, Intel's Gaudi, report themselves). The one
/// answer: `check`'s default selection narrows it by vendor, `plan` takes
/// it as it is.
pub(crate) fn is_gpu_class(class: u32) -> bool {
    matches!(base_class(class), CLASS_DISPLAY | CLASS_ACCELERATOR)
}

/// The default selection: GPU-class functions (`is_gpu_class`), the
/// accelerators only of GPU vendors, less emulated and management
/// adapters.
pub(crate) fn is_default_gpu(vendor: u16, device: u16, class: u32) -> bool {
    let candidate = is_gpu_class(class)
        && (base_class(class) == CLASS_DISPLAY
            || matches!(vendor, VENDOR_NVIDIA | VENDOR_AMD | VENDOR_INTEL));
    candidate && !emulated_display(vendor, device)
}

/// Whether a function is one of the GPUs to check: the selectors when any
/// were given, the default otherwise.
pub(crate) fn is_selected(selectors: &[Selector], vendor: u16, device: u16, class: u32) -> bool {
    if selectors.is_empty() {
        is_default_gpu(vendor, device, class)
    } else {
        selectors.iter().any(|s| s.matches(vendor, device, class))
    }
}

/// As `is_selected` for a function whose device id is not known (lspci
/// text without `-nn`): an id selector cannot match, and by default only
/// the GPU vendors' display controllers and accelerators are taken (the
/// emulated adapters' vendors are never those).
pub(crate) fn is_selected_without_device(selectors: &[Selector], vendor: u16, class: u32) -> bool {
    if selectors.is_empty() {
        matches!(vendor, VENDOR_NVIDIA | VENDOR_AMD | VENDOR_INTEL)
            && is_default_gpu(vendor, 0, class)
    } else {
        selectors.iter().any(|s| match s {
            Selector::Id { .. } => false,
            _ => s.matches(vendor, 0, class),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_takes_real_gpus_and_leaves_emulated_adapters() {
        assert!(is_default_gpu(0x10de, 0x2330, 0x030200));
        assert!(is_default_gpu(0x1002, 0x74a1, 0x120000));
        assert!(is_default_gpu(0x8086, 0x56c0, 0x030000));
        assert!(!is_default_gpu(0x1234, 0x1111, 0x030000));
        assert!(!is_default_gpu(0x1af4, 0x1050, 0x038000));
        assert!(!is_default_gpu(0x1a03, 0x2000, 0x030000));
        assert!(!is_default_gpu(0x1af4, 0x1110, 0x050000));
        assert!(!is_default_gpu(0x15b3, 0x1021, 0x120000));
    }

    #[test]
    fn a_gpu_class_is_a_display_controller_or_an_accelerator() {
        for (class, gpu) in [
            (0x03_0000, true),
            (0x03_0200, true),
            (0x03_8000, true),
            (0x12_0000, true),
            (0x02_0000, false),
            (0x06_0400, false),
            (0x04_0300, false),
        ] {
            assert_eq!(is_gpu_class(class), gpu, "{class:06x}");
        }
        // check's default narrows the accelerators to GPU vendors'.
        assert!(is_default_gpu(VENDOR_NVIDIA, 0x2330, 0x12_0000));
        assert!(!is_default_gpu(0x1d0f, 0xcd01, 0x12_0000));
    }

    #[test]
    fn explicit_selectors_replace_the_default() {
        let s = vec![Selector::Id {
            vendor: 0x1af4,
            device: 0x1110,
        }];
        assert!(is_selected(&s, 0x1af4, 0x1110, 0x050000));
        assert!(!is_selected(&s, 0x10de, 0x2330, 0x030200));
        let c = vec![Selector::Class { base: 3, sub: 0 }];
        assert!(is_selected(&c, 0x1234, 0x1111, 0x030000));
    }
}
