//! VMware's own messages about a VM's passthrough devices
//! (`HostMessage`), as `vmware.log` and the vSphere client print them.

use super::HostMessage;
use crate::parse::hex::decimal_after;

/// VMware's vmx (bora/devices/pcipassthru), as the Dell and Broadcom
/// knowledge base articles quote `vmware.log`: `PCIPassthru: total number
/// of pages needed (4206594) exceeds limit (917504), failing`.
pub(super) fn vmware_pages(line: &str) -> Option<HostMessage> {
    let at = line.find("total number of pages needed (")?;
    let rest = &line[at..];
    Some(HostMessage::VmwarePages {
        needed: decimal_after(rest, "needed (")?,
        limit: decimal_after(rest, "exceeds limit (")?,
    })
}

/// VMware's power-on failure, `Module 'DevicePowerOn' power on failed.`
/// (`vmware.log`, the vSphere client's task error; corpus 144). The
/// module's name is an identifier the client does not translate: the
/// Simplified Chinese client prints `模块“DevicePowerOn”打开电源失败`
/// (corpus 276). So the name in quotes of any kind is the message,
/// whatever the language around it; a bare word in prose is not.
pub(super) fn vmware_power_on(line: &str) -> bool {
    const NAME: &str = "DevicePowerOn";
    let mut from = 0;
    while let Some(i) = line[from..].find(NAME) {
        let at = from + i;
        let before = line[..at].chars().next_back();
        let after = line[at + NAME.len()..].chars().next();
        let quote = |c: Option<char>| {
            matches!(
                c,
                Some('\'' | '"' | '`' | '\u{2018}' | '\u{2019}' | '\u{201c}' | '\u{201d}')
                    | Some('\u{300c}' | '\u{300d}' | '\u{ab}' | '\u{bb}')
            )
        };
        if quote(before) && quote(after) {
            return true;
        }
        from = at + NAME.len();
    }
    false
}

/// VMware could not give a virtual device a PCI Express slot: `Vmxnet3
/// PCI: failed to reserve slot for vmxnet3 PCIe device` (`vmware.log`,
/// corpus 215), after which the power-on fails.
fn vmware_slot(line: &str) -> bool {
    line.contains("PCI: failed to reserve slot for")
}

/// VMware Workstation's power-on error when its host modules are not
/// loaded for the running kernel: `Failed to open device "/dev/vmci": ...
/// Please make sure that the kernel module 'vmci' is loaded.` (and the
/// same for `/dev/vmmon`; the seventh collection's b04, Workstation 17.6).
/// The device's path, or the module advice with one of VMware's module
/// names.
fn vmware_host_module(line: &str) -> bool {
    let device = ["/dev/vmci", "/dev/vmmon"].iter().any(|d| {
        line.contains(&format!("open device \"{d}\""))
            || line.contains(&format!("Could not open {d}"))
    });
    let advice = line.contains("Please make sure that the kernel module ")
        && ["vmci", "vmmon", "vmnet"]
            .iter()
            .any(|m| line.contains(&format!("'{m}'")) || line.contains(&format!("`{m}'")));
    device || advice
}

/// ESXi's own PCIe hot-plug driver took a passed-through device out of its
/// slot: `PCIEHP: 1496: 0000:a8:01.0: hotplug slot:0x1 (0000:a9:00.0)
/// Adapter removed.` (`vmkernel.log`, as Broadcom's knowledge base article
/// "VM with GPU in passthrough mode fails to start on HPE server" quotes it:
/// the slot's hot-plug events at power-on, avoided by turning ESXi's PCIe
/// device hot-plug off).
fn esxi_hotplug_removed(line: &str) -> bool {
    line.find("PCIEHP: ")
        .is_some_and(|at| line[at..].contains(" Adapter removed"))
}

/// VMware's messages a line is by its words alone: a slot it could not
/// reserve, ESXi's hot-plug removal, Workstation's host module missing.
pub(super) fn notes(line: &str) -> impl Iterator<Item = HostMessage> {
    [
        (vmware_slot(line), HostMessage::VmwareSlot),
        (esxi_hotplug_removed(line), HostMessage::EsxiHotplugRemoved),
        (vmware_host_module(line), HostMessage::VmwareHostModule),
    ]
    .into_iter()
    .filter_map(|(said, m)| said.then_some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_power_on_failure_in_any_language_but_not_in_prose() {
        assert!(vmware_power_on(
            "2022-04-22T03:04:15.771Z| vmx| | I005: Module 'DevicePowerOn' power on failed."
        ));
        assert!(vmware_power_on(
            "\u{5931}\u{8d25} - \u{6a21}\u{5757}\u{201c}DevicePowerOn\u{201d}\u{6253}\u{5f00}\u{7535}\u{6e90}\u{5931}\u{8d25}\u{3002}"
        ));
        assert!(vmware_power_on(
            "Failed - Module \"DevicePowerOn\" power on failed."
        ));
        assert!(!vmware_power_on("the DevicePowerOn module failed"));
        assert!(!vmware_power_on("'DevicePowerOnX' power on failed"));
        assert!(!vmware_power_on(""));
        assert!(vmware_slot(
            "Vmxnet3 PCI: failed to reserve slot for vmxnet3 PCIe device"
        ));
        assert!(!vmware_slot("PCI: reserved slot for vmxnet3"));
        assert!(esxi_hotplug_removed(
            "[YYYY-MM-DDTHH:MM:SS] cpu98:2097948)PCIEHP: 1496: 0000:a8:01.0: hotplug slot:0x1 (0000:a9:00.0) Adapter removed."
        ));
        assert!(!esxi_hotplug_removed(
            "cpu3:2097947)PCIEHP: 1477: 0000:a8:01.0: hotplug slot:0x1 (0000:a9:00.0) Adapter inserted."
        ));
        assert!(!esxi_hotplug_removed(
            "pciehp 0000:00:1c.0: Adapter removed"
        ));
    }
}
