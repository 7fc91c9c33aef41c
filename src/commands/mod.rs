//! The commands, each one pipeline: gather the evidence (the one step
//! that reads), decide (`decide::conclude`, or plan's model), build the
//! report, and for some act. Their options are plain values: `cli` parses the
//! command line into them and turns their outcome into an exit status.

pub(crate) mod boot;
pub(crate) mod check;
pub(crate) mod explain;
pub(crate) mod plan;
pub(crate) mod publish;
pub(crate) mod remediate;

/// Where the boot step leaves its files for the running system: carried
/// into the real root by both dracut and initramfs-tools.
pub(crate) const OUT_DIR: &str = "/run/gpu-preflight";
pub(crate) const REPORT_FILE: &str = "report.json";
pub(crate) const METRICS_FILE: &str = "metrics.prom";
