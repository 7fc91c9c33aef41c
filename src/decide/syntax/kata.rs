//! Kata Containers: the runtime's `configuration.toml`, which decides how
//! a container's devices are plugged into its VM.

use super::Syntax;
use crate::decide::hint::Change;

pub(super) struct Kata;

impl Syntax for Kata {
    fn phrase(&self, c: &Change, _gpus: usize) -> Option<String> {
        let p = &c.pcie_root_port_properties;
        if p.is_empty() {
            return None;
        }
        // Kata sizes its root ports' reservations itself: the 64-bit room
        // comes with plugging the device at boot on a root port of its
        // own; the room below 4 GiB, only from a release that sizes it.
        Some(if p.iter().any(|(k, _)| k == "pref64-reserve") {
            "Kata Containers: `hotplug_vfio_on_root_bus = true` and `pcie_root_port = 1` in configuration.toml".into()
        } else {
            "Kata Containers: a release that sizes the root port's reservation (`pcie_root_port = 1`)".into()
        })
    }
}
