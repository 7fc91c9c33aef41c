//! What QEMU's named CPU models carry that the window depends on: the
//! vendor string (`IS_AMD_CPU` for QEMU's AMD hole, and which widths the
//! firmwares trust), 1 GiB pages (`pdpe1gb`, CPUID 0x80000001 EDX bit 26,
//! which OVMF needs to use more than 40 bits), and the first QEMU release
//! that has the model (an older QEMU does not start with it). None of them
//! sets phys-bits: every named model gets QEMU's default 40 (A1).
//!
//! From the model definitions in QEMU's target/i386/cpu.c
//! (`builtin_x86_defs`: `.vendor`, `.features[FEAT_8000_0001_EDX]` holding
//! `CPUID_EXT2_PDPE1GB`), read at v7.2.0, 8.1.0, 8.2.2, 9.0.0, 9.2.4,
//! 10.0.13 and 10.2.2 (the array starts at v7.2.0 L1835, v10.0.13 L2489,
//! v10.2.2 L3309). No version of a model (`-vN`) and no alias (`-IBRS`,
//! `-noTSX`, `-IBPB`) sets or clears pdpe1gb or the vendor in its props.
//! kvm64 and qemu64 list pdpe1gb as missing; TCG supports it
//! (`TCG_EXT2_FEATURES`, v10.0.13 L843-845).
//!
//! Under KVM every named model reports the host's vendor
//! (target/i386/host-cpu.c host_cpu_instance_init, from kvm_cpu_instance_init),
//! unless `vendor=` is given; under TCG the model's own.

use crate::model::platform::CpuVendor;
use crate::model::release::QemuVersion;

/// The vendor string a model's definition carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    /// GenuineIntel.
    Intel,
    /// AuthenticAMD, the only one QEMU's `IS_AMD_CPU` takes (cpu.h v7.2.0
    /// L953, v10.2.2 L1202).
    Amd,
    /// HygonGenuine (Dhyana): not AMD to QEMU, nor to the firmwares' trust.
    Hygon,
    /// CentaurHauls (YongFeng).
    Zhaoxin,
}

impl Vendor {
    /// As the model takes it: Hygon and Zhaoxin are neither AMD nor Intel
    /// to QEMU and to SeaBIOS's and OVMF's width rules.
    pub(crate) fn cpu_vendor(self) -> CpuVendor {
        match self {
            Vendor::Intel => CpuVendor::Intel,
            Vendor::Amd => CpuVendor::Amd,
            Vendor::Hygon | Vendor::Zhaoxin => CpuVendor::Other,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Vendor::Intel => "Intel",
            Vendor::Amd => "AMD",
            Vendor::Hygon => "Hygon",
            Vendor::Zhaoxin => "Zhaoxin",
        }
    }
}

/// One named model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuModel {
    pub name: &'static str,
    pub vendor: Vendor,
    pub pdpe1gb: bool,
    /// The first QEMU release that has it; `None`: 7.2.0 has it already
    /// (the oldest release read).
    pub since: Option<QemuVersion>,
}

const fn m(name: &'static str, vendor: Vendor, pdpe1gb: bool, since: (u32, u32)) -> CpuModel {
    CpuModel {
        name,
        vendor,
        pdpe1gb,
        since: if since.0 == 7 && since.1 == 2 {
            None
        } else {
            Some(QemuVersion(since.0, since.1))
        },
    }
}

use Vendor::{Amd, Hygon, Intel, Zhaoxin};

/// Every x86-64 and 32-bit model of `builtin_x86_defs`, in its order.
/// First releases: SapphireRapids 8.0 (7eb061b06e97, pull
/// "for-upstream-8.0" of 2023-02-27); GraniteRapids 8.1 (6d5e9694ef37,
/// pull of 2023-07-07); EPYC-Genoa 8.1 (absent at v7.2.0, present at
/// v8.1.0; its series is of 2023-04/05, after 8.0.0); SierraForest 9.1
/// (6e82d3b62207: absent at v9.0.0, present at v9.2.4, applied after the
/// 9.0 freeze); ClearwaterForest and YongFeng 10.0 (absent at v9.2.4,
/// present at v10.0.13); EPYC-Turin 10.1 (absent at v10.0.13, present at
/// v10.2.2; its v7 series is of 2025-05, after 10.0.0).
pub(crate) const MODELS: &[CpuModel] = &[
    m("qemu64", Amd, false, (7, 2)),
    m("phenom", Amd, true, (7, 2)),
    m("core2duo", Intel, false, (7, 2)),
    m("kvm64", Intel, false, (7, 2)),
    m("qemu32", Intel, false, (7, 2)),
    m("kvm32", Intel, false, (7, 2)),
    m("coreduo", Intel, false, (7, 2)),
    m("486", Intel, false, (7, 2)),
    m("pentium", Intel, false, (7, 2)),
    m("pentium2", Intel, false, (7, 2)),
    m("pentium3", Intel, false, (7, 2)),
    m("athlon", Amd, false, (7, 2)),
    m("n270", Intel, false, (7, 2)),
    m("Conroe", Intel, false, (7, 2)),
    m("Penryn", Intel, false, (7, 2)),
    m("Nehalem", Intel, false, (7, 2)),
    m("Westmere", Intel, false, (7, 2)),
    m("SandyBridge", Intel, false, (7, 2)),
    m("IvyBridge", Intel, false, (7, 2)),
    m("Haswell", Intel, false, (7, 2)),
    m("Broadwell", Intel, false, (7, 2)),
    m("Skylake-Client", Intel, false, (7, 2)),
    m("Skylake-Server", Intel, true, (7, 2)),
    m("Cascadelake-Server", Intel, true, (7, 2)),
    m("Cooperlake", Intel, true, (7, 2)),
    m("Icelake-Server", Intel, true, (7, 2)),
    m("SapphireRapids", Intel, true, (8, 0)),
    m("GraniteRapids", Intel, true, (8, 1)),
    m("SierraForest", Intel, true, (9, 1)),
    m("ClearwaterForest", Intel, true, (10, 0)),
    m("Denverton", Intel, true, (7, 2)),
    m("Snowridge", Intel, true, (7, 2)),
    m("KnightsMill", Intel, true, (7, 2)),
    m("Opteron_G1", Amd, false, (7, 2)),
    m("Opteron_G2", Amd, false, (7, 2)),
    m("Opteron_G3", Amd, false, (7, 2)),
    m("Opteron_G4", Amd, true, (7, 2)),
    m("Opteron_G5", Amd, true, (7, 2)),
    m("EPYC", Amd, true, (7, 2)),
    m("Dhyana", Hygon, true, (7, 2)),
    m("EPYC-Rome", Amd, true, (7, 2)),
    m("EPYC-Milan", Amd, true, (7, 2)),
    m("EPYC-Genoa", Amd, true, (8, 1)),
    m("YongFeng", Zhaoxin, true, (10, 0)),
    m("EPYC-Turin", Amd, true, (10, 1)),
];

/// What `-cpu max` is under TCG (target/i386/cpu.c max_x86_cpu_initfn:
/// AuthenticAMD; `TCG_EXT2_FEATURES` has pdpe1gb; phys-bits 40 unless
/// set, `TCG_PHYS_ADDR_BITS`). Under KVM it is `host`.
pub(crate) const TCG_MAX: CpuModel = m("max", Amd, true, (7, 2));

/// qemu-server's built-in models (PVE/QemuServer/CPUConfig.pm
/// `$builtin_models`, since qemu-server 8.0.4, 1359e23f): each is
/// `reported-model` qemu64 with flags, none of them pdpe1gb.
const PROXMOX_BUILTIN: &[&str] = &["x86-64-v2", "x86-64-v2-AES", "x86-64-v3", "x86-64-v4"];

/// The base model of a versioned alias (`Skylake-Server-v4`,
/// `EPYC-Rome-v2`, `Cascadelake-Server-noTSX`).
fn base_model(name: &str) -> &str {
    let mut n = name;
    loop {
        let cut = ["-IBRS", "-noTSX", "-IBPB"]
            .iter()
            .find_map(|s| n.strip_suffix(s))
            .or_else(|| {
                let (head, tail) = n.rsplit_once("-v")?;
                (!tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit())).then_some(head)
            });
        match cut {
            Some(c) => n = c,
            None => return n,
        }
    }
}

/// The QEMU model a name runs as: a versioned alias's base model, and
/// qemu-server's built-ins as the qemu64 they report. `None`: a model this
/// table does not know (`host`, `max`, a typo, a model newer than the
/// releases read).
pub(crate) fn model(name: &str) -> Option<&'static CpuModel> {
    let name = if PROXMOX_BUILTIN.iter().any(|b| b.eq_ignore_ascii_case(name)) {
        "qemu64"
    } else {
        base_model(name)
    };
    MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// Whether a named model has 1 GiB pages. `None`: a model this table does
/// not know (taken without, and said so by the caller).
#[cfg(test)]
pub(crate) fn pdpe1gb(name: &str) -> Option<bool> {
    model(name).map(|m| m.pdpe1gb)
}

/// The vendor qemu-server forces on the command line (`vendor=`) for a
/// VM's CPU type: the model's own for every named model, none for kvm32,
/// kvm64, qemu32, qemu64, host, max and the x86-64-v* built-ins, which
/// take the host's (PVE/QemuServer/CPUConfig.pm get_cpu_options and
/// `$cpu_vendor_list`, since c4581b9c, qemu-server 6.2; a custom model's
/// `reported-model` decides). qemu-server lists no Dhyana, YongFeng,
/// Denverton or Snowridge, and refuses them.
pub(crate) fn proxmox_forced_vendor(cpu_type: &str) -> Option<CpuVendor> {
    // Its deprecated names map to the server model.
    let cpu_type = match cpu_type {
        "Icelake-Client" => "Icelake-Server",
        "Icelake-Client-noTSX" => "Icelake-Server-noTSX",
        t => t,
    };
    let default = ["host", "max", "kvm32", "kvm64", "qemu32", "qemu64"];
    if default.contains(&cpu_type) || PROXMOX_BUILTIN.contains(&cpu_type) {
        return None;
    }
    model(cpu_type)
        .filter(|m| matches!(m.vendor, Vendor::Intel | Vendor::Amd))
        .map(|m| m.vendor.cpu_vendor())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A5/H4: the table, row by row, against QEMU's model definitions
    /// (the project's cpu-models table, read from builtin_x86_defs).
    #[test]
    fn named_models_their_vendor_1g_pages_and_first_release() {
        for (name, pdpe1gb, vendor, since) in [
            ("kvm64", false, Intel, (7, 2)),
            ("qemu64", false, Amd, (7, 2)),
            ("x86-64-v2-AES", false, Amd, (7, 2)),
            ("Haswell", false, Intel, (7, 2)),
            ("Skylake-Client-v3", false, Intel, (7, 2)),
            ("Skylake-Server", true, Intel, (7, 2)),
            ("Skylake-Server-noTSX-IBRS", true, Intel, (7, 2)),
            ("Cascadelake-Server-v4", true, Intel, (7, 2)),
            ("Icelake-Server", true, Intel, (7, 2)),
            ("Cooperlake", true, Intel, (7, 2)),
            ("EPYC", true, Amd, (7, 2)),
            ("EPYC-IBPB", true, Amd, (7, 2)),
            ("EPYC-Rome-v2", true, Amd, (7, 2)),
            ("EPYC-Milan", true, Amd, (7, 2)),
            ("EPYC-Genoa", true, Amd, (8, 1)),
            ("EPYC-Turin", true, Amd, (10, 1)),
            ("SapphireRapids-v2", true, Intel, (8, 0)),
            ("GraniteRapids", true, Intel, (8, 1)),
            ("SierraForest", true, Intel, (9, 1)),
            ("ClearwaterForest", true, Intel, (10, 0)),
            ("Opteron_G5", true, Amd, (7, 2)),
            ("Opteron_G3", false, Amd, (7, 2)),
            // phenom has 1 GiB pages (it was listed without).
            ("phenom", true, Amd, (7, 2)),
            ("athlon", false, Amd, (7, 2)),
            ("Denverton", true, Intel, (7, 2)),
            ("Snowridge-v4", true, Intel, (7, 2)),
            ("KnightsMill", true, Intel, (7, 2)),
            ("Dhyana-v2", true, Hygon, (7, 2)),
            ("YongFeng", true, Zhaoxin, (10, 0)),
        ] {
            let m = model(name).unwrap_or_else(|| panic!("{name}"));
            let since = (since != (7, 2)).then_some(QemuVersion(since.0, since.1));
            assert_eq!(
                (m.pdpe1gb, m.vendor, m.since),
                (pdpe1gb, vendor, since),
                "{name}"
            );
            assert_eq!(super::pdpe1gb(name), Some(pdpe1gb));
        }
        assert_eq!(pdpe1gb("MyCustom"), None);
        assert_eq!(model("host"), None);
        // Every row of the table is its own base model, once.
        for (i, m) in MODELS.iter().enumerate() {
            assert_eq!(model(m.name), Some(&MODELS[i]));
        }
        // Hygon and Zhaoxin are neither AMD nor Intel to the model.
        assert_eq!(Hygon.cpu_vendor(), CpuVendor::Other);
        assert!(TCG_MAX.pdpe1gb && TCG_MAX.vendor == Amd);
    }

    /// G: qemu-server's `vendor=` (CPUConfig.pm get_cpu_options).
    #[test]
    fn proxmox_forces_the_vendor_of_named_models() {
        for (t, v) in [
            ("Skylake-Server", Some(CpuVendor::Intel)),
            ("Skylake-Server-v4", Some(CpuVendor::Intel)),
            ("Icelake-Client", Some(CpuVendor::Intel)),
            ("EPYC-Rome", Some(CpuVendor::Amd)),
            ("phenom", Some(CpuVendor::Amd)),
            ("athlon", Some(CpuVendor::Amd)),
            ("kvm64", None),
            ("qemu64", None),
            ("x86-64-v2-AES", None),
            ("host", None),
            ("max", None),
        ] {
            assert_eq!(proxmox_forced_vendor(t), v, "{t}");
        }
    }
}
