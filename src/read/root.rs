//! The system root every reader joins its paths to.
//!
//! `cli` decides the root: `/` on a live system, a fixture directory in
//! tests, an image tree for `remediate --root`. Nothing below it spells a
//! literal `/sys` or `/proc`; it asks the root instead.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root(PathBuf);

impl Root {
    pub(crate) fn new(path: impl Into<PathBuf>) -> Self {
        Root(path.into())
    }

    /// The root directory itself.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Joins a path written as on the live system (`/sys/bus/pci/devices`
    /// or `sys/bus/pci/devices`) onto this root.
    pub(crate) fn join(&self, system_path: impl AsRef<Path>) -> PathBuf {
        let p = system_path.as_ref();
        let rel = p.strip_prefix("/").unwrap_or(p);
        self.0.join(rel)
    }

    pub(crate) fn is_live(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// The text of a file below the root, lossily; the error is the one
    /// phrasing every reader uses: `cannot read PATH: why`.
    pub(crate) fn read_text(&self, system_path: &str) -> Result<String, String> {
        let p = self.join(system_path);
        read_lossy(&p).map_err(|e| cannot_read(&p, &e))
    }

    /// A one-line file's trimmed content, `None` when missing or empty.
    pub(crate) fn read_trimmed(&self, system_path: &str) -> Option<String> {
        read_lossy(&self.join(system_path))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }
}

/// `cannot read PATH: why`: how every read failure is worded.
pub(crate) fn cannot_read(path: &Path, e: &std::io::Error) -> String {
    format!("cannot read {}: {e}", path.display())
}

/// Reads a file as text, invalid UTF-8 replaced: a log with stray bytes is
/// still a log, and a parser rejects a garbled attribute with its text in
/// the message. Not `fs::read`: its size probe costs one more system call
/// per file, and sysfs reports 4096 for every attribute anyway.
pub(crate) fn read_lossy(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(128);
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_absolute_and_relative_paths_below_the_root() {
        let r = Root::new("/tmp/fx");
        assert_eq!(r.join("/sys/bus/pci"), PathBuf::from("/tmp/fx/sys/bus/pci"));
        assert_eq!(r.join("proc/iomem"), PathBuf::from("/tmp/fx/proc/iomem"));
        assert!(Root::new("/").is_live());
        assert!(!r.is_live());
    }

    #[test]
    fn reads_text_lossily_and_words_errors_one_way() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("proc")).unwrap();
        std::fs::write(d.path().join("proc/cmdline"), b"ro \xff quiet\n").unwrap();
        let r = Root::new(d.path());
        assert_eq!(r.read_text("/proc/cmdline").unwrap(), "ro \u{fffd} quiet\n");
        assert_eq!(
            r.read_trimmed("proc/cmdline").as_deref(),
            Some("ro \u{fffd} quiet")
        );
        let e = r.read_text("proc/iomem").unwrap_err();
        assert!(
            e.starts_with("cannot read ") && e.contains("proc/iomem: No such file"),
            "{e}"
        );
        assert_eq!(r.read_trimmed("proc/iomem"), None);
    }
}
