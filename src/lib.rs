//! gpu-preflight: find GPUs whose PCI BARs were left unassigned, say why with
//! the numbers, and name the fix for this hypervisor.
//!
//! The pipeline, one module per step:
//! read sysfs and the kernel log (`root`, `sysfs`, `kmsg`, `sources`)
//! -> model devices and BARs (`pci`, `bars`, `select`, `kernel_log`)
//! -> diagnose (`diagnosis`) -> hint (`hints`) -> report (`report`)
//! -> optionally remediate (`remediate`).

pub mod check;
pub mod cli;
pub mod cmdline;
pub mod kernel_log;
pub mod lspci_text;
pub mod pci;
pub mod report;
pub mod root;
pub mod select;
pub mod bars;
pub mod sysfs;
pub mod system;
pub mod diagnosis;
pub mod names;
pub mod hints;
pub mod kmsg;
pub mod explain;
pub mod atomic_file;
pub mod boot;
pub mod publish;
pub mod remediate;
pub mod settings;
