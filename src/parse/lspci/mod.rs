//! Saved `lspci -v` / `-vv` / `-nn -v` text, for `explain` when there is no
//! live system: device headers and their BARs (`Region N: Memory at
//! <unassigned> ...`), and whether a device is a bridge.
//!
//! Pure functions over text. Bug reports paste this output with lost tabs,
//! `> ` quoting, wrapped lines and kernel log lines in between, so a line is
//! recognised by its own shape rather than by its indentation. Only what
//! the diagnosis uses is kept.

use crate::model::pci::PciAddress;
use crate::parse::hex::hex_u64;
use names::{class_from_name, device_from_name, vendor_from_name};
use region::region_line;

mod names;
mod region;

/// One function's block of `lspci -v` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LspciDevice {
    pub bdf: PciAddress,
    /// `VGA compatible controller`, `3D controller`, `PCI bridge`.
    pub class_name: String,
    /// `[0300]` with `-nn`: base class and subclass.
    pub class: Option<u16>,
    /// `[10de:20f1]` with `-nn`.
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// `NVIDIA Corporation GA100 [A100 PCIe 40GB]`.
    pub name: String,
    /// BARs 0-5 in the order printed.
    pub regions: Vec<LspciRegion>,
    /// A `Bus: primary=..` line: only bridges (header type 1 or 2) print one.
    pub has_bus_line: bool,
    /// `Region` lines that came before any device header (`lspci -vvv |
    /// grep Region`): whose they are is not in the text, `bdf` means
    /// nothing.
    pub headless: bool,
}

/// The address a headless group carries: none (`headless` says so).
const NO_ADDRESS: PciAddress = PciAddress {
    domain: 0,
    bus: 0,
    device: 0,
    function: 0,
};

/// What lspci printed after `Memory at` / `I/O ports at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionAddr {
    Assigned(u64),
    /// `<unassigned>`: the BAR register holds no address, the OS has none.
    Unassigned,
    /// `<ignored>`: the register holds address bits but the OS reports no
    /// resource: the kernel refused what firmware programmed.
    Ignored,
    /// `[virtual]`: the OS reports an address the register does not hold.
    Virtual(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LspciRegion {
    /// BAR number: from `Region N:` (`-vv`), or counted in print order
    /// (`-v`), see `index_inferred`.
    pub index: u8,
    /// `lspci -v` prints no numbers, and skips unimplemented BARs, so a
    /// counted index is right only when no BAR before it is missing.
    pub index_inferred: bool,
    pub io: bool,
    pub address: RegionAddr,
    pub mem64: bool,
    pub prefetchable: bool,
    /// `[size=32G]`; absent when lspci had no size (often so for an
    /// unassigned BAR).
    pub size: Option<u64>,
    /// The line said `(64-bit, prefetchable)` or the like.
    pub typed: bool,
}

impl LspciDevice {
    /// Base class and subclass: the `-nn` number, or read from the name
    /// plain `lspci -v` prints.
    pub(crate) fn class_code(&self) -> Option<u16> {
        self.class.or_else(|| class_from_name(&self.class_name))
    }

    /// The vendor id: the `-nn` number, or a GPU vendor told by its name.
    pub(crate) fn vendor_id(&self) -> Option<u16> {
        self.vendor.or_else(|| vendor_from_name(&self.name))
    }

    /// The device id: the `-nn` number, or the `Device 1b80` a name shows
    /// for a device too new for the ids file.
    pub(crate) fn device_id(&self) -> Option<u16> {
        self.device.or_else(|| device_from_name(&self.name))
    }
}

/// Parses every device block found in `text`. Other lines are skipped; a
/// device printed twice appears twice.
pub(crate) fn parse(text: &str) -> Vec<LspciDevice> {
    let mut devices: Vec<LspciDevice> = Vec::new();
    // Set once the device's capability list starts: the SR-IOV capability
    // prints its VF BARs as `Region N:` lines too, which are not the
    // function's own BARs.
    let mut in_caps = false;
    let mut next_index = 0u8;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let (line, used) = logical_line(&lines[i..]);
        i += used;
        let t = unquote(&line);
        // `$ lspci -vvv -s 05:00.0 | grep Region`: what follows without a
        // header of its own is that device's.
        if let Some(bdf) = selected_by_command(t) {
            devices.push(LspciDevice::bare(bdf));
            in_caps = false;
            next_index = 0;
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(dev) = tree_row(t) {
            devices.push(dev);
            in_caps = false;
            next_index = 0;
            continue;
        }
        if let Some(mut dev) = header(t) {
            // A report may wrap a long `-nn` header right before its ids.
            if let Some(next) = lines.get(i).map(|l| unquote(l)) {
                if is_ids_tail(next) {
                    if let Some(whole) = header(&format!("{t} {next}")) {
                        dev = whole;
                        i += 1;
                    }
                }
            }
            // The header of the device a command selected replaces it.
            if devices.last().is_some_and(|d| {
                d.class_name.is_empty() && d.regions.is_empty() && d.bdf == dev.bdf
            }) {
                devices.pop();
            }
            devices.push(dev);
            in_caps = false;
            next_index = 0;
            continue;
        }
        if devices.is_empty() {
            if let Some(r) = region_line(t, 0) {
                let mut dev = LspciDevice::bare(NO_ADDRESS);
                dev.headless = true;
                dev.regions.push(r);
                devices.push(dev);
            }
            continue;
        }
        let Some(dev) = devices.last_mut() else {
            continue;
        };
        // `lspci -x` ends the block with config space, after the
        // capabilities: its first row holds the ids the header may lack.
        if let Some((vendor, device, class)) = config_row0(t)
            .filter(|(v, _, _)| vendor_from_name(&dev.name).is_none_or(|named| named == *v))
        {
            dev.vendor = dev.vendor.or(Some(vendor));
            dev.device = dev.device.or(Some(device));
            dev.class = dev.class.or(Some(class));
            continue;
        }
        if t.starts_with("Capabilities:") {
            in_caps = true;
        } else if in_caps {
            continue;
        } else if t.starts_with("Bus:") && t.contains("primary=") {
            dev.has_bus_line = true;
        } else if let Some(r) = region_line(t, next_index) {
            let width = if r.mem64 { 2 } else { 1 };
            next_index = r.index.saturating_add(width);
            dev.regions.push(r);
        }
    }
    // A command with nothing after it says nothing about the device.
    devices.retain(|d| !d.class_name.is_empty() || !d.regions.is_empty() || d.vendor.is_some());
    // Region lines before any header: one headless group at most; a later
    // header is another device's.
    let headless: Vec<LspciRegion> = devices
        .iter()
        .filter(|d| d.headless)
        .flat_map(|d| d.regions.iter().copied())
        .collect();
    devices.retain(|d| !d.headless);
    if !headless.is_empty() {
        let mut dev = LspciDevice::bare(NO_ADDRESS);
        dev.headless = true;
        dev.regions = headless;
        devices.push(dev);
    }
    devices
}

impl LspciDevice {
    /// A device known only by its address (for other listings that share
    /// this record, QEMU's `info pci`).
    pub(crate) fn named(bdf: PciAddress) -> LspciDevice {
        LspciDevice::bare(bdf)
    }

    /// A device known only by its address, until its lines arrive.
    fn bare(bdf: PciAddress) -> LspciDevice {
        LspciDevice {
            bdf,
            class_name: String::new(),
            class: None,
            vendor: None,
            device: None,
            name: String::new(),
            regions: Vec::new(),
            has_bus_line: false,
            headless: false,
        }
    }
}

/// The device an lspci command line selects with `-s`: `$ lspci -vvv -s
/// 05:00.0 | grep Region`, `# lspci -s 0000:01:00.0 -vv`, `lspci -vvvs
/// 03:00.0`, `-s05:00.0`, after a shell prompt or `sudo`.
fn selected_by_command(t: &str) -> Option<PciAddress> {
    let at = t.find("lspci ")?;
    if at > 0 && !t[..at].ends_with([' ', '$', '#', '>']) {
        return None;
    }
    let args = t[at + "lspci ".len()..].split('|').next()?;
    let mut words = args.split_whitespace();
    while let Some(w) = words.next() {
        let Some(flags) = w.strip_prefix('-').filter(|f| !f.starts_with('-')) else {
            continue;
        };
        let Some(s) = flags.find('s') else { continue };
        let value = if s + 1 < flags.len() {
            &flags[s + 1..]
        } else {
            words.next()?
        };
        return selected_address(value);
    }
    None
}

/// `05:00.0` or `0000:05:00.0` (lspci's partial forms, `05:` or `.1`,
/// select several devices: none of them).
fn selected_address(s: &str) -> Option<PciAddress> {
    if s.matches(':').count() == 1 {
        format!("0000:{s}").parse().ok()
    } else {
        s.parse().ok()
    }
}

/// A row of `lspci -t -nn` (`+-02.0-[01]----01.0  NVIDIA Corporation Device
/// [10de:15f8]`): the device after the last bus bracket, with its ids.
/// Rows without a bracket (devices on the root bus) need the tree's root,
/// and rows without ids say nothing the diagnosis uses: both are skipped.
fn tree_row(t: &str) -> Option<LspciDevice> {
    if !t.starts_with(['+', '\\', '-', '|']) {
        return None;
    }
    let open = t.rfind("-[")?;
    let (bracket, rest) = t[open + 2..].split_once(']')?;
    let bus_text = bracket.split('-').next()?;
    let (domain, bus) = match bus_text.split_once(':') {
        Some((d, b)) => (hex(d)?, hex(b)?),
        None => (0, hex(bus_text)?),
    };
    let rest = rest.trim_start_matches(['-', '+']);
    let (devfn, name) = rest.split_once("  ")?;
    let bdf: PciAddress = format!("{domain:04x}:{bus:02x}:{devfn}").parse().ok()?;
    let (name, ids) = bracketed_suffix(name.trim())?;
    let (v, d) = ids.split_once(':')?;
    if v.len() != 4 || d.len() != 4 {
        return None;
    }
    let mut dev = LspciDevice::bare(bdf);
    dev.vendor = Some(hex(v)? as u16);
    dev.device = Some(hex(d)? as u16);
    dev.name = name.to_string();
    Some(dev)
}

/// Drops leading blanks and `>` e-mail quoting.
pub(crate) fn unquote(line: &str) -> &str {
    line.trim_start_matches(|c: char| c == '>' || c.is_whitespace())
        .trim_end()
}

/// A line, joined with up to two following ones while its brackets are
/// unbalanced and the next does not open a record of its own: a report that
/// wrapped `(64-bit,` / `prefetchable) [size=32G]`.
fn logical_line(lines: &[&str]) -> (String, usize) {
    let mut line = lines[0].to_string();
    let mut used = 1;
    while used < 3 && used < lines.len() && unbalanced(&line) {
        let next = unquote(lines[used]);
        if next.is_empty() || starts_record(next) {
            break;
        }
        line.push(' ');
        line.push_str(next);
        used += 1;
    }
    (line, used)
}

fn unbalanced(s: &str) -> bool {
    let count = |c| s.matches(c).count();
    count('[') > count(']') || count('(') > count(')')
}

const FIELD_STARTS: [&str; 24] = [
    "Region ",
    "Memory at",
    "I/O ports at",
    "Expansion ROM",
    "[virtual]",
    "[enhanced]",
    "Flags:",
    "Subsystem:",
    "DeviceName:",
    "Physical Slot:",
    "Control:",
    "Status:",
    "Latency:",
    "Interrupt:",
    "NUMA node:",
    "Bus:",
    "I/O behind bridge",
    "Memory behind bridge",
    "Prefetchable memory behind bridge",
    "Secondary status:",
    "BridgeCtl:",
    "Capabilities:",
    "Kernel driver in use:",
    "Kernel modules:",
];

fn starts_record(t: &str) -> bool {
    t.starts_with('#')
        || t.starts_with('[')
        || FIELD_STARTS.iter().any(|f| t.starts_with(f))
        || header(t).is_some()
}

/// `[10de:2331]`, maybe followed by `(rev a1)` and `(prog-if ...)`.
fn is_ids_tail(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 11
        && b[0] == b'['
        && b[5] == b':'
        && b[10] == b']'
        && b[1..5].iter().chain(&b[6..10]).all(u8::is_ascii_hexdigit)
        && (b.len() == 11 || t[11..].starts_with(" ("))
}

/// Bare hex as lspci prints it (no `0x`, though one is tolerated).
fn hex(s: &str) -> Option<u64> {
    hex_u64(s)
}

/// `[DDDD:]BB:DD.F <class>[ [CCSS]]: <name>[ [vvvv:dddd]][ (rev xx)][ (prog-if xx [...])]`
fn header(t: &str) -> Option<LspciDevice> {
    let (addr, rest) = t.split_once(' ')?;
    // Short-circuit before the full parse: most lines are not headers.
    if !addr.contains('.') || !addr.contains(':') {
        return None;
    }
    let bdf: PciAddress = addr.parse().ok()?;
    let (class_part, mut name) = rest.split_once(": ")?;
    let class_part = class_part.trim();
    let (class_name, class) = match bracketed_suffix(class_part) {
        Some((head, inner)) if inner.len() == 4 => match hex(inner) {
            Some(c) => (head, Some(c as u16)),
            None => (class_part, None),
        },
        _ => (class_part, None),
    };
    if class_name.is_empty() {
        return None;
    }
    name = name.trim();
    if let Some(at) = name.rfind(" (prog-if ") {
        if name.ends_with(')') {
            name = name[..at].trim_end();
        }
    }
    if let Some(at) = name.rfind(" (rev ") {
        if let Some(rev) = name[at + " (rev ".len()..].strip_suffix(')') {
            if rev.len() <= 2 && hex(rev).is_some() {
                name = name[..at].trim_end();
            }
        }
    }
    let (mut vendor, mut device) = (None, None);
    if let Some((head, inner)) = bracketed_suffix(name) {
        if let Some((v, d)) = inner.split_once(':') {
            if v.len() == 4 && d.len() == 4 {
                if let (Some(v), Some(d)) = (hex(v), hex(d)) {
                    vendor = Some(v as u16);
                    device = Some(d as u16);
                    name = head;
                }
            }
        }
    }
    Some(LspciDevice {
        bdf,
        class_name: class_name.to_string(),
        class,
        vendor,
        device,
        name: name.to_string(),
        regions: Vec::new(),
        has_bus_line: false,
        headless: false,
    })
}

/// The first row of an `lspci -x` dump, `00: de 10 c4 11 07 00 10 00 a1 00
/// 00 03 ...`: vendor and device id (little-endian words at 0x00 and 0x02),
/// base class and subclass (bytes 0x0b and 0x0a). The row must be whole:
/// sixteen bytes of two hex digits.
fn config_row0(t: &str) -> Option<(u16, u16, u16)> {
    let rest = t.strip_prefix("00: ")?;
    let bytes: Vec<u8> = rest
        .split(' ')
        .map(|b| {
            (b.len() == 2)
                .then(|| crate::parse::hex::hex_digits(b))
                .flatten()
                .map(|v| v as u8)
        })
        .collect::<Option<_>>()?;
    if bytes.len() != 16 {
        return None;
    }
    let word = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    // All ones is a device that fell off the bus (reads fail), zero no
    // device: neither is an id.
    let vendor = word(0);
    if vendor == 0xffff || vendor == 0 {
        return None;
    }
    Some((
        vendor,
        word(2),
        u16::from_be_bytes([bytes[0x0b], bytes[0x0a]]),
    ))
}

/// `text [inner]` -> (`text`, `inner`) when `s` ends with a bracket.
fn bracketed_suffix(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_suffix(']')?;
    let open = body.rfind('[')?;
    Some((body[..open].trim_end(), &body[open + 1..]))
}

#[cfg(test)]
mod tests {
    use super::region::size;
    use super::*;

    fn bdf(s: &str) -> PciAddress {
        s.parse().unwrap()
    }

    const GIB: u64 = 1 << 30;

    /// Corpus 14 (MacBook Pro, Thunderbolt eGPU), `lspci -v`.
    const EGPU: &str = "\
09:04.0 PCI bridge: Intel Corporation DSL6540 Thunderbolt [Alpine Ridge] (prog-if 00 [Normal decode])
\tPhysical Slot: 3
\tFlags: bus master, fast devsel, latency 0, IRQ 58
\tBus: primary=09, secondary=0b, subordinate=40, sec-latency=0
\tMemory behind bridge: 82c00000-82cfffff
\tPrefetchable memory behind bridge: 0000000082d00000-0000000082dfffff
\tCapabilities: <access denied>
\tKernel driver in use: pcieport
\tKernel modules: shpchp

0a:00.0 VGA compatible controller: NVIDIA Corporation Device 1b80 (rev a1) (prog-if 00 [VGA controller])
\tSubsystem: Gigabyte Technology Co., Ltd Device 3791
\tFlags: fast devsel, IRQ 19
\tMemory at 83000000 (32-bit, non-prefetchable) [size=16M]
\tMemory at <unassigned> (64-bit, prefetchable)
\tMemory at <unassigned> (64-bit, prefetchable)
\tI/O ports at <unassigned> [disabled]
\t[virtual] Expansion ROM at 84000000 [disabled] [size=512K]
\tCapabilities: <access denied>
\tKernel modules: nvidiafb, nouveau, nvidia_396, nvidia_396_drm
";

    #[test]
    fn lspci_v_from_a_bug_report() {
        let devs = parse(EGPU);
        assert_eq!(devs.len(), 2);
        let bridge = &devs[0];
        assert_eq!(bridge.bdf, bdf("09:04.0"));
        assert_eq!(bridge.class_name, "PCI bridge");
        assert_eq!(
            bridge.name,
            "Intel Corporation DSL6540 Thunderbolt [Alpine Ridge]"
        );
        assert_eq!(
            (bridge.vendor, bridge.device, bridge.class),
            (None, None, None)
        );
        assert!(bridge.has_bus_line);
        assert!(bridge.regions.is_empty());

        let gpu = &devs[1];
        assert_eq!(gpu.class_name, "VGA compatible controller");
        assert_eq!(gpu.name, "NVIDIA Corporation Device 1b80");
        assert!(!gpu.has_bus_line);
        let summary: Vec<_> = gpu
            .regions
            .iter()
            .map(|r| (r.index, r.io, r.address, r.mem64, r.prefetchable, r.size))
            .collect();
        // The expansion ROM line is not a BAR.
        assert_eq!(
            summary,
            [
                (
                    0,
                    false,
                    RegionAddr::Assigned(0x8300_0000),
                    false,
                    false,
                    Some(16 << 20)
                ),
                (1, false, RegionAddr::Unassigned, true, true, None),
                (3, false, RegionAddr::Unassigned, true, true, None),
                (5, true, RegionAddr::Unassigned, false, false, None),
            ]
        );
        assert!(gpu.regions.iter().all(|r| r.index_inferred));
    }

    #[test]
    fn lspci_nn_vv_with_region_numbers() {
        let text = "\
0000:01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20f1] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:145f]
\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tRegion 0: Memory at fb000000 (32-bit, non-prefetchable) [size=16M]
\tRegion 1: Memory at <unassigned> (64-bit, prefetchable) [size=32G]
\tRegion 3: Memory at <ignored> (64-bit, prefetchable)
\tRegion 5: I/O ports at e000 [disabled] [size=128]
\tExpansion ROM at fc000000 [disabled] [size=512K]
\tCapabilities: [bcc v1] Single Root I/O Virtualization (SR-IOV)
\t\tRegion 0: Memory at 0000003800000000 (64-bit, prefetchable)
\tKernel driver in use: nvidia
";
        let devs = parse(text);
        assert_eq!(devs.len(), 1);
        let d = &devs[0];
        assert_eq!(d.bdf, bdf("0000:01:00.0"));
        assert_eq!(d.class, Some(0x0300));
        assert_eq!((d.vendor, d.device), (Some(0x10de), Some(0x20f1)));
        assert_eq!(d.name, "NVIDIA Corporation GA100 [A100 PCIe 40GB]");
        let summary: Vec<_> = d
            .regions
            .iter()
            .map(|r| (r.index, r.index_inferred, r.address, r.size))
            .collect();
        // The SR-IOV capability's VF region is not one of the BARs.
        assert_eq!(
            summary,
            [
                (0, false, RegionAddr::Assigned(0xfb00_0000), Some(16 << 20)),
                (1, false, RegionAddr::Unassigned, Some(32 * GIB)),
                (3, false, RegionAddr::Ignored, None),
                (5, false, RegionAddr::Assigned(0xe000), Some(128)),
            ]
        );
    }

    #[test]
    fn a_bus_line_marks_a_bridge_and_window_lines_are_not_bars() {
        let text = "\
00:01.0 PCI bridge [0604]: Red Hat, Inc. QEMU PCIe Root port [1b36:000c]
\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0
\tI/O behind bridge: [disabled] [16-bit]
\tMemory behind bridge: fe800000-fe9fffff [size=2M] [32-bit]
\tPrefetchable memory behind bridge: 0000003800000000-00000039ffffffff [size=8G] [32-bit]
";
        let d = &parse(text)[0];
        assert_eq!(d.class, Some(0x0604));
        assert_eq!((d.vendor, d.device), (Some(0x1b36), Some(0x000c)));
        assert!(d.has_bus_line);
        assert!(d.regions.is_empty());
    }

    #[test]
    fn region_shapes() {
        let r = |t: &str| region_line(t, 0);
        let m = r("Memory at 3800000000 (64-bit, prefetchable) [size=32G]").unwrap();
        assert_eq!(
            (m.address, m.mem64, m.prefetchable, m.size),
            (
                RegionAddr::Assigned(0x38_0000_0000),
                true,
                true,
                Some(32 * GIB)
            )
        );
        let v =
            r("Region 2: [virtual] Memory at e0000000 (32-bit, prefetchable) [size=256M]").unwrap();
        assert_eq!((v.index, v.address), (2, RegionAddr::Virtual(0xe000_0000)));
        let v =
            r("Region 2: Memory at e0000000 (32-bit, prefetchable) [virtual] [size=256M]").unwrap();
        assert_eq!(v.address, RegionAddr::Virtual(0xe000_0000));
        let io = r("I/O ports at e000 [size=256]").unwrap();
        assert_eq!(
            (io.io, io.address, io.size),
            (true, RegionAddr::Assigned(0xe000), Some(256))
        );
        let low = r("Region 4: Memory at 000a0000 (low-1M, non-prefetchable) [size=128K]").unwrap();
        assert_eq!(
            (low.index, low.mem64, low.size),
            (4, false, Some(128 << 10))
        );
        let e = r("Region 0: [enhanced] Memory at 1000000000 (64-bit, non-prefetchable) [size=1T]")
            .unwrap();
        assert_eq!(e.size, Some(1 << 40));
        // Older lspci printed sizes from 2 GiB on as bare hex.
        let old =
            r("Region 1: Memory at <unassigned> (64-bit, prefetchable) [size=400000000]").unwrap();
        assert_eq!(old.size, Some(16 * GIB));
        for bad in [
            "Region 6: Memory at 0 (32-bit, prefetchable)",
            "Region x: Memory at 0 (32-bit, prefetchable)",
            "Memory at (64-bit, prefetchable)",
            "Memory at zz (64-bit, prefetchable)",
            "Memory at 1000 (64-bit)",
            "Memory at 1000 (64-bit, maybe)",
            "Memory at 1000",
            "Memory behind bridge: 1000-2000",
            "Region 1: Memory at <invalid-64bit-slot> (64-bit, prefetchable)",
        ] {
            assert_eq!(r(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes() {
        for (s, want) in [
            ("256", Some(256)),
            ("0", Some(0)),
            ("128K", Some(128 << 10)),
            ("16M", Some(16 << 20)),
            ("1536K", Some(1536 << 10)),
            ("32G", Some(32 * GIB)),
            ("1T", Some(1 << 40)),
            ("80000000", Some(0x8000_0000)),
            ("ffffffffffffffffff", None),
            ("99999999999G", None),
            ("16E", None),
            ("G", None),
            ("-1", None),
            ("", None),
            ("1.5G", None),
        ] {
            assert_eq!(size(s), want, "{s}");
        }
    }

    #[test]
    fn headers() {
        let h = header("c5:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X] [1002:74a1]").unwrap();
        assert_eq!(h.bdf, bdf("0000:c5:00.0"));
        assert_eq!(h.class_name, "Display controller");
        assert_eq!(h.class, Some(0x0380));
        assert_eq!((h.vendor, h.device), (Some(0x1002), Some(0x74a1)));
        assert_eq!(
            h.name,
            "Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]"
        );
        let h =
            header("10000:e1:00.1 3D controller: NVIDIA Corporation Device 2330 (rev a1)").unwrap();
        assert_eq!(h.bdf.domain, 0x10000);
        assert_eq!(h.name, "NVIDIA Corporation Device 2330");
        let h = header("00:1f.2 SATA controller [0106]: Intel Corporation 82801IR/IO/IH (ICH9R/DO/DH) 6 port SATA Controller [AHCI mode] [8086:2922] (rev 02) (prog-if 01 [AHCI 1.0])").unwrap();
        assert_eq!(
            h.name,
            "Intel Corporation 82801IR/IO/IH (ICH9R/DO/DH) 6 port SATA Controller [AHCI mode]"
        );
        assert_eq!(h.vendor, Some(0x8086));
        for bad in [
            "[    5.231911] pci 0000:01:01.0: [10de:15f8] type 00 class 0x030200",
            "pci 0000:01:01.0: reg 0x10: [mem 0x00000000-0x00ffffff]",
            "0000:01:00.0: BAR 2 something",
            "01:00.0 no colon here",
            "01:20.0 VGA compatible controller: x",
            "01:00.0 : empty class",
            "Memory at 83000000 (32-bit, non-prefetchable) [size=16M]",
        ] {
            assert!(header(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn mixed_quoted_wrapped_and_commented_text() {
        let text = "\
# lspci -vv on the guest, then dmesg
> 01:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 PCIe]
> [10de:2331] (rev a1)
>     Region 0: Memory at fa000000 (32-bit, non-prefetchable) [size=16M]
>     Region 1: Memory at <unassigned> (64-bit,
>         prefetchable) [size=128G]
[    0.5] pci 0000:01:00.0: BAR 1 [mem size 0x2000000000 64bit pref]: can't assign; no space
        Region 3: Memory at <unassigned> (64-bit, prefetchable) [size=32M]
  Memory at 1000 (32-bit, prefetchable)
";
        let devs = parse(text);
        assert_eq!(devs.len(), 1);
        let d = &devs[0];
        assert_eq!((d.vendor, d.device), (Some(0x10de), Some(0x2331)));
        assert_eq!(d.name, "NVIDIA Corporation GH100 [H100 PCIe]");
        let summary: Vec<_> = d.regions.iter().map(|r| (r.index, r.size)).collect();
        assert_eq!(
            summary,
            [
                (0, Some(16 << 20)),
                (1, Some(128 * GIB)),
                (3, Some(32 << 20)),
                (5, None)
            ]
        );
        // Field lines before any header belong to no device they name: one
        // headless group.
        let h = parse("\tRegion 0: Memory at fa000000 (32-bit, non-prefetchable)\n\tRegion 1: Memory at <unassigned> (64-bit, prefetchable)\n01:00.0 VGA compatible controller: NVIDIA Corporation GP104\n");
        assert_eq!(h.len(), 2, "{h:?}");
        assert!(h[1].headless && !h[0].headless);
        assert_eq!(h[1].regions.len(), 2);
    }

    #[test]
    fn a_second_header_starts_a_new_device() {
        let text = "01:00.0 VGA compatible controller: A\n\tMemory at 1000 (64-bit, prefetchable)\n01:00.1 Audio device: B\n\tMemory at 2000 (32-bit, non-prefetchable)\n";
        let devs = parse(text);
        assert_eq!(devs.len(), 2);
        assert_eq!(devs[1].regions.len(), 1);
        assert_eq!(devs[1].regions[0].index, 0);
        assert_eq!(devs[1].regions[0].address, RegionAddr::Assigned(0x2000));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn fragment() -> impl Strategy<Value = String> {
        // `select` over constants is far cheaper than a union of `Just`s
        // or regex strategies in a debug build.
        let words = proptest::sample::select(vec![
            "01:00.0 ",
            "0000:c5:00.0 ",
            "VGA compatible controller",
            " [0300]",
            ": ",
            " [10de:20f1]",
            " (rev a1)",
            " (prog-if 00 [VGA controller])",
            "\n\t",
            "Region ",
            "Memory at ",
            "I/O ports at ",
            "<unassigned>",
            "<ignored>",
            "[virtual] ",
            " (64-bit, prefetchable)",
            " (32-bit, non-prefetchable)",
            " [size=",
            " [disabled]",
            "Expansion ROM at ",
            "Bus: primary=",
            "Prefetchable memory behind bridge: ",
            "Capabilities: ",
            "-",
            "[",
            "]",
            "(",
            ")",
            "> ",
        ]);
        prop_oneof![
            8 => words.prop_map(str::to_string),
            1 => (any::<u64>(), 0usize..7).prop_map(|(n, u)| format!("{n:x}{}", ["", "K", "M", "G", "T", "P", "E"][u])),
            1 => proptest::collection::vec(0x20u8..0x7f, 0..8).prop_map(|b| String::from_utf8(b).unwrap()),
            1 => any::<char>().prop_map(String::from),
        ]
    }

    fn size_text(bytes: u64) -> String {
        let mut x = bytes;
        let mut unit = 0;
        while unit < 4 && x % 1024 == 0 {
            x /= 1024;
            unit += 1;
        }
        format!("{x}{}", ["", "K", "M", "G", "T"][unit])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_text_does_not_panic(s in proptest::collection::vec(any::<char>(), 0..300).prop_map(String::from_iter)) {
            let _ = parse(&s);
        }

        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn fragment_soup_does_not_panic(parts in proptest::collection::vec(fragment(), 0..40)) {
            let _ = parse(&parts.concat());
        }

        #[test]
        fn printed_regions_parse_back(
            index in 0u8..6,
            numbered in any::<bool>(),
            addr in prop_oneof![
                Just(None),
                Just(Some(0u64)),
                (1u64..(1 << 52)).prop_map(Some),
            ],
            mem64 in any::<bool>(),
            pref in any::<bool>(),
            order in 0u32..45,
            disabled in any::<bool>(),
        ) {
            let (addr_text, want_addr) = match addr {
                None => ("<unassigned>".to_string(), RegionAddr::Unassigned),
                Some(0) => ("<ignored>".to_string(), RegionAddr::Ignored),
                Some(a) => (format!("{a:08x}"), RegionAddr::Assigned(a)),
            };
            let size = 1u64 << order;
            let line = format!(
                "\t{}Memory at {addr_text} ({}, {}prefetchable){} [size={}]",
                if numbered { format!("Region {index}: ") } else { String::new() },
                if mem64 { "64-bit" } else { "32-bit" },
                if pref { "" } else { "non-" },
                if disabled { " [disabled]" } else { "" },
                size_text(size),
            );
            let text = format!("01:00.0 3D controller: X\n{line}\n");
            let devs = parse(&text);
            prop_assert_eq!(devs.len(), 1);
            prop_assert_eq!(
                devs[0].regions.clone(),
                vec![LspciRegion {
                    index: if numbered { index } else { 0 },
                    index_inferred: !numbered,
                    io: false,
                    address: want_addr,
                    mem64,
                    prefetchable: pref,
                    size: Some(size),
                    typed: true,
                }]
            );
        }
    }

    #[test]
    fn a_bare_ignored_token_and_a_disabled_region() {
        let d = parse("01:00.0 VGA compatible controller: NVIDIA Corporation GP104\n\tMemory at <ignored>\n\tRegion 3: Memory at f0000000 (64-bit, prefetchable) [disabled] [size=32M]\n");
        let r = &d[0].regions;
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].address, r[0].typed), (RegionAddr::Ignored, false));
        // `[disabled]`: an address, with decoding off; still an address.
        assert_eq!(r[1].address, RegionAddr::Assigned(0xf000_0000));
        assert!(r[1].typed && r[1].mem64 && r[1].size == Some(32 << 20));
    }

    #[test]
    fn the_ids_from_a_config_space_dump() {
        // Corpus 97: a header without `-nn`, then `lspci -x`'s rows.
        let block = "04:00.0 VGA compatible controller: NVIDIA Corporation GK106 [GeForce GTX 645 OEM] (rev a1)\n\
                     \tRegion 1: Memory at <unassigned> (64-bit, prefetchable) [disabled]\n\
                     \tCapabilities: [60] Power Management version 3\n\
                     \tKernel modules: nouveau\n\
                     00: de 10 c4 11 00 00 10 00 a1 00 00 03 00 00 80 00\n\
                     10: 00 00 00 00 0c 00 00 00 00 00 00 00 0c 00 00 00\n";
        let d = &parse(block)[0];
        assert_eq!(
            (d.vendor, d.device, d.class),
            (Some(0x10de), Some(0x11c4), Some(0x0300))
        );
        assert_eq!(d.regions.len(), 1);
        // A row whose vendor is not the one the header names is another
        // device's.
        let other = "01:00.0 VGA compatible controller: NVIDIA Corporation GK106\n00: 86 80 00 01 00 00 10 00 a1 00 00 03 00 00 80 00\n";
        let d = &parse(other)[0];
        assert_eq!((d.vendor, d.device, d.class), (None, None, None));
        // The header's `-nn` ids win; a cut or foreign row gives none.
        let nn = "01:00.0 3D controller [0302]: NVIDIA Corporation GA100 [10de:20f1]\n00: 86 80 00 01 00 00 10 00 a1 00 00 03 00 00 80 00\n";
        let d = &parse(nn)[0];
        assert_eq!(
            (d.vendor, d.device, d.class),
            (Some(0x10de), Some(0x20f1), Some(0x0302))
        );
        for row in [
            "00: de 10 c4 11 00 00 10 00 a1 00 00 03 00 00 80",
            "00: de 10 c4 11 00 00 10 00 a1 00 00 03 00 00 80 00 00",
            "00: de 10 c4 11 00 00 10 00 a1 00 00 3 00 00 80 00",
            "00: de 10 c4 11 00 00 10 00 a1 00 00 03 00 00 80 zz",
            // A device that fell off the bus reads all ones.
            "00: ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff",
            "00: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        ] {
            let d = &parse(&format!("01:00.0 3D controller: X\n{row}\n"))[0];
            assert_eq!((d.vendor, d.device, d.class), (None, None, None), "{row}");
        }
    }
}
