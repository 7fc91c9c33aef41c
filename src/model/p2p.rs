//! Peer-to-peer values: how far apart two GPUs are on PCI (as NCCL names
//! it), what a GPU's config space says of QEMU's clique capability, and
//! the verdict of one gate.

use serde::Serialize;

/// The PCI distance between two GPUs, NCCL's path types from closest to
/// farthest (NVIDIA/nccl `src/graph/topo.h`: `PATH_PIX`, `PATH_PXB`,
/// `PATH_PHB`, `PATH_SYS`; NVLink levels are not visible in config space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub(crate) enum PathLevel {
    /// Both below the same bridge.
    #[serde(rename = "PIX")]
    Pix,
    /// Through more than one bridge, not through a host bridge (a switch).
    #[serde(rename = "PXB")]
    Pxb,
    /// Through a PCI host bridge (the CPU's root complex).
    #[serde(rename = "PHB")]
    Phb,
    /// Across two host bridges on different NUMA nodes.
    #[serde(rename = "SYS")]
    Sys,
}

impl PathLevel {
    pub(crate) const ALL: [PathLevel; 4] = [
        PathLevel::Pix,
        PathLevel::Pxb,
        PathLevel::Phb,
        PathLevel::Sys,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PathLevel::Pix => "PIX",
            PathLevel::Pxb => "PXB",
            PathLevel::Phb => "PHB",
            PathLevel::Sys => "SYS",
        }
    }

    /// `nvidia-smi topo -m`'s cells, case-insensitive (`NODE` is PHB on
    /// one NUMA node, as NCCL reads it). Not for `NCCL_P2P_LEVEL`, which
    /// NCCL compares exactly: `parse::nccl::level_setting`.
    pub(crate) fn parse(word: &str) -> Option<PathLevel> {
        match word.trim().to_ascii_uppercase().as_str() {
            "PIX" => Some(PathLevel::Pix),
            "PXB" => Some(PathLevel::Pxb),
            "PHB" | "NODE" => Some(PathLevel::Phb),
            "SYS" => Some(PathLevel::Sys),
            _ => None,
        }
    }
}

/// What config space says of QEMU's "virtual P2P approval" capability
/// (hw/vfio/pci-quirks.c, `vfio_add_nv_gpudirect_cap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CliqueCap {
    /// Found at `offset`: clique id and version (bits 7:3 and 2:0 of the
    /// capability's byte 6).
    Found { offset: u8, clique: u8, version: u8 },
    /// The capability list was read to its end: no such capability.
    Absent,
    /// Only `bytes` of config space could be read (an unprivileged reader
    /// gets 64): the list is past them.
    Unreadable { bytes: usize },
}

/// A gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GateVerdict {
    Granted,
    Refused,
    Unknown,
}

impl GateVerdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            GateVerdict::Granted => "granted",
            GateVerdict::Refused => "refused",
            GateVerdict::Unknown => "unknown",
        }
    }
}

/// What a VM configuration says of peer-to-peer (`plan --p2p`): the
/// devices passed through, the clique each is set to, whether KVM is
/// hidden. Proxmox's and libvirt's parsers give it (`PveConfig::p2p`,
/// `Domain::p2p`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmP2p {
    pub devices: Vec<VmDevice>,
    /// Proxmox `cpu: ...,hidden=1`, libvirt `<kvm><hidden state='on'/>`:
    /// QEMU's `kvm=off`.
    pub kvm_hidden: bool,
    /// (device id, value) of each `x-nv-gpudirect-clique` set: by `-set`
    /// (Proxmox `args:`) or `<qemu:override>` (libvirt).
    pub cliques: Vec<(String, String)>,
    /// libvirt: `-set` of the clique in `<qemu:commandline>` (fails under
    /// JSON -device).
    pub commandline_set: bool,
    /// Proxmox: the `args:` line as written.
    pub args: String,
}

impl VmP2p {
    /// The devices `--gpu` names, without a configuration: `gpu0`, `gpu1`...
    pub(crate) fn of_flags(gpus: &[String]) -> VmP2p {
        VmP2p {
            devices: gpus
                .iter()
                .enumerate()
                .map(|(i, g)| VmDevice {
                    name: format!("gpu{i}"),
                    hosts: vec![g.clone()],
                    mapping: false,
                    x_vga: false,
                })
                .collect(),
            ..VmP2p::default()
        }
    }
}

/// One passed-through device entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmDevice {
    /// `hostpci0`, or the libvirt alias (`hostdev0`, `ua-gpu0`); empty
    /// when a libvirt `<hostdev>` has none.
    pub name: String,
    /// Host addresses as written (`0000:41:00.0`, `41:00`).
    pub hosts: Vec<String>,
    /// A Proxmox resource mapping (`mapping=NAME`).
    pub mapping: bool,
    /// Proxmox `x-vga=1`.
    pub x_vga: bool,
}
