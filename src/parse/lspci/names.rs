//! Plain `lspci -v` prints names where `-nn` prints numbers: the class
//! names and GPU vendors' names, and a device too new for the ids file,
//! read back as ids.

/// Plain `lspci -v` prints class names, not numbers.
pub(super) fn class_from_name(name: &str) -> Option<u16> {
    Some(match name {
        "VGA compatible controller" => 0x0300,
        "XGA compatible controller" => 0x0301,
        "3D controller" => 0x0302,
        "Display controller" => 0x0380,
        "Processing accelerators" => 0x1200,
        "Host bridge" => 0x0600,
        "ISA bridge" => 0x0601,
        "PCI bridge" => 0x0604,
        "CardBus bridge" => 0x0607,
        _ => return None,
    })
}

/// ... nor vendor ids: the GPU vendors' names will do.
pub(super) fn vendor_from_name(name: &str) -> Option<u16> {
    use crate::model::pci::{VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA};
    // Old lspci spelled it `nVidia`; a wrapped header may keep only
    // `Advanced Micro` of the name.
    if name.starts_with("NVIDIA") || name.starts_with("nVidia") {
        Some(VENDOR_NVIDIA)
    } else if name.starts_with("Advanced Micro")
        || name.starts_with("AMD")
        || name.starts_with("ATI")
    {
        Some(VENDOR_AMD)
    } else if name.starts_with("Intel") {
        Some(VENDOR_INTEL)
    } else {
        None
    }
}

/// `NVIDIA Corporation Device 1b80`.
pub(super) fn device_from_name(name: &str) -> Option<u16> {
    let (_, id) = name.rsplit_once(" Device ")?;
    let id = id.split_whitespace().next()?;
    if id.len() != 4 {
        return None;
    }
    crate::parse::hex::hex_digits(id).map(|v| v as u16)
}
