//! Parsers: text (or a config space byte slice) in, model values out.
//!
//! Every function here is pure: no file is opened, nothing is printed. That
//! is what the unit tables, the property tests and the fuzz targets point
//! at. Bad input never panics: a malformed piece becomes `None` or an error
//! value, and the rest of the text still counts.

pub(crate) mod address;
pub(crate) mod board;
pub(crate) mod cmdline;
pub(crate) mod fw_cfg;
pub(crate) mod hex;
pub(crate) mod hypervisor;
pub(crate) mod iommu;
pub(crate) mod kernel_log;
pub(crate) mod libvirt;
pub(crate) mod lspci;
pub(crate) mod nccl;
pub(crate) mod p2p_text;
pub(crate) mod paste;
pub(crate) mod pci_caps;
pub(crate) mod platform;
pub(crate) mod procfs;
pub(crate) mod proxmox;
pub(crate) mod qemu_args;
pub(crate) mod qemu_info_pci;
pub(crate) mod release;
pub(crate) mod resource;
pub(crate) mod selector;
pub(crate) mod settings;
pub(crate) mod size;
pub(crate) mod words;
