//! gpu-preflight: find GPUs whose PCI BARs were left unassigned, say why with
//! the numbers, and name the fix for this hypervisor.
//!
//! The pipeline, one folder per layer; a layer uses only those above it in
//! this list (tests/layers.rs checks it):
//!
//! - `model`: the values (PCI addresses, BARs, ranges, firmware, selection)
//! - `parse`: text in, model values out; pure, where the tests and fuzzers point
//! - `read`: files under one root (sysfs, /proc, DMI, the kernel log, the config)
//! - `evidence`: everything the diagnosis needs, from a system or from text
//! - `decide`: sizing, the diagnosis, its summary, the hints
//! - `report`: one report, rendered as text, JSON, Prometheus or kernel-log records
//! - `atomic_file`, `remediate`: changing boot configuration, atomically and once
//! - `commands`: check, explain, plan, boot, publish, remediate
//! - `cli`: arguments, dispatch, exit statuses

mod atomic_file;
mod cli;
mod commands;
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
