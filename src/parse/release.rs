//! Firmware release strings: which edk2 and SeaBIOS a version names, in
//! the forms `--firmware` takes and distributions' packages carry.

use crate::model::release::{Edk2Build, Edk2Release, QemuVersion, SeabiosVersion};

/// `ovmf:2022.11` -> rules; a Proxmox `4.2025.02-4` or Debian `2022.11-6`
/// package version carries the release too.
pub(crate) fn edk2_release(v: &str) -> Option<(u32, u32)> {
    // A date: Proxmox's older `3.20230228`, or a snapshot such as Debian
    // 10's `0~20181115.85588389-3` or Ubuntu 20.04's
    // `0~20191122.bd85bf54-2ubuntu3`, taken as that month's release.
    let upstream = v.rsplit_once('-').map_or(v, |(u, _)| u);
    if let Some(d) = upstream
        .split(['.', '~', '+'])
        .find(|p| p.len() == 8 && p.starts_with("20") && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let month: u32 = d[4..6].parse().ok()?;
        return (1..=12)
            .contains(&month)
            .then_some((d[..4].parse().ok()?, month));
    }
    let v = v.split(['-', '+', '~']).next()?;
    let parts: Vec<&str> = v.split('.').collect();
    let (y, m) = match parts.as_slice() {
        [y, m] | [_, y, m] if y.len() == 4 => (*y, *m),
        [_, y, m, ..] if y.len() == 4 => (*y, *m),
        _ => return None,
    };
    Some((y.parse().ok()?, m.parse().ok()?))
}

/// An OVMF build from its version: the edk2 release and the distribution
/// patches that change the window (F2: Debian's `2025.02-N` from N = 2 on
/// carries 9ac1704af6, debian/patches/0001-OvmfPkg-Use-user-specified-
/// opt-ovmf-X-PciMmio64Mb-va.patch, changelog 2025.02-2 "LP: #2101903",
/// through 2025.02-8+deb13u1, and so do Ubuntu's builds of those; Proxmox's
/// `4.2025.02-N` does not; F4: Proxmox `3.20230228-4` and later caps at 46;
/// F9: Ubuntu 24.04's `2024.02-2ubuntu0.N` from N = 4 carries the same
/// patch, changelog 2024.02-2ubuntu0.4 "cherry-pick patch from upstream to
/// use user-specified opt/ovmf/X-PciMmio64Mb value unconditionally (LP:
/// #2101903)", kept through 2024.02-2ubuntu0.10; lab boots m1-m3 of
/// vm-tests/README.md, "Firmware builds outside the draw").
pub(crate) fn edk2_build(v: &str) -> Option<Edk2Build> {
    let (year, month) = edk2_release(v)?;
    let debian_rev = v
        .strip_prefix("2025.02-")
        .map(|r| {
            r.bytes()
                .take_while(u8::is_ascii_digit)
                .collect::<Vec<u8>>()
        })
        .and_then(|d| String::from_utf8(d).ok()?.parse::<u32>().ok());
    let noble_rev = v
        .strip_prefix("2024.02-2ubuntu0.")
        .and_then(|r| r.split(['~', '+', '.']).next()?.parse::<u32>().ok());
    let exact_mmio64_patch = ((year, month) == (2025, 2) && debian_rev.is_some_and(|n| n >= 2))
        || noble_rev.is_some_and(|n| n >= 4);
    let cap46_patch = v.starts_with("3.20230228-")
        && v["3.20230228-".len()..]
            .split(['~', '+', '.'])
            .next()
            .and_then(|r| r.parse::<u32>().ok())
            .is_some_and(|r| r >= 4);
    Some(Edk2Build {
        release: Edk2Release { year, month },
        exact_mmio64_patch,
        cap46_patch,
    })
}

/// `1.16.3`, `1.16.3-2`, `rel-1.17.0`, `1.16.3-2ubuntu1`.
pub(crate) fn seabios_version(v: &str) -> Option<SeabiosVersion> {
    let v = v.trim_start_matches("rel-").split(['-', '+', '~']).next()?;
    let n: Vec<u32> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    match n.as_slice() {
        [a, b, c] => Some(SeabiosVersion(*a, *b, *c)),
        [a, b] => Some(SeabiosVersion(*a, *b, 0)),
        _ => None,
    }
}

/// A QEMU version from `--qemu` or a package: `7.2`, `10.0.2`,
/// `1:7.2+dfsg-7+deb12u6` (Debian's qemu-system-x86), `10.0.2-4`
/// (pve-qemu-kvm), `8.2.2-1ubuntu1`.
pub(crate) fn qemu_version(v: &str) -> Option<QemuVersion> {
    let v = v.split_once(':').map_or(v, |(_, r)| r);
    let v = v.split(['-', '+', '~']).next()?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some(QemuVersion(major, minor))
}

/// The version a versioned machine type pins (`pc-q35-7.0`,
/// `pc-i440fx-6.2+pve0`, `pc-1.3`); `None` for an alias (`q35`, `pc`),
/// which is the newest.
pub(crate) fn machine_version(machine: &str) -> Option<QemuVersion> {
    let name = machine.split([',', '+']).next()?;
    let (_, v) = name.rsplit_once('-')?;
    let (major, minor) = v.split_once('.')?;
    Some(QemuVersion(
        major.parse().ok()?,
        minor.split('.').next()?.parse().ok()?,
    ))
}

/// The installed packages of dpkg's status file (`/var/lib/dpkg/status`),
/// in its order: a stanza's `Package:`, then its `Status:` ending in
/// ` installed`, then its `Version:`.
pub(crate) fn dpkg_installed(status: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut package: Option<&str> = None;
    let mut installed = false;
    for line in status.lines() {
        if let Some(p) = line.strip_prefix("Package: ") {
            package = Some(p.trim());
            installed = false;
        } else if package.is_some() && line.starts_with("Status: ") {
            installed = line.ends_with(" installed");
        } else if let (Some(p), true) = (package, installed) {
            if let Some(v) = line.strip_prefix("Version: ") {
                out.push((p.to_string(), v.trim().to_string()));
            }
        }
    }
    out
}

/// The first of `packages` that is installed, with its version: which
/// firmware or QEMU build the host's VMs get.
pub(crate) fn installed_version(
    installed: &[(String, String)],
    packages: &[&str],
) -> Option<(String, String)> {
    packages
        .iter()
        .find_map(|want| installed.iter().find(|(p, _)| p == want).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_type_versions() {
        assert_eq!(machine_version("pc-q35-7.0"), Some(QemuVersion(7, 0)));
        assert_eq!(machine_version("pc-q35-8.1+pve0"), Some(QemuVersion(8, 1)));
        assert_eq!(
            machine_version("pc-i440fx-10.0,viommu=virtio"),
            Some(QemuVersion(10, 0))
        );
        assert_eq!(machine_version("pc-1.3"), Some(QemuVersion(1, 3)));
        assert_eq!(machine_version("q35"), None);
        assert_eq!(machine_version("pc"), None);
        assert_eq!(machine_version("pc-q35-rhel9.4.0"), None);
    }

    #[test]
    fn installed_versions_from_dpkg() {
        let status = "Package: ovmf\nStatus: deinstall ok config-files\nVersion: 2020.11-2\n\nPackage: pve-edk2-firmware\nStatus: install ok installed\nArchitecture: all\nVersion: 4.2025.02-4~bpo12+1\n\nPackage: late\nVersion: 1\nStatus: install ok installed\n";
        let installed = dpkg_installed(status);
        assert_eq!(
            installed,
            [(
                "pve-edk2-firmware".to_string(),
                "4.2025.02-4~bpo12+1".to_string()
            )]
        );
        assert_eq!(
            installed_version(&installed, &["ovmf", "pve-edk2-firmware"]),
            Some(("pve-edk2-firmware".into(), "4.2025.02-4~bpo12+1".into()))
        );
        assert_eq!(installed_version(&installed, &["seabios"]), None);
        assert!(dpkg_installed("").is_empty());
    }

    #[test]
    fn releases_from_package_versions() {
        assert_eq!(edk2_release("2022.11"), Some((2022, 11)));
        assert_eq!(edk2_release("2022.11-6+deb12u2"), Some((2022, 11)));
        assert_eq!(edk2_release("4.2025.02-4~bpo12+1"), Some((2025, 2)));
        assert_eq!(edk2_release("3.20230228-4"), Some((2023, 2)));
        assert_eq!(
            edk2_release("0~20191122.bd85bf54-2ubuntu3.5"),
            Some((2019, 11))
        );
        assert_eq!(
            edk2_release("0~20181115.85588389-3+deb10u3"),
            Some((2018, 11))
        );
        assert_eq!(edk2_release("0~20191399.x-1"), None);
        assert_eq!(edk2_release("new"), None);
        assert_eq!(seabios_version("1.16.2"), Some(SeabiosVersion(1, 16, 2)));
        assert_eq!(seabios_version("1.16.3-2"), Some(SeabiosVersion(1, 16, 3)));
        assert_eq!(
            seabios_version("rel-1.17.0"),
            Some(SeabiosVersion(1, 17, 0))
        );
        assert_eq!(seabios_version("new"), None);
    }

    #[test]
    fn distribution_builds_and_qemu_versions() {
        let b = |v| edk2_build(v).unwrap();
        assert!(b("2025.02-8+deb13u1").exact_mmio64_patch);
        // From Debian's 2025.02-2 on (trixie's 2025.02-8 too), not in -1,
        // upstream's 2025.02 or Proxmox's 4.2025.02-N.
        assert!(b("2025.02-8").exact_mmio64_patch);
        assert!(b("2025.02-2").exact_mmio64_patch);
        assert!(b("2025.02-3ubuntu1").exact_mmio64_patch);
        // Ubuntu 24.04's from 2024.02-2ubuntu0.4 on; not its first builds,
        // upstream's 2024.02, or Ubuntu 22.04's 2022.02.
        assert!(b("2024.02-2ubuntu0.4").exact_mmio64_patch);
        assert!(b("2024.02-2ubuntu0.10").exact_mmio64_patch);
        assert!(b("2024.02-2ubuntu0.4~cloud0").exact_mmio64_patch);
        assert!(b("2024.02-2ubuntu0.5+esm1").exact_mmio64_patch);
        assert!(!b("2024.02-2ubuntu0.3~cloud0").exact_mmio64_patch);
        assert!(!b("2024.02-2ubuntu0.3").exact_mmio64_patch);
        assert!(!b("2024.02-2").exact_mmio64_patch);
        assert!(!b("2024.02").exact_mmio64_patch);
        assert!(!b("2022.02-3ubuntu0.22.04.7").exact_mmio64_patch);
        assert!(!b("2025.02-1").exact_mmio64_patch);
        assert!(!b("4.2025.02-4~bpo12+1").exact_mmio64_patch);
        assert!(!b("2025.02").exact_mmio64_patch);
        assert!(!b("2022.11-6+deb12u2").exact_mmio64_patch);
        assert!(b("3.20230228-4").cap46_patch);
        assert!(!b("3.20230228-3").cap46_patch);
        assert!(!b("4.2023.08-4").cap46_patch);
        assert_eq!(
            b("2026.08+ds-2").release,
            Edk2Release {
                year: 2026,
                month: 8
            }
        );
        assert_eq!(qemu_version("7.2"), Some(QemuVersion(7, 2)));
        assert_eq!(qemu_version("10.0.2"), Some(QemuVersion(10, 0)));
        assert_eq!(
            qemu_version("1:7.2+dfsg-7+deb12u6"),
            Some(QemuVersion(7, 2))
        );
        assert_eq!(qemu_version("10.0.2-4"), Some(QemuVersion(10, 0)));
        assert_eq!(qemu_version("x"), None);
        assert_eq!(qemu_version("9.0.2-4"), Some(QemuVersion(9, 0)));
    }
}
