//! The host side, for `plan`: where a Proxmox VM's configuration is, the
//! node's name, the host's own CPU, dpkg's status (which firmware and QEMU
//! packages are installed) and a RHEL-family sign. Every path below the
//! root; the host's GPUs are read by `read::sysfs`, and all of it gathered
//! by `evidence::host`.

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

/// dpkg's status file: which firmware and QEMU packages are installed
/// (`parse::release::dpkg_installed`); `None` without one.
pub(crate) fn dpkg_status(root: &Root) -> Option<String> {
    root.read_text("var/lib/dpkg/status").ok()
}

/// A RHEL-family host (`/etc/redhat-release`), whose qemu-kvm differs
/// from upstream's in ways `plan` can only say.
pub(crate) fn redhat_release(root: &Root) -> bool {
    root.exists("etc/redhat-release")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxmox_configuration_by_vmid_or_file() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
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
