//! gpu-preflight: find GPUs whose PCI BARs were left unassigned, say why with
//! the numbers, and name the fix for this hypervisor.
//!
//! The pipeline, one module per step:
//! - read sysfs and the kernel log: `root`, `sysfs`, `system`, `kmsg`, `cmdline`
//! - model devices and BARs: `pci`, `bars`, `select`, `kernel_log`, `lspci_text`, `names`
//! - diagnose and hint: `diagnosis`, `hints`
//! - report: `report`
//! - (optionally) remediate: `remediate`, with `atomic_file`
//!
//! The commands: `check`, `explain`, `boot` (the initramfs step, with
//! `settings`), `publish` (the running system's hand-off), `cli`.

pub mod atomic_file;
pub mod bars;
pub mod boot;
pub mod check;
pub mod cli;
pub mod cmdline;
pub mod diagnosis;
pub mod explain;
pub mod hints;
pub mod kernel_log;
pub mod kmsg;
pub mod lspci_text;
pub mod names;
pub mod pci;
pub mod publish;
pub mod remediate;
pub mod report;
pub mod root;
pub mod select;
pub mod settings;
pub mod sizing;
pub mod sysfs;
pub mod system;
