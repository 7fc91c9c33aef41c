//! Which PCI functions count as GPUs.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `VENDOR:DEVICE`
    Id { vendor: u16, device: u16 },
    /// `VENDOR:*`
    Vendor(u16),
    /// `class:CCSS` (base class and subclass)
    Class { base: u8, sub: u8 },
}
