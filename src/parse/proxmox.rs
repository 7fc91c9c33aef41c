//! Proxmox VE's VM configuration (`/etc/pve/qemu-server/VMID.conf`) and its
//! PCI resource mappings (`/etc/pve/mapping/pci.cfg`), as far as they
//! decide where the firmware puts the GPUs' BARs. Syntax: qm.conf(5) and
//! docs/firmware-window.md, "Proxmox VE".

use crate::model::p2p::{VmDevice, VmP2p};
use crate::parse::qemu_args;

/// A parse problem: the 1-based line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    pub line: usize,
    pub msg: String,
}

/// `phys-bits=` of the `cpu:` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhysBits {
    Bits(u32),
    /// The host's own width.
    Host,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PveCpu {
    /// `kvm64` when no `cpu:` line (the backend's default), `x86-64-v2-AES`
    /// (the GUI's default since PVE 8), `host`, ...
    pub model: String,
    /// `flags=+pdpe1gb;-md-clear`: (added, flag).
    pub flags: Vec<(bool, String)>,
    pub phys_bits: Option<PhysBits>,
    /// `guest-phys-bits=N` (qemu-server 2f3c741b, CPUConfig.pm L971-992:
    /// passed to QEMU as the vCPU's `guest-phys-bits`).
    pub guest_phys_bits: Option<u32>,
    /// `hidden=1`: QEMU's `kvm=off`, which hides the KVM signature.
    pub hidden: bool,
}

/// One `hostpciN:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPci {
    pub line: usize,
    /// The key as written (`hostpci0`): QEMU's device id for it.
    pub key: String,
    /// N of `hostpciN`: where qemu-server attaches it (PCI.pm).
    pub index: u32,
    /// `0000:41:00.0` or `41:00` (all functions), as written.
    pub hosts: Vec<String>,
    /// `mapping=NAME`, resolved through `/etc/pve/mapping/pci.cfg`.
    pub mapping: Option<String>,
    pub pcie: bool,
    /// `x-vga=1`.
    pub x_vga: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PveConfig {
    /// `memory:` in MiB (Proxmox's default is 512).
    pub memory_mib: Option<u64>,
    pub cpu: Option<PveCpu>,
    /// The `cpu:` line: its value as written, and its line.
    pub cpu_value: Option<(String, usize)>,
    /// `seabios` (the default) or `ovmf`.
    pub bios: Option<String>,
    /// `q35`, `pc`, `pc-q35-8.1+pve0`, ...
    pub machine: Option<String>,
    /// The `args:` line, verbatim.
    pub args: Option<String>,
    /// The `args:` line's line.
    pub args_line: Option<usize>,
    pub hostpci: Vec<HostPci>,
    /// `hotplug:` includes `memory`.
    pub memory_hotplug: bool,
    /// The virtio devices qemu-server adds (each with a modern 64-bit
    /// prefetchable BAR), by the bus of its address map they sit on
    /// (PCI.pm get_pci_addr_map: 0 is `pci.0`, N is `pci.N`): balloon0
    /// unless `balloon: 0`, netN of model virtio, virtioN disks, and the
    /// virtio-scsi-pci controllers of scsiN disks (scsihw0 for
    /// `scsihw: virtio-scsi-pci`, virtioscsiN each for
    /// `virtio-scsi-single`).
    pub virtio_buses: Vec<u8>,
}

/// `pci.N` of qemu-server's address map for a device id (PCI.pm
/// get_pci_addr_map): net0-5 and virtio0-5 on 0, net6-31 on 1, virtio6-15
/// on 2, virtioscsiN on 3.
fn virtio_bus(kind: &str, index: u32) -> Option<u8> {
    match (kind, index) {
        ("net", 0..=5) | ("virtio", 0..=5) => Some(0),
        ("net", 6..=31) => Some(1),
        ("virtio", 6..=15) => Some(2),
        ("virtioscsi", 0..=30) => Some(3),
        _ => None,
    }
}

/// A boolean property as Proxmox reads it (PVE::JSONSchema
/// `parse_boolean`: `1`, `on`, `yes`, `true`, in any case).
fn on(v: &str) -> bool {
    ["1", "on", "yes", "true"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
}

/// `key=value,key=value` with an optional leading value for `default_key`.
fn properties<'a>(value: &'a str, default_key: &str) -> Vec<(String, &'a str)> {
    value
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .enumerate()
        .map(|(i, p)| match p.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim()),
            None if i == 0 => (default_key.to_string(), p.trim()),
            None => (p.trim().to_string(), ""),
        })
        .collect()
}

pub(crate) fn parse_cpu(value: &str) -> Result<PveCpu, String> {
    let mut cpu = PveCpu {
        model: "kvm64".into(),
        ..PveCpu::default()
    };
    for (k, v) in properties(value, "cputype") {
        match k.as_str() {
            "cputype" => cpu.model = v.to_string(),
            "flags" => {
                for f in v.split(';').filter(|f| !f.is_empty()) {
                    let (on, name) = match f.as_bytes()[0] {
                        b'+' => (true, &f[1..]),
                        b'-' => (false, &f[1..]),
                        _ => return Err(format!("CPU flag {f:?} lacks its + or -")),
                    };
                    cpu.flags.push((on, name.to_string()));
                }
            }
            "hidden" => cpu.hidden = on(v),
            "guest-phys-bits" => match v.parse::<u32>() {
                Ok(b) if (32..=64).contains(&b) => cpu.guest_phys_bits = Some(b),
                _ => return Err(format!("guest-phys-bits={v:?}: expected 32 to 64")),
            },
            "phys-bits" => {
                cpu.phys_bits = Some(if v == "host" {
                    PhysBits::Host
                } else {
                    match v.parse::<u32>() {
                        Ok(b) if (8..=64).contains(&b) => PhysBits::Bits(b),
                        _ => return Err(format!("phys-bits={v:?}: expected 8 to 64 or host")),
                    }
                });
            }
            _ => {}
        }
    }
    Ok(cpu)
}

fn parse_hostpci(line: usize, key: &str, value: &str) -> Result<HostPci, String> {
    let mut h = HostPci {
        line,
        key: key.to_string(),
        index: key["hostpci".len()..].parse().unwrap_or(0),
        hosts: Vec::new(),
        mapping: None,
        pcie: false,
        x_vga: false,
    };
    for (k, v) in properties(value, "host") {
        match k.as_str() {
            "host" => h.hosts = v.split(';').map(|s| s.trim().to_string()).collect(),
            "mapping" => h.mapping = Some(v.to_string()),
            "pcie" => h.pcie = on(v),
            "x-vga" => h.x_vga = on(v),
            _ => {}
        }
    }
    if h.hosts.is_empty() && h.mapping.is_none() {
        return Err("neither host= nor mapping=".into());
    }
    Ok(h)
}

/// The VM's own section of the file (snapshots and pending changes follow
/// in `[sections]` and are not the configuration it starts with).
pub(crate) fn parse_config(text: &str) -> Result<PveConfig, LineError> {
    let mut c = PveConfig::default();
    let (mut balloon, mut scsihw, mut scsi) = (true, String::new(), Vec::new());
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |msg: String| LineError { line: i + 1, msg };
        if line.starts_with('[') {
            break;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(err(format!("{line:?} is not `key: value`")));
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "memory" => {
                let v = properties(value, "current")
                    .into_iter()
                    .find(|(k, _)| k == "current")
                    .map(|(_, v)| v)
                    .unwrap_or("");
                c.memory_mib = Some(
                    v.parse()
                        .map_err(|_| err(format!("memory: {value:?} is not a size in MiB")))?,
                );
            }
            "cpu" => {
                c.cpu = Some(parse_cpu(value).map_err(|m| err(format!("cpu: {m}")))?);
                c.cpu_value = Some((value.to_string(), i + 1));
            }
            "bios" => c.bios = Some(value.to_string()),
            "machine" => {
                c.machine = properties(value, "type")
                    .into_iter()
                    .find(|(k, _)| k == "type")
                    .map(|(_, v)| v.to_string())
            }
            "args" => {
                c.args = Some(value.to_string());
                c.args_line = Some(i + 1);
            }
            "hotplug" => c.memory_hotplug = value.split(',').any(|v| v.trim() == "memory"),
            "balloon" => balloon = value != "0",
            "scsihw" => scsihw = value.to_string(),
            k if numbered(k, "net").is_some() => {
                let virtio = properties(value, "model")
                    .iter()
                    .any(|(k, v)| k == "virtio" || (k == "model" && *v == "virtio"));
                if let (true, Some(b)) = (
                    virtio,
                    numbered(k, "net").and_then(|n| virtio_bus("net", n)),
                ) {
                    c.virtio_buses.push(b);
                }
            }
            k if numbered(k, "virtio").is_some() => {
                c.virtio_buses
                    .extend(numbered(k, "virtio").and_then(|n| virtio_bus("virtio", n)));
            }
            k if numbered(k, "scsi").is_some() => scsi.extend(numbered(k, "scsi")),
            k if k.len() > 7
                && k.starts_with("hostpci")
                && k[7..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                c.hostpci
                    .push(parse_hostpci(i + 1, k, value).map_err(|m| err(format!("{k}: {m}")))?);
            }
            _ => {}
        }
    }
    if balloon {
        c.virtio_buses.push(0);
    }
    match scsihw.as_str() {
        "virtio-scsi-pci" if !scsi.is_empty() => c.virtio_buses.push(0),
        "virtio-scsi-single" => c
            .virtio_buses
            .extend(scsi.iter().filter_map(|n| virtio_bus("virtioscsi", *n))),
        _ => {}
    }
    Ok(c)
}

/// `KINDn` (`net0`, `scsi12`): n.
fn numbered(key: &str, kind: &str) -> Option<u32> {
    let n = key.strip_prefix(kind)?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok())
        .flatten()
}

impl PveConfig {
    /// What the configuration says of peer-to-peer. qemu-server gives a
    /// `hostpciN` entry that yields one function the device id `hostpciN`,
    /// and one that yields several (a bare `41:00`, or a `;` list)
    /// `hostpciN.0`, `hostpciN.1`... (PVE/QemuServer/PCI.pm,
    /// `print_hostpci_devices`).
    pub(crate) fn p2p(&self) -> VmP2p {
        let args = self.args.clone().unwrap_or_default();
        VmP2p {
            devices: self
                .hostpci
                .iter()
                .map(|h| VmDevice {
                    name: h.key.clone(),
                    hosts: h.hosts.iter().filter(|h| !h.is_empty()).cloned().collect(),
                    mapping: h.mapping.is_some(),
                    x_vga: h.x_vga,
                })
                .collect(),
            kvm_hidden: self.cpu.as_ref().is_some_and(|c| c.hidden),
            cliques: qemu_args::set_cliques(&qemu_args::words(&args)),
            commandline_set: false,
            args,
        }
    }
}

/// Custom CPU model `name` of `/etc/pve/virtual-guest/cpu-models.conf`
/// (what `cpu: custom-NAME` names), as the `cpu:` property it stands for:
/// `reported-model` (kvm64 when not given), `flags`, `phys-bits`. `None`
/// when the file has no such model.
pub(crate) fn custom_cpu_model(text: &str, name: &str) -> Result<Option<PveCpu>, LineError> {
    let mut cpu = parse_cpu("").expect("the default parses");
    let (mut found, mut in_it) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        // As Proxmox reads its section files: a blank line ends a
        // section, and of a key given twice the first counts.
        if t.is_empty() {
            if in_it {
                break;
            }
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            if in_it {
                break;
            }
            in_it = t
                .split_once(':')
                .is_some_and(|(k, v)| k.trim() == "cpu-model" && v.trim() == name);
            found |= in_it;
            continue;
        }
        if !in_it {
            continue;
        }
        let (k, v) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        let v = v.trim();
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        match k {
            "reported-model" => cpu.model = v.to_string(),
            "flags" | "phys-bits" => {
                let p = parse_cpu(&format!("{k}={v}")).map_err(|msg| LineError {
                    line: i + 1,
                    msg: format!("cpu-model {name}: {msg}"),
                })?;
                cpu.flags.extend(p.flags);
                cpu.phys_bits = p.phys_bits.or(cpu.phys_bits);
            }
            _ => {}
        }
    }
    Ok(found.then_some(cpu))
}

/// The host devices a mapping names for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MappedPaths {
    /// `path=` of the `map` line taken.
    pub paths: Vec<String>,
    /// `node=` of that line.
    pub node: Option<String>,
}

/// The host devices of mapping `name` in `pci.cfg`: its `map` lines'
/// `path=`, the one for `node` when several nodes are mapped (else the
/// first, whose node says so). `None` when there is no such mapping.
pub(crate) fn mapping_paths(text: &str, name: &str, node: Option<&str>) -> Option<MappedPaths> {
    let mut in_it = false;
    let mut found: Option<MappedPaths> = None;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
            in_it = line.trim() == name;
            if in_it && found.is_none() {
                found = Some(MappedPaths {
                    paths: Vec::new(),
                    node: None,
                });
            }
            continue;
        }
        let t = line.trim();
        if !in_it {
            continue;
        }
        let Some(rest) = t.strip_prefix("map ") else {
            continue;
        };
        let props = properties(rest, "");
        let this_node = props.iter().find(|(k, _)| k == "node").map(|(_, v)| *v);
        let this = MappedPaths {
            paths: props
                .iter()
                .find(|(k, _)| k == "path")
                .map(|(_, v)| v.split(';').map(str::to_string).collect())
                .unwrap_or_default(),
            node: this_node.map(str::to_string),
        };
        if node.is_some() && this_node == node {
            return Some(this);
        }
        match &mut found {
            Some(f) if f.paths.is_empty() => *f = this,
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONF: &str = "\
# description line
agent: 1
bios: ovmf
boot: order=scsi0
cores: 32
cpu: x86-64-v2-AES,flags=+pdpe1gb;-md-clear,phys-bits=46
efidisk0: local-lvm:vm-100-disk-0,efitype=4m,size=4M
hostpci0: 0000:41:00.0,pcie=1
hostpci1: host=42:00;43:00.0,pcie=1,x-vga=0
hostpci2: mapping=gpu3,pcie=1
machine: pc-q35-8.1+pve0,viommu=virtio
memory: 262144
args: -global q35-pcihost.pci-hole64-size=2048G
hotplug: disk,network,usb,memory

[before-upgrade]
memory: 1024
cpu: host
";

    #[test]
    fn the_vms_own_section() {
        let c = parse_config(CONF).unwrap();
        assert_eq!(c.memory_mib, Some(262144));
        assert_eq!(c.bios.as_deref(), Some("ovmf"));
        assert_eq!(c.machine.as_deref(), Some("pc-q35-8.1+pve0"));
        assert!(c.memory_hotplug);
        let cpu = c.cpu.unwrap();
        assert_eq!(cpu.model, "x86-64-v2-AES");
        assert_eq!(
            cpu.flags,
            [
                (true, "pdpe1gb".to_string()),
                (false, "md-clear".to_string())
            ]
        );
        assert_eq!(cpu.phys_bits, Some(PhysBits::Bits(46)));
        assert_eq!(c.hostpci.len(), 3);
        assert_eq!(c.hostpci[0].hosts, ["0000:41:00.0"]);
        assert_eq!(c.hostpci[1].hosts, ["42:00", "43:00.0"]);
        assert_eq!(c.hostpci[2].mapping.as_deref(), Some("gpu3"));
        assert_eq!(c.hostpci[2].line, 10);
        let idx: Vec<u32> = c.hostpci.iter().map(|h| h.index).collect();
        assert_eq!(idx, [0, 1, 2]);
        assert_eq!(
            parse_cpu("kvm64,guest-phys-bits=40")
                .unwrap()
                .guest_phys_bits,
            Some(40)
        );
        assert!(parse_cpu("kvm64,guest-phys-bits=x").is_err());
        assert_eq!(
            c.args.as_deref(),
            Some("-global q35-pcihost.pci-hole64-size=2048G")
        );
        assert_eq!(
            (c.args_line, c.cpu_value.as_ref().map(|v| v.1)),
            (Some(13), Some(6))
        );
        assert_eq!(
            c.cpu_value.map(|v| v.0).as_deref(),
            Some("x86-64-v2-AES,flags=+pdpe1gb;-md-clear,phys-bits=46")
        );
    }

    #[test]
    fn what_the_configuration_says_of_peer_to_peer() {
        let t = "cpu: host,hidden=1\nhostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00,pcie=1,x-vga=1\nhostpci2: mapping=gpu,pcie=1\nhostpci3: host=43:00.0;,pcie=on\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.0.x-nv-gpudirect-clique=0\n[snap]\nhostpci4: 0000:44:00.0\n";
        let c = parse_config(t).unwrap();
        let v = c.p2p();
        assert!(v.kvm_hidden);
        let names: Vec<&str> = v.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["hostpci0", "hostpci1", "hostpci2", "hostpci3"]);
        assert!(v.devices[1].x_vga && !v.devices[0].x_vga);
        assert!(v.devices[2].mapping && v.devices[2].hosts.is_empty());
        // An empty host after `;` is no device.
        assert_eq!(v.devices[3].hosts, ["43:00.0"]);
        assert_eq!(v.cliques, [("hostpci0".to_string(), "0".to_string())]);
        // One boolean grammar for every flag: Proxmox's.
        assert!(c.hostpci[3].pcie);
        for (value, want) in [
            ("1", true),
            ("on", true),
            ("YES", true),
            ("true", true),
            ("0", false),
            ("off", false),
        ] {
            let c = parse_config(&format!(
                "hostpci0: 41:00.0,pcie={value},x-vga={value}\ncpu: kvm64,hidden={value}\n"
            ))
            .unwrap();
            assert_eq!(c.hostpci[0].pcie, want, "{value}");
            assert_eq!(c.hostpci[0].x_vga, want, "{value}");
            assert_eq!(c.cpu.unwrap().hidden, want, "{value}");
        }
        assert!(
            !parse_config("cpu: host,flags=+pdpe1gb\n")
                .unwrap()
                .p2p()
                .kvm_hidden
        );
        // A key `hostpci` without its number is no device.
        assert!(parse_config("hostpci: 41:00.0\n")
            .unwrap()
            .hostpci
            .is_empty());
    }

    #[test]
    fn custom_cpu_models() {
        let text = "\
cpu-model: other
\tphys-bits 39

cpu-model: gpu46
\tflags +pdpe1gb;+aes
\tphys-bits 46
\thidden 0
\treported-model EPYC-Milan

cpu-model: bare
\thv-vendor-id proxmox
";
        let m = custom_cpu_model(text, "gpu46").unwrap().unwrap();
        assert_eq!(m.model, "EPYC-Milan");
        assert_eq!(
            m.flags,
            [(true, "pdpe1gb".to_string()), (true, "aes".to_string())]
        );
        assert_eq!(m.phys_bits, Some(PhysBits::Bits(46)));
        let m = custom_cpu_model(text, "bare").unwrap().unwrap();
        assert_eq!((m.model.as_str(), m.phys_bits), ("kvm64", None));
        assert_eq!(custom_cpu_model(text, "gpu").unwrap(), None);
        let e = custom_cpu_model("cpu-model: x\n\tphys-bits lots\n", "x").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        // A blank line ends the section; the first of a key counts.
        let m = custom_cpu_model(
            "cpu-model: x\n\tphys-bits 44\n\tphys-bits 46\n\n\tflags +pdpe1gb\n",
            "x",
        )
        .unwrap()
        .unwrap();
        assert_eq!((m.phys_bits, m.flags.len()), (Some(PhysBits::Bits(44)), 0));
    }

    #[test]
    fn defaults_and_errors_name_the_line() {
        let c = parse_config("memory: current=8192\ncpu: host,phys-bits=host\n").unwrap();
        assert_eq!(c.memory_mib, Some(8192));
        assert_eq!(c.cpu.unwrap().phys_bits, Some(PhysBits::Host));
        assert_eq!(parse_cpu("").unwrap().model, "kvm64");
        for (text, line) in [
            ("bios: ovmf\nmemory: lots\n", 2),
            ("cpu: host,phys-bits=99\n", 1),
            ("cpu: host,flags=pdpe1gb\n", 1),
            ("memory: 1024\nhostpci0: pcie=1\n", 2),
            ("this is not a config\n", 1),
        ] {
            let e = parse_config(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e:?}");
        }
    }

    #[test]
    fn mappings_by_node() {
        let cfg = "\
gpu3
\tmap node=pve1,path=0000:44:00.0,id=10de:2bb5
\tmap node=pve2,path=0000:81:00.0;0000:81:00.1,id=10de:2bb5
\tdescription one GPU

nic
\tmap node=pve1,path=0000:05:00.0,id=15b3:1021
";
        let paths =
            |node| mapping_paths(cfg, "gpu3", node).map(|m| (m.paths, m.node.unwrap_or_default()));
        assert_eq!(
            paths(Some("pve2")),
            Some((
                vec!["0000:81:00.0".into(), "0000:81:00.1".into()],
                "pve2".into()
            ))
        );
        // No line for the node (or no node known): the first, which says
        // whose it is.
        for node in [None, Some("pve9")] {
            assert_eq!(
                paths(node),
                Some((vec!["0000:44:00.0".into()], "pve1".into()))
            );
        }
        assert_eq!(
            mapping_paths(cfg, "nic", None).map(|m| m.paths),
            Some(vec!["0000:05:00.0".into()])
        );
        assert_eq!(mapping_paths(cfg, "nope", None), None);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn configs_never_panic(text in "\\PC{0,300}") {
            let _ = parse_config(&text);
            let _ = mapping_paths(&text, "gpu", Some("pve"));
            let _ = parse_cpu(&text);
        }
    }

    #[test]
    fn virtio_devices_by_the_bus_of_qemu_servers_address_map() {
        // PCI.pm get_pci_addr_map: net0-5 and virtio0-5 on pci.0, net6+
        // on pci.1, virtio6+ on pci.2, virtioscsiN on pci.3; balloon0
        // unless `balloon: 0`; an e1000 NIC has no modern BAR.
        let c = parse_config(
            "net0: virtio=BC:24:11:00:00:01,bridge=vmbr0\n\
             net1: e1000=BC:24:11:00:00:02,bridge=vmbr0\n\
             net7: model=virtio,bridge=vmbr0\n\
             virtio7: local:vm-1-disk-1\n\
             scsihw: virtio-scsi-single\n\
             scsi0: local:vm-1-disk-0\n\
             scsi1: local:vm-1-disk-2\n",
        )
        .unwrap();
        assert_eq!(c.virtio_buses, [0, 1, 2, 0, 3, 3]);
        let c = parse_config("balloon: 0\nscsihw: virtio-scsi-pci\nscsi0: local:d\n").unwrap();
        assert_eq!(c.virtio_buses, [0]);
        let c = parse_config("balloon: 0\nscsihw: lsi\nscsi0: local:d\n").unwrap();
        assert!(c.virtio_buses.is_empty());
    }
}
