//! libvirt: the domain XML (`virsh edit`). The vCPU in `<cpu>`, QEMU's
//! hole on the root controller, what the XML has no element for through
//! the qemu namespace (`<qemu:commandline>`, `<qemu:override>`), and
//! `virsh shutdown` then `virsh start`, which starts a new QEMU process.

use super::{replacing, NamedVm, Syntax, VmGpus, VmTarget};
use crate::decide::hint::Change;

/// The namespace `<qemu:...>` elements need on `<domain>`.
const QEMU_NS: &str = "xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'";

fn feature(f: &str) -> String {
    format!("<feature policy='require' name='{f}'/>")
}

/// A `-global` that sets the hole: the root controller's `<pcihole64>`
/// (KiB), on `pcie-root` (q35) or `pci-root` (i440fx).
pub(super) fn hole64(k: &str, v: &str) -> Option<(&'static str, u64)> {
    let bridge = k.strip_suffix(".pci-hole64-size")?;
    let bytes = crate::parse::size::size(v).ok()?;
    let model = if bridge == "i440FX-pcihost" {
        "pci-root"
    } else {
        "pcie-root"
    };
    Some((model, bytes >> 10))
}

/// The vCPU part of a change, for any VM.
fn cpu(c: &Change) -> Option<String> {
    let features: Vec<String> = c
        .cpu_flags_add
        .iter()
        .map(|f| format!("`{}`", feature(f)))
        .collect();
    match c.phys_bits_min {
        None if features.is_empty() => None,
        None => Some(format!("{} inside `<cpu>`", features.join(" and "))),
        Some(bits) => Some(format!(
            "`<maxphysaddr mode='emulate' bits='{bits}'/>`{} inside `<cpu>` (with `mode='host-passthrough'`: `<maxphysaddr mode='passthrough'/>`)",
            features.iter().map(|f| format!(" and {f}")).collect::<String>()
        )),
    }
}

/// QEMU arguments the XML has no element for, in `<qemu:commandline>`.
fn commandline(args: &[(&str, String)]) -> String {
    args.iter()
        .map(|(flag, v)| format!("<qemu:arg value='-{flag}'/><qemu:arg value='{v}'/>"))
        .collect()
}

/// `<qemu:device alias='ua-gpu0'><qemu:frontend><qemu:property .../>...`:
/// properties of the device libvirt knows by `alias`, for
/// `<qemu:override>` (libvirt 8.2 or later).
fn device_override<'a>(
    alias: &str,
    props: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> String {
    let props: String = props
        .into_iter()
        .map(|(k, v)| {
            let kind = if v.parse::<u64>().is_ok() {
                "unsigned"
            } else {
                "string"
            };
            format!("<qemu:property name='{k}' type='{kind}' value='{v}'/>")
        })
        .collect();
    format!("<qemu:device alias='{alias}'><qemu:frontend>{props}</qemu:frontend></qemu:device>")
}

/// `pci-hole64-size` for libvirt: the root controller's model and KiB.
type Hole64 = (&'static str, u64);
/// A `<qemu:commandline>` argument: its option and value.
type Arg = (&'static str, String);

/// A change's QEMU settings as libvirt takes them: `pci-hole64-size` as
/// `<pcihole64>` on the root controller (model and KiB), every other
/// global and each fw_cfg file as `<qemu:commandline>` arguments.
fn qemu_settings(c: &Change) -> (Vec<Hole64>, Vec<Arg>) {
    let mut holes = Vec::new();
    let mut args: Vec<Arg> = Vec::new();
    for (k, v) in &c.qemu_globals {
        match hole64(k, v) {
            Some(h) => holes.push(h),
            None => args.push(("global", format!("{k}={v}"))),
        }
    }
    args.extend(
        c.fw_cfg
            .iter()
            .map(|(k, v)| ("fw_cfg", format!("name={k},string={v}"))),
    );
    (holes, args)
}

/// What a change adds to a domain's XML, each piece with where it goes,
/// for a layer above libvirt that writes the XML itself and lets a hook
/// edit it (KubeVirt's sidecar); `alias` names a GPU's `<hostdev>`.
/// `None` where libvirt has none of the change's settings.
pub(super) fn domain_xml(c: &Change, alias: &str) -> Option<String> {
    let mut out: Vec<String> = c
        .cpu_flags_add
        .iter()
        .map(|f| format!("`{}` in `<cpu>`", feature(f)))
        .collect();
    if let Some(b) = c.phys_bits_min {
        out.push(format!(
            "`<maxphysaddr mode='emulate' bits='{b}'/>` in `<cpu>`"
        ));
    }
    let (holes, args) = qemu_settings(c);
    out.extend(holes.into_iter().map(|(model, kib)| format!(
        "`<pcihole64 unit='KiB'>{kib}</pcihole64>` in `<controller type='pci' index='0' model='{model}'>`"
    )));
    if !args.is_empty() {
        out.push(format!(
            "`<qemu:commandline>{}</qemu:commandline>` ({QEMU_NS} on `<domain>`)",
            commandline(&args)
        ));
    }
    if c.kvm_signature_visible == Some(true) {
        out.push("no `<hidden state='on'/>` in `<features><kvm>`".into());
    }
    if c.pcie_switch == Some(true) {
        out.push("a `pcie-switch-upstream-port` controller on a root port and a `pcie-switch-downstream-port` per GPU, each `<hostdev>`'s `<address>` on one".into());
    }
    if !c.vfio_pci_properties.is_empty() {
        out.push(format!(
            "`<qemu:override>{}</qemu:override>` per GPU (libvirt 8.2 or later)",
            device_override(alias, &c.vfio_pci_properties)
        ));
    }
    if let Some(w) = c.viommu_aw_bits_min {
        out.push(format!(
            "`<iommu model='intel'><driver aw='{w}'/></iommu>` in `<devices>`"
        ));
    }
    (!out.is_empty()).then(|| out.join(", "))
}

pub(super) struct Libvirt;

impl Syntax for Libvirt {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut out = Vec::new();
        let mut parts: Vec<String> = cpu(c).into_iter().collect();
        let (holes, args) = qemu_settings(c);
        parts.extend(holes.into_iter().map(|(model, kib)| format!(
            "`virsh edit <vm>`, and in the existing `<controller type='pci' index='0' model='{model}'>` add `<pcihole64 unit='KiB'>{kib}</pcihole64>`"
        )));
        if !args.is_empty() {
            parts.push(format!(
                "`<qemu:commandline>{}</qemu:commandline>` (root element with {QEMU_NS})",
                commandline(&args)
            ));
        }
        if c.kvm_signature_visible == Some(true) {
            parts.push("remove `<kvm><hidden state='on'/></kvm>` from `<features>`".into());
        }
        if c.pcie_switch == Some(true) {
            parts.push("a `pcie-switch-upstream-port` controller on a root port and a `pcie-switch-downstream-port` per GPU, each `<hostdev>`'s `<address>` on one".into());
        }
        if !parts.is_empty() {
            out.push(format!("libvirt: {}", parts.join(", and ")));
        }
        for p in &c.vfio_pci_properties {
            out.push(format!(
                "libvirt 8.2 or later, per GPU (libvirt passes -device as JSON, which -set cannot change): `<qemu:override>{}</qemu:override>` in the qemu namespace",
                device_override("hostdev0", [p])
            ));
        }
        if let Some(w) = c.viommu_aw_bits_min {
            out.push(format!(
                "libvirt `<iommu model='intel'><driver aw='{w}'/></iommu>`"
            ));
        }
        (!out.is_empty()).then(|| out.join("; "))
    }

    fn restart(&self) -> Option<&'static str> {
        Some("libvirt: `virsh shutdown` then `virsh start`")
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("libvirt: `virsh dumpxml <vm> | grep -A4 '<hostdev'`")
    }

    fn for_vm(&self, c: &Change, vm: &NamedVm) -> Option<String> {
        let VmTarget::Libvirt { name } = vm.target else {
            return None;
        };
        let mut xml = Vec::new();
        for f in &c.cpu_flags_add {
            xml.push(format!("{} in <cpu>", feature(f)));
        }
        if let Some(b) = c.phys_bits_min {
            xml.push(format!("<maxphysaddr mode='emulate' bits='{b}'/> in <cpu>"));
        }
        for (k, v) in &c.qemu_globals {
            if let Some((_, kib)) = hole64(k, v) {
                xml.push(format!(
                    "<pcihole64 unit='KiB'>{kib}</pcihole64> in the index-0 root controller{}",
                    replacing(vm.has_hole64, "pci-hole64-size")
                ));
            }
        }
        for (k, v) in &c.fw_cfg {
            xml.push(format!(
                "{} in <qemu:commandline> ({QEMU_NS} on <domain>){}",
                commandline(&[("fw_cfg", format!("name={k},string={v}"))]),
                replacing(vm.has_mmio64, "X-PciMmio64Mb")
            ));
        }
        Some(format!(
            "`virsh edit {name}`: {}; then `virsh shutdown {name}` and `virsh start {name}`",
            xml.join("; ")
        ))
    }

    /// One `<qemu:override>` with a device per GPU, by its alias
    /// (`ua-gpuN` for one without, as the problems ask it be given). KVM
    /// hidden is a removal from `<features>`, which the problems say.
    fn device_lines(&self, c: &Change, vm: &VmGpus) -> Option<Vec<String>> {
        if c.vfio_pci_properties.is_empty() {
            return None;
        }
        let devices: String = vm
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let alias = if g.name.is_empty() {
                    format!("ua-gpu{i}")
                } else {
                    g.name.to_string()
                };
                device_override(&alias, &c.vfio_pci_properties)
            })
            .collect();
        Some(vec![format!("<qemu:override>{devices}</qemu:override>")])
    }
}
