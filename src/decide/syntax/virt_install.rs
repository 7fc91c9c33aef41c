//! virt-install (virt-manager's command line, which writes a libvirt
//! domain): the same settings as libvirt's XML, as its options, for a VM
//! being created; `virt-xml <vm> --edit` takes the same `--cpu`, `--boot`
//! and `--features` options for one that exists. Its VM restarts as
//! libvirt's does.
//!
//! Sources (virt-manager/virt-manager at 2450354, 2026-03-27):
//! virtinst/cli.py `ParserCPU` (`maxphysaddr.mode`, `maxphysaddr.bits`,
//! and the feature policies `require=` and the like), `ParserController`
//! (`pcihole64`, `pcihole64.unit`: virt-manager PR #998; libvirt's unit
//! is KiB by default), `ParserQemuCLI` (`--qemu-commandline`, split like a
//! shell into `<qemu:arg>`s), `ParserFeatures` (`kvm.hidden.state`),
//! `ParserIommu` (`driver.aw_bits`); man/virt-install.rst `--boot uefi`;
//! man/virt-xml.rst `--edit`. It has no option for a device's
//! `<qemu:override>` or an emulated switch's wiring: libvirt's XML then.

use super::{libvirt, Syntax};
use crate::decide::hint::{BootFirmware, Change};

pub(super) struct VirtInstall;

impl Syntax for VirtInstall {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let mut opts = Vec::new();
        let mut cpu: Vec<String> = c
            .cpu_flags_add
            .iter()
            .map(|f| format!("require={f}"))
            .collect();
        if let Some(b) = c.phys_bits_min {
            cpu.push(format!("maxphysaddr.mode=emulate,maxphysaddr.bits={b}"));
        }
        if !cpu.is_empty() {
            opts.push(format!("`--cpu <model>,{}`", cpu.join(",")));
        }
        let mut args = Vec::new();
        for (k, v) in &c.qemu_globals {
            match libvirt::hole64(k, v) {
                Some((model, kib)) => opts.push(format!(
                    "`--controller pci,index=0,model={model},pcihole64={kib}`"
                )),
                None => args.push(format!("-global {k}={v}")),
            }
        }
        args.extend(
            c.fw_cfg
                .iter()
                .map(|(k, v)| format!("-fw_cfg name={k},string={v}")),
        );
        if !args.is_empty() {
            opts.push(format!("`--qemu-commandline='{}'`", args.join(" ")));
        }
        if c.boot_firmware == Some(BootFirmware::Efi) {
            opts.push("`--boot uefi`".into());
        }
        if c.kvm_signature_visible == Some(true) {
            opts.push("`--features kvm.hidden.state=off`".into());
        }
        if let Some(w) = c.viommu_aw_bits_min {
            opts.push(format!("`--iommu model=intel,driver.aw_bits={w}`"));
        }
        (!opts.is_empty()).then(|| {
            format!(
                "virt-install: {} (a VM that exists: `virt-xml <vm> --edit` with the `--cpu`, `--boot` or `--features` option, the rest with `virsh edit`)",
                opts.join(" ")
            )
        })
    }

    fn restart(&self) -> Option<&'static str> {
        Some("virt-install's VM: `virsh shutdown <vm>` then `virsh start <vm>`")
    }

    fn passthrough(&self) -> Option<&'static str> {
        Some("virt-install: one `--hostdev pci_DDDD_BB_DD_F` per GPU (its node device name, `virsh nodedev-list --cap pci`)")
    }
}
