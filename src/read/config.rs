//! Where the settings come from: the configuration file (copied into the
//! initramfs when the image is built) and the root's `/proc/cmdline`. The
//! rules for both are in `parse::settings`.

use crate::parse::settings::Settings;
use crate::read::root::{read_regular, Root};
use std::path::Path;

/// Where the configuration lives, on the system and in the initramfs.
pub(crate) const CONFIG_PATH: &str = "/etc/gpu-preflight.conf";

/// Reads the configuration file (`config`, or `/etc/gpu-preflight.conf`
/// under `root`) and `<root>/proc/cmdline`. Problems with either become
/// warnings; a missing default configuration file is normal. Only regular
/// files are read, without blocking (`read_regular`): the boot step's
/// parent, which keeps the deadline, reads these two and nothing else.
pub(crate) fn load(root: &Root, config: Option<&Path>) -> (Settings, Vec<String>) {
    let (settings, warnings, _) = load_with_cmdline(root, config);
    (settings, warnings)
}

/// `load`, and the command line's text as read (`None` when it could not
/// be), for a caller that needs it again and must not read it twice.
pub(crate) fn load_with_cmdline(
    root: &Root,
    config: Option<&Path>,
) -> (Settings, Vec<String>, Option<String>) {
    let mut warnings = Vec::new();
    let config_path = match config {
        Some(p) => p.to_path_buf(),
        None => root.join(CONFIG_PATH),
    };
    let file_text = match read_regular(&config_path) {
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
    let cmdline = match read_regular(&cmdline_path) {
        Ok(text) => Some(text),
        // A fixture root need not have one; a live system always does.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !root.is_live() => None,
        Err(e) => {
            warnings.push(format!(
                "cannot read {}: {e}; kernel command line settings ignored",
                cmdline_path.display()
            ));
            None
        }
    };
    let shown = config_path.display().to_string();
    let (settings, mut w) = Settings::parse(
        file_text.as_deref(),
        &shown,
        cmdline.as_deref().unwrap_or(""),
    );
    warnings.append(&mut w);
    (settings, warnings, cmdline)
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

    #[test]
    fn a_fifo_or_a_directory_in_place_of_either_file_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        // Nobody ever writes to these: a blocking open would wait for good.
        for p in ["etc/gpu-preflight.conf", "proc/cmdline"] {
            nix::unistd::mkfifo(&d.path().join(p), nix::sys::stat::Mode::S_IRWXU).unwrap();
        }
        let (s, w) = load(&Root::new(d.path()), None);
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("gpu-preflight.conf: not a regular file; using defaults"),
            "{w:?}"
        );
        assert!(
            w[1].contains("proc/cmdline: not a regular file; kernel command line"),
            "{w:?}"
        );
        let (_, w) = load(&Root::new(d.path()), Some(d.path().join("etc").as_path()));
        assert!(w[0].contains("etc: not a regular file"), "{w:?}");
    }
}
