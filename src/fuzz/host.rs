//! The targets of `plan`'s host-side inputs (VM configurations, mappings,
//! QEMU arguments, sizes) and of peer-to-peer's (config space, pasted
//! topology and NCCL text, the clique settings of a VM configuration).

use super::{newline_is_neutral, text};
use crate::model::pci::PciAddress;
use crate::parse::{libvirt, proxmox, qemu_args};

/// QEMU argument lines: words quoted back split the same, and a line with
/// the window settings taken out has none left.
fn check_words(line: &str) {
    let ws = qemu_args::words(line);
    let _ = qemu_args::window_args(&ws);
    let again: Vec<String> = ws.iter().map(|w| qemu_args::quote(w)).collect();
    assert_eq!(qemu_args::words(&again.join(" ")), ws, "{again:?}");
    let rest = qemu_args::without_window_args(line, true, true);
    if let Ok(w) = qemu_args::window_args(&qemu_args::words(&rest)) {
        assert_eq!(w, qemu_args::WindowArgs::default(), "{rest:?}");
    }
}

/// `plan`'s host-side inputs. Byte 0 picks the parser: `p` a Proxmox VM
/// configuration, `c` its `cpu:` value, `m` a `pci.cfg` (then a line with
/// the mapping's name, a line with the node), `l` a libvirt domain, `q` a
/// QEMU argument line, `s` a size, `M` a `cpu-models.conf` after a line
/// with the model's name; any other byte picks one by its value.
pub fn host_config(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let t = text(rest);
    let which = match which {
        b'p' => 0,
        b'c' => 1,
        b'm' => 2,
        b'l' => 3,
        b'q' => 4,
        b's' => 5,
        b'M' => 6,
        b => b % 7,
    };
    match which {
        0 => {
            if let Ok(c) = proxmox::parse_config(&t) {
                if let Some(cpu) = &c.cpu {
                    check_phys_bits(cpu);
                }
                for h in &c.hostpci {
                    assert!(!h.hosts.is_empty() || h.mapping.is_some(), "{h:?}");
                }
                if let Some(a) = &c.args {
                    check_words(a);
                }
            }
        }
        1 => {
            if let Ok(cpu) = proxmox::parse_cpu(&t) {
                check_phys_bits(&cpu);
            }
        }
        2 => {
            let mut lines = t.splitn(3, '\n');
            let name = lines.next().unwrap_or("");
            let node = lines.next().filter(|n| !n.is_empty());
            let _ = proxmox::mapping_paths(lines.next().unwrap_or(""), name, node);
        }
        3 => {
            if let Ok(d) = libvirt::parse_domain(&t) {
                assert!(d.cpu.phys_bits.is_none_or(|b| (8..=64).contains(&b)));
                for h in &d.hostdevs {
                    let a: PciAddress = h.address.parse().expect("a hostdev is an address");
                    assert_eq!(a.to_string(), h.address);
                }
            }
        }
        4 => check_words(&t),
        6 => {
            let (name, conf) = t.split_once('\n').unwrap_or((&t, ""));
            if let Ok(Some(cpu)) = proxmox::custom_cpu_model(conf, name) {
                check_phys_bits(&cpu);
            }
        }
        _ => {
            if let Ok(n) = crate::parse::size::size(&t) {
                assert_eq!(crate::parse::size::size(&n.to_string()), Ok(n), "{t:?}");
            }
        }
    }
}

/// Peer-to-peer inputs. Byte 0 `c`: the rest is a config space (the
/// capability walk, the clique, where QEMU would place it); `v` a Proxmox
/// VM configuration, `x` a libvirt domain (`plan --p2p`); anything else:
/// the rest is text: pasted `nvidia-smi topo` matrices, NCCL logs and QEMU
/// warnings (`explain`), and an `nccl.conf`.
pub fn p2p(data: &[u8]) {
    use crate::model::p2p::CliqueCap;
    use crate::parse::{nccl, p2p_text, pci_caps};
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    if which == b'c' {
        if let Some(caps) = pci_caps::capabilities(rest) {
            assert!(caps.len() <= 48);
            assert!(caps
                .iter()
                .all(|c| c.offset >= 0x40 && c.offset % 4 == 0 && c.id != 0xff));
        }
        match pci_caps::clique_cap(rest) {
            CliqueCap::Found {
                offset,
                clique,
                version,
            } => {
                assert!(clique < 32 && version < 8);
                let at = usize::from(offset);
                assert_eq!(&rest[at + 3..at + 6], b"P2P");
            }
            CliqueCap::Unreadable { bytes } => assert_eq!(bytes, rest.len()),
            CliqueCap::Absent => {}
        }
        if let Some(p) = pci_caps::clique_placement(rest) {
            assert!(p.offset.is_some() || !p.c8_free);
        }
        return;
    }
    let t = text(rest);
    if which == b'v' || which == b'x' {
        let vm = if which == b'v' {
            proxmox::parse_config(&t).map(|c| c.p2p()).ok()
        } else {
            libvirt::parse_domain(&t).map(|d| d.p2p()).ok()
        };
        let Some(vm) = vm else { return };
        if which == b'v' {
            for (id, _) in &vm.cliques {
                assert!(!id.contains('.'), "a -set id holds no dot: {id:?}");
            }
        }
        let kept = qemu_args::args_without_cliques(&vm.args);
        assert!(
            qemu_args::set_cliques(&qemu_args::words(&kept)).is_empty(),
            "{kept:?}"
        );
        return;
    }
    let p = p2p_text::parse(&t);
    // The judgement of what was parsed must not fail either.
    let _ = crate::decide::p2p::from_text(&p, false, None);
    assert!(p.paths.iter().all(|(a, b, _)| a != b), "{p:?}");
    assert!(p.p2p_read.iter().all(|(a, b, _)| a != b), "{p:?}");
    if newline_is_neutral(&t) {
        assert_eq!(p2p_text::parse(&format!("{t}\n")), p, "a trailing newline");
    }
    for (k, v) in nccl::parse_conf(&t) {
        assert!(k.starts_with("NCCL_") && !k.contains(char::is_whitespace));
        let _ = nccl::level_setting(Some(&v), Some(&v));
    }
}

fn check_phys_bits(cpu: &proxmox::PveCpu) {
    if let Some(proxmox::PhysBits::Bits(b)) = cpu.phys_bits {
        assert!((8..=64).contains(&b), "{cpu:?}");
    }
}
