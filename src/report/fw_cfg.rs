//! The report's `firmware.fw_cfg`: which of the fw_cfg inputs the guest
//! read, which the host did not set, which it set to something its
//! firmware refuses, and which are not known (a default was assumed), with
//! the values read. Only in a report of a system read (`check`, `boot`).

use crate::model::fw_cfg::{
    FwCfg, Input, FILES, MMIO64_FILE, RESERVED_MEMORY_END_FILE, SEABIOS_PCI64_FILE,
};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FwCfgReport {
    /// The `qemu_fw_cfg` driver's directory was there to read.
    pub readable: bool,
    /// Names under fw_cfg's `by_name/`, in each state.
    pub read: Vec<&'static str>,
    pub unset: Vec<&'static str>,
    pub refused: Vec<&'static str>,
    pub assumed: Vec<&'static str>,
    /// `opt/ovmf/X-PciMmio64Mb`, MiB, when read and taken by OVMF.
    pub x_pci_mmio64_mb: Option<u64>,
    /// `opt/org.seabios/pci64`, when read and one of SeaBIOS's words.
    pub seabios_pci64: Option<bool>,
    /// `etc/reserved-memory-end`.
    pub reserved_memory_end: Option<u64>,
    /// `etc/e820`, as QEMU gave it to the firmware; empty when not read.
    pub e820: Vec<E820Report>,
    /// Where RAM ends by that map, as the window model counts it.
    pub ram_end: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct E820Report {
    pub start: u64,
    pub length: u64,
    /// 1 RAM, 2 reserved.
    #[serde(rename = "type")]
    pub kind: u32,
}

pub(crate) fn build(fw: &FwCfg) -> FwCfgReport {
    let mut r = FwCfgReport {
        readable: fw.readable,
        read: Vec::new(),
        unset: Vec::new(),
        refused: Vec::new(),
        assumed: Vec::new(),
        x_pci_mmio64_mb: value(&fw.mmio64_mb).copied(),
        seabios_pci64: value(&fw.seabios_pci64).copied(),
        reserved_memory_end: value(&fw.reserved_memory_end).copied(),
        e820: value(&fw.e820)
            .map(|m| {
                m.iter()
                    .map(|e| E820Report {
                        start: e.start,
                        length: e.length,
                        kind: e.kind,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        ram_end: fw.ram_end(),
    };
    let states = [
        state(&fw.mmio64_mb),
        state(&fw.seabios_pci64),
        state(&fw.reserved_memory_end),
        state(&fw.e820),
    ];
    for (name, st) in FILES.into_iter().zip(states) {
        match st {
            State::Read => r.read.push(name),
            State::Unset => r.unset.push(name),
            State::Refused => r.refused.push(name),
            State::Assumed => r.assumed.push(name),
        }
    }
    r
}

/// The text report's line: which inputs were read, not set, refused, and
/// assumed (`read opt/ovmf/X-PciMmio64Mb=65536, etc/e820; not set
/// opt/org.seabios/pci64; assumed etc/reserved-memory-end`).
pub(crate) fn text(r: &FwCfgReport) -> String {
    if !r.readable && r.assumed.len() == FILES.len() {
        // The common case off QEMU, or without the driver: one short line.
        return format!(
            "all {} inputs assumed (no qemu_fw_cfg driver to read them)",
            FILES.len()
        );
    }
    let mut parts = Vec::new();
    if !r.read.is_empty() {
        let read: Vec<String> = r
            .read
            .iter()
            .map(|&n| match n {
                MMIO64_FILE => format!("{n}={}", r.x_pci_mmio64_mb.unwrap_or_default()),
                SEABIOS_PCI64_FILE => format!(
                    "{n}={}",
                    if r.seabios_pci64 == Some(true) {
                        "on"
                    } else {
                        "off"
                    }
                ),
                RESERVED_MEMORY_END_FILE => {
                    format!("{n}={:#x}", r.reserved_memory_end.unwrap_or_default())
                }
                _ => n.to_string(),
            })
            .collect();
        parts.push(format!("read {}", read.join(", ")));
    }
    for (what, names) in [
        ("not set", &r.unset),
        ("refused by the firmware", &r.refused),
        ("assumed", &r.assumed),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", names.join(", ")));
        }
    }
    if !r.readable {
        parts.push("(no qemu_fw_cfg driver to read them)".into());
    }
    parts.join("; ")
}

enum State {
    Read,
    Unset,
    Refused,
    Assumed,
}

fn state<T>(i: &Input<T>) -> State {
    match i {
        Input::Set(_) => State::Read,
        Input::Unset => State::Unset,
        Input::Refused(_) => State::Refused,
        Input::Unknown => State::Assumed,
    }
}

fn value<T>(i: &Input<T>) -> Option<&T> {
    match i {
        Input::Set(v) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_is_in_one_list() {
        let r = build(&FwCfg::default());
        assert!(!r.readable);
        assert_eq!(r.assumed, FILES.to_vec());
        let r = build(&FwCfg {
            readable: true,
            mmio64_mb: Input::Set(32768),
            seabios_pci64: Input::Unset,
            reserved_memory_end: Input::Unknown,
            e820: Input::Refused("x".into()),
        });
        assert_eq!(
            (&r.read, &r.unset, &r.assumed, &r.refused),
            (
                &vec!["opt/ovmf/X-PciMmio64Mb"],
                &vec!["opt/org.seabios/pci64"],
                &vec!["etc/reserved-memory-end"],
                &vec!["etc/e820"]
            )
        );
        assert_eq!(r.x_pci_mmio64_mb, Some(32768));
        assert_eq!(
            text(&r),
            "read opt/ovmf/X-PciMmio64Mb=32768; not set opt/org.seabios/pci64; \
             refused by the firmware etc/e820; assumed etc/reserved-memory-end"
        );
        assert_eq!(
            text(&build(&FwCfg::default())),
            "all 4 inputs assumed (no qemu_fw_cfg driver to read them)"
        );
    }
}
