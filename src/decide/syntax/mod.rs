//! What to type: the one place that turns a `Change` into the lines to
//! paste, for each platform, generically (`<vmid>`, `<vm>`) or for the VM
//! `plan` read, and says what makes a host change take effect there.
//!
//! A platform (a hypervisor, or the tool that manages its VMs) is one file
//! here and one arm of `Hypervisor`. It says each
//! setting of a change it has in its own terms, and nothing of a change
//! none of whose settings it has: a hint then lists only the platforms
//! that can make it. The guest's own settings (its kernel command line,
//! NCCL's environment) are `guest`'s.
//!
//! A QEMU guest whose DMI names its management layer (KubeVirt,
//! OpenStack, LXD, Incus: `model::layer`) is told that layer's syntax
//! alone (`for_guest`), which says every change a QEMU platform can make:
//! through its own setting where it has one, else its way round (a hook,
//! the operator's configuration), else that it has none. A guest no layer
//! names gets the generic lines: Proxmox, libvirt, LXD's `raw.qemu` for
//! OVMF's aperture, QEMU, Kata. virt-install's options are for a VM
//! being created, which no guest shows.

mod guest;
mod hyperv;
mod kata;
mod kubevirt;
mod libvirt;
mod lxd;
mod openstack;
mod proxmox;
mod qemu;
mod virt_install;
mod vmware;

#[cfg(test)]
mod tests;

use crate::decide::hint::{Change, Restart, Side};
use crate::evidence::Evidence;
use crate::model::layer::Layer;

pub(crate) use guest::{hotplug_reserve, kernel_cmdline, nccl_env};
pub(crate) use qemu::{aperture, aperture_mib, hole64, hole64_bytes, root_port_reserve};

/// A platform whose syntax the hints speak: a hypervisor, or the tool
/// that manages its VMs. (`model::platform::Platform` is what the evidence
/// shows the machine to be.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hypervisor {
    Proxmox,
    Libvirt,
    /// LXD as the layer its guest's DMI names: every setting it has.
    Lxd,
    Qemu,
    Kata,
    Vmware,
    HyperV,
    KubeVirt,
    OpenStack,
    Incus,
    /// virt-install's options are for a VM being created, which no guest
    /// shows: a caller that names its platform picks it.
    #[cfg_attr(not(test), allow(dead_code))]
    VirtInstall,
    /// LXD among the generic lines: `raw.qemu` for OVMF's aperture alone.
    LxdRawQemu,
}

impl Hypervisor {
    /// Every platform (for the tests that go through them all).
    #[cfg(test)]
    pub(crate) const ALL: [Hypervisor; 12] = [
        Hypervisor::Proxmox,
        Hypervisor::Libvirt,
        Hypervisor::Lxd,
        Hypervisor::Qemu,
        Hypervisor::Kata,
        Hypervisor::Vmware,
        Hypervisor::HyperV,
        Hypervisor::KubeVirt,
        Hypervisor::OpenStack,
        Hypervisor::Incus,
        Hypervisor::VirtInstall,
        Hypervisor::LxdRawQemu,
    ];

    /// The platforms that run QEMU underneath, whose settings are QEMU's:
    /// the generic lines of a guest no management layer names.
    pub(crate) const QEMU: [Hypervisor; 5] = [
        Hypervisor::Proxmox,
        Hypervisor::Libvirt,
        Hypervisor::LxdRawQemu,
        Hypervisor::Qemu,
        Hypervisor::Kata,
    ];

    /// The syntax of a management layer a guest's DMI names.
    pub(crate) fn of(layer: Layer) -> Hypervisor {
        match layer {
            Layer::KubeVirt => Hypervisor::KubeVirt,
            Layer::OpenStack => Hypervisor::OpenStack,
            Layer::Lxd => Hypervisor::Lxd,
            Layer::Incus => Hypervisor::Incus,
        }
    }

    fn syntax(self) -> &'static dyn Syntax {
        match self {
            Hypervisor::Proxmox => &proxmox::Proxmox,
            Hypervisor::Libvirt => &libvirt::Libvirt,
            Hypervisor::Lxd => &lxd::LXD,
            Hypervisor::Qemu => &qemu::Qemu,
            Hypervisor::Kata => &kata::Kata,
            Hypervisor::Vmware => &vmware::Vmware,
            Hypervisor::HyperV => &hyperv::HyperV,
            Hypervisor::KubeVirt => &kubevirt::KubeVirt,
            Hypervisor::OpenStack => &openstack::OpenStack,
            Hypervisor::Incus => &lxd::INCUS,
            Hypervisor::VirtInstall => &virt_install::VirtInstall,
            Hypervisor::LxdRawQemu => &lxd::RawQemu,
        }
    }
}

/// What a platform says. Each part is `None` where the platform has no
/// such thing.
trait Syntax {
    /// The change as this platform's entry in a list of platforms, its
    /// name first (`Proxmox: ...`), for any VM (`<vmid>`, `<vm>`). `gpus`:
    /// how many GPUs the VM has, for a setting made once per GPU.
    fn phrase(&self, c: &Change, gpus: usize) -> Option<String>;

    /// Its step in the sentence that says how a host change takes effect.
    fn restart(&self) -> Option<&'static str> {
        None
    }

    /// How to see which GPUs a VM is given.
    fn passthrough(&self) -> Option<&'static str> {
        None
    }

    /// The change for a hint meant for this platform alone: the whole
    /// step, with what the VM must go through first.
    fn instruction(&self, _c: &Change) -> Option<String> {
        None
    }

    /// The change for the VM `plan` read, with the step that makes it take
    /// effect; `None` for another platform's VM.
    fn for_vm(&self, _c: &Change, _vm: &NamedVm) -> Option<String> {
        None
    }

    /// The lines that make a change's device properties on each of the
    /// GPUs of the VM `plan` read; `None` where the platform has none.
    fn device_lines(&self, _c: &Change, _vm: &VmGpus) -> Option<Vec<String>> {
        None
    }

    /// The VM's user cannot make part of the change here: the platform
    /// has no setting for it (its phrase says so), or it is the host's
    /// hardware (LXD's `-cpu host`).
    fn lacks(&self, _c: &Change) -> bool {
        false
    }
}

/// Where a plan's prescriptions are to be typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VmTarget {
    /// A Proxmox VM: its id, its `cpu:` property as it stands (`kvm64`
    /// when it has none) and its `args:` line.
    Proxmox {
        vmid: String,
        cpu: String,
        args: String,
    },
    /// A libvirt domain, by name.
    Libvirt { name: String },
    /// Plain QEMU arguments.
    Qemu,
}

impl VmTarget {
    fn hypervisor(&self) -> Hypervisor {
        match self {
            VmTarget::Proxmox { .. } => Hypervisor::Proxmox,
            VmTarget::Libvirt { .. } => Hypervisor::Libvirt,
            VmTarget::Qemu => Hypervisor::Qemu,
        }
    }
}

/// The VM `plan` read: where to type, and which of the settings a change
/// makes it has already (a change then replaces it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NamedVm<'a> {
    pub target: &'a VmTarget,
    pub has_hole64: bool,
    pub has_mmio64: bool,
}

/// A GPU of the VM `plan` read, as a change made on each device names it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VmGpu<'a> {
    /// Its name in the configuration: `hostpciN`, a libvirt alias (empty
    /// when it has none), `gpuN` for `--gpu`.
    pub name: &'a str,
    /// The host functions its entry passes, as written (`0000:41:00`, or
    /// `0000:41:00.0` and `0000:41:00.1` of a list).
    pub hosts: &'a [String],
    /// QEMU's `-set device.ID...` can name it (Proxmox names the
    /// functions of a multi-function entry `hostpciN.M`, which it cannot).
    pub targetable: bool,
}

/// The GPUs of the VM `plan` read, for a change made on each of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct VmGpus<'a> {
    pub gpus: Vec<VmGpu<'a>>,
    /// Proxmox: the VM's `args:` line as written, which a new one replaces.
    pub args: &'a str,
}

/// The lines to paste that set `c`'s device properties
/// (`vfio_pci_properties`) on every GPU of the VM `plan` read, in
/// `platform`'s terms, with what the VM's entries must become first and,
/// where `c` shows KVM's signature, the setting that hides it; empty for a
/// platform without such lines.
pub(crate) fn device_lines(platform: Hypervisor, c: &Change, vm: &VmGpus) -> Vec<String> {
    platform.syntax().device_lines(c, vm).unwrap_or_default()
}

/// The platforms' entries for `c`, in the order given, joined into one
/// list; `None` when none of them has any of its settings.
pub(crate) fn list(c: &Change, platforms: &[Hypervisor], gpus: usize) -> Option<String> {
    let entries: Vec<String> = platforms
        .iter()
        .filter_map(|p| p.syntax().phrase(c, gpus))
        .collect();
    (!entries.is_empty()).then(|| entries.join("; "))
}

/// The platforms among `platforms` that have a setting of `c`.
pub(crate) fn able(c: &Change, platforms: &[Hypervisor]) -> Vec<Hypervisor> {
    platforms
        .iter()
        .copied()
        .filter(|p| p.syntax().phrase(c, 1).is_some())
        .collect()
}

/// The syntax a guest's hints give first: that of the management layer
/// its DMI names, if any. The one place that decides it.
pub(crate) fn first_for(ev: &Evidence) -> Option<Hypervisor> {
    ev.firmware.layer().map(Hypervisor::of)
}

/// The platforms a QEMU guest's host change is given for: `first` (its
/// management layer) alone, where it says the change; else each of
/// `Hypervisor::QEMU` that can make it, as for a guest no layer names.
pub(crate) fn for_guest(c: &Change, first: Option<Hypervisor>) -> Vec<Hypervisor> {
    match first {
        Some(h) if h.syntax().phrase(c, 1).is_some() => vec![h],
        _ => able(c, &Hypervisor::QEMU),
    }
}

/// `host_steps` for a QEMU guest, in the syntax `for_guest` picks.
pub(crate) fn guest_steps(c: &Change, first: Option<Hypervisor>) -> String {
    host_steps(c, &for_guest(c, first))
}

/// Whether `first` (a guest's management layer) has no way to make part
/// of `c`: its hints then come after those it can make.
pub(crate) fn lacks(c: &Change, first: Option<Hypervisor>) -> bool {
    first.is_some_and(|h| h.syntax().lacks(c))
}

/// A peer-to-peer hint's lines for `c` and its close: `first`'s (the
/// guest's management layer) where it says `c`, with its restart; else
/// `generic`'s, in the order given, and "Then stop and start the VM.".
pub(crate) fn p2p_lines(
    c: &Change,
    first: Option<Hypervisor>,
    generic: &[Hypervisor],
    gpus: usize,
) -> (String, String) {
    match first.and_then(|h| list(c, &[h], gpus).map(|l| (l, h))) {
        Some((l, h)) => (l, restart(&[h])),
        None => (
            list(c, generic, gpus).unwrap_or_default(),
            Restart::Vm.then().to_string(),
        ),
    }
}

/// `passthrough` for a QEMU guest: `first`'s way where it has one, else
/// the generic platforms'.
pub(crate) fn guest_passthrough(first: Option<Hypervisor>) -> String {
    match first.and_then(|h| h.syntax().passthrough()) {
        Some(p) => p.to_string(),
        None => passthrough(&Hypervisor::QEMU),
    }
}

/// `It takes effect when the VM is stopped and started again: Proxmox:
/// ...; libvirt: .... A reboot inside the guest keeps the old settings.`,
/// with the steps of those of `platforms` that name one.
pub(crate) fn restart(platforms: &[Hypervisor]) -> String {
    let steps: Vec<&str> = platforms
        .iter()
        .filter_map(|p| p.syntax().restart())
        .collect();
    let lead = Restart::Vm.sentence();
    let caveat = "A reboot inside the guest keeps the old settings.";
    if steps.is_empty() {
        format!("{lead}. {caveat}")
    } else {
        format!("{lead}: {}. {caveat}", steps.join("; "))
    }
}

/// A host change as the hints close with it: each of `platforms` that can
/// make it, then how it takes effect. Empty when none can.
pub(crate) fn host_steps(c: &Change, platforms: &[Hypervisor]) -> String {
    let able = able(c, platforms);
    match list(c, &able, 1) {
        Some(l) => format!("{l}. {}", restart(&able)),
        None => String::new(),
    }
}

/// How to see which GPUs the VM is given, on each of `platforms` that says.
pub(crate) fn passthrough(platforms: &[Hypervisor]) -> String {
    platforms
        .iter()
        .filter_map(|p| p.syntax().passthrough())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The change for a hint meant for `platform` alone (VMware, Hyper-V).
pub(crate) fn instruction(platform: Hypervisor, c: &Change) -> String {
    platform.syntax().instruction(c).unwrap_or_default()
}

/// The change for the VM `plan` read, with what makes it take effect; a
/// guest change is the guest's whatever the VM.
pub(crate) fn for_vm(c: &Change, side: Side, vm: &NamedVm) -> String {
    if side == Side::Guest {
        return format!("in the guest: {}", kernel_cmdline(c).unwrap_or_default());
    }
    vm.target
        .hypervisor()
        .syntax()
        .for_vm(c, vm)
        .unwrap_or_default()
}

/// `, in place of the pci-hole64-size there`: said after a setting the VM
/// already has one of.
fn replacing(has: bool, what: &str) -> String {
    if has {
        format!(", in place of the {what} there")
    } else {
        String::new()
    }
}
