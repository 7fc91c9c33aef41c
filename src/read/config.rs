//! Where the settings come from: the configuration file (copied into the
//! initramfs when the image is built) and the root's `/proc/cmdline`. The
//! rules for both are in `parse::settings`.

use crate::parse::settings::Settings;
use crate::read::root::{read_lossy, Root};
use std::path::Path;

/// Where the configuration lives, on the system and in the initramfs.
pub(crate) const CONFIG_PATH: &str = "/etc/gpu-preflight.conf";

/// Reads the configuration file (`config`, or `/etc/gpu-preflight.conf`
/// under `root`) and `<root>/proc/cmdline`. Problems with either become
/// warnings; a missing default configuration file is normal.
pub(crate) fn load(root: &Root, config: Option<&Path>) -> (Settings, Vec<String>) {
    let mut warnings = Vec::new();
    let config_path = match config {
        Some(p) => p.to_path_buf(),
        None => root.join(CONFIG_PATH),
    };
    let file_text = match read_lossy(&config_path) {
        Ok(text) => Some(text),
        // Without a file the defaults apply; only a file the operator
        // named explicitly is worth a warning when it is missing.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && config.is_none() => None,
        Err(e) => {
            warnings.push(format!(
                "cannot read configuration {}: {e}; using defaults",
                config_path.display()
            ));
            None
        }
    };
    let cmdline_path = root.join("/proc/cmdline");
    let cmdline = match read_lossy(&cmdline_path) {
        Ok(text) => text,
        // A fixture root need not have one; a live system always does.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !root.is_live() => String::new(),
        Err(e) => {
            warnings.push(format!(
                "cannot read {}: {e}; kernel command line settings ignored",
                cmdline_path.display()
            ));
            String::new()
        }
    };
    let shown = config_path.display().to_string();
    let (settings, mut w) = Settings::parse(file_text.as_deref(), &shown, &cmdline);
    warnings.append(&mut w);
    (settings, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::settings::Mode;

    #[test]
    fn load_reads_the_file_and_cmdline_under_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        // Nothing there: defaults, no warning (a fixture root need not have /proc).
        let (s, w) = load(&root, None);
        assert_eq!(s, Settings::default());
        assert!(w.is_empty(), "{w:?}");

        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::write(
            d.path().join("etc/gpu-preflight.conf"),
            "mode=strict\nexpect=8\n",
        )
        .unwrap();
        std::fs::write(d.path().join("proc/cmdline"), "ro gpu_preflight.expect=2\n").unwrap();
        let (s, w) = load(&root, None);
        assert_eq!((s.mode, s.expect), (Mode::Strict, Some(2)));
        assert!(w.is_empty(), "{w:?}");

        // An explicitly named file that is missing is worth a warning.
        let (s, w) = load(&root, Some(&d.path().join("nope.conf")));
        assert_eq!((s.mode, s.expect), (Mode::Warn, Some(2)));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("nope.conf"), "{w:?}");
    }
}
