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
        match read_function(&dir.join(&name), addr, keep) {
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
    let config = read_config(&dir.join("config"), &mut warnings);
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
    let link = fs::read_link(dir).ok();
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

/// The first 64 bytes hold every BAR register and are readable by anyone.
fn read_config(path: &Path, warnings: &mut Vec<String>) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(64);
    let r = fs::File::open(path).and_then(|f| f.take(64).read_to_end(&mut buf));
    match r {
        Ok(_) if buf.len() >= 0x28 => Some(buf),
        Ok(n) => {
            warnings.push(format!(
                "{}: only {n} bytes, BAR registers not readable",
                path.display()
            ));
            None
        }
        Err(e) => {
            warnings.push(cannot_read(path, &e));
            None
        }
    }
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
