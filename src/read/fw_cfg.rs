//! fw_cfg as the guest's `qemu_fw_cfg` driver shows it: the four files the
//! firmware window depends on, under
//! `/sys/firmware/qemu_fw_cfg/by_name/NAME/raw` (kernel
//! Documentation/ABI/testing/sysfs-firmware-qemu_fw_cfg), and, for the
//! boot step, loading that driver when the initramfs has it and nothing
//! has loaded it yet.

use crate::model::fw_cfg::{
    FwCfg, Input, E820_FILE, MMIO64_FILE, RESERVED_MEMORY_END_FILE, SEABIOS_PCI64_FILE,
};
use crate::parse::fw_cfg as parse;
use crate::read::root::Root;
use std::path::PathBuf;

pub(crate) const DIR: &str = "sys/firmware/qemu_fw_cfg";

/// Larger than any of the four can be (e820: 128 entries of 20 bytes).
const LIMIT: u64 = 64 << 10;

/// The four inputs. Without the driver's directory each is `Unknown`; a
/// file present but unreadable or malformed is `Unknown` too, with a
/// warning; one the firmware would refuse is `Refused`, also with one.
pub(crate) fn read(root: &Root, warnings: &mut Vec<String>) -> FwCfg {
    let mut fw = FwCfg::default();
    if !root.exists(&format!("{DIR}/by_name")) {
        return fw;
    }
    fw.readable = true;
    fw.mmio64_mb = input(root, MMIO64_FILE, warnings, |raw| {
        parse::ovmf_mmio64_mb(raw).map_err(|why| Bad::Refused(format!("OVMF ignores it: {why}")))
    });
    fw.seabios_pci64 = input(root, SEABIOS_PCI64_FILE, warnings, |raw| {
        parse::seabios_pci64(raw).ok_or_else(|| {
            Bad::Refused(format!(
                "SeaBIOS takes it as not set: {:?} is none of 1, on, yes, 0, off, no",
                String::from_utf8_lossy(raw)
            ))
        })
    });
    fw.reserved_memory_end = input(root, RESERVED_MEMORY_END_FILE, warnings, |raw| {
        parse::reserved_memory_end(raw).map_err(Bad::Malformed)
    });
    fw.e820 = input(root, E820_FILE, warnings, |raw| {
        parse::e820(raw).map_err(Bad::Malformed)
    });
    fw
}

/// Why a file's value is not taken.
enum Bad {
    /// Its firmware refuses it: for the window, as if unset.
    Refused(String),
    /// Not what QEMU writes: its value is not known.
    Malformed(String),
}

fn input<T>(
    root: &Root,
    name: &str,
    warnings: &mut Vec<String>,
    parse: impl FnOnce(&[u8]) -> Result<T, Bad>,
) -> Input<T> {
    let dir = format!("{DIR}/by_name/{name}");
    if !root.exists(&dir) {
        return Input::Unset;
    }
    let raw = match root.read_bytes(&format!("{dir}/raw"), LIMIT) {
        Ok(raw) => raw,
        Err(e) => {
            warnings.push(format!("{e}; fw_cfg {name} not known"));
            return Input::Unknown;
        }
    };
    match parse(&raw) {
        Ok(v) => Input::Set(v),
        Err(Bad::Refused(why)) => {
            warnings.push(format!("fw_cfg {name}: {why}"));
            Input::Refused(why)
        }
        Err(Bad::Malformed(why)) => {
            warnings.push(format!("fw_cfg {name}: {why}; not known"));
            Input::Unknown
        }
    }
}

/// What loading the driver came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DriverLoad {
    /// fw_cfg's directory is there already (loaded, or built in).
    Present,
    /// No fw_cfg device (ACPI `QEMU0002`): not a QEMU guest, or one
    /// without it; nothing to load.
    NoDevice,
    /// The module is not in this initramfs (or this kernel has none).
    NoModule,
    /// Below a root that is not the live system: the module that would
    /// be loaded.
    WouldLoad(PathBuf),
    Loaded,
    /// The kernel refused it: why.
    Failed(String),
}

/// The fw_cfg device as QEMU's ACPI tables describe it on x86 (q35 and
/// i440fx: `_HID` `QEMU0002`), which the driver binds to.
const DEVICE: &str = "sys/bus/acpi/devices/QEMU0002:00";
const MODULE: &str = "kernel/drivers/firmware/qemu_fw_cfg.ko";

/// Loads the kernel's `qemu_fw_cfg` driver so that the check can read
/// fw_cfg (the boot step's only: it runs before udev, which would load it
/// a moment later for the same device). Costs a few lookups where there
/// is nothing to load; loads with one `finit_module(2)` where there is,
/// instead of starting `modprobe`, a dynamically linked program whose
/// start alone costs more than the check under emulation. The driver has
/// no dependencies (its modinfo lists none). A compressed module
/// (`.ko.xz`, `.ko.zst`, `.ko.gz`) is handed to the kernel to decompress
/// (`MODULE_INIT_COMPRESSED_FILE`, Linux 6.4 and later); a kernel that
/// cannot take it is as one without the module. A driver the kernel
/// command line keeps out (`modprobe.blacklist=`, `module_blacklist=`)
/// is not loaded: `cmdline` is the command line, where it was read.
pub(crate) fn load_driver(root: &Root, cmdline: Option<&str>) -> DriverLoad {
    if root.exists(DIR) {
        return DriverLoad::Present;
    }
    if cmdline.is_some_and(blacklisted) {
        return DriverLoad::NoModule;
    }
    if !root.exists(DEVICE) {
        return DriverLoad::NoDevice;
    }
    let Some(release) = root.read_trimmed("proc/sys/kernel/osrelease") else {
        return DriverLoad::NoModule;
    };
    let base = format!("lib/modules/{release}/{MODULE}");
    let Some((path, compressed)) = ["", ".xz", ".zst", ".gz"]
        .iter()
        .map(|ext| (root.join(format!("{base}{ext}")), !ext.is_empty()))
        .find(|(p, _)| p.exists())
    else {
        return DriverLoad::NoModule;
    };
    if !root.is_live() {
        return DriverLoad::WouldLoad(path);
    }
    finit_module(&path, compressed)
}

/// Whether `cmdline` keeps the driver out, as modprobe and the kernel
/// read it (`modprobe.blacklist=a,b`, `module_blacklist=a,b`; `-` and
/// `_` alike in module names).
fn blacklisted(cmdline: &str) -> bool {
    cmdline.split_whitespace().any(|w| {
        w.strip_prefix("modprobe.blacklist=")
            .or_else(|| w.strip_prefix("module_blacklist="))
            .is_some_and(|list| {
                list.split(',')
                    .any(|m| m.replace('-', "_") == "qemu_fw_cfg")
            })
    })
}

fn finit_module(path: &std::path::Path, compressed: bool) -> DriverLoad {
    use std::os::fd::AsRawFd;
    const MODULE_INIT_COMPRESSED_FILE: libc::c_int = 4;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return DriverLoad::Failed(format!("{}: {e}", path.display())),
    };
    let flags = if compressed {
        MODULE_INIT_COMPRESSED_FILE
    } else {
        0
    };
    // SAFETY: finit_module reads the module from the open descriptor and
    // its parameters from the NUL-terminated empty string.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), c"".as_ptr(), flags) };
    if r == 0 {
        return DriverLoad::Loaded;
    }
    match std::io::Error::last_os_error() {
        // udev, or another hook, was first.
        e if e.raw_os_error() == Some(libc::EEXIST) => DriverLoad::Present,
        // A kernel before 6.4, or one built without in-kernel
        // decompression, cannot take a compressed module: as if none.
        e if compressed && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
            DriverLoad::NoModule
        }
        e => DriverLoad::Failed(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fw_cfg::E820Entry;

    fn put(root: &std::path::Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    #[test]
    fn without_the_driver_everything_is_unknown() {
        let d = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        assert_eq!(read(&Root::new(d.path()), &mut w), FwCfg::default());
        assert!(w.is_empty());
    }

    #[test]
    fn each_file_read_unset_refused_or_malformed() {
        let d = tempfile::tempdir().unwrap();
        let by = |n: &str| format!("{DIR}/by_name/{n}/raw");
        put(d.path(), &by(MMIO64_FILE), b"32768");
        put(d.path(), &by(SEABIOS_PCI64_FILE), b"maybe");
        put(d.path(), &by(RESERVED_MEMORY_END_FILE), b"\x01\x02");
        let mut e820 = Vec::new();
        e820.extend_from_slice(&0u64.to_le_bytes());
        e820.extend_from_slice(&(1u64 << 30).to_le_bytes());
        e820.extend_from_slice(&1u32.to_le_bytes());
        put(d.path(), &by(E820_FILE), &e820);
        let mut w = Vec::new();
        let fw = read(&Root::new(d.path()), &mut w);
        assert!(fw.readable);
        assert_eq!(fw.mmio64_mb, Input::Set(32768));
        assert!(matches!(fw.seabios_pci64, Input::Refused(_)));
        assert_eq!(fw.reserved_memory_end, Input::Unknown);
        assert_eq!(
            fw.e820,
            Input::Set(vec![E820Entry {
                start: 0,
                length: 1 << 30,
                kind: 1
            }])
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("fw_cfg opt/org.seabios/pci64: SeaBIOS takes it as not set"));
        assert!(w[1].starts_with("fw_cfg etc/reserved-memory-end: 2 bytes"));

        // The directory without the files: the host set none of them.
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(DIR).join("by_name/etc")).unwrap();
        let fw = read(&Root::new(d.path()), &mut w);
        assert!(fw.readable);
        assert_eq!(fw.mmio64_mb, Input::Unset);
        assert_eq!(fw.e820, Input::Unset);
    }

    #[test]
    fn the_driver_is_loaded_only_where_a_device_and_a_module_are() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        assert_eq!(load_driver(&root, None), DriverLoad::NoDevice);
        std::fs::create_dir_all(d.path().join(DEVICE)).unwrap();
        assert_eq!(load_driver(&root, None), DriverLoad::NoModule);
        put(d.path(), "proc/sys/kernel/osrelease", b"6.1.0-48-amd64\n");
        assert_eq!(load_driver(&root, None), DriverLoad::NoModule);
        let m = format!("lib/modules/6.1.0-48-amd64/{MODULE}.xz");
        put(d.path(), &m, b"");
        assert_eq!(
            load_driver(&root, None),
            DriverLoad::WouldLoad(d.path().join(&m))
        );
        std::fs::create_dir_all(d.path().join(DIR)).unwrap();
        assert_eq!(load_driver(&root, None), DriverLoad::Present);
    }

    #[test]
    fn a_blacklisted_driver_is_not_loaded() {
        assert!(blacklisted(
            "ro modprobe.blacklist=nouveau,qemu-fw-cfg quiet"
        ));
        assert!(blacklisted("module_blacklist=qemu_fw_cfg"));
        assert!(!blacklisted("modprobe.blacklist=nouveau quiet"));
        assert!(!blacklisted("qemu_fw_cfg.blacklist=1"));
        let d = tempfile::tempdir().unwrap();
        put(d.path(), &format!("{DEVICE}/path"), b"x");
        put(d.path(), "proc/sys/kernel/osrelease", b"6.1.0\n");
        put(d.path(), &format!("lib/modules/6.1.0/{MODULE}"), b"m");
        let root = Root::new(d.path().to_path_buf());
        assert!(matches!(load_driver(&root, None), DriverLoad::WouldLoad(_)));
        assert_eq!(
            load_driver(&root, Some("ro module_blacklist=qemu_fw_cfg")),
            DriverLoad::NoModule
        );
    }
}
