//! The model: what the pipeline knows about a machine, as plain values.
//!
//! Nothing here reads a file or parses text. `parse` turns text into these
//! values, `read` fetches the text, `evidence` gathers them into one
//! `Evidence` for `decide`.

pub(crate) mod bar;
pub(crate) mod fw_cfg;
pub(crate) mod layer;
pub(crate) mod p2p;
pub(crate) mod pci;
pub(crate) mod platform;
pub(crate) mod range;
pub(crate) mod release;
pub(crate) mod select;
pub(crate) mod size;
