//! Deciding: how much space the GPUs need (`sizing`), which one diagnosis
//! the evidence supports (`diagnosis`), the sentence that says why
//! (`summary`); for a QEMU guest, how its firmware makes the window
//! (`firmware`), what the evidence says of its setup (`origin`) and which
//! changes make every GPU fit (`prescribe`); and what to change (`hints`;
//! elsewhere `fallback`, with `space` for which space fell short).

pub(crate) mod diagnosis;
pub(crate) mod fallback;
pub(crate) mod hint;
pub(crate) mod hints;
pub(crate) mod origin;
pub(crate) mod p2p;
pub(crate) mod predict;
pub(crate) mod prescribe;
pub(crate) mod sizing;
pub(crate) mod space;
pub(crate) mod summary;
pub(crate) mod syntax;
pub(crate) mod window;

#[cfg(test)]
mod tests;
