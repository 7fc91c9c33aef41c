//! OpenStack Nova (its libvirt driver): a flavor's extra specs or an
//! image's properties where Nova has one, set by whoever may change them
//! (a flavor's, usually the cloud's administrators), and the compute
//! hosts' nova.conf for the rest, which is the cloud operator's; a server
//! takes a new flavor by a resize, and a hard reboot writes its domain
//! anew.
//!
//! Sources (openstack/nova at 00a0304, 2026-08-21):
//! nova/virt/libvirt/driver.py `_get_guest_cpu_config_maxphysaddr` reads
//! `hw:maxphysaddr_mode`/`hw:maxphysaddr_bits` (image:
//! `hw_maxphysaddr_mode`/`hw_maxphysaddr_bits`; libvirt 8.7.0 or later,
//! `MIN_LIBVIRT_MAXPHYSADDR`; release note of 2024.1 Caracal), which
//! nova/api/validation/extra_specs/hw.py does not list, so the API refuses
//! them as unknown `hw:` specs from microversion 2.86 (its validation's
//! start, api/openstack/compute/flavors_extraspecs.py); nova/conf/libvirt.py
//! `cpu_model_extra_flags` (`+flag`, `pdpe1gb` among its examples) and
//! `cpu_mode`; driver.py reads `hw:hide_hypervisor_id` and the image's
//! `img_hide_hypervisor_id`, and gives a vIOMMU (`hw:viommu_model`) a
//! fixed `aw_bits = 48`; nova/objects/image_meta.py `hw_firmware_type`.
//! Nothing in nova/virt/libvirt writes `<pcihole64>`, an fw_cfg entry,
//! `<qemu:commandline>` or a device's extra properties.

use super::Syntax;
use crate::decide::hint::{BootFirmware, Change};

/// Nova's vIOMMU width, which no setting changes.
const VIOMMU_BITS: u32 = 48;

/// What no setting of Nova's reaches, with the QEMU arguments it would
/// take: said once for all of it.
fn operator(what: &[String]) -> Option<String> {
    (!what.is_empty()).then(|| {
        format!(
            "Nova has no setting for {}: no flavor extra spec, image property or nova.conf option writes one, so only the cloud's operator can add it, outside Nova",
            what.join(" or ")
        )
    })
}

pub(super) struct OpenStack;

impl Syntax for OpenStack {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(bits) = c.phys_bits_min {
            parts.push(format!(
                "a flavor with `openstack flavor set <flavor> --property hw:maxphysaddr_mode=emulate --property hw:maxphysaddr_bits={bits}` (Nova 2024.1 and libvirt 8.7.0 or later; an API that refuses them as unknown extra specs takes them with `--os-compute-api-version 2.85`; or the image's `hw_maxphysaddr_mode` and `hw_maxphysaddr_bits`)"
            ));
        }
        if !c.cpu_flags_add.is_empty() {
            let flags: Vec<String> = c.cpu_flags_add.iter().map(|f| format!("+{f}")).collect();
            parts.push(format!(
                "on the compute hosts, by the cloud's operator: `cpu_model_extra_flags = {}` in nova.conf's `[libvirt]` section (or `cpu_mode = host-passthrough`), then restart nova-compute (no flavor or image property adds a CPU flag)",
                flags.join(", ")
            ));
        }
        let mut none: Vec<String> = Vec::new();
        for (k, v) in &c.qemu_globals {
            let what = if k.ends_with(".pci-hole64-size") {
                "QEMU's 64-bit hole"
            } else {
                "a QEMU property"
            };
            none.push(format!("{what} (`-global {k}={v}`)"));
        }
        for (k, v) in &c.fw_cfg {
            none.push(format!("an fw_cfg entry (`-fw_cfg name={k},string={v}`)"));
        }
        if c.boot_firmware == Some(BootFirmware::Efi) {
            parts.push("the image's `openstack image set --property hw_firmware_type=uefi <image>` (a server takes its image's properties when built: `openstack server rebuild`)".into());
        }
        if !c.pcie_root_port_properties.is_empty() {
            parts.push("the GPU requested by the flavor (`pci_passthrough:alias=<alias>:<count>`) rather than attached later, so that the firmware sizes its port at boot (Nova has no setting for a port's reservation)".into());
        }
        for (k, v) in &c.vfio_pci_properties {
            none.push(format!("a passed-through device's property (`{k}={v}`)"));
        }
        if c.kvm_signature_visible == Some(true) {
            parts.push("a flavor without `hw:hide_hypervisor_id`, which hides KVM's signature (`openstack flavor unset --property hw:hide_hypervisor_id <flavor>`), and an image without `img_hide_hypervisor_id`".into());
        }
        if c.pcie_switch == Some(true) {
            none.push("an emulated PCIe switch".into());
        }
        match c.viommu_aw_bits_min {
            Some(w) if w <= VIOMMU_BITS => parts.push(format!(
                "a flavor with `hw:viommu_model=intel`, whose vIOMMU Nova gives {VIOMMU_BITS} address bits"
            )),
            Some(w) => none.push(format!(
                "a vIOMMU of {w} bits (Nova fixes `aw_bits` at {VIOMMU_BITS})"
            )),
            None => {}
        }
        parts.extend(operator(&none));
        (!parts.is_empty()).then(|| format!("OpenStack: {}", parts.join("; and ")))
    }

    /// Nova writes no hole, fw_cfg entry, device property or switch, and
    /// no vIOMMU wider than its own.
    fn lacks(&self, c: &Change) -> bool {
        !c.qemu_globals.is_empty()
            || !c.fw_cfg.is_empty()
            || !c.vfio_pci_properties.is_empty()
            || c.pcie_switch.is_some()
            || c.viommu_aw_bits_min.is_some_and(|w| w > VIOMMU_BITS)
    }

    fn restart(&self) -> Option<&'static str> {
        Some("OpenStack: `openstack server resize --flavor <flavor> <server>` then `openstack server resize confirm <server>` for a new flavor, or `openstack server reboot --hard <server>` after a change on the compute hosts (a hard reboot writes the domain anew)")
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("OpenStack: the flavor's `pci_passthrough:alias` (`openstack flavor show <flavor>`), and on the compute host `virsh dumpxml <instance> | grep -A4 '<hostdev'`")
    }
}
