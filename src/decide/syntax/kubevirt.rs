//! KubeVirt: the VirtualMachine's spec (`kubectl edit vm <vm>`) where its
//! API has a field, else an annotation or a hook sidecar that edits the
//! libvirt domain XML virt-launcher writes; `virtctl restart`, which
//! starts a new virt-launcher pod and QEMU process.
//!
//! Sources (kubevirt/kubevirt at d923fdb, 2026-08-22):
//! staging/src/kubevirt.io/api/core/v1/schema.go has `CPU.Model` (with
//! `host-passthrough`), `CPU.Features` (`name`, `policy`, default
//! `require`), `EFI.SecureBoot` (default true, needs SMM) and
//! `FeatureKVM.Hidden`, and no field for the vCPU's address width, QEMU's
//! 64-bit hole, fw_cfg, a device's properties or a vIOMMU.
//! pkg/hooks/hooks.go names the sidecar annotation
//! `hooks.kubevirt.io/hookSidecars`; cmd/sidecars/README.md: the `Sidecar`
//! feature gate, and `onDefineDomain` gets the domain XML and returns it
//! changed. The hole's annotation `alpha.kubevirt.io/pciHole64Size` (a
//! Kubernetes quantity) is KubeVirt PR #18013, open in 2026-06; KubeVirt
//! itself writes `<pcihole64>` only to turn the hole off
//! (`kubevirt.io/disablePCIHole64`, PR #14449). A GPU's `<hostdev>` alias is
//! `ua-gpu-<name>` (virtwrap/api/schema.go `UserAliasPrefix`,
//! device/hostdevice/gpu/hostdev.go `AliasPrefix`).

use super::{libvirt, Syntax};
use crate::decide::hint::{BootFirmware, Change};

/// Where the VM's settings live, for `kubectl edit vm <vm>`.
const SPEC: &str = "spec.template.spec.domain";

/// `512Gi`: a size as a Kubernetes quantity.
fn quantity(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    if bytes % GIB == 0 {
        format!("{}Gi", bytes / GIB)
    } else {
        format!("{}Ki", bytes >> 10)
    }
}

/// The hook sidecar that adds `xml` to the domain.
fn sidecar(xml: &str) -> String {
    format!(
        "a hook sidecar (annotation `hooks.kubevirt.io/hookSidecars` on the VM's template, feature gate `Sidecar`) whose `onDefineDomain` adds to the domain XML {xml}"
    )
}

pub(super) struct KubeVirt;

impl Syntax for KubeVirt {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        // The spec's own fields; then what the API has no field for, or
        // has only in some releases, through the sidecar.
        let mut spec = Vec::new();
        let mut hook = Change::default();
        if c.phys_bits_min.is_some() {
            spec.push(format!(
                "`{SPEC}.cpu.model: host-passthrough`, which gives the vCPU the host CPU's address width and flags (the API has no field for the width alone)"
            ));
            hook.phys_bits_min = c.phys_bits_min;
            hook.cpu_flags_add = c.cpu_flags_add.clone();
        } else if !c.cpu_flags_add.is_empty() {
            let features: Vec<String> = c
                .cpu_flags_add
                .iter()
                .map(|f| format!("`{{name: {f}, policy: require}}`"))
                .collect();
            spec.push(format!(
                "add {} to `{SPEC}.cpu.features` (`kubectl edit vm <vm>`; `cpu.model: host-passthrough` has the host's flags too)",
                features.join(" and ")
            ));
        }
        if let Some((bytes, _)) = super::hole64_bytes(c) {
            spec.push(format!(
                "the annotation `alpha.kubevirt.io/pciHole64Size: \"{}\"` on the VM's template, where the cluster's KubeVirt has it (KubeVirt PR #18013; not with `kubevirt.io/disablePCIHole64`)",
                quantity(bytes)
            ));
        }
        hook.qemu_globals = c.qemu_globals.clone();
        hook.fw_cfg = c.fw_cfg.clone();
        hook.vfio_pci_properties = c.vfio_pci_properties.clone();
        hook.pcie_switch = c.pcie_switch;
        hook.viommu_aw_bits_min = c.viommu_aw_bits_min;
        if c.boot_firmware == Some(BootFirmware::Efi) {
            spec.push(format!(
                "`{SPEC}.firmware.bootloader.efi: {{secureBoot: false}}` (Secure Boot needs SMM too)"
            ));
        }
        if c.kvm_signature_visible == Some(true) {
            spec.push(format!(
                "`{SPEC}.features.kvm.hidden: false` (or no `kvm.hidden`)"
            ));
        }
        if !c.pcie_root_port_properties.is_empty() {
            spec.push(format!(
                "the GPU in `{SPEC}.devices.gpus` (or `hostDevices`) when the VM starts rather than added later, so that the firmware sizes its port at boot (KubeVirt has no setting for a port's reservation)"
            ));
        }
        // The sidecar is the other way to what the spec has (the width,
        // the hole), or the only way to the rest.
        let only_hook = !hook.fw_cfg.is_empty()
            || hook.qemu_globals.len() > usize::from(super::hole64_bytes(c).is_some())
            || !hook.vfio_pci_properties.is_empty()
            || hook.pcie_switch.is_some()
            || hook.viommu_aw_bits_min.is_some();
        let xml = libvirt::domain_xml(&hook, "ua-gpu-<name>");
        let parts = match (spec.is_empty(), xml) {
            (true, None) => return None,
            (false, None) => spec.join(", and "),
            (true, Some(x)) => format!("its API has no field for this: {}", sidecar(&x)),
            (false, Some(x)) if only_hook => format!(
                "{}; and, for what its API has no field for, {}",
                spec.join(", and "),
                sidecar(&x)
            ),
            (false, Some(x)) => format!("{}; else {}", spec.join(", and "), sidecar(&x)),
        };
        Some(format!("KubeVirt: {parts}"))
    }

    fn restart(&self) -> Option<&'static str> {
        Some("KubeVirt: `virtctl restart <vm>` (a VirtualMachineInstance made on its own: delete it and create it again)")
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("KubeVirt: `kubectl get vmi <vm> -o jsonpath='{.spec.domain.devices.gpus}{.spec.domain.devices.hostDevices}'`, and the node's allocatable count of the device's resource (`kubectl describe node <node>`)")
    }
}
