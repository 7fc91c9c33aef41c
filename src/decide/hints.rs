//! Hints: what to change, where, with sizes computed from the diagnosis.
//!
//! Each hint has a stable id (scripts and the remediation key on it), says
//! why it applies in numbers, and gives syntax to paste for Proxmox, libvirt
//! and plain QEMU. `pci=nocrs` is never suggested: ignoring the firmware's
//! windows trades this failure for address conflicts.

use crate::decide::diagnosis::{Diagnosis, DiagnosisKind};
use crate::decide::summary::describe;
use crate::evidence::Evidence;
use crate::model::platform::{FirmwareKind, Platform, QemuMachine};
use crate::model::size::human;

pub(crate) const GUEST_PCI_REALLOC: &str = "guest-pci-realloc";
pub(crate) const QEMU_PCI_HOLE64_SIZE: &str = "qemu-pci-hole64-size";
pub(crate) const OVMF_MMIO64_APERTURE: &str = "ovmf-mmio64-aperture";
pub(crate) const CPU_PHYS_BITS: &str = "cpu-phys-bits";
pub(crate) const FIRMWARE_ABOVE_4G: &str = "firmware-above-4g";
pub(crate) const CHECK_PASSTHROUGH: &str = "check-passthrough";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hint {
    pub id: &'static str,
    pub text: String,
}

const GIB: u64 = 1 << 30;

/// A window size to recommend: twice the need, as a power of two in GiB, so
/// the guest keeps room for other devices and a later GPU swap.
pub(crate) fn recommended_window(needed: u64) -> u64 {
    needed
        .saturating_mul(2)
        .max(64 * GIB)
        .checked_next_power_of_two()
        .unwrap_or(1 << 62)
}

/// Physical address bits that reach `end` with the window doubled.
pub(crate) fn recommended_phys_bits(end: u64) -> u32 {
    let bits = 64 - end.saturating_sub(1).leading_zeros();
    (bits + 1).clamp(40, 52)
}

pub(crate) fn hints(ev: &Evidence, d: &Diagnosis) -> Vec<Hint> {
    let mut out = Vec::new();
    let platform = ev.firmware.platform();
    let fw = ev.firmware.kind();
    let needed = d.needed_bytes;
    let win = d
        .window_bytes
        .map(human)
        .unwrap_or_else(|| "unknown".into());
    let qemu_like = matches!(platform, Platform::Qemu | Platform::Unknown);
    let ovmf_like = matches!(fw, FirmwareKind::Ovmf | FirmwareKind::Unknown);
    let metal_like = matches!(platform, Platform::BareMetal | Platform::Unknown);

    if d.missing > 0 {
        out.push(Hint {
            id: CHECK_PASSTHROUGH,
            text: format!(
                "{} GPU(s) expected, {} present: {} missing. Check that every GPU is passed to this VM and bound to vfio-pci on the host. \
                 Proxmox: `qm config <vmid> | grep hostpci`; libvirt: `virsh dumpxml <vm> | grep -A4 '<hostdev'`; \
                 QEMU: one `-device vfio-pci,host=<bdf>` per GPU; on the host, `lspci -nnk -d 10de:` (or the vendor) should say `Kernel driver in use: vfio-pci`.",
                ev.expected.unwrap_or(0),
                ev.gpus.len(),
                d.missing
            ),
        });
    }

    match d.kind {
        DiagnosisKind::Ok | DiagnosisKind::GpusMissing => {}
        DiagnosisKind::FirmwareLeftUnassigned => {
            if !ev.realloc_active {
                out.push(realloc_hint(&format!(
                    "The {win} 64-bit window has room for the {} the GPUs need; the firmware left BARs unassigned, and the guest kernel can place them itself.",
                    needed.map(human).unwrap_or_default()
                )));
            }
        }
        DiagnosisKind::WindowTooSmall => {
            let need = needed.unwrap_or(0);
            let rec = recommended_window(need);
            let why = format!(
                "The GPUs need {} of 64-bit prefetchable space; the root bus window is {win}.",
                human(need)
            );
            if qemu_like {
                out.push(hole64_hint(ev, rec, &why));
            }
            if ovmf_like && qemu_like {
                out.push(ovmf_hint(rec, &why));
            }
            if metal_like {
                out.push(above_4g_hint(need, &why));
            }
            if !qemu_like && !metal_like {
                let how = match platform {
                    Platform::Vmware => format!(
                        "VMware: `pciPassthru.use64bitMMIO = \"TRUE\"` and `pciPassthru.64bitMMIOSizeGB = \"{}\"` in the VM's .vmx",
                        rec / GIB
                    ),
                    Platform::HyperV => format!("Hyper-V: `Set-VM -VMName <vm> -HighMemoryMappedIoSpace {}GB`", rec / GIB),
                    _ => "in the hypervisor's settings for the VM's 64-bit MMIO (PCI hole) size".to_string(),
                };
                out.push(Hint {
                    id: QEMU_PCI_HOLE64_SIZE,
                    text: format!(
                        "{why} Give the VM a 64-bit MMIO space of at least {}: {how}.",
                        human(rec)
                    ),
                });
            }
        }
        DiagnosisKind::PhysBitsTooSmall => {
            let end = d
                .needed_end
                .unwrap_or(d.addressable_limit.unwrap_or(1 << 40).saturating_mul(2));
            let bits = recommended_phys_bits(end);
            let cpu = if matches!(platform, Platform::BareMetal) {
                "the CPU"
            } else {
                "the vCPU"
            };
            let have = ev
                .phys_bits
                .map(|b| format!("{b} bits ({})", human(1u64 << b.min(63))))
                .unwrap_or_else(|| "too few bits".into());
            let why = match (needed, d.needed_end) {
                (Some(n), Some(e)) => format!("The GPUs need {} of 64-bit space, reaching {e:#x}; {cpu} addresses {have}.", human(n)),
                _ => format!("The kernel found part of the 64-bit window not CPU addressable; {cpu} addresses {have}."),
            };
            if qemu_like {
                out.push(Hint {
                    id: CPU_PHYS_BITS,
                    text: format!(
                        "{why} Give the vCPU at least {bits} physical address bits (the host CPU must have them too; `grep -m1 'address sizes' /proc/cpuinfo` on the host). \
                         Proxmox: `qm set <vmid> --cpu host,phys-bits=host` (or `phys-bits={bits}`); \
                         libvirt: `<cpu mode='host-passthrough'><maxphysaddr mode='passthrough'/></cpu>`; \
                         QEMU: `-cpu host,host-phys-bits=on` or `-cpu <model>,phys-bits={bits}`."
                    ),
                });
            }
            if !qemu_like && !metal_like {
                out.push(Hint {
                    id: CPU_PHYS_BITS,
                    text: format!(
                        "{why} Give the VM's CPU at least {bits} physical address bits in the hypervisor's CPU configuration (the host CPU must have them too)."
                    ),
                });
            }
            if metal_like {
                out.push(above_4g_hint(needed.unwrap_or(0), &why));
            }
        }
        DiagnosisKind::Unknown => {
            // Only in a VM, or where the kernel itself asked for it: on bare
            // metal realloc can make things worse, and without the numbers
            // there is no proof it helps.
            let vm = matches!(
                platform,
                Platform::Qemu | Platform::Vmware | Platform::HyperV | Platform::OtherVm
            );
            if !ev.realloc_active
                && d.failed_bars > 0
                && (vm || (platform == Platform::Unknown && ev.realloc_advised))
            {
                out.push(realloc_hint(&format!(
                    "{}. The kernel can release and re-place bridge windows itself; whether that is enough cannot be told from what is known.",
                    describe(ev, d)
                )));
            }
        }
    }
    out
}

fn realloc_hint(why: &str) -> Hint {
    Hint {
        id: GUEST_PCI_REALLOC,
        text: format!(
            "{why} Add `pci=realloc` to the guest kernel command line: Debian/Ubuntu: append it to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and run `update-grub`; \
             Fedora/RHEL: `grubby --update-kernel=ALL --args=pci=realloc`; or let `gpu-preflight remediate` do it once."
        ),
    }
}

fn hole64_hint(ev: &Evidence, rec: u64, why: &str) -> Hint {
    let g = rec / GIB;
    let prop = match ev.firmware.qemu_machine() {
        Some(QemuMachine::I440fx) => "i440FX-pcihost",
        _ => "q35-pcihost",
    };
    Hint {
        id: QEMU_PCI_HOLE64_SIZE,
        text: format!(
            "{why} Enlarge QEMU's 64-bit PCI hole to {g} GiB. Proxmox: add `-global {prop}.pci-hole64-size={g}G` to the `args:` line of /etc/pve/qemu-server/<vmid>.conf (one `args:` line per VM: append to it if there is one); \
             libvirt: `<controller type='pci' index='0' model='{}'><pcihole64 unit='KiB'>{}</pcihole64></controller>`; \
             QEMU: `-global {prop}.pci-hole64-size={g}G`. The firmware may still leave BARs unassigned in the larger window: then add `pci=realloc` in the guest too.",
            if prop == "q35-pcihost" { "pcie-root" } else { "pci-root" },
            rec / 1024
        ),
    }
}

fn ovmf_hint(rec: u64, why: &str) -> Hint {
    let mb = rec >> 20;
    Hint {
        id: OVMF_MMIO64_APERTURE,
        text: format!(
            "{why} OVMF sizes its own 64-bit MMIO aperture; set it to {} so the firmware places every BAR. \
             Proxmox: add `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}` to the `args:` line of /etc/pve/qemu-server/<vmid>.conf; \
             libvirt: `<qemu:commandline><qemu:arg value='-fw_cfg'/><qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,string={mb}'/></qemu:commandline>` \
             (root element with xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'); LXD: `raw.qemu: -fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}`; \
             QEMU: `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}`.",
            human(rec)
        ),
    }
}

fn above_4g_hint(need: u64, why: &str) -> Hint {
    Hint {
        id: FIRMWARE_ABOVE_4G,
        text: format!(
            "{why} In the system firmware setup enable \"Above 4G Decoding\" (and, where offered, set the MMIO high base/size to at least {}); \
             enable \"Resizable BAR\" only if the GPUs need it.",
            human(recommended_window(need))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recommendations_round_up() {
        assert_eq!(recommended_window(256 * GIB), 512 * GIB);
        assert_eq!(recommended_window(1), 64 * GIB);
        assert_eq!(recommended_window(1000 * GIB), 2048 * GIB);
        // 1.125 TiB needs 41 bits; one more leaves room to grow.
        assert_eq!(recommended_phys_bits(0x120_0000_0000), 42);
        assert_eq!(recommended_phys_bits(1 << 41), 42);
        assert_eq!(recommended_phys_bits(5), 40);
    }
}
