//! Reading the machine: every path joined to one `Root`, every file read
//! lossily, every problem a warning that names the file. The text goes to
//! `parse`; nothing here decides anything.

pub(crate) mod config;
pub(crate) mod cpuid;
pub(crate) mod fw_cfg;
pub(crate) mod host;
pub(crate) mod iommu;
pub(crate) mod kmsg;
pub(crate) mod root;
pub(crate) mod sysfs;
pub(crate) mod system;
