//! Settings for the boot step and the running system's publisher: the
//! rules. `read::config` finds the file and the command line.
//!
//! Two sources, read in this order, a later valid value replacing an earlier
//! one:
//!
//! 1. `/etc/gpu-preflight.conf` (copied into the initramfs when the image is
//!    built): one `key=value` per line, blank lines and lines starting with
//!    `#` ignored, whitespace around key and value ignored. Keys may carry the
//!    `gpu_preflight.` prefix of the command line or not.
//! 2. `gpu_preflight.KEY=VALUE` on the kernel command line, so that one boot
//!    can be changed from the boot loader without rebuilding the image.
//!
//! A malformed setting becomes a warning (collected for the log) and is
//! ignored: the boot step must never fail because of a typo. `timeout` is
//! the boot step's deadline, which its parent process keeps
//! (`commands::boot`, `deadline`); `tests/data/timeout-cases.txt` is its
//! case table.

use crate::model::select::Selector;
use std::path::{Path, PathBuf};

/// The hook's deadline when none is configured: long enough for a scan of a
/// large guest under TCG, short enough that nobody waits on a hung sysfs.
pub(crate) const DEFAULT_TIMEOUT_TENTHS: u32 = 20;
/// A deadline longer than a minute would defeat its purpose.
pub(crate) const MAX_TIMEOUT_TENTHS: u32 = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Report, never stop the boot (default).
    Warn,
    /// Stop the boot when the check finds a problem.
    Strict,
    /// Do not run the check at boot.
    Off,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// How many GPUs must be present (`expect`).
    pub expect: Option<usize>,
    /// GPU selectors replacing the default selection (`match`, comma list).
    pub selectors: Vec<Selector>,
    pub mode: Mode,
    /// Whether the running system may run `gpu-preflight remediate` after a
    /// boot whose report calls for it (`remediate=0|1`).
    pub remediate: bool,
    /// The hook's deadline, in tenths of a second (`timeout`, seconds).
    pub timeout_tenths: u32,
    /// node_exporter textfile collector directory (`textfile_dir`, file only:
    /// a path on the kernel command line would be an odd thing to trust).
    pub textfile_dir: Option<PathBuf>,
    /// A refused peer-to-peer gate fails the check (`expect_p2p=0|1`).
    pub expect_p2p: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            expect: None,
            selectors: Vec::new(),
            mode: Mode::Warn,
            remediate: false,
            timeout_tenths: DEFAULT_TIMEOUT_TENTHS,
            textfile_dir: None,
            expect_p2p: false,
        }
    }
}

/// Where a setting came from, for warnings that say where to look.
#[derive(Debug, Clone, Copy)]
enum Origin<'a> {
    File { path: &'a str, line: usize },
    Cmdline,
}

impl Origin<'_> {
    fn describe(&self, key: &str, value: &str) -> String {
        match self {
            Origin::File { path, line } => format!("{path} line {line}: {key}={value}"),
            Origin::Cmdline => format!("kernel command line: gpu_preflight.{key}={value}"),
        }
    }
}

impl Settings {
    /// The file's text (if any), the name to use for it in warnings, and
    /// the kernel command line.
    pub(crate) fn parse(
        file: Option<&str>,
        file_name: &str,
        cmdline: &str,
    ) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        if let Some(text) = file {
            for (i, raw) in text.lines().enumerate() {
                let line = raw.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let origin = Origin::File {
                    path: file_name,
                    line: i + 1,
                };
                let Some((k, v)) = line.split_once('=') else {
                    warnings.push(format!(
                        "{file_name} line {}: {line:?} is not key=value; ignored",
                        i + 1
                    ));
                    continue;
                };
                let k = k.trim();
                let k = k.strip_prefix("gpu_preflight.").unwrap_or(k);
                if let Err(why) = s.set(k, v.trim(), origin) {
                    warnings.push(format!("{}: {why}; ignored", origin.describe(k, v.trim())));
                }
            }
        }
        for (k, v) in crate::parse::cmdline::gpu_preflight_settings(cmdline) {
            let origin = Origin::Cmdline;
            if let Err(why) = s.set(&k, &v, origin) {
                warnings.push(format!("{}: {why}; ignored", origin.describe(&k, &v)));
            }
        }
        (s, warnings)
    }

    /// Applies one setting, or says why it is not valid (leaving `self` as it
    /// was, so an earlier valid value stays in force).
    fn set(&mut self, key: &str, value: &str, origin: Origin) -> Result<(), String> {
        match key {
            "expect" => {
                self.expect = Some(parse_expect(value)?);
            }
            "match" => {
                self.selectors = parse_match(value)?;
            }
            "mode" => {
                self.mode = parse_mode(value)?;
            }
            "remediate" => {
                self.remediate = parse_bool(value)?;
            }
            "timeout" => {
                self.timeout_tenths = parse_timeout(value)?;
            }
            "expect_p2p" => {
                self.expect_p2p = parse_bool(value)?;
            }
            "textfile_dir" => {
                if matches!(origin, Origin::Cmdline) {
                    return Err("textfile_dir can only be set in the configuration file".into());
                }
                let p = Path::new(value);
                if !p.is_absolute() {
                    return Err("not an absolute path".into());
                }
                self.textfile_dir = Some(p.to_path_buf());
            }
            _ => {
                return Err(format!(
                    "unknown setting {key:?} (known: expect, match, mode, remediate, timeout, textfile_dir, expect_p2p)"
                ))
            }
        }
        Ok(())
    }
}

fn parse_expect(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive whole number of GPUs".into()),
    }
}

/// A comma list of selectors. One bad element invalidates the whole list:
/// checking a subset of what the operator meant would report the wrong GPUs.
fn parse_match(v: &str) -> Result<Vec<Selector>, String> {
    let mut out = Vec::new();
    for part in v.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err("empty selector in the list".into());
        }
        out.push(part.parse::<Selector>()?);
    }
    Ok(out)
}

fn parse_mode(v: &str) -> Result<Mode, String> {
    match v.to_ascii_lowercase().as_str() {
        "warn" => Ok(Mode::Warn),
        "strict" => Ok(Mode::Strict),
        "off" => Ok(Mode::Off),
        _ => Err("expected warn, strict or off".into()),
    }
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Ok(true),
        "0" | "no" | "false" | "off" => Ok(false),
        _ => Err("expected 0 or 1".into()),
    }
}

/// Seconds, whole or with a decimal fraction, kept to tenths: `1.25` is
/// 1.2 s, digits past the first decimal dropped (as the hooks' shell
/// arithmetic did when they kept the deadline; the case table holds it).
pub(crate) fn parse_timeout(v: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "expected seconds between 0.1 and {}",
            MAX_TIMEOUT_TENTHS / 10
        )
    };
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !all_digits(whole)
        || !all_digits(frac)
        || (v.contains('.') && frac.is_empty())
    {
        return Err(bad());
    }
    // Bounded before multiplying so a long digit string cannot overflow.
    if whole.len() > 4 {
        return Err(bad());
    }
    let tenths = whole.parse::<u32>().map_err(|_| bad())? * 10
        + frac
            .bytes()
            .next()
            .map(|b| u32::from(b - b'0'))
            .unwrap_or(0);
    if tenths == 0 || tenths > MAX_TIMEOUT_TENTHS {
        return Err(bad());
    }
    Ok(tenths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> Selector {
        s.parse().unwrap()
    }

    #[test]
    fn defaults_without_any_source() {
        let (s, w) = Settings::parse(None, "conf", "");
        assert_eq!(s, Settings::default());
        assert_eq!(s.mode, Mode::Warn);
        assert_eq!(s.timeout_tenths, 20);
        assert!(w.is_empty());
    }

    #[test]
    fn file_values_table() {
        // (file text, check on the result, warnings expected)
        type Check = fn(&Settings) -> bool;
        let cases: &[(&str, Check, usize)] = &[
            ("expect=8", |s| s.expect == Some(8), 0),
            ("expect_p2p=1", |s| s.expect_p2p, 0),
            ("expect_p2p=maybe", |s| !s.expect_p2p, 1),
            ("  expect = 8  ", |s| s.expect == Some(8), 0),
            ("gpu_preflight.expect=8", |s| s.expect == Some(8), 0),
            ("expect=0", |s| s.expect.is_none(), 1),
            ("expect=eight", |s| s.expect.is_none(), 1),
            ("expect=-1", |s| s.expect.is_none(), 1),
            ("match=10de:*,1af4:1110", |s| s.selectors.len() == 2, 0),
            (
                "match=class:0302",
                |s| s.selectors == vec![Selector::Class { base: 3, sub: 2 }],
                0,
            ),
            ("match=10de:*,,1af4:1110", |s| s.selectors.is_empty(), 1),
            ("match=10de:*,nonsense", |s| s.selectors.is_empty(), 1),
            ("match=", |s| s.selectors.is_empty(), 1),
            ("mode=strict", |s| s.mode == Mode::Strict, 0),
            ("mode=OFF", |s| s.mode == Mode::Off, 0),
            ("mode=loud", |s| s.mode == Mode::Warn, 1),
            ("remediate=1", |s| s.remediate, 0),
            ("remediate=0", |s| !s.remediate, 0),
            ("remediate=maybe", |s| !s.remediate, 1),
            ("timeout=5", |s| s.timeout_tenths == 50, 0),
            ("timeout=0.5", |s| s.timeout_tenths == 5, 0),
            ("timeout=1.25", |s| s.timeout_tenths == 12, 0),
            ("timeout=0", |s| s.timeout_tenths == 20, 1),
            ("timeout=61", |s| s.timeout_tenths == 20, 1),
            (
                "timeout=99999999999999999999",
                |s| s.timeout_tenths == 20,
                1,
            ),
            ("timeout=2.", |s| s.timeout_tenths == 20, 1),
            ("timeout=.5", |s| s.timeout_tenths == 20, 1),
            ("timeout=2s", |s| s.timeout_tenths == 20, 1),
            ("timeout=2 # seconds", |s| s.timeout_tenths == 20, 1),
            (
                "textfile_dir=/var/lib/prometheus/node-exporter",
                |s| {
                    s.textfile_dir.as_deref()
                        == Some(Path::new("/var/lib/prometheus/node-exporter"))
                },
                0,
            ),
            ("textfile_dir=relative/dir", |s| s.textfile_dir.is_none(), 1),
            (
                "# a comment\n\n   # indented comment\n",
                |s| *s == Settings::default(),
                0,
            ),
            ("colour=blue", |s| *s == Settings::default(), 1),
            ("just words", |s| *s == Settings::default(), 1),
            (
                "\u{fffd}\u{fffd}=\u{fffd}",
                |s| *s == Settings::default(),
                1,
            ),
            // A bad later line leaves the earlier valid value in force.
            ("mode=strict\nmode=bogus", |s| s.mode == Mode::Strict, 1),
            ("mode=strict\nmode=off", |s| s.mode == Mode::Off, 0),
        ];
        for (text, check, nwarn) in cases {
            let (s, w) = Settings::parse(Some(text), "/etc/gpu-preflight.conf", "");
            assert!(check(&s), "{text:?} gave {s:?}");
            assert_eq!(w.len(), *nwarn, "{text:?} warnings: {w:?}");
        }
    }

    #[test]
    fn warnings_name_the_file_line_and_value() {
        let (_, w) = Settings::parse(Some("expect=8\nmode=loud\n"), "/etc/gpu-preflight.conf", "");
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("/etc/gpu-preflight.conf line 2: mode=loud:"),
            "{}",
            w[0]
        );
        assert!(w[0].ends_with("ignored"));
    }

    #[test]
    fn command_line_table() {
        type Check = fn(&Settings) -> bool;
        let file = "expect=8\nmatch=1af4:1110\nmode=strict\nremediate=1\ntimeout=3\n";
        let cases: &[(&str, Check, usize)] = &[
            // The command line wins over the file.
            ("gpu_preflight.mode=off", |s| s.mode == Mode::Off, 0),
            ("gpu_preflight.expect_p2p=1", |s| s.expect_p2p, 0),
            (
                "ro quiet gpu_preflight.expect=4",
                |s| s.expect == Some(4),
                0,
            ),
            (
                "gpu_preflight.match=10de:*,1002:*",
                |s| s.selectors == vec![Selector::Vendor(0x10de), Selector::Vendor(0x1002)],
                0,
            ),
            ("gpu_preflight.remediate=0", |s| !s.remediate, 0),
            ("gpu_preflight.timeout=0.3", |s| s.timeout_tenths == 3, 0),
            // A malformed override leaves the file's value.
            ("gpu_preflight.mode=panic", |s| s.mode == Mode::Strict, 1),
            ("gpu_preflight.expect=lots", |s| s.expect == Some(8), 1),
            (
                "gpu_preflight.timeout=forever",
                |s| s.timeout_tenths == 30,
                1,
            ),
            // File-only and unknown keys.
            (
                "gpu_preflight.textfile_dir=/tmp",
                |s| s.textfile_dir.is_none(),
                1,
            ),
            ("gpu_preflight.colour=blue", |s| s.mode == Mode::Strict, 1),
            // Repeated keys: the last one wins, as for most kernel parameters.
            (
                "gpu_preflight.mode=off gpu_preflight.mode=warn",
                |s| s.mode == Mode::Warn,
                0,
            ),
            // Someone else's namespace is not ours.
            (
                "xgpu_preflight.mode=off mode=off",
                |s| s.mode == Mode::Strict,
                0,
            ),
            // Arguments after `--` belong to init.
            (
                "ro -- gpu_preflight.mode=off",
                |s| s.mode == Mode::Strict,
                0,
            ),
        ];
        for (cmdline, check, nwarn) in cases {
            let (s, w) = Settings::parse(Some(file), "conf", cmdline);
            assert!(check(&s), "{cmdline:?} gave {s:?}");
            assert_eq!(w.len(), *nwarn, "{cmdline:?} warnings: {w:?}");
        }
        let (s, _) = Settings::parse(Some(file), "conf", "");
        assert_eq!(s.selectors, vec![sel("1af4:1110")]);
    }

    /// The deadline's rules, from their case table.
    #[test]
    fn timeout_case_table() {
        let table = include_str!("../../tests/data/timeout-cases.txt");
        let unescape = |s: &str| s.replace("\\n", "\n").replace("\\t", "\t");
        let mut n = 0;
        for (i, line) in table.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 3, "line {}: {line:?}", i + 1);
            let config = (f[0] != "-").then(|| unescape(f[0]));
            let cmdline = if f[1] == "-" { "" } else { f[1] };
            let want: u32 = f[2].parse().unwrap();
            let (s, _) = Settings::parse(config.as_deref(), "conf", cmdline);
            assert_eq!(s.timeout_tenths, want, "line {}: {line:?}", i + 1);
            n += 1;
        }
        assert!(n >= 100, "{n} cases");
    }
}
