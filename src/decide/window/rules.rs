//! The releases the model knows, and the rules each one brings, as data:
//! one row per rule with the release it first ships in, the upstream file
//! and tag it is read from, and what it does. The rules a firmware build or
//! a QEMU runs with are read from this table (`OvmfRules::of`,
//! `SeabiosRules::of`, `QemuRules::of`), never from a growing `if`.
//!
//! `confirmed` says how far each row is known: `src` (read in the named
//! file at the named tag), a lab or live boot, or `inference` where the
//! source was read but the behaviour not run.

pub(crate) use crate::model::release::{Edk2Build, Edk2Release, QemuVersion, SeabiosVersion};

/// Where a rule first ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Since {
    Edk2(Edk2Release),
    Seabios(SeabiosVersion),
    Qemu(QemuVersion),
    /// A machine type property: machine types of this version and later.
    Machine(QemuVersion),
}

/// A row; `source`, `effect` and `confirmed` are read by the table test
/// and are the citation beside the data.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Rule {
    /// The row of the firmware-model review (docs/firmware-window.md).
    pub id: &'static str,
    pub since: Since,
    /// Upstream file, tag and lines (or commit).
    pub source: &'static str,
    pub effect: &'static str,
    /// `src`, `lab Ln`, `boot Bn` or `inference`.
    pub confirmed: &'static str,
}

const fn edk2(year: u32, month: u32) -> Since {
    Since::Edk2(Edk2Release { year, month })
}

pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "C9",
        since: edk2(2022, 11),
        source: "edk2 OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202211, PlatformAddressWidthFromCpuid/PlatformDynamicMmioWindow L561-630",
        effect: "OVMF reads the vCPU's width; when it trusts it, the window is the top eighth of it (the dynamic window)",
        confirmed: "src; lab L1-L8",
    },
    Rule {
        id: "D1",
        since: edk2(2022, 11),
        source: "edk2 OvmfPkg/PciHotPlugInitDxe/PciHotPlugInit.c, edk2-stable202211, L760-768 (9e6b552b4c)",
        effect: "each hot-plug root port without a device takes pow2ceil(window/256) of padding when the window is above 32 GiB",
        confirmed: "src; lab L1, boot B2",
    },
    Rule {
        id: "C10",
        since: edk2(2023, 2),
        source: "edk2 OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202302, PlatformReservationConflictCB L228-253",
        effect: "the dynamic window moves below an e820 reservation it overlaps (QEMU's AMD HyperTransport range)",
        confirmed: "src",
    },
    Rule {
        id: "C6",
        since: edk2(2023, 8),
        source: "edk2 OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202308, L649 (c1e8537690)",
        effect: "the width OVMF works with is capped at 46 bits, not 47",
        confirmed: "src",
    },
    Rule {
        id: "C5",
        since: edk2(2024, 8),
        source: "edk2 OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202408, L660-698",
        effect: "a non-zero GuestPhysBits (CPUID 0x80000008 EAX[23:16]) is trusted whatever the vendor, and limits the width",
        confirmed: "src; inference (no KVM with GuestPhysBits here)",
    },
    Rule {
        id: "C11",
        since: edk2(2025, 5),
        source: "edk2 OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202505, PcdPciMmio64Override L560, L799 (9ac1704af6)",
        effect: "X-PciMmio64Mb is used as given, also below the dynamic window's size; 0 means no 64-bit aperture",
        confirmed: "src; lab L9 (Debian 13's backport)",
    },
    Rule {
        id: "E6a",
        since: Since::Seabios(SeabiosVersion(1, 16, 3)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.16.3, pci_setup L1187-1195 (bcfed7e2)",
        effect: "with a trusted width the 64-bit window ends at 2^min(phys-bits, 46)",
        confirmed: "src; lab L14",
    },
    Rule {
        id: "E7a",
        since: Since::Seabios(SeabiosVersion(1, 16, 3)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.16.3, L1198-1199 and L1143",
        effect: "pad mode when RAM is above 4 GiB (and phys-bits >= 36, long mode): the window's size rounds up to top/8",
        confirmed: "src; lab L14",
    },
    Rule {
        id: "E8",
        since: Since::Seabios(SeabiosVersion(1, 16, 3)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.16.3, pci_bios_map_devices L1147-1148 (1e1da7a9)",
        effect: "a window overlapping an e820 entry moves down by its own size, without an underflow check",
        confirmed: "src; lab L15, L16",
    },
    Rule {
        id: "E9a",
        since: Since::Seabios(SeabiosVersion(1, 16, 3)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.16.3, pci_bios_check_devices L975",
        effect: "in pad mode a hot-plug bridge's 64-bit prefetchable window is aligned to top>>11, replacing its children's alignment",
        confirmed: "src; inference (misalignment not run)",
    },
    Rule {
        id: "E6b",
        since: Since::Seabios(SeabiosVersion(1, 17, 0)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.17.0, pci_setup L1192-1201 (ec0bc256)",
        effect: "above 44 bits the top is 2^44 unless RAM above 4 GiB reaches 1 TiB",
        confirmed: "src",
    },
    Rule {
        id: "E7b",
        since: Since::Seabios(SeabiosVersion(1, 17, 0)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.17.0, pci_setup L1205-1213",
        effect: "pad mode from fw_cfg opt/org.seabios/pci64, by default when RAM is above 4 GiB (no phys-bits condition)",
        confirmed: "src",
    },
    Rule {
        id: "E9b",
        since: Since::Seabios(SeabiosVersion(1, 17, 0)),
        source: "SeaBIOS src/fw/pciinit.c, rel-1.17.0, L974-977 (e5f2e4c6)",
        effect: "the pad-mode alignment only raises a bridge's alignment: max(top>>11, children's)",
        confirmed: "src",
    },
    Rule {
        id: "B6",
        since: Since::Qemu(QemuVersion(7, 1)),
        source: "QEMU hw/i386/pc.c, v7.2.0, pc_memory_init L974-986 (1caab5cf86bd, in 7.1)",
        effect: "QEMU exits when the 64-bit hole would end beyond phys-bits (\"phys-bits too low\")",
        confirmed: "src; vm-tests scenarios",
    },
    Rule {
        id: "B4",
        since: Since::Qemu(QemuVersion(7, 1)),
        source: "QEMU hw/i386/pc.c, v7.2.0, pc_memory_init L956-964 (8504f129450b, in 7.1)",
        effect: "on an AMD vCPU RAM above 4 GiB moves to 1 TiB when the hole would reach 0xFD_0000_0000",
        confirmed: "src",
    },
    Rule {
        id: "B4m",
        since: Since::Machine(QemuVersion(7, 1)),
        source: "QEMU hw/i386/pc_q35.c / pc_piix.c, v7.2.0: enforce_amd_1tb_hole false in the 7.0 machine options",
        effect: "the AMD relocation and the HT e820 entry only for machine types 7.1 and later",
        confirmed: "src",
    },
    Rule {
        id: "B5",
        since: Since::Qemu(QemuVersion(7, 1)),
        source: "QEMU hw/i386/pc.c, v7.2.0, pc_memory_init L966-972",
        effect: "an e820 reservation [0xFD_0000_0000, 1 TiB) on an AMD vCPU with phys-bits >= 40",
        confirmed: "src",
    },
    Rule {
        id: "B7f",
        since: Since::Machine(QemuVersion(2, 11)),
        source: "QEMU hw/i386/pc.c pc_compat_2_10 (v7.2.0 L213-214, v10.2.2 L237-238): x-pci-hole64-fix off; hw/pci-host/q35.c, i440fx.c: default on",
        effect: "_CRS's 64-bit window reaches at least ROUND_UP(start + pci-hole64-size, 1 GiB), and starts at pc_pci_hole64_start when nothing is programmed, only for machine types 2.11 and later",
        confirmed: "src",
    },
    Rule {
        id: "F7o",
        since: Since::Qemu(QemuVersion(8, 0)),
        source: "QEMU roms/seabios, d80d761daa (pull of 2023-03-16, ChangeLog/8.0: SeaBIOS 1.16.2); v7.2.0 has 1.16.1 (a704cb59fd); pc-bios/bios-256k.bin of v8.1.0 says rel-1.16.2",
        effect: "the SeaBIOS QEMU bundles is 1.16.2 (1.16.1 in 7.2; pciinit.c and paravirt.c are identical in both)",
        confirmed: "src",
    },
    Rule {
        id: "F7a",
        since: Since::Qemu(QemuVersion(8, 2)),
        source: "QEMU roms/seabios, v8.2.0 (eb0ce1346e, SeaBIOS 1.16.3; pc-bios/bios-256k.bin of v8.2.2, v9.0.0, v9.2.4 says rel-1.16.3); pve-qemu-kvm's debian/rules installs QEMU's own bios-256k.bin",
        effect: "the SeaBIOS QEMU bundles, and a Proxmox VM boots, is 1.16.3 (also in 9.1 and 10.0, between releases read with it)",
        confirmed: "src",
    },
    Rule {
        id: "F7b",
        since: Since::Qemu(QemuVersion(10, 1)),
        source: "QEMU roms/seabios, cba36cf388 (pull of 2025-06-11, SeaBIOS 1.17.0), after v10.0.0: in 10.1",
        effect: "the SeaBIOS QEMU bundles is 1.17.0 (10.2 too: no SeaBIOS release after 1.17.0)",
        confirmed: "src; inference (the release from the pull's date)",
    },
    Rule {
        id: "P1",
        since: Since::Qemu(QemuVersion(2, 11)),
        source: "QEMU hw/vfio/pci-quirks.c, v2.11.0: vfio-pci's x-nv-gpudirect-clique property",
        effect: "QEMU can give a GPU NVIDIA's GPUDirect clique capability, at config offset 0xC8 only",
        confirmed: "src",
    },
    Rule {
        id: "P2",
        since: Since::Qemu(QemuVersion(8, 1)),
        source: "QEMU hw/vfio/pci-quirks.c, v8.1.0 (\"Support alternate offset for GPUDirect Cliques\", merged 2023-06-30)",
        effect: "the clique capability goes to 0xD4 where 0xC8 is taken",
        confirmed: "src",
    },
    Rule {
        id: "A6",
        since: Since::Qemu(QemuVersion(9, 1)),
        source: "QEMU target/i386/cpu.c, v9.2.4 L8501 / v10.0.13 L8872: the guest-phys-bits property, in CPUID 0x80000008 EAX[23:16] under every accelerator (v10.0.13 L7326); absent in v9.0.0",
        effect: "the vCPU can report a GuestPhysBits: a value the user gives (32 to phys-bits, else QEMU exits: v10.0.13 L8306-8311), or KVM's",
        confirmed: "src",
    },
    Rule {
        id: "A6m",
        since: Since::Machine(QemuVersion(9, 1)),
        source: "QEMU target/i386/kvm/kvm-cpu.c, v9.2.4 L20-39 / v10.0.13 L21-40 kvm_set_guest_phys_bits, called from kvm_cpu_realizefn L89-92; hw/i386/pc.c pc_compat_9_0 (v10.0.13 L96) sets guest-phys-bits=0",
        effect: "under KVM (Linux 6.10+) QEMU sets GuestPhysBits = min(KVM's, phys-bits, host-phys-bits-limit) when phys-bits is known then (host/max, host-phys-bits, phys-bits=N; a named model's default 40 comes later: 0), for machine types 9.1 and later",
        confirmed: "src; inference (needs KVM)",
    },
];

fn has(id: &str, at: Since) -> bool {
    RULES
        .iter()
        .find(|r| r.id == id)
        .is_some_and(|r| match (r.since, at) {
            (Since::Edk2(a), Since::Edk2(b)) => b >= a,
            (Since::Seabios(a), Since::Seabios(b)) => b >= a,
            (Since::Qemu(a), Since::Qemu(b)) => b >= a,
            (Since::Machine(a), Since::Machine(b)) => b >= a,
            _ => false,
        })
}

/// What differs between OVMF releases (docs/firmware-window.md, "Version
/// history of the rules").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OvmfRules {
    /// C9: the dynamic window (202211).
    pub dynamic: bool,
    /// D1: hot-plug padding (202211).
    pub pads: bool,
    /// C6: 47 up to 202305, 46 from 202308.
    pub cap: u32,
    /// C10: moves below a conflicting e820 reservation (202302).
    pub avoids_ht: bool,
    /// C5: trusts GuestPhysBits (202408).
    pub guest_phys_bits: bool,
    /// C11: X-PciMmio64Mb used as given (202505, or a backport).
    pub mmio64_exact: bool,
}

impl OvmfRules {
    pub(crate) fn of(b: Edk2Build) -> OvmfRules {
        let at = Since::Edk2(b.release);
        OvmfRules {
            dynamic: has("C9", at),
            pads: has("D1", at),
            cap: if has("C6", at) || b.cap46_patch {
                46
            } else {
                47
            },
            avoids_ht: has("C10", at),
            guest_phys_bits: has("C5", at),
            mmio64_exact: has("C11", at) || b.exact_mmio64_patch,
        }
    }

    /// The rules of an upstream release.
    #[cfg(test)]
    pub(crate) fn for_release(year: u32, month: u32) -> OvmfRules {
        OvmfRules::of(Edk2Build {
            release: Edk2Release { year, month },
            exact_mmio64_patch: false,
            cap46_patch: false,
        })
    }

    /// Debian 12's OVMF (edk2-stable202211), the one measured in docs/lab.md.
    pub(crate) const STABLE_202211: OvmfRules = OvmfRules {
        dynamic: true,
        pads: true,
        cap: 47,
        avoids_ht: false,
        guest_phys_bits: false,
        mmio64_exact: false,
    };
    /// edk2-stable202308 to 202405.
    pub(crate) const STABLE_202308: OvmfRules = OvmfRules {
        dynamic: true,
        pads: true,
        cap: 46,
        avoids_ht: true,
        guest_phys_bits: false,
        mmio64_exact: false,
    };
    /// edk2-stable202505 and later.
    pub(crate) const STABLE_202505: OvmfRules = OvmfRules {
        dynamic: true,
        pads: true,
        cap: 46,
        avoids_ht: true,
        guest_phys_bits: true,
        mmio64_exact: true,
    };
}

/// When SeaBIOS's pad mode is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PadMode {
    /// 1.16.2 and older: no pad mode.
    Never,
    /// 1.16.3: RAM above 4 GiB and a trusted width of 36 bits or more.
    RamAndWidth,
    /// 1.17.0: fw_cfg `opt/org.seabios/pci64`, by default RAM above 4 GiB.
    RamOrFwCfg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeabiosRules {
    pub version: SeabiosVersion,
    /// E6a: the window at the top of a trusted width (1.16.3).
    pub top: bool,
    /// E6b: the top at 2^44 above 44 bits (1.17.0).
    pub top44: bool,
    /// E7a/E7b.
    pub pad: PadMode,
    /// E8: the e820 shift (1.16.3).
    pub e820_shift: bool,
    /// E9b: max(top>>11, children) instead of top>>11 (1.17.0).
    pub bridge_align_max: bool,
}

impl SeabiosRules {
    /// Debian 12's SeaBIOS, what the QEMU suite boots.
    pub(crate) const V1_16_2: SeabiosRules = SeabiosRules {
        version: SeabiosVersion(1, 16, 2),
        top: false,
        top44: false,
        pad: PadMode::Never,
        e820_shift: false,
        bridge_align_max: false,
    };

    pub(crate) fn of(v: SeabiosVersion) -> SeabiosRules {
        let at = Since::Seabios(v);
        SeabiosRules {
            version: v,
            top: has("E6a", at),
            top44: has("E6b", at),
            pad: if has("E7b", at) {
                PadMode::RamOrFwCfg
            } else if has("E7a", at) {
                PadMode::RamAndWidth
            } else {
                PadMode::Never
            },
            e820_shift: has("E8", at),
            bridge_align_max: has("E9b", at),
        }
    }
}

/// What differs between QEMU releases and machine type versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QemuRules {
    pub version: QemuVersion,
    /// B6: the phys-bits check (7.1).
    pub phys_bits_check: bool,
    /// B4 and B4m: AMD relocation to 1 TiB (QEMU 7.1, machine 7.1).
    pub amd_relocation: bool,
    /// B5 and B4m: the HT e820 entry (QEMU 7.1, machine 7.1).
    pub ht_e820: bool,
    /// A6: the vCPU can report a GuestPhysBits (QEMU 9.1).
    pub guest_phys_bits: bool,
    /// A6m: QEMU derives it under KVM (QEMU 9.1, machine 9.1).
    pub guest_phys_bits_auto: bool,
    /// B7f: x-pci-hole64-fix (machine 2.11).
    pub hole64_fix: bool,
    /// P1: vfio-pci's clique property (2.11).
    pub clique: bool,
    /// P2: the clique at 0xD4 where 0xC8 is taken (8.1).
    pub clique_d4: bool,
}

impl QemuRules {
    /// `machine`: the version a machine type pins, `None` for the alias
    /// (`q35`, `pc`: this QEMU's newest).
    pub(crate) fn of(qemu: QemuVersion, machine: Option<QemuVersion>) -> QemuRules {
        let at = Since::Qemu(qemu);
        let m = Since::Machine(machine.unwrap_or(qemu));
        QemuRules {
            version: qemu,
            phys_bits_check: has("B6", at),
            amd_relocation: has("B4", at) && has("B4m", m),
            ht_e820: has("B5", at) && has("B4m", m),
            guest_phys_bits: has("A6", at),
            guest_phys_bits_auto: has("A6", at) && has("A6m", m),
            hole64_fix: has("B7f", m),
            clique: has("P1", at),
            clique_d4: has("P2", at),
        }
    }

    /// Debian 12's QEMU, what the QEMU suite boots.
    pub(crate) const V7_2: QemuRules = QemuRules {
        version: QemuVersion(7, 2),
        phys_bits_check: true,
        amd_relocation: true,
        ht_e820: true,
        guest_phys_bits: false,
        guest_phys_bits_auto: false,
        hole64_fix: true,
        clique: true,
        clique_d4: false,
    };
}

/// The SeaBIOS a QEMU release bundles (pc-bios/bios-256k.bin), which
/// pve-qemu-kvm installs and a QEMU built from source boots (F7o, F7a,
/// F7b): 1.16.1 in 7.2 (the model knows no older release), 1.16.2 in 8.0
/// and 8.1, 1.16.3 in 8.2 to 10.0, 1.17.0 from 10.1.
pub(crate) fn bundled_seabios(q: QemuVersion) -> SeabiosVersion {
    let at = Since::Qemu(q);
    if has("F7b", at) {
        SeabiosVersion(1, 17, 0)
    } else if has("F7a", at) {
        SeabiosVersion(1, 16, 3)
    } else if has("F7o", at) {
        SeabiosVersion(1, 16, 2)
    } else {
        SeabiosVersion(1, 16, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The release just before one: the last month, patch or minor.
    fn before(s: Since) -> Since {
        match s {
            Since::Edk2(r) if r.month > 1 => edk2(r.year, r.month - 1),
            Since::Edk2(r) => edk2(r.year - 1, 12),
            Since::Seabios(SeabiosVersion(a, b, c)) if c > 0 => {
                Since::Seabios(SeabiosVersion(a, b, c - 1))
            }
            Since::Seabios(SeabiosVersion(a, b, _)) => Since::Seabios(SeabiosVersion(a, b - 1, 9)),
            Since::Qemu(QemuVersion(a, b)) if b > 0 => Since::Qemu(QemuVersion(a, b - 1)),
            Since::Qemu(QemuVersion(a, _)) => Since::Qemu(QemuVersion(a - 1, 2)),
            Since::Machine(QemuVersion(a, b)) if b > 0 => Since::Machine(QemuVersion(a, b - 1)),
            Since::Machine(QemuVersion(a, _)) => Since::Machine(QemuVersion(a - 1, 2)),
        }
    }

    /// Every row changes the rules exactly at its release: the release
    /// just before it and the release itself differ, in that row's field.
    #[test]
    fn every_rule_takes_effect_at_its_release() {
        for r in RULES {
            assert!(
                !r.source.is_empty() && !r.effect.is_empty() && !r.confirmed.is_empty(),
                "{}",
                r.id
            );
            assert!(has(r.id, r.since), "{}", r.id);
            assert!(!has(r.id, before(r.since)), "{}", r.id);
            let differs = match (before(r.since), r.since) {
                (Since::Edk2(a), Since::Edk2(b)) => {
                    let build = |release| Edk2Build {
                        release,
                        exact_mmio64_patch: false,
                        cap46_patch: false,
                    };
                    OvmfRules::of(build(a)) != OvmfRules::of(build(b))
                }
                (Since::Seabios(a), Since::Seabios(b)) => {
                    SeabiosRules::of(a) != SeabiosRules::of(b)
                }
                (Since::Qemu(a), Since::Qemu(b)) => {
                    let f = |v| {
                        let q = QemuRules::of(v, Some(QemuVersion(10, 0)));
                        (
                            QemuRules {
                                version: QemuVersion(0, 0),
                                ..q
                            },
                            bundled_seabios(v),
                        )
                    };
                    f(a) != f(b)
                }
                (Since::Machine(a), Since::Machine(b)) => {
                    QemuRules::of(QemuVersion(10, 0), Some(a))
                        != QemuRules::of(QemuVersion(10, 0), Some(b))
                }
                _ => unreachable!(),
            };
            assert!(differs, "{} changes nothing at its release", r.id);
        }
    }

    #[test]
    fn named_rule_sets() {
        assert_eq!(OvmfRules::for_release(2022, 11), OvmfRules::STABLE_202211);
        assert_eq!(OvmfRules::for_release(2023, 8), OvmfRules::STABLE_202308);
        assert_eq!(OvmfRules::for_release(2025, 5), OvmfRules::STABLE_202505);
        assert_eq!(QemuRules::of(QemuVersion(7, 2), None), QemuRules::V7_2);
        // A QEMU 7.2 with a 7.0 machine type: the check, no relocation.
        let q = QemuRules::of(QemuVersion(7, 2), Some(QemuVersion(7, 0)));
        assert!(q.phys_bits_check && !q.amd_relocation && !q.ht_e820);
        assert_eq!(
            SeabiosRules::of(SeabiosVersion(1, 16, 2)),
            SeabiosRules::V1_16_2
        );
        assert_eq!(bundled_seabios(QemuVersion(7, 2)), SeabiosVersion(1, 16, 1));
        assert_eq!(bundled_seabios(QemuVersion(8, 0)), SeabiosVersion(1, 16, 2));
        assert_eq!(bundled_seabios(QemuVersion(8, 1)), SeabiosVersion(1, 16, 2));
        assert_eq!(bundled_seabios(QemuVersion(8, 2)), SeabiosVersion(1, 16, 3));
        assert_eq!(bundled_seabios(QemuVersion(9, 0)), SeabiosVersion(1, 16, 3));
        assert_eq!(
            bundled_seabios(QemuVersion(10, 0)),
            SeabiosVersion(1, 16, 3)
        );
        // 1.16.1's rules are 1.16.2's.
        assert_eq!(
            SeabiosRules {
                version: SeabiosVersion(1, 16, 2),
                ..SeabiosRules::of(SeabiosVersion(1, 16, 1))
            },
            SeabiosRules::V1_16_2
        );
        assert_eq!(
            bundled_seabios(QemuVersion(10, 1)),
            SeabiosVersion(1, 17, 0)
        );
        let q = |a, b| QemuRules::of(QemuVersion(a, b), None);
        assert!(!q(2, 10).clique && q(2, 11).clique && !q(8, 0).clique_d4 && q(8, 1).clique_d4);
    }
}
