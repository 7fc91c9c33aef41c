//! Proxmox VE (qemu-server): the vCPU through the VM's `cpu:` property
//! (`qm set <vmid> --cpu`), QEMU arguments on its `args:` line (root only,
//! no GUI field), and `qm reboot`, which starts a new QEMU process with
//! the pending changes applied.

use super::{qemu, NamedVm, Syntax, VmGpus, VmTarget};
use crate::decide::hint::Change;
use crate::parse::qemu_args;

/// The flags a change adds, as the GUI lists them.
fn flag_list(c: &Change) -> String {
    c.cpu_flags_add.join(", ")
}

/// The `flags=` value for the flags a change adds: `+pdpe1gb`.
fn flags_value(c: &Change) -> String {
    c.cpu_flags_add
        .iter()
        .map(|f| format!("+{f}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// `-set device.hostpci0.x-nv-gpudirect-clique=0`: a property of the
/// device QEMU knows by `id` (qemu-server's `hostpciN`).
fn set(id: &str, k: &str, v: &str) -> String {
    format!("-set device.{id}.{k}={v}")
}

/// The vCPU part of a change, for any VM.
fn cpu(c: &Change) -> Option<String> {
    match (c.phys_bits_min, c.cpu_flags_add.is_empty()) {
        (None, true) => None,
        (None, false) => Some(format!(
            "Hardware > Processors > Advanced > Extra CPU Flags: {} on, or `qm set <vmid> --cpu <your CPU type>,flags={}` (keep the flags you have; CPU type `host` has {} too)",
            flag_list(c),
            flags_value(c),
            if c.cpu_flags_add.len() == 1 { "it" } else { "them" }
        )),
        (Some(bits), no_flags) => Some(format!(
            "`qm set <vmid> --cpu <your CPU type>,phys-bits={bits}{}` (no GUI field; `phys-bits=host` takes the host's; CPU type `host` has {})",
            if no_flags { String::new() } else { format!(",flags={}", flags_value(c)) },
            if no_flags { "them" } else { "both" }
        )),
    }
}

/// `x86-64-v2-AES,flags=+aes` with `+pdpe1gb` added and `phys-bits=N`:
/// the VM's `cpu:` property with the change made, keeping what is there.
pub(super) fn cpu_property(current: &str, change: &Change) -> String {
    let mut parts: Vec<String> = current
        .split(',')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if parts.is_empty() {
        parts.push("kvm64".into());
    }
    for f in &change.cpu_flags_add {
        match parts.iter_mut().find(|p| p.starts_with("flags=")) {
            Some(p) if !p.split(['=', ';']).any(|x| x == format!("+{f}")) => {
                p.push_str(&format!(";+{f}"))
            }
            Some(_) => {}
            None => parts.push(format!("flags=+{f}")),
        }
    }
    if let Some(b) = change.phys_bits_min {
        parts.retain(|p| !p.starts_with("phys-bits="));
        parts.push(format!("phys-bits={b}"));
    }
    parts.join(",")
}

pub(super) struct Proxmox;

impl Syntax for Proxmox {
    fn phrase(&self, c: &Change, gpus: usize) -> Option<String> {
        let mut out = Vec::new();
        let mut parts: Vec<String> = cpu(c).into_iter().collect();
        let args = qemu::args(c);
        if !args.is_empty() {
            parts.push(format!(
                "add `{}` to the `args:` line of /etc/pve/qemu-server/<vmid>.conf (root only, no GUI field; `qm set <vmid> --args` replaces the whole line, so keep what is there)",
                args.join(" ")
            ));
        }
        if c.kvm_signature_visible == Some(true) {
            parts.push("drop `hidden=1` from `cpu:` (`qm set VMID --cpu host` without it); an `x-vga=1` hostpci entry makes some qemu-server releases add `kvm=off`, check `qm showcmd VMID`".into());
        }
        if !parts.is_empty() {
            out.push(format!("Proxmox: {}", parts.join(", and ")));
        }
        if !c.vfio_pci_properties.is_empty() {
            // -set names a device by its id: qemu-server's hostpciN.
            let sets: Vec<String> = (0..gpus.max(1))
                .flat_map(|i| {
                    c.vfio_pci_properties
                        .iter()
                        .map(move |(k, v)| set(&format!("hostpci{i}"), k, v))
                })
                .collect();
            out.push(format!(
                "Proxmox (root only, no GUI field): `args: {}` (one per GPU, with the VM's hostpciN numbers; each hostpciN given with its function, e.g. `0000:41:00.0`, because a multi-function entry's devices are named hostpciN.M, which -set cannot name)",
                sets.join(" ")
            ));
        }
        if c.pcie_switch == Some(true) {
            out.push("Proxmox has no such option (`pcie=1` gives each GPU its own root port): only `args:` with the whole -device lines".into());
        }
        if let Some(w) = c.viommu_aw_bits_min {
            out.push(format!(
                "Proxmox `args: -global intel-iommu.aw-bits={w}` with `machine: q35,viommu=intel`"
            ));
        }
        (!out.is_empty()).then(|| out.join("; "))
    }

    fn restart(&self) -> Option<&'static str> {
        Some("Proxmox: Shutdown, then Start (or `qm reboot <vmid>`, which applies pending changes)")
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("Proxmox: `qm config <vmid> | grep hostpci`")
    }

    fn for_vm(&self, c: &Change, vm: &NamedVm) -> Option<String> {
        let VmTarget::Proxmox { vmid, cpu, args } = vm.target else {
            return None;
        };
        let mut cmds = Vec::new();
        if !c.cpu_flags_add.is_empty() || c.phys_bits_min.is_some() {
            cmds.push(format!("`qm set {vmid} --cpu {}`", cpu_property(cpu, c)));
            if c.phys_bits_min.is_none() {
                cmds.push(format!(
                    "(GUI: Hardware > Processors > Advanced > Extra CPU Flags: {})",
                    flag_list(c)
                ));
            }
        }
        let extra = qemu::args(c);
        if !extra.is_empty() {
            // The setting changed is taken out of the line first: QEMU will
            // not start with two -fw_cfg of one name.
            let kept = qemu_args::without_window_args(
                args,
                !c.qemu_globals.is_empty(),
                !c.fw_cfg.is_empty(),
            );
            let line = if kept.is_empty() {
                extra.join(" ")
            } else {
                format!("{kept} {}", extra.join(" "))
            };
            let line = line.replace('\'', r"'\''");
            cmds.push(format!("as root (no GUI field; this replaces the whole args line): `qm set {vmid} --args '{line}'`"));
        }
        Some(format!(
            "{}; then `qm reboot {vmid}` (or Shutdown, then Start): a reboot inside the guest keeps the old QEMU process",
            cmds.join(" ")
        ))
    }

    /// Each entry `-set` cannot name given as its GPU's function alone,
    /// then the `args:` line with the VM's own arguments kept (its clique
    /// settings replaced) and one `-set` per GPU and property, then the
    /// `cpu:` property without `hidden=1` where KVM is to show.
    fn device_lines(&self, c: &Change, vm: &VmGpus) -> Option<Vec<String>> {
        if c.vfio_pci_properties.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for g in vm.gpus.iter().filter(|g| !g.targetable) {
            let h = g.hosts.first().map(String::as_str).unwrap_or("");
            let was = g.hosts.join(";");
            out.push(if g.hosts.len() > 1 {
                format!("{}: {h},pcie=1  (was {was}: the other functions then need their own hostpciN if wanted)", g.name)
            } else {
                format!("{}: {h}.0,pcie=1  (was {h}: the other functions, e.g. the audio {h}.1, then need their own hostpciN if wanted)", g.name)
            });
        }
        let sets: Vec<String> = vm
            .gpus
            .iter()
            .flat_map(|g| {
                c.vfio_pci_properties
                    .iter()
                    .map(move |(k, v)| set(g.name, k, v))
            })
            .collect();
        let kept = qemu_args::args_without_cliques(vm.args);
        out.push(if kept.is_empty() {
            format!("args: {}", sets.join(" "))
        } else {
            format!("args: {kept} {}", sets.join(" "))
        });
        if c.kvm_signature_visible == Some(true) {
            out.push("cpu: (the same, without hidden=1)".into());
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_properties_keep_what_is_there() {
        let flag = Change {
            cpu_flags_add: vec!["pdpe1gb"],
            ..Change::default()
        };
        assert_eq!(cpu_property("kvm64", &flag), "kvm64,flags=+pdpe1gb");
        assert_eq!(cpu_property("", &flag), "kvm64,flags=+pdpe1gb");
        assert_eq!(
            cpu_property("x86-64-v2-AES,flags=+aes;-md-clear,phys-bits=46", &flag),
            "x86-64-v2-AES,flags=+aes;-md-clear;+pdpe1gb,phys-bits=46"
        );
        assert_eq!(
            cpu_property("host,flags=+pdpe1gb", &flag),
            "host,flags=+pdpe1gb"
        );
        let both = Change {
            phys_bits_min: Some(44),
            ..flag
        };
        assert_eq!(
            cpu_property("x86-64-v2-AES,phys-bits=40", &both),
            "x86-64-v2-AES,flags=+pdpe1gb,phys-bits=44"
        );
    }
}
