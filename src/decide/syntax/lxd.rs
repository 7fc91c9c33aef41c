//! LXD (and Incus): QEMU arguments in the instance's `raw.qemu`. The hints
//! give it for OVMF's aperture, the setting LXD's users were found to
//! need (LXD issue 14381, tests/corpus/02); LXD sets the machine's other
//! properties itself.

use super::{qemu, Syntax};
use crate::decide::hint::Change;

pub(super) struct Lxd;

impl Syntax for Lxd {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let fw_cfg = Change {
            fw_cfg: c.fw_cfg.clone(),
            ..Change::default()
        };
        let args = qemu::args(&fw_cfg);
        (!args.is_empty()).then(|| format!("LXD: `raw.qemu: {}`", args.join(" ")))
    }
}
