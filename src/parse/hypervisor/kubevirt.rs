//! KubeVirt's own messages about a VM's passed-through devices, from
//! virt-launcher's log.

/// virt-launcher could not build the VM's host devices: the GPUs (or
/// host devices) the VMI asks for and the devices its device plugin gave
/// the pod differ in number, `the number of GPU/s do not match the number
/// of devices` (pkg/virt-launcher/virtwrap/device/hostdevice/gpu,
/// `validateCreationOfAllDevices()`; `device plugin GPU/s`, `DRA GPU/s`,
/// `generic host-devices` and `device plugin HostDevice/s` in its
/// siblings and later releases). The device plugin's environment
/// (`PCI_RESOURCE_<NAME>`) is what it reads; the VM does not start.
pub(super) fn host_devices_mismatch(line: &str) -> bool {
    let Some(at) = line.find(" do not match the number of devices") else {
        return false;
    };
    let head = &line[..at];
    head.rfind("the number of ").is_some_and(|k| {
        let what = &head[k + "the number of ".len()..];
        what.ends_with("GPU/s") || what.ends_with("HostDevice/s") || what.ends_with("host-devices")
    })
}
