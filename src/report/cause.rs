//! Configuration, not hardware: GPUs that are present and answer on the
//! bus, whose BARs the VM's configuration left without addresses. A
//! fleet's count check (how many GPUs the driver sees) counts them
//! missing like a dead card; this says which they are, and the setting
//! that places them, in the JSON form, the metrics and the
//! node-problem-detector plugin alike.

use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::HintId;
use crate::model::platform::Platform;
use crate::report::GpuReport;
use serde::Serialize;
use std::fmt::Write as _;

/// The report's `unplaced_by_configuration`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Unplaced {
    /// Always `vm_configuration`: the reason a count check can key on.
    pub reason: &'static str,
    /// GPUs present with a BAR left out.
    pub gpus: usize,
    /// Their addresses.
    pub bdfs: Vec<String>,
    /// The setting to change: the next step's hint id.
    pub setting: HintId,
}

pub(crate) const REASON: &str = "vm_configuration";

/// The diagnoses that are the configuration's (a window too small for the
/// BARs, a vCPU too narrow to address them, a firmware that left them for
/// the kernel), as opposed to a GPU missing or an input that cannot say.
fn configuration(d: DiagnosisKind) -> bool {
    matches!(
        d,
        DiagnosisKind::WindowTooSmall
            | DiagnosisKind::PhysBitsTooSmall
            | DiagnosisKind::FirmwareLeftUnassigned
    )
}

/// `Some` when this is a VM whose GPUs are present but left without
/// addresses for a reason of its configuration, and a setting is named:
/// the GPUs failed are then the configuration's, not the hardware's.
pub(crate) fn unplaced(
    platform: Platform,
    diagnosis: DiagnosisKind,
    gpus: &[GpuReport],
    first_hint: Option<HintId>,
) -> Option<Unplaced> {
    let vm = matches!(
        platform,
        Platform::Qemu | Platform::Vmware | Platform::HyperV | Platform::OtherVm
    );
    let setting = first_hint.filter(|h| *h != HintId::CollectEvidence && !h.is_p2p())?;
    let bdfs: Vec<String> = gpus
        .iter()
        .filter(|g| !g.ok)
        .map(|g| g.bdf.to_string())
        .collect();
    (vm && configuration(diagnosis) && !bdfs.is_empty()).then_some(Unplaced {
        reason: REASON,
        gpus: bdfs.len(),
        bdfs,
        setting,
    })
}

/// The series: how many GPUs the configuration left unplaced (0 when
/// none, so that a rule can subtract it), and each of them by bdf.
pub(crate) fn prometheus(u: Option<&Unplaced>, s: &mut String) {
    let name = "gpu_preflight_gpus_unplaced_by_configuration";
    let _ = writeln!(
        s,
        "# HELP {name} GPUs present and answering whose BARs the VM's configuration left without addresses (not a hardware fault); setting is the hint id that places them."
    );
    let _ = writeln!(s, "# TYPE {name} gauge");
    match u {
        Some(u) => {
            let _ = writeln!(
                s,
                "{name}{{reason=\"{}\",setting=\"{}\"}} {}",
                u.reason, u.setting, u.gpus
            );
        }
        None => {
            let _ = writeln!(s, "{name} 0");
        }
    }
    let Some(u) = u else {
        return;
    };
    let name = "gpu_preflight_gpu_unplaced_by_configuration";
    let _ = writeln!(
        s,
        "# HELP {name} 1 for each GPU present and answering whose BARs the VM's configuration left without addresses."
    );
    let _ = writeln!(s, "# TYPE {name} gauge");
    for b in &u.bdfs {
        let _ = writeln!(
            s,
            "{name}{{bdf=\"{b}\",reason=\"{}\",setting=\"{}\"}} 1",
            u.reason, u.setting
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pci::PciAddress;

    fn gpu(bus: u8, ok: bool) -> GpuReport {
        GpuReport {
            bdf: PciAddress {
                domain: 0,
                bus,
                device: 0,
                function: 0,
            },
            vendor: None,
            device: None,
            class: None,
            name: None,
            ok,
            upstream: Vec::new(),
            bars: Vec::new(),
        }
    }

    #[test]
    fn a_vms_window_is_configuration_a_missing_gpu_or_bare_metal_is_not() {
        let gpus = [gpu(1, true), gpu(2, false)];
        let u = unplaced(
            Platform::Qemu,
            DiagnosisKind::WindowTooSmall,
            &gpus,
            Some(HintId::CpuPdpe1gb),
        )
        .unwrap();
        assert_eq!(u.gpus, 1);
        assert_eq!(u.bdfs, ["0000:02:00.0"]);
        assert_eq!(u.setting, HintId::CpuPdpe1gb);
        let hint = Some(HintId::CpuPhysBits);
        for (platform, d, hint) in [
            (Platform::BareMetal, DiagnosisKind::WindowTooSmall, hint),
            (Platform::Unknown, DiagnosisKind::PhysBitsTooSmall, hint),
            (Platform::Qemu, DiagnosisKind::GpusMissing, hint),
            (Platform::Qemu, DiagnosisKind::Unknown, hint),
            (Platform::Qemu, DiagnosisKind::Ok, hint),
            (
                Platform::Qemu,
                DiagnosisKind::WindowTooSmall,
                Some(HintId::CollectEvidence),
            ),
            (Platform::Qemu, DiagnosisKind::WindowTooSmall, None),
        ] {
            assert_eq!(
                unplaced(platform, d, &gpus, hint),
                None,
                "{platform:?} {d:?}"
            );
        }
        // Every GPU placed: nothing to say, whatever the diagnosis.
        let placed = [gpu(1, true)];
        assert_eq!(
            unplaced(
                Platform::Qemu,
                DiagnosisKind::FirmwareLeftUnassigned,
                &placed,
                hint
            ),
            None
        );
    }

    #[test]
    fn the_series_say_how_many_and_which() {
        let mut s = String::new();
        prometheus(None, &mut s);
        assert!(
            s.ends_with("\ngpu_preflight_gpus_unplaced_by_configuration 0\n"),
            "{s}"
        );
        assert!(!s.contains("gpu_preflight_gpu_unplaced_by_configuration"));
        let u = Unplaced {
            reason: REASON,
            gpus: 2,
            bdfs: vec!["0000:04:00.0".into(), "0000:05:00.0".into()],
            setting: HintId::OvmfMmio64Aperture,
        };
        let mut s = String::new();
        prometheus(Some(&u), &mut s);
        assert!(s.contains(
            "\ngpu_preflight_gpus_unplaced_by_configuration{reason=\"vm_configuration\",setting=\"ovmf-mmio64-aperture\"} 2\n"
        ));
        assert!(s.contains(
            "\ngpu_preflight_gpu_unplaced_by_configuration{bdf=\"0000:05:00.0\",reason=\"vm_configuration\",setting=\"ovmf-mmio64-aperture\"} 1\n"
        ));
    }
}
