//! `plan` reads everything, then decides: the reads of whole runs,
//! counted on the `Root` reader (`read::root::counting`).

use super::*;
use crate::evidence::host::ASSUMED_HOST_PHYS_BITS;
use crate::read::root::counting;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan-proxmox-8x-rtx-pro-6000")
}

fn options(args: &[(&str, &str)], p2p: bool) -> PlanOptions {
    let mut o = PlanOptions {
        root: fixture().join("root"),
        p2p,
        ..PlanOptions::default()
    };
    for (k, v) in args {
        match *k {
            "proxmox" => o.proxmox = Some(v.to_string()),
            "libvirt" => o.libvirt = Some(fixture().join(v)),
            "gpu" => o.gpu.push(v.to_string()),
            _ => unreachable!("{k}"),
        }
    }
    o
}

fn count(seen: &[PathBuf], tail: &str) -> usize {
    seen.iter().filter(|p| p.ends_with(tail)).count()
}

/// For a Proxmox VM (one through a resource mapping, one with a custom
/// CPU model), a libvirt domain and flags alone, each with and without
/// `--p2p`: deciding reads nothing; the whole run reads exactly what
/// gathering did, in the same order; the host CPU, dpkg's status and the
/// VM's configuration are read once.
#[test]
fn plan_reads_everything_once_and_then_decides() {
    type Run<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<&'a str>);
    let runs: [Run; 4] = [
        (
            "proxmox 103",
            vec![("proxmox", "103")],
            Some("etc/pve/qemu-server/103.conf"),
        ),
        (
            "proxmox 105",
            vec![("proxmox", "105")],
            Some("etc/pve/qemu-server/105.conf"),
        ),
        (
            "libvirt",
            vec![("libvirt", "libvirt-inference-host.xml")],
            Some("libvirt-inference-host.xml"),
        ),
        (
            "flags",
            vec![("gpu", "0000:41:00.0"), ("gpu", "0000:42:00")],
            None,
        ),
    ];
    for (what, args, config) in runs {
        for p2p in [false, true] {
            let o = options(&args, p2p);
            let what = format!("{what}{}", if p2p { " --p2p" } else { "" });
            let (host, gathered) = counting::record(|| gather(&o));
            let (report, decided) = counting::record(|| decide(&o, &host));
            let report = report.unwrap_or_else(|e| panic!("{what}: {e:?}"));
            assert!(
                decided.is_empty(),
                "{what}: decided after reading {decided:?}"
            );
            assert_eq!(report.p2p.is_some(), p2p, "{what}");
            let (again, run) = counting::record(|| run(&o));
            assert_eq!(again.unwrap(), report, "{what}");
            assert_eq!(run, gathered, "{what}: the run read beyond its gathering");
            assert_eq!(count(&run, "proc/cpuinfo"), 1, "{what}: {run:#?}");
            assert_eq!(count(&run, "var/lib/dpkg/status"), 1, "{what}");
            if let Some(c) = config {
                assert_eq!(count(&run, c), 1, "{what}");
            }
            // What only some configurations lead to, read once when they do.
            let custom = usize::from(what.starts_with("proxmox 105"));
            assert_eq!(count(&run, "cpu-models.conf"), custom, "{what}");
            let mapped = usize::from(what.starts_with("proxmox 103"));
            assert_eq!(count(&run, "mapping/pci.cfg"), mapped, "{what}");
            // --p2p reads each GPU's config space once, whole.
            let gpu_config = run
                .iter()
                .filter(|p| p.ends_with("0000:42:00.0/config"))
                .count();
            assert_eq!(gpu_config, 1, "{what}: {run:#?}");
        }
    }
}

/// Without `/proc/cpuinfo` the host is taken to have
/// `ASSUMED_HOST_PHYS_BITS` for `cpu: host` and for Proxmox's memory
/// hot-plug maximum alike, and the plan says so.
#[test]
fn one_host_width_when_the_host_cpu_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("300.conf");
    let write = |cpu: &str| {
        std::fs::write(
            &conf,
            format!("bios: ovmf\nmachine: q35\nmemory: 65536\nnuma: 1\nhotplug: memory\n{cpu}hostpci0: 0000:41:00.0,pcie=1\n"),
        )
        .unwrap();
    };
    let o = PlanOptions {
        proxmox: Some(conf.display().to_string()),
        ..options(&[], false)
    };
    for cpu in ["cpu: host\n", ""] {
        write(cpu);
        let mut host = gather(&o);
        assert_eq!(host.host_phys_bits(), Some(46), "the fixture's");
        host.cpu = None;
        let c = read_config(&host).unwrap();
        // qemu-server's get_max_mem: the host's bits (at most 40 for a
        // named model), rounded to even, 2^(bits-21) MiB, at most 4 TiB:
        // 512 GiB for kvm64, 4 TiB for `host` (36 bits, the default
        // this replaced, gave 32 GiB to both).
        let want: u64 = if cpu.is_empty() { 512 << 30 } else { 4 << 40 };
        assert_eq!(c.maxmem, Some(want), "{cpu:?}");
        assert!(c.host_bits_assumed);
        let r = decide(&o, &host).unwrap();
        if !cpu.is_empty() {
            assert_eq!(r.vm.phys_bits, ASSUMED_HOST_PHYS_BITS);
        }
        let said =
            format!("{ASSUMED_HOST_PHYS_BITS} host address bits (no /proc/cpuinfo under the root)");
        assert!(r.vm.assumed.contains(&said), "{cpu:?}: {:?}", r.vm.assumed);
    }
}
