//! Reading PCI functions from `<root>/sys/bus/pci/devices`.
//!
//! Only this module touches sysfs. Everything it reads goes through the
//! parsers in `bars` and `pci`; a function that vanishes while we read it is
//! skipped with a warning, a malformed file costs that file, not the scan.

use crate::bars::{self, Bar, BridgeWindow};
use crate::pci::PciAddress;
use crate::root::{read_lossy, Root};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub const DEVICES_DIR: &str = "sys/bus/pci/devices";

/// One PCI function as sysfs shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub addr: PciAddress,
    pub vendor: u16,
    pub device: u16,
    /// 24-bit class code: base, subclass, programming interface.
    pub class: u32,
    pub revision: Option<u8>,
    pub subsystem: Option<(u16, u16)>,
    pub header_type: Option<u8>,
    pub bars: Vec<Bar>,
    pub windows: Vec<BridgeWindow>,
    /// Bridges between this function and its root bus, nearest first.
    pub upstream: Vec<PciAddress>,
    /// The root bus (`pciDDDD:BB` in the device path).
    pub root_bus: Option<(u32, u8)>,
    /// An SR-IOV virtual function (it has a `physfn` link): it shares its
    /// parent's class but is not a GPU of its own.
    pub virtual_fn: bool,
    /// The BAR registers could be read; without them an all-zero resource
    /// line cannot be told from an absent BAR.
    pub config_read: bool,
}

impl Function {
    pub fn base_class(&self) -> u8 {
        (self.class >> 16) as u8
    }

    pub fn sub_class(&self) -> u8 {
        (self.class >> 8) as u8
    }

    pub fn is_bridge(&self) -> bool {
        self.header_type == Some(1) || self.class >> 8 == 0x0604
    }
}

#[derive(Debug, Default)]
pub struct Scan {
    /// The functions kept: those the caller asked for, and every bridge.
    pub functions: Vec<Function>,
    /// Every function listed, kept or not.
    pub seen: usize,
    pub warnings: Vec<String>,
}

impl Scan {
    pub fn get(&self, addr: PciAddress) -> Option<&Function> {
        self.functions.iter().find(|f| f.addr == addr)
    }
}

/// Lists every PCI function and reads those `keep(vendor, device, class)`
/// wants, plus every bridge (the GPUs' windows are in them); the rest cost
/// three small reads each, which matters on hosts with thousands of SR-IOV
/// functions. Fails only when the devices directory itself cannot be
/// listed: then nothing can be inspected.
pub fn scan(
    root: &Root,
    keep: &dyn Fn(u16, u16, u32) -> bool,
) -> Result<Scan, (PathBuf, io::Error)> {
    let dir = root.join(DEVICES_DIR);
    let entries = fs::read_dir(&dir).map_err(|e| (dir.clone(), e))?;
    let mut names: Vec<String> = Vec::new();
    let mut out = Scan::default();
    for entry in entries {
        match entry {
            Ok(e) => names.push(e.file_name().to_string_lossy().into_owned()),
            Err(e) => out.warnings.push(format!("listing {}: {e}", dir.display())),
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
        out.seen += 1;
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

fn parse_hex_attr(text: &str) -> Option<u64> {
    bars::parse_hex_u64(text.trim())
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
            Ok(t) => parse_hex_attr(&t).filter(|v| *v <= max).ok_or_else(|| {
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
            Err(e) => Err(format!(
                "reading {}: {e}; function {addr} skipped",
                p.display()
            )),
        }
    };
    let vendor = required("vendor", 0xffff)? as u16;
    let device = required("device", 0xffff)? as u16;
    let class = required("class", 0xff_ffff)? as u32;
    // PCI-to-PCI (0x0604), CardBus (0x0607) and semi-transparent (0x0609)
    // bridges forward windows.
    let bridge_class = matches!(class >> 8, 0x0604 | 0x0607 | 0x0609);
    if !bridge_class && !keep(vendor, device, class) {
        return Ok(None);
    }

    let mut optional = |name: &str, max: u64| -> Option<u64> {
        let p = dir.join(name);
        match read_lossy(&p) {
            Ok(t) => {
                let v = parse_hex_attr(&t).filter(|v| *v <= max);
                if v.is_none() {
                    warnings.push(format!(
                        "{}: malformed ({:?}), ignored",
                        p.display(),
                        t.trim()
                    ));
                }
                v
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                warnings.push(format!("reading {}: {e}", p.display()));
                None
            }
        }
    };
    let revision = optional("revision", 0xff).map(|v| v as u8);
    let subsystem = match (
        optional("subsystem_vendor", 0xffff),
        optional("subsystem_device", 0xffff),
    ) {
        (Some(v), Some(d)) => Some((v as u16, d as u16)),
        _ => None,
    };

    let resources = match read_lossy(&dir.join("resource")) {
        Ok(t) => {
            let (lines, errors) = bars::parse_resource(&t);
            for e in errors {
                warnings.push(format!("{}: {e}", dir.join("resource").display()));
            }
            lines
        }
        Err(e) => {
            warnings.push(format!("reading {}: {e}", dir.join("resource").display()));
            Vec::new()
        }
    };
    let config = read_config(&dir.join("config"), &mut warnings);
    let header_type = config.as_deref().and_then(bars::header_type);
    let bars = if header_type.unwrap_or(0) <= 2 {
        bars::decode_bars(config.as_deref(), &resources)
    } else {
        Vec::new()
    };
    let windows = if header_type == Some(1) || class >> 8 == 0x0604 {
        bars::bridge_windows(&resources)
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
            revision,
            subsystem,
            header_type,
            bars,
            windows,
            upstream,
            root_bus,
            virtual_fn: fs::symlink_metadata(dir.join("physfn")).is_ok(),
            config_read: config.is_some(),
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
            warnings.push(format!("reading {}: {e}", path.display()));
            None
        }
    }
}

/// `../../../devices/pci0000:00/...` -> (0, 0).
pub fn root_bus_of(link_target: &Path) -> Option<(u32, u8)> {
    link_target
        .components()
        .find_map(|c| crate::system::parse_root_bus(c.as_os_str().to_str()?.strip_prefix("pci")?))
}

/// `../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0` -> `[00:02.0]`.
pub fn upstream_chain(link_target: &Path, own: PciAddress) -> Vec<PciAddress> {
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
    fn upstream_chain_is_nearest_first() {
        let own: PciAddress = "0000:03:00.0".parse().unwrap();
        let c = upstream_chain(
            Path::new(
                "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/0000:02:01.0/0000:03:00.0",
            ),
            own,
        );
        let s: Vec<String> = c.iter().map(|a| a.to_string()).collect();
        assert_eq!(s, ["0000:02:01.0", "0000:01:00.0", "0000:00:02.0"]);
    }
}
