//! What QEMU's named CPU models carry that the window depends on: 1 GiB
//! pages (`pdpe1gb`, CPUID 0x80000001 EDX bit 26), which OVMF needs to use
//! more than 40 bits.
//!
//! From the model definitions in QEMU's target/i386/cpu.c
//! (`builtin_x86_defs`, `.features[FEAT_8000_0001_EDX]` holding
//! `CPUID_EXT2_PDPE1GB`) at v7.2.0 and v10.0.0. kvm64 and qemu64 list it
//! as missing ("Missing: CPUID_EXT2_PDPE1GB"); TCG supports it
//! (`TCG_EXT2_FEATURES`). Versioned aliases (`-v2`, `-IBRS`, `-noTSX`,
//! `-IBPB`) keep their base model's bit.

/// Models with 1 GiB pages, and the first QEMU release that has them.
const WITH_PDPE1GB: &[(&str, (u32, u32))] = &[
    // v7.2.0 target/i386/cpu.c
    ("Skylake-Server", (7, 2)),
    ("Cascadelake-Server", (7, 2)),
    ("Cooperlake", (7, 2)),
    ("Icelake-Server", (7, 2)),
    ("Opteron_G4", (7, 2)),
    ("Opteron_G5", (7, 2)),
    ("EPYC", (7, 2)),
    ("EPYC-Rome", (7, 2)),
    ("EPYC-Milan", (7, 2)),
    // v10.0.0 target/i386/cpu.c
    ("SapphireRapids", (10, 0)),
    ("GraniteRapids", (10, 0)),
    ("SierraForest", (10, 0)),
    ("EPYC-Genoa", (10, 0)),
];

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

/// Whether a named model has 1 GiB pages. `None`: a model this table does
/// not know (taken without, and said so by the caller).
pub(crate) fn pdpe1gb(model: &str) -> Option<bool> {
    let base = base_model(model);
    if WITH_PDPE1GB
        .iter()
        .any(|(m, _)| m.eq_ignore_ascii_case(base))
    {
        return Some(true);
    }
    const WITHOUT: &[&str] = &[
        "kvm64",
        "qemu64",
        "kvm32",
        "qemu32",
        "x86-64-v2",
        "x86-64-v2-AES",
        "x86-64-v3",
        "x86-64-v4",
        "Conroe",
        "Penryn",
        "Nehalem",
        "Westmere",
        "SandyBridge",
        "IvyBridge",
        "Haswell",
        "Broadwell",
        "Skylake-Client",
        "Opteron_G1",
        "Opteron_G2",
        "Opteron_G3",
        "core2duo",
        "coreduo",
        "phenom",
        "athlon",
        "pentium",
        "pentium2",
        "pentium3",
        "486",
        "n270",
    ];
    WITHOUT
        .iter()
        .any(|m| m.eq_ignore_ascii_case(base))
        .then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A5/H4: the table, row by row, against QEMU's model definitions.
    #[test]
    fn named_models_and_their_1g_pages() {
        for (model, has) in [
            ("kvm64", Some(false)),
            ("qemu64", Some(false)),
            ("x86-64-v2-AES", Some(false)),
            ("Haswell", Some(false)),
            ("Skylake-Client-v3", Some(false)),
            ("Skylake-Server", Some(true)),
            ("Skylake-Server-noTSX-IBRS", Some(true)),
            ("Cascadelake-Server-v4", Some(true)),
            ("Icelake-Server", Some(true)),
            ("Cooperlake", Some(true)),
            ("EPYC", Some(true)),
            ("EPYC-IBPB", Some(true)),
            ("EPYC-Rome-v2", Some(true)),
            ("EPYC-Milan", Some(true)),
            ("EPYC-Genoa", Some(true)),
            ("SapphireRapids-v2", Some(true)),
            ("GraniteRapids", Some(true)),
            ("SierraForest", Some(true)),
            ("Opteron_G5", Some(true)),
            ("Opteron_G3", Some(false)),
            ("MyCustom", None),
        ] {
            assert_eq!(pdpe1gb(model), has, "{model}");
        }
    }
}
