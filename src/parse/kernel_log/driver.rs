//! What a GPU driver says of its own BARs through its device: that it
//! mapped them, kept them in a failed resize, resized them, or went on to
//! run the GPU (each a sign the BARs had addresses), or why it gave up on
//! it where that is no BAR (`DriverCause`).

use super::{Event, Parsed, ResourceRef};
use crate::model::pci::{PciAddress, VENDOR_INTEL};
use crate::parse::words::Needle;

/// Why NVIDIA's driver gave up on a GPU, where it says and where that is
/// no region without an address. `nv_pci_probe()`
/// (kernel-open/nvidia/nv-pci.c) checks the IRQ, then BAR 0, requests BAR
/// 0's range, then checks every BAR (`nv_pci_validate_bars()`); the
/// adapter's initialisation (`RmInitAdapter`) runs after the probe passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DriverCause {
    /// `Can't find an IRQ for your NVIDIA card!`: checked before the BARs.
    Irq,
    /// `request_mem_region failed for 16M @ 0xf6000000`: BAR 0 has an
    /// address another driver holds. (`... @ 0x0` holds no address at all:
    /// `ProbeDoubt::NvidiaRequestAtZero`.)
    RegionTaken,
    /// `ignoring the legacy GPU`, `installed in this system is not
    /// supported by`: the driver does not take this GPU. The message opens
    /// `The NVIDIA GPU <address> (PCI ID: <ids>)` on a line of its own,
    /// and the open module's says `nvidia.ko because it does not include
    /// the required GPU System Processor` (src/nvidia/arch/nvalloc/unix/
    /// src/osapi.c `rm_is_supported_device()`), so either line read alone
    /// says it (`messages::opens_gpu_message`).
    Unsupported,
    /// `This is a 64-bit BAR mapped above 4GB`: an old driver refuses a
    /// BAR that has an address.
    BarAbove4g,
    /// The GPU's registers read all ones at the probe: `The NVIDIA GPU
    /// <address>` / `(PCI ID: <ids>) installed in this system has` /
    /// `fallen off the bus and is not responding to commands.`
    /// (osapi.c `rm_is_supported_device()`, from the probe after BAR 0 was
    /// mapped): the device does not answer.
    Unresponsive,
    /// A step of the adapter's initialisation that is no BAR: GSP firmware
    /// (`Cannot initialize GSP firmware RM`, `_kgspBootGspRm`, `No firmware
    /// image found`), a driver assertion (`Assertion failed`), the GPU
    /// fallen off the bus at run time (`fallen off the bus`), its
    /// auxiliary power not connected (`GPU does not have the necessary
    /// power cables connected`).
    InitStep,
    /// radeon's `Expecting atombios for evergreen GPU` (r600.c, rv770.c,
    /// evergreen.c, ni.c, si.c, cik.c `*_init()`): the ROM image radeon
    /// read is no ATOM BIOS (a board without a PC's option ROMs reads a
    /// garbled one), and the card's start, which radeon runs inside the
    /// probe, ends there. AMD's driver.
    NoVideoBios,
    /// i915's `Failed to reserve top of GGTT for GuC`
    /// (drivers/gpu/drm/i915/gt/intel_ggtt.c `ggtt_reserve_guc_top()`, a
    /// debug line; the probe then fails with -28, ENOSPC): the GPU's own
    /// global graphics translation table had no room for the GuC's range
    /// at its top (a 32-bit kernel's 2 GiB table, until the reservation was
    /// made at the table's own top: drm/intel issue 9080). The space
    /// missing is the driver's, not a BAR's. Intel's driver, which
    /// starts the adapter inside its probe.
    GgttNoRoom,
    /// The PCI core could not bring the device back to D0, printed through
    /// its driver (drivers/pci/pci.c `pci_power_up()`: `Unable to change
    /// power state from D3cold to D0, device inaccessible`, or from D3hot,
    /// and `pci_dev_wait()`'s `not
    /// ready 65535ms after resume; giving up`): its config space does not
    /// answer, so nothing of it works, BARs or not (the seventh
    /// collection's a02, a host's GPU left in D3cold). The same from i915:
    /// `Device is non-operational; MMIO access returns 0xFFFFFFFF!`
    /// (drivers/gpu/drm/i915/intel_uncore.c `sanity_check_mmio_access()`,
    /// in 6.5 as the eighth collection's a02 shows, a Proxmox guest's iGPU
    /// function; it reads the register BAR i915 has already mapped). The
    /// driver's vendor.
    Inaccessible { vendor: u16 },
}

impl DriverCause {
    /// Said of the probe, which fails before or without the BARs' check;
    /// otherwise of the adapter's initialisation.
    pub(crate) fn at_probe(self) -> bool {
        self != DriverCause::InitStep
    }

    /// Whose driver says it: radeon's and i915's causes name their own
    /// vendor, NVIDIA's driver the rest.
    pub(crate) fn vendor(self) -> u16 {
        match self {
            DriverCause::NoVideoBios => crate::model::pci::VENDOR_AMD,
            DriverCause::GgttNoRoom => crate::model::pci::VENDOR_INTEL,
            DriverCause::Inaccessible { vendor } => vendor,
            _ => crate::model::pci::VENDOR_NVIDIA,
        }
    }

    /// The driver starts the adapter inside its probe (radeon, i915), so
    /// the cause explains both the probe's failure and the start's.
    pub(crate) fn ends_probe_and_start(self) -> bool {
        matches!(
            self,
            DriverCause::NoVideoBios | DriverCause::GgttNoRoom | DriverCause::Inaccessible { .. }
        )
    }
}

/// A GPU driver's note that it runs on its BARs: a resize it tried failed
/// and the old BAR stayed (`Failed to resize BAR2 to 16384M (-ENOSPC)`),
/// or it runs with the small BAR (`Small BAR device`, i915/xe). amdgpu's
/// `VRAM: 8176M 0x...` (`amdgpu_gmc_vram_location()`) and `Detected VRAM
/// RAM=..., BAR=...` are no such note: they print the memory controller's
/// view and the aperture's length, both there for a BAR 0 the kernel left
/// without an address.
pub(super) fn driver_mapped(msg: &str) -> bool {
    static WORDS: [Needle; 4] = [
        Needle::new("Failed to resize BAR"),
        Needle::new("BAR resize failed"),
        Needle::new("Small BAR device"),
        Needle::new("Using small BAR"),
    ];
    WORDS.iter().any(|m| m.is_in(msg))
}

/// Why a GPU driver's probe failure after this line may not be its BARs'
/// (`Event::DriverDoubt`), though it may be: the verdict is then
/// `unknown`, never `ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeDoubt {
    /// amdgpu went on to start its IP blocks' hardware (`amdgpu_started`):
    /// its register BAR is mapped (`amdgpu_device_init()` stops without
    /// it). Its doorbell and VRAM BARs are not proven: 5.x to 6.4 go on
    /// without the doorbell BAR (`amdgpu_device_doorbell_init()`'s result
    /// unchecked), and BAR 0 is checked only on the resize path
    /// (`amdgpu_device_resize_fb_bar()`), so rings that time out can be
    /// either (corpus 203, 216, 339, 344, 396: each thread found another
    /// cause).
    AmdgpuStarted,
    /// nouveau found no firmware for the GPU (`nouveau_firmware`); a BAR 1
    /// or 3 without an address fails its probe too (-ENOMEM from
    /// `gf100_bar_oneinit_bar()`; corpus 420, fixed by the firmware).
    NouveauFirmware,
    /// NVIDIA's driver named the GPU with a reason this reader does not
    /// know and that is no region's (`nvidia_reason`). The probe prints its
    /// reason before most ways out (a few allocation and lock failures say
    /// nothing, and leave no doubt behind), through `NV_DEV_PRINTF` (`NVRM:
    /// GPU 0000:01:00.0: ...`, kernel-open/common/inc/os-interface.h) where
    /// it has the device's state, and returns -1 on every path
    /// (kernel-open/nvidia/nv-pci.c `nv_pci_probe()`, 515.43.04 to
    /// 595.45.04); a region's failure is worded as one (`BARn is 0M`,
    /// `request_mem_region failed`, the resize's `Fatal Error`). The
    /// seventh collection's b02 and d10 were FAIL at their first run for
    /// reasons worded so (an unsupported GPU, one fallen off the bus),
    /// each read by name since. Kept aside in the replay until a probe
    /// failure of that address: by itself it names no GPU (a suspend's or
    /// a removal's message names one too).
    NvidiaReason,
    /// NVIDIA's request of BAR 0's range found it at 0x0 (`request_mem_region
    /// failed for 0M @ 0x0`, `messages::request_at_zero`). The probe checks
    /// BAR 0 just before (an address and a size, `NV_PCI_RESOURCE_VALID`,
    /// else `BAR0 is 0M @ 0x0`: nv-pci.c `nv_pci_probe()` at 515.43.04,
    /// `nv_pci_validate_bars(pci_dev, only_bar0)` at 595.45.04), and the
    /// driver core enabled the device before the probe (`pci_enable_
    /// resources()` refuses a BAR without an address). So BAR 0 had an
    /// address a moment before: the text shows neither a BAR left unplaced
    /// nor another driver's claim (the ninth collection's b02, four T4s
    /// and the fourth lost, its thread unresolved). Said without the
    /// device, for the next NVIDIA probe failure.
    NvidiaRequestAtZero,
}

/// A message NVIDIA's driver prints through the GPU (`NVRM: GPU
/// 0000:01:00.0: <msg>`) that gives a reason which is no region's
/// (`ProbeDoubt::NvidiaReason`): none of the words NVIDIA's region
/// messages use, and not the adapter's start (`RmInitAdapter`) nor the
/// GPU another driver holds (`is already bound to vfio-pci`, where no
/// probe runs), each read apart. A probe failure after it is a doubt.
pub(super) fn nvidia_reason(msg: &str) -> bool {
    static REGION: [Needle; 7] = [
        Needle::new("BAR"),
        Needle::new("region"),
        Needle::new("resiz"),
        Needle::new("aperture"),
        Needle::new("RmInitAdapter"),
        Needle::new("rm_init_adapter"),
        Needle::new(" is already bound to "),
    ];
    let msg = msg.trim();
    !msg.is_empty() && !REGION.iter().any(|n| n.is_in(msg))
}

/// amdgpu past the start of its IP blocks' hardware (`ProbeDoubt`): a
/// block's `hw_init` (its failure names it, `hw_init of IP block <psp>
/// failed -22`), the PSP's firmware loading and ring, a ring or IB test, a
/// page fault the memory hub reported, the KIQ's compute queues
/// (drivers/gpu/drm/amd/amdgpu/amdgpu_device.c `amdgpu_device_ip_init()`,
/// after every block's `sw_init`). A GPU whose register BAR has no address
/// stops before any block speaks: `Fatal error during GPU init` and the
/// probe's `-12` (corpus 106, 179, 194, 312).
pub(super) fn amdgpu_started(msg: &str) -> bool {
    static WORDS: [Needle; 7] = [
        Needle::new("hw_init of IP block <"),
        Needle::new("PSP firmware loading failed"),
        Needle::new("PSP create ring failed"),
        Needle::new("PSP tmr init failed"),
        Needle::new("page fault (src_id:"),
        Needle::new("KCQ enable failed"),
        Needle::new("IB test failed on"),
    ];
    WORDS.iter().any(|m| m.is_in(msg)) || ring_test_failed(msg)
}

/// `amdgpu_started` in a `DRM_ERROR` that names no device, as older
/// kernels print amdgpu's (`[drm:psp_hw_init [amdgpu]] *ERROR* PSP
/// firmware loading failed`; 5.14 in the eighth collection's b05, a Xen
/// guest): `Event::UnnamedDoubt`, for the next AMD probe failure.
pub(super) fn amdgpu_unnamed_doubt(line: &str) -> Option<Event> {
    (line.contains(" [amdgpu]] ") && amdgpu_started(line) && !line.trim_start().starts_with('#'))
        .then_some(Event::UnnamedDoubt {
            vendor: crate::model::pci::VENDOR_AMD,
            doubt: ProbeDoubt::AmdgpuStarted,
        })
}

/// xe's `[drm] VISIBLE VRAM: 0x0000381000000000, 0x0000000400000000`
/// (drivers/gpu/drm/xe/xe_vram.c, `%pa, %pa` of the tile's `io_start`
/// and `io_size`, read from the VRAM BAR, BAR 2): that BAR's start and
/// size; a start of 0 says nothing (corpus 333).
pub(super) fn xe_visible_vram(msg: &str) -> Option<(u8, u64, u64)> {
    let rest = &msg[msg.find("VISIBLE VRAM: ")? + "VISIBLE VRAM: ".len()..];
    let (start, size) = rest.trim_end().split_once(", ")?;
    let hex = |t: &str| u64::from_str_radix(t.trim().strip_prefix("0x")?, 16).ok();
    let (start, size) = (hex(start)?, hex(size)?);
    (start != 0 && size != 0).then_some((2, start, size))
}

/// nouveau's word that it has no firmware for the GPU: `<subdev>: firmware
/// unavailable` (printed on most GPUs from GM20x on, harmless alone) or
/// the loader's `Direct firmware load for nvidia/... failed`.
pub(super) fn nouveau_firmware(msg: &str) -> bool {
    msg.trim_end().ends_with(": firmware unavailable")
        || msg.contains("Direct firmware load for nvidia/")
}

/// `ring gfx test failed (-110)`, `ring kiq_2.1.0 test failed (-110)`
/// (amdgpu_ring.c `amdgpu_ring_test_helper()`).
fn ring_test_failed(msg: &str) -> bool {
    msg.split("ring ").skip(1).any(|r| {
        r.split_once(' ')
            .is_some_and(|(name, rest)| !name.is_empty() && rest.starts_with("test failed"))
    })
}

/// i915's and xe's `[drm] BAR2 resized to 16384M` (`...MiB` in later xe):
/// `pci_resize_resource()` took the larger size, so the BAR is assigned at
/// it (drivers/gpu/drm/i915/gt/intel_region_lmem.c `i915_resize_lmem_bar()`,
/// drivers/gpu/drm/xe/xe_vram.c `resize_vram_bar()`).
pub(super) fn resized(msg: &str) -> bool {
    msg.split("BAR").skip(1).any(|r| {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0
            && r[digits..]
                .strip_prefix(" resized to ")
                .is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The framebuffer hand-over's list of a GPU's memory BARs as the kernel
/// holds them when its driver loads: `remove_conflicting_pci_framebuffers:
/// bar 0: 0x6000000000 -> 0x600fffffff` (drivers/video/fbdev/core/fbmem.c
/// `remove_conflicting_pci_framebuffers()`, a `pci_dbg()` line of v5.1 to
/// v5.13 that distributions printed; corpus 247, 417): the BAR's number,
/// start and size. A BAR without an address reads `0x0 -> size - 1` and
/// says nothing here.
pub(super) fn framebuffer_bar(msg: &str) -> Option<(u8, u64, u64)> {
    let rest = msg.strip_prefix("remove_conflicting_pci_framebuffers: bar ")?;
    let (bar, rest) = rest.split_once(": ")?;
    let bar: u8 = bar.parse().ok().filter(|b| *b <= 5)?;
    let (start, end) = rest.trim_end().split_once(" -> ")?;
    let hex = |t: &str| u64::from_str_radix(t.strip_prefix("0x")?, 16).ok();
    let (start, end) = (hex(start)?, hex(end)?);
    (start != 0 && end > start).then(|| (bar, start, end - start + 1))
}

/// A GPU driver's own words on its BARs, through its device
/// (`driver`): a BAR it lists with its address, or one it mapped or
/// resized; or the PCI core's word that the device does not answer.
pub(super) fn driver_note(vendor: u16, bdf: PciAddress, msg: &str) -> Option<Event> {
    if (msg.starts_with("Unable to change power state from ")
        && msg.contains(" to D0, device inaccessible"))
        || (msg.starts_with("not ready ") && msg.contains(" after ") && msg.contains("; giving up"))
        || msg.contains("Device is non-operational; MMIO access returns 0xFFFFFFFF")
    {
        return Some(Event::DriverCause {
            bdf: Some(bdf),
            cause: DriverCause::Inaccessible { vendor },
        });
    }
    let xe = (vendor == VENDOR_INTEL)
        .then(|| xe_visible_vram(msg))
        .flatten();
    if let Some((bar, start, size)) = framebuffer_bar(msg).or(xe) {
        return Some(Event::DriverBar {
            bdf,
            vendor,
            bar,
            start,
            size,
        });
    }
    if driver_mapped(msg) {
        return Some(Event::DriverMapped {
            bdf,
            fell_back: true,
        });
    }
    resized(msg).then_some(Event::DriverMapped {
        bdf,
        fell_back: false,
    })
}

/// A BAR's failure the PCI core printed through NVIDIA's driver is its
/// resize attempt (`Event::NvidiaResizeTried`); every other line as parsed.
pub(super) fn nvidia_resize(word: &str, bdf: PciAddress, parsed: Option<Parsed>) -> Option<Parsed> {
    match parsed {
        Some(Parsed::Event(Event::AssignFailed {
            res: ResourceRef::Bar(bar),
            ..
        })) if word == "nvidia" => Some(Parsed::Event(Event::NvidiaResizeTried { bdf, bar })),
        other => other,
    }
}

/// NVIDIA's driver lost BAR 1 in its resize (`Event::NvidiaResizeLost`):
/// `NVRM: FATAL: Failed to re-allocate BAR1.` (nv_resize_pcie_bars()), or
/// the probe's `NVRM: Fatal Error while attempting to resize PCIe BARs.`
/// after it (kernel-open/nvidia/nv-pci.c). A shell command or a heading
/// that quotes it is not the log.
pub(super) fn nvidia_resize_lost(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with(['#', '$']) || t.contains("grep ") {
        return false;
    }
    line.contains("NVRM: FATAL: Failed to re-allocate BAR1")
        || line.contains("NVRM: Fatal Error while attempting to resize PCIe BARs")
}
