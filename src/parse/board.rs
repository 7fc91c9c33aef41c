//! Signs in a log line that the machine is not an x86 PC: an ARM or
//! PowerPC board's PCIe host controller, its device tree, its boot loader,
//! a host bridge that translates addresses. Such a board's PCIe window is
//! its device tree's `ranges`, which no PC firmware setting grows
//! (`decide::space::board_window`).

/// Words only a machine that is not an x86 PC prints: the drivers and
/// vendors of ARM and PowerPC boards' PCIe host controllers, their device
/// tree's nodes, their boot loader, an AArch64 CPU.
pub(super) const NOT_A_PC: [(&str, &str); 18] = [
    ("/soc/pcie@", "a device-tree PCIe node (/soc/pcie@)"),
    // The Raspberry Pi 4's and 5's SoC root ports as lspci names them
    // (pci.ids 14e4:2711, 14e4:2712; older lists without the name).
    (
        "bcm2711 pcie bridge",
        "Broadcom's BCM2711 root port (a Raspberry Pi 4 or CM4)",
    ),
    (
        "bcm2712 pcie bridge",
        "Broadcom's BCM2712 root port (a Raspberry Pi 5)",
    ),
    (
        "broadcom limited device 2711",
        "Broadcom's BCM2711 root port (a Raspberry Pi 4 or CM4)",
    ),
    (
        "broadcom limited device 2712",
        "Broadcom's BCM2712 root port (a Raspberry Pi 5)",
    ),
    // pci.ids names the vendor 14e4 so since 2018; `lspci -n` and `-nn`
    // print the numbers (`0604: 14e4:2712`, `[14e4:2712]`).
    (
        "broadcom inc. and subsidiaries device 2711",
        "Broadcom's BCM2711 root port (a Raspberry Pi 4 or CM4)",
    ),
    (
        "broadcom inc. and subsidiaries device 2712",
        "Broadcom's BCM2712 root port (a Raspberry Pi 5)",
    ),
    (
        "14e4:2711",
        "Broadcom's BCM2711 root port (a Raspberry Pi 4 or CM4)",
    ),
    (
        "14e4:2712",
        "Broadcom's BCM2712 root port (a Raspberry Pi 5)",
    ),
    ("rockchip-dw-pcie", "Rockchip's PCIe host driver"),
    ("rockchip-pcie", "Rockchip's PCIe host driver"),
    ("fuzhou rockchip", "a Rockchip SoC's PCIe root port"),
    (
        "brcm-pcie",
        "Broadcom's STB PCIe host driver (a Raspberry Pi)",
    ),
    ("layerscape-pcie", "NXP's Layerscape PCIe host driver"),
    ("fsl-pci", "Freescale's PCIe host driver"),
    ("tegra-pcie", "NVIDIA Tegra's PCIe host driver"),
    ("u-boot", "the U-Boot boot loader (a device-tree board)"),
    ("aarch64", "an AArch64 CPU"),
];

/// The sign in one line that the machine is not an x86 PC, if any: one of
/// `NOT_A_PC`, or a bridge's non-prefetchable window (or a 32-bit BAR) at
/// a CPU address above 4 GiB. Such a window's bus addresses are 32-bit, so
/// the host bridge translates them: x86 host bridges do not, device-tree
/// ones (`ranges`) do.
pub(super) fn not_a_pc(line: &str, lower: &str) -> Option<String> {
    if let Some((_, what)) = NOT_A_PC.iter().find(|(w, _)| lower.contains(w)) {
        return Some(what.to_string());
    }
    if lspci_device_tree_node(lower) {
        return Some("a PCI device's node in the device tree (lspci's `Device tree node:`)".into());
    }
    if let Some(start) = lspci_32bit_above_4g(lower) {
        return Some(format!(
            "a 32-bit BAR at CPU address {start:#x} (lspci), above 4 GiB: a host bridge that translates addresses"
        ));
    }
    let device_line = lower.contains("bridge window [mem 0x")
        || lower.contains("bar ")
        || lower.contains("reg 0x");
    if !device_line {
        return None;
    }
    let at = line.find("[mem 0x")?;
    let res = &line[at + "[mem ".len()..line[at..].find(']').map(|e| at + e)?];
    if res.contains("64bit") || res.contains("pref") || res.contains("window") {
        return None;
    }
    let hex = res.strip_prefix("0x")?.split('-').next()?;
    let start = u64::from_str_radix(hex, 16).ok()?;
    (start >= 1 << 32).then(|| {
        format!("a 32-bit window at CPU address {start:#x}, above 4 GiB: a host bridge that translates addresses")
    })
}

/// lspci's `Memory at 600000000 (32-bit, non-prefetchable)`: lspci prints
/// the CPU's address of a BAR whose register holds 32 bits, so an address
/// above 4 GiB is the host bridge's translation (the Raspberry Pi CM4's
/// BCM2711 maps its 32-bit bus window at CPU 0x600000000).
fn lspci_32bit_above_4g(lower: &str) -> Option<u64> {
    let t = crate::parse::lspci::unquote(lower);
    let rest = t
        .strip_prefix("memory at ")
        .or_else(|| t.split_once(": memory at ").map(|(_, r)| r))?;
    let (addr, kind) = rest.split_once(' ')?;
    if !kind.starts_with("(32-bit") {
        return None;
    }
    let start = u64::from_str_radix(addr, 16).ok()?;
    (start >= 1 << 32).then_some(start)
}

/// `lspci -v` prints `Device tree node: /sys/firmware/devicetree/...` for a
/// device with a node (sysfs `of_node`), which a device-tree kernel gives
/// it; a mailer may wrap the path onto a line of its own. Only lspci's
/// line, or the path opening a line: a tool's complaint that the path is
/// missing (`cat: /sys/firmware/devicetree/base/model: No such file`) is
/// what an x86 PC prints.
fn lspci_device_tree_node(lower: &str) -> bool {
    const PATH: &str = "/sys/firmware/devicetree/base/";
    let t = crate::parse::lspci::unquote(lower);
    ((t.starts_with("device tree node:") && t.contains(PATH)) || t.starts_with(PATH))
        && !t.contains("no such file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raspberry_pi_root_port_in_lspci_is_no_pc() {
        for line in [
            "00:00.0 PCI bridge: Broadcom Limited Device 2711 (rev 20) (prog-if 00 [Normal decode])",
            "0000:00:00.0 PCI bridge: Broadcom Inc. and subsidiaries BCM2711 PCIe Bridge (rev 10)",
            "0001:00:00.0 PCI bridge: Broadcom Inc. and subsidiaries BCM2712 PCIe Bridge (rev 21)",
            // A Pi 5 whose pci.ids predates the name, and `lspci -nn`, `-n`.
            "0001:00:00.0 PCI bridge: Broadcom Inc. and subsidiaries Device 2712 (rev 21)",
            "0001:00:00.0 PCI bridge [0604]: Broadcom Inc. and subsidiaries Device [14e4:2712] (rev 21)",
            "0000:00:00.0 0604: 14e4:2711 (rev 20)",
        ] {
            let lower = line.to_ascii_lowercase();
            assert!(not_a_pc(line, &lower).is_some(), "{line}");
        }
        // lspci -v of a GPU on a CM4 (32-bit BAR at CPU 0x600000000), in
        // both of lspci's forms; a PC's 32-bit BAR, and a 64-bit one high.
        for (line, board) in [
            (
                "\tMemory at 600000000 (32-bit, non-prefetchable) [disabled] [size=16M]",
                true,
            ),
            (
                "\tRegion 0: Memory at 600000000 (32-bit, non-prefetchable) [size=16M]",
                true,
            ),
            (
                "\tMemory at fb000000 (32-bit, non-prefetchable) [size=16M]",
                false,
            ),
            (
                "\tMemory at 38000000000 (64-bit, prefetchable) [size=32G]",
                false,
            ),
        ] {
            let lower = line.to_ascii_lowercase();
            assert_eq!(not_a_pc(line, &lower).is_some(), board, "{line}");
        }
        // Another Broadcom device, and a PC's root port, say nothing.
        for line in [
            "01:00.0 Ethernet controller: Broadcom Inc. and subsidiaries NetXtreme BCM5720",
            "00:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge",
            "01:00.0 0200: 14e4:165f",
        ] {
            let lower = line.to_ascii_lowercase();
            assert!(not_a_pc(line, &lower).is_none(), "{line}");
        }
    }
}
