//! Xen's own messages about a passed-through device: its refusals
//! (`refusal`), and its device model about the device's interrupts
//! (`interrupts`, `HostMessage::XenPtInterrupts`): QEMU's `xen_pt` (hw/xen/xen_pt.c,
//! xen_pt_msi.c, xen_pt_config_init.c; each line after the guest's
//! `[BB:DD.F]`) and qemu-traditional in a stubdomain (its `pass-through.c`,
//! the same words after the function's name). These lines are what a
//! Xen user pastes from `/var/log/xen/qemu-dm-*.log` or a stubdomain's
//! console when a passed-through GPU misbehaves; none of them is about
//! BAR space.

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
    // XEN_PT_ERR in xen_pt.c `xen_pt_realize` ("Mapping machine irq %u to
    // pirq %i failed", "Binding of interrupt %i failed!", qemu-traditional's
    // "Binding of interrupt failed! rc=%d") and in xen_pt_msi.c
    // `msi_msix_setup`, `msi_msix_update`, `msi_msix_disable` ("Mapping of
    // MSI%s (rc: ...)", "Updating of MSI%s failed.", "Unbinding of MSI%s
    // failed.", "Unmapping of MSI%s pirq %d failed.").
    const FAILED: [(&str, &str); 6] = [
        ("Mapping machine irq ", " failed"),
        ("Binding of interrupt ", "failed!"),
        ("Mapping of MSI", "(rc: "),
        ("Updating of MSI", " failed."),
        ("Unbinding of MSI", " failed."),
        ("Unmapping of MSI", " failed."),
    ];
    // XEN_PT_LOG in xen_pt_msi.c ("MSI mapped with pirq %d.", qemu-
    // traditional's lower-case "msi mapped with pirq %x"; "Updating MSI%s
    // with pirq %d gvec ..."; "Unbind MSI%s with pirq"; "Unmap MSI%s pirq")
    // and xen_pt_config_init.c `xen_pt_msgctrl_reg_write` ("setup MSI
    // (register: %x).").
    const TRACE: [(&str, &str); 5] = [
        ("MSI mapped with pirq ", ""),
        ("Updating MSI", " with pirq "),
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
        assert_eq!(
            interrupts(
                "[00:06.0] msi_msix_setup: Error: Mapping of MSI-X (rc: -22, vec: 0x30, entry 0x1)"
            ),
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
        assert_eq!(interrupts(""), None);
    }
}
