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

    /// At most `limit` bytes of a file below the root (config space, an
    /// ACPI table's header), or `cannot read PATH: why`.
    pub(crate) fn read_bytes(&self, system_path: &str, limit: u64) -> Result<Vec<u8>, String> {
        let p = self.join(system_path);
        read_bytes(&p, limit).map_err(|e| cannot_read(&p, &e))
    }

    /// Whether a path below the root exists (a link is followed).
    pub(crate) fn exists(&self, system_path: &str) -> bool {
        let p = self.join(system_path);
        note(&p);
        p.exists()
    }

    /// Whether a path below the root is there at all, as a link or
    /// otherwise (a link is not followed).
    pub(crate) fn is_there(&self, system_path: &str) -> bool {
        let p = self.join(system_path);
        note(&p);
        std::fs::symlink_metadata(&p).is_ok()
    }

    /// Where a link below the root points, as written.
    pub(crate) fn read_link(&self, system_path: &str) -> Option<PathBuf> {
        let p = self.join(system_path);
        note(&p);
        std::fs::read_link(&p).ok()
    }

    /// The names in a directory below the root, sorted; `None` when it
    /// cannot be listed.
    pub(crate) fn list(&self, system_path: &str) -> Option<Vec<String>> {
        let p = self.join(system_path);
        note(&p);
        let mut names: Vec<String> = std::fs::read_dir(&p)
            .ok()?
            .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Some(names)
    }
}

/// A file named on the command line (a VM configuration, a saved log), not
/// joined to the root: its text, or `cannot read PATH: why`.
pub(crate) fn read_file(path: &Path) -> Result<String, String> {
    read_lossy(path).map_err(|e| cannot_read(path, &e))
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
    note(path);
    let mut bytes = Vec::with_capacity(128);
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The most `read_regular` reads of a file.
const READ_REGULAR_LIMIT: u64 = 64 << 10;

/// Reads a regular file as text (lossily, as `read_lossy`), refusing
/// anything else: opened without blocking (a FIFO or a device at that path
/// would otherwise hold the open, or the read, for good) and checked with
/// fstat before the first read. For what a process that must not block
/// reads: the boot step's parent reads its settings so.
pub(crate) fn read_regular(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    note(path);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    // A settings file is small; a huge or sparse one is not read whole
    // by the process that keeps the deadline.
    let mut bytes = Vec::with_capacity(512);
    f.take(READ_REGULAR_LIMIT).read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// At most `limit` bytes of a file. Config space past the first 64 bytes
/// is readable by root only, and sysfs gives what it may.
fn read_bytes(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    note(path);
    let mut buf = Vec::with_capacity(limit.min(4096) as usize);
    std::fs::File::open(path)?
        .take(limit)
        .read_to_end(&mut buf)?;
    Ok(buf)
}

/// Every file access below goes through here: a test can count them.
#[inline]
fn note(_path: &Path) {
    #[cfg(test)]
    counting::note(_path);
}

/// A test's count of what a piece of code reads: `record` runs a closure
/// and returns every path it touched through this module, in order.
#[cfg(test)]
pub(crate) mod counting {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    thread_local! {
        static SEEN: RefCell<Option<Vec<PathBuf>>> = const { RefCell::new(None) };
    }

    pub(super) fn note(path: &Path) {
        SEEN.with(|s| {
            if let Some(v) = s.borrow_mut().as_mut() {
                v.push(path.to_path_buf());
            }
        });
    }

    /// Runs `f`, recording the paths read on this thread meanwhile.
    pub(crate) fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<PathBuf>) {
        let outer = SEEN.with(|s| s.borrow_mut().replace(Vec::new()));
        let out = f();
        let seen = SEEN
            .with(|s| std::mem::replace(&mut *s.borrow_mut(), outer))
            .unwrap_or_default();
        // A recording around this one sees these reads too.
        SEEN.with(|s| {
            if let Some(o) = s.borrow_mut().as_mut() {
                o.extend(seen.iter().cloned());
            }
        });
        (out, seen)
    }
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

    #[test]
    fn bytes_up_to_a_limit_links_lists_and_a_count_of_reads() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/dev")).unwrap();
        std::fs::write(d.path().join("sys/dev/config"), [7u8; 300]).unwrap();
        std::os::unix::fs::symlink("../../x/y", d.path().join("sys/link")).unwrap();
        let r = Root::new(d.path());
        let ((), seen) = counting::record(|| {
            assert_eq!(r.read_bytes("sys/dev/config", 64).unwrap().len(), 64);
            assert_eq!(r.read_bytes("/sys/dev/config", 4096).unwrap().len(), 300);
            assert!(r
                .read_bytes("sys/dev/none", 64)
                .unwrap_err()
                .starts_with("cannot read "));
            assert_eq!(r.list("sys").unwrap(), ["dev", "link"]);
            assert_eq!(r.list("sys/none"), None);
            assert_eq!(r.read_link("sys/link"), Some(PathBuf::from("../../x/y")));
            // A dangling link is there, though it leads nowhere.
            assert!(r.is_there("sys/link") && !r.exists("sys/link"));
        });
        assert_eq!(seen.len(), 8, "{seen:?}");
        assert_eq!(seen[0], d.path().join("sys/dev/config"));
        // Nothing is recorded outside `record`.
        let ((), none) = counting::record(|| {});
        assert!(none.is_empty());
    }
}
