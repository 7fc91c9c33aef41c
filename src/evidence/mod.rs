//! Evidence: everything a command decides on, gathered into one value
//! before it decides; reading is done here, through `read`, and nowhere
//! after.
//!
//! Two builders fill `Evidence`: `system` from a live (or captured)
//! system's sysfs, `/proc` and kernel log (`check`), and `text` from saved
//! text alone (`explain`). What both read from the kernel log is in `log`,
//! shared; what the P2P gates need of a system (config space, NUMA nodes,
//! NCCL settings, CPUID, the vIOMMU) in `p2p`. `host` is `plan`'s
//! evidence: the host and the VM configuration, read once.

pub(crate) mod host;
pub(crate) mod log;
pub(crate) mod p2p;
pub(crate) mod system;
pub(crate) mod text;

use crate::model::bar::{Bar, BridgeWindow};
use crate::model::pci::{PciAddress, RootBus};
use crate::model::platform::{Confidence, Cpu, Firmware, FirmwareKind, Judgement, Platform};
use crate::model::range::Range;
use crate::model::release::SeabiosVersion;
use crate::parse::hypervisor::HostMessage;
use crate::parse::release::seabios_version;
use serde::Serialize;

/// A selected GPU and its BARs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Gpu {
    pub addr: PciAddress,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    pub bars: Vec<Bar>,
    /// Nearest bridge first.
    pub upstream: Vec<PciAddress>,
    /// The root bus the GPU hangs off, when known.
    pub root_bus: Option<RootBus>,
    /// Vendor, device and class were read, not guessed (an NVIDIA driver
    /// complaint names a GPU without them).
    pub ids_known: bool,
}

impl Gpu {
    pub(crate) fn ok(&self) -> bool {
        !self.bars.iter().any(Bar::fails_gpu)
    }
}

/// Where a root bus window was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowSource {
    Iomem,
    KernelLog,
}

impl WindowSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WindowSource::Iomem => "iomem",
            WindowSource::KernelLog => "kernel_log",
        }
    }
}

/// A 64-bit root bus window (the part above 4 GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub range: Range,
    pub source: WindowSource,
    pub bus: Option<RootBus>,
}

/// A memory BAR that failed on an endpoint that is not a selected GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OtherFailure {
    pub bdf: PciAddress,
    pub bar: u8,
    pub size: Option<u64>,
    /// A register BAR below 4 GiB: of known type, 32-bit and
    /// non-prefetchable.
    pub low: bool,
    /// What says the device is no GPU, if anything does: then its failure
    /// is not the GPUs' (a device the text says nothing of may be one).
    pub not_gpu: Option<NotGpu>,
    /// The text gives the device no class and no other function of its
    /// slot, and every memory BAR it shows of it has a known size under
    /// `SMALL_DEVICE`: nothing of it looks like a GPU's.
    pub small: bool,
}

impl OtherFailure {
    /// Every GPU passed through or on a board has a memory BAR of at least
    /// this much: NVIDIA's and Intel Arc's register BAR0 (16 MiB), AMD's
    /// VRAM BAR0 (256 MiB and up; its register BAR5 is smaller, 256 KiB on
    /// Polaris to 1 MiB on Navi), a BMC display's framebuffer (8 MiB or
    /// more: Matrox G200e's 16 MiB, corpus 223).
    /// A paste cut to an AMD GPU's register BAR alone shows less, so this
    /// makes a failure `unknown`, never `ok`; where the text shows another
    /// function of the slot (the GPU's HD audio) it is not applied. An
    /// emulated virtio-gpu without host memory has only a 4 KiB and a 16
    /// KiB BAR (virtio-pci's modern layout), and with its class in the
    /// text it is taken as a display device all the same.
    pub(crate) const SMALL_DEVICE: u64 = 1 << 20;
}

/// A bridge whose window is smaller than the devices below it need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BridgeShort {
    pub bridge: PciAddress,
    /// The window it got, in bytes, where known.
    pub window: Option<u64>,
    /// What the devices below it need, in bytes, where known.
    pub need: Option<u64>,
    pub how: ShortHow,
}

/// How a bridge's window came to be short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShortHow {
    /// The kernel said its parent's window `cannot fit` what it needs,
    /// then assigned it a smaller one.
    CannotFit,
    /// The kernel shrank it below its devices' need (`shrunken by`).
    Shrunk,
    /// Its memory window got no space, and the text shows no device below
    /// it (only the bridges' own lines).
    Failed,
    /// Sized from sysfs: the window smaller than its GPUs' 64-bit BARs
    /// need, sized as the kernel sizes bridge windows.
    Sized,
}

/// What in the text says a device is not a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotGpu {
    /// Its class is neither a display controller (0x03) nor a processing
    /// accelerator (0x12).
    Class(u32),
    /// The text says nothing of it but that it is function N > 0 of its
    /// slot: a GPU's graphics function is function 0 (its HD audio, USB
    /// and UCSI functions are 1 to 3), as every card in tests/corpus and
    /// the fixtures shows, and PCI requires a multi-function device to
    /// implement function 0 (PCI Local Bus Specification 3.0, 6.2.1).
    Function(u8),
    /// A driver bound to it (it prints through the device) that drives no
    /// GPU, display or accelerator (`parse::kernel_log::Event::OtherDriver`).
    Driver(String),
}

impl NotGpu {
    pub(crate) fn words(&self) -> String {
        match self {
            NotGpu::Class(c) => {
                format!("class {c:06x}, neither a display controller nor an accelerator")
            }
            NotGpu::Function(f) => {
                format!("function {f} of its slot, where a GPU's graphics function is function 0")
            }
            NotGpu::Driver(name) => {
                format!("bound to {name}, a driver of no GPU, display or accelerator")
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Evidence {
    pub gpus: Vec<Gpu>,
    pub expected: Option<usize>,
    /// 64-bit root bus windows (the part above 4 GiB).
    pub windows: Vec<Window>,
    /// The root bus windows were readable (iomem with real addresses, or
    /// `root bus resource` lines): an empty `windows` then means there is
    /// no 64-bit window at all, not that we do not know.
    pub windows_known: bool,
    /// Address bits, vendor and flags of the (v)CPU.
    pub cpu: Cpu,
    /// Where RAM ends (exclusive): the firmware places its window above it.
    pub ram_end: Option<u64>,
    /// The firmware map's reserved ranges above 4 GiB (`BIOS-e820: ...
    /// reserved`). The kernel keeps BARs off them where it clips its
    /// windows by the e820 map (x86 `pci_use_e820`, firmware dated before
    /// 2023, as SeaBIOS and OVMF are); `room::no_room` takes them out of a
    /// window only where they leave part of it.
    pub reserved: Vec<Range>,
    /// What the 64-bit root windows already hold (`check`: iomem's entries
    /// right under them): the kernel places nothing over them.
    pub window_busy: Vec<Range>,
    /// Root ports with no GPU below them: OVMF pads each with part of its
    /// window for hot-plug.
    pub empty_root_ports: usize,
    /// Lowest address the kernel called "not CPU addressable".
    pub unaddressable_from: Option<u64>,
    pub realloc_active: bool,
    /// The kernel's "try booting with pci=realloc".
    pub realloc_advised: bool,
    pub firmware: Firmware,
    /// Endpoints that are not selected GPUs but whose memory BARs failed
    /// (only `explain` sees these).
    pub other_failed: Vec<OtherFailure>,
    /// The bridges above the GPUs, with the windows the kernel gave them.
    pub bridges: Vec<(PciAddress, Vec<BridgeWindow>)>,
    /// Hyper-V's `hv_pci ...: Need 0x... of high MMIO space`: the VM's
    /// high MMIO gap is smaller than its assigned devices need (bytes).
    pub hyperv_mmio_short: Option<u64>,
    /// Signs that a GPU sits behind a hot-plug bridge or was hot-plugged:
    /// `true` for a VM's hot-plug (QMP, Kata), with the words for the hint.
    pub hotplug: Vec<(bool, String)>,
    /// GPUs with no failure whose memory BARs the input does not show with
    /// addresses (`explain` of an excerpt), and what is missing: such a
    /// GPU is not `ok`; it failed where its driver complained (`true`: a
    /// failed probe, an NVRM region it calls invalid).
    pub unproven: Vec<(PciAddress, String, bool)>,
    /// Of `unproven`, the GPUs whose driver gave up on them for a reason it
    /// names that is no BAR (nv_pci_probe()'s IRQ check, an unsupported
    /// GPU, a GSP or assertion failure before RmInitAdapter): the text
    /// shows no BAR of theirs failing, and the driver says what did.
    pub driver_gave_up: Vec<PciAddress>,
    /// GPUs the text shows no memory BAR of whose driver runs them
    /// (NVIDIA's Xid at run time, nvidia-drm registered): their BARs had
    /// addresses, which the text does not show.
    pub driver_runs: Vec<PciAddress>,
    /// Of `unproven`, the GPUs whose driver could not start them with no
    /// cause it names (`RmInitAdapter failed` alone): a region without an
    /// address is one cause among several, so the verdict is not known and
    /// the hints are said on the condition that lspci shows one.
    pub start_failed: Vec<PciAddress>,
    /// The sign that the text is a VFIO host's (`parse::platform::
    /// vfio_host_sign`), in words: its failed BARs are the host's, placed
    /// by the host's firmware and kernel, whatever VM they are for.
    pub vfio_host: Option<String>,
    /// NVIDIA GPUs for which the driver's `NVRM: BAR2 is 0M` (its third
    /// region, PCI BAR 3) is the only failure the text shows: no PCI core
    /// line says the BAR failed, and the larger VRAM BAR before it is not
    /// named. The driver takes a 64-bit BAR only when it is prefetchable,
    /// so a VMM that exposes that BAR non-prefetchable gets this message
    /// with the BAR in place (open-gpu-kernel-modules #344,
    /// cloud-hypervisor #4353: tests/corpus 58, 61, 83).
    pub nvrm_third_region_only: Vec<PciAddress>,
    /// GPUs whose driver's BAR resize failed and fell back (`Failed to
    /// resize BAR`), and which still have a memory BAR without an address
    /// after it: the kernel's roll-back lost the BAR it had, which is a
    /// kernel fault, not a window too small for the old size.
    pub resize_lost: Vec<PciAddress>,
    /// GPUs whose failed BAR the text does not name: a driver's complaint
    /// without the line that says which region (`NVRM: ... is invalid`
    /// alone, NVIDIA's failed probe), placed at the first region the text
    /// shows no address for.
    pub inferred: Vec<PciAddress>,
    /// Failed GPUs whose enumeration line the kernel printed long after
    /// boot (a minute or more), with its second: a rescan or hot-add, not
    /// the boot's enumeration, so the firmware's placement from boot no
    /// longer holds and the kernel sized the bridge windows on its own.
    pub rescanned: Vec<(PciAddress, u64)>,
    /// What the hypervisor, the VMM or the host kernel said of the VM's
    /// devices (`parse::hypervisor`), once each: `explain` of a host-side
    /// log.
    pub host_messages: Vec<HostMessage>,
    /// Devices whose SR-IOV VF BARs the text shows failing: space for
    /// their virtual functions, which their own BARs do not need
    /// (`explain`; `check` reads the device's own BARs only).
    pub vf_failed: Vec<PciAddress>,
    /// Memory BARs the text says failed without saying whose (a report
    /// cut the device's address off a PCI core line, or `NVRM: BAR1 is 0M`
    /// with no address and no one NVIDIA GPU named), in words.
    pub unnamed_failed: Vec<String>,
    /// Devices the text gives no class (a GPU, for all it says) whose BAR
    /// lost its claim of the firmware's address (2.6's `Cannot allocate
    /// resource region`) and whose assignment after it the text does not
    /// show (`explain`).
    pub claims_pending: Vec<PciAddress>,
    /// Bridges the kernel log shows with a window smaller than their
    /// devices need (`explain`; `check` sizes its own from sysfs).
    pub bridge_short: Vec<BridgeShort>,
    /// The platform the user named (`explain --platform`): it beats the
    /// signs the text shows (`platform_conflict` says where they differ).
    pub platform_told: Option<Platform>,
    /// The kernel's release (major, minor) where the log's banner gives it.
    pub kernel: Option<(u32, u32)>,
}

/// Where the platform judgement came from: named by the user, seen in the
/// signs of the input, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PlatformSource {
    Told,
    Seen,
    Unknown,
}

impl Evidence {
    /// The devices not taken for GPUs that failed and that nothing shows
    /// is no GPU, each once, in order.
    pub(crate) fn maybe_gpus_failed(&self) -> Vec<String> {
        let mut a: Vec<String> = self
            .other_failed
            .iter()
            .filter(|o| o.not_gpu.is_none())
            .map(|o| o.bdf.to_string())
            .collect();
        a.dedup();
        a
    }

    /// `claims_pending` as the report names them, joined.
    pub(crate) fn claims_pending_named(&self) -> String {
        let who: Vec<String> = self.claims_pending.iter().map(|a| a.to_string()).collect();
        who.join(", ")
    }

    /// The one platform judgement: the platform the user named, else what
    /// the signs show (`Firmware::judge`). Told beats seen; the signs the
    /// input shows stay in the list after the user's word.
    pub(crate) fn judgement(&self) -> Judgement {
        let seen = self.firmware.judge();
        match self.platform_told {
            Some(p) => {
                let mut signs = vec![format!("told: --platform {}", cli_name(p))];
                signs.extend(seen.signs);
                Judgement {
                    platform: p,
                    confidence: Some(Confidence::High),
                    signs,
                }
            }
            None => seen,
        }
    }

    /// The platform the hints are for (`judgement`).
    pub(crate) fn platform(&self) -> Platform {
        match self.platform_told {
            // Told a VM, but the text is the VM's host's: its BARs are the
            // host's (`platform_conflict` says so).
            Some(p) if vm(p) && self.vfio_host.is_some() => Platform::BareMetal,
            Some(p) => p,
            None => self.firmware.platform(),
        }
    }

    pub(crate) fn platform_source(&self) -> PlatformSource {
        match (self.platform_told, self.firmware.platform()) {
            (Some(_), _) => PlatformSource::Told,
            (None, Platform::Unknown) => PlatformSource::Unknown,
            (None, _) => PlatformSource::Seen,
        }
    }

    /// Where the user's `--platform` and the input's signs disagree, the
    /// sentence that says so (the user's word is followed). A VM the signs
    /// name only as "a VM" (`other_vm`: KVM, Xen) agrees with any VM.
    pub(crate) fn platform_conflict(&self) -> Option<String> {
        let told = self.platform_told?;
        if let (true, Some(sign)) = (vm(told), &self.vfio_host) {
            return Some(format!(
                "--platform {} was given, but {sign}: the text is the VM's host's, whose firmware and kernel place the BARs that failed, so the hints are the host's",
                cli_name(told)
            ));
        }
        let seen = self.firmware.judge();
        let agree = seen.platform == Platform::Unknown
            || seen.platform == told
            || (vm(told) && vm(seen.platform) && Platform::OtherVm == seen.platform);
        (!agree).then(|| {
            format!(
                "--platform {} was given, but the input's signs say {} ({}): the hints follow --platform",
                cli_name(told),
                cli_name(seen.platform),
                seen.signs.join(", ")
            )
        })
    }

    /// The SeaBIOS release the guest booted, from the version DMI carries:
    /// Debian's `1.16.3-debian-1.16.3-2`, QEMU's bundled
    /// `rel-1.16.3-0-ga6ed6b701f0a-prebuilt.qemu.org` (what Proxmox runs).
    /// `None` for any other firmware, or a version that names no release.
    pub(crate) fn seabios_release(&self) -> Option<SeabiosVersion> {
        if self.firmware.kind() != FirmwareKind::SeaBios {
            return None;
        }
        self.firmware
            .bios_version
            .as_deref()
            .and_then(seabios_version)
            .filter(|v| v.0 >= 1)
    }
}

/// A platform as `--platform` names it.
pub(crate) fn cli_name(p: Platform) -> &'static str {
    match p {
        Platform::Qemu => "qemu",
        Platform::Vmware => "vmware",
        Platform::HyperV => "hyperv",
        Platform::OtherVm => "other-vm",
        Platform::BareMetal => "bare-metal",
        Platform::Unknown => "unknown",
    }
}

/// A VM's platform (not bare metal, not unknown).
fn vm(p: Platform) -> bool {
    !matches!(p, Platform::BareMetal | Platform::Unknown)
}
