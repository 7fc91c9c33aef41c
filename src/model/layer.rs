//! The management layer over a QEMU guest (KubeVirt, OpenStack Nova,
//! LXD, Incus), from the DMI strings each writes into its guests by
//! default. `decide::syntax` gives its settings first.

use super::platform::Firmware;
use serde::Serialize;

/// The tool that manages a QEMU guest, where the guest's DMI names it: the
/// hints give its settings first (`decide::syntax`). Each is QEMU
/// underneath, so its guest is a QEMU guest whatever DMI's system vendor
/// says. Proxmox VE, libvirt and plain QEMU leave no such sign by default
/// (qemu-server's `smbios1` holds only a uuid, and pve-qemu's "Allow version
/// code in machine type" strips `+pveN` before the machine's name, which
/// SMBIOS writes), so their guests get the generic lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Layer {
    /// KubeVirt: SMBIOS type 1 `KubeVirt`/`None`/family `KubeVirt`
    /// (kubevirt pkg/virt-config/virt-config.go, `SmbiosConfigDefault*`,
    /// written by virt-launcher's converter/compute/sysinfo.go; a cluster's
    /// `spec.configuration.smbios` can replace them).
    #[serde(rename = "kubevirt")]
    KubeVirt,
    /// OpenStack Nova's libvirt driver: type 1 `OpenStack Foundation` /
    /// `OpenStack Nova`, family `Virtual Machine` (nova/version.py
    /// `NOVA_VENDOR`, `NOVA_PRODUCT`; nova/virt/libvirt/driver.py
    /// `_get_guest_config_sysinfo`); distributions ship `OpenStack Compute`
    /// as the product (cloud-init's DataSourceOpenStack reads both).
    #[serde(rename = "openstack")]
    OpenStack,
    /// LXD: board `Canonical Ltd.`/`LXD` (lxd/instance/drivers/driver_qemu.go,
    /// `-smbios type=2,manufacturer=Canonical Ltd.,product=LXD`).
    #[serde(rename = "lxd")]
    Lxd,
    /// Incus: board `LinuxContainers`/`Incus`
    /// (internal/server/instance/drivers/driver_qemu.go, `-smbios
    /// type=2,manufacturer=LinuxContainers,product=Incus`).
    #[serde(rename = "incus")]
    Incus,
}

impl Layer {
    /// Its name as its users write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layer::KubeVirt => "KubeVirt",
            Layer::OpenStack => "OpenStack",
            Layer::Lxd => "LXD",
            Layer::Incus => "Incus",
        }
    }
}

impl Firmware {
    /// The management layer DMI names, if any (`Layer` says each one's
    /// strings and their source). The kernel's `DMI:` line joins vendor
    /// and product in one string and prints no board vendor, so a
    /// vendor that holds the name, and a board name alone, count too.
    pub(crate) fn layer(&self) -> Option<Layer> {
        let vendor = self.sys_vendor.as_deref().unwrap_or("");
        let product = self.product_name.as_deref().unwrap_or("");
        let family = self.product_family.as_deref().unwrap_or("");
        let board_vendor = self.board_vendor.as_deref();
        let board = self.board_name.as_deref().unwrap_or("");
        if vendor.starts_with("KubeVirt") || family == "KubeVirt" {
            return Some(Layer::KubeVirt);
        }
        let nova = ["OpenStack Nova", "OpenStack Compute"];
        if vendor.starts_with("OpenStack Foundation")
            || nova
                .iter()
                .any(|n| product == *n || vendor.ends_with(&format!(" {n}")))
        {
            return Some(Layer::OpenStack);
        }
        match (board_vendor, board) {
            (Some("Canonical Ltd.") | None, "LXD") => Some(Layer::Lxd),
            (Some("LinuxContainers") | None, "Incus") => Some(Layer::Incus),
            _ => None,
        }
    }

    /// `Canonical Ltd. LXD`: the board, where it is what names the layer.
    pub(crate) fn layer_board(&self) -> Option<String> {
        matches!(self.layer(), Some(Layer::Lxd | Layer::Incus)).then(|| {
            let by = self
                .board_vendor
                .as_deref()
                .map_or(String::new(), |v| format!("{v} "));
            format!("{by}{}", self.board_name.as_deref().unwrap_or(""))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::{Confidence, Platform, QemuMachine};

    /// Each layer's default DMI strings (`Layer` names their sources), as
    /// sysfs gives them and as the kernel's `DMI:` line joins them.
    #[test]
    fn management_layers_from_their_default_dmi() {
        let dmi =
            |vendor: &str, product: &str, family: Option<&str>, board: Option<(&str, &str)>| {
                Firmware {
                    bios_vendor: Some("SeaBIOS".into()),
                    sys_vendor: Some(vendor.into()),
                    product_name: (!product.is_empty()).then(|| product.into()),
                    product_version: Some("pc-q35-9.0".into()),
                    product_family: family.map(str::to_string),
                    board_vendor: board.map(|b| b.0.to_string()),
                    board_name: board.map(|b| b.1.to_string()),
                    ..Firmware::default()
                }
            };
        let q35 = "Standard PC (Q35 + ICH9, 2009)";
        for (what, fw, want) in [
            (
                "KubeVirt",
                dmi("KubeVirt", "None", Some("KubeVirt"), None),
                Some(Layer::KubeVirt),
            ),
            (
                "KubeVirt's log line",
                dmi("KubeVirt None", "", None, None),
                Some(Layer::KubeVirt),
            ),
            (
                "Nova",
                dmi(
                    "OpenStack Foundation",
                    "OpenStack Nova",
                    Some("Virtual Machine"),
                    None,
                ),
                Some(Layer::OpenStack),
            ),
            (
                "a distribution's Nova",
                dmi(
                    "Red Hat",
                    "OpenStack Compute",
                    Some("Virtual Machine"),
                    None,
                ),
                Some(Layer::OpenStack),
            ),
            (
                "Nova's log line",
                dmi("OpenStack Foundation OpenStack Nova", "", None, None),
                Some(Layer::OpenStack),
            ),
            (
                "LXD",
                dmi("QEMU", q35, None, Some(("Canonical Ltd.", "LXD"))),
                Some(Layer::Lxd),
            ),
            (
                "Incus",
                dmi("QEMU", q35, None, Some(("LinuxContainers", "Incus"))),
                Some(Layer::Incus),
            ),
            ("plain QEMU", dmi("QEMU", q35, None, None), None),
            (
                "another board named LXD",
                dmi("QEMU", q35, None, Some(("ACME", "LXD"))),
                None,
            ),
        ] {
            assert_eq!(fw.layer(), want, "{what}");
            // Each runs QEMU: its guest is a QEMU guest, with the layer in
            // the signs.
            let j = fw.judge();
            assert_eq!(
                (j.platform, j.confidence),
                (Platform::Qemu, Some(Confidence::High)),
                "{what}"
            );
        }
        // KubeVirt writes its own product: the machine is in the version.
        let kv = dmi("KubeVirt", "None", Some("KubeVirt"), None);
        assert_eq!(kv.qemu_machine(), Some(QemuMachine::Q35));
        let lxd = dmi("QEMU", q35, None, Some(("Canonical Ltd.", "LXD")));
        assert_eq!(
            lxd.judge().signs,
            ["DMI: QEMU Standard PC (Q35 + ICH9, 2009), board Canonical Ltd. LXD"]
        );
        // Before, a KubeVirt or Nova vendor was another VM's; a VM that
        // names no layer still is.
        let xen = dmi("Xen", "HVM domU", None, None);
        assert_eq!((xen.layer(), xen.platform()), (None, Platform::OtherVm));
        for (l, s) in [
            (Layer::KubeVirt, "kubevirt"),
            (Layer::OpenStack, "openstack"),
            (Layer::Lxd, "lxd"),
            (Layer::Incus, "incus"),
        ] {
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{s}\""));
        }
    }
}
