//! `plan --p2p`'s section: the driver's gate as the configuration will
//! open it, why not, and the lines to paste.

pub(crate) use crate::decide::p2p::plan::PlanP2p;
use std::fmt::Write as _;

pub(crate) fn text(p: &PlanP2p, s: &mut String) {
    let _ = writeln!(
        s,
        "p2p: the driver's gate will be {} (QEMU {}, host IOMMU {})",
        p.driver_gate.as_str(),
        match (&p.qemu_given, &p.qemu_package) {
            (Some(v), _) => format!("{v} from --qemu"),
            (None, Some(pkg)) => pkg.clone(),
            (None, None) => "release unknown".into(),
        },
        p.iommu_width_bits
            .map(|w| format!("{w} address bits"))
            .unwrap_or_else(|| "width unknown".into())
    );
    for d in &p.devices {
        let _ = writeln!(
            s,
            "  {} ({}): device id {}{}, clique {}, capability at {}{}",
            if d.name.is_empty() {
                "hostdev without alias"
            } else {
                &d.name
            },
            d.host,
            d.device_id,
            if d.targetable {
                ""
            } else {
                " (not targetable by -set)"
            },
            d.clique.as_deref().unwrap_or("not set"),
            d.clique_offset.as_deref().unwrap_or("unknown"),
            if d.acs_redirect.is_empty() {
                String::new()
            } else {
                format!("; ACS redirect on {}", d.acs_redirect.join(", "))
            }
        );
    }
    for w in &p.problems {
        let _ = writeln!(s, "  why: {w}");
    }
    for l in &p.lines.proxmox {
        let _ = writeln!(s, "  proxmox: {l}");
    }
    if let Some(l) = &p.lines.libvirt {
        let _ = writeln!(s, "  libvirt: {l}");
    }
    let _ = writeln!(s, "  qemu: {}", p.lines.qemu);
}
