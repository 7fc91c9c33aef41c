//! The system root every reader joins its paths to.
//!
//! `main` decides the root: `/` on a live system, a fixture directory in
//! tests, an image tree for `remediate --root`. Nothing below `main` spells
//! a literal `/sys` or `/proc`; it asks the root instead.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root(PathBuf);

impl Root {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Root(path.into())
    }

    /// The root directory itself.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Joins a path written as on the live system (`/sys/bus/pci/devices`
    /// or `sys/bus/pci/devices`) onto this root.
    pub fn join(&self, system_path: impl AsRef<Path>) -> PathBuf {
        let p = system_path.as_ref();
        let rel = p.strip_prefix("/").unwrap_or(p);
        self.0.join(rel)
    }

    pub fn is_live(&self) -> bool {
        self.0 == Path::new("/")
    }
}

/// Reads a file as text, invalid UTF-8 replaced: a log with stray bytes is
/// still a log, and a parser rejects a garbled attribute with its text in
/// the message. Not `fs::read`: its size probe costs one more system call
/// per file, and sysfs reports 4096 for every attribute anyway.
pub fn read_lossy(path: &Path) -> std::io::Result<String> {
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
}
