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
    /// PCI path: `LOC`, `NVL`).
    Off,
    /// A value NCCL reads some other way (a number, a typo).
    Unreadable,
}

/// `NCCL_P2P_DISABLE` wins over `NCCL_P2P_LEVEL` (NCCL's `ncclGetLevel`
/// reads the disable variable first).
pub(crate) fn level_setting(disable: Option<&str>, level: Option<&str>) -> LevelSetting {
    if let Some(d) = disable {
        match d.trim() {
            "1" => return LevelSetting::Off,
            "0" | "" => {}
            _ => return LevelSetting::Unreadable,
        }
    }
    match level.map(str::trim) {
        None | Some("") => LevelSetting::Default,
        Some(w) => match PathLevel::parse(w) {
            Some(l) => LevelSetting::Level(l),
            None if matches!(w.to_ascii_uppercase().as_str(), "LOC" | "NVL" | "NVB") => {
                LevelSetting::Off
            }
            None => LevelSetting::Unreadable,
        },
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
            (None, Some("phb"), LevelSetting::Level(PathLevel::Phb)),
            (None, Some("SYS"), LevelSetting::Level(PathLevel::Sys)),
            (None, Some("NVL"), LevelSetting::Off),
            (Some("1"), Some("SYS"), LevelSetting::Off),
            (Some("0"), Some("PXB"), LevelSetting::Level(PathLevel::Pxb)),
            (None, Some("3"), LevelSetting::Unreadable),
            (Some("yes"), None, LevelSetting::Unreadable),
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
