//! The report: one value that the text, JSON and Prometheus renderers share.
//!
//! The JSON form is a stable interface (documented in README.md): fields are
//! only ever added. `schema` is bumped if one must change meaning.

use crate::pci::PciAddress;
use serde::Serialize;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ok,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    Ok,
    GpusMissing,
    FirmwareLeftUnassigned,
    WindowTooSmall,
    PhysBitsTooSmall,
    Unknown,
}

impl DiagnosisKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::Ok => "ok",
            DiagnosisKind::GpusMissing => "gpus_missing",
            DiagnosisKind::FirmwareLeftUnassigned => "firmware_left_unassigned",
            DiagnosisKind::WindowTooSmall => "window_too_small",
            DiagnosisKind::PhysBitsTooSmall => "phys_bits_too_small",
            DiagnosisKind::Unknown => "unknown",
        }
    }

    pub const ALL: [DiagnosisKind; 6] = [
        DiagnosisKind::Ok,
        DiagnosisKind::GpusMissing,
        DiagnosisKind::FirmwareLeftUnassigned,
        DiagnosisKind::WindowTooSmall,
        DiagnosisKind::PhysBitsTooSmall,
        DiagnosisKind::Unknown,
    ];
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub schema: u32,
    /// `check` or `explain`.
    pub mode: &'static str,
    pub verdict: Verdict,
    pub diagnosis: DiagnosisKind,
    /// One sentence with the numbers that decided the diagnosis.
    pub summary: String,
    pub expected: Option<usize>,
    pub found: usize,
    pub realloc_active: bool,
    pub firmware: FirmwareReport,
    pub gpus: Vec<GpuReport>,
    pub unassigned: Vec<UnassignedBar>,
    pub capacity: Capacity,
    pub hints: Vec<HintReport>,
    /// Problems met while reading (a vanished device, a malformed file).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct FirmwareReport {
    /// `seabios`, `ovmf`, `other` or `unknown`.
    pub kind: &'static str,
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    /// `qemu`, `vmware`, `hyperv`, `other_vm`, `bare_metal` or `unknown`.
    pub platform: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuReport {
    pub bdf: PciAddress,
    /// Four lowercase hex digits, as in `lspci -n`.
    pub vendor: String,
    pub device: String,
    pub class: String,
    pub name: Option<String>,
    pub ok: bool,
    /// Upstream bridges, nearest first.
    pub upstream: Vec<PciAddress>,
    pub bars: Vec<BarReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BarReport {
    pub index: u8,
    /// `assigned`, `unassigned`, `ignored`.
    pub state: &'static str,
    pub size: Option<u64>,
    pub start: Option<u64>,
    pub assigned: bool,
    pub io: bool,
    pub mem64: bool,
    pub prefetchable: bool,
    /// Where the size came from: `sysfs`, `kernel_log`, `sibling`, `lspci`, or null.
    pub size_source: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnassignedBar {
    pub bdf: PciAddress,
    pub bar: u8,
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Capacity {
    /// 64-bit prefetchable space the selected GPUs need, aligned as a
    /// bridge-window allocator must place it.
    pub needed_bytes: Option<u64>,
    /// Total size of the 64-bit (above 4 GiB) root bus windows.
    pub window_bytes: Option<u64>,
    pub windows: Vec<WindowReport>,
    /// CPU physical address bits (`address sizes` in /proc/cpuinfo).
    pub phys_bits: Option<u32>,
    /// The highest address + 1 the needed space would reach if packed into
    /// the first 64-bit window (what the CPU must be able to address).
    pub needed_end: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    pub start: u64,
    pub end: u64,
    pub size: u64,
    /// `iomem`, `kernel_log`.
    pub source: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintReport {
    pub id: &'static str,
    pub text: String,
}

impl Report {
    pub fn has_hint(&self, id: &str) -> bool {
        self.hints.iter().any(|h| h.id == id)
    }
}
