//! Hints: what to change, where, and what the next boot will show.
//!
//! In a QEMU guest the hints are the prescriptions the firmware model
//! predicts to work (`prescribe`), best first: `hints[0]` is the step to
//! take first. Each says why in numbers and gives the syntax to paste for
//! Proxmox, libvirt and plain QEMU, written by `syntax` from its
//! machine-readable `change`, and what it takes (stop and start the VM,
//! reboot the guest). Elsewhere (bare metal, VMware, Hyper-V, or a guest
//! the model cannot describe) the hints follow from the diagnosis alone,
//! without a prediction (`fallback`). `pci=nocrs` is never suggested:
//! ignoring the firmware's windows trades this failure for address
//! conflicts.

use crate::decide::diagnosis::{Diagnosis, DiagnosisKind};
use crate::decide::fallback;
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::predict::Model;
use crate::decide::prescribe::Prescription;
use crate::decide::syntax::{self, Hypervisor, NamedVm};
use crate::decide::window::{Boot, Firmware, OriginKind, Setup};
use crate::evidence::Evidence;
use crate::model::fw_cfg::Input;
use crate::model::platform::Platform;
use crate::model::size::human;

pub(crate) use crate::decide::syntax::VmTarget;

pub(crate) fn hints(ev: &Evidence, d: &Diagnosis, model: Option<&Model>) -> Vec<Hint> {
    let mut out = Vec::new();
    if d.missing > 0 {
        out.push(Hint::new(
            HintId::CheckPassthrough,
            format!(
                "{} GPU(s) expected, {} present: {} missing. Check that every GPU is passed to this VM and bound to vfio-pci on the host. \
                 {}; on the host, `lspci -nnk -d 10de:` (or the vendor) should say `Kernel driver in use: vfio-pci`.",
                ev.expected.unwrap_or(0),
                ev.gpus.len(),
                d.missing,
                syntax::guest_passthrough(syntax::first_for(ev))
            ),
            Side::Host,
            Some(Restart::Vm),
            Change::default(),
        ));
    }
    let space_problem = matches!(
        d.kind,
        DiagnosisKind::FirmwareLeftUnassigned
            | DiagnosisKind::WindowTooSmall
            | DiagnosisKind::PhysBitsTooSmall
    );
    // The model predicts a VM's 64-bit window. A space problem of the
    // GPUs' own always has a failed 64-bit prefetchable BAR
    // (`diagnosis::classify`): register BARs below 4 GiB alone, or NVIDIA's
    // BAR 0 known from its driver alone, are diagnosed `unknown` and take
    // the fallback's steps (`space::only_low_in_vm`). The host's word on
    // the window (QEMU's, Hyper-V's) is one too, whatever device failed
    // beside it: the model's window is what it names.
    if space_problem {
        if let Some(m) = model {
            let ps = m.prescribe();
            if !ps.is_empty() {
                // The first says what made the window this small; the
                // others need not repeat it. A guest's layer that has no
                // way to make a prescription (OpenStack's hole, LXD's
                // vCPU, which is the host's) gets it after those it can
                // make, in the model's order otherwise.
                let first = syntax::first_for(ev);
                let mut ps: Vec<&Prescription> = ps.iter().collect();
                ps.sort_by_key(|p| syntax::lacks(&p.change, first));
                out.extend(
                    ps.iter()
                        .enumerate()
                        .map(|(i, p)| render(d, m, p, i == 0, first, host_mmio64_mb(ev))),
                );
                return out;
            }
        }
    }
    match d.kind {
        DiagnosisKind::Ok | DiagnosisKind::GpusMissing => {}
        DiagnosisKind::FirmwareLeftUnassigned
            if matches!(
                ev.platform(),
                Platform::Qemu | Platform::OtherVm | Platform::Unknown
            ) && ev.hotplug.is_empty() =>
        {
            if !ev.realloc_active {
                out.push(realloc_hint(
                    &format!(
                        "The {} 64-bit window has room for the {} the GPUs need; the firmware left BARs unassigned, and the guest kernel can place them itself.",
                        d.window_bytes.map(human).unwrap_or_default(),
                        d.needed_bytes.map(human).unwrap_or_default()
                    ),
                    None,
                ));
            }
        }
        // Everything no model predicts: from the diagnosis and the
        // platform judgement alone.
        _ => out.extend(fallback::hints(ev, d)),
    }
    out
}

/// `The GPUs need 256 GiB of 64-bit prefetchable space; the window is 98.5 GiB.`
fn why(d: &Diagnosis) -> String {
    format!(
        "The GPUs need {} of 64-bit prefetchable space; the root bus window is {}.",
        d.needed_bytes
            .map(human)
            .unwrap_or_else(|| "an unknown amount".into()),
        d.window_bytes
            .map(human)
            .unwrap_or_else(|| "unknown".into())
    )
}

/// The `X-PciMmio64Mb` the guest read from fw_cfg: what the host sets.
fn host_mmio64_mb(ev: &Evidence) -> Option<u64> {
    match ev.firmware.fw_cfg.as_ref().map(|f| &f.mmio64_mb) {
        Some(Input::Set(mb)) => Some(*mb),
        _ => None,
    }
}

/// What made the window this small, when the model knows. `host_mmio64`:
/// the `X-PciMmio64Mb` fw_cfg says the host sets.
fn cause(m: &Model, host_mmio64: Option<u64>) -> String {
    let s = &m.setup;
    match (&m.boot, s.firmware) {
        (
            Some(Boot {
                origin: OriginKind::OvmfMmio64,
                aperture,
                ..
            }),
            Firmware::Ovmf(rules),
        ) => {
            let mb = s.mmio64.unwrap_or(0) >> 20;
            let from = if host_mmio64 == Some(mb) {
                format!("the host sets X-PciMmio64Mb={mb} (read from fw_cfg)")
            } else {
                format!("of X-PciMmio64Mb={mb}, as where the window sits implies")
            };
            // The window OVMF makes by itself, without the setting.
            let own = Setup {
                mmio64: None,
                ..s.clone()
            }
            .boot(&m.firmware_gpus)
            .ok()
            .map(|b| b.aperture.size());
            match own {
                // C11: from edk2-stable202505 a smaller value is used as
                // given; before, OVMF would have ignored it.
                Some(o) if rules.mmio64_exact && o > aperture.size() => format!(
                    " OVMF made a {} window at {:#x} because {from}, and this OVMF takes it as given (edk2-stable202505 and later; Debian's 2025.02-2 and later): a stale setting, smaller than the {} window OVMF makes without it.",
                    human(aperture.size()),
                    aperture.start,
                    human(o)
                ),
                _ => format!(
                    " OVMF made a {} window at {:#x} because {from}.",
                    human(aperture.size()),
                    aperture.start
                ),
            }
        }
        (
            Some(Boot {
                origin: OriginKind::OvmfDynamic,
                width,
                aperture,
                ..
            }),
            _,
        ) if *width < s.phys_bits && !s.pdpe1gb => format!(
            " OVMF made a {} window at {:#x}, the top eighth of 40 address bits: without 1 GiB pages (pdpe1gb) it uses 40 of the vCPU's {} bits.",
            human(aperture.size()),
            aperture.start,
            s.phys_bits
        ),
        (
            Some(Boot {
                origin: OriginKind::OvmfDynamic,
                width,
                aperture,
                ..
            }),
            _,
        ) => format!(
            " OVMF made a {} window at {:#x}, the top eighth of the vCPU's {width} address bits.",
            human(aperture.size()),
            aperture.start
        ),
        (
            Some(Boot {
                origin: OriginKind::OvmfClassic,
                aperture,
                ..
            }),
            _,
        ) => format!(
            " OVMF did not trust the vCPU's {} address bits and made its classic {} window at {:#x}.",
            s.phys_bits,
            human(aperture.size()),
            aperture.start
        ),
        (Some(b), Firmware::SeaBios(_)) if b.placed < m.firmware_gpus.len() => format!(
            " SeaBIOS placed the BARs from {:#x} up, past the {} the vCPU's {} bits address; the kernel cannot use what lies beyond.",
            b.aperture.start,
            human(1u64 << s.phys_bits.min(63)),
            s.phys_bits
        ),
        _ => String::new(),
    }
}

/// A prescription as a hint; `speak`: the platform whose syntax it gives
/// (the guest's management layer), `None` for the generic lines;
/// `host_mmio64`: the `X-PciMmio64Mb` fw_cfg says the host sets (a new
/// one must replace it).
pub(super) fn render(
    d: &Diagnosis,
    m: &Model,
    p: &Prescription,
    first: bool,
    speak: Option<Hypervisor>,
    host_mmio64: Option<u64>,
) -> Hint {
    let why = if first {
        format!("{}{}", why(d), cause(m, host_mmio64))
    } else {
        why(d)
    };
    let effect = if p.effect.is_empty() {
        String::new()
    } else {
        format!(" With it {}.", p.effect)
    };
    let c = &p.change;
    let steps = if c.is_two_part() {
        two_part_steps(c, speak)
    } else {
        syntax::guest_steps(c, speak)
    };
    let text = match p.id {
        HintId::CpuPdpe1gb => {
            format!("{why} Give the vCPU 1 GiB pages (the pdpe1gb CPU flag).{effect} {steps}")
        }
        HintId::CpuPhysBits => {
            let bits = c.phys_bits_min.unwrap_or(0);
            let flag = if c.cpu_flags_add.is_empty() {
                ""
            } else {
                " and 1 GiB pages (pdpe1gb: OVMF uses no more than 40 bits without them)"
            };
            format!(
                "{why} Give the vCPU at least {bits} physical address bits{flag}.{effect} The host CPU must have them (`grep -m1 'address sizes' /proc/cpuinfo` on the host). {steps}"
            )
        }
        HintId::OvmfMmio64Aperture => {
            let mb = syntax::aperture_mib(c).unwrap_or(0);
            let width = m.boot.as_ref().map(|b| b.width).unwrap_or(40);
            let set = match host_mmio64 {
                Some(old) => format!(
                    "Replace the host's `X-PciMmio64Mb={old}` with `X-PciMmio64Mb={mb}` (MiB): change the value where it is set, since QEMU refuses a second `-fw_cfg` of one name."
                ),
                None => format!("Set OVMF's 64-bit aperture with `X-PciMmio64Mb={mb}` (MiB)."),
            };
            format!(
                "{why} {set}{effect} \
                 The aperture is placed above RAM at a multiple of its size and must end within the {width} bits OVMF uses, or the firmware hangs before the kernel starts; OVMF before edk2-stable202505 ignores a value smaller than its own window. {steps}"
            )
        }
        HintId::QemuPciHole64Size => {
            let gib = syntax::hole64_bytes(c).map_or(0, |(b, _)| b >> 30);
            let then = if m.realloc {
                "pci=realloc is already active in the guest: its kernel places the BARs there itself"
            } else if c.adds_realloc() {
                "the firmware still leaves the BARs where it did, and the guest kernel, booted with pci=realloc, places them there itself"
            } else {
                "the firmware places the BARs there"
            };
            format!(
                "{why} Enlarge QEMU's 64-bit PCI hole to {gib} GiB{}.{effect} Then {then}. QEMU refuses to start a VM whose hole ends past what the vCPU addresses. {steps}",
                with_bits(c)
            )
        }
        _ => {
            let text = format!(
                "{} The {} 64-bit window has room for the {} the GPUs need; the firmware left BARs unassigned, and the guest kernel can place them itself.",
                if first {
                    cause(m, host_mmio64)
                } else {
                    String::new()
                }
                .trim_start(),
                d.window_bytes.map(human).unwrap_or_default(),
                d.needed_bytes.map(human).unwrap_or_default()
            );
            return realloc_hint(text.trim_start(), Some(p));
        }
    };
    Hint {
        id: p.id,
        text,
        side: p.side,
        restart: Some(p.restart),
        change: p.change.clone(),
        expect: Some(p.expect),
        boots_to_ok: Some(p.boots_to_ok),
    }
}

/// How a step of two parts is made: the guest's part while the guest
/// still runs, then the host's with the VM stopped, so that the one boot
/// after carries both. (Done the other way round, the boot after the host
/// change would not have the guest's part, and a second boot would be
/// needed.)
fn two_part_steps(c: &Change, speak: Option<Hypervisor>) -> String {
    let params: Vec<String> = c
        .kernel_cmdline_add
        .iter()
        .map(|p| format!("`{p}`"))
        .collect();
    let how = syntax::kernel_cmdline(c).unwrap_or_default();
    let host = syntax::guest_steps(&c.host_part(), speak);
    format!(
        "This step has two parts, and the guest's comes first: while the guest still runs, before the VM is stopped, add {} to its kernel command line ({how}; with `remediate=1` in /etc/gpu-preflight.conf, or `gpu_preflight.remediate=1` on the kernel command line, a failing boot has `gpu-preflight remediate` do it by itself). Then, on the host: {host} The next boot carries both parts.",
        params.join(" ")
    )
}

/// ` and give the vCPU 43 physical address bits`: the width a window
/// change needs with it, if any.
fn with_bits(c: &Change) -> String {
    c.phys_bits_min
        .map(|b| format!(" and give the vCPU {b} physical address bits"))
        .unwrap_or_default()
}

fn realloc_hint(why: &str, p: Option<&Prescription>) -> Hint {
    let change = Change {
        kernel_cmdline_add: vec!["pci=realloc".into()],
        ..Change::default()
    };
    Hint {
        id: HintId::GuestPciRealloc,
        text: format!(
            "{why} Add `pci=realloc` to the guest kernel command line: {}. {}.",
            syntax::kernel_cmdline(&change).unwrap_or_default(),
            Restart::Reboot.in_guest()
        ),
        side: Side::Guest,
        restart: Some(Restart::Reboot),
        change,
        expect: p.map(|p| p.expect),
        boots_to_ok: p.map(|p| p.boots_to_ok),
    }
}

/// `text` with its first letter in capitals, to start a sentence.
fn sentence(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The prescriptions of a plan, written for its VM.
pub(crate) fn plan_hints(m: &Model, target: &VmTarget, why: &str) -> Vec<Hint> {
    let vm = NamedVm {
        target,
        has_hole64: m.setup.hole64.is_some(),
        has_mmio64: m.setup.mmio64.is_some(),
    };
    m.prescribe()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // The prediction once, in the first.
            let why = if i == 0 {
                format!("{why} ")
            } else {
                String::new()
            };
            let c = &p.change;
            let what = match p.id {
                HintId::CpuPdpe1gb => {
                    "give the vCPU 1 GiB pages (pdpe1gb), so that OVMF uses all its address bits"
                        .to_string()
                }
                HintId::CpuPhysBits => format!(
                    "give the vCPU {} physical address bits{} (the host CPU must have them)",
                    c.phys_bits_min.unwrap_or(0),
                    if c.cpu_flags_add.is_empty() {
                        ""
                    } else {
                        " and 1 GiB pages (pdpe1gb)"
                    }
                ),
                HintId::OvmfMmio64Aperture => format!(
                    "set OVMF's 64-bit aperture (X-PciMmio64Mb={})",
                    syntax::aperture_mib(c).unwrap_or(0)
                ),
                HintId::QemuPciHole64Size => format!(
                    "enlarge QEMU's 64-bit hole to {}{}",
                    c.qemu_globals
                        .first()
                        .map(|(_, v)| v.as_str())
                        .unwrap_or(""),
                    with_bits(c),
                ),
                _ => "add pci=realloc to the guest's kernel command line".to_string(),
            };
            let what = if c.is_two_part() {
                format!("{what}, with pci=realloc in the guest in the same step")
            } else {
                what
            };
            let effect = if p.effect.is_empty() {
                String::new()
            } else {
                format!(": {}", p.effect)
            };
            let how = if c.is_two_part() {
                format!(
                    "in the guest first, while it still runs (before the VM is stopped; for a VM not booted yet, in its image), add {} to its kernel command line: {}; then {}",
                    c.kernel_cmdline_add
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    syntax::kernel_cmdline(c).unwrap_or_default(),
                    syntax::for_vm(&c.host_part(), p.side, &vm)
                )
            } else {
                syntax::for_vm(c, p.side, &vm)
            };
            Hint {
                id: p.id,
                text: format!("{why}To fix: {what}{effect}. {}.", sentence(&how)),
                side: p.side,
                restart: Some(p.restart),
                change: p.change.clone(),
                expect: Some(p.expect),
                boots_to_ok: Some(p.boots_to_ok),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::sizing::{bits_for, recommended_window};
    use crate::decide::tests::metal;

    const GIB: u64 = 1 << 30;

    #[test]
    fn recommendations_round_up() {
        assert_eq!(recommended_window(256 * GIB), 512 * GIB);
        assert_eq!(recommended_window(1), 64 * GIB);
        assert_eq!(recommended_window(1000 * GIB), 2048 * GIB);
        assert_eq!(bits_for(0x120_0000_0000), 41);
        assert_eq!(bits_for(1 << 41), 41);
    }

    /// A QEMU guest whose DMI names its management layer is told that
    /// layer's settings alone, for the model's prescriptions and the
    /// fallback's steps alike; one that names none keeps the generic
    /// lines.
    const Q35: &str = "Standard PC (Q35 + ICH9, 2009)";

    /// A QEMU 7.2 q35 guest of two GPUs with 128 GiB BARs, one placed,
    /// in a 64-bit window too small for both; DMI as given.
    fn guest(vendor: &str, product: &str, board: Option<(&str, &str)>, bios: &str) -> Evidence {
        use crate::model::platform::{CpuVendor, Firmware};
        let mut ev = metal(40, 2);
        ev.windows[0].range = crate::model::range::Range::new(0x20_0000_0000, 0x3f_ffff_ffff);
        ev.firmware = Firmware {
            bios_vendor: Some(bios.into()),
            bios_version: Some("1.16.3-debian-1.16.3-2".into()),
            sys_vendor: Some(vendor.into()),
            product_name: Some(product.into()),
            product_version: Some("pc-q35-7.2".into()),
            board_vendor: board.map(|b| b.0.into()),
            board_name: board.map(|b| b.1.into()),
            ..Firmware::default()
        };
        ev.cpu.vendor = Some(CpuVendor::Amd);
        ev
    }

    #[test]
    fn a_guest_is_told_the_syntax_of_the_layer_its_dmi_names() {
        let q35 = Q35;
        for bios in ["SeaBIOS", "Unknown BIOS"] {
            for (ev, own, restart) in [
                (
                    guest("KubeVirt", "None", None, bios),
                    "KubeVirt: ",
                    "`virtctl restart <vm>`",
                ),
                (
                    guest("OpenStack Foundation", "OpenStack Nova", None, bios),
                    "OpenStack: ",
                    "`openstack server reboot --hard <server>`",
                ),
                (
                    guest("QEMU", q35, Some(("Canonical Ltd.", "LXD")), bios),
                    "LXD: ",
                    "`lxc restart <instance>`",
                ),
                (
                    guest("QEMU", q35, Some(("LinuxContainers", "Incus")), bios),
                    "Incus: ",
                    "`incus restart <instance>`",
                ),
            ] {
                let d = crate::decide::diagnosis::diagnose(&ev);
                let m = crate::decide::origin::infer(&ev);
                // SeaBIOS: the model's prescriptions; an unknown BIOS: the
                // fallback's steps.
                assert_eq!(m.is_some(), bios == "SeaBIOS", "{own}");
                let hs = hints(&ev, &d, m.as_ref());
                // LXD's and Incus's vCPU is the host's: with the model's
                // prescriptions (address bits first, where no layer is
                // named), what their VM can be given comes first.
                let ids: Vec<HintId> = hs.iter().map(|h| h.id).collect();
                if m.is_some() && matches!(own, "LXD: " | "Incus: ") {
                    assert_eq!(ids, [HintId::GuestPciRealloc, HintId::CpuPhysBits], "{own}");
                } else if m.is_some() {
                    assert_eq!(ids, [HintId::CpuPhysBits, HintId::GuestPciRealloc], "{own}");
                }
                let host: Vec<&Hint> = hs.iter().filter(|h| h.side == Side::Host).collect();
                assert!(!host.is_empty(), "{own}: {hs:?}");
                for h in host {
                    assert!(h.text.contains(own), "{own}: {}", h.text);
                    assert!(h.text.contains(restart), "{own}: {}", h.text);
                    for generic in ["Proxmox", "libvirt:", "QEMU: `"] {
                        assert!(!h.text.contains(generic), "{own}: {}", h.text);
                    }
                }
            }
            let plain = guest("QEMU", q35, None, bios);
            let d = crate::decide::diagnosis::diagnose(&plain);
            let m = crate::decide::origin::infer(&plain);
            let hs = hints(&plain, &d, m.as_ref());
            let h = hs.iter().find(|h| h.side == Side::Host).unwrap();
            assert!(h.text.contains("Proxmox: "), "{}", h.text);
            assert!(h.text.contains("libvirt: "), "{}", h.text);
        }
    }

    /// A guest whose only failed BAR is below 4 GiB, or is NVIDIA's BAR 0
    /// known from `NVRM: BAR0 is 0M` alone, is not the model's to
    /// prescribe for even where its setup is known: the fallback decides,
    /// the 64-bit window first for the driver's line in a VM
    /// (`space::only_low_in_vm`), the port's room for a typed register BAR
    /// (the GPU is on bus 1).
    #[test]
    fn a_guests_register_bar_is_the_fallbacks_not_the_models() {
        use crate::decide::diagnosis::DiagnosisKind;
        let run = |ev: &Evidence| {
            let d = crate::decide::diagnosis::diagnose(ev);
            let m = crate::decide::origin::infer(ev);
            assert!(m.is_some(), "the setup is known");
            let ids: Vec<HintId> = hints(ev, &d, m.as_ref()).iter().map(|h| h.id).collect();
            (d.kind, ids)
        };
        let mut ev = guest("QEMU", Q35, None, "SeaBIOS");
        assert_eq!(
            run(&ev),
            (
                DiagnosisKind::WindowTooSmall,
                vec![HintId::CpuPhysBits, HintId::GuestPciRealloc]
            )
        );
        let b = &mut ev.gpus[0].bars[0];
        (b.index, b.mem64, b.prefetchable, b.type_known) = (0, false, false, false);
        (b.size, b.size_source) = (None, None);
        let (kind, ids) = run(&ev);
        assert_eq!(kind, DiagnosisKind::Unknown);
        // The vCPU's 40 bits are the window's reach here.
        assert_eq!(ids[0], HintId::CpuPhysBits, "{ids:?}");
        let b = &mut ev.gpus[0].bars[0];
        (b.type_known, b.size) = (true, Some(16 << 20));
        let (kind, ids) = run(&ev);
        assert_eq!(kind, DiagnosisKind::Unknown);
        assert_eq!(ids[0], HintId::VmHotplugReserve, "{ids:?}");
    }

    #[test]
    fn bare_metal_past_the_cpus_reach_is_told_to_shrink_not_to_grow() {
        let ev = metal(40, 8);
        let d = crate::decide::diagnosis::diagnose(&ev);
        let h = hints(&ev, &d, None);
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!((h[0].id, h[0].side), (HintId::SmallerBars, Side::Firmware));
        assert!(h[0].text.contains("Resizable BAR"), "{}", h[0].text);
        assert!(!h[0].text.contains("2 TiB"), "{}", h[0].text);
        // With the bits to reach it, the firmware's window is the fix.
        let ev = metal(46, 8);
        let d = crate::decide::diagnosis::diagnose(&ev);
        assert_eq!(hints(&ev, &d, None)[0].id, HintId::FirmwareAbove4g);
    }
}
