//! QEMU's and KVM's own messages about a VM's devices (`HostMessage`):
//! the phys-bits check, VFIO's groups and DMA mappings, KVM's memory
//! slots.

use super::HostMessage;
use crate::parse::hex::{decimal, decimal_after, hex_after, hex_at};

/// QEMU, hw/i386/pc.c `pc_memory_init()`: `error_report("Address space
/// limit 0x%" PRIx64 " < 0x%" PRIx64 " phys-bits too low (%u)", ...)`.
pub(super) fn qemu_phys_bits(line: &str, passthrough: bool) -> Option<HostMessage> {
    let at = line.find("Address space limit 0x")?;
    let rest = &line[at..];
    let limit = hex_after(rest, "limit ")?;
    let need = hex_after(rest, " < ")?;
    let bits = decimal_after(rest, "phys-bits too low (")?;
    Some(HostMessage::QemuPhysBits {
        limit,
        need,
        bits: u32::try_from(bits).ok()?,
        passthrough,
    })
}

/// Where QEMU's opening of a device through VFIO failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VfioStage {
    /// The group's node or the device in it (`failed to open
    /// /dev/vfio/N`, `group N is not viable`, `error getting device from
    /// group N`): the device's binding, or the node's permissions.
    Group,
    /// The group's IOMMU container (`failed to setup container for group
    /// N: Failed to set group container`, `No available IOMMU models`):
    /// the host IOMMU would not take the group.
    Container,
    /// iommufd's device node (`vfio-dev: failed to load "..."`): no VFIO
    /// device cdev for it.
    Cdev,
}

/// QEMU could not open a passed-through device through VFIO, each on
/// QEMU's own line (`vfio <device>: ...`, which prose does not have):
/// - hw/vfio (common.c, container.c from 8.2) `vfio_get_device()`:
///   `error getting device from group %d: <error>` with the hint `Verify
///   all devices in group %d are bound to vfio-<bus> or pci-stub and not
///   already in use`;
/// - container.c `vfio_get_group()`: `group %d is not viable`, `failed to
///   open /dev/vfio/%d: <error>` (the group's node: vfio-pci not bound,
///   or the group held elsewhere), and `failed to setup container for
///   group %d: ` before its container's error (`Failed to set group
///   container: <error>`, `failed to open /dev/vfio/vfio: <error>`);
/// - hw/vfio/iommufd.c `iommufd_cdev_getfd()` (no group):
///   `failed to load "<sysfs>/vfio-dev/vfioN/dev"`, `failed to find
///   vfio-dev/vfioX/dev`, `couldn't open directory <sysfs>/vfio-dev:
///   <error>` (no VFIO device node: vfio-pci not bound, or a kernel
///   without its cdev).
///
/// The group's number and the last error's words, where printed.
pub(super) fn vfio_group(line: &str) -> Option<HostMessage> {
    if let Some(at) = line.find("error getting device from group ") {
        let rest = &line[at + "error getting device from group ".len()..];
        return Some(HostMessage::VfioGroup {
            group: Some(u32::try_from(decimal(rest)?).ok()?),
            errno: rest
                .split_once(": ")
                .and_then(|(_, words)| strerror_errno(words)),
            stage: VfioStage::Group,
        });
    }
    if let Some(m) = vfio_group_before_2_9(line) {
        return Some(m);
    }
    // QEMU's own line names the device after `vfio ` and a colon (a PCI
    // address, an mdev's UUID); prose does not.
    let own = line
        .match_indices("vfio ")
        .map(|(at, _)| &line[at..])
        .find(|own| {
            own["vfio ".len()..]
                .split_once(": ")
                .is_some_and(|(name, _)| !name.is_empty() && !name.contains(char::is_whitespace))
        })?;
    let errno = || own.rsplit_once(": ").and_then(|(_, w)| strerror_errno(w));
    if let Some(g) = own.find(": group ") {
        let rest = &own[g + ": group ".len()..];
        if rest.contains(" is not viable") {
            let group = Some(u32::try_from(decimal(rest)?).ok()?);
            return Some(HostMessage::VfioGroup {
                group,
                errno: None,
                stage: VfioStage::Group,
            });
        }
    }
    // A container's own failure (not a DMA mapping's, which
    // `vfio_dma_map` reads: `memory listener initialization failed`).
    const CONTAINER: [&str; 4] = [
        "Failed to set group container",
        "failed to open /dev/vfio/vfio",
        "Failed to set iommu for container",
        "No available IOMMU models",
    ];
    const SETUP: &str = ": failed to setup container for group ";
    if let Some(k) = own.find(SETUP) {
        let rest = &own[k + SETUP.len()..];
        if !CONTAINER.iter().any(|c| rest.contains(c)) {
            return None;
        }
        return Some(HostMessage::VfioGroup {
            group: decimal(rest).and_then(|g| u32::try_from(g).ok()),
            errno: errno(),
            stage: VfioStage::Container,
        });
    }
    const OPEN: &str = ": failed to open /dev/vfio/";
    if let Some(k) = own.find(OPEN) {
        return Some(HostMessage::VfioGroup {
            group: decimal(&own[k + OPEN.len()..]).and_then(|g| u32::try_from(g).ok()),
            errno: errno(),
            stage: VfioStage::Group,
        });
    }
    let cdev = [
        "/vfio-dev: failed to load \"",
        ": failed to find vfio-dev/",
        ": couldn't open directory ",
    ];
    if own.contains("vfio-dev") && cdev.iter().any(|k| own.contains(k)) {
        return Some(HostMessage::VfioGroup {
            group: None,
            errno: errno(),
            stage: VfioStage::Cdev,
        });
    }
    None
}

/// The same failures as QEMU before 2.9 printed them, `error_report()`
/// lines opening with `vfio: ` behind the option's location
/// (`qemu-system-x86_64: -device vfio-pci,host=01:00.0,...: vfio: error
/// opening /dev/vfio/1: Permission denied`; hw/vfio/common.c
/// `vfio_get_group()`, `vfio_connect_container()` at v2.8.0): `error
/// opening /dev/vfio/%d: %m`, `error, group %d is not viable`, `failed to
/// setup container for group %d` with `failed to set iommu for container:
/// %m` or `No available IOMMU models` on the line before. Their `failed to
/// get group %d` (hw/vfio/pci.c) follows one of these and adds nothing.
/// The option's location is QEMU's; prose quoting the words lacks it.
fn vfio_group_before_2_9(line: &str) -> Option<HostMessage> {
    let at = line.find("-device vfio-pci")?;
    let msg = line[at..].split_once(": vfio: ")?.1;
    let errno = || msg.rsplit_once(": ").and_then(|(_, w)| strerror_errno(w));
    let group = |key: &str| {
        let k = msg.find(key)? + key.len();
        decimal(&msg[k..]).and_then(|g| u32::try_from(g).ok())
    };
    if msg.starts_with("error opening /dev/vfio/") {
        return Some(HostMessage::VfioGroup {
            group: group("/dev/vfio/"),
            errno: errno(),
            stage: VfioStage::Group,
        });
    }
    if msg.starts_with("error, group ") && msg.contains(" is not viable") {
        return Some(HostMessage::VfioGroup {
            group: group("group "),
            errno: None,
            stage: VfioStage::Group,
        });
    }
    if msg.starts_with("failed to setup container for group ") {
        return Some(HostMessage::VfioGroup {
            group: group("group "),
            errno: None,
            stage: VfioStage::Container,
        });
    }
    if msg.starts_with("failed to set iommu for container")
        || msg.starts_with("No available IOMMU models")
    {
        return Some(HostMessage::VfioGroup {
            group: None,
            errno: errno(),
            stage: VfioStage::Container,
        });
    }
    None
}

/// QEMU before 2.9 prints a container's error (`failed to set iommu for
/// container: ...`) and, on the next line, its group's number (`failed to
/// setup container for group N`; `vfio_group_before_2_9`): the one
/// failure both say, where `m` and `next` are those two.
pub(super) fn join_container_lines(
    m: &HostMessage,
    next: Option<HostMessage>,
) -> Option<HostMessage> {
    match (m, next?) {
        (
            HostMessage::VfioGroup {
                group: None,
                errno,
                stage: VfioStage::Container,
            },
            HostMessage::VfioGroup {
                group: Some(g),
                errno: None,
                stage: VfioStage::Container,
            },
        ) => Some(HostMessage::VfioGroup {
            group: Some(g),
            errno: *errno,
            stage: VfioStage::Container,
        }),
        _ => None,
    }
}

/// QEMU's notes on a passed-through device it set up otherwise than asked:
/// its MSI-X check, a BAR it could not map, a region access that failed,
/// a reset it could not do.
pub(super) fn vfio_device_note(line: &str) -> Option<HostMessage> {
    vfio_mmap_failed(line)
        .or_else(|| vfio_region_info(line))
        .or_else(|| vfio_config_read(line))
        .or_else(|| vfio_region_access(line))
        .or_else(|| vfio_reset_depends(line).then_some(HostMessage::VfioResetDepends))
        .or_else(|| vfio_msix_layout(line).then_some(HostMessage::VfioMsixLayout))
}

/// QEMU could not read a region's description from a VFIO device:
/// hw/vfio/pci.c `vfio_populate_device()`'s `failed to get region %d
/// info`, behind the device's name (`vfio <address or mdev UUID>: `). An
/// mdev vGPU's host driver answers it (the seventh collection's d06).
fn vfio_region_info(line: &str) -> Option<HostMessage> {
    let at = line.find(": failed to get region ")?;
    let head = &line[..at];
    if !head.contains("vfio ") || !line[at..].contains(" info") {
        return None;
    }
    let region =
        decimal_after(&line[at..], "failed to get region ").and_then(|n| u32::try_from(n).ok());
    Some(HostMessage::VfioRegionInfo { region })
}

/// QEMU could not read a VFIO device's config space: hw/vfio/pci.c
/// `failed to read device config space` (through `error_setg_errno()`,
/// so the error's words follow), behind the device's name (`vfio <address
/// or mdev UUID>: `). An mdev vGPU's host driver answers the read (the
/// eighth collection's a03, an mdev of a patched vGPU driver; QEMU gives
/// `Bad address`, -EFAULT, itself where the read comes back short).
fn vfio_config_read(line: &str) -> Option<HostMessage> {
    let at = line.find(": failed to read device config space")?;
    if !line[..at].contains("vfio ") {
        return None;
    }
    let errno = line[at + 2..]
        .split_once(": ")
        .and_then(|(_, w)| strerror_errno(w));
    Some(HostMessage::VfioConfigRead { errno })
}

/// The host has no IOMMU for a device's passthrough, as the layer that
/// starts QEMU checks before it does: libvirt's `host doesn't support
/// passthrough of host PCI devices` (src/qemu/qemu_hostdev.c, VIR_ERR_
/// CONFIG_UNSUPPORTED: no VFIO with an IOMMU group; relayed by Nova,
/// KubeVirt and vagrant-libvirt, the eighth collection's a10), Proxmox VE's
/// `cannot prepare PCI pass-through, IOMMU not present` (qemu-server).
/// Words in quotes after other words are a sentence that quotes the
/// message, not the message (a JSON value, `"exitstatus":"cannot prepare
/// ..."`, and a line that is the quoted message alone are the message).
pub(super) fn host_iommu_off(line: &str) -> Option<HostMessage> {
    const QUOTES: [char; 9] = ['"', '\'', '`', '“', '”', '‘', '’', '«', '「'];
    let said = |words: &str| {
        line.find(words).is_some_and(|at| {
            let head = line[..at].trim_end();
            match head.strip_suffix(QUOTES) {
                Some(opened) => {
                    let opened = opened.trim_end();
                    opened.is_empty() || opened.ends_with(':')
                }
                None => true,
            }
        })
    };
    if said("host doesn't support passthrough of host PCI devices") {
        return Some(HostMessage::HostIommuOff { proxmox: false });
    }
    said("cannot prepare PCI pass-through, IOMMU not present")
        .then_some(HostMessage::HostIommuOff { proxmox: true })
}

/// QEMU refused a passed-through device whose MSI-X table or pending-bit
/// array, where its capability places them, do not fit its BARs:
/// hw/pci/msix.c `msix_init()`'s `table & pba overlap, or they don't fit
/// in BARs, or don't align`, behind hw/vfio/pci.c's `failed to add PCI
/// capability 0x11[...]@...: `. The device's own layout, not BAR space.
fn vfio_msix_layout(line: &str) -> bool {
    line.find("failed to add PCI capability 0x11")
        .is_some_and(|at| line[at..].contains("table & pba overlap, or they don't fit in BARs"))
}

/// QEMU could not map a passed-through BAR into the guest and traps every
/// access to it instead: hw/vfio/pci.c `vfio_bar_register()`, `Failed to
/// mmap %s BAR %d. Performance may be slow`. The BAR keeps its guest
/// address. The BAR's number.
fn vfio_mmap_failed(line: &str) -> Option<HostMessage> {
    let at = line.find("Failed to mmap ")?;
    let rest = &line[at..];
    if !rest.contains("Performance may be slow") {
        return None;
    }
    let bar = decimal_after(rest, " BAR ").and_then(|b| u8::try_from(b).ok());
    Some(HostMessage::VfioMmapFailed { bar })
}

/// QEMU's access to a passed-through device's region failed:
/// hw/vfio/common.c (hw/vfio/region.c from 10.0) `vfio_region_write()` /
/// `vfio_region_read()`, `%s(%s:region%d+0x%x, 0x%x,%d) failed: %m`. The
/// error (EBUSY: the host's vfio-pci could not reserve the BAR, which
/// another driver holds).
fn vfio_region_access(line: &str) -> Option<HostMessage> {
    let at = line
        .find("vfio_region_write(")
        .or_else(|| line.find("vfio_region_read("))?;
    let rest = &line[at..];
    // QEMU's own arguments: the device's name, `:region`, its number and
    // `+0x` (prose quoting the function has other words there).
    let (args, words) = rest.split_once('(')?.1.split_once(") failed: ")?;
    let (_, region) = args.split_once(":region")?;
    let digits = region.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !region[digits..].starts_with("+0x") {
        return None;
    }
    Some(HostMessage::VfioRegionAccess {
        errno: strerror_errno(words),
    })
}

/// QEMU could not reset a passed-through device: hw/vfio/pci.c
/// `vfio_pci_hot_reset()`, `vfio: Cannot reset device %s, depends on group
/// %d which is not owned.` (a bus reset takes every device of the groups
/// on the bus, all of them the VM's).
fn vfio_reset_depends(line: &str) -> bool {
    const KEY: &str = "vfio: Cannot reset device ";
    line.find(KEY).is_some_and(|at| {
        let rest = &line[at + KEY.len()..];
        rest.split_once(", depends on group ")
            .is_some_and(|(dev, tail)| {
                dev.parse::<crate::model::pci::PciAddress>().is_ok()
                    && tail.contains(" which is not owned")
            })
    })
}

/// The error number of `= -14 (Bad address)` or `: -6`.
fn errno_after(s: &str, key: &str) -> Option<u32> {
    let at = s.find(key)? + key.len();
    let n = decimal(s[at..].trim_start())?;
    u32::try_from(n).ok()
}

/// strerror's words for the errors the mapping messages print, as the
/// number (`Cannot allocate memory` is ENOMEM, 12).
fn strerror_errno(s: &str) -> Option<u32> {
    [
        ("Cannot allocate memory", 12),
        ("Bad address", 14),
        ("Invalid argument", 22),
        ("No space left on device", 28),
        ("No such file or directory", 2),
        ("File exists", 17),
        ("Operation not permitted", 1),
        ("Permission denied", 13),
        ("Input/output error", 5),
        ("Device or resource busy", 16),
    ]
    .iter()
    .find(|(w, _)| s.starts_with(w))
    .map(|(_, n)| *n)
}

/// QEMU's VFIO DMA mapping failures: hw/vfio/container.c
/// `vfio_legacy_dma_map()` prints `VFIO_MAP_DMA failed: %s`; the memory
/// listener prints `vfio_container_dma_map(%p, 0x%iova, 0x%size, %p) = %d
/// (%s)` (older QEMU `vfio_dma_map(...)`), and at start-up, for guest
/// memory, `failed to setup container for group N: memory listener
/// initialization failed: Region NAME: vfio_container_dma_map(...)`;
/// backends/iommufd.c `iommufd_backend_map_dma()` prints `IOMMU_IOAS_MAP
/// failed: %m, PCI BAR?` on EFAULT (it cannot map a BAR) and
/// `IOMMU_IOAS_MAP failed: %m` otherwise. One message per distinct
/// region, address and error.
pub(super) fn vfio_dma_maps(flat: &str) -> Vec<HostMessage> {
    let mut out = Vec::new();
    for key in ["vfio_container_dma_map", "vfio_dma_map"] {
        let mut rest = flat;
        while let Some(at) = rest.find(key) {
            let head = &rest[..at];
            let call = &rest[at + key.len()..];
            rest = call;
            // `vfio_dma_map` inside `vfio_container_dma_map` was read.
            if key == "vfio_dma_map" && head.ends_with("container_") {
                continue;
            }
            let Some(open) = call.trim_start().strip_prefix('(') else {
                continue;
            };
            let Some(close) = open.find(')') else {
                continue;
            };
            let args: Vec<&str> = open[..close].split(',').map(str::trim).collect();
            let after = &open[close + 1..];
            if !after.trim_start().starts_with("= -") {
                continue;
            }
            let region = head
                .rfind("Region ")
                .map(|r| &head[r + "Region ".len()..])
                .and_then(|r| r.split(':').next())
                .filter(|r| !r.is_empty() && !r.contains(' '))
                .map(str::to_string);
            out.push(HostMessage::VfioDmaMap {
                region,
                iova: args.get(1).and_then(|a| hex_at(a)),
                size: args.get(2).and_then(|a| hex_at(a)),
                errno: errno_after(after, "= -"),
                bar: false,
            });
        }
    }
    for (key, bar) in [
        ("VFIO_MAP_DMA failed: ", false),
        ("IOMMU_IOAS_MAP failed: ", true),
    ] {
        let mut rest = flat;
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            let m = HostMessage::VfioDmaMap {
                region: None,
                iova: None,
                size: None,
                errno: strerror_errno(rest).or_else(|| {
                    rest.strip_prefix('-')
                        .and_then(decimal)
                        .and_then(|n| u32::try_from(n).ok())
                }),
                bar: bar && rest.split('"').next().unwrap_or(rest).contains("PCI BAR?"),
            };
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

/// hw/vfio/listener.c `vfio_register_ram_discard_listener()`: `possibly
/// running out of DMA mappings. ... Maximum possible DMA mappings: N`.
pub(super) fn dma_mappings_limit(line: &str) -> Option<HostMessage> {
    line.contains("possibly running out of DMA mappings")
        .then(|| HostMessage::DmaMappingsLimit {
            max: decimal_after(line, "Maximum possible DMA mappings: "),
        })
}

/// QEMU's `KVM_SET_USER_MEMORY_REGION failed, slot=N, start=0x...,
/// size=0x...: <strerror>` (also `KVM_SET_USER_MEMORY_REGION2 failed`,
/// with `flags=`, `guest_memfd=` fields before the error).
pub(super) fn kvm_memslot(line: &str) -> Option<HostMessage> {
    let at = line.find("KVM_SET_USER_MEMORY_REGION")?;
    let rest = &line[at..];
    if !rest.contains(" failed, slot=") {
        return None;
    }
    let errno = rest.rsplit(": ").next().and_then(strerror_errno);
    Some(HostMessage::KvmMemslot {
        start: hex_after(rest, "start=")?,
        size: hex_after(rest, "size=")?,
        errno,
    })
}
