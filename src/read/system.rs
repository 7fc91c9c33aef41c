//! The rest of the machine's story, read below the root: root bus windows
//! (`/proc/iomem`), CPU address bits (`/proc/cpuinfo`), the kernel command
//! line and the firmware (`/sys/class/dmi/id`). Each reader turns a problem
//! into a warning and an unknown value.

use crate::model::platform::{Cpu, Firmware};
use crate::model::range::Range;
use crate::parse::procfs::{self, RootWindow};
use crate::read::root::Root;

/// The 64-bit root bus windows, `None` when unknown (no readable iomem, or
/// an unprivileged reader's zeros).
pub(crate) fn root_windows(root: &Root, warnings: &mut Vec<String>) -> Option<Vec<RootWindow>> {
    match root.read_text("proc/iomem") {
        Ok(t) => procfs::iomem_root_windows(&t).unwrap_or_else(|e| {
            warnings.push(format!("{}: {e}", root.join("proc/iomem").display()));
            None
        }),
        Err(e) => {
            warnings.push(e);
            None
        }
    }
}

/// What the 64-bit root windows already hold, from iomem
/// (`procfs::iomem_window_children`; empty without real addresses).
pub(crate) fn window_children(root: &Root) -> Vec<Range> {
    root.read_text("proc/iomem")
        .map(|t| procfs::iomem_window_children(&t))
        .unwrap_or_default()
}

/// The end of RAM, from iomem (`None` without real addresses).
pub(crate) fn ram_end(root: &Root) -> Option<u64> {
    root.read_text("proc/iomem")
        .ok()
        .and_then(|t| procfs::iomem_ram_end(&t))
}

/// The CPU as `/proc/cpuinfo` shows it: address bits, vendor, flags.
pub(crate) fn cpu(root: &Root, warnings: &mut Vec<String>) -> Cpu {
    match root.read_text("proc/cpuinfo") {
        Ok(t) => {
            let c = procfs::cpuinfo(&t);
            if c.phys_bits.is_none() {
                warnings.push(format!(
                    "{}: no \"address sizes\" line, physical address bits unknown",
                    root.join("proc/cpuinfo").display()
                ));
            }
            c
        }
        Err(e) => {
            warnings.push(e);
            Cpu::default()
        }
    }
}

pub(crate) fn firmware(root: &Root) -> Firmware {
    let get = |name: &str| root.read_trimmed(&format!("sys/class/dmi/id/{name}"));
    Firmware {
        bios_vendor: get("bios_vendor"),
        bios_version: get("bios_version"),
        sys_vendor: get("sys_vendor"),
        product_name: get("product_name"),
        product_version: get("product_version"),
        product_family: get("product_family"),
        board_vendor: get("board_vendor"),
        board_name: get("board_name"),
        ..Firmware::default()
    }
}
