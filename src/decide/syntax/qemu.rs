//! Plain QEMU: `-cpu` properties, `-global`, `-fw_cfg` and `-device`
//! arguments. The changes in QEMU's own terms (`qemu_globals`, `fw_cfg`)
//! are made here, and the platforms that pass QEMU arguments through
//! (Proxmox's `args:`, LXD's `raw.qemu`) write them with `args`.

use super::{replacing, NamedVm, Syntax, VmGpus};
use crate::decide::hint::Change;
use crate::model::platform::QemuMachine;
use crate::parse::address::device_spec;

const GIB: u64 = 1 << 30;

/// OVMF's fw_cfg file for its 64-bit aperture, in MiB (edk2
/// `OvmfPkg/Library/PlatformInitLib/MemDetect.c`, `X-PciMmio64Mb`).
const APERTURE_FILE: &str = "opt/ovmf/X-PciMmio64Mb";

/// The `fw_cfg` entry that gives OVMF an aperture of `bytes`.
pub(crate) fn aperture(bytes: u64) -> (String, String) {
    (APERTURE_FILE.into(), (bytes >> 20).to_string())
}

/// The aperture a change gives OVMF, in MiB.
pub(crate) fn aperture_mib(c: &Change) -> Option<u64> {
    c.fw_cfg
        .iter()
        .find(|(k, _)| k == APERTURE_FILE)
        .and_then(|(_, v)| v.parse().ok())
}

/// The `-global` that makes the machine's 64-bit PCI hole `bytes` (a
/// whole number of GiB): a property of its host bridge.
pub(crate) fn hole64(machine: QemuMachine, bytes: u64) -> (String, String) {
    let bridge = match machine {
        QemuMachine::Q35 => "q35-pcihost",
        QemuMachine::I440fx => "i440FX-pcihost",
    };
    (
        format!("{bridge}.pci-hole64-size"),
        format!("{}G", bytes / GIB),
    )
}

/// The hole a change sets, in bytes, and whether on i440fx.
pub(crate) fn hole64_bytes(c: &Change) -> Option<(u64, bool)> {
    c.qemu_globals.iter().find_map(|(k, v)| {
        let bridge = k.strip_suffix(".pci-hole64-size")?;
        let bytes = crate::parse::size::size(v).ok()?;
        Some((bytes, bridge == "i440FX-pcihost"))
    })
}

/// `32G`, `64M`: a size as QEMU's properties (and the kernel's
/// parameters) take it.
pub(super) fn size_param(bytes: u64) -> String {
    if bytes >= GIB {
        format!("{}G", bytes / GIB)
    } else {
        format!("{}M", bytes >> 20)
    }
}

/// The `pcie-root-port` properties that reserve room for what is plugged
/// behind it: `pref64-reserve` in the 64-bit prefetchable window (where
/// given), `mem-reserve` below 4 GiB (QEMU `hw/pci-bridge/gen_pcie_root_port.c`).
pub(crate) fn root_port_reserve(pref64: Option<u64>, mem: u64) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = pref64
        .map(|p| ("pref64-reserve".to_string(), size_param(p)))
        .into_iter()
        .collect();
    out.push(("mem-reserve".into(), size_param(mem)));
    out
}

/// The change's `-global` and `-fw_cfg` arguments, in that order.
pub(super) fn args(c: &Change) -> Vec<String> {
    let mut out: Vec<String> = c
        .qemu_globals
        .iter()
        .map(|(k, v)| format!("-global {k}={v}"))
        .collect();
    out.extend(
        c.fw_cfg
            .iter()
            .map(|(k, v)| format!("-fw_cfg name={k},string={v}")),
    );
    out
}

/// `,phys-bits=44,+pdpe1gb`: the `-cpu` properties of a change.
fn cpu(c: &Change) -> String {
    let mut s = String::new();
    if let Some(b) = c.phys_bits_min {
        s.push_str(&format!(",phys-bits={b}"));
    }
    for f in &c.cpu_flags_add {
        s.push_str(&format!(",+{f}"));
    }
    s
}

/// `-device vfio-pci,host=0000:41:00.0,x-nv-gpudirect-clique=0`: the
/// host function passed through, with properties.
pub(super) fn vfio_pci<'a>(
    host: &str,
    props: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> String {
    let props: String = props
        .into_iter()
        .map(|(k, v)| format!(",{k}={v}"))
        .collect();
    format!("-device vfio-pci,host={host}{props}")
}

/// `pref64-reserve=32G,mem-reserve=64M`: a root port's properties.
fn props(p: &[(String, String)]) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) struct Qemu;

impl Syntax for Qemu {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut out = Vec::new();
        let mut parts = Vec::new();
        let cpu = cpu(c);
        if !cpu.is_empty() {
            parts.push(format!("`-cpu <model>{cpu}`"));
        }
        parts.extend(args(c).iter().map(|a| format!("`{a}`")));
        if !c.pcie_root_port_properties.is_empty() {
            parts.push(format!(
                "`-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,{}` and `-device vfio-pci,host=<bdf>,bus=rp1`",
                props(&c.pcie_root_port_properties)
            ));
        }
        for p in &c.vfio_pci_properties {
            parts.push(format!("`{}`", vfio_pci("...", [p])));
        }
        if c.kvm_signature_visible == Some(true) {
            parts.push("no `kvm=off` in `-cpu`".into());
        }
        if !parts.is_empty() {
            out.push(format!("QEMU: {}", parts.join(" and ")));
        }
        if c.pcie_switch == Some(true) {
            out.push("QEMU `-device pcie-root-port,id=rp0,chassis=1,bus=pcie.0 -device x3130-upstream,id=up0,bus=rp0` then per GPU `-device xio3130-downstream,id=dn0,chassis=10,slot=0,bus=up0 -device vfio-pci,host=...,bus=dn0`".into());
        }
        if let Some(w) = c.viommu_aw_bits_min {
            out.push(format!(
                "QEMU `-device intel-iommu,aw-bits={w}` (older releases default to 39)"
            ));
        }
        (!out.is_empty()).then(|| out.join("; "))
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("QEMU: one `-device vfio-pci,host=<bdf>` per GPU")
    }

    fn for_vm(&self, c: &Change, vm: &NamedVm) -> Option<String> {
        let mut a = Vec::new();
        let mut flags = String::new();
        for f in &c.cpu_flags_add {
            flags.push_str(&format!(",+{f}"));
        }
        if let Some(b) = c.phys_bits_min {
            flags.push_str(&format!(",phys-bits={b}"));
        }
        if !flags.is_empty() {
            a.push(format!("`-cpu <model>{flags}`"));
        }
        a.extend(c.qemu_globals.iter().map(|(k, v)| {
            format!(
                "`-global {k}={v}`{}",
                replacing(vm.has_hole64, "pci-hole64-size")
            )
        }));
        a.extend(c.fw_cfg.iter().map(|(k, v)| {
            format!(
                "`-fw_cfg name={k},string={v}`{}",
                replacing(vm.has_mmio64, "X-PciMmio64Mb")
            )
        }));
        Some(format!(
            "QEMU: {}; then start a new QEMU process",
            a.join(" ")
        ))
    }

    /// One `-device vfio-pci` per GPU, on the first function its entry
    /// names (`host=` takes one function: `41:00` is `0000:41:00.0`).
    fn device_lines(&self, c: &Change, vm: &VmGpus) -> Option<Vec<String>> {
        if c.vfio_pci_properties.is_empty() {
            return None;
        }
        let lines = vm
            .gpus
            .iter()
            .map(|g| {
                let h = g
                    .hosts
                    .first()
                    .map_or("", |h| h.split(';').next().unwrap_or(""));
                let h = device_spec(h).map_or_else(|| h.to_string(), |a| a.first.to_string());
                vfio_pci(&h, &c.vfio_pci_properties)
            })
            .collect();
        Some(lines)
    }
}
