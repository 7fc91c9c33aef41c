//! Hints: what to change, where, and what the next boot will show.
//!
//! In a QEMU guest the hints are the prescriptions the firmware model
//! predicts to work (`prescribe`), best first: `hints[0]` is the step to
//! take first. Each says why in numbers and gives the syntax to paste for
//! Proxmox, libvirt and plain QEMU, generated from its machine-readable
//! `change`, and what it takes (stop and start the VM, reboot the guest).
//! Elsewhere (bare metal, VMware, Hyper-V, or a guest the model cannot
//! describe) the hints follow from the diagnosis alone, without a
//! prediction. `pci=nocrs` is never suggested: ignoring the firmware's
//! windows trades this failure for address conflicts.

use crate::decide::diagnosis::{Diagnosis, DiagnosisKind};
use crate::decide::fallback;
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::prescribe::{Model, Prescription};
use crate::decide::window::{Boot, Firmware, OriginKind};
use crate::evidence::Evidence;
use crate::model::platform::Platform;
use crate::model::size::human;
use crate::parse::qemu_args;

/// What a change on the host takes.
const HOST_RESTART: &str = "It takes effect when the VM is stopped and started again: Proxmox: Shutdown, then Start (or `qm reboot <vmid>`, which applies pending changes); libvirt: `virsh shutdown` then `virsh start`. A reboot inside the guest keeps the old settings.";

pub(crate) fn hints(ev: &Evidence, d: &Diagnosis, model: Option<&Model>) -> Vec<Hint> {
    let mut out = Vec::new();
    if d.missing > 0 {
        out.push(Hint {
            id: HintId::CheckPassthrough,
            text: format!(
                "{} GPU(s) expected, {} present: {} missing. Check that every GPU is passed to this VM and bound to vfio-pci on the host. \
                 Proxmox: `qm config <vmid> | grep hostpci`; libvirt: `virsh dumpxml <vm> | grep -A4 '<hostdev'`; \
                 QEMU: one `-device vfio-pci,host=<bdf>` per GPU; on the host, `lspci -nnk -d 10de:` (or the vendor) should say `Kernel driver in use: vfio-pci`.",
                ev.expected.unwrap_or(0),
                ev.gpus.len(),
                d.missing
            ),
            side: Side::Host,
            restart: Some(Restart::Vm),
            change: Change::default(),
            expect: None,
            boots_to_ok: None,
        });
    }
    let space_problem = matches!(
        d.kind,
        DiagnosisKind::FirmwareLeftUnassigned
            | DiagnosisKind::WindowTooSmall
            | DiagnosisKind::PhysBitsTooSmall
    );
    // The model predicts the 64-bit window; register BARs below 4 GiB are
    // the ports' windows there (`space`).
    if space_problem && !crate::decide::space::only_low(ev) {
        if let Some(m) = model {
            let ps = m.prescribe();
            if !ps.is_empty() {
                // The first says what made the window this small; the
                // others need not repeat it.
                out.extend(ps.iter().enumerate().map(|(i, p)| render(d, m, p, i == 0)));
                return out;
            }
        }
    }
    match d.kind {
        DiagnosisKind::Ok | DiagnosisKind::GpusMissing => {}
        DiagnosisKind::FirmwareLeftUnassigned
            if matches!(
                ev.firmware.platform(),
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

/// What made the window this small, when the model knows.
fn cause(m: &Model) -> String {
    let s = &m.setup;
    match (&m.boot, s.firmware) {
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

fn render(d: &Diagnosis, m: &Model, p: &Prescription, first: bool) -> Hint {
    let why = if first {
        format!("{}{}", why(d), cause(m))
    } else {
        why(d)
    };
    let effect = if p.effect.is_empty() {
        String::new()
    } else {
        format!(" With it {}.", p.effect)
    };
    let c = &p.change;
    let text = match p.id {
        HintId::CpuPdpe1gb => format!(
            "{why} Give the vCPU 1 GiB pages (the pdpe1gb CPU flag).{effect} \
             Proxmox: Hardware > Processors > Advanced > Extra CPU Flags: pdpe1gb on, or `qm set <vmid> --cpu <your CPU type>,flags=+pdpe1gb` (keep the flags you have; CPU type `host` has it too); \
             libvirt: `<feature policy='require' name='pdpe1gb'/>` inside `<cpu>`; QEMU: `-cpu <model>,+pdpe1gb`. {HOST_RESTART}"
        ),
        HintId::CpuPhysBits => {
            let bits = c.phys_bits_min.unwrap_or(0);
            let flag = !c.cpu_flags_add.is_empty();
            format!(
                "{why} Give the vCPU at least {bits} physical address bits{}.{effect} The host CPU must have them (`grep -m1 'address sizes' /proc/cpuinfo` on the host). \
                 Proxmox: `qm set <vmid> --cpu <your CPU type>,phys-bits={bits}{}` (no GUI field; `phys-bits=host` takes the host's; CPU type `host` has {}); \
                 libvirt: `<maxphysaddr mode='emulate' bits='{bits}'/>`{} inside `<cpu>` (with `mode='host-passthrough'`: `<maxphysaddr mode='passthrough'/>`); \
                 QEMU: `-cpu <model>,phys-bits={bits}{}`. {HOST_RESTART}",
                if flag { " and 1 GiB pages (pdpe1gb: OVMF uses no more than 40 bits without them)" } else { "" },
                if flag { ",flags=+pdpe1gb" } else { "" },
                if flag { "both" } else { "them" },
                if flag { " and `<feature policy='require' name='pdpe1gb'/>`" } else { "" },
                if flag { ",+pdpe1gb" } else { "" },
            )
        }
        HintId::OvmfMmio64Aperture => {
            let mb = c.fw_cfg.first().map(|(_, v)| v.clone()).unwrap_or_default();
            let width = m.boot.as_ref().map(|b| b.width).unwrap_or(40);
            format!(
                "{why} Set OVMF's 64-bit aperture with `X-PciMmio64Mb={mb}` (MiB).{effect} \
                 The aperture is placed above RAM at a multiple of its size and must end within the {width} bits OVMF uses, or the firmware hangs before the kernel starts; OVMF before edk2-stable202505 ignores a value smaller than its own window. \
                 Proxmox: add `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}` to the `args:` line of /etc/pve/qemu-server/<vmid>.conf (root only, no GUI field; `qm set <vmid> --args` replaces the whole line, so keep what is there); \
                 libvirt: `<qemu:commandline><qemu:arg value='-fw_cfg'/><qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,string={mb}'/></qemu:commandline>` \
                 (root element with xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'); LXD: `raw.qemu: -fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}`; \
                 QEMU: `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string={mb}`. {HOST_RESTART}"
            )
        }
        HintId::QemuPciHole64Size => {
            let (prop, size) = c.qemu_globals.first().cloned().unwrap_or_default();
            let gib: u64 = size.trim_end_matches('G').parse().unwrap_or(0);
            let model = if prop.starts_with("i440FX") { "pci-root" } else { "pcie-root" };
            let then = if m.realloc {
                "pci=realloc is already active in the guest: its kernel places the BARs there itself"
            } else {
                "the firmware still leaves the BARs where it did: after that boot add `pci=realloc` in the guest, whose kernel then places them there"
            };
            format!(
                "{why} Enlarge QEMU's 64-bit PCI hole to {gib} GiB.{effect} Then {then}. QEMU refuses to start a VM whose hole ends past what the vCPU addresses. \
                 Proxmox: add `-global {prop}={size}` to the `args:` line of /etc/pve/qemu-server/<vmid>.conf (root only, no GUI field; `qm set <vmid> --args` replaces the whole line, so keep what is there); \
                 libvirt: `virsh edit <vm>`, and in the existing `<controller type='pci' index='0' model='{model}'>` add `<pcihole64 unit='KiB'>{}</pcihole64>`; \
                 QEMU: `-global {prop}={size}`. {HOST_RESTART}",
                gib << 20
            )
        }
        _ => {
            let text = format!(
                "{} The {} 64-bit window has room for the {} the GPUs need; the firmware left BARs unassigned, and the guest kernel can place them itself.",
                if first { cause(m) } else { String::new() }.trim_start(),
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

fn realloc_hint(why: &str, p: Option<&Prescription>) -> Hint {
    Hint {
        id: HintId::GuestPciRealloc,
        text: format!(
            "{why} Add `pci=realloc` to the guest kernel command line: Debian/Ubuntu: append it to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and run `update-grub`; \
             Fedora/RHEL: `grubby --update-kernel=ALL --args=pci=realloc`; or let `gpu-preflight remediate` do it once. It takes effect at the guest's next boot."
        ),
        side: Side::Guest,
        restart: Some(Restart::Reboot),
        change: Change {
            kernel_cmdline_add: vec!["pci=realloc"],
            ..Change::default()
        },
        expect: p.map(|p| p.expect),
        boots_to_ok: p.map(|p| p.boots_to_ok),
    }
}

/// Where a plan's prescriptions are to be typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VmTarget {
    /// A Proxmox VM: its id, its `cpu:` property as it stands (`kvm64`
    /// when it has none) and its `args:` line.
    Proxmox {
        vmid: String,
        cpu: String,
        args: String,
    },
    /// A libvirt domain, by name.
    Libvirt { name: String },
    /// Plain QEMU arguments.
    Qemu,
}

/// `x86-64-v2-AES,flags=+aes` with `+pdpe1gb` added and `phys-bits=N`.
fn proxmox_cpu(current: &str, change: &Change) -> String {
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

/// `text` with its first letter in capitals, to start a sentence.
fn sentence(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Said after a setting the VM already has one of.
fn replacing(has: bool, what: &str) -> String {
    if has {
        format!(", in place of the {what} there")
    } else {
        String::new()
    }
}

/// The prescriptions of a plan, written for its VM.
pub(crate) fn plan_hints(m: &Model, target: &VmTarget, why: &str) -> Vec<Hint> {
    m.prescribe()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // The prediction once, in the first.
            let why = if i == 0 { format!("{why} ") } else { String::new() };
            let c = &p.change;
            let what = match p.id {
                HintId::CpuPdpe1gb => "give the vCPU 1 GiB pages (pdpe1gb), so that OVMF uses all its address bits".to_string(),
                HintId::CpuPhysBits => format!(
                    "give the vCPU {} physical address bits{} (the host CPU must have them)",
                    c.phys_bits_min.unwrap_or(0),
                    if c.cpu_flags_add.is_empty() { "" } else { " and 1 GiB pages (pdpe1gb)" }
                ),
                HintId::OvmfMmio64Aperture => format!(
                    "set OVMF's 64-bit aperture (X-PciMmio64Mb={})",
                    c.fw_cfg.first().map(|(_, v)| v.as_str()).unwrap_or("")
                ),
                HintId::QemuPciHole64Size => format!(
                    "enlarge QEMU's 64-bit hole to {}{}",
                    c.qemu_globals.first().map(|(_, v)| v.as_str()).unwrap_or(""),
                    if m.realloc { "" } else { ", then boot the guest with pci=realloc" }
                ),
                _ => "add pci=realloc to the guest's kernel command line".to_string(),
            };
            let effect = if p.effect.is_empty() { String::new() } else { format!(": {}", p.effect) };
            let how = match (target, p.side) {
                (_, Side::Guest) => "in the guest: GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and `update-grub` (Fedora/RHEL: `grubby --update-kernel=ALL --args=pci=realloc`), or `gpu-preflight remediate` in the guest".to_string(),
                (VmTarget::Proxmox { vmid, cpu, args }, _) => {
                    let mut cmds = Vec::new();
                    if !c.cpu_flags_add.is_empty() || c.phys_bits_min.is_some() {
                        cmds.push(format!("`qm set {vmid} --cpu {}`", proxmox_cpu(cpu, c)));
                        if c.phys_bits_min.is_none() {
                            cmds.push("(GUI: Hardware > Processors > Advanced > Extra CPU Flags: pdpe1gb)".into());
                        }
                    }
                    let mut extra: Vec<String> = c.qemu_globals.iter().map(|(k, v)| format!("-global {k}={v}")).collect();
                    extra.extend(c.fw_cfg.iter().map(|(k, v)| format!("-fw_cfg name={k},string={v}")));
                    if !extra.is_empty() {
                        // The setting changed is taken out of the line
                        // first: QEMU will not start with two -fw_cfg of
                        // one name.
                        let kept = qemu_args::without_window_args(
                            args,
                            !c.qemu_globals.is_empty(),
                            !c.fw_cfg.is_empty(),
                        );
                        let line = if kept.is_empty() { extra.join(" ") } else { format!("{kept} {}", extra.join(" ")) };
                        let line = line.replace('\'', r"'\''");
                        cmds.push(format!("as root (no GUI field; this replaces the whole args line): `qm set {vmid} --args '{line}'`"));
                    }
                    format!("{}; then `qm reboot {vmid}` (or Shutdown, then Start): a reboot inside the guest keeps the old QEMU process", cmds.join(" "))
                }
                (VmTarget::Libvirt { name }, _) => {
                    let mut xml = Vec::new();
                    for f in &c.cpu_flags_add {
                        xml.push(format!("<feature policy='require' name='{f}'/> in <cpu>"));
                    }
                    if let Some(b) = c.phys_bits_min {
                        xml.push(format!("<maxphysaddr mode='emulate' bits='{b}'/> in <cpu>"));
                    }
                    for (_, v) in &c.qemu_globals {
                        let gib: u64 = v.trim_end_matches('G').parse().unwrap_or(0);
                        xml.push(format!("<pcihole64 unit='KiB'>{}</pcihole64> in the index-0 root controller{}", gib << 20, replacing(m.setup.hole64.is_some(), "pci-hole64-size")));
                    }
                    for (k, v) in &c.fw_cfg {
                        xml.push(format!("<qemu:arg value='-fw_cfg'/><qemu:arg value='name={k},string={v}'/> in <qemu:commandline> (xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0' on <domain>){}", replacing(m.setup.mmio64.is_some(), "X-PciMmio64Mb")));
                    }
                    format!("`virsh edit {name}`: {}; then `virsh shutdown {name}` and `virsh start {name}`", xml.join("; "))
                }
                (VmTarget::Qemu, _) => {
                    let mut a = Vec::new();
                    let mut cpu = String::new();
                    for f in &c.cpu_flags_add {
                        cpu.push_str(&format!(",+{f}"));
                    }
                    if let Some(b) = c.phys_bits_min {
                        cpu.push_str(&format!(",phys-bits={b}"));
                    }
                    if !cpu.is_empty() {
                        a.push(format!("`-cpu <model>{cpu}`"));
                    }
                    a.extend(c.qemu_globals.iter().map(|(k, v)| format!("`-global {k}={v}`{}", replacing(m.setup.hole64.is_some(), "pci-hole64-size"))));
                    a.extend(c.fw_cfg.iter().map(|(k, v)| format!("`-fw_cfg name={k},string={v}`{}", replacing(m.setup.mmio64.is_some(), "X-PciMmio64Mb"))));
                    format!("QEMU: {}; then start a new QEMU process", a.join(" "))
                }
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
    use crate::decide::fallback::{bits_for, recommended_window};

    const GIB: u64 = 1 << 30;

    #[test]
    fn recommendations_round_up() {
        assert_eq!(recommended_window(256 * GIB), 512 * GIB);
        assert_eq!(recommended_window(1), 64 * GIB);
        assert_eq!(recommended_window(1000 * GIB), 2048 * GIB);
        assert_eq!(bits_for(0x120_0000_0000), 41);
        assert_eq!(bits_for(1 << 41), 41);
    }

    fn metal(phys_bits: u32, gpus: usize) -> Evidence {
        use crate::evidence::{Gpu, Window, WindowSource};
        use crate::model::bar::{Bar, BarState, SizeSource};
        use crate::model::pci::PciAddress;
        use crate::model::platform::{Cpu, Firmware};
        use crate::model::range::Range;
        let gpus = (0..gpus)
            .map(|n| Gpu {
                addr: PciAddress {
                    domain: 0,
                    bus: n as u8 + 1,
                    device: 0,
                    function: 0,
                },
                vendor: 0x10de,
                device: 0x2330,
                class: 0x030200,
                bars: vec![Bar {
                    index: 1,
                    state: if n == 0 {
                        BarState::Unassigned
                    } else {
                        BarState::Assigned
                    },
                    io: false,
                    mem64: true,
                    prefetchable: true,
                    start: None,
                    size: Some(128 * GIB),
                    size_source: Some(SizeSource::Sysfs),
                    type_known: true,
                }],
                upstream: vec![],
                root_bus: None,
                ids_known: true,
            })
            .collect();
        Evidence {
            gpus,
            windows: vec![Window {
                range: Range::new(0x20_0000_0000, 0xff_ffff_ffff),
                source: WindowSource::Iomem,
                bus: None,
            }],
            windows_known: true,
            cpu: Cpu {
                phys_bits: Some(phys_bits),
                ..Cpu::default()
            },
            firmware: Firmware {
                bios_vendor: Some("American Megatrends International, LLC.".into()),
                sys_vendor: Some("Supermicro".into()),
                ..Firmware::default()
            },
            ..Evidence::default()
        }
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

    #[test]
    fn proxmox_cpu_properties_keep_what_is_there() {
        let flag = Change {
            cpu_flags_add: vec!["pdpe1gb"],
            ..Change::default()
        };
        assert_eq!(proxmox_cpu("kvm64", &flag), "kvm64,flags=+pdpe1gb");
        assert_eq!(proxmox_cpu("", &flag), "kvm64,flags=+pdpe1gb");
        assert_eq!(
            proxmox_cpu("x86-64-v2-AES,flags=+aes;-md-clear,phys-bits=46", &flag),
            "x86-64-v2-AES,flags=+aes;-md-clear;+pdpe1gb,phys-bits=46"
        );
        assert_eq!(
            proxmox_cpu("host,flags=+pdpe1gb", &flag),
            "host,flags=+pdpe1gb"
        );
        let both = Change {
            phys_bits_min: Some(44),
            ..flag
        };
        assert_eq!(
            proxmox_cpu("x86-64-v2-AES,phys-bits=40", &both),
            "x86-64-v2-AES,flags=+pdpe1gb,phys-bits=44"
        );
    }
}
