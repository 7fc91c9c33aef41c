//! Kernel command line: tokenising as the kernel does, `pci=realloc`
//! detection, and our own `gpu_preflight.*` keys.
//!
//! The tokeniser follows the kernel's `next_arg()` (lib/cmdline.c callers in
//! kernel/params.c) rather than shell rules, because what matters is what
//! the kernel acted on: quotes only group, and only a value's leading quote,
//! a token's trailing quote and a token's opening quote are removed.

/// Splits a command line into `(key, value)` parameters the way the kernel's
/// `next_arg` does: whitespace separates, double quotes group, a value is what
/// follows the first `=`. Everything after a bare `--` belongs to init and is
/// not returned.
pub(crate) fn parameters(cmdline: &str) -> Vec<(String, Option<String>)> {
    raw_parameters(cmdline)
        .into_iter()
        .map(|p| (p.key.to_string(), p.value.map(str::to_string)))
        .collect()
}

/// The values given to `key`, in order; `None` for a bare `key`.
pub(crate) fn values<'a>(
    params: &'a [(String, Option<String>)],
    key: &'a str,
) -> impl Iterator<Item = Option<&'a str>> + 'a {
    params
        .iter()
        .filter(move |(k, _)| k == key)
        .map(|(_, v)| v.as_deref())
}

/// Whether the command line asks for PCI resource reallocation. The last
/// `realloc` / `realloc=on` / `realloc=off` inside any `pci=` list wins.
///
/// Mirrors `pci_setup()`: the value is split at commas, `realloc=on` and
/// `realloc=off` set the mode (another `realloc=` value is ignored), and any
/// other option beginning with `realloc` turns it on. Without a `pci=`
/// option the kernel may still enable reallocation on its own
/// (`CONFIG_PCI_REALLOC_ENABLE_AUTO`); that is not visible here.
pub(crate) fn realloc_active(cmdline: &str) -> bool {
    let params = parameters(cmdline);
    let mut on = false;
    for value in values(&params, "pci").flatten() {
        for option in value.split(',') {
            match option.strip_prefix("realloc=") {
                Some("on") => on = true,
                Some("off") => on = false,
                Some(_) => {}
                None if option.starts_with("realloc") => on = true,
                None => {}
            }
        }
    }
    on
}

/// Our own settings, `gpu_preflight.KEY=VALUE`, in order, with the prefix
/// removed. The kernel treats `-` and `_` in parameter names alike, so
/// `gpu-preflight.expect=8` counts too and keys come back with `_`. A bare
/// `gpu_preflight.KEY` yields an empty value.
pub(crate) fn gpu_preflight_settings(cmdline: &str) -> Vec<(String, String)> {
    raw_parameters(cmdline)
        .into_iter()
        .filter_map(|p| {
            let key = p.key.replace('-', "_");
            let key = key.strip_prefix("gpu_preflight.")?;
            if key.is_empty() {
                return None;
            }
            Some((key.to_string(), p.value.unwrap_or("").to_string()))
        })
        .collect()
}

struct RawParam<'a> {
    key: &'a str,
    value: Option<&'a str>,
}

/// The kernel's `isspace()` on ASCII.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// One token starting at `pos` (not a space): the parameter, where the token
/// began, and where the next search starts.
fn next_arg(s: &str, pos: usize) -> (RawParam<'_>, usize) {
    let b = s.as_bytes();
    let quoted = b[pos] == b'"';
    let start = if quoted { pos + 1 } else { pos };
    let mut in_quote = quoted;
    let mut equals = None;
    let mut i = start;
    while i < b.len() {
        let c = b[i];
        if is_space(c) && !in_quote {
            break;
        }
        // An `=` as the very first character does not split (the kernel
        // keeps the position 0 as "none seen").
        if equals.is_none() && c == b'=' && i > start {
            equals = Some(i);
        }
        if c == b'"' {
            in_quote = !in_quote;
        }
        i += 1;
    }
    // Only the token's last character may be a closing quote to drop.
    let ends_in_quote = i > start && b[i - 1] == b'"';
    let param = match equals {
        None => {
            let end = if quoted && ends_in_quote { i - 1 } else { i };
            RawParam {
                key: &s[start..end],
                value: None,
            }
        }
        Some(eq) => {
            let mut vstart = eq + 1;
            let mut vend = i;
            let value_quoted = vstart < i && b[vstart] == b'"';
            if value_quoted {
                vstart += 1;
            }
            if (value_quoted || quoted) && ends_in_quote {
                vend = i - 1;
            }
            // `key="` leaves the opening quote as the closing one too.
            let vend = vend.max(vstart);
            RawParam {
                key: &s[start..eq],
                value: Some(&s[vstart..vend]),
            }
        }
    };
    // The separator is one whitespace byte; the rest are skipped by the
    // caller.
    (param, (i + 1).min(b.len()))
}

fn skip_spaces(s: &str, mut pos: usize) -> usize {
    let b = s.as_bytes();
    while pos < b.len() && is_space(b[pos]) {
        pos += 1;
    }
    pos
}

/// Walks the parameters up to a bare `--`.
fn walk(cmdline: &str) -> Vec<RawParam<'_>> {
    let mut out = Vec::new();
    let mut pos = skip_spaces(cmdline, 0);
    while pos < cmdline.len() {
        let (param, next) = next_arg(cmdline, pos);
        if param.value.is_none() && param.key == "--" {
            return out;
        }
        // A lone `""` hands the kernel an empty name, which matches nothing.
        if !(param.key.is_empty() && param.value.is_none()) {
            out.push(param);
        }
        pos = skip_spaces(cmdline, next);
    }
    out
}

fn raw_parameters(cmdline: &str) -> Vec<RawParam<'_>> {
    walk(cmdline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.to_string(), v.map(str::to_string))
    }

    #[test]
    fn tokenises_like_next_arg() {
        type Case<'a> = (&'a str, &'a [(&'a str, Option<&'a str>)]);
        let cases: &[Case] = &[
            ("", &[]),
            ("   \t\n", &[]),
            ("quiet", &[("quiet", None)]),
            (
                "BOOT_IMAGE=/vmlinuz-6.1.0 root=UUID=abc ro quiet\n",
                &[
                    ("BOOT_IMAGE", Some("/vmlinuz-6.1.0")),
                    ("root", Some("UUID=abc")),
                    ("ro", None),
                    ("quiet", None),
                ],
            ),
            (
                "a=b\tc=d\ne",
                &[("a", Some("b")), ("c", Some("d")), ("e", None)],
            ),
            (
                "  lead  and   trail  ",
                &[("lead", None), ("and", None), ("trail", None)],
            ),
            ("key=\"a b\" next", &[("key", Some("a b")), ("next", None)]),
            ("\"key=a b\" next", &[("key", Some("a b")), ("next", None)]),
            ("\"quoted flag\"", &[("quoted flag", None)]),
            ("key=a\"b c\"d", &[("key", Some("a\"b c\"d"))]),
            ("key=\"\"", &[("key", Some(""))]),
            ("key=\"", &[("key", Some(""))]),
            ("key=", &[("key", Some(""))]),
            ("=x", &[("=x", None)]),
            ("=x=y", &[("=x", Some("y"))]),
            ("a==b", &[("a", Some("=b"))]),
            ("\"\" x", &[("x", None)]),
            // An unterminated quote swallows the rest of the line.
            ("a=\"b c d", &[("a", Some("b c d"))]),
            ("\"a b c", &[("a b c", None)]),
            (
                "dyndbg=\"file pci.c +p\" pci=realloc",
                &[("dyndbg", Some("file pci.c +p")), ("pci", Some("realloc"))],
            ),
            // Arguments after `--` belong to init.
            ("ro -- single pci=realloc", &[("ro", None)]),
            ("ro \"--\" single", &[("ro", None)]),
            ("ro --x -- y", &[("ro", None), ("--x", None)]),
            ("ro --=1 y", &[("ro", None), ("--", Some("1")), ("y", None)]),
            ("--", &[]),
            ("ü=ß ∑", &[("ü", Some("ß")), ("∑", None)]),
        ];
        for (line, want) in cases {
            let want: Vec<_> = want.iter().map(|(k, v)| p(k, *v)).collect();
            assert_eq!(parameters(line), want, "{line:?}");
        }
    }

    #[test]
    fn realloc_detection() {
        let cases = [
            ("", false),
            ("quiet", false),
            ("pci=realloc", true),
            ("pci=realloc=on", true),
            ("pci=realloc=off", false),
            ("pci=nocrs,realloc", true),
            ("pci=realloc,nocrs", true),
            ("pci=noaer,realloc=off", false),
            ("pci=realloc pci=realloc=off", false),
            ("pci=realloc=off pci=realloc", true),
            ("pci=realloc=off,realloc", true),
            ("pci=realloc,realloc=off", false),
            ("pci=realloc=maybe", false),
            ("pci=realloc=on pci=realloc=maybe", true),
            ("pci=reallocate", true),
            ("pci", false),
            ("pci=", false),
            ("xpci=realloc", false),
            ("pcie_aspm=off pci=noaer", false),
            ("\"pci=realloc\"", true),
            ("pci=\"nocrs,realloc\"", true),
            ("ro -- pci=realloc", false),
            ("pci=realloc -- pci=realloc=off", true),
            ("  pci=realloc\n", true),
        ];
        for (line, want) in cases {
            assert_eq!(realloc_active(line), want, "{line:?}");
        }
    }

    #[test]
    fn values_in_order() {
        let params = parameters("pci=a console=tty0 pci console=ttyS0,115200");
        assert_eq!(
            values(&params, "pci").collect::<Vec<_>>(),
            [Some("a"), None]
        );
        assert_eq!(
            values(&params, "console").collect::<Vec<_>>(),
            [Some("tty0"), Some("ttyS0,115200")]
        );
        assert_eq!(values(&params, "nope").count(), 0);
    }

    #[test]
    fn our_settings() {
        let got = gpu_preflight_settings(
            "ro gpu_preflight.expect=8 gpu_preflight.match=10de:* gpu-preflight.kmsg=1 \
             gpu_preflight.off gpu_preflight.=x gpu_preflightx.y=z \"gpu_preflight.note=a b\" \
             -- gpu_preflight.expect=2",
        );
        let want: Vec<(String, String)> = [
            ("expect", "8"),
            ("match", "10de:*"),
            ("kmsg", "1"),
            ("off", ""),
            ("note", "a b"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        // Repeated keys stay repeated, in order: the caller decides.
        assert_eq!(
            gpu_preflight_settings("gpu_preflight.match=a gpu_preflight.match=b").len(),
            2
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    /// A token the kernel would hand back unchanged: no spaces or quotes.
    fn word() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_.,:/+*-]{1,12}".prop_filter("bare -- ends the list", |w| w != "--")
    }

    fn param() -> impl Strategy<Value = (String, Option<String>)> {
        (
            word().prop_filter("no = in keys", |w| !w.contains('=')),
            proptest::option::of(prop_oneof![
                "[A-Za-z0-9_.,:/=+-]{0,12}",
                "[A-Za-z0-9 \t=,]{0,12}"
            ]),
        )
    }

    fn render((k, v): &(String, Option<String>), style: u8) -> String {
        match v {
            None if k.bytes().any(is_space) => format!("\"{k}\""),
            None => k.clone(),
            // Values with blanks must be quoted, in one of the two ways the
            // kernel accepts.
            Some(v) if style & 1 == 0 || v.bytes().any(is_space) || v.is_empty() => {
                if style & 2 == 0 {
                    format!("\"{k}={v}\"")
                } else {
                    format!("{k}=\"{v}\"")
                }
            }
            Some(v) => format!("{k}={v}"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_text_does_not_panic(s in proptest::collection::vec(any::<char>(), 0..120).prop_map(String::from_iter)) {
            let _ = parameters(&s);
            let _ = realloc_active(&s);
            let _ = gpu_preflight_settings(&s);
        }

        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let s = String::from_utf8_lossy(&bytes);
            let _ = parameters(&s);
            let _ = realloc_active(&s);
        }

        #[test]
        fn quote_and_space_soup_does_not_panic(s in "[a=\" \t-]{0,40}") {
            let _ = parameters(&s);
        }

        #[test]
        fn generated_lines_parse_back(
            params in proptest::collection::vec(param(), 0..10),
            styles in proptest::collection::vec(any::<u8>(), 10),
            seps in proptest::collection::vec(prop_oneof![Just(" "), Just("  "), Just("\t"), Just("\n")], 10),
            init in proptest::collection::vec(word(), 0..3),
        ) {
            let mut line = String::new();
            for (i, p) in params.iter().enumerate() {
                line.push_str(&render(p, styles[i]));
                line.push_str(seps[i]);
            }
            if !init.is_empty() {
                line.push_str("-- ");
                line.push_str(&init.join(" "));
            }
            prop_assert_eq!(parameters(&line), params);
        }

        #[test]
        fn last_realloc_option_wins(opts in proptest::collection::vec(0u8..4, 0..8)) {
            let words = ["realloc", "realloc=on", "realloc=off", "nocrs"];
            let line = opts
                .iter()
                .map(|o| format!("pci={}", words[*o as usize]))
                .collect::<Vec<_>>()
                .join(" ");
            let want = opts.iter().rev().find(|o| **o != 3).is_some_and(|o| *o != 2);
            prop_assert_eq!(realloc_active(&line), want);
            let comma = format!("pci=noaer,{}", opts.iter().map(|o| words[*o as usize]).collect::<Vec<_>>().join(","));
            prop_assert_eq!(realloc_active(&comma), want);
        }
    }
}
