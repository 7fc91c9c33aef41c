//! A libvirt domain (`virsh dumpxml`), as far as it decides where the
//! firmware puts the GPUs' BARs. Elements: libvirt's formatdomain and
//! docs/firmware-window.md, "libvirt".

use crate::model::p2p::{VmDevice, VmP2p};
use crate::parse::qemu_args::{set_cliques, window_args, WindowArgs};

/// `<cpu>`: how the vCPU is made.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LibvirtCpu {
    /// `host-passthrough`, `host-model`, `custom`, `maximum`; none: QEMU's
    /// default model.
    pub mode: Option<String>,
    pub model: Option<String>,
    /// `<feature policy='require|force' name=...>` (true) or
    /// `policy='disable|forbid'` (false).
    pub features: Vec<(bool, String)>,
    /// `<maxphysaddr mode='emulate' bits='N'/>`.
    pub phys_bits: Option<u32>,
    /// `<maxphysaddr mode='passthrough'/>` (the host's width).
    pub phys_bits_host: bool,
    /// `<maxphysaddr mode='passthrough' limit='N'/>` (libvirt 9.3.0+,
    /// formatdomain.rst): QEMU's `host-phys-bits-limit=N`.
    pub phys_bits_limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Domain {
    pub name: Option<String>,
    pub memory: Option<u64>,
    /// OVMF (`<os firmware='efi'>`, or a loader that is EDK II's).
    pub efi: bool,
    /// `pc-q35-8.2`, `q35`, `pc-i440fx-7.2`, ...
    pub machine: Option<String>,
    pub cpu: LibvirtCpu,
    /// `<pcihole64>` on the root controller, in bytes.
    pub pcihole64: Option<u64>,
    /// From `<qemu:commandline>`.
    pub window: WindowArgs,
    /// `<hostdev type='pci'>`s.
    pub hostdevs: Vec<Hostdev>,
    /// `<maxMemory slots='N'>`: the memory hot-plug area's maxmem, slots.
    pub max_memory: Option<(u64, u32)>,
    /// `<controller type='pci' model='pcie-root-port'>` indexes.
    pub root_ports: Vec<u32>,
    /// The guest buses devices sit on (`<address type='pci' bus=...>` of
    /// every device but the controllers themselves).
    pub used_buses: Vec<u32>,
    /// The virtio devices, each with a modern (64-bit prefetchable) BAR,
    /// and the bus its `<address type='pci'>` gives (none: libvirt picks
    /// one when it defines the domain).
    pub virtio_buses: Vec<Option<u32>>,
    /// `<features><kvm><hidden state='on'/>`: QEMU's `kvm=off`.
    pub kvm_hidden: bool,
    /// `<domain type='qemu'>`: QEMU without KVM (TCG).
    pub tcg: bool,
    /// `<qemu:override><qemu:device alias=A><qemu:frontend><qemu:property
    /// name='x-nv-gpudirect-clique' value=V/>` (libvirt 8.2 or later):
    /// (A, V).
    pub override_cliques: Vec<(String, String)>,
    /// A `<qemu:commandline>` sets the clique with `-set`, which cannot
    /// change a `-device` libvirt passes as JSON (QEMU refuses).
    pub commandline_cliques: bool,
}

/// A `<hostdev type='pci'>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hostdev {
    /// The source address, `DDDD:BB:DD.F`.
    pub address: String,
    /// `<alias name=...>`: QEMU's device id for it (`hostdev0`, or a
    /// user alias `ua-gpu0`).
    pub alias: Option<String>,
}

impl Domain {
    /// What the domain says of peer-to-peer (formatdomain, "QEMU
    /// command-line passthrough").
    pub(crate) fn p2p(&self) -> VmP2p {
        VmP2p {
            devices: self
                .hostdevs
                .iter()
                .map(|h| VmDevice {
                    name: h.alias.clone().unwrap_or_default(),
                    hosts: vec![h.address.clone()],
                    mapping: false,
                    x_vga: false,
                })
                .collect(),
            kvm_hidden: self.kvm_hidden,
            cliques: self.override_cliques.clone(),
            commandline_set: self.commandline_cliques,
            args: String::new(),
        }
    }
}

fn bytes_of(n: roxmltree::Node<'_, '_>) -> Result<u64, String> {
    let text = n.text().unwrap_or("").trim();
    let value: u64 = text.parse().map_err(|_| {
        format!(
            "<{}>{text}</{}> is not a number",
            n.tag_name().name(),
            n.tag_name().name()
        )
    })?;
    // libvirt's units: b, KiB (default), KB = 1000, MiB, MB, GiB, GB, ...
    let unit = n.attribute("unit").unwrap_or("KiB");
    let mult: u64 = match unit {
        "b" | "bytes" => 1,
        "KB" => 1000,
        "k" | "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "M" | "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "G" | "GiB" => 1 << 30,
        "TB" => 1_000_000_000_000,
        "T" | "TiB" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} on <{}>",
                n.tag_name().name()
            ))
        }
    };
    value
        .checked_mul(mult)
        .ok_or_else(|| format!("<{}> too large", n.tag_name().name()))
}

/// A device element QEMU makes a virtio PCI device of (formatdomain:
/// `<interface>`'s and `<video>`'s `<model type='virtio'>`, a disk on
/// `bus='virtio'`, virtio-scsi and virtio-serial controllers, the balloon,
/// rng and vsock models, virtio input, virtiofs). Each has QEMU's modern
/// BAR, 64-bit prefetchable, also when transitional.
fn is_virtio(dev: roxmltree::Node<'_, '_>) -> bool {
    let child_attr = |tag: &str, attr: &str| {
        dev.children()
            .find(|c| c.has_tag_name(tag))
            .and_then(|c| c.attribute(attr))
    };
    let virtio = |v: Option<&str>| v.is_some_and(|v| v.starts_with("virtio"));
    match dev.tag_name().name() {
        "interface" | "video" => virtio(child_attr("model", "type")),
        "disk" => child_attr("target", "bus") == Some("virtio"),
        "controller" => match dev.attribute("type") {
            Some("virtio-serial") => true,
            Some("scsi") => virtio(dev.attribute("model")),
            _ => false,
        },
        "memballoon" | "rng" | "vsock" => virtio(dev.attribute("model")),
        "input" => dev.attribute("bus") == Some("virtio"),
        "filesystem" => child_attr("driver", "type") == Some("virtiofs"),
        _ => false,
    }
}

fn hex_attr(n: roxmltree::Node<'_, '_>, name: &str) -> Result<u32, String> {
    let v = n
        .attribute(name)
        .ok_or_else(|| format!("<address> without {name}="))?;
    crate::parse::hex::hex_u64(v)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("<address {name}='{v}'> is not a number"))
}

/// `<cpu><maxphysaddr mode=... bits=... limit=...>` into `cpu`.
fn maxphysaddr(cpu: &mut LibvirtCpu, n: roxmltree::Node<'_, '_>) -> Result<(), String> {
    match n.attribute("mode") {
        Some("passthrough") => {
            cpu.phys_bits_host = true;
            if let Some(l) = n.attribute("limit") {
                cpu.phys_bits_limit = Some(
                    l.parse()
                        .ok()
                        .filter(|b| (32..=64).contains(b))
                        .ok_or_else(|| format!("<maxphysaddr limit='{l}'>: expected 32 to 64"))?,
                );
            }
        }
        Some("emulate") => {
            let bits = n
                .attribute("bits")
                .and_then(|b| b.parse().ok())
                .filter(|b| (8..=64).contains(b))
                .ok_or_else(|| "<maxphysaddr mode='emulate'> needs bits='N'".to_string())?;
            cpu.phys_bits = Some(bits);
        }
        m => return Err(format!("<maxphysaddr mode={m:?}> is unknown")),
    }
    Ok(())
}

/// A `<hostdev>`'s `<source>`: the PCI device it passes, with the
/// hostdev's alias; `None` for a hostdev that is not PCI.
fn hostdev(source: roxmltree::Node<'_, '_>) -> Result<Option<Hostdev>, String> {
    let hostdev = source.parent_element().expect("a child has a parent");
    if hostdev.attribute("type") != Some("pci") {
        return Ok(None);
    }
    let Some(a) = source.children().find(|c| c.has_tag_name("address")) else {
        return Err("<hostdev type='pci'> without <source><address>".into());
    };
    let (dom, bus, slot, func) = (
        hex_attr(a, "domain").unwrap_or(0),
        hex_attr(a, "bus")?,
        hex_attr(a, "slot")?,
        hex_attr(a, "function")?,
    );
    if bus > 0xff || slot > 0x1f || func > 7 {
        return Err(format!(
            "<address> {bus:#x}:{slot:#x}.{func:#x} is no PCI address"
        ));
    }
    Ok(Some(Hostdev {
        address: format!("{dom:04x}:{bus:02x}:{slot:02x}.{func:x}"),
        alias: hostdev
            .children()
            .find(|c| c.has_tag_name("alias"))
            .and_then(|a| a.attribute("name"))
            .map(str::to_string),
    }))
}

/// The domain's relevant elements; an error names the element. `line` of
/// an error is the element's line in the file.
pub(crate) fn parse_domain(text: &str) -> Result<Domain, (usize, String)> {
    let doc =
        roxmltree::Document::parse(text).map_err(|e| (e.pos().row as usize, e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "domain" {
        return Err((
            1,
            format!(
                "the root element is <{}>, not <domain>",
                root.tag_name().name()
            ),
        ));
    }
    let line = |n: roxmltree::Node<'_, '_>| doc.text_pos_at(n.range().start).row as usize;
    let mut d = Domain {
        tcg: root.attribute("type") == Some("qemu"),
        ..Domain::default()
    };
    let mut sysinfo_mmio64 = None;
    let mut sysinfo_pci64 = None;
    for n in root.descendants().filter(|n| n.is_element()) {
        let at = |e: String| (line(n), e);
        let parent = n
            .parent_element()
            .map(|p| p.tag_name().name())
            .unwrap_or("");
        match (parent, n.tag_name().name()) {
            ("domain", "name") => d.name = n.text().map(str::to_string),
            ("domain", "memory") => d.memory = Some(bytes_of(n).map_err(at)?),
            ("domain", "maxMemory") => {
                let slots = n
                    .attribute("slots")
                    .map(|s| {
                        s.parse()
                            .map_err(|_| at(format!("<maxMemory slots='{s}'>")))
                    })
                    .transpose()?
                    .unwrap_or(0);
                d.max_memory = Some((bytes_of(n).map_err(at)?, slots));
            }
            ("devices", "controller")
                if n.attribute("type") == Some("pci")
                    && n.attribute("model") == Some("pcie-root-port") =>
            {
                if let Some(i) = n.attribute("index").and_then(|i| i.parse().ok()) {
                    d.root_ports.push(i);
                }
            }
            (p, "address")
                if p != "controller" && p != "source" && n.attribute("type") == Some("pci") =>
            {
                if let Ok(b) = hex_attr(n, "bus") {
                    d.used_buses.push(b);
                }
            }
            ("devices", _) if is_virtio(n) => d.virtio_buses.push(
                n.children()
                    .find(|c| c.has_tag_name("address") && c.attribute("type") == Some("pci"))
                    .and_then(|a| hex_attr(a, "bus").ok()),
            ),
            ("domain", "os") if n.attribute("firmware") == Some("efi") => d.efi = true,
            ("os", "type") => d.machine = n.attribute("machine").map(str::to_string),
            ("os", "loader") => {
                let path = n.text().unwrap_or("").to_ascii_lowercase();
                if path.contains("ovmf") || path.contains("edk2") || path.contains("efi") {
                    d.efi = true;
                }
            }
            ("domain", "cpu") => {
                d.cpu.mode = n.attribute("mode").map(str::to_string);
            }
            ("cpu", "model") => d.cpu.model = n.text().map(|t| t.trim().to_string()),
            ("cpu", "feature") => {
                let name = n.attribute("name").unwrap_or("").to_string();
                let on = !matches!(n.attribute("policy"), Some("disable" | "forbid"));
                d.cpu.features.push((on, name));
            }
            ("cpu", "maxphysaddr") => maxphysaddr(&mut d.cpu, n).map_err(at)?,
            ("controller", "pcihole64") => d.pcihole64 = Some(bytes_of(n).map_err(at)?),
            // libvirt's own way to pass a fw_cfg string (6.5 and later).
            // (An entry with file= names a file on the host, not read.)
            ("sysinfo", "entry")
                if n.attribute("name") == Some("opt/ovmf/X-PciMmio64Mb")
                    && n.attribute("file").is_none()
                    && n.parent_element().and_then(|p| p.attribute("type")) == Some("fwcfg") =>
            {
                let text = n.text().unwrap_or("").trim();
                let mib: u64 = text.parse().map_err(|_| {
                    at(format!("<entry name='opt/ovmf/X-PciMmio64Mb'>{text}</entry>: a whole number of MiB"))
                })?;
                sysinfo_mmio64 = Some(
                    mib.checked_mul(1 << 20)
                        .ok_or_else(|| at("X-PciMmio64Mb too large".into()))?,
                );
            }
            ("sysinfo", "entry")
                if n.attribute("name") == Some(crate::parse::qemu_args::SEABIOS_PCI64_NAME)
                    && n.attribute("file").is_none()
                    && n.parent_element().and_then(|p| p.attribute("type")) == Some("fwcfg") =>
            {
                sysinfo_pci64 = Some(crate::parse::qemu_args::seabios_bool(
                    n.text().unwrap_or(""),
                ));
            }
            ("hostdev", "source") => {
                if let Some(h) = hostdev(n).map_err(at)? {
                    d.hostdevs.push(h);
                }
            }
            ("kvm", "hidden") => d.kvm_hidden |= n.attribute("state") == Some("on"),
            ("override", "device") => {
                let alias = n.attribute("alias").unwrap_or("");
                for p in n
                    .descendants()
                    .filter(|p| p.tag_name().name() == "property")
                    .filter(|p| p.attribute("name") == Some("x-nv-gpudirect-clique"))
                {
                    d.override_cliques.push((
                        alias.to_string(),
                        p.attribute("value").unwrap_or("").to_string(),
                    ));
                }
            }
            _ => {}
        }
    }
    // <qemu:commandline><qemu:arg value='...'/>, namespaced; each element
    // a command line of its own.
    let mut args: Vec<String> = Vec::new();
    for c in root
        .descendants()
        .filter(|n| n.tag_name().name() == "commandline")
    {
        let words: Vec<String> = c
            .children()
            .filter(|a| a.tag_name().name() == "arg")
            .filter_map(|a| a.attribute("value").map(str::to_string))
            .collect();
        d.commandline_cliques |= !set_cliques(&words).is_empty();
        args.extend(words);
    }
    d.window = window_args(&args).map_err(|e| (1, e))?;
    d.window.mmio64 = d.window.mmio64.or(sysinfo_mmio64);
    if let Some(p) = sysinfo_pci64 {
        d.window.seabios_pci64 = d.window.seabios_pci64.or(p);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>gpu-vm</name>
  <memory unit='GiB'>256</memory>
  <os firmware='efi'>
    <type arch='x86_64' machine='pc-q35-8.2'>hvm</type>
  </os>
  <cpu mode='custom' match='exact'>
    <model fallback='forbid'>EPYC-Genoa</model>
    <feature policy='require' name='pdpe1gb'/>
    <feature policy='disable' name='svm'/>
    <maxphysaddr mode='emulate' bits='46'/>
  </cpu>
  <devices>
    <controller type='pci' index='0' model='pcie-root'>
      <pcihole64 unit='KiB'>2147483648</pcihole64>
    </controller>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/></source>
    </hostdev>
    <hostdev mode='subsystem' type='usb'><source><vendor id='0x1'/></source></hostdev>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-fw_cfg'/>
    <qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,string=1048576'/>
  </qemu:commandline>
</domain>"#;

    #[test]
    fn the_elements_that_decide_the_window() {
        let d = parse_domain(XML).unwrap();
        assert_eq!(d.name.as_deref(), Some("gpu-vm"));
        assert_eq!(d.memory, Some(256 << 30));
        assert!(d.efi);
        assert_eq!(d.machine.as_deref(), Some("pc-q35-8.2"));
        assert_eq!(d.cpu.mode.as_deref(), Some("custom"));
        assert_eq!(
            d.cpu.features,
            [(true, "pdpe1gb".to_string()), (false, "svm".to_string())]
        );
        assert_eq!(d.cpu.phys_bits, Some(46));
        assert_eq!(d.pcihole64, Some(2 << 40));
        assert_eq!(d.window.mmio64, Some(1 << 40));
        assert_eq!(
            d.hostdevs,
            [Hostdev {
                address: "0000:41:00.0".into(),
                alias: None
            }]
        );
    }

    #[test]
    fn seabios_pci64_as_a_sysinfo_entry() {
        let d = parse_domain(
            "<domain><sysinfo type='fwcfg'><entry name='opt/org.seabios/pci64'>off</entry></sysinfo></domain>",
        )
        .unwrap();
        assert_eq!(d.window.seabios_pci64, Some(false));
    }

    #[test]
    fn the_aperture_as_a_sysinfo_entry() {
        let d = parse_domain(
            "<domain><sysinfo type='fwcfg'>\n<entry name='opt/ovmf/X-PciMmio64Mb'>262144</entry>\n<entry name='opt/x'>1</entry></sysinfo></domain>",
        )
        .unwrap();
        assert_eq!(d.window.mmio64, Some(256 << 30));
        // An smbios sysinfo of the same shape is not fw_cfg.
        let d = parse_domain("<domain><sysinfo type='smbios'><entry name='opt/ovmf/X-PciMmio64Mb'>1</entry></sysinfo></domain>").unwrap();
        assert_eq!(d.window.mmio64, None);
        let e = parse_domain("<domain><sysinfo type='fwcfg'>\n<entry name='opt/ovmf/X-PciMmio64Mb'>lots</entry></sysinfo></domain>").unwrap_err();
        assert_eq!(e.0, 2, "{e:?}");
    }

    #[test]
    fn the_elements_that_move_the_map() {
        let d = parse_domain(
            "<domain><maxMemory slots='16' unit='GiB'>512</maxMemory><cpu mode='host-passthrough'><maxphysaddr mode='passthrough' limit='40'/></cpu><devices>\
             <controller type='pci' index='1' model='pcie-root-port'><address type='pci' bus='0x00' slot='0x02'/></controller>\
             <controller type='pci' index='2' model='pcie-root-port'/>\
             <hostdev type='pci'><source><address domain='0' bus='0x41' slot='0' function='0'/></source><address type='pci' bus='0x01' slot='0'/></hostdev>\
             </devices></domain>",
        )
        .unwrap();
        assert_eq!(d.max_memory, Some((512 << 30, 16)));
        assert_eq!(d.cpu.phys_bits_limit, Some(40));
        assert_eq!(d.root_ports, [1, 2]);
        assert_eq!(d.used_buses, [1]);
        assert!(d.virtio_buses.is_empty());
    }

    /// The virtio devices a domain has, with their buses: QEMU gives each
    /// a 64-bit prefetchable BAR.
    #[test]
    fn the_virtio_devices_and_their_buses() {
        let d = parse_domain(
            "<domain><devices>\
             <interface type='network'><model type='virtio'/><address type='pci' domain='0' bus='0x01' slot='0' function='0'/></interface>\
             <interface type='network'><model type='e1000e'/><address type='pci' bus='0x02' slot='0'/></interface>\
             <disk type='file'><target dev='vda' bus='virtio'/><address type='pci' bus='0x04' slot='0'/></disk>\
             <disk type='file'><target dev='sda' bus='sata'/><address type='drive' controller='0'/></disk>\
             <controller type='scsi' model='virtio-scsi'/>\
             <controller type='usb' model='qemu-xhci'><address type='pci' bus='0x03' slot='0'/></controller>\
             <memballoon model='virtio'><address type='pci' bus='0x00' slot='0x05'/></memballoon>\
             <memballoon model='none'/>\
             <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>\
             <video><model type='virtio' heads='1'/></video>\
             </devices></domain>",
        )
        .unwrap();
        assert_eq!(
            d.virtio_buses,
            [Some(1), Some(4), None, Some(0), None, None]
        );
    }

    /// `<domain type='qemu'>` is QEMU without KVM; `kvm` and none are not.
    #[test]
    fn the_domain_type_says_tcg() {
        assert!(parse_domain("<domain type='qemu'/>").unwrap().tcg);
        assert!(!parse_domain("<domain type='kvm'/>").unwrap().tcg);
        assert!(!parse_domain("<domain/>").unwrap().tcg);
    }

    #[test]
    fn override_hidden_kvm_and_commandline() {
        let x = r#"<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <features><kvm><hidden state='on'/></kvm></features>
  <devices>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/></source>
      <alias name='ua-gpu0'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x42' slot='0x00' function='0x0'/></source>
    </hostdev>
  </devices>
  <qemu:commandline><qemu:arg value='-set'/><qemu:arg value='device.ua-gpu0.x-nv-gpudirect-clique=0'/></qemu:commandline>
  <qemu:override><qemu:device alias='ua-gpu0'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device></qemu:override>
</domain>"#;
        let v = parse_domain(x).unwrap().p2p();
        assert!(v.kvm_hidden && v.commandline_set);
        assert_eq!(v.devices[0].name, "ua-gpu0");
        assert_eq!(v.devices[0].hosts, ["0000:41:00.0"]);
        assert_eq!(v.devices[1].name, "");
        assert_eq!(v.cliques, [("ua-gpu0".to_string(), "0".to_string())]);
        let plain = parse_domain(&x.replace("state='on'", "state='off'").replace("-set", "-S"))
            .unwrap()
            .p2p();
        assert!(!plain.kvm_hidden && !plain.commandline_set);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse_domain("<domain><memory unit='QiB'>1</memory></domain>")
                .unwrap_err()
                .0,
            1
        );
        let e = parse_domain("<domain>\n<devices>\n<hostdev type='pci'><source><address bus='0x41' slot='zz' function='0'/></source></hostdev>\n</devices></domain>").unwrap_err();
        assert_eq!(e.0, 3, "{e:?}");
        assert!(parse_domain("<vm/>").is_err());
        assert!(parse_domain("not xml").is_err());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn documents_never_panic(text in "\\PC{0,300}") {
            let _ = parse_domain(&text);
            let _ = parse_domain(&format!("<domain>{text}</domain>"));
        }
    }
}
