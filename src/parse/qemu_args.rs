//! The QEMU arguments a VM configuration passes through (Proxmox's `args:`
//! line, libvirt's `<qemu:commandline>`): those that move the 64-bit
//! window, `-global *.pci-hole64-size=`, OVMF's
//! `-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=` and SeaBIOS 1.17.0's
//! `-fw_cfg name=opt/org.seabios/pci64,string=`.

use crate::parse::size::size;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WindowArgs {
    /// `pci-hole64-size`, in bytes.
    pub hole64: Option<u64>,
    /// `X-PciMmio64Mb`, in bytes.
    pub mmio64: Option<u64>,
    /// SeaBIOS's `opt/org.seabios/pci64` where it says yes or no; a value
    /// SeaBIOS does not take is its default (`None`).
    pub seabios_pci64: Option<bool>,
}

/// How SeaBIOS reads a boolean fw_cfg file (src/romfile.c
/// romfile_loadbool, rel-1.17.0 L103-123): exactly "1", "on", "yes" or
/// "0", "off", "no"; anything else is the default.
pub(crate) fn seabios_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "on" | "yes" => Some(true),
        "0" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// Splits a command line as Proxmox splits `args:` (shell words, no
/// expansions): blanks separate words; single quotes keep everything
/// literally; in double quotes and outside quotes a backslash takes the
/// next character as it is.
pub(crate) fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('\'') => cur.push(c),
            Some(_) if c == '"' => quote = None,
            _ if c == '\\' => cur.push(chars.next().unwrap_or('\\')),
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

/// One of the two settings, as written: `-global` or `-fw_cfg` and its
/// value, with the value it sets.
enum Setting<'a> {
    Hole64(&'a str),
    Mmio64(&'a str),
    SeabiosPci64(&'a str),
}

/// What `-FLAG VALUE` sets (`FLAG` without its dashes), if it is one of
/// the two. `-global` takes
/// `DRIVER.PROPERTY=VALUE` or `driver=D,property=P,value=V`; `-fw_cfg`
/// takes `[name=]NAME,string=VALUE` (QEMU's implied first key).
fn setting<'a>(flag: &str, value: &'a str) -> Option<Setting<'a>> {
    match flag {
        "global" => {
            if let Some((prop, v)) = value.split_once('=') {
                if prop.ends_with(".pci-hole64-size") && !prop.contains(',') {
                    return Some(Setting::Hole64(v));
                }
            }
            let (mut property, mut v) = (None, None);
            for part in value.split(',') {
                match part.split_once('=') {
                    Some(("property", p)) => property = Some(p),
                    Some(("value", x)) => v = Some(x),
                    _ => {}
                }
            }
            match (property, v) {
                (Some("pci-hole64-size"), Some(v)) => Some(Setting::Hole64(v)),
                _ => None,
            }
        }
        "fw_cfg" => {
            let (mut name, mut string) = (None, None);
            for (i, part) in value.split(',').enumerate() {
                match part.split_once('=') {
                    Some(("name", n)) => name = Some(n),
                    Some(("string", s)) => string = Some(s),
                    None if i == 0 => name = Some(part),
                    _ => {}
                }
            }
            match name {
                Some(MMIO64_NAME) => Some(Setting::Mmio64(string.unwrap_or(""))),
                Some(SEABIOS_PCI64_NAME) => Some(Setting::SeabiosPci64(string.unwrap_or(""))),
                _ => None,
            }
        }
        _ => None,
    }
}

const MMIO64_NAME: &str = "opt/ovmf/X-PciMmio64Mb";
/// SeaBIOS 1.17.0's pad-mode switch (src/fw/pciinit.c pci_setup).
pub(crate) const SEABIOS_PCI64_NAME: &str = "opt/org.seabios/pci64";

/// The property QEMU's vfio-pci takes for NVIDIA's GPUDirect clique
/// (hw/vfio/pci-quirks.c).
pub(crate) const CLIQUE: &str = "x-nv-gpudirect-clique";

/// `-set device.ID.x-nv-gpudirect-clique=V` in argument words. The id is
/// what lies between the first two dots, as QEMU reads it (`-set` splits
/// its argument at the first dots: group, id, property), so a multi-
/// function entry's `hostpci1.0` cannot be named.
pub(crate) fn set_cliques(words: &[String]) -> Vec<(String, String)> {
    words
        .windows(2)
        .filter(|w| w[0] == "-set")
        .filter_map(|w| {
            let rest = w[1].strip_prefix("device.")?;
            let (id, prop) = rest.split_once('.')?;
            let (name, value) = prop.split_once('=')?;
            (name == CLIQUE).then(|| (id.to_string(), value.to_string()))
        })
        .collect()
}

/// An `args:` line without its clique settings, quoted back.
pub(crate) fn args_without_cliques(args: &str) -> String {
    let words = words(args);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "-set"
            && words
                .get(i + 1)
                .is_some_and(|w| w.contains(&format!(".{CLIQUE}=")))
        {
            i += 2;
            continue;
        }
        out.push(quote(&words[i]));
        i += 1;
    }
    out.join(" ")
}

/// The window settings among `args`; a malformed value is an error that
/// names it. The last of each wins, as in QEMU.
pub(crate) fn window_args(args: &[String]) -> Result<WindowArgs, String> {
    let mut w = WindowArgs::default();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].trim_start_matches('-');
        if !matches!(flag, "global" | "fw_cfg") {
            i += 1;
            continue;
        }
        let Some(v) = args.get(i + 1) else { break };
        match setting(flag, v) {
            Some(Setting::Hole64(value)) => {
                w.hole64 = Some(size(value).map_err(|e| format!("-global {v}: {e}"))?);
            }
            Some(Setting::Mmio64(mib)) => {
                let mib: u64 = mib.parse().map_err(|_| {
                    format!("-fw_cfg {v}: X-PciMmio64Mb needs a whole number of MiB")
                })?;
                w.mmio64 = Some(
                    mib.checked_mul(1 << 20)
                        .ok_or_else(|| format!("-fw_cfg {v}: too large"))?,
                );
            }
            Some(Setting::SeabiosPci64(v)) => w.seabios_pci64 = seabios_bool(v),
            None => {}
        }
        i += 2;
    }
    Ok(w)
}

/// `line` without the settings a fix is about to add again: the
/// `pci-hole64-size` globals when `hole64`, OVMF's aperture when `mmio64`
/// (QEMU refuses a second `-fw_cfg` of one name). The line is returned as
/// it was when it has none of them; otherwise its words are quoted back
/// where they need it.
pub(crate) fn without_window_args(line: &str, hole64: bool, mmio64: bool) -> String {
    let ws = words(line);
    let mut kept: Vec<&str> = Vec::new();
    let mut dropped = false;
    let mut i = 0;
    while i < ws.len() {
        let flag = ws[i].trim_start_matches('-');
        let Some(v) = ws
            .get(i + 1)
            .filter(|_| matches!(flag, "global" | "fw_cfg"))
        else {
            kept.push(&ws[i]);
            i += 1;
            continue;
        };
        let drop = match setting(flag, v) {
            Some(Setting::Hole64(_)) => hole64,
            Some(Setting::Mmio64(_)) => mmio64,
            Some(Setting::SeabiosPci64(_)) | None => false,
        };
        if drop {
            dropped = true;
        } else {
            kept.extend([ws[i].as_str(), v.as_str()]);
        }
        i += 2;
    }
    if !dropped {
        return line.trim().to_string();
    }
    kept.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// One word as `words` reads it back: bare when it can be, else in single
/// quotes, else (it has a single quote) in double quotes with `"` and `\`
/// escaped.
pub(crate) fn quote(w: &str) -> String {
    if !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '\\')) {
        w.to_string()
    } else if !w.contains('\'') {
        format!("'{w}'")
    } else {
        format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SeaBIOS's pci64 file, as romfile_loadbool reads it.
    #[test]
    fn seabios_pci64_as_seabios_reads_it() {
        let w = |v: &str| {
            window_args(&words(&format!(
                "-fw_cfg name=opt/org.seabios/pci64,string={v}"
            )))
            .unwrap()
            .seabios_pci64
        };
        for (v, b) in [("on", Some(true)), ("1", Some(true)), ("yes", Some(true))] {
            assert_eq!(w(v), b, "{v}");
        }
        for (v, b) in [
            ("off", Some(false)),
            ("0", Some(false)),
            ("no", Some(false)),
        ] {
            assert_eq!(w(v), b, "{v}");
        }
        // Anything else, "true" and "On" too, is SeaBIOS's default.
        for v in ["true", "On", ""] {
            assert_eq!(w(v), None, "{v}");
        }
        let short = window_args(&words("-fw_cfg opt/org.seabios/pci64,string=off")).unwrap();
        assert_eq!(short.seabios_pci64, Some(false));
    }

    #[test]
    fn clique_settings_and_the_args_without_them() {
        let a = "-cpu host -set device.hostpci0.x-nv-gpudirect-clique=0 -set device.hostpci1.0.x-nv-gpudirect-clique=0 -set device.hostpci2.rombar=0";
        // QEMU reads the id up to the next dot: `hostpci1` with a property
        // `0.x-nv-...`, which is not the clique.
        assert_eq!(
            set_cliques(&words(a)),
            [("hostpci0".to_string(), "0".to_string())]
        );
        assert_eq!(
            args_without_cliques(a),
            "-cpu host -set device.hostpci2.rombar=0"
        );
        assert_eq!(args_without_cliques("-set 'a b'"), "-set 'a b'");
    }

    #[test]
    fn the_window_settings_among_other_arguments() {
        let a = words("-device foo,bar=1 -global q35-pcihost.pci-hole64-size=2048G -fw_cfg 'name=opt/ovmf/X-PciMmio64Mb,string=524288' -smbios type=1");
        assert_eq!(
            window_args(&a),
            Ok(WindowArgs {
                hole64: Some(2 << 40),
                mmio64: Some(512 << 30),
                seabios_pci64: None,
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

    #[test]
    fn the_other_ways_qemu_takes_them() {
        // `name=` is QEMU's implied first key of -fw_cfg.
        let w = window_args(&words("-fw_cfg opt/ovmf/X-PciMmio64Mb,string=524288")).unwrap();
        assert_eq!(w.mmio64, Some(512 << 30));
        let w = window_args(&words(
            "-global driver=q35-pcihost,property=pci-hole64-size,value=1T",
        ))
        .unwrap();
        assert_eq!(w.hole64, Some(1 << 40));
        // The last one wins, as in QEMU; other -fw_cfg names are not ours.
        let w = window_args(&words(
            "-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=1024 -fw_cfg name=opt/other,string=x -fw_cfg opt/ovmf/X-PciMmio64Mb,string=2048",
        ))
        .unwrap();
        assert_eq!(w.mmio64, Some(2 << 30));
    }

    #[test]
    fn a_fix_replaces_the_setting_it_changes() {
        let line = "-device foo -fw_cfg opt/ovmf/X-PciMmio64Mb,string=65536 -global q35-pcihost.pci-hole64-size=64G -smbios 'type=1,product=a b'";
        assert_eq!(
            without_window_args(line, false, true),
            "-device foo -global q35-pcihost.pci-hole64-size=64G -smbios 'type=1,product=a b'"
        );
        assert_eq!(
            without_window_args(line, true, false),
            "-device foo -fw_cfg opt/ovmf/X-PciMmio64Mb,string=65536 -smbios 'type=1,product=a b'"
        );
        assert_eq!(
            without_window_args(line, true, true),
            "-device foo -smbios 'type=1,product=a b'"
        );
        // Nothing to replace: the line as it was.
        assert_eq!(
            without_window_args(" -smbios  \"type=1\" ", true, true),
            "-smbios  \"type=1\""
        );
        assert_eq!(without_window_args("", true, true), "");
        for w in ["", "a b", "it's", "plain", r"a\b", r#"both ' and " \"#] {
            assert_eq!(words(&quote(w)), [w]);
        }
        // Backslashes as Proxmox reads them: an escaped quote opens
        // nothing, and the aperture after it is seen and replaced.
        let line = r"-smbios type=1,product=it\'s -fw_cfg opt/ovmf/X-PciMmio64Mb,string=65536";
        assert_eq!(words(line)[1], "type=1,product=it's");
        assert_eq!(window_args(&words(line)).unwrap().mmio64, Some(64 << 30));
        assert_eq!(
            without_window_args(line, false, true),
            r#"-smbios "type=1,product=it's""#
        );
        assert_eq!(words(r#"a\ b "c\"d" 'e\f'"#), ["a b", "c\"d", r"e\f"]);
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
            // Taking the settings out leaves none of them.
            let rest = without_window_args(&text, true, true);
            if let Ok(w) = window_args(&words(&rest)) {
                prop_assert_eq!(w, WindowArgs::default());
            }
        }
    }
}
