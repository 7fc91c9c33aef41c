//! The `check` pipeline: read sysfs and the kernel log under a root, model
//! devices and BARs, diagnose, hint, and hand back one `Report`.

use crate::report::Report;
use crate::root::Root;
use crate::select::Selector;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub root: Root,
    /// Kernel log text file (dmesg or `journalctl -k`) instead of `/dev/kmsg`.
    pub dmesg: Option<PathBuf>,
    /// Replaces the default GPU selection when non-empty.
    pub selectors: Vec<Selector>,
    pub expect: Option<usize>,
}

#[derive(Debug)]
pub enum CheckError {
    /// No PCI devices directory under the root: nothing can be inspected.
    NoSysfs(PathBuf, std::io::Error),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::NoSysfs(p, e) => write!(f, "cannot list PCI devices in {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for CheckError {}

pub fn run(_opts: &CheckOptions) -> Result<Report, CheckError> {
    unimplemented!("check pipeline")
}
