//! Deciding: how much space the GPUs need (`sizing`) and whether the room
//! a window has is room the kernel can use (`room`), which one diagnosis
//! the evidence supports (`diagnosis`), the verdict and the sentence that
//! says why (`summary`); for a QEMU guest, how its firmware makes the
//! window (`window`), the guest as the model sees it (`predict`), what the
//! evidence says of its setup (`origin`) and which changes make every GPU
//! fit (`prescribe`); and what to change (`hints`; elsewhere `fallback`,
//! with `space` for which space fell short), in the vocabulary of `hint`,
//! each platform's lines written by `syntax`; peer-to-peer's gates
//! (`p2p`); and all of it for one input in one value (`decision`), which
//! the report renders. Each module uses only those before it in
//! tests/layers.rs's `DECIDE` list.

pub(crate) mod decision;
pub(crate) mod diagnosis;
pub(crate) mod fallback;
pub(crate) mod hint;
pub(crate) mod hints;
pub(crate) mod host;
pub(crate) mod origin;
pub(crate) mod p2p;
pub(crate) mod passthrough;
pub(crate) mod predict;
pub(crate) mod prescribe;
pub(crate) mod room;
pub(crate) mod sizing;
pub(crate) mod space;
pub(crate) mod summary;
pub(crate) mod syntax;
pub(crate) mod window;

pub(crate) use decision::{conclude, Decision};

#[cfg(test)]
mod tests;
