//! The host side, for `plan`: a Proxmox VM's configuration and PCI
//! mappings, a libvirt domain's XML, the host's own CPU, the GPUs' BARs as
//! the host's sysfs shows them (the host assigned them), and which firmware
//! package is installed. Every path below the root.

use crate::model::platform::Cpu;
use crate::parse::procfs;
use crate::read::root::Root;
use std::path::PathBuf;

/// `--proxmox VMID` or `--proxmox FILE`: the file to read.
pub(crate) fn proxmox_config_path(root: &Root, arg: &str) -> PathBuf {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        root.join(format!("etc/pve/qemu-server/{arg}.conf"))
    } else {
        PathBuf::from(arg)
    }
}

/// The host's CPU (`/proc/cpuinfo` under the root), `None` if unreadable.
pub(crate) fn host_cpu(root: &Root) -> Option<Cpu> {
    let cpu = procfs::cpuinfo(&root.read_text("proc/cpuinfo").ok()?);
    (cpu.phys_bits.is_some() || cpu.vendor.is_some()).then_some(cpu)
}

/// The node's name, for Proxmox mappings that differ per node: the short
/// host name, as Proxmox names nodes (`/etc/hostname` may hold the FQDN).
pub(crate) fn node_name(root: &Root) -> Option<String> {
    let name = root.read_trimmed("etc/hostname")?;
    let short = name.split('.').next()?.trim();
    (!short.is_empty()).then(|| short.to_string())
}

/// The installed version of the first of `packages` in dpkg's status
/// file: which firmware build the host's VMs boot.
pub(crate) fn dpkg_version(root: &Root, packages: &[&str]) -> Option<(String, String)> {
    let status = root.read_text("var/lib/dpkg/status").ok()?;
    for want in packages {
        let mut in_it = false;
        let mut installed = false;
        for line in status.lines() {
            if let Some(p) = line.strip_prefix("Package: ") {
                in_it = p.trim() == *want;
                installed = false;
            } else if in_it && line.starts_with("Status: ") {
                installed = line.ends_with(" installed");
            } else if in_it && installed {
                if let Some(v) = line.strip_prefix("Version: ") {
                    return Some((want.to_string(), v.trim().to_string()));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_versions_from_dpkg() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        std::fs::create_dir_all(d.path().join("var/lib/dpkg")).unwrap();
        std::fs::write(
            d.path().join("var/lib/dpkg/status"),
            "Package: ovmf\nStatus: deinstall ok config-files\nVersion: 2020.11-2\n\nPackage: pve-edk2-firmware\nStatus: install ok installed\nArchitecture: all\nVersion: 4.2025.02-4~bpo12+1\n",
        )
        .unwrap();
        assert_eq!(
            dpkg_version(&root, &["ovmf", "pve-edk2-firmware"]),
            Some(("pve-edk2-firmware".into(), "4.2025.02-4~bpo12+1".into()))
        );
        assert_eq!(dpkg_version(&root, &["seabios"]), None);
        assert_eq!(
            proxmox_config_path(&root, "100"),
            d.path().join("etc/pve/qemu-server/100.conf")
        );
        assert_eq!(
            proxmox_config_path(&root, "vm.conf"),
            PathBuf::from("vm.conf")
        );
    }
}
