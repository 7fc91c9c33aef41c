//! The fix for a failure the host side reported (`decide::host`): the
//! setting of the hypervisor or VMM that said no, in its numbers.

use super::vm::vmware;
use super::{plain, Ctx, GIB};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::host::{weight, Shortfall, Weight};
use crate::decide::sizing::bits_for;
use crate::decide::syntax::{self, Hypervisor};
use crate::model::size::human;
use crate::parse::hypervisor::HostMessage;

/// Hyper-V's default high MMIO gap (`HighMemoryMappedIoSpace`, 512 MB on
/// a generation 2 VM), which the projects that hit its start error went
/// back to (Easy-GPU-PV issues 40 and 153).
const HYPERV_DEFAULT_HIGH: u64 = 512 << 20;

/// What Microsoft's Discrete Device Assignment guide sets below 4 GiB
/// for a GPU (`Set-VM -LowMemoryMappedIoSpace 3Gb`).
const HYPERV_DDA_LOW: u64 = 3 * GIB;

pub(super) fn hints(c: &Ctx, m: &HostMessage) -> Vec<Hint> {
    match m {
        HostMessage::VmwarePages { .. } => vmware(c),
        HostMessage::HypervUpperMmio { top, limit } => vec![hyperv_below(c, *top, *limit)],
        HostMessage::QemuPhysBits { need, bits, .. } => vec![qemu_phys_bits(c, *need, *bits)],
        HostMessage::OpenvmmMmio { low, need, have } => {
            vec![openvmm_range(c, *low, need.saturating_sub(*have))]
        }
        HostMessage::DxgkrnlIospace { .. } => vec![dxgkrnl_gaps(c)],
        HostMessage::KvmMemslot { start, size, .. }
            if weight(m) == Weight::Failure(Shortfall::AddressLimit) =>
        {
            vec![kvm_memslot(c, start.saturating_add(*size))]
        }
        HostMessage::CloudHypervisorMapRegion { .. } => vec![cloud_hypervisor(c)],
        HostMessage::BhyveMapFailed => vec![bhyve(c)],
        // Notes and traces are no failure: nothing to change.
        _ => Vec::new(),
    }
}

/// Hyper-V's high MMIO gap ends past what the host addresses: it must
/// shrink, the opposite of a device that needs more.
fn hyperv_below(c: &Ctx, top: Option<u64>, limit: Option<u64>) -> Hint {
    let by = match (top, limit) {
        (Some(t), Some(l)) if t > l => format!(
            " by at least {} (to end below {l:#x}, the {} the host's CPU addresses)",
            human(t - l),
            human(l)
        ),
        _ => String::new(),
    };
    let change = Change {
        mmio64_bytes_max: Some(HYPERV_DEFAULT_HIGH),
        ..Change::default()
    };
    Hint::new(
        HintId::HypervMmio,
        format!(
            "{} Make the VM's high MMIO gap smaller{by}. {} (Hyper-V's default, which a partitioned GPU's driver works with); \
             or run the VM on a host whose CPU addresses more physical memory. {}.",
            c.why,
            syntax::instruction(Hypervisor::HyperV, &change),
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// QEMU refused to start: the vCPU must address the guest's highest
/// address, or less must lie above RAM.
fn qemu_phys_bits(c: &Ctx, need: u64, had: u32) -> Hint {
    let bits = bits_for(need.saturating_add(1)).max(had + 1);
    let change = Change {
        phys_bits_min: Some(bits),
        ..Change::default()
    };
    // In the syntax of the guest's management layer where the text names
    // one (`syntax::first_for`), else QEMU's front ends'.
    let able = syntax::for_guest(&change, syntax::first_for(c.ev));
    Hint::new(
        HintId::CpuPhysBits,
        format!(
            "{} Give the vCPU at least {bits} physical address bits (the host's CPU must have them too): {}. \
             On a host whose CPU has fewer, put less above the guest's RAM instead: a smaller 64-bit PCI hole, or less memory hot-plug room (QEMU's maxmem; Incus `limits.memory.hotplug`). {}",
            c.why,
            syntax::list(&change, &able, 1).unwrap_or_default(),
            syntax::restart(&able)
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// OpenVMM's MMIO range for its root complex is short.
fn openvmm_range(c: &Ctx, low: bool, short: u64) -> Hint {
    plain(
        HintId::VmmMmioRange,
        format!(
            "{} The VMM sets that range aside for the devices' BARs {} and it is {} short: widen OpenVMM's {} MMIO range for the root complex in the runtime's configuration \
             (the Kata runtime for OpenVMM widened its low range from 320 MiB to 640 MiB for 8 GPUs and 6 NVSwitches, microsoft/kata-containers pull request 460), or pass fewer devices to one VM. {}.",
            c.why,
            if low { "below 4 GiB (their register BARs)" } else { "above 4 GiB" },
            human(short),
            if low { "low" } else { "high" },
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
    )
}

/// dxgkrnl found no room for the virtual GPU in the VM's MMIO gaps: both
/// gaps larger, as for an assigned GPU.
fn dxgkrnl_gaps(c: &Ctx) -> Hint {
    let change = Change {
        mmio64_bytes_min: Some(c.rec),
        mmio32_bytes_min: Some(HYPERV_DDA_LOW),
        ..Change::default()
    };
    Hint::new(
        HintId::HypervMmio,
        format!(
            "{} Give the VM larger MMIO gaps, below and above 4 GiB (the sizes Microsoft's guide for assigned GPUs uses): {}. {}.",
            c.why,
            syntax::instruction(Hypervisor::HyperV, &change),
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}

/// KVM refused a range past the host CPU's address width: the guest's
/// firmware placed it from the top of an address space wider than the
/// host's (the vCPU's `phys-bits` past the host's), or above RAM and a
/// hot-plug area that reach that far. The VMM's mapping of the BAR into
/// the guest failed (`vmm-bar-mapping`); the fix is in the vCPU's width
/// and what lies above RAM.
fn kvm_memslot(c: &Ctx, end: u64) -> Hint {
    plain(
        HintId::VmmBarMapping,
        format!(
            "{} The range ends at {end:#x} ({} bits). Give the vCPU no more physical address bits than the host's CPU has, so that the firmware places the BARs below that: \
             QEMU `-cpu ...,host-phys-bits=on`; Proxmox `qm set <vmid> --cpu <your CPU type>,phys-bits=host`; libvirt `<maxphysaddr mode='passthrough'/>` in `<cpu>`. \
             If it is already so, put less above the guest's RAM: less memory hot-plug room (QEMU's maxmem; Proxmox's memory hot-plug), or a smaller 64-bit PCI hole. \
             The host's width is the `address sizes` line of its /proc/cpuinfo. {}.",
            c.why,
            // 64 past 2^63, where the next power of two overflows (a
            // non-canonical address: corpus 385).
            end.checked_next_power_of_two().map_or(u64::BITS, u64::trailing_zeros),
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
    )
}

/// Cloud Hypervisor refused a device whose BAR it could not map into the
/// host IOMMU.
fn cloud_hypervisor(c: &Ctx) -> Hint {
    plain(
        HintId::VmmBarMapping,
        format!(
            "{} Cloud Hypervisor maps every passed-through device's BARs into the host IOMMU for peer-to-peer DMA, and before its pull request 7030 a mapping that failed refused the device \
             (a second GPU is the case reported, kata-containers issue 10582); since then the failure costs only peer-to-peer DMA to that BAR. \
             Run a Cloud Hypervisor release with that change (for Kata, the one its release bundles), or one GPU per VM until then. {}.",
            c.why,
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
    )
}

/// bhyve could not map a passed-through BAR into the guest.
fn bhyve(c: &Ctx) -> Hint {
    plain(
        HintId::VmmBarMapping,
        format!(
            "{} bhyve maps a passed-through device's BARs into the guest at the addresses the guest's firmware gives them (`vm_map_pptdev_mmio`), and the host refused that mapping. \
             Check that the device is attached to the host's `ppt` driver (`pciconf -lv`: `ppt0@pci0:2:0:0`), pass every function of the card, and use a bhyve and guest firmware recent enough for the device's 64-bit BARs; \
             bhyve's full console output says which BAR. {}.",
            c.why,
            Restart::Vm.sentence()
        ),
        Side::Host,
        Some(Restart::Vm),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::diagnosis::diagnose;
    use crate::evidence::Evidence;

    fn first(m: HostMessage) -> Hint {
        let ev = Evidence {
            host_messages: vec![m],
            ..Evidence::default()
        };
        let d = diagnose(&ev);
        crate::decide::hints::hints(&ev, &d, None)
            .into_iter()
            .next()
            .expect("a hint")
    }

    #[test]
    fn each_refusal_gets_its_own_setting_with_its_numbers() {
        let h = first(HostMessage::VmwarePages {
            needed: 33566722,
            limit: 917504,
        });
        assert_eq!(h.id, HintId::Vmware64bitMmio);
        // 128 GiB and 8 MiB needed: twice that, to a power of two, as
        // every recommendation.
        assert_eq!(h.change.mmio64_bytes_min, Some(512 * GIB));
        let h = first(HostMessage::HypervUpperMmio {
            top: Some(0x17_dfff_f000),
            limit: Some(0x10_0000_0000),
        });
        assert_eq!(h.id, HintId::HypervMmio);
        assert_eq!(h.change.mmio64_bytes_max, Some(512 << 20));
        assert!(
            h.text.contains("smaller by at least 31.5 GiB"),
            "{}",
            h.text
        );
        let h = first(HostMessage::QemuPhysBits {
            limit: 0xf_ffff_ffff,
            need: 0x10_7fff_ffff,
            bits: 36,
            passthrough: true,
        });
        assert_eq!(
            (h.id, h.change.phys_bits_min),
            (HintId::CpuPhysBits, Some(37))
        );
        let h = first(HostMessage::DxgkrnlIospace { errno: Some(6) });
        assert_eq!(h.id, HintId::HypervMmio);
        assert_eq!(h.change.mmio32_bytes_min, Some(3 * GIB));
        assert_eq!(
            first(HostMessage::OpenvmmMmio {
                low: true,
                need: 0x1450_0000,
                have: 0x1400_0000
            })
            .id,
            HintId::VmmMmioRange
        );
        assert_eq!(
            first(HostMessage::CloudHypervisorMapRegion { errno: Some(17) }).id,
            HintId::VmmBarMapping
        );
        assert_eq!(first(HostMessage::BhyveMapFailed).id, HintId::VmmBarMapping);
        // KVM's EINVAL past 512 GiB: past the host's width (a Proxmox
        // host's journal, the paste collection of 2026-12-05).
        let h = first(HostMessage::KvmMemslot {
            start: 0x4000_0000_0000,
            size: 0x200_0000,
            errno: Some(22),
        });
        assert_eq!(h.id, HintId::VmmBarMapping);
        assert!(
            h.text.contains("host-phys-bits=on") && h.text.contains("(47 bits)"),
            "{}",
            h.text
        );
        // A range past 2^63 (a non-canonical address, corpus 385): 64
        // bits, where the next power of two would overflow.
        let h = first(HostMessage::KvmMemslot {
            start: 0x8508_0000_0000_0000,
            size: 0x4_0000_0000,
            errno: Some(22),
        });
        assert!(h.text.contains("(64 bits)"), "{}", h.text);
    }

    #[test]
    fn a_kvm_memslot_refused_is_a_failure_only_past_the_narrowest_host() {
        use crate::decide::diagnosis::DiagnosisKind;
        for (start, errno, fails) in [
            (0x4000_0000_0000, Some(22), true),
            (0x40_0000_0000, Some(22), false),
            (0x4000_0000_0000, Some(17), false),
            (0x4000_0000_0000, None, false),
        ] {
            let ev = Evidence {
                host_messages: vec![HostMessage::KvmMemslot {
                    start,
                    size: 0x200_0000,
                    errno,
                }],
                ..Evidence::default()
            };
            let d = diagnose(&ev);
            assert_eq!(
                d.kind == DiagnosisKind::PhysBitsTooSmall,
                fails,
                "{start:#x} {errno:?}: {d:?}"
            );
            assert_eq!(
                !crate::decide::hints::hints(&ev, &d, None).is_empty(),
                fails
            );
        }
    }

    #[test]
    fn notes_get_no_hint() {
        let ev = Evidence {
            host_messages: vec![HostMessage::Memlock { limit: Some(65536) }],
            ..Evidence::default()
        };
        let d = diagnose(&ev);
        assert!(crate::decide::hints::hints(&ev, &d, None).is_empty());
    }
}
