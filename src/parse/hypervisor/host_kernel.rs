//! The host kernel's and its drivers' messages beside a passed-through or
//! failing GPU that are about something other than BAR space: VFIO's
//! memory-lock limit, an IOMMU narrower than an address, a device that
//! does not come out of reset; NVIDIA's driver not taking a GPU another
//! driver holds, its Xid faults; an option ROM the host cannot read; the
//! kernel's warning for a mapping that spans resources. People paste them
//! asking whether the BARs are the cause; each is a note that says what it
//! is instead (`decide::host`).

use super::HostMessage;
use crate::model::pci::PciAddress;
use crate::parse::hex::{decimal, decimal_after, hex_u64};
use crate::parse::kernel_log;

/// drivers/vfio/vfio_iommu_type1.c: `pr_warn("%s: RLIMIT_MEMLOCK (%ld)
/// exceeded\n", __func__, limit)` and the `Task %s (%d) RLIMIT_MEMLOCK
/// (%ld) exceeded` form; libvirt's `cannot limit locked memory`.
pub(super) fn memlock(line: &str) -> Option<HostMessage> {
    if let Some(at) = line.find("RLIMIT_MEMLOCK (") {
        let rest = &line[at..];
        if rest.contains("exceeded") {
            return Some(HostMessage::Memlock {
                limit: decimal_after(rest, "RLIMIT_MEMLOCK ("),
            });
        }
    }
    line.contains("cannot limit locked memory")
        .then_some(HostMessage::Memlock { limit: None })
}

/// hw/vfio/pci.c `vfio_pci_pre_reset`: `vfio: Unable to power on device,
/// stuck in D%d`; drivers/pci/pci.c `pci_dev_wait`: `not ready %dms after
/// %s; giving up` (its `; waiting` lines are not yet a failure).
pub(super) fn device_reset(line: &str) -> Option<HostMessage> {
    if line.contains("Unable to power on device, stuck in D") {
        return Some(HostMessage::DeviceReset { stuck_d3: true });
    }
    let rest = &line[line.find(": not ready ")?..];
    (rest.contains("ms after ") && rest.trim_end().ends_with("; giving up"))
        .then_some(HostMessage::DeviceReset { stuck_d3: false })
}

/// drivers/iommu/intel/iommu.c: `iommu width (%d) is not sufficient for
/// the mapped address (%llx)`.
pub(super) fn iommu_width(line: &str) -> Option<HostMessage> {
    let at = line.find("iommu width (")?;
    let rest = &line[at..];
    let width = u32::try_from(decimal_after(rest, "iommu width (")?).ok()?;
    let key = "the mapped address (";
    let a = &rest[rest.find(key)? + key.len()..];
    let address = hex_u64(a.split(')').next()?)?;
    Some(HostMessage::IommuWidth { width, address })
}

/// The host's vfio-pci could not take a device to pass through: the
/// driver core's `vfio-pci: probe of 10000:01:00.0 failed with error -22`
/// (5.x: `vfio-pci 0000:01:00.0: probe with driver vfio-pci failed with
/// error -22`; drivers/base/dd.c). `vfio_pci_probe()` refuses a device
/// that is no endpoint with -EINVAL, and VFIO refuses one without an IOMMU
/// group with -EINVAL too (the IOMMU off, or the device behind Intel's VMD,
/// which numbers its PCI domains from 10000 and whose devices reach the
/// IOMMU only through the VMD itself). `vmd`: the device is in such a
/// domain (corpus 414).
pub(super) fn vfio_pci_probe(line: &str) -> Option<HostMessage> {
    let (bdf, tail) = match kernel_log::probe_of(line) {
        Some(("vfio-pci", addr, tail)) => (addr.parse::<PciAddress>().ok()?, tail),
        Some(_) => return None,
        None => match kernel_log::device_anchor(line)? {
            ("vfio-pci", bdf, msg) => (bdf, msg.strip_prefix("probe with driver vfio-pci ")?),
            _ => return None,
        },
    };
    let errno = tail
        .strip_prefix("failed with error -")
        .and_then(|e| decimal(e.trim()))
        .and_then(|e| u32::try_from(e).ok())?;
    Some(HostMessage::VfioPciProbe {
        errno,
        vmd: bdf.domain >= 0x10000,
    })
}

/// NVIDIA's driver, per line: `NVRM: The NVIDIA probe routine was not
/// called for N device(s).` (kernel-open/nvidia/nv.c `nvidia_init_module()`:
/// fewer GPUs probed than found, another driver holding the rest) and, in
/// its newer drivers, `NVRM: GPU 0000:01:00.0 is already bound to
/// vfio-pci.` before it (the GPU's holder; as corpus 329 shows it, its
/// source line not located), one `NvidiaNotProbed`; and each distinct
/// `NVRM: Xid (PCI:0000:01:00): 62, ...` (src/nvidia/src/kernel/gpu/rc/
/// kernel_rc.c, also with ` GPU-I:.. GPU-CI:..` on a MIG GPU), their
/// numbers in one. The host kernel's, per line: vfio-pci's `Invalid PCI
/// ROM header signature: expecting 0xaa55, got 0xffff` (drivers/pci/rom.c
/// `pci_get_rom_size()`, printed through the device when QEMU reads its
/// ROM); `caller ... mapping multiple BARs` (arch/x86/mm/ioremap.c
/// `__ioremap_caller()`, after kernel/resource.c's `resource sanity check:
/// requesting [mem ...], which spans more than ...`); Intel's IOMMU
/// driver's `Device is ineligible for IOMMU domain attach due to platform
/// RMRR requirement.` (drivers/iommu/intel/iommu.c
/// `intel_iommu_attach_device()`, -EPERM for an unmanaged domain, which is
/// VFIO's; QEMU then says `failed to set iommu for container`), once; the
/// IOMMU core's `Firmware has requested this device have a 1:1 IOMMU
/// mapping, rejecting configuring the device without a 1:1 mapping.`
/// (drivers/iommu/iommu.c, a device with IOMMU_RESV_DIRECT regions: RMRR,
/// IVMD or RMR), once.
pub(super) fn driver_messages(lines: &[&str]) -> Vec<HostMessage> {
    let mut out = Vec::new();
    let mut not_probed = false;
    let mut holder = None;
    let mut codes = Vec::new();
    for line in lines {
        if let Some(at) = line.find(" is already bound to ") {
            if line[..at].contains("NVRM: GPU ") {
                let name = line[at + " is already bound to ".len()..].trim();
                holder = Some(name.trim_end_matches('.').to_string());
                not_probed = true;
            }
        }
        not_probed |= line.contains("NVRM: The NVIDIA probe routine was not called for");
        if let Some(code) = xid(line).filter(|c| !codes.contains(c)) {
            codes.push(code);
        }
        if line.contains("vfio-pci ") {
            if let Some(got) = rom_header(line) {
                out.push(HostMessage::VfioRomInvalid { got });
            }
        }
        if let Some(bar) = vfio_cant_reserve(line) {
            out.push(HostMessage::VfioCantReserve { bar });
        }
        if line.contains("caller ") && line.trim_end().ends_with(" mapping multiple BARs") {
            out.push(HostMessage::MapsMultipleBars);
        }
        if line.contains("Firmware has requested this device have a 1:1 IOMMU mapping")
            && !out.contains(&HostMessage::IommuDirectMapping)
        {
            out.push(HostMessage::IommuDirectMapping);
        }
        if line.contains("Device is ineligible for IOMMU domain attach due to platform RMRR")
            && !out.contains(&HostMessage::IommuRmrr)
        {
            out.push(HostMessage::IommuRmrr);
        }
    }
    if !codes.is_empty() {
        out.insert(0, HostMessage::NvidiaXid { codes });
    }
    if not_probed {
        out.insert(0, HostMessage::NvidiaNotProbed { holder });
    }
    out
}

/// The host's vfio-pci could not reserve a BAR of the device it holds:
/// `vfio-pci 0000:0d:00.0: BAR 1: can't reserve [mem ...]`
/// (drivers/pci/pci.c `__pci_request_region()`): another driver holds
/// part of the range, most often the host's boot framebuffer (efifb,
/// simplefb or simpledrm, vesafb, the BOOTFB range) on the GPU the
/// firmware drew on. The BAR has its address (corpus 46, 169, 266, 361).
fn vfio_cant_reserve(line: &str) -> Option<u8> {
    let at = line.find("vfio-pci ")?;
    let rest = &line[at..];
    let b = rest.find(": BAR ")?;
    let tail = &rest[b + ": BAR ".len()..];
    let (n, tail) = tail.split_once(": ")?;
    // `[mem size 0x...]` is a BAR without an address on the host: no
    // holder to name.
    (tail.starts_with("can't reserve [") && !tail.starts_with("can't reserve [mem size"))
        .then(|| n.parse().ok())
        .flatten()
}

/// `NVRM: Xid (PCI:0000:01:00): 62, pid=..., ...`: the Xid's number.
fn xid(line: &str) -> Option<u32> {
    let rest = &line[line.find("NVRM: Xid (PCI:")?..];
    u32::try_from(decimal_after(rest, "): ")?).ok()
}

/// `Invalid PCI ROM header signature: expecting 0xaa55, got 0xffff`: what
/// was read.
fn rom_header(line: &str) -> Option<u16> {
    let key = "Invalid PCI ROM header signature: expecting 0xaa55, got ";
    let got = line[line.find(key)? + key.len()..]
        .split_whitespace()
        .next()?;
    u16::try_from(hex_u64(got)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_lines_that_are_no_bar_space() {
        let log = [
            "[Sat Jun 27 19:59:02 2026] NVRM: GPU 0000:01:00.0 is already bound to vfio-pci.",
            "[Sat Jun 27 19:59:02 2026] NVRM: The NVIDIA probe routine was not called for 1 device(s).",
            "NVRM: Xid (PCI:0000:01:00): 62, pid='<unknown>', name=<unknown>, 0000e404 00000000",
            "NVRM: Xid (PCI:0000:01:00 GPU-I:01 GPU-CI:00): 154, GPU recovery action changed",
            "NVRM: Xid (PCI:0000:01:00): 62, pid=1, name=x, again",
            "vfio-pci 0000:01:00.0: Invalid PCI ROM header signature: expecting 0xaa55, got 0xffff",
            "Jun 18 18:07:26 Tower kernel: caller _nv000908rm+0x1bf/0x1f0 [nvidia] mapping multiple BARs",
            "[  116.8] vfio-pci 0000:0b:00.0: Device is ineligible for IOMMU domain attach due to platform RMRR requirement.  Contact your platform vendor.",
            "[ 1136.5] vfio-pci 0000:0b:00.0: Device is ineligible for IOMMU domain attach due to platform RMRR requirement.  Contact your platform vendor.",
        ];
        assert_eq!(
            driver_messages(&log),
            [
                HostMessage::NvidiaNotProbed {
                    holder: Some("vfio-pci".into())
                },
                HostMessage::NvidiaXid {
                    codes: vec![62, 154]
                },
                HostMessage::VfioRomInvalid { got: 0xffff },
                HostMessage::MapsMultipleBars,
                HostMessage::IommuRmrr,
            ]
        );
        // The probe's line alone names no holder; a guest driver's ROM
        // read (amdgpu, not vfio-pci) is its own matter; a sentence that
        // only mentions the words is none.
        assert_eq!(
            driver_messages(&[
                "NVRM: The NVIDIA probe routine was not called for 2 device(s).",
                "amdgpu 0000:03:00.0: Invalid PCI ROM header signature: expecting 0xaa55, got 0x0000",
                "why does the caller keep mapping multiple BARs here?",
            ]),
            [HostMessage::NvidiaNotProbed { holder: None }]
        );
    }
}
