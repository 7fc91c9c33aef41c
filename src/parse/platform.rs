//! The machine as a boot log describes it, for `explain`, which has no
//! `/sys/class/dmi/id` to read: the kernel's `DMI:` line names vendor,
//! product and BIOS version, exactly as printed (nothing is made up to
//! please a classifier); the other signs of the platform (`Hypervisor
//! detected:`, the EFI banner, a device tree, devices only a hypervisor or
//! only a real machine has) go to `Signs`, which `model::platform` weighs.

use crate::model::platform::{Cpu, CpuVendor, Firmware, Platform, Signs};
use crate::parse::board::not_a_pc;
use crate::parse::words::{self, Needle};

/// Firmware and machine from the boot log's `DMI:` line, with the signs
/// the rest of the text gives.
pub(crate) fn firmware_from_log(text: &str) -> Firmware {
    let mut fw = Firmware {
        signs: signs_from_log(text),
        ..Firmware::default()
    };
    for line in text.lines() {
        // A kernel warning's `Hardware name:` is the same DMI string (the
        // boot's `DMI:` line feeds `dump_stack`'s arch description; 2.6
        // kernels printed the product name alone).
        let at = line.find("DMI: ").map(|i| i + "DMI: ".len()).or_else(|| {
            line.find("Hardware name: ")
                .map(|i| i + "Hardware name: ".len())
        });
        if let Some(at) = at {
            let dmi = &line[at..];
            let (machine, bios) = dmi.split_once(", BIOS ").unwrap_or((dmi, ""));
            if let Some(product) = machine.strip_prefix("QEMU ") {
                fw.sys_vendor = Some("QEMU".into());
                // The board's name follows a `/` (dmi_format_ids()): LXD's
                // and Incus's guests have one, plain QEMU's none.
                let (product, board) = match product.rsplit_once('/') {
                    Some((p, b)) if !b.contains(')') => (p, Some(b.trim().to_string())),
                    _ => (product, None),
                };
                fw.product_name = Some(product.trim().to_string());
                fw.board_name = board;
            } else if let Some(product) = machine.strip_prefix("VMware, Inc. ") {
                fw.sys_vendor = Some("VMware, Inc.".into());
                fw.product_name = Some(product.split('/').next().unwrap_or("").trim().to_string());
            } else if !machine.trim().is_empty() {
                fw.sys_vendor = Some(machine.trim().to_string());
            }
            if !bios.is_empty() {
                fw.bios_version = Some(bios.trim().to_string());
            }
        }
    }
    fw
}

/// The name in the kernel's `Hypervisor detected: NAME` (x86
/// `init_hypervisor_platform`, printed early in `setup_arch`), trimmed;
/// empty when the line names none. The one reading of that line.
pub(crate) fn hypervisor_line(line: &str) -> Option<&str> {
    HYPERVISOR_DETECTED.after(line).map(str::trim)
}

static HYPERVISOR_DETECTED: Needle = Needle::new("Hypervisor detected: ");

/// The kernel log's `Hypervisor detected: NAME`, the last one: the line
/// of the word's last occurrence, found in one search of the whole log.
pub(crate) fn log_hypervisor(log: &str) -> Option<String> {
    let at = HYPERVISOR_DETECTED.find_all(log).last()?;
    hypervisor_line(line_at(log, at)).map(str::to_string)
}

/// The line of `text` (as `str::lines` cuts them) that holds byte `at`.
fn line_at(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[start..end];
    line.strip_suffix('\r').unwrap_or(line)
}

/// What the log says of the hypervisor: a name, or silence that counts
/// only when the log holds the boot's start (`Linux version`, its first
/// line; the kernel names the hypervisor a few lines later, in
/// `setup_arch`). A log whose start has rotated out says nothing either
/// way: `None`; `Some(None)`: a log from the start without the line.
pub(crate) fn log_hypervisor_seen(log: &str) -> Option<Option<String>> {
    match log_hypervisor(log) {
        Some(name) => Some(Some(name)),
        // Any of the log's forms (dmesg, journalctl -k, /dev/kmsg records)
        // carries the banner's words.
        None if log.contains("Linux version ") => Some(None),
        None => None,
    }
}

/// The kernel's release from its banner (`Linux version 5.13.0-52-generic
/// (...)`): major and minor. `None` where the text has no banner.
pub(crate) fn kernel_release(log: &str) -> Option<(u32, u32)> {
    let at = log.find("Linux version ")?;
    let word = log[at + "Linux version ".len()..]
        .split_whitespace()
        .next()?;
    let mut parts = word.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Boot-time PCI enumeration runs in the kernel's first seconds (the
/// host bridge scan is a subsys initcall): a PCI line stamped later than
/// this came with a rescan or a hot-add, not with the boot.
pub(crate) const BOOT_ENUMERATION_SECS: u64 = 60;

/// Lowercase names of devices, as lspci words them, that only a
/// hypervisor has, and the platform each points at.
const VM_NAMES: [(&str, Platform); 8] = [
    ("qxl paravirtual", Platform::Qemu),
    ("qemu virtual", Platform::Qemu),
    ("red hat, inc. virtio", Platform::Qemu),
    ("vmware svga", Platform::Vmware),
    ("vmware pci express root port", Platform::Vmware),
    ("hyper-v virtual vga", Platform::HyperV),
    ("hv_vmbus:", Platform::HyperV),
    ("hv_pci ", Platform::HyperV),
];

/// Every sign of the platform the text holds beside DMI. Device ids are
/// added by the evidence builders, which have them parsed. Only the lines
/// that hold one of `SIGN_WORDS` are read (`lines_with_signs`): the boot
/// step reads the whole kernel log, and most of its lines hold none.
pub(crate) fn signs_from_log(text: &str) -> Signs {
    let mut s = Signs::default();
    for line in lines_with_signs(text) {
        line_signs(line, &mut s);
    }
    s
}

/// Words at least one of which every sign `line_signs` reads holds, in
/// lowercase (matched in any case): each branch there needs one of them.
const SIGN_WORDS: [&str; 27] = [
    "bcm271",
    "device 271",
    "14e4:271",
    "hypervisor detected: ",
    "efi: efi v",
    "machine model: ",
    "of: fdt:",
    " machine description",
    "flags",
    "features",
    ", device ",
    "max payload size set to ",
    "/sys/firmware/devicetree/base/",
    "bridge window [mem 0x",
    "bar ",
    "reg 0x",
    "(32-bit",
    "/soc/pcie@",
    "rockchip",
    "brcm-pcie",
    "layerscape-pcie",
    "fsl-pci",
    "tegra-pcie",
    "u-boot",
    "aarch64",
    "aspeed graphics",
    "thunderbolt",
];

/// The lines of `text` that hold one of `SIGN_WORDS` or `VM_NAMES`, in
/// order, in any case (`parse::words`).
fn lines_with_signs(text: &str) -> Vec<&str> {
    static WORDS: std::sync::OnceLock<Option<words::Words>> = std::sync::OnceLock::new();
    let w = WORDS.get_or_init(|| {
        words::Words::new(SIGN_WORDS.iter().chain(VM_NAMES.iter().map(|(n, _)| n)))
    });
    match w {
        Some(w) => w.lines_holding(text),
        // Not reached (the words are fixed and few): every line, then.
        None => text.lines().collect(),
    }
}

/// The signs one line gives, added to `s`.
fn line_signs(line: &str, s: &mut Signs) {
    if is_report_heading(line) {
        return;
    }
    if let Some(name) = hypervisor_line(line).filter(|n| !n.is_empty()) {
        s.hypervisor_line = Some(name.to_string());
    }
    if let Some(i) = line.find("efi: EFI v") {
        if let Some((_, by)) = line[i..].split_once(" by ") {
            s.efi_by = Some(by.trim().to_string());
        }
    }
    for key in ["Machine model: ", "OF: fdt: Machine model: "] {
        if let Some(i) = line.find(key) {
            s.device_tree
                .get_or_insert_with(|| format!("device tree: {}", line[i + key.len()..].trim()));
        }
    }
    if line.contains("OF: fdt:") || line.contains(" machine description") {
        s.device_tree
            .get_or_insert_with(|| "a device tree (OF: lines)".to_string());
    }
    let t = line.trim_start();
    if (t.starts_with("flags") || t.starts_with("Features")) && t.contains(':') {
        s.cpu_flag = Some(t.split_whitespace().any(|w| w == "hypervisor"));
    }
    // QEMU's monitor, `info pci`: `Bus  0, device   1, function 0:`.
    if t.starts_with("Bus ") && t.contains(", device ") && t.contains(", function ") {
        let what = "a QEMU monitor `info pci` listing";
        if !s.vm_devices.iter().any(|(_, w)| w == what) {
            s.vm_devices.push((Platform::Qemu, what.to_string()));
        }
    }
    if let Some(what) = payload_set_by_another_firmware(line) {
        s.weak_vm.get_or_insert_with(|| what.to_string());
    }
    let lower = line.to_ascii_lowercase();
    if s.device_tree.is_none() {
        s.device_tree = not_a_pc(line, &lower);
    }
    for (name, p) in VM_NAMES {
        if lower.contains(name)
            && !s
                .vm_devices
                .iter()
                .any(|(_, w)| w == name.trim_end_matches([' ', ':']))
        {
            s.vm_devices
                .push((p, name.trim_end_matches([' ', ':']).to_string()));
        }
    }
    for (name, what) in [
        ("aspeed graphics", "a BMC's ASPEED VGA"),
        ("thunderbolt", "a Thunderbolt controller"),
    ] {
        if lower.contains(name) && !s.metal_devices.iter().any(|w| w == what) {
            s.metal_devices.push(what.to_string());
        }
    }
}

/// `pci 0000:02:00.0: Max Payload Size set to 128 (was 256, max 256)` at
/// boot: the kernel lowered a device's Max Payload Size to its upstream
/// port's (`pci_configure_mps()`, drivers/pci/probe.c, which prints this
/// only where the two differ). At boot one firmware configured both the
/// port and the device, so they agree on a real machine; a device that
/// comes configured for more than its port takes was configured by another
/// machine: a device passed through to a VM keeps the MPS its host set,
/// under an emulated port that takes 128-byte payloads only (QEMU's PCIe
/// ports advertise no more: `pcie_cap_v1_fill()` in hw/pci/pcie.c sets
/// DEVCAP to RBER alone, Max_Payload_Size_Supported 0 = 128 bytes).
/// Corpus 63 (Kata) and 65 (Proxmox) print it. Not after the boot's first
/// minute: a device re-added without a reset by a hot-plug or a rescan
/// keeps its old setting on a real machine too (a linux-pci report shows
/// `set to 128 (was 512, max 512)` at 217 s after a pciehp re-add).
/// Neither the port's raising or lowering (`Upstream bridge's Max Payload
/// Size set to ...`) nor `pci=pcie_bus_perf`'s `set to 256/ 512 (was
/// 256)` is this sign.
fn payload_set_by_another_firmware(line: &str) -> Option<&'static str> {
    const KEY: &str = "Max Payload Size set to ";
    let at = line.find(KEY)?;
    let head = &line[..at];
    if head.ends_with("Upstream bridge's ") {
        return None;
    }
    let rest = line[at + KEY.len()..].trim_start();
    let digits = |t: &str| -> Option<(u32, usize)> {
        let n = t.chars().take_while(char::is_ascii_digit).count();
        Some((t[..n].parse().ok()?, n))
    };
    let (to, n) = digits(rest)?;
    let was_part = rest[n..].strip_prefix(" (was ")?.trim_start();
    let (was, _) = digits(was_part)?;
    let secs = boot_secs(head)?;
    (to == 128 && was > 128 && secs < BOOT_ENUMERATION_SECS).then_some(
        "a device configured for a larger Max Payload Size than its port's 128 bytes at boot: a device passed through to a VM, under an emulated PCIe port",
    )
}

/// The whole seconds of a kernel line's `[   3.343315]` stamp (after a
/// syslog prefix too), where it has one.
fn boot_secs(head: &str) -> Option<u64> {
    let open = head.find('[')?;
    let close = open + head[open..].find(']')?;
    let stamp = head[open + 1..close].trim();
    let (secs, frac) = stamp.split_once('.')?;
    if secs.is_empty()
        || !secs.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    secs.parse().ok()
}

/// A report's own heading, not machine output: `# KEY: ...` and its
/// `#   ...` continuation lines (the corpus files open with them; a
/// shell's `# dmesg` prompt has no `KEY:`).
pub(crate) fn is_report_heading(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# ") else {
        return false;
    };
    if rest.starts_with("  ") {
        return true;
    }
    let key: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
    key.len() > 1
        && key.ends_with(':')
        && key[..key.len() - 1]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
}

/// Signs that a GPU sits behind a hot-plug bridge or was hot-plugged,
/// `true` where that is a VM's hot-plug: a Thunderbolt controller on a real
/// machine; QEMU's monitor `device_add` or QMP, Kata Containers (which
/// hot-plug devices into their VM unless told to cold-plug them), an SHPC
/// bridge's driver. `pciehp` alone is no sign: every Q35 guest's root ports
/// load it.
pub(crate) fn hotplug_signs(text: &str) -> Vec<(bool, String)> {
    static WORDS: [(Needle, bool, &str); 6] = [
        (
            Needle::new("thunderbolt"),
            false,
            "a Thunderbolt controller",
        ),
        (Needle::new("egpu"), false, "an external GPU enclosure"),
        (Needle::new("device_add"), true, "QEMU's device_add"),
        (Needle::new("qmp"), true, "QMP hot-plug"),
        (
            Needle::new("kata"),
            true,
            "a Kata Containers VM, which hot-plugs its devices",
        ),
        (Needle::new("shpchp"), true, "an SHPC hot-plug bridge"),
    ];
    // One lowercase copy, the same bytes at the same places (ASCII case
    // only), each word searched in it once; a line that is a report's own
    // heading does not count.
    let lower = text.to_ascii_lowercase();
    WORDS
        .iter()
        .filter(|(word, _, _)| {
            word.find_all(&lower)
                .any(|at| !is_report_heading(line_at(text, at)))
        })
        .map(|(_, vm, what)| (*vm, what.to_string()))
        .collect()
}

/// Hyper-V's `hv_pci <instance>: Need 0x802000000 of high MMIO space.
/// Consider reconfiguring the VM.`: the bytes its devices need.
pub(crate) fn hyperv_mmio_need(text: &str) -> Option<u64> {
    static HV_PCI: Needle = Needle::new("hv_pci ");
    if !HV_PCI.is_in(text) {
        return None;
    }
    text.lines().find_map(|line| {
        let at = HV_PCI.find(line)?;
        let rest = &line[at..];
        let need = rest.find(": Need ")?;
        let r = &rest[need + ": Need ".len()..];
        let (num, tail) = r.split_once(' ')?;
        if !tail.starts_with("of high MMIO space") && !tail.starts_with("of low MMIO space") {
            return None;
        }
        let hex = num.strip_prefix("0x")?;
        u64::from_str_radix(hex, 16).ok().filter(|n| *n > 0)
    })
}

/// The CPU's physical address bits where the log shows the end of
/// `iomem_resource`, the root of all memory resources: the kernel names it
/// `PCI mem` and x86 ends it at 2^phys_bits - 1 (arch/x86/kernel/setup.c,
/// `iomem_resource.end = (1ULL << boot_cpu_data.x86_phys_bits) - 1`), and a
/// conflict message prints it: `... conflicts with PCI mem [mem
/// 0x00000000-0xffffffffff]`. Reports wrap that line, so the words are
/// sought across line ends.
fn phys_bits_from_iomem_root(text: &str) -> Option<u32> {
    const KEY: &str = "PCI mem [mem 0x00000000-0x";
    if !text.contains("PCI") || !text.contains("[mem 0x00000000-0x") {
        return None;
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = flat.find(KEY)?;
    let hex: String = flat[at + KEY.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    let end = u64::from_str_radix(&hex, 16).ok()?;
    let size = end.checked_add(1)?;
    (size.is_power_of_two() && (32..=57).contains(&size.trailing_zeros()))
        .then(|| size.trailing_zeros())
}

/// What the log says of the CPU: its vendor (`smpboot: CPU0: Intel(R)
/// Xeon(R) ...`, `... AMD EPYC ...`), whether it runs under a hypervisor
/// (`Hypervisor detected:`), and its address bits where a conflict message
/// shows them (`phys_bits_from_iomem_root`).
pub(crate) fn cpu_from_log(text: &str) -> Cpu {
    let mut cpu = Cpu {
        phys_bits: phys_bits_from_iomem_root(text),
        ..Cpu::default()
    };
    for line in text.lines() {
        if let Some(i) = line.find("smpboot: CPU0: ") {
            let name = &line[i + "smpboot: CPU0: ".len()..];
            cpu.vendor = Some(
                if name.starts_with("Intel") || name.contains("GenuineIntel") {
                    CpuVendor::Intel
                } else if name.starts_with("AMD") || name.contains("AuthenticAMD") {
                    CpuVendor::Amd
                } else {
                    CpuVendor::Other
                },
            );
        }
        if hypervisor_line(line).is_some() {
            cpu.hypervisor = Some(true);
        }
    }
    cpu
}

/// The sign that the text is a VFIO host's rather than its guest's: lspci
/// saying `Kernel driver in use: vfio-pci`, or the host kernel's
/// `vfio-pci 0000:...:` lines (drivers/vfio/pci/vfio_pci_core.c prints
/// through the device it binds). A guest's own GPU is driven by the GPU's
/// driver; vfio-pci holds a device the machine passes on to a VM.
pub(crate) fn vfio_host_sign(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let t = l.trim();
        if t.starts_with("Kernel driver in use: vfio-pci") {
            Some(
                "lspci says vfio-pci drives a device (`Kernel driver in use: vfio-pci`)"
                    .to_string(),
            )
        } else {
            let at = t.find("vfio-pci 0000:")?;
            // A kernel line, not a command line quoting QEMU's -device.
            let before = &t[..at];
            (before.is_empty() || before.ends_with("] ") || before.ends_with("kernel: "))
                .then(|| "the host kernel's vfio-pci binds a device".to_string())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::{FirmwareKind, Platform, QemuMachine};
    use crate::parse::board::NOT_A_PC;

    /// `signs_from_log` as it was before the one-pass prefilter: every
    /// line read.
    fn signs_of_every_line(text: &str) -> Signs {
        let mut s = Signs::default();
        for line in text.lines() {
            line_signs(line, &mut s);
        }
        s
    }

    /// `hotplug_signs` as it was before its words were searched once: a
    /// lowercase copy of every line but the report's headings, searched
    /// for each word.
    fn hotplug_signs_line_by_line(text: &str) -> Vec<(bool, String)> {
        let lower: String = text
            .lines()
            .filter(|l| !is_report_heading(l))
            .map(|l| l.to_ascii_lowercase() + "\n")
            .collect();
        [
            ("thunderbolt", false, "a Thunderbolt controller"),
            ("egpu", false, "an external GPU enclosure"),
            ("device_add", true, "QEMU's device_add"),
            ("qmp", true, "QMP hot-plug"),
            (
                "kata",
                true,
                "a Kata Containers VM, which hot-plugs its devices",
            ),
            ("shpchp", true, "an SHPC hot-plug bridge"),
        ]
        .into_iter()
        .filter(|(w, _, _)| lower.contains(w))
        .map(|(_, vm, what)| (vm, what.to_string()))
        .collect()
    }

    /// `log_hypervisor` as it was: every line from the last.
    fn log_hypervisor_line_by_line(log: &str) -> Option<String> {
        log.lines()
            .rev()
            .find_map(hypervisor_line)
            .map(str::to_string)
    }

    /// What the one-pass readers give, and what reading line by line
    /// gives, for one text.
    fn agree(text: &str, what: &str) {
        assert_eq!(signs_from_log(text), signs_of_every_line(text), "{what}");
        assert_eq!(
            hotplug_signs(text),
            hotplug_signs_line_by_line(text),
            "{what}"
        );
        assert_eq!(
            log_hypervisor(text),
            log_hypervisor_line_by_line(text),
            "{what}"
        );
    }

    #[test]
    fn the_prefilter_keeps_every_line_a_sign_is_read_from() {
        // Each word a sign is read by holds one of the prefilter's.
        for w in NOT_A_PC.iter().map(|(w, _)| *w) {
            assert!(SIGN_WORDS.iter().any(|s| w.contains(s)), "{w}");
        }
        // The same signs as reading every line, on every real log the
        // project keeps (the corpus, the fixtures' kernel logs).
        let mut logs = 0;
        for dir in ["tests/corpus", "tests/fixtures"] {
            let mut stack = vec![std::path::PathBuf::from(dir)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    if p.is_dir() && name != "root" {
                        stack.push(p);
                    } else if name.ends_with(".txt") {
                        let text =
                            String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                        agree(&text, &p.display().to_string());
                        logs += 1;
                    }
                }
            }
        }
        assert!(logs > 100, "{logs} logs");
        // A sign in odd case, after CRs, on a last line without a newline.
        let text = "a\r\nHYPERVISOR DETECTED: KVM\r\nx\nflags : fpu hypervisor\nAmD aarch64 board";
        agree(text, "odd case");
        let s = signs_from_log(text);
        assert_eq!(s.cpu_flag, Some(true));
        // A hot-plug word on a report's heading does not count, on another
        // line it does; the last hypervisor line, CR and all.
        let text = "# NOTE: a kata VM\nqmp\r\n# ENV: x\nHypervisor detected: Xen\nHypervisor detected: KVM\r";
        agree(text, "headings");
        assert_eq!(hotplug_signs(text), [(true, "QMP hot-plug".to_string())]);
        assert_eq!(log_hypervisor(text), Some("KVM".into()));
        assert!(s.device_tree.is_some());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Lines made of the signs' own words, cut and joined at random,
        /// in any case: the prefilter finds what every line gives.
        #[test]
        fn the_prefilter_agrees_with_every_line_on_word_salad(
            parts in proptest::collection::vec(
                (0usize..60, 0usize..40, proptest::bool::ANY, 0u8..4), 0..40),
        ) {
            let words: Vec<&str> = SIGN_WORDS
                .iter()
                .copied()
                .chain(VM_NAMES.iter().map(|(n, _)| *n))
                .chain(NOT_A_PC.iter().map(|(n, _)| *n))
                .chain(["Hypervisor detected: KVM", "efi: EFI v2.70 by EDK II",
                    "OF: fdt: Machine model: Pi", "Bus  0, device   1, function 0:",
                    "[    1.5] pci 0000:01:00.0: Max Payload Size set to 128 (was 256, max 256)",
                    "pci 0000:00:01.0: BAR 0 [mem 0x400000000-0x4000fffff]", "flags\t: fpu hypervisor",
                    "# NOTE: x", "\r", "Thunderbolt", "eGPU", "device_add", "QMP", "kata",
                    "shpchp", "# ENV: "])
                .collect();
            let mut text = String::new();
            for (w, cut, upper, sep) in parts {
                let w = words[w % words.len()];
                let w = &w[..w.floor_char_boundary(cut.min(w.len()).max(w.len() / 2))];
                text.push_str(&if upper { w.to_ascii_uppercase() } else { w.to_string() });
                text.push_str(["", " ", "\n", "\r\n"][usize::from(sep)]);
            }
            proptest::prop_assert_eq!(signs_from_log(&text), signs_of_every_line(&text));
            proptest::prop_assert_eq!(hotplug_signs(&text), hotplug_signs_line_by_line(&text));
            proptest::prop_assert_eq!(log_hypervisor(&text), log_hypervisor_line_by_line(&text));
        }
    }

    #[test]
    fn the_kernels_release_from_its_banner() {
        assert_eq!(
            kernel_release("[    0.000000] Linux version 5.13.0-52-generic (buildd@lcy02) #59"),
            Some((5, 13))
        );
        assert_eq!(
            kernel_release("kernel: Linux version 6.8.0 (gcc)"),
            Some((6, 8))
        );
        assert_eq!(kernel_release("Linux version 6.18+deb14 x"), Some((6, 18)));
        assert_eq!(kernel_release("Linux version unknown"), None);
        assert_eq!(kernel_release("no banner"), None);
    }

    #[test]
    fn silence_counts_only_in_a_log_from_the_boot_start() {
        let start = "[    0.000000] Linux version 6.8.0 (gcc)\n[    0.000000] Command line: ro\n";
        assert_eq!(log_hypervisor_seen(start), Some(None));
        assert_eq!(
            log_hypervisor_seen("Nov 29 10:00:00 vm kernel: Linux version 6.8.0\n"),
            Some(None)
        );
        assert_eq!(
            log_hypervisor_seen(&format!("{start}[    0.000000] Hypervisor detected: KVM\n")),
            Some(Some("KVM".into()))
        );
        // The last line counts; one without a name names nothing.
        assert_eq!(
            log_hypervisor("Hypervisor detected: Xen HVM\nHypervisor detected: KVM \n"),
            Some("KVM".into())
        );
        assert_eq!(
            log_hypervisor("Hypervisor detected: \n"),
            Some(String::new())
        );
        // The start rotated out of the ring buffer: nothing is known.
        assert_eq!(log_hypervisor_seen("[ 9000.1] nvidia: loaded\n"), None);
        assert_eq!(log_hypervisor_seen(""), None);
    }

    #[test]
    fn qemu_guests_from_their_dmi_and_efi_lines() {
        let fw = firmware_from_log(
            "[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS rel-1.16.2-0-gea1b7a073390-prebuilt.qemu.org 04/01/2014\n",
        );
        assert_eq!(fw.kind(), FirmwareKind::SeaBios);
        assert_eq!(fw.platform(), Platform::Qemu);
        assert_eq!(fw.qemu_machine(), Some(QemuMachine::Q35));
        let fw = firmware_from_log(
            "[    0.000000] efi: EFI v2.70 by EDK II\n[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 0.0.0 02/06/2015\n",
        );
        assert_eq!(fw.kind(), FirmwareKind::Ovmf);
        assert_eq!(fw.bios_version.as_deref(), Some("0.0.0 02/06/2015"));
        let fw = firmware_from_log(
            "DMI: Supermicro SYS-4029GP-TRT/X11DPG-OT-CPU, BIOS 3.1 01/12/2020\n",
        );
        assert_eq!(
            fw.sys_vendor.as_deref(),
            Some("Supermicro SYS-4029GP-TRT/X11DPG-OT-CPU")
        );
        assert_eq!(fw.kind(), FirmwareKind::Unknown);
        assert_eq!(firmware_from_log("nothing here"), Firmware::default());
        // An LXD guest's board follows the product.
        let fw = firmware_from_log(
            "[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009)/LXD, BIOS unknown 2/2/2022\n",
        );
        assert_eq!(
            fw.product_name.as_deref(),
            Some("Standard PC (Q35 + ICH9, 2009)")
        );
        assert_eq!(fw.board_name.as_deref(), Some("LXD"));
        assert_eq!(fw.layer(), Some(crate::model::layer::Layer::Lxd));
        assert_eq!(fw.qemu_machine(), Some(QemuMachine::Q35));
    }

    #[test]
    fn vmware_legacy_bios_and_efi_vms() {
        // The DMI line of corpus 32 (a legacy BIOS VM).
        let legacy = firmware_from_log(
            "[    0.000000] DMI: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 02/27/2020\n",
        );
        assert_eq!(legacy.platform(), Platform::Vmware);
        assert_eq!(
            legacy.product_name.as_deref(),
            Some("VMware Virtual Platform")
        );
        assert!(legacy.legacy_bios());
        assert_eq!(legacy.bios_vendor, None, "made up");
        let efi = firmware_from_log(
            "[    0.000000] efi: EFI v2.70 by VMware, Inc.\n[    0.000000] DMI: VMware, Inc. VMware7,1/440BX Desktop Reference Platform, BIOS VMW71.00V.21805430.B64.2305221830 05/22/2023\n",
        );
        assert_eq!(efi.platform(), Platform::Vmware);
        assert!(!efi.legacy_bios());
        assert_eq!(efi.kind(), FirmwareKind::Other);
        assert_eq!(efi.signs.efi_by.as_deref(), Some("VMware, Inc."));
    }

    #[test]
    fn a_warnings_hardware_name_is_the_dmi_line() {
        for (line, want) in [
            (
                "[   15.503108] Hardware name: MCP61M-M3",
                Platform::BareMetal,
            ),
            (
                "Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS rel-1.16.2-0-gea1b7a073390-prebuilt.qemu.org 04/01/2014",
                Platform::Qemu,
            ),
            (
                "Hardware name: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 11/12/2020",
                Platform::Vmware,
            ),
        ] {
            assert_eq!(firmware_from_log(line).platform(), want, "{line}");
        }
    }

    #[test]
    fn the_hypervisor_line_when_there_is_no_dmi_line() {
        for (line, want) in [
            ("Hypervisor detected: VMware", Platform::Vmware),
            ("Hypervisor detected: Microsoft Hyper-V", Platform::HyperV),
            ("Hypervisor detected: KVM", Platform::OtherVm),
            ("Hypervisor detected: Xen HVM", Platform::OtherVm),
        ] {
            assert_eq!(firmware_from_log(line).platform(), want, "{line}");
            assert_eq!(cpu_from_log(line).hypervisor, Some(true));
        }
        // DMI wins.
        let fw = firmware_from_log("DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 0.0.0 02/06/2015\nHypervisor detected: KVM\n");
        assert_eq!(fw.platform(), Platform::Qemu);
    }

    #[test]
    fn hyper_v_says_how_much_high_mmio_it_needs() {
        for (line, want) in [
            (
                "hv_pci ...: Need 0x802000000 of high MMIO space. Consider reconfiguring the VM.",
                Some(0x8_0200_0000),
            ),
            (
                "[    2.1] hv_pci 1f4a32fe-c8c1-4d2a-9a0f-2d6c3d5c6f1a: Need 0x1000000 of low MMIO space. Consider reconfiguring the VM.",
                Some(0x100_0000),
            ),
            ("hv_pci ...: Need 0x0 of high MMIO space.", None),
            ("hv_pci ...: Need lots of high MMIO space.", None),
            ("hv_pci ...: PCI VMBus probing: Using version 0x10004", None),
        ] {
            assert_eq!(hyperv_mmio_need(line), want, "{line}");
        }
        assert!(signs_from_log("hv_pci 1f4a: PCI VMBus probing")
            .vm_devices
            .iter()
            .any(|(p, _)| *p == Platform::HyperV));
    }

    #[test]
    fn boards_that_are_not_pcs_from_their_lines() {
        for (line, want) in [
            // Corpus 111 (a Raspberry Pi CM4): the root port's 32-bit window.
            (
                "pci 0000:00:00.0: BAR 8: assigned [mem 0x600000000-0x6000fffff]",
                true,
            ),
            // Corpus 101 (POWER): a bridge's non-prefetchable window.
            (
                "pci 0030:00:00.0:   bridge window [mem 0x620c000000000-0x620c07fefffff]",
                true,
            ),
            (
                "rockchip-dw-pcie fe150000.pcie: PCIe Gen.3 x4 link up",
                true,
            ),
            (
                "brcm-pcie fd500000.pcie: link up, 5.0 GT/s PCIe x1 (SSC)",
                true,
            ),
            (
                "00:00.0 PCI bridge: Fuzhou Rockchip Electronics Co., Ltd Device 3566",
                true,
            ),
            (
                "The NVIDIA GPU driver for AArch64 has not been qualified on this CPU",
                true,
            ),
            // An x86 tool's complaint names the path too: not a sign.
            (
                "cat: /sys/firmware/devicetree/base/model: No such file or directory",
                false,
            ),
            (
                "/sys/firmware/devicetree/base/model: No such file or directory",
                false,
            ),
            // Corpus 135 (a PowerPC board): lspci -v, the path wrapped.
            ("/sys/firmware/devicetree/base/pcie@ffe250000/pcie@0", true),
            (
                "        Device tree node: /sys/firmware/devicetree/base/pci@1c00000/pcie@0/wifi@0",
                true,
            ),
            // x86: 64-bit windows above 4 GiB, 32-bit ones below, root windows.
            (
                "pci 0000:00:01.0:   bridge window [mem 0x4000000000-0x7fffffffff 64bit pref]",
                false,
            ),
            (
                "pci 0000:00:1c.0:   bridge window [mem 0xfe000000-0xfe0fffff]",
                false,
            ),
            (
                "pci 0000:01:00.0: BAR 0 [mem 0x6000000000-0x6000ffffff 64bit]: assigned",
                false,
            ),
            (
                "pci_bus 0000:00: root bus resource [mem 0x4000000000-0x7fffffffff window]",
                false,
            ),
            (
                "pci 0000:01:00.0: BAR 1: no space for [mem size 0x800000000 64bit pref]",
                false,
            ),
        ] {
            assert_eq!(signs_from_log(line).device_tree.is_some(), want, "{line}");
        }
        let fw = firmware_from_log("brcm-pcie fd500000.pcie: link up\n");
        assert_eq!(fw.platform(), Platform::BareMetal);
    }

    #[test]
    fn a_reports_heading_is_no_sign() {
        let text = "# ENV: VM, Kata Containers on QEMU, Thunderbolt dock\n#   Hypervisor detected: KVM\n# NOTE2: not a Thunderbolt sign\n# dmesg | grep kata\n";
        assert_eq!(hotplug_signs(text).len(), 1, "the prompt line counts");
        assert_eq!(signs_from_log(text).hypervisor_line, None);
    }

    #[test]
    fn hot_plug_signs_and_what_they_say() {
        assert_eq!(
            hotplug_signs("[root@kata3-86686964f-d2qtx /]# dmesg | grep BAR"),
            [(
                true,
                "a Kata Containers VM, which hot-plugs its devices".to_string()
            )]
        );
        assert!(!hotplug_signs("thunderbolt 0000:06:00.0: ...")[0].0);
        assert!(hotplug_signs("pcieport 0000:00:1c.0: pciehp: Slot #0").is_empty());
    }

    #[test]
    fn device_trees_and_cpu_flags_are_signs() {
        let s = signs_from_log(
            "[    0.000000] Machine model: Radxa ROCK 5 Model B
flags		: fpu vme hypervisor
",
        );
        assert_eq!(
            s.device_tree.as_deref(),
            Some("device tree: Radxa ROCK 5 Model B")
        );
        assert_eq!(s.cpu_flag, Some(true));
        let s = signs_from_log(
            "Bus  0, device   1, function 0:\n    VGA controller: PCI device 1234:1111
",
        );
        assert_eq!(s.vm_devices[0].0, Platform::Qemu);
    }

    #[test]
    fn a_payload_size_another_firmware_set_is_a_vm_sign() {
        for (line, vm) in [
            // Corpus 63 (Kata) and 65 (Proxmox): QEMU's ports take 128.
            (
                "[    3.343315] pci 0000:02:00.0: Max Payload Size set to 128 (was 256, max 256)",
                true,
            ),
            (
                "Sep 21 10:24:30 host kernel: [    0.725343] pci 0000:06:00.0: Max Payload Size set to 128 (was 512, max 512)",
                true,
            ),
            // A device re-added by a hot-plug or a rescan after boot keeps
            // its old setting on a real machine too (linux-pci, pciehp).
            (
                "[  217.455380] pci 0000:ab:00.0: Max Payload Size set to 128 (was 512, max 512)",
                false,
            ),
            // No stamp: boot or later is not in the line.
            (
                "pci 0000:02:00.0: Max Payload Size set to 128 (was 256, max 256)",
                false,
            ),
            (
                "[Fri Feb 28 11:24:15 2020] pci 0000:0b:00.0: Max Payload Size set to 128 (was 256, max 512)",
                false,
            ),
            // Raised to the port's: a device fresh from reset (128).
            (
                "[    0.379051] pci 0000:01:00.0: Max Payload Size set to 256 (was 128, max 256)",
                false,
            ),
            // The port lowered to the device's, and pcie_bus_perf's form.
            (
                "[    3.174290] pci 0000:01:00.0: Upstream bridge's Max Payload Size set to 128 (was 256, max 128)",
                false,
            ),
            (
                "[  127.951801] pcieport 0000:00:01.1: Max Payload Size set to  128/ 512 (was  256), Max Read Rq  512",
                false,
            ),
            // Lowered, but not to what QEMU's ports take.
            (
                "[    1.000000] pci 0000:01:00.0: Max Payload Size set to 256 (was 512, max 512)",
                false,
            ),
        ] {
            let s = signs_from_log(line);
            assert_eq!(s.weak_vm.is_some(), vm, "{line}");
            if vm {
                assert_eq!(firmware_from_log(line).platform(), Platform::OtherVm);
            }
        }
    }

    #[test]
    fn a_lowered_payload_size_gives_way_to_every_other_sign() {
        let mps =
            "[    0.377810] pci 0000:c5:00.5: Max Payload Size set to 128 (was 256, max 256)\n";
        // A sign that names the hypervisor.
        let j = firmware_from_log(&format!("{mps}Bus  0, device   1, function 0:\n")).judge();
        assert_eq!(j.platform, Platform::Qemu);
        assert_eq!(j.signs, ["a QEMU monitor `info pci` listing"]);
        // A real board's DMI (a Framework Desktop's own boot log prints
        // the line for one of its ports, linux-pci).
        let dmi = "[    0.000000] DMI: Framework Desktop (AMD Ryzen AI Max 300 Series)/FRANMFCP06, BIOS 03.01 05/29/2025\n";
        let j = firmware_from_log(&format!("{dmi}{mps}")).judge();
        assert_eq!(j.platform, Platform::BareMetal);
        // A bare-metal device (a Thunderbolt controller).
        let tb = "[    1.2] thunderbolt 0000:06:00.0: total paths: 12\n";
        assert!(!signs_from_log(tb).metal_devices.is_empty());
        assert_eq!(
            firmware_from_log(&format!("{tb}{mps}")).platform(),
            Platform::BareMetal
        );
        // Alone it says a VM.
        assert_eq!(firmware_from_log(mps).platform(), Platform::OtherVm);
    }

    #[test]
    fn address_bits_from_the_iomem_root_a_conflict_prints() {
        // Corpus 65, wrapped by a mail client.
        let text = "[    1.421556] pci 0000:06:00.0: BAR 1: [mem\n0xffffffe000000000-0xffffffffffffffff 64bit pref] conflicts with PCI\nmem [mem 0x00000000-0xffffffffff]\n";
        assert_eq!(cpu_from_log(text).phys_bits, Some(40));
        assert_eq!(
            cpu_from_log("conflicts with PCI mem [mem 0x00000000-0x3fffffffffff]").phys_bits,
            Some(46)
        );
        assert_eq!(
            cpu_from_log("conflicts with PCI mem [mem 0x00000000-0xfffffffe]").phys_bits,
            None
        );
        assert_eq!(
            cpu_from_log("conflicts with PCI Bus 0000:00 [mem 0x00000000-0xffffffffff]").phys_bits,
            None
        );
    }

    #[test]
    fn cpu_vendor_from_smpboot() {
        let intel = cpu_from_log("[    0.390000] smpboot: CPU0: Intel(R) Xeon(R) Platinum 8480+ (family: 0x6, model: 0x8f, stepping: 0x8)");
        assert_eq!(intel.vendor, Some(CpuVendor::Intel));
        let amd = cpu_from_log("smpboot: CPU0: AMD EPYC 9654 96-Core Processor (family: 0x19, model: 0x11, stepping: 0x1)");
        assert_eq!(amd.vendor, Some(CpuVendor::Amd));
        assert_eq!(cpu_from_log("nothing").vendor, None);
    }

    #[test]
    fn a_vfio_host_is_told_by_vfio_pci_driving_a_device() {
        assert!(vfio_host_sign(
            "\tKernel driver in use: vfio-pci\n\tKernel modules: nvidiafb, nouveau\n"
        )
        .is_some());
        assert!(
            vfio_host_sign("[    5.1] vfio-pci 0000:01:00.0: vgaarb: changed VGA decodes\n")
                .is_some()
        );
        assert!(vfio_host_sign(
            "Dec 03 host kernel: vfio-pci 0000:01:00.0: enabling device (0000 -> 0003)\n"
        )
        .is_some());
        // A guest's driver, and QEMU's command line naming the device.
        assert!(vfio_host_sign("\tKernel driver in use: nvidia\n").is_none());
        assert!(vfio_host_sign("-device vfio-pci 0000:01:00.0\n").is_none());
        assert!(
            vfio_host_sign("qemu-system-x86_64 -device vfio-pci,host=0000:01:00.0\n").is_none()
        );
    }
}
