//! NCCL's settings as `/etc/nccl.conf` (and `~/.nccl.conf`) and the
//! environment give them: `NAME=value` lines, `#` comments. NCCL reads the
//! file first and lets the environment win (NVIDIA/nccl `src/misc/param.cc`,
//! `initEnv`: a file value is set only where the variable is unset).

use crate::model::p2p::PathLevel;

/// The `NCCL_*` settings of one file, in order; malformed lines are
/// skipped (NCCL skips them too).
pub(crate) fn parse_conf(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.starts_with('#') {
                return None;
            }
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            (k.starts_with("NCCL_") && k.len() > 5 && !k.contains(char::is_whitespace))
                .then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// What `NCCL_P2P_LEVEL` / `NCCL_P2P_DISABLE` make of the P2P level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LevelSetting {
    /// Neither is set: NCCL's own default decides.
    Default,
    /// P2P over PCI up to this level.
    Level(PathLevel),
    /// P2P over PCI off (`NCCL_P2P_DISABLE=1`, or a level closer than any
    /// PCI path: `LOC`, `NVL`, `NVB`, `C2C`, old-style `0`).
    Off,
    /// `NCCL_P2P_LEVEL` holds a word NCCL does not know (its words are
    /// matched exactly, upper case): NCCL ignores it and its default
    /// decides.
    Ignored,
}

/// C's `strtol(s, NULL, 0)` as far as NCCL's `== 1` test needs it: leading
/// white space, a sign, then hex (`0x`), octal (`0`) or decimal digits,
/// up to the first that is not one; 0 when none.
fn strtol0(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') {
        (8, s)
    } else {
        (10, s)
    };
    let mut v: i64 = 0;
    for d in digits.chars().map_while(|c| c.to_digit(radix)) {
        v = v
            .saturating_mul(i64::from(radix))
            .saturating_add(i64::from(d));
    }
    if neg {
        -v
    } else {
        v
    }
}

/// As NCCL reads them (NVIDIA/nccl `src/graph/paths.cc`, `ncclGetLevel`):
/// `NCCL_P2P_DISABLE` whose `strtol` is 1 turns P2P off and wins; else
/// `NCCL_P2P_LEVEL` is one of the path names, compared exactly (`LOC`,
/// `NVL`, `NVB`, `C2C`, `PIX`, `PXB`, `P2C`, `PXN`, `PHB`, `SYS`; the
/// ones between `PXB` and `PHB` allow what `PXB` does over PCI), or an
/// old-style number when it starts with a digit (0 `LOC`, 1 `PIX`, 2
/// `PXB`, 3 `PHB`, 4 and up `SYS`); anything else is ignored.
pub(crate) fn level_setting(disable: Option<&str>, level: Option<&str>) -> LevelSetting {
    if disable.is_some_and(|d| strtol0(d) == 1) {
        return LevelSetting::Off;
    }
    let Some(w) = level.filter(|w| !w.is_empty()) else {
        return LevelSetting::Default;
    };
    match w {
        "LOC" | "NVL" | "NVB" | "C2C" => LevelSetting::Off,
        "PIX" => LevelSetting::Level(PathLevel::Pix),
        "PXB" | "P2C" | "PXN" => LevelSetting::Level(PathLevel::Pxb),
        "PHB" => LevelSetting::Level(PathLevel::Phb),
        "SYS" => LevelSetting::Level(PathLevel::Sys),
        _ if w.starts_with(|c: char| c.is_ascii_digit()) => match strtol0(w) {
            0 => LevelSetting::Off,
            1 => LevelSetting::Level(PathLevel::Pix),
            2 => LevelSetting::Level(PathLevel::Pxb),
            3 => LevelSetting::Level(PathLevel::Phb),
            _ => LevelSetting::Level(PathLevel::Sys),
        },
        _ => LevelSetting::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_file_keeps_nccl_settings_only() {
        let t = "# tuned\nNCCL_P2P_LEVEL=PHB\n  NCCL_DEBUG = INFO \nFOO=1\nnot a line\nNCCL_=x\n";
        assert_eq!(
            parse_conf(t),
            [
                ("NCCL_P2P_LEVEL".to_string(), "PHB".to_string()),
                ("NCCL_DEBUG".to_string(), "INFO".to_string())
            ]
        );
    }

    #[test]
    fn levels_as_nccl_reads_them() {
        let cases = [
            (None, None, LevelSetting::Default),
            // NCCL compares the words exactly: lower case is ignored.
            (None, Some("phb"), LevelSetting::Ignored),
            (None, Some(" PHB"), LevelSetting::Ignored),
            (None, Some("PHB"), LevelSetting::Level(PathLevel::Phb)),
            (None, Some("SYS"), LevelSetting::Level(PathLevel::Sys)),
            (None, Some("PXN"), LevelSetting::Level(PathLevel::Pxb)),
            (None, Some("NVL"), LevelSetting::Off),
            (None, Some("C2C"), LevelSetting::Off),
            (Some("1"), Some("SYS"), LevelSetting::Off),
            (Some("0x1"), None, LevelSetting::Off),
            (Some(" 1"), None, LevelSetting::Off),
            (Some("0"), Some("PXB"), LevelSetting::Level(PathLevel::Pxb)),
            // Old-style numbers.
            (None, Some("0"), LevelSetting::Off),
            (None, Some("3"), LevelSetting::Level(PathLevel::Phb)),
            (None, Some("5"), LevelSetting::Level(PathLevel::Sys)),
            (
                None,
                Some("99999999999999999999"),
                LevelSetting::Level(PathLevel::Sys),
            ),
            // Anything but 1 leaves P2P on.
            (Some("yes"), None, LevelSetting::Default),
            (Some("2"), Some("PIX"), LevelSetting::Level(PathLevel::Pix)),
        ];
        for (d, l, want) in cases {
            assert_eq!(level_setting(d, l), want, "{d:?} {l:?}");
        }
    }

    proptest! {
        #[test]
        fn any_text_gives_nccl_keys_only(t in ".{0,200}") {
            for (k, _) in parse_conf(&t) {
                prop_assert!(k.starts_with("NCCL_"));
            }
        }
    }
}
