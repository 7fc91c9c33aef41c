//! What a VM configuration says of peer-to-peer, for `plan --p2p`: which
//! device ids QEMU will give the GPUs, the clique each is set to, and
//! whether KVM is hidden.
//!
//! Proxmox (qemu-server `PVE/QemuServer/PCI.pm`, `print_hostpci_devices`):
//! a `hostpciN` entry that yields one function gets the device id
//! `hostpciN`; one that yields several (a bare `41:00`: every function)
//! gets `hostpciN.0`, `hostpciN.1`... which `-set device.ID.PROP=V` cannot
//! name (QEMU splits its argument at the first dots: group, id, property).
//! `cpu: ...,hidden=1` is QEMU's `kvm=off`. libvirt (formatdomain, "QEMU
//! command-line passthrough"): `<qemu:override><qemu:device alias=...>
//! <qemu:frontend><qemu:property name=... type=... value=.../>`, libvirt
//! 8.2 or later; libvirt passes `-device` as JSON, which `-set` cannot
//! change. `<features><kvm><hidden state='on'/>` hides KVM.

use crate::parse::qemu_args;

/// One passed-through device entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmDevice {
    /// `hostpci0`, or the libvirt alias (`hostdev0`, `ua-gpu0`); empty
    /// when a libvirt `<hostdev>` has none.
    pub name: String,
    /// Host addresses as written (`0000:41:00.0`, `41:00`).
    pub hosts: Vec<String>,
    /// A Proxmox resource mapping (`mapping=NAME`).
    pub mapping: bool,
    /// `x-vga=1`.
    pub x_vga: bool,
}

impl VmDevice {
    /// Written without a function (`41:00`): every function of the device.
    pub(crate) fn bare(&self) -> bool {
        self.hosts.iter().any(|h| {
            let tail = h.rsplit(':').next().unwrap_or("");
            !tail.contains('.')
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmP2p {
    pub devices: Vec<VmDevice>,
    pub kvm_hidden: bool,
    /// (device id, value) of each `x-nv-gpudirect-clique` set: by `-set`
    /// (Proxmox `args:`) or `<qemu:override>` (libvirt).
    pub cliques: Vec<(String, String)>,
    /// libvirt: `-set` in `<qemu:commandline>` (fails under JSON -device).
    pub commandline_set: bool,
    /// Proxmox: the `args:` line as written.
    pub args: String,
}

/// `args:` words without the clique settings, quoted back.
pub(crate) fn args_without_cliques(args: &str) -> String {
    let words = qemu_args::words(args);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "-set"
            && words
                .get(i + 1)
                .is_some_and(|w| w.contains(".x-nv-gpudirect-clique="))
        {
            i += 2;
            continue;
        }
        out.push(qemu_args::quote(&words[i]));
        i += 1;
    }
    out.join(" ")
}

/// `-set device.ID.x-nv-gpudirect-clique=V` in argument words. The id is
/// what lies between the first two dots, as QEMU reads it.
pub(crate) fn set_cliques(words: &[String]) -> Vec<(String, String)> {
    words
        .windows(2)
        .filter(|w| w[0] == "-set")
        .filter_map(|w| {
            let rest = w[1].strip_prefix("device.")?;
            let (id, prop) = rest.split_once('.')?;
            let (name, value) = prop.split_once('=')?;
            (name == "x-nv-gpudirect-clique").then(|| (id.to_string(), value.to_string()))
        })
        .collect()
}

/// A Proxmox VM configuration (the current state: lines before the first
/// `[snapshot]` section).
pub(crate) fn proxmox(text: &str) -> VmP2p {
    let mut out = VmP2p::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let props: Vec<(&str, &str)> = value
            .split(',')
            .enumerate()
            .map(|(i, p)| match p.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None if i == 0 => ("", p.trim()),
                None => (p.trim(), ""),
            })
            .collect();
        let on = |v: &str| matches!(v, "1" | "on" | "yes" | "true");
        match key {
            "cpu" => out.kvm_hidden = props.iter().any(|(k, v)| *k == "hidden" && on(v)),
            "args" => {
                out.cliques = set_cliques(&qemu_args::words(value));
                out.args = value.to_string();
            }
            k if k.len() > 7
                && k.starts_with("hostpci")
                && k[7..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                let host = props
                    .iter()
                    .find(|(k, _)| k.is_empty() || *k == "host")
                    .map(|(_, v)| *v)
                    .unwrap_or("");
                out.devices.push(VmDevice {
                    name: k.to_string(),
                    hosts: host
                        .split(';')
                        .filter(|h| !h.is_empty())
                        .map(String::from)
                        .collect(),
                    mapping: props.iter().any(|(k, _)| *k == "mapping"),
                    x_vga: props.iter().any(|(k, v)| *k == "x-vga" && on(v)),
                });
            }
            _ => {}
        }
    }
    out
}

const QEMU_NS: &str = "http://libvirt.org/schemas/domain/qemu/1.0";

/// A libvirt domain XML.
pub(crate) fn libvirt(text: &str) -> Result<VmP2p, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| e.to_string())?;
    let mut out = VmP2p::default();
    for n in doc.descendants().filter(|n| n.is_element()) {
        let tag = n.tag_name();
        match (tag.namespace(), tag.name()) {
            (None, "hostdev") if n.attribute("type") == Some("pci") => {
                let alias = n
                    .children()
                    .find(|c| c.has_tag_name("alias"))
                    .and_then(|a| a.attribute("name"))
                    .unwrap_or("");
                let host = n
                    .descendants()
                    .find(|c| {
                        c.has_tag_name("address")
                            && c.parent().is_some_and(|p| p.has_tag_name("source"))
                    })
                    .map(|a| {
                        let f = |k: &str| {
                            a.attribute(k)
                                .unwrap_or("0")
                                .trim_start_matches("0x")
                                .to_string()
                        };
                        format!(
                            "{:0>4}:{:0>2}:{:0>2}.{}",
                            f("domain"),
                            f("bus"),
                            f("slot"),
                            f("function")
                        )
                    })
                    .unwrap_or_default();
                out.devices.push(VmDevice {
                    name: alias.to_string(),
                    hosts: vec![host],
                    mapping: false,
                    x_vga: false,
                });
            }
            (None, "hidden") if n.parent().is_some_and(|p| p.has_tag_name("kvm")) => {
                out.kvm_hidden |= n.attribute("state") == Some("on");
            }
            (Some(QEMU_NS), "device")
                if n.parent()
                    .is_some_and(|p| p.tag_name().name() == "override") =>
            {
                let alias = n.attribute("alias").unwrap_or("").to_string();
                for p in n
                    .descendants()
                    .filter(|p| p.tag_name().name() == "property")
                {
                    if p.attribute("name") == Some("x-nv-gpudirect-clique") {
                        out.cliques.push((
                            alias.clone(),
                            p.attribute("value").unwrap_or("").to_string(),
                        ));
                    }
                }
            }
            (Some(QEMU_NS), "commandline") => {
                let words: Vec<String> = n
                    .children()
                    .filter(|a| a.tag_name().name() == "arg")
                    .filter_map(|a| a.attribute("value").map(String::from))
                    .collect();
                let sets = set_cliques(&words);
                out.commandline_set |= !sets.is_empty();
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn proxmox_devices_cliques_and_hidden() {
        let t = "cpu: host,hidden=1\nhostpci0: 0000:41:00.0,pcie=1\nhostpci1: 0000:42:00,pcie=1,x-vga=1\nhostpci2: mapping=gpu,pcie=1\nargs: -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.0.x-nv-gpudirect-clique=0\n[snap]\nhostpci3: 0000:43:00.0\n";
        let v = proxmox(t);
        assert!(v.kvm_hidden);
        assert_eq!(v.devices.len(), 3);
        assert!(!v.devices[0].bare() && v.devices[1].bare() && v.devices[1].x_vga);
        assert!(v.devices[2].mapping);
        assert_eq!(
            v.cliques,
            [
                ("hostpci0".to_string(), "0".to_string()),
                (
                    "hostpci1".to_string(),
                    "0.x-nv-gpudirect-clique=0".to_string()
                )
            ][..1]
        );
        assert!(!proxmox("cpu: host,flags=+pdpe1gb\n").kvm_hidden);
    }

    #[test]
    fn libvirt_override_hidden_and_commandline() {
        let x = r#"<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <features><kvm><hidden state='on'/></kvm></features>
  <devices>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/></source>
      <alias name='ua-gpu0'/>
    </hostdev>
  </devices>
  <qemu:commandline><qemu:arg value='-set'/><qemu:arg value='device.ua-gpu0.x-nv-gpudirect-clique=0'/></qemu:commandline>
  <qemu:override><qemu:device alias='ua-gpu0'><qemu:frontend><qemu:property name='x-nv-gpudirect-clique' type='unsigned' value='0'/></qemu:frontend></qemu:device></qemu:override>
</domain>"#;
        let v = libvirt(x).unwrap();
        assert!(v.kvm_hidden && v.commandline_set);
        assert_eq!(v.devices[0].name, "ua-gpu0");
        assert_eq!(v.devices[0].hosts, ["0000:41:00.0"]);
        assert_eq!(v.cliques, [("ua-gpu0".to_string(), "0".to_string())]);
        assert!(libvirt("<domain").is_err());
    }

    proptest! {
        #[test]
        fn any_config_parses_without_panic(t in "(hostpci[0-9]: [0-9a-f:.;,=]{0,20}\n|cpu: [a-z0-9,=]{0,20}\n|args: -set device\\.[a-z0-9.]{0,12}=[0-9]\n|.{0,20}\n){0,8}") {
            let v = proxmox(&t);
            prop_assert!(v.devices.iter().all(|d| d.name.starts_with("hostpci")));
        }
    }
}
