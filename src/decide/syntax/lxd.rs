//! LXD and Incus: QEMU arguments in the instance's `raw.qemu` (appended
//! last to the QEMU command line both build), the instance's own keys
//! for its firmware, and `lxc restart` / `incus restart`, which stop the
//! VM's QEMU process and start a new one. Among the generic lines of a
//! guest no layer names, LXD says only OVMF's aperture, the setting its
//! users were found to need (LXD issue 14381, tests/corpus/02); a guest
//! whose board names LXD or Incus gets every setting either has.
//!
//! Sources: canonical/lxd at a83edf2 (2026-08-22),
//! lxd/instance/drivers/driver_qemu.go: `-cpu host` (with Hyper-V and
//! topology flags, whatever the instance), `raw.qemu` split like a shell
//! and appended after LXD's own arguments, `limits.max_bus_ports` (at most
//! that many devices with a PCIe port of their own, 8 by default; LXD
//! 6.7); lxd/instance/instancetype/instance.go `boot.mode`
//! (`uefi-secureboot`, `uefi-nosecureboot`, `bios`; it replaced
//! `security.csm`). lxc/incus at be7afc5 (2026-08-22),
//! internal/server/instance/drivers/driver_qemu.go and
//! driver_qemu_machine.go: `-cpu host`, except a VM of a cluster that can
//! live-migrate, which gets `kvm64` plus the cluster's common flags unless
//! the cluster group's `instances.vm.cpu.x86_64.baseline` says otherwise
//! (doc/explanation/clustering.md: `baseline=host`); `raw.qemu` as LXD's;
//! `security.csm` for the firmware. LXD adds a GPU over QMP with its bus,
//! slot, id and host function and no other property (`addPCIDevConfig`),
//! Incus likewise; neither has a setting for a port's reservation, a PCIe
//! switch or a vIOMMU.

use super::{qemu, Syntax};
use crate::decide::hint::{BootFirmware, Change};

/// LXD or Incus: what differs between the two.
pub(super) struct Lxd {
    name: &'static str,
    /// The command line tool.
    cli: &'static str,
    /// The instance setting for UEFI without Secure Boot.
    efi: &'static str,
    /// How a clustered VM gets the host's CPU, where it does not by
    /// default.
    cluster_cpu: &'static str,
}

pub(super) const LXD: Lxd = Lxd {
    name: "LXD",
    cli: "lxc",
    efi: "boot.mode=uefi-nosecureboot` (before `boot.mode`: `security.csm=false`)",
    cluster_cpu: "",
};

pub(super) const INCUS: Lxd = Lxd {
    name: "Incus",
    cli: "incus",
    efi: "security.csm=false` (UEFI)",
    cluster_cpu: "; a clustered VM that can live-migrate gets `kvm64` (40 bits) instead, unless `incus cluster group set <group> instances.vm.cpu.x86_64.baseline=host`",
};

impl Lxd {
    /// `lxc config set <instance> raw.qemu='...'` for the change's QEMU
    /// arguments, if it has any.
    fn raw_qemu(&self, c: &Change) -> Option<String> {
        let args = qemu::args(c);
        (!args.is_empty()).then(|| {
            format!(
                "`{} config set <instance> raw.qemu='{}'` (one value for all of them: keep what it holds)",
                self.cli,
                args.join(" ")
            )
        })
    }
}

/// LXD among the generic lines: OVMF's aperture alone, in the form it has
/// always had, and no restart or passthrough of its own.
pub(super) struct RawQemu;

impl Syntax for RawQemu {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let fw_cfg = Change {
            fw_cfg: c.fw_cfg.clone(),
            ..Change::default()
        };
        let args = qemu::args(&fw_cfg);
        (!args.is_empty()).then(|| format!("LXD: `raw.qemu: {}`", args.join(" ")))
    }
}

impl Syntax for Lxd {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut parts = Vec::new();
        let mut cpu: Vec<String> = c
            .phys_bits_min
            .map(|b| format!("{b} address bits"))
            .into_iter()
            .collect();
        cpu.extend(c.cpu_flags_add.iter().map(|f| format!("`{f}`")));
        if !cpu.is_empty() {
            parts.push(format!(
                "its VMs run `-cpu host`, which has the host CPU's address width and flags: a host CPU with {} (`grep -m1 'address sizes' /proc/cpuinfo` and `grep -wc pdpe1gb /proc/cpuinfo` on the host){}",
                cpu.join(" and "),
                self.cluster_cpu
            ));
        }
        parts.extend(self.raw_qemu(c));
        if c.boot_firmware == Some(BootFirmware::Efi) {
            parts.push(format!("`{} config set <instance> {}", self.cli, self.efi));
        }
        if !c.pcie_root_port_properties.is_empty() {
            parts.push(format!(
                "add the GPU while the VM is stopped (`{} config device add <instance> gpu0 gpu pci=<bdf>`, then start it), so that the firmware sizes its port at boot ({} has no setting for a port's reservation)",
                self.cli, self.name
            ));
        }
        let mut none = Vec::new();
        if !c.vfio_pci_properties.is_empty() {
            let props: Vec<String> = c
                .vfio_pci_properties
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            none.push(format!(
                "a GPU's device properties (`{}`: it adds the GPU itself)",
                props.join(",")
            ));
        }
        if c.pcie_switch == Some(true) {
            none.push("an emulated PCIe switch".into());
        }
        if let Some(w) = c.viommu_aw_bits_min {
            none.push(format!("a vIOMMU ({w} bits)"));
        }
        if c.kvm_signature_visible == Some(true) {
            // `-cpu host` without kvm=off: the signature shows.
            parts.push(
                "its `-cpu host` shows KVM's signature already: look for `kvm=off` in `raw.qemu`"
                    .into(),
            );
        }
        if !none.is_empty() {
            parts.push(format!("no setting for {}", none.join(" or ")));
        }
        (!parts.is_empty()).then(|| format!("{}: {}", self.name, parts.join("; and ")))
    }

    /// The vCPU is the host's; a device property, a switch or a vIOMMU
    /// has no setting.
    fn lacks(&self, c: &Change) -> bool {
        !c.cpu_flags_add.is_empty()
            || c.phys_bits_min.is_some()
            || !c.vfio_pci_properties.is_empty()
            || c.pcie_switch.is_some()
            || c.viommu_aw_bits_min.is_some()
    }

    fn restart(&self) -> Option<&'static str> {
        Some(if self.cli == "lxc" {
            "LXD: `lxc restart <instance>`"
        } else {
            "Incus: `incus restart <instance>`"
        })
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some(if self.cli == "lxc" {
            "LXD: `lxc config device show <instance>` (its `gpu` devices; from LXD 6.7 a VM takes at most `limits.max_bus_ports`, 8 by default, devices with a port of their own)"
        } else {
            "Incus: `incus config device show <instance>` (its `gpu` devices)"
        })
    }
}
