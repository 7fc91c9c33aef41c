//! NCCL's path gate: NCCL walks each GPU's sysfs path (`src/graph/xml.cc`,
//! `topo.cc`) and uses P2P only up to its level (`paths.cc`,
//! `ncclTopoCheckP2p`: `PXB` by default; `SYS` for at most two GPUs on an
//! AMD CPU; `NCCL_P2P_LEVEL` overrides, `NCCL_P2P_DISABLE=1` is off).

use super::{gate, Gate, NcclReport, NcclSettingReport, PairReport};
use crate::decide::hint::{Change, Hint, HintId, Restart, Side};
use crate::decide::syntax::{self, Hypervisor};
use crate::evidence::p2p::{P2pEvidence, P2pGpu};
use crate::model::p2p::{GateVerdict, PathLevel};
use crate::model::platform::CpuVendor;
use crate::parse::nccl::{level_setting, LevelSetting};
use crate::parse::p2p_text::P2pText;
use std::collections::BTreeSet;

/// The PCI path between two GPUs as NCCL classifies it. Bridges a GPU's
/// sysfs path passes are NCCL's PCI nodes; a root bus is a host bridge
/// (a CPU node). GPU to bridge is `PIX`, bridge to bridge `PXB`, through a
/// host bridge `PHB`, between host bridges of different NUMA nodes `SYS`
/// (the path's type is its worst link: `ncclTopoSetPaths`).
pub(super) fn path_level(a: &P2pGpu, b: &P2pGpu) -> PathLevel {
    if a.root_bus != b.root_bus {
        return match (a.numa_node, b.numa_node) {
            (Some(x), Some(y)) if x >= 0 && y >= 0 && x != y => PathLevel::Sys,
            _ => PathLevel::Phb,
        };
    }
    let ra: Vec<_> = a.upstream.iter().rev().collect();
    let rb: Vec<_> = b.upstream.iter().rev().collect();
    let common = ra.iter().zip(&rb).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return PathLevel::Phb;
    }
    if ra.len() == common && rb.len() == common {
        PathLevel::Pix
    } else {
        PathLevel::Pxb
    }
}

/// NCCL's own level when nothing is set.
pub(super) fn default_level(cpu: Option<CpuVendor>, gpus: usize) -> PathLevel {
    if cpu == Some(CpuVendor::Amd) && gpus <= 2 {
        PathLevel::Sys
    } else {
        PathLevel::Pxb
    }
}

/// What the gate saw besides its verdict, for the report.
pub(super) struct Paths {
    pub gate: Gate,
    pub pairs: Vec<PairReport>,
    /// The farthest pair's level.
    pub worst: Option<PathLevel>,
    pub nccl: NcclReport,
}

/// The level NCCL allows and what set it.
fn allowed(ev: &P2pEvidence, setting: LevelSetting) -> (Option<PathLevel>, &'static str) {
    match setting {
        LevelSetting::Default | LevelSetting::Ignored => {
            (Some(default_level(ev.cpu_vendor, ev.gpus.len())), "default")
        }
        LevelSetting::Level(l) => (Some(l), "NCCL_P2P_LEVEL"),
        LevelSetting::Off => (
            None,
            if level_setting(setting_of(ev, "NCCL_P2P_DISABLE"), None) == LevelSetting::Off {
                "NCCL_P2P_DISABLE"
            } else {
                "NCCL_P2P_LEVEL"
            },
        ),
    }
}

fn setting_of<'a>(ev: &'a P2pEvidence, name: &str) -> Option<&'a str> {
    ev.nccl
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value.as_str())
}

/// The gate on a system's evidence, its fixes added to `hints`. `in_vm`:
/// an emulated switch is a VM's remedy only.
pub(super) fn judge(ev: &P2pEvidence, in_vm: bool, hints: &mut Vec<Hint>) -> Paths {
    let mut pairs = Vec::new();
    for (i, a) in ev.gpus.iter().enumerate() {
        for b in &ev.gpus[i + 1..] {
            pairs.push(PairReport {
                a: a.addr,
                b: b.addr,
                level: path_level(a, b),
            });
        }
    }
    let worst = pairs.iter().map(|p| p.level).max();
    let get = |k: &str| setting_of(ev, k);
    let setting = level_setting(get("NCCL_P2P_DISABLE"), get("NCCL_P2P_LEVEL"));
    let topo_file = get("NCCL_TOPO_FILE");
    let (allowed, level_source) = allowed(ev, setting);
    // A level NCCL does not read leaves its default in force: say so.
    let ignored = if setting == LevelSetting::Ignored {
        format!(
            "NCCL ignores NCCL_P2P_LEVEL={:?} (it knows only its path names, upper case, and numbers), so its default applies: ",
            get("NCCL_P2P_LEVEL").unwrap_or_default()
        )
    } else {
        String::new()
    };
    let gate = match (worst, setting) {
        (None, _) => gate(GateVerdict::Unknown, "fewer than two GPUs: no pair"),
        (Some(_), _) if topo_file.is_some() => gate(
            GateVerdict::Unknown,
            format!(
                "NCCL_TOPO_FILE={}: NCCL reads the topology from that file, not from sysfs",
                topo_file.unwrap_or_default()
            ),
        ),
        (Some(_), LevelSetting::Off) => {
            hints.push(enable_hint(ev, level_source));
            gate(
                GateVerdict::Refused,
                format!("{level_source} turns NCCL's P2P off"),
            )
        }
        (Some(w), _) => {
            let a = allowed.unwrap_or(PathLevel::Pxb);
            if w <= a {
                gate(
                    GateVerdict::Granted,
                    format!(
                        "{ignored}the farthest pair is {} apart and NCCL allows up to {} ({level_source})",
                        w.as_str(),
                        a.as_str()
                    ),
                )
            } else {
                let why = format!(
                    "{ignored}the farthest GPUs are {} apart and NCCL allows P2P only up to {} ({level_source}): it will copy through host memory (`via SHM`).",
                    w.as_str(),
                    a.as_str()
                );
                hints.push(nccl_level_hint(w, |set| {
                    format!(
                        "{why} Set `{set}` in /etc/nccl.conf (or the job's environment); no restart, the next NCCL process reads it."
                    )
                }));
                let same_bus = ev.gpus.windows(2).all(|p| p[0].root_bus == p[1].root_bus);
                if w == PathLevel::Phb && same_bus && in_vm {
                    hints.push(switch_hint(super::driver::first(ev)));
                }
                gate(GateVerdict::Refused, why)
            }
        }
    };
    Paths {
        gate,
        pairs,
        worst,
        nccl: NcclReport {
            settings: ev
                .nccl
                .iter()
                .map(|s| NcclSettingReport {
                    name: s.name.clone(),
                    value: s.value.clone(),
                    source: s.source.clone(),
                })
                .collect(),
            p2p_level: if topo_file.is_some() { None } else { allowed },
            level_source: if topo_file.is_some() {
                "NCCL_TOPO_FILE"
            } else {
                level_source
            },
        },
    }
}

/// The gate on pasted text: `nvidia-smi topo -m` gives the paths, NCCL's
/// `via` lines what it did. `cpu`: the CPU vendor the rest of the input
/// showed, if any (NCCL's default level depends on it for two GPUs).
pub(super) fn from_text(t: &P2pText, cpu: Option<CpuVendor>, hints: &mut Vec<Hint>) -> Paths {
    let worst = t.paths.iter().map(|p| p.2).max();
    let allowed = match t
        .nccl_level
        .as_deref()
        .map(|l| level_setting(None, Some(l)))
    {
        Some(LevelSetting::Level(l)) => Some(l),
        Some(LevelSetting::Off) => None,
        // NCCL's default: PXB, SYS for up to two GPUs on an AMD CPU; not
        // known for two GPUs when the input does not show the CPU.
        _ => {
            let gpus: BTreeSet<u32> = t.paths.iter().flat_map(|p| [p.0, p.1]).collect();
            match cpu {
                Some(_) => Some(default_level(cpu, gpus.len())),
                None if gpus.len() > 2 => Some(PathLevel::Pxb),
                None => None,
            }
        }
    };
    let default_unknown = allowed.is_none() && t.nccl_level.is_none();
    let level_source = if t.nccl_level.is_some() {
        "NCCL_P2P_LEVEL"
    } else {
        "default"
    };
    let gate = if t.nccl_shm > 0 && t.nccl_p2p == 0 {
        let why = format!(
            "NCCL connected {} channel(s) through host memory (`via SHM`) and none `via P2P`.",
            t.nccl_shm
        );
        // Through host memory: whatever the CPU, the level did not reach.
        let reached = if default_unknown {
            Some(PathLevel::Pxb)
        } else {
            allowed
        };
        if let Some(w) = worst.filter(|w| reached.is_some_and(|a| *w > a)) {
            hints.push(nccl_level_hint(w, |set| {
                format!("{why} The GPUs are {} apart and NCCL allows up to {}: set `{set}` in /etc/nccl.conf or the job's environment.", w.as_str(), reached.map(PathLevel::as_str).unwrap_or("-"))
            }));
        }
        gate(GateVerdict::Refused, why)
    } else if t.nccl_p2p > 0 {
        gate(
            GateVerdict::Granted,
            format!("NCCL connected {} channel(s) `via P2P`", t.nccl_p2p),
        )
    } else if let Some(w) = worst.filter(|w| default_unknown && *w > PathLevel::Pxb) {
        gate(
            GateVerdict::Unknown,
            format!(
                "the farthest GPUs are {} apart (`nvidia-smi topo -m`): NCCL's default allows that for two GPUs on an AMD CPU (SYS), not on others (PXB), and the input does not show the CPU",
                w.as_str()
            ),
        )
    } else if let Some(w) = worst.filter(|w| default_unknown && *w <= PathLevel::Pxb) {
        gate(
            GateVerdict::Granted,
            format!(
                "the farthest pair is {} apart and NCCL allows at least PXB (default)",
                w.as_str()
            ),
        )
    } else if let (Some(w), Some(a)) = (worst, allowed) {
        if w <= a {
            gate(
                GateVerdict::Granted,
                format!(
                    "the farthest pair is {} apart and NCCL allows up to {} ({level_source})",
                    w.as_str(),
                    a.as_str()
                ),
            )
        } else {
            let why = format!("the farthest GPUs are {} apart (`nvidia-smi topo -m`) and NCCL allows P2P only up to {} ({level_source}).", w.as_str(), a.as_str());
            hints.push(nccl_level_hint(w, |set| {
                format!("{why} Set `{set}` in /etc/nccl.conf or the job's environment.")
            }));
            gate(GateVerdict::Refused, why)
        }
    } else {
        gate(
            GateVerdict::Unknown,
            "no `nvidia-smi topo -m` matrix or NCCL `via` lines in the input",
        )
    };
    Paths {
        gate,
        pairs: Vec::new(),
        worst,
        nccl: NcclReport {
            settings: t
                .nccl_level
                .iter()
                .map(|l| NcclSettingReport {
                    name: "NCCL_P2P_LEVEL".into(),
                    value: l.clone(),
                    source: "log".into(),
                })
                .collect(),
            p2p_level: allowed,
            level_source,
        },
    }
}

/// `p2p-nccl-level`: let NCCL use P2P up to `level`, a guest setting the
/// next NCCL process reads. `text` is given the setting as it is written
/// (`NCCL_P2P_LEVEL=PHB`).
fn nccl_level_hint(level: PathLevel, text: impl FnOnce(&str) -> String) -> Hint {
    let mut change = Change::default();
    change
        .nccl_env
        .insert("NCCL_P2P_LEVEL".into(), level.as_str().into());
    let text = text(&syntax::nccl_env(&change));
    Hint::new(HintId::P2pNcclLevel, text, Side::Guest, None, change)
}

/// `p2p-nccl-enable`: the setting that switched NCCL's P2P off, removed
/// (with the other one that can).
fn enable_hint(ev: &P2pEvidence, source: &str) -> Hint {
    let mut change = Change::default();
    for k in ["NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"] {
        change.nccl_env.insert(k.into(), String::new());
    }
    Hint::new(
        HintId::P2pNcclEnable,
        format!(
            "NCCL's P2P is switched off by {source} ({}): remove it from /etc/nccl.conf and the job's environment.",
            ev.nccl
                .iter()
                .filter(|s| s.name == source)
                .map(|s| format!("{}={} in {}", s.name, s.value, s.source))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Side::Guest,
        None,
        change,
    )
}

/// `p2p-pcie-switch`: the GPUs behind one emulated switch, a VM's remedy
/// for a PHB path.
fn switch_hint(layer: Option<Hypervisor>) -> Hint {
    let change = Change {
        pcie_switch: Some(true),
        ..Change::default()
    };
    let (lines, close) = syntax::p2p_lines(
        &change,
        layer,
        &[Hypervisor::Qemu, Hypervisor::Proxmox, Hypervisor::Libvirt],
        1,
    );
    Hint::new(
        HintId::P2pPcieSwitch,
        format!("Or put the GPUs behind one emulated PCIe switch, so they are PXB apart: {lines}. {close}"),
        Side::Host,
        Some(Restart::Vm),
        change,
    )
}
