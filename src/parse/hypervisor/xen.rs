//! Xen's own messages about a passed-through device: its refusals
//! (`refusal`), and its device model about the device's interrupts
//! (`interrupts`, `HostMessage::XenPtInterrupts`): QEMU's `xen_pt`
//! (hw/xen/xen_pt.c, xen_pt_msi.c, xen_pt_config_init.c; each line after
//! the guest's `[BB:DD.F]`) or qemu-traditional (hw/pass-through.c,
//! hw/pt-msi.c: after the function's name, some words in lower case), in
//! dom0 or a stubdomain. These lines are what a Xen user pastes from
//! `/var/log/xen/qemu-dm-*.log` or a stubdomain's console when a
//! passed-through GPU misbehaves; none of them is about BAR space.

use super::HostMessage;

/// Xen refusing a device or its BAR, each a `HostMessage` (see there):
/// pcifront's `Could not claim resource ... Device offline.` in a PV guest;
/// the hypervisor's VT-d `It's disallowed to assign ... with shared RMRR`
/// (its `risky` form is a warning); QEMU's `Need to enable igd-passthru`.
pub(super) fn refusal(line: &str) -> Option<HostMessage> {
    if line.contains("Could not claim resource") && line.contains("Device offline") {
        Some(HostMessage::XenPcifrontClaim)
    } else if line.contains("It's disallowed to assign") && line.contains("with shared RMRR") {
        Some(HostMessage::XenSharedRmrr)
    } else if line.contains("Need to enable igd-passthru") {
        Some(HostMessage::XenIgdPassthru)
    } else {
        None
    }
}

/// What one line of the device model says of the device's interrupts:
/// `Some(true)` for a failure to map, bind, update or release one,
/// `Some(false)` for its trace of setting one up, `None` for any other
/// line.
pub(super) fn interrupts(line: &str) -> Option<bool> {
    // Failures. QEMU's XEN_PT_ERR: xen_pt.c `xen_pt_realize` ("Mapping
    // machine irq %u to pirq %i failed", "Binding of interrupt %i failed!",
    // before 2020 "Binding of interrupt %u failed: <error>"), xen_pt_msi.c
    // `msi_msix_setup` ("Mapping of MSI%s (err: %i, ...)", "(rc: %i, ...)"
    // in older releases), `msi_msix_update` ("Updating of MSI%s failed."),
    // `msi_msix_disable` ("Unbinding of MSI%s failed.", "Unmapping of MSI%s
    // pirq %d failed."), `xen_pt_msix_update_remap` ("unbind MSI-X entry %d
    // failed"), xen_pt_config_init.c `xen_pt_msgctrl_reg_write` ("Can not
    // map MSI (register: %x)!"). qemu-traditional: "Binding of interrupt
    // failed! rc=%d", and in pt-msi.c "Mapping of MSI failed.", "Binding of
    // MSI failed.", "Mapping msix entry %x", "Updating msix irq info for
    // entry %d". Each head with a tail, so that prose does not match.
    const FAILED: [(&str, &str); 13] = [
        ("Mapping machine irq ", " failed"),
        ("Binding of interrupt", " failed"),
        ("Mapping of MSI", "(err: "),
        ("Mapping of MSI", "(rc: "),
        ("Mapping of MSI", " failed"),
        ("Binding of MSI", " failed"),
        ("Updating of MSI", " failed"),
        ("Unbinding of MSI", " failed"),
        ("Unmapping of MSI", " failed"),
        ("unbind MSI-X entry ", " failed"),
        ("Can not map MSI (register: ", ")"),
        ("Error: Mapping msix entry ", ""),
        ("Error: Updating msix irq info for entry ", ""),
    ];
    // The trace. QEMU's XEN_PT_LOG in xen_pt_msi.c ("MSI mapped with pirq
    // %d.", "Updating MSI%s with pirq %d gvec ...", "Unbind MSI%s with
    // pirq", "Unmap MSI%s pirq") and xen_pt_config_init.c
    // `xen_pt_msgctrl_reg_write` ("setup MSI (register: %x)."); qemu-
    // traditional's "msi mapped with pirq %x", "Update msi with pirq %x".
    const TRACE: [(&str, &str); 6] = [
        ("MSI mapped with pirq ", ""),
        ("Updating MSI", " with pirq "),
        ("Update MSI with pirq ", ""),
        ("Unbind MSI", " with pirq "),
        ("Unmap MSI", " pirq "),
        ("setup MSI (register: ", ")"),
    ];
    let has = |(head, tail): &(&str, &str)| {
        find_nocase(line, head).is_some_and(|at| line[at + head.len()..].contains(tail))
    };
    if FAILED.iter().any(has) {
        Some(true)
    } else if TRACE.iter().any(has) {
        Some(false)
    } else {
        None
    }
}

/// QEMU's xen_pt took a device for the guest: hw/xen/xen_pt.c
/// `xen_pt_realize()`'s `Real physical device %02x:%02x.%d registered
/// successfully`, after it registered each of the device's regions at
/// the host's addresses (`xen_pt_register_regions`; the seventh
/// collection's e02).
pub(super) fn registered(line: &str) -> bool {
    line.find("xen_pt_realize: Real physical device ")
        .is_some_and(|at| line[at..].contains(" registered successfully"))
}

/// Where `needle` (ASCII) starts in `hay`, ignoring ASCII case:
/// qemu-traditional writes "msi" where QEMU writes "MSI".
fn find_nocase(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_models_interrupt_lines_and_nothing_else() {
        // Failures, both device models (corpus 272 for qemu-traditional).
        assert_eq!(
            interrupts("register_real_device: Error: Binding of interrupt failed! rc=-1"),
            Some(true)
        );
        assert_eq!(
            interrupts("[00:05.0] xen_pt_realize: Error: Binding of interrupt 0 failed! (err: 1)"),
            Some(true)
        );
        assert_eq!(
            interrupts("[00:05.0] xen_pt_realize: Error: Mapping machine irq 16 to pirq -1 failed, (err: 1)"),
            Some(true)
        );
        // Today's wording (a Qubes log on xen-devel, 2025) and the older.
        assert_eq!(
            interrupts(
                "[00:06.0] msi_msix_setup: Error: Mapping of MSI-X (err: 19, vec: 0xef, entry 0x0)"
            ),
            Some(true)
        );
        assert_eq!(
            interrupts(
                "[00:06.0] msi_msix_setup: Error: Mapping of MSI-X (rc: -22, vec: 0x30, entry 0x1)"
            ),
            Some(true)
        );
        assert_eq!(
            interrupts(
                "[00:06.0] xen_pt_msgctrl_reg_write: Warning: Can not map MSI (register: 87)!"
            ),
            Some(true)
        );
        assert_eq!(
            interrupts("pt_msi_setup: Error: Mapping of MSI failed."),
            Some(true)
        );
        assert_eq!(
            interrupts("pt_msgctrl_reg_write: Error: Binding of MSI failed."),
            Some(true)
        );
        assert_eq!(
            interrupts(
                "[00:05.0] xen_pt_realize: Binding of interrupt 0 failed: Operation not permitted"
            ),
            Some(true)
        );
        assert_eq!(
            interrupts("[00:06.0] xen_pt_msix_update_remap: Error: unbind MSI-X entry 86 failed"),
            Some(true)
        );
        assert_eq!(
            interrupts("pt_msix_update_one: Error: Mapping msix entry 3"),
            Some(true)
        );
        assert_eq!(
            interrupts("[00:06.0] msi_msix_update: Error: Updating of MSI failed. (rc: -22)"),
            Some(true)
        );
        // The trace of setting them up (corpus 275), either case.
        assert_eq!(
            interrupts(
                "[2024-01-09 23:29:52] [00:07.0] xen_pt_msi_setup: MSI mapped with pirq 87."
            ),
            Some(false)
        );
        assert_eq!(
            interrupts("pt_msi_setup: msi mapped with pirq 37"),
            Some(false)
        );
        assert_eq!(
            interrupts("[00:06.0] msi_msix_update: Updating MSI-X with pirq 86 gvec 0x20 gflags 0x14 (entry: 0x0)"),
            Some(false)
        );
        assert_eq!(
            interrupts("[00:06.0] xen_pt_msgctrl_reg_write: setup MSI (register: 81)."),
            Some(false)
        );
        assert_eq!(
            interrupts("[00:06.0] msi_msix_disable: Unmap MSI pirq 86"),
            Some(false)
        );
        // Not these: the guest kernel's own MSI words, a BAR line, prose.
        assert_eq!(interrupts("xen: msi already bound to pirq=33"), None);
        assert_eq!(
            interrupts(
                "pt_register_regions: IO region registered (size=0x00004000 base_addr=0xf7d60000)"
            ),
            None
        );
        assert_eq!(interrupts("Updating MSI firmware failed"), None);
        assert_eq!(interrupts("the linear mapping of MSI identifiers"), None);
        assert_eq!(
            interrupts("pt_msi_update: Update msi with pirq 37 gvec 0x51"),
            Some(false)
        );
        assert_eq!(interrupts(""), None);
    }
}
