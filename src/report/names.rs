//! Human names for PCI ids, from the pci.ids database compiled in (cargo
//! feature `names`, off by default: it is most of the binary's size;
//! without it reports carry ids only).

#[cfg(feature = "names")]
pub(crate) fn device_name(vendor: u16, device: u16) -> Option<String> {
    if let Some(d) = pci_ids::Device::from_vid_pid(vendor, device) {
        return Some(format!("{} {}", d.vendor().name(), d.name()));
    }
    vendor_name(vendor).map(|v| format!("{v} device {device:04x}"))
}

#[cfg(feature = "names")]
pub(crate) fn vendor_name(vendor: u16) -> Option<&'static str> {
    pci_ids::Vendors::iter()
        .find(|v| v.id() == vendor)
        .map(|v| v.name())
}

#[cfg(not(feature = "names"))]
pub(crate) fn device_name(_vendor: u16, _device: u16) -> Option<String> {
    None
}

#[cfg(not(feature = "names"))]
pub(crate) fn vendor_name(_vendor: u16) -> Option<&'static str> {
    None
}

#[cfg(all(test, feature = "names"))]
mod tests {
    #[test]
    fn names_known_devices() {
        let n = super::device_name(0x1af4, 0x1110).unwrap();
        assert!(n.contains("Red Hat") && n.contains("Inter-VM"), "{n}");
        assert!(super::device_name(0x10de, 0xfffe)
            .unwrap()
            .starts_with("NVIDIA"));
        assert_eq!(super::device_name(0x7777, 0x0001), None);
    }
}
