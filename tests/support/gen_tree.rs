//! Synthetic system roots for benchmarks and scale tests.
//!
//! Writes a sysfs/procfs tree with any number of PCI functions, shaped like a
//! Q35 guest (OVMF firmware, 46 physical address bits) that was handed eight
//! NVIDIA GPUs behind two PCIe switches and a set of SR-IOV NICs: every NIC
//! sits behind its own root port with its physical function and up to 255
//! virtual functions on one bus (ARI numbering, `BB:00.0` to `BB:1f.7`).
//!
//! The 64-bit root window is sized so that only `8 - unassigned` GPU BARs fit;
//! the rest are left unassigned the way the kernel leaves them: their line in
//! `resource` is all zeros while `config` keeps the BAR's flag bits (see
//! docs/lab.md, "The kernel's words"). One failed GPU keeps a zero upper dword
//! (`lspci` prints `<unassigned>`), the others the `0xfffffff8` OVMF leaves
//! there (`<ignored>`), so both readings of a failed BAR are exercised.
//!
//! The tree is complete enough for
//! `lspci -vv -A linux-sysfs -O sysfs.path=ROOT/sys/bus/pci`: every function
//! has `config` (256 bytes, capability list included), `resource`, `irq`,
//! the identity files and the usual extras (`enable`, `numa_node`,
//! `local_cpus`, `modalias`, link speed files, `driver` links).
//!
//! Shared by `examples/gen_tree.rs` and `tests/gen_tree.rs` through
//! `tests/support` and `#[path]`; it only uses std so that neither needs a
//! dependency.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::Path;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Size of each GPU's VRAM aperture (BAR 2), as on the field case.
pub const GPU_BAR_SIZE: u64 = 128 * GIB;
pub const GPU_COUNT: usize = 8;
pub const GPU_VENDOR: u16 = 0x10de;
pub const GPU_DEVICE: u16 = 0x2330;
pub const GPU_CLASS: u32 = 0x030200;
/// Where the 64-bit root window starts (OVMF's choice for this layout).
pub const WINDOW64_START: u64 = 0x80_0000_0000;
/// Room the 64-bit root window keeps for everything that is not a GPU.
const WINDOW64_SLACK: u64 = 64 * GIB;
/// Functions that exist whatever N is: the Q35 chipset (5) and the GPU
/// hierarchy (2 root ports, 2 switches of 1 upstream + 4 downstream ports,
/// 8 GPUs).
pub const FIXED_FUNCTIONS: usize = 5 + 2 + 2 * 5 + GPU_COUNT;
/// NIC root ports occupy bus 0 devices 03-1e, 8 functions each.
const MAX_NICS: usize = 28 * 8;
const NIC_PF_BAR: u64 = 32 * MIB;
const NIC_VF_BAR: u64 = MIB;
const CPUS: usize = 4;
/// What `dmesg` can hold with `log_buf_len=1M`: older lines are dropped.
pub const DEFAULT_LOG_CAP: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Options {
    /// Total PCI functions in `sys/bus/pci/devices` (at least
    /// `FIXED_FUNCTIONS`).
    pub functions: usize,
    /// How many of the eight GPUs get no address for BAR 2.
    pub unassigned: usize,
    /// The kernel log keeps only its last `log_cap` bytes, like the ring
    /// buffer it is read from.
    pub log_cap: usize,
}

impl Options {
    pub fn new(functions: usize) -> Self {
        Options {
            functions,
            unassigned: 3,
            log_cap: DEFAULT_LOG_CAP,
        }
    }

    /// Largest N this layout can hold.
    pub fn max_functions() -> usize {
        FIXED_FUNCTIONS + MAX_NICS * 257
    }
}

/// What was written, for the caller to check a report against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub functions: usize,
    /// GPU addresses, `DDDD:BB:DD.F`, in bus order.
    pub gpus: Vec<String>,
    /// GPUs whose BAR 2 is unassigned.
    pub unassigned: Vec<String>,
    pub bridges: usize,
    pub nic_functions: usize,
    pub dmesg_bytes: usize,
    /// The 64-bit root window, inclusive.
    pub window64: (u64, u64),
}

impl Summary {
    pub fn to_json(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{{\"functions\":{},\"gpus\":[{}],\"unassigned\":[{}],\"bridges\":{},\"nic_functions\":{},\"dmesg_bytes\":{},\"window64\":[\"{:#x}\",\"{:#x}\"]}}",
            self.functions,
            list(&self.gpus),
            list(&self.unassigned),
            self.bridges,
            self.nic_functions,
            self.dmesg_bytes,
            self.window64.0,
            self.window64.1
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Bdf {
    bus: u8,
    dev: u8,
    func: u8,
}

impl Bdf {
    fn new(bus: u8, dev: u8, func: u8) -> Self {
        Bdf { bus, dev, func }
    }

    /// ARI numbering: the 8-bit function number split as device.function.
    fn ari(bus: u8, n: usize) -> Self {
        Bdf::new(bus, (n >> 3) as u8, (n & 7) as u8)
    }

    fn name(&self) -> String {
        format!("0000:{:02x}:{:02x}.{:x}", self.bus, self.dev, self.func)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BarKind {
    Io,
    Mem32 { pref: bool },
    Mem64 { pref: bool },
}

#[derive(Debug, Clone, Copy)]
struct Bar {
    index: usize,
    kind: BarKind,
    size: u64,
    /// `None`: the kernel could not place it.
    start: Option<u64>,
    /// Upper dword left in config for a failed 64-bit BAR.
    failed_upper: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    HostBridge,
    Vga,
    Isa,
    Sata,
    Smbus,
    RootPort,
    SwitchUp,
    SwitchDown,
    Gpu,
    NicPf,
    NicVf,
}

/// Bridge windows, inclusive ranges; `None` is a closed window.
#[derive(Debug, Clone, Copy, Default)]
struct Windows {
    io: Option<(u64, u64)>,
    mem: Option<(u64, u64)>,
    pref: Option<(u64, u64)>,
}

#[derive(Debug, Clone)]
struct Func {
    bdf: Bdf,
    kind: Kind,
    parent: Option<usize>,
    vendor: u16,
    device: u16,
    class: u32,
    revision: u8,
    subsys: (u16, u16),
    bars: Vec<Bar>,
    /// SR-IOV VF BAR 0 region of a physical function (resource line 7).
    iov: Option<(u64, u64)>,
    total_vfs: usize,
    bridge: Option<(u8, u8, Windows)>,
    multifunction: bool,
    driver: Option<&'static str>,
    irq: u32,
    /// Physical function of a VF (index into the function list).
    physfn: Option<usize>,
    /// (speed code, width) of the link, PCIe functions only.
    link: Option<(u8, u8)>,
    slot: Option<u16>,
}

impl Func {
    fn new(bdf: Bdf, kind: Kind, parent: Option<usize>) -> Self {
        Func {
            bdf,
            kind,
            parent,
            vendor: 0,
            device: 0,
            class: 0,
            revision: 0,
            subsys: (0, 0),
            bars: Vec::new(),
            iov: None,
            total_vfs: 0,
            bridge: None,
            multifunction: false,
            driver: None,
            irq: 0,
            physfn: None,
            link: None,
            slot: None,
        }
    }

    fn ids(mut self, vendor: u16, device: u16, class: u32, revision: u8) -> Self {
        self.vendor = vendor;
        self.device = device;
        self.class = class;
        self.revision = revision;
        self
    }

    fn is_pcie(&self) -> bool {
        !matches!(
            self.kind,
            Kind::HostBridge | Kind::Vga | Kind::Isa | Kind::Sata | Kind::Smbus
        )
    }
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Builds the topology with every address decided.
fn build(opts: &Options) -> Result<(Vec<Func>, (u64, u64)), String> {
    if opts.functions < FIXED_FUNCTIONS || opts.functions > Options::max_functions() {
        return Err(format!(
            "--functions must be between {} and {} for this layout, not {}",
            FIXED_FUNCTIONS,
            Options::max_functions(),
            opts.functions
        ));
    }
    if opts.unassigned > GPU_COUNT {
        return Err(format!("--unassigned is at most {GPU_COUNT}"));
    }
    let mut f: Vec<Func> = Vec::with_capacity(opts.functions);
    let push = |f: &mut Vec<Func>, x: Func| -> usize {
        f.push(x);
        f.len() - 1
    };

    // Bus 0: the Q35 chipset functions QEMU always adds.
    let mut host =
        Func::new(Bdf::new(0, 0, 0), Kind::HostBridge, None).ids(0x8086, 0x29c0, 0x060000, 0);
    host.subsys = (0x1af4, 0x1100);
    push(&mut f, host);
    let mut vga = Func::new(Bdf::new(0, 1, 0), Kind::Vga, None).ids(0x1234, 0x1111, 0x030000, 2);
    vga.subsys = (0x1af4, 0x1100);
    vga.bars = vec![
        bar(
            0,
            BarKind::Mem32 { pref: true },
            16 * MIB,
            Some(0xc000_0000),
        ),
        bar(
            2,
            BarKind::Mem32 { pref: false },
            4 * KIB,
            Some(0xc100_0000),
        ),
    ];
    vga.driver = Some("bochs-drm");
    push(&mut f, vga);

    // Two root ports, each with a switch of four downstream ports and a GPU
    // under each; GPUs are numbered in bus order and the last `unassigned`
    // ones get no space for BAR 2.
    let assigned_gpus = GPU_COUNT - opts.unassigned;
    let mut pref_cursor = WINDOW64_START;
    let mut gpu_no = 0usize;
    let mut bus = 1u8;
    let mut irq = 16u32;
    for sw in 0..2u8 {
        let mem_base = 0xc400_0000 + u64::from(sw) * 64 * MIB;
        let rp_bus = bus;
        let mut rp =
            Func::new(Bdf::new(0, 2, sw), Kind::RootPort, None).ids(0x1b36, 0x000c, 0x060400, 0);
        rp.multifunction = sw == 0;
        rp.driver = Some("pcieport");
        rp.link = Some((4, 16));
        rp.slot = Some(u16::from(sw));
        rp.irq = irq;
        let rp_i = push(&mut f, rp);
        let mut up = Func::new(Bdf::new(rp_bus, 0, 0), Kind::SwitchUp, Some(rp_i))
            .ids(0x10b5, 0xc010, 0x060400, 0xb0);
        up.driver = Some("pcieport");
        up.link = Some((5, 16));
        let up_i = push(&mut f, up);
        let down_bus = rp_bus + 1;
        let sw_pref_start = pref_cursor;
        let mut first_gpu_bus = 0;
        for port in 0..4u8 {
            let gpu_bus = down_bus + 1 + port;
            if port == 0 {
                first_gpu_bus = gpu_bus;
            }
            let mut dp = Func::new(Bdf::new(down_bus, port, 0), Kind::SwitchDown, Some(up_i))
                .ids(0x10b5, 0xc010, 0x060400, 0xb0);
            dp.driver = Some("pcieport");
            dp.link = Some((5, 16));
            dp.slot = Some(u16::from(sw) * 4 + u16::from(port) + 8);
            let gpu_mem = mem_base + u64::from(port) * 16 * MIB;
            let ok = gpu_no < assigned_gpus;
            let pref = if ok {
                let s = pref_cursor;
                pref_cursor += GPU_BAR_SIZE;
                Some((s, s + GPU_BAR_SIZE - 1))
            } else {
                None
            };
            dp.bridge = Some((
                gpu_bus,
                gpu_bus,
                Windows {
                    io: None,
                    mem: Some((gpu_mem, gpu_mem + 16 * MIB - 1)),
                    pref,
                },
            ));
            let dp_i = push(&mut f, dp);
            let mut gpu = Func::new(Bdf::new(gpu_bus, 0, 0), Kind::Gpu, Some(dp_i))
                .ids(GPU_VENDOR, GPU_DEVICE, GPU_CLASS, 0xa1);
            gpu.subsys = (GPU_VENDOR, 0x16c1);
            gpu.link = Some((5, 16));
            gpu.irq = irq;
            gpu.bars = vec![
                bar(0, BarKind::Mem32 { pref: false }, 16 * MIB, Some(gpu_mem)),
                Bar {
                    failed_upper: if gpu_no == assigned_gpus {
                        0
                    } else {
                        0xffff_fff8
                    },
                    ..bar(
                        2,
                        BarKind::Mem64 { pref: true },
                        GPU_BAR_SIZE,
                        pref.map(|p| p.0),
                    )
                },
            ];
            push(&mut f, gpu);
            gpu_no += 1;
        }
        let last_bus = first_gpu_bus + 3;
        let sw_pref = if pref_cursor > sw_pref_start {
            Some((sw_pref_start, pref_cursor - 1))
        } else {
            None
        };
        let win = Windows {
            io: None,
            mem: Some((mem_base, mem_base + 64 * MIB - 1)),
            pref: sw_pref,
        };
        f[rp_i].bridge = Some((rp_bus, last_bus, win));
        f[up_i].bridge = Some((down_bus, last_bus, win));
        bus = last_bus + 1;
        irq += 1;
    }
    // The window the firmware offered: room for the GPUs that fit, plus
    // slack for the NICs. The rest is exactly what a failed BAR needs.
    let window64 = (WINDOW64_START, pref_cursor + WINDOW64_SLACK - 1);
    let mut nic_cursor = align_up(pref_cursor, GIB);

    // NICs: one root port each, PF plus VFs on its bus, until N is reached.
    let chipset_tail = 3;
    let mut left = opts.functions - f.len() - chipset_tail;
    let mut nic = 0usize;
    while left > 0 {
        if nic >= MAX_NICS {
            return Err("too many functions for one PCI domain in this layout".into());
        }
        let nic_bus = bus;
        let mut rp = Func::new(
            Bdf::new(0, 3 + (nic / 8) as u8, (nic % 8) as u8),
            Kind::RootPort,
            None,
        )
        .ids(0x1b36, 0x000c, 0x060400, 0);
        rp.driver = Some("pcieport");
        rp.link = Some((4, 16));
        rp.slot = Some(32 + nic as u16);
        rp.irq = irq;
        left -= 1;
        let on_bus = left.min(256);
        left -= on_bus;
        let rp_i = push(&mut f, rp);
        let mut win = Windows::default();
        if on_bus > 0 {
            let vfs = on_bus - 1;
            let start = align_up(nic_cursor, NIC_PF_BAR);
            let iov_start = start + NIC_PF_BAR;
            let iov_size = vfs as u64 * NIC_VF_BAR;
            let end = align_up(iov_start + iov_size, NIC_PF_BAR) - 1;
            nic_cursor = end + 1;
            win.pref = Some((start, end));
            let mut pf = Func::new(Bdf::ari(nic_bus, 0), Kind::NicPf, Some(rp_i))
                .ids(0x15b3, 0x101d, 0x020000, 0);
            pf.subsys = (0x15b3, 0x0016);
            pf.bars = vec![bar(
                0,
                BarKind::Mem64 { pref: true },
                NIC_PF_BAR,
                Some(start),
            )];
            if vfs > 0 {
                pf.iov = Some((iov_start, iov_start + iov_size - 1));
            }
            pf.total_vfs = vfs;
            pf.driver = Some("mlx5_core");
            pf.link = Some((4, 16));
            pf.irq = irq;
            pf.multifunction = vfs > 0;
            let pf_i = push(&mut f, pf);
            for v in 0..vfs {
                let mut vf = Func::new(Bdf::ari(nic_bus, v + 1), Kind::NicVf, Some(rp_i))
                    .ids(0x15b3, 0x101e, 0x020000, 0);
                vf.subsys = (0x15b3, 0x0016);
                let s = iov_start + v as u64 * NIC_VF_BAR;
                vf.bars = vec![bar(0, BarKind::Mem64 { pref: true }, NIC_VF_BAR, Some(s))];
                vf.driver = Some("mlx5_core");
                vf.physfn = Some(pf_i);
                push(&mut f, vf);
            }
        }
        f[rp_i].bridge = Some((nic_bus, nic_bus, win));
        bus = bus
            .checked_add(1)
            .ok_or("ran out of bus numbers in domain 0000")?;
        nic += 1;
        irq = 16 + (irq - 15) % 8;
    }
    if nic_cursor > window64.1 {
        return Err("NIC BARs do not fit the 64-bit root window".into());
    }
    // Root ports sharing a device number: function 0 says so.
    for d in 3..=0x1eu8 {
        let n = f
            .iter()
            .filter(|x| x.bdf.bus == 0 && x.bdf.dev == d)
            .count();
        if n > 1 {
            if let Some(x) = f.iter_mut().find(|x| x.bdf == Bdf::new(0, d, 0)) {
                x.multifunction = true;
            }
        }
    }

    // The ICH9 functions at 00:1f.
    let mut isa = Func::new(Bdf::new(0, 0x1f, 0), Kind::Isa, None).ids(0x8086, 0x2918, 0x060100, 2);
    isa.subsys = (0x1af4, 0x1100);
    isa.multifunction = true;
    isa.driver = Some("lpc_ich");
    push(&mut f, isa);
    let mut sata =
        Func::new(Bdf::new(0, 0x1f, 2), Kind::Sata, None).ids(0x8086, 0x2922, 0x010601, 2);
    sata.subsys = (0x1af4, 0x1100);
    sata.bars = vec![
        bar(4, BarKind::Io, 32, Some(0xc040)),
        bar(
            5,
            BarKind::Mem32 { pref: false },
            4 * KIB,
            Some(0xc100_1000),
        ),
    ];
    sata.driver = Some("ahci");
    sata.irq = 28;
    push(&mut f, sata);
    let mut smbus =
        Func::new(Bdf::new(0, 0x1f, 3), Kind::Smbus, None).ids(0x8086, 0x2930, 0x0c0500, 2);
    smbus.subsys = (0x1af4, 0x1100);
    smbus.bars = vec![bar(4, BarKind::Io, 64, Some(0x0700))];
    smbus.driver = Some("i801_smbus");
    smbus.irq = 16;
    push(&mut f, smbus);

    debug_assert_eq!(f.len(), opts.functions);
    Ok((f, window64))
}

fn bar(index: usize, kind: BarKind, size: u64, start: Option<u64>) -> Bar {
    Bar {
        index,
        kind,
        size,
        start,
        failed_upper: 0,
    }
}

/// `IORESOURCE_*` flags as sysfs `resource` prints them, low BAR bits
/// included (see `pci_read_bases` / `decode_bar` in drivers/pci/probe.c).
fn bar_flags(kind: BarKind) -> u64 {
    const IO: u64 = 0x100;
    const MEM: u64 = 0x200;
    const PREFETCH: u64 = 0x2000;
    const SIZEALIGN: u64 = 0x40000;
    const MEM_64: u64 = 0x10_0000;
    match kind {
        BarKind::Io => IO | SIZEALIGN | 0x1,
        BarKind::Mem32 { pref } => MEM | SIZEALIGN | if pref { PREFETCH | 0x8 } else { 0 },
        BarKind::Mem64 { pref } => {
            MEM | SIZEALIGN | MEM_64 | 0x4 | if pref { PREFETCH | 0x8 } else { 0 }
        }
    }
}

fn resource_text(x: &Func) -> String {
    let lines = if x.bridge.is_some() { 17 } else { 13 };
    let mut r = vec![(0u64, 0u64, 0u64); lines];
    for b in &x.bars {
        if let Some(s) = b.start {
            r[b.index] = (s, s + b.size - 1, bar_flags(b.kind));
        }
    }
    if let Some((s, e)) = x.iov {
        r[7] = (s, e, bar_flags(BarKind::Mem64 { pref: true }));
    }
    if let Some((_, _, w)) = x.bridge {
        if let Some((s, e)) = w.io {
            r[13] = (s, e, 0x100);
        }
        if let Some((s, e)) = w.mem {
            r[14] = (s, e, 0x200);
        }
        if let Some((s, e)) = w.pref {
            r[15] = (s, e, 0x10_2201);
        }
    }
    let mut out = String::with_capacity(lines * 57);
    for (s, e, fl) in r {
        let _ = writeln!(out, "0x{s:016x} 0x{e:016x} 0x{fl:016x}");
    }
    out
}

fn w16(c: &mut [u8], off: usize, v: u16) {
    c[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn w32(c: &mut [u8], off: usize, v: u32) {
    c[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// The BAR register(s) as the kernel left them: address and type bits for
/// an assigned BAR, type bits (and the firmware's upper dword) for a failed
/// one.
fn bar_registers(b: &Bar) -> (u32, Option<u32>) {
    let low_flags = (bar_flags(b.kind) & 0xf) as u32;
    match (b.kind, b.start) {
        (BarKind::Io, Some(s)) => ((s as u32 & !0x3) | 0x1, None),
        (BarKind::Io, None) => (0x1, None),
        (BarKind::Mem32 { .. }, Some(s)) => ((s as u32 & !0xf) | low_flags, None),
        (BarKind::Mem32 { .. }, None) => (low_flags, None),
        (BarKind::Mem64 { .. }, Some(s)) => ((s as u32 & !0xf) | low_flags, Some((s >> 32) as u32)),
        (BarKind::Mem64 { .. }, None) => (low_flags, Some(b.failed_upper)),
    }
}

fn config_bytes(x: &Func) -> [u8; 256] {
    let mut c = [0u8; 256];
    w16(&mut c, 0x00, x.vendor);
    w16(&mut c, 0x02, x.device);
    let command: u16 = match x.kind {
        Kind::HostBridge => 0x0000,
        Kind::Gpu => 0x0002,
        Kind::Sata | Kind::Smbus => 0x0407,
        Kind::Vga => 0x0003,
        _ => 0x0406,
    };
    w16(&mut c, 0x04, command);
    c[0x08] = x.revision;
    c[0x09] = x.class as u8;
    c[0x0a] = (x.class >> 8) as u8;
    c[0x0b] = (x.class >> 16) as u8;
    let header: u8 = if x.bridge.is_some() { 1 } else { 0 };
    c[0x0e] = header | if x.multifunction { 0x80 } else { 0 };
    for b in &x.bars {
        let (lo, hi) = bar_registers(b);
        w32(&mut c, 0x10 + 4 * b.index, lo);
        if let Some(hi) = hi {
            w32(&mut c, 0x14 + 4 * b.index, hi);
        }
    }
    let pin = match x.kind {
        Kind::NicVf | Kind::HostBridge | Kind::Isa | Kind::Vga => 0,
        Kind::Sata | Kind::Smbus => 1,
        _ => 1,
    };
    c[0x3c] = if pin > 0 { x.irq as u8 } else { 0xff };
    c[0x3d] = pin;
    if let Some((sec, sub, w)) = x.bridge {
        c[0x18] = x.bdf.bus;
        c[0x19] = sec;
        c[0x1a] = sub;
        match w.io {
            Some((s, e)) => {
                c[0x1c] = ((s >> 8) & 0xf0) as u8;
                c[0x1d] = ((e >> 8) & 0xf0) as u8;
            }
            None => {
                c[0x1c] = 0xf0;
                c[0x1d] = 0x00;
            }
        }
        match w.mem {
            Some((s, e)) => {
                w16(&mut c, 0x20, ((s >> 16) & 0xfff0) as u16);
                w16(&mut c, 0x22, ((e >> 16) & 0xfff0) as u16);
            }
            None => {
                w16(&mut c, 0x20, 0xfff0);
                w16(&mut c, 0x22, 0x0000);
            }
        }
        match w.pref {
            Some((s, e)) => {
                w16(&mut c, 0x24, (((s >> 16) & 0xfff0) | 1) as u16);
                w16(&mut c, 0x26, (((e >> 16) & 0xfff0) | 1) as u16);
                w32(&mut c, 0x28, (s >> 32) as u32);
                w32(&mut c, 0x2c, (e >> 32) as u32);
            }
            None => {
                w16(&mut c, 0x24, 0xfff1);
                w16(&mut c, 0x26, 0x0001);
            }
        }
        w16(&mut c, 0x3e, 0x0002);
    } else {
        w16(&mut c, 0x2c, x.subsys.0);
        w16(&mut c, 0x2e, x.subsys.1);
    }

    // Capabilities: PCI Express at 0x40, power management at 0x80, MSI-X
    // (endpoints with a driver-visible table) or MSI (AHCI) at 0x90.
    let mut caps = false;
    if x.is_pcie() {
        caps = true;
        c[0x34] = 0x40;
        let p = 0x40;
        c[p] = 0x10;
        c[p + 1] = 0x80;
        let port_type: u16 = match x.kind {
            Kind::RootPort => 4,
            Kind::SwitchUp => 5,
            Kind::SwitchDown => 6,
            _ => 0,
        };
        let slot_bit: u16 = if x.slot.is_some() { 0x0100 } else { 0 };
        w16(&mut c, p + 2, 0x0002 | (port_type << 4) | slot_bit);
        // Device capabilities: 512-byte max payload, role-based error
        // reporting; VFs report no FLR-less surprises.
        w32(
            &mut c,
            p + 4,
            0x0000_8002
                | if x.kind == Kind::NicVf {
                    0x1000_0000
                } else {
                    0
                },
        );
        w16(&mut c, p + 8, 0x2830);
        if let Some((speed, width)) = x.link {
            let port_no = u32::from(x.bdf.dev) + 1;
            w32(
                &mut c,
                p + 0x0c,
                (port_no << 24) | 0x0040_0000 | (u32::from(width) << 4) | u32::from(speed),
            );
            w16(
                &mut c,
                p + 0x12,
                0x2000 | (u16::from(width) << 4) | u16::from(speed),
            );
            w32(&mut c, p + 0x2c, ((1u32 << speed) - 2) & 0xfe);
            w16(&mut c, p + 0x30, u16::from(speed));
        }
        if let Some(slot) = x.slot {
            w32(&mut c, p + 0x14, (u32::from(slot) << 19) | 0x0004_0060);
            w16(&mut c, p + 0x1a, 0x0040);
        }
        w32(&mut c, p + 0x24, 0x0000_0010);
        // Power management.
        c[0x80] = 0x01;
        w16(&mut c, 0x82, 0x0003);
        w16(&mut c, 0x84, 0x0008);
        if matches!(x.kind, Kind::Gpu | Kind::NicPf | Kind::NicVf) {
            c[0x81] = 0x90;
            c[0x90] = 0x11;
            let enabled: u16 = if x.driver.is_some() { 0x8000 } else { 0 };
            let table: u16 = if x.kind == Kind::NicVf { 7 } else { 63 };
            w16(&mut c, 0x92, enabled | table);
            w32(&mut c, 0x94, 0x0000_2000);
            w32(&mut c, 0x98, 0x0000_3000);
        }
    } else if x.kind == Kind::Sata {
        caps = true;
        c[0x34] = 0x80;
        c[0x80] = 0x05;
        w16(&mut c, 0x82, 0x0081);
        w32(&mut c, 0x84, 0xfee0_1000);
        w16(&mut c, 0x88, 0x4021);
    }
    let status: u16 = if caps { 0x0010 } else { 0x0000 };
    w16(&mut c, 0x06, status);
    c
}

/// Path of a function's directory below `sys/devices`, parents first.
fn device_path(f: &[Func], i: usize) -> String {
    let mut chain = vec![i];
    let mut cur = i;
    while let Some(p) = f[cur].parent {
        chain.push(p);
        cur = p;
    }
    let mut s = String::from("pci0000:00");
    for &j in chain.iter().rev() {
        s.push('/');
        s.push_str(&f[j].bdf.name());
    }
    s
}

fn link_speed_text(code: u8) -> &'static str {
    match code {
        1 => "2.5 GT/s PCIe",
        2 => "5.0 GT/s PCIe",
        3 => "8.0 GT/s PCIe",
        4 => "16.0 GT/s PCIe",
        5 => "32.0 GT/s PCIe",
        _ => "Unknown",
    }
}

fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let p = dir.join(name);
    fs::write(&p, contents)
        .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", p.display())))
}

fn mkdirs(p: &Path) -> io::Result<()> {
    fs::create_dir_all(p)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", p.display())))
}

fn link(target: &str, at: &Path) -> io::Result<()> {
    symlink(target, at)
        .map_err(|e| io::Error::new(e.kind(), format!("linking {}: {e}", at.display())))
}

/// Writes the tree under `out` (created if missing; must not already hold a
/// tree) and says what it holds.
pub fn generate(out: &Path, opts: &Options) -> io::Result<Summary> {
    let (f, window64) = build(opts).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let sys = out.join("sys");
    let bus_devices = sys.join("bus/pci/devices");
    mkdirs(&bus_devices)?;
    mkdirs(&sys.join("bus/pci/slots"))?;
    let mut drivers: Vec<&str> = f.iter().filter_map(|x| x.driver).collect();
    drivers.sort();
    drivers.dedup();
    for d in &drivers {
        mkdirs(&sys.join("bus/pci/drivers").join(d))?;
    }
    let root_dir = sys.join("devices/pci0000:00");
    mkdirs(&root_dir)?;

    let paths: Vec<String> = (0..f.len()).map(|i| device_path(&f, i)).collect();
    for (i, x) in f.iter().enumerate() {
        let rel = &paths[i];
        let dir = sys.join("devices").join(rel);
        mkdirs(&dir)?;
        write(&dir, "vendor", format!("0x{:04x}\n", x.vendor))?;
        write(&dir, "device", format!("0x{:04x}\n", x.device))?;
        write(&dir, "class", format!("0x{:06x}\n", x.class))?;
        write(&dir, "revision", format!("0x{:02x}\n", x.revision))?;
        write(&dir, "subsystem_vendor", format!("0x{:04x}\n", x.subsys.0))?;
        write(&dir, "subsystem_device", format!("0x{:04x}\n", x.subsys.1))?;
        write(&dir, "resource", resource_text(x))?;
        write(&dir, "config", config_bytes(x))?;
        write(&dir, "irq", format!("{}\n", x.irq))?;
        let enabled = x.driver.is_some() || x.bridge.is_some();
        write(&dir, "enable", if enabled { "1\n" } else { "0\n" })?;
        write(&dir, "numa_node", "-1\n")?;
        write(&dir, "local_cpus", format!("{:x}\n", (1u32 << CPUS) - 1))?;
        write(&dir, "local_cpulist", format!("0-{}\n", CPUS - 1))?;
        write(
            &dir,
            "modalias",
            format!(
                "pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc{:02X}sc{:02X}i{:02X}\n",
                x.vendor,
                x.device,
                x.subsys.0,
                x.subsys.1,
                x.class >> 16,
                (x.class >> 8) & 0xff,
                x.class & 0xff
            ),
        )?;
        if let Some((speed, width)) = x.link {
            write(
                &dir,
                "current_link_speed",
                format!("{}\n", link_speed_text(speed)),
            )?;
            write(
                &dir,
                "max_link_speed",
                format!("{}\n", link_speed_text(speed)),
            )?;
            write(&dir, "current_link_width", format!("{width}\n"))?;
            write(&dir, "max_link_width", format!("{width}\n"))?;
        }
        if let Some((sec, sub, _)) = x.bridge {
            write(&dir, "secondary_bus_number", format!("{sec}\n"))?;
            write(&dir, "subordinate_bus_number", format!("{sub}\n"))?;
        }
        // Relative links, as the kernel makes them.
        let depth = rel.matches('/').count() + 2; // devices/pci0000:00/...
        let up = "../".repeat(depth);
        if let Some(d) = x.driver {
            link(&format!("{up}bus/pci/drivers/{d}"), &dir.join("driver"))?;
        }
        if x.total_vfs > 0 {
            write(&dir, "sriov_totalvfs", format!("{}\n", x.total_vfs))?;
            write(&dir, "sriov_numvfs", format!("{}\n", x.total_vfs))?;
            for v in 0..x.total_vfs {
                let vf = Bdf::ari(x.bdf.bus, v + 1);
                link(
                    &format!("../{}", vf.name()),
                    &dir.join(format!("virtfn{v}")),
                )?;
            }
        }
        if let Some(pf) = x.physfn {
            link(&format!("../{}", f[pf].bdf.name()), &dir.join("physfn"))?;
        }
        link(
            &format!("../../../devices/{rel}"),
            &bus_devices.join(x.bdf.name()),
        )?;
    }

    write_proc(out, &f, window64)?;
    write_dmi(out)?;
    let log = dmesg_text(&f, window64, opts.log_cap);
    write(out, "dmesg.txt", &log)?;

    let gpus: Vec<&Func> = f.iter().filter(|x| x.kind == Kind::Gpu).collect();
    Ok(Summary {
        functions: f.len(),
        gpus: gpus.iter().map(|x| x.bdf.name()).collect(),
        unassigned: gpus
            .iter()
            .filter(|x| x.bars.iter().any(|b| b.start.is_none()))
            .map(|x| x.bdf.name())
            .collect(),
        bridges: f.iter().filter(|x| x.bridge.is_some()).count(),
        nic_functions: f
            .iter()
            .filter(|x| matches!(x.kind, Kind::NicPf | Kind::NicVf))
            .count(),
        dmesg_bytes: log.len(),
        window64,
    })
}

/// One `/proc/iomem` entry and the entries nested in it.
struct IomemNode {
    start: u64,
    end: u64,
    name: String,
    children: Vec<IomemNode>,
}

fn iomem_insert(list: &mut Vec<IomemNode>, start: u64, end: u64, name: String) {
    if let Some(parent) = list.iter_mut().find(|n| n.start <= start && end <= n.end) {
        return iomem_insert(&mut parent.children, start, end, name);
    }
    list.push(IomemNode {
        start,
        end,
        name,
        children: Vec::new(),
    });
}

fn iomem_print(list: &mut [IomemNode], depth: usize, out: &mut String) {
    list.sort_by_key(|n| n.start);
    for n in list.iter_mut() {
        let _ = writeln!(
            out,
            "{:indent$}{:08x}-{:08x} : {}",
            "",
            n.start,
            n.end,
            n.name,
            indent = depth * 2
        );
        iomem_print(&mut n.children, depth + 1, out);
    }
}

fn iomem_text(f: &[Func], window64: (u64, u64)) -> String {
    let mut top: Vec<IomemNode> = Vec::new();
    let fixed: [(u64, u64, &str); 9] = [
        (0x0, 0xfff, "Reserved"),
        (0x1000, 0x9ffff, "System RAM"),
        (0xa0000, 0xbffff, "PCI Bus 0000:00"),
        (0xf0000, 0xfffff, "System ROM"),
        (0x100000, 0x7fedffff, "System RAM"),
        (0xb000_0000, 0xbfff_ffff, "PCI MMCONFIG 0000 [bus 00-ff]"),
        (0xc000_0000, 0xfebf_ffff, "PCI Bus 0000:00"),
        (0xfec0_0000, 0xfec0_03ff, "IOAPIC 0"),
        (0x1_0000_0000, 0x2_7fff_ffff, "System RAM"),
    ];
    for (s, e, n) in fixed {
        iomem_insert(&mut top, s, e, n.to_string());
    }
    iomem_insert(&mut top, window64.0, window64.1, "PCI Bus 0000:00".into());
    for x in f {
        if let Some((sec, _, w)) = x.bridge {
            for (s, e) in [w.mem, w.pref].into_iter().flatten() {
                iomem_insert(&mut top, s, e, format!("PCI Bus 0000:{sec:02x}"));
            }
        }
        if let Some((s, e)) = x.iov {
            iomem_insert(&mut top, s, e, x.bdf.name());
        }
        for b in &x.bars {
            if let (Some(s), false) = (b.start, b.kind == BarKind::Io) {
                iomem_insert(&mut top, s, s + b.size - 1, x.bdf.name());
            }
        }
    }
    let mut out = String::new();
    iomem_print(&mut top, 0, &mut out);
    out
}

fn write_proc(out: &Path, f: &[Func], window64: (u64, u64)) -> io::Result<()> {
    let proc_dir = out.join("proc");
    mkdirs(&proc_dir)?;
    write(&proc_dir, "iomem", iomem_text(f, window64))?;
    write(
        &proc_dir,
        "cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=6a1f3c2e-8d4b-4c59-9f0e-2b7d1e5a9c40 ro quiet\n",
    )?;
    let flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat umip pku ospke avx512_vnni md_clear arch_capabilities";
    let mut cpu = String::new();
    for n in 0..CPUS {
        let _ = write!(
            cpu,
            "processor\t: {n}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
             model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000590\n\
             cpu MHz\t\t: 1999.999\ncache size\t: 107520 KB\nphysical id\t: 0\nsiblings\t: {CPUS}\n\
             core id\t\t: {n}\ncpu cores\t: {CPUS}\napicid\t\t: {n}\ninitial apicid\t: {n}\n\
             fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 31\nwp\t\t: yes\nflags\t\t: {flags}\n\
             bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb\n\
             bogomips\t: 3999.99\nclflush size\t: 64\ncache_alignment\t: 64\n\
             address sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n"
        );
    }
    write(&proc_dir, "cpuinfo", cpu)
}

fn write_dmi(out: &Path) -> io::Result<()> {
    let dmi = out.join("sys/class/dmi/id");
    mkdirs(&dmi)?;
    for (name, value) in [
        ("bios_vendor", "EFI Development Kit II / OVMF"),
        ("bios_version", "0.0.0"),
        ("bios_date", "02/06/2015"),
        ("sys_vendor", "QEMU"),
        ("product_name", "Standard PC (Q35 + ICH9, 2009)"),
        ("product_version", "pc-q35-8.1"),
        ("board_vendor", ""),
        ("chassis_vendor", "QEMU"),
        ("chassis_type", "1"),
    ] {
        write(&dmi, name, format!("{value}\n"))?;
    }
    Ok(())
}

fn log_res(kind: BarKind, start: Option<u64>, size: u64) -> String {
    let tail = match kind {
        BarKind::Io => "",
        BarKind::Mem32 { pref: false } => "",
        BarKind::Mem32 { pref: true } => " pref",
        BarKind::Mem64 { pref: false } => " 64bit",
        BarKind::Mem64 { pref: true } => " 64bit pref",
    };
    let space = if kind == BarKind::Io { "io " } else { "mem" };
    match start {
        Some(s) => format!("[{space} {s:#010x}-{:#010x}{tail}]", s + size - 1),
        None => format!("[{space} size {size:#x}{tail}]"),
    }
}

/// A boot log in the current (6.8+, backported) wording: enumeration of
/// every function, bridge windows, the failed assignments and the kernel's
/// realloc advice. Only the last `cap` bytes are kept, whole lines only.
fn dmesg_text(f: &[Func], window64: (u64, u64), cap: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut t = 0.0f64;
    let say = |lines: &mut Vec<String>, t: &mut f64, msg: String| {
        *t += 0.000_137;
        lines.push(format!("[{:>12.6}] {msg}", *t));
    };
    for m in [
        "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)".to_string(),
        "Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=6a1f3c2e-8d4b-4c59-9f0e-2b7d1e5a9c40 ro quiet".to_string(),
        "DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 0.0.0 02/06/2015".to_string(),
        "Hypervisor detected: KVM".to_string(),
        "ACPI: PCI Root Bridge [PCI0] (domain 0000 [bus 00-ff])".to_string(),
        "acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI HPX-Type3]".to_string(),
        "PCI host bridge to bus 0000:00".to_string(),
        "pci_bus 0000:00: root bus resource [io  0x0000-0x0cf7 window]".to_string(),
        "pci_bus 0000:00: root bus resource [io  0x0d00-0xffff window]".to_string(),
        "pci_bus 0000:00: root bus resource [mem 0x000a0000-0x000bffff window]".to_string(),
        "pci_bus 0000:00: root bus resource [mem 0xc0000000-0xfebfffff window]".to_string(),
        format!(
            "pci_bus 0000:00: root bus resource [mem {:#x}-{:#x} window]",
            window64.0, window64.1
        ),
        "pci_bus 0000:00: root bus resource [bus 00-ff]".to_string(),
    ] {
        say(&mut lines, &mut t, m);
    }
    // Enumeration. Construction order is parents before children, which
    // is all a reader of the log can rely on.
    let order: Vec<usize> = (0..f.len()).collect();
    for &i in &order {
        let x = &f[i];
        let name = x.bdf.name();
        let role = match x.kind {
            Kind::RootPort => " PCIe Root Port",
            Kind::SwitchUp => " PCIe Switch Upstream Port",
            Kind::SwitchDown => " PCIe Switch Downstream Port",
            Kind::Gpu | Kind::NicPf | Kind::NicVf => " PCIe Endpoint",
            _ => " conventional PCI endpoint",
        };
        say(
            &mut lines,
            &mut t,
            format!(
                "pci {name}: [{:04x}:{:04x}] type {:02x} class {:#08x}{role}",
                x.vendor,
                x.device,
                u8::from(x.bridge.is_some()),
                x.class
            ),
        );
        for b in &x.bars {
            let shown = b.start.or(Some(0));
            say(
                &mut lines,
                &mut t,
                format!(
                    "pci {name}: BAR {} {}",
                    b.index,
                    log_res(b.kind, shown, b.size)
                ),
            );
        }
        if let Some((s, e)) = x.iov {
            say(
                &mut lines,
                &mut t,
                format!(
                    "pci {name}: VF BAR 0 {}",
                    log_res(BarKind::Mem64 { pref: true }, Some(s), NIC_VF_BAR)
                ),
            );
            say(
                &mut lines,
                &mut t,
                format!(
                    "pci {name}: VF BAR 0 {}: contains BAR 0 for {} VFs",
                    log_res(BarKind::Mem64 { pref: true }, Some(s), e - s + 1),
                    x.total_vfs
                ),
            );
        }
        if let Some((sec, sub, w)) = x.bridge {
            say(
                &mut lines,
                &mut t,
                format!("pci {name}: PCI bridge to [bus {sec:02x}-{sub:02x}]"),
            );
            if let Some((s, e)) = w.mem {
                say(
                    &mut lines,
                    &mut t,
                    format!("pci {name}:   bridge window [mem {s:#010x}-{e:#010x}]"),
                );
            }
            if let Some((s, e)) = w.pref {
                say(
                    &mut lines,
                    &mut t,
                    format!("pci {name}:   bridge window [mem {s:#010x}-{e:#010x} 64bit pref]"),
                );
            }
        }
    }
    // Assignment: what did not fit.
    for x in f.iter().filter(|x| x.kind == Kind::SwitchDown) {
        if let Some((_, _, w)) = x.bridge {
            if w.pref.is_none() {
                let m = format!(
                    "pci {}: bridge window [mem size {GPU_BAR_SIZE:#x} 64bit pref]",
                    x.bdf.name()
                );
                say(&mut lines, &mut t, format!("{m}: can't assign; no space"));
                say(&mut lines, &mut t, format!("{m}: failed to assign"));
            }
        }
    }
    for x in f.iter().filter(|x| x.kind == Kind::Gpu) {
        for b in x.bars.iter().filter(|b| b.start.is_none()) {
            let m = format!(
                "pci {}: BAR {} {}",
                x.bdf.name(),
                b.index,
                log_res(b.kind, None, b.size)
            );
            say(&mut lines, &mut t, format!("{m}: can't assign; no space"));
            say(&mut lines, &mut t, format!("{m}: failed to assign"));
        }
    }
    if f.iter().any(|x| x.bars.iter().any(|b| b.start.is_none())) {
        say(
            &mut lines,
            &mut t,
            "pci_bus 0000:00: Some PCI device resources are unassigned, try booting with pci=realloc"
                .into(),
        );
    }
    for x in f.iter().filter(|x| x.kind == Kind::NicPf) {
        say(
            &mut lines,
            &mut t,
            format!("mlx5_core {}: firmware version: 22.39.1002", x.bdf.name()),
        );
    }
    say(&mut lines, &mut t, "Run /init as init process".into());

    let mut total: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut first = 0;
    while total > cap && first < lines.len() {
        total -= lines[first].len() + 1;
        first += 1;
    }
    let mut out = String::with_capacity(total);
    for l in &lines[first..] {
        out.push_str(l);
        out.push('\n');
    }
    out
}
