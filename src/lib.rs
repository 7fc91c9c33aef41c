//! gpu-preflight: find GPUs whose PCI BARs were left unassigned, say why with
//! the numbers, and name the fix for this hypervisor.
//!
//! The pipeline, one folder per layer; a layer uses only those above it in
//! this list, and `decide` and `report` no `read` (tests/layers.rs checks
//! it, with the size rules: no production file over 500 lines, no function
//! over 150):
//!
//! - `model`: the values (PCI addresses, BARs, ranges, firmware and
//!   platform, CPUID's view, releases, P2P values, selection)
//! - `parse`: text in, model values out; pure, where the tests and fuzzers point
//! - `read`: files under one root (sysfs, /proc, DMI, the kernel log, the
//!   config, ACPI and IOMMU units, the host's files for `plan`) and CPUID;
//!   the only layer that opens a file, but for `atomic_file`, `remediate`,
//!   the boot and publish steps and the fuzz entry points
//! - `evidence`: everything a command decides on, read once: from a
//!   system, from text, or the host for `plan`
//! - `decide`: sizing, the diagnosis, the firmware-window model, the
//!   prescriptions and hints in each platform's syntax, the P2P gates, the
//!   verdict; all of it for one input in one `Decision`
//! - `report`: the report of a decision, rendered as text, JSON, Prometheus
//!   or kernel-log records; it decides nothing
//! - `atomic_file`, `remediate`: changing boot configuration, atomically and once
//! - `deadline`: work in a child process that a parent abandons at a
//!   deadline (the boot step)
//! - `commands`: check, explain, plan, boot, publish, remediate
//! - `cli`: arguments, dispatch, exit statuses
//! - `fuzz` (hidden): the fuzz targets' entry points

mod atomic_file;
mod cli;
mod commands;
mod deadline;
mod decide;
mod evidence;
#[doc(hidden)]
pub mod fuzz;
mod model;
mod parse;
mod read;
mod remediate;
mod report;

pub use cli::main;
#[doc(hidden)]
pub use cli::manual;
