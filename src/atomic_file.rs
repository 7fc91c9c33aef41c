//! Replacing a file so that a reader (GRUB's scripts, node_exporter, the
//! next boot) sees either the old content or the new one, never a prefix.
//!
//! The new content goes to a temporary file in the same directory (rename is
//! only atomic within one filesystem), is flushed, renamed over the target,
//! and the directory is flushed so the rename survives a power cut. On any
//! error the temporary file is removed and the target is untouched: on a
//! full or read-only filesystem nothing is left behind.

use nix::errno::Errno;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Writes `contents` to `path` atomically with permissions `mode`.
pub(crate) fn write(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_with(path, contents, mode, |f, c| f.write_all(c))
}

/// `write`, with the step that puts the bytes into the temporary file
/// supplied by the caller: tests use it to fail the way a full disk does,
/// halfway through.
pub(crate) fn write_with(
    path: &Path,
    contents: &[u8],
    mode: u32,
    put: impl FnOnce(&mut File, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent(path);
    let tmp = temp_path(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    let written = put(&mut f, contents).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(&dir)
}

/// Removes `path` and flushes its directory.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    fs::remove_file(path)?;
    sync_dir(&parent(path))
}

/// Flushes a directory's entries. Some filesystems refuse fsync on a
/// directory (EINVAL); there is nothing more to do for them.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.raw_os_error() == Some(Errno::EINVAL as i32) => Ok(()),
        r => r,
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A hidden name that no glob of the target's kind matches: GRUB sources
/// `/etc/default/grub.d/*.cfg`, node_exporter reads `*.prom`.
fn temp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".tmp.{}", std::process::id()));
    parent(path).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_content_with_the_given_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.cfg");
        write(&p, b"one\n", 0o644).unwrap();
        write(&p, b"two\n", 0o600).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two\n");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(names(d.path()), vec!["a.cfg"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.cfg");
        fs::write(&p, b"old\n").unwrap();
        for errno in [Errno::ENOSPC, Errno::EROFS, Errno::EIO].map(|e| e as i32) {
            let err = write_with(&p, b"new content\n", 0o644, |f, c| {
                // Half the bytes land, then the filesystem gives up.
                f.write_all(&c[..c.len() / 2])?;
                Err(io::Error::from_raw_os_error(errno))
            })
            .unwrap_err();
            assert_eq!(err.raw_os_error(), Some(errno));
            assert_eq!(fs::read(&p).unwrap(), b"old\n");
            assert_eq!(names(d.path()), vec!["a.cfg"]);
        }
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_creation() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/a.cfg");
        assert!(write(&p, b"x", 0o644).is_err());
        assert!(!d.path().join("no").exists());
    }

    #[test]
    fn temp_names_are_hidden_and_do_not_match_the_target_glob() {
        let t = temp_path(Path::new("/etc/default/grub.d/99-gpu-preflight.cfg"));
        let n = t.file_name().unwrap().to_string_lossy().into_owned();
        assert!(n.starts_with(".99-gpu-preflight.cfg.tmp."));
        assert!(!n.ends_with(".cfg"));
        assert_eq!(t.parent().unwrap(), Path::new("/etc/default/grub.d"));
    }
}
