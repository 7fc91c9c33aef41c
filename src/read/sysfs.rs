//! Reading PCI functions from `<root>/sys/bus/pci/devices`.
//!
//! Only this module touches sysfs. Everything it reads goes through the
//! parsers in `parse`; a function that vanishes while we read it is skipped
//! with a warning, a malformed file costs that file, not the scan.

use crate::model::bar::{Bar, BridgeWindow};
use crate::model::pci::{is_bridge, PciAddress, RootBus};
use crate::parse::address::root_bus;
use crate::parse::hex::hex_at_most;
use crate::parse::resource;
use crate::read::root::{cannot_read, read_lossy, Root};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) const DEVICES_DIR: &str = "sys/bus/pci/devices";

/// One PCI function as sysfs shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Function {
    pub addr: PciAddress,
    pub vendor: u16,
    pub device: u16,
    /// 24-bit class code: base, subclass, programming interface.
    pub class: u32,
    pub header_type: Option<u8>,
    pub bars: Vec<Bar>,
    pub windows: Vec<BridgeWindow>,
    /// Bridges between this function and its root bus, nearest first.
    pub upstream: Vec<PciAddress>,
    /// The root bus (`pciDDDD:BB` in the device path).
    pub root_bus: Option<RootBus>,
    /// An SR-IOV virtual function (it has a `physfn` link): it shares its
    /// parent's class but is not a GPU of its own.
    pub virtual_fn: bool,
}

impl Function {
    pub(crate) fn is_bridge(&self) -> bool {
        is_bridge(Some(self.class), self.header_type)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The functions kept: those the caller asked for, and every bridge.
    pub functions: Vec<Function>,
    pub warnings: Vec<String>,
}

impl Scan {
    pub(crate) fn get(&self, addr: PciAddress) -> Option<&Function> {
        self.functions.iter().find(|f| f.addr == addr)
    }
}

/// Why nothing could be scanned: the devices directory itself cannot be
/// listed.
#[derive(Debug)]
pub(crate) struct NoDevices(pub PathBuf, pub io::Error);

/// Lists every PCI function and reads those `keep(vendor, device, class)`
/// wants, plus every bridge (the GPUs' windows are in them); the rest cost
/// three small reads each, which matters on hosts with thousands of SR-IOV
/// functions.
pub(crate) fn scan(root: &Root, keep: &dyn Fn(u16, u16, u32) -> bool) -> Result<Scan, NoDevices> {
    let dir = root.join(DEVICES_DIR);
    let entries = fs::read_dir(&dir).map_err(|e| NoDevices(dir.clone(), e))?;
    let mut names: Vec<String> = Vec::new();
    let mut out = Scan::default();
    for entry in entries {
        match entry {
            Ok(e) => names.push(e.file_name().to_string_lossy().into_owned()),
            Err(e) => out.warnings.push(cannot_read(&dir, &e)),
        }
    }
    names.sort();
    for name in names {
        let addr: PciAddress = match name.parse() {
            Ok(a) => a,
            Err(_) => {
                out.warnings.push(format!(
                    "{}: not a PCI address, skipped",
                    dir.join(&name).display()
                ));
                continue;
            }
        };
        match read_function(root, &dir.join(&name), addr, keep) {
            Ok(Some((f, mut w))) => {
                out.warnings.append(&mut w);
                out.functions.push(f);
            }
            Ok(None) => {}
            Err(e) => out.warnings.push(e),
        }
    }
    Ok(out)
}

/// A function's full record, `None` when it is neither wanted nor a bridge.
fn read_function(
    root: &Root,
    dir: &Path,
    addr: PciAddress,
    keep: &dyn Fn(u16, u16, u32) -> bool,
) -> Result<Option<(Function, Vec<String>)>, String> {
    let mut warnings = Vec::new();
    let required = |name: &str, max: u64| -> Result<u64, String> {
        let p = dir.join(name);
        match read_lossy(&p) {
            Ok(t) => hex_at_most(t.trim(), max).ok_or_else(|| {
                format!(
                    "{}: malformed ({:?}), function {addr} skipped",
                    p.display(),
                    t.trim()
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
                "{addr}: vanished while being read ({} missing), skipped",
                p.display()
            )),
            Err(e) => Err(format!("{}; function {addr} skipped", cannot_read(&p, &e))),
        }
    };
    let vendor = required("vendor", 0xffff)? as u16;
    let device = required("device", 0xffff)? as u16;
    let class = required("class", 0xff_ffff)? as u32;
    // Bridges are kept whatever the selection: the GPUs' windows are in
    // them. Before config space is read only the class can tell.
    if !is_bridge(Some(class), None) && !keep(vendor, device, class) {
        return Ok(None);
    }

    let resource_path = dir.join("resource");
    let resources = match read_lossy(&resource_path) {
        Ok(t) => {
            let (lines, errors) = resource::parse_resource(&t);
            for e in errors {
                warnings.push(format!("{}: {e}", resource_path.display()));
            }
            lines
        }
        Err(e) => {
            warnings.push(cannot_read(&resource_path, &e));
            Vec::new()
        }
    };
    let config = bar_registers(root, addr, &mut warnings);
    let header_type = config.as_deref().and_then(resource::header_type);
    let bars = if header_type.unwrap_or(0) <= 2 {
        resource::decode_bars(config.as_deref(), &resources)
    } else {
        Vec::new()
    };
    let windows = if is_bridge(Some(class), header_type) {
        resource::bridge_windows(&resources)
    } else {
        Vec::new()
    };
    let link = root.read_link(&format!("{DEVICES_DIR}/{addr}"));
    let upstream = link
        .as_deref()
        .map(|t| upstream_chain(t, addr))
        .unwrap_or_default();
    let root_bus = link.as_deref().and_then(root_bus_of);
    Ok(Some((
        Function {
            addr,
            vendor,
            device,
            class,
            header_type,
            bars,
            windows,
            upstream,
            root_bus,
            virtual_fn: fs::symlink_metadata(dir.join("physfn")).is_ok(),
        },
        warnings,
    )))
}

/// At most `limit` bytes of a function's config space: 64 hold every BAR
/// register and are readable by anyone; the rest (capabilities past the
/// header, 256 bytes or 4096 with extended space) only by root. The only
/// reader of config space.
pub(crate) fn config(root: &Root, addr: PciAddress, limit: u64) -> Result<Vec<u8>, String> {
    root.read_bytes(&format!("{DEVICES_DIR}/{addr}/config"), limit)
}

/// The BAR registers (the first 64 bytes), `None` with a warning when
/// they cannot be read.
fn bar_registers(root: &Root, addr: PciAddress, warnings: &mut Vec<String>) -> Option<Vec<u8>> {
    match config(root, addr, 64) {
        Ok(buf) if buf.len() >= 0x28 => Some(buf),
        Ok(buf) => {
            warnings.push(format!(
                "{}: only {} bytes, BAR registers not readable",
                root.join(format!("{DEVICES_DIR}/{addr}/config")).display(),
                buf.len()
            ));
            None
        }
        Err(e) => {
            warnings.push(e);
            None
        }
    }
}

/// The bridges between a function and its root bus, nearest first, from
/// its sysfs link's path; empty when the link cannot be read. The only
/// place the chain is built.
pub(crate) fn upstream(root: &Root, addr: PciAddress) -> Vec<PciAddress> {
    root.read_link(&format!("{DEVICES_DIR}/{addr}"))
        .map(|t| upstream_chain(&t, addr))
        .unwrap_or_default()
}

/// A function's class code (`0x030200`), `None` if unreadable.
pub(crate) fn class(root: &Root, addr: PciAddress) -> Option<u32> {
    let text = root.read_trimmed(&format!("{DEVICES_DIR}/{addr}/class"))?;
    crate::parse::hex::hex_u64(&text).and_then(|c| u32::try_from(c).ok())
}

/// Whether the host has this function.
pub(crate) fn present(root: &Root, addr: PciAddress) -> bool {
    root.exists(&format!("{DEVICES_DIR}/{addr}"))
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
        .filter(|a| present(root, *a))
        .collect()
}

/// The memory BARs of a host function, from its `resource` lines and BAR
/// registers `config` (assigned on the host, so sized).
pub(crate) fn host_bars(
    root: &Root,
    addr: PciAddress,
    config: Option<&[u8]>,
) -> Result<Vec<Bar>, String> {
    let dir = root.join(DEVICES_DIR).join(addr.to_string());
    let res_path = dir.join("resource");
    let text = read_lossy(&res_path).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            format!(
                "no PCI device {addr} on this host ({} is missing)",
                dir.display()
            )
        } else {
            cannot_read(&res_path, &e)
        }
    })?;
    let (lines, _) = resource::parse_resource(&text);
    Ok(resource::decode_bars(config, &lines)
        .into_iter()
        .filter(|b| !b.io && b.size.is_some())
        .collect())
}

/// The NUMA node sysfs gives a function (`-1`: none).
pub(crate) fn numa_node(root: &Root, addr: PciAddress) -> Option<i64> {
    root.read_trimmed(&format!("{DEVICES_DIR}/{addr}/numa_node"))
        .and_then(|n| n.parse().ok())
}

/// `../../../devices/pci0000:00/...` -> 0000:00.
fn root_bus_of(link_target: &Path) -> Option<RootBus> {
    link_target
        .components()
        .find_map(|c| root_bus(c.as_os_str().to_str()?.strip_prefix("pci")?))
}

/// `../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0` -> `[00:02.0]`.
fn upstream_chain(link_target: &Path, own: PciAddress) -> Vec<PciAddress> {
    let mut chain: Vec<PciAddress> = link_target
        .components()
        .filter_map(|c| c.as_os_str().to_str()?.parse().ok())
        .filter(|a| *a != own)
        .collect();
    chain.reverse();
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_chain_is_nearest_first_and_the_root_bus_is_in_the_path() {
        let own: PciAddress = "0000:03:00.0".parse().unwrap();
        let link = Path::new(
            "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:01.0/0000:03:00.0",
        );
        let s: Vec<String> = upstream_chain(link, own)
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(s, ["0000:02:01.0", "0000:01:00.0", "0000:00:02.0"]);
        assert_eq!(root_bus_of(link), Some(RootBus { domain: 0, bus: 0 }));
        assert_eq!(root_bus_of(Path::new("../../../devices/platform/x")), None);
    }
}
