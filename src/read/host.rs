//! The host side, for `plan`: a Proxmox VM's configuration and PCI
//! mappings, a libvirt domain's XML, the host's own CPU, the GPUs' BARs as
//! the host's sysfs shows them (the host assigned them), and which firmware
//! package is installed. Every path below the root.

use crate::model::bar::Bar;
use crate::model::pci::PciAddress;
use crate::model::platform::Cpu;
use crate::parse::{procfs, resource};
use crate::read::root::{cannot_read, read_lossy, Root};
use crate::read::sysfs::DEVICES_DIR;
use std::path::{Path, PathBuf};

/// `--proxmox VMID` or `--proxmox FILE`: the file to read.
pub(crate) fn proxmox_config_path(root: &Root, arg: &str) -> PathBuf {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        root.join(format!("etc/pve/qemu-server/{arg}.conf"))
    } else {
        PathBuf::from(arg)
    }
}

/// A file's text, or `cannot read PATH: why`.
pub(crate) fn read_file(path: &Path) -> Result<String, String> {
    read_lossy(path).map_err(|e| cannot_read(path, &e))
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

/// The memory BARs of a host function, from its `resource` lines and BAR
/// registers (assigned on the host, so sized).
pub(crate) fn host_bars(root: &Root, addr: PciAddress) -> Result<Vec<Bar>, String> {
    let dir = root.join(DEVICES_DIR).join(addr.to_string());
    let res_path = dir.join("resource");
    let text = read_lossy(&res_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "no PCI device {addr} on this host ({} is missing)",
                dir.display()
            )
        } else {
            cannot_read(&res_path, &e)
        }
    })?;
    let (lines, _) = resource::parse_resource(&text);
    let config = std::fs::read(dir.join("config")).ok();
    Ok(resource::decode_bars(config.as_deref(), &lines)
        .into_iter()
        .filter(|b| !b.io && b.size.is_some())
        .collect())
}

/// A host function's class code (`0x030200`), `None` if unreadable.
pub(crate) fn class_of(root: &Root, addr: PciAddress) -> Option<u32> {
    let text = root.read_trimmed(&format!("{DEVICES_DIR}/{addr}/class"))?;
    crate::parse::hex::hex_u64(&text).and_then(|c| u32::try_from(c).ok())
}

/// The functions of `bus:device` present on the host (`41:00` in a
/// Proxmox `hostpci` line means all of them).
pub(crate) fn functions_of(root: &Root, domain: u32, bus: u8, device: u8) -> Vec<PciAddress> {
    (0..8)
        .map(|function| PciAddress {
            domain,
            bus,
            device,
            function,
        })
        .filter(|a| root.join(DEVICES_DIR).join(a.to_string()).exists())
        .collect()
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
