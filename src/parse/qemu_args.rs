//! The QEMU arguments a VM configuration passes through (Proxmox's `args:`
//! line, libvirt's `<qemu:commandline>`): the two that move the 64-bit
//! window, `-global *.pci-hole64-size=` and OVMF's
//! `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=`.

use crate::parse::size::size;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WindowArgs {
    /// `pci-hole64-size`, in bytes.
    pub hole64: Option<u64>,
    /// `X-PciMmio64Mb`, in bytes.
    pub mmio64: Option<u64>,
}

/// Splits a command line as a shell would for plain words and single or
/// double quotes (no expansions: Proxmox does not run a shell either).
pub(crate) fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The window settings among `args`; a malformed value is an error that
/// names it.
pub(crate) fn window_args(args: &[String]) -> Result<WindowArgs, String> {
    let mut w = WindowArgs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a = a.trim_start_matches('-');
        match a {
            "global" => {
                let Some(v) = it.next() else { break };
                if let Some((prop, value)) = v.split_once('=') {
                    if prop.ends_with(".pci-hole64-size") {
                        w.hole64 = Some(size(value).map_err(|e| format!("-global {v}: {e}"))?);
                    }
                }
            }
            "fw_cfg" => {
                let Some(v) = it.next() else { break };
                let mut name = None;
                let mut string = None;
                for part in v.split(',') {
                    match part.split_once('=') {
                        Some(("name", n)) => name = Some(n),
                        Some(("string", s)) => string = Some(s),
                        _ => {}
                    }
                }
                if name == Some("opt/ovmf/X-PciMmio64Mb") {
                    let mib: u64 = string.and_then(|s| s.parse().ok()).ok_or_else(|| {
                        format!("-fw_cfg {v}: X-PciMmio64Mb needs a whole number of MiB")
                    })?;
                    w.mmio64 = Some(
                        mib.checked_mul(1 << 20)
                            .ok_or_else(|| format!("-fw_cfg {v}: too large"))?,
                    );
                }
            }
            _ => {}
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_settings_among_other_arguments() {
        let a = words("-device foo,bar=1 -global q35-pcihost.pci-hole64-size=2048G -fw_cfg 'name=opt/ovmf/X-PciMmio64Mb,string=524288' -smbios type=1");
        assert_eq!(
            window_args(&a),
            Ok(WindowArgs {
                hole64: Some(2 << 40),
                mmio64: Some(512 << 30)
            })
        );
        assert_eq!(
            window_args(&words("-global i440FX-pcihost.pci-hole64-size=1048576K"))
                .unwrap()
                .hole64,
            Some(1 << 30)
        );
        assert_eq!(window_args(&words("")), Ok(WindowArgs::default()));
        assert!(window_args(&words("-global q35-pcihost.pci-hole64-size=12Q")).is_err());
        assert!(window_args(&words("-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=lots")).is_err());
        assert_eq!(words(r#"a "b c" 'd e' "" f"#), ["a", "b c", "d e", "", "f"]);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arguments_never_panic(text in "\\PC{0,200}") {
            let _ = window_args(&words(&text));
        }
    }
}
