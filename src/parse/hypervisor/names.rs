//! Each host-side message's name in the report and whose message it is.

use super::HostMessage;

impl HostMessage {
    /// A short name for the report.
    pub(crate) fn id(&self) -> &'static str {
        match self {
            HostMessage::VmwarePages { .. } => "vmware-passthrough-pages",
            HostMessage::VmwarePowerOn { .. } => "vmware-device-power-on",
            HostMessage::VmwareSlot => "vmware-pcie-slot",
            HostMessage::EsxiHotplugRemoved => "esxi-pcie-hotplug-removed",
            HostMessage::HypervUpperMmio { .. } => "hyperv-upper-mmio-range",
            HostMessage::QemuPhysBits { .. } => "qemu-phys-bits-too-low",
            HostMessage::VfioDmaMap { .. } => "vfio-dma-map",
            HostMessage::VfioGroup { .. } => "vfio-group",
            HostMessage::DmaMappingsLimit { .. } => "vfio-dma-mappings-limit",
            HostMessage::Memlock { .. } => "host-memlock",
            HostMessage::IommuWidth { .. } => "host-iommu-width",
            HostMessage::KvmMemslot { .. } => "kvm-memslot",
            HostMessage::CloudHypervisorMapRegion { .. } => "cloud-hypervisor-vfio-map-region",
            HostMessage::OpenvmmMmio { .. } => "openvmm-mmio-exhaustion",
            HostMessage::DxgkrnlIospace { .. } => "hyperv-dxgkrnl-iospace",
            HostMessage::BhyveMapFailed => "bhyve-map-pptdev-mmio",
            HostMessage::BhyveModifyMmio { .. } => "bhyve-modify-mmio",
            HostMessage::XenPcifrontClaim => "xen-pcifront-claim",
            HostMessage::OvmfMmioWindow { .. } => "ovmf-mmio-window",
            HostMessage::SeabiosWindow64 { .. } => "seabios-pci64-window",
            HostMessage::DeviceReset { .. } => "device-reset",
            HostMessage::CloudHypervisorMoveBar { .. } => "cloud-hypervisor-move-bar",
            HostMessage::XenSharedRmrr => "xen-shared-rmrr",
            HostMessage::XenIgdPassthru => "xen-igd-passthru",
            HostMessage::HypervNotAssignable => "hyperv-dda-not-assignable",
            HostMessage::HypervGpuPartition => "hyperv-gpu-partition",
            HostMessage::XenPtInterrupts { .. } => "xen-pt-interrupts",
            HostMessage::XenPtRegistered => "xen-pt-registered",
            HostMessage::NvidiaNotProbed { .. } => "nvidia-not-probed",
            HostMessage::NvidiaXid { .. } => "nvidia-xid",
            HostMessage::VfioRomInvalid { .. } => "vfio-rom-invalid",
            HostMessage::MapsMultipleBars => "ioremap-multiple-bars",
            HostMessage::IommuRmrr => "iommu-rmrr",
            HostMessage::VfioPciProbe { .. } => "vfio-pci-probe",
            HostMessage::VfioMsixLayout => "vfio-msix-layout",
            HostMessage::KubevirtHostDevices => "kubevirt-host-devices",
            HostMessage::VfioMmapFailed { .. } => "vfio-mmap-failed",
            HostMessage::VfioRegionAccess { .. } => "vfio-region-access",
            HostMessage::VfioResetDepends => "vfio-reset-depends",
            HostMessage::VfioCantReserve { .. } => "vfio-pci-cant-reserve",
            HostMessage::VmwareHostModule => "vmware-host-module",
            HostMessage::HypervFeatureUnavailable => "hyperv-feature-unavailable",
            HostMessage::IommuDirectMapping => "iommu-direct-mapping",
            HostMessage::VfioRegionInfo { .. } => "vfio-region-info",
            HostMessage::VfioConfigRead { .. } => "vfio-config-read",
            HostMessage::HostIommuOff { .. } => "host-iommu-off",
        }
    }

    /// Whose message it is, for the report.
    pub(crate) fn source(&self) -> &'static str {
        match self {
            HostMessage::VmwarePages { .. }
            | HostMessage::VmwarePowerOn { .. }
            | HostMessage::VmwareSlot
            | HostMessage::EsxiHotplugRemoved
            | HostMessage::VmwareHostModule => "vmware",
            HostMessage::HypervUpperMmio { .. } | HostMessage::DxgkrnlIospace { .. } => "hyperv",
            HostMessage::QemuPhysBits { .. }
            | HostMessage::VfioDmaMap { .. }
            | HostMessage::VfioGroup { .. }
            | HostMessage::KvmMemslot { .. }
            | HostMessage::DmaMappingsLimit { .. }
            | HostMessage::VfioMsixLayout
            | HostMessage::VfioMmapFailed { .. }
            | HostMessage::VfioRegionAccess { .. }
            | HostMessage::VfioResetDepends
            | HostMessage::VfioRegionInfo { .. }
            | HostMessage::VfioConfigRead { .. } => "qemu",
            HostMessage::HostIommuOff { proxmox: false } => "libvirt",
            HostMessage::HostIommuOff { proxmox: true } => "proxmox",
            HostMessage::KubevirtHostDevices => "kubevirt",
            HostMessage::Memlock { .. }
            | HostMessage::IommuWidth { .. }
            | HostMessage::VfioRomInvalid { .. }
            | HostMessage::MapsMultipleBars
            | HostMessage::IommuRmrr
            | HostMessage::IommuDirectMapping
            | HostMessage::VfioPciProbe { .. }
            | HostMessage::VfioCantReserve { .. } => "host_kernel",
            HostMessage::NvidiaNotProbed { .. } | HostMessage::NvidiaXid { .. } => "nvidia_driver",
            HostMessage::CloudHypervisorMapRegion { .. }
            | HostMessage::CloudHypervisorMoveBar { .. } => "cloud_hypervisor",
            HostMessage::OpenvmmMmio { .. } => "openvmm",
            HostMessage::BhyveMapFailed | HostMessage::BhyveModifyMmio { .. } => "bhyve",
            // Xen's device model is a QEMU, but its messages are Xen's.
            HostMessage::XenPcifrontClaim
            | HostMessage::XenSharedRmrr
            | HostMessage::XenIgdPassthru
            | HostMessage::XenPtInterrupts { .. }
            | HostMessage::XenPtRegistered => "xen",
            HostMessage::HypervNotAssignable
            | HostMessage::HypervGpuPartition
            | HostMessage::HypervFeatureUnavailable => "hyperv",
            HostMessage::OvmfMmioWindow { .. } => "ovmf",
            HostMessage::SeabiosWindow64 { .. } => "seabios",
            HostMessage::DeviceReset { stuck_d3: true } => "qemu",
            HostMessage::DeviceReset { stuck_d3: false } => "host_kernel",
        }
    }
}
