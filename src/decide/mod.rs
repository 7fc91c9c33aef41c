//! Deciding: how much space the GPUs need (`sizing`), which one diagnosis
//! the evidence supports (`diagnosis`), the sentence that says why
//! (`summary`), and what to change (`hints`).

pub(crate) mod diagnosis;
pub(crate) mod firmware;
pub(crate) mod hints;
pub(crate) mod prescribe;
pub(crate) mod sizing;
pub(crate) mod summary;
