//! Versions of the firmware and QEMU a VM runs with, as the model reads
//! them (the rules each brings: decide::window::rules).

/// An edk2 stable release (`edk2-stable202211` is 2022.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Edk2Release {
    pub year: u32,
    pub month: u32,
}

/// A SeaBIOS release (`rel-1.16.3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeabiosVersion(pub u32, pub u32, pub u32);

/// A QEMU release, or the version a machine type pins (`pc-q35-7.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct QemuVersion(pub u32, pub u32);

impl std::fmt::Display for QemuVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl std::fmt::Display for SeabiosVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// An OVMF build: its edk2 release and what its distribution patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edk2Build {
    pub release: Edk2Release,
    /// Carries 9ac1704af6 (X-PciMmio64Mb as given) before 202505: Debian's
    /// `2025.02-N` from N = 2 on, `2025.02-8+deb13u1` included
    /// (debian/patches/0001-OvmfPkg-Use-user-specified-opt-ovmf-X-PciMmio64Mb-va.patch).
    pub exact_mmio64_patch: bool,
    /// Caps the width at 46 before 202308: Proxmox `3.20230228-4`
    /// ("limiting the phys-bits to 46 instead of 47", its changelog).
    pub cap46_patch: bool,
}

/// A Linux release as the guest's kernel reports it (`6.1.0-48-amd64` is
/// 6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LinuxRelease(pub u32, pub u32);

/// The guest kernel's rules where its releases differ
/// (decide::window::kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelRules {
    /// With `pci=realloc`, from the third try on, a failed window of a
    /// bridge on the root bus releases every root-bus bridge's window of
    /// its type (drivers/pci/setup-bus.c `pci_bus_release_bridge_resources`
    /// by type, read at v6.1; v6.12 not read at its tag); v6.18 releases
    /// only the windows inside the root window it selects
    /// (`pbus_select_window_for_type`), none of the 64-bit ones under
    /// QEMU's `_CRS`.
    pub whole_bus_from_third_try: bool,
}

impl KernelRules {
    pub(crate) const fn of(r: LinuxRelease) -> KernelRules {
        KernelRules {
            whole_bus_from_third_try: r.0 < 6 || (r.0 == 6 && r.1 < 18),
        }
    }
}
