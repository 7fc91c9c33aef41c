//! The kernel log: a saved file, the syslog buffer in one call, or
//! `/dev/kmsg` read without blocking; and `/dev/kmsg` opened for our own
//! records, which `report::kmsg` writes.
//!
//! `/dev/kmsg`: each `read` returns one record; `EAGAIN` means we reached
//! the end, `EPIPE` that a record was overwritten while we read (skip it).

use crate::read::root::{read_lossy, Root};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Stop reading after this much: a log larger than this is not a boot's
/// PCI story, and the boot step has a deadline.
const READ_LIMIT: usize = 8 << 20;

/// A `--dmesg` file that cannot be read: then nothing is inspected.
#[derive(Debug)]
pub(crate) struct LogFileError(pub PathBuf, pub io::Error);

/// The kernel log: the file given; else, on the live system, the syslog
/// buffer in one call; else the root's `/dev/kmsg` when it is the real
/// device; else nothing (a fixture tree without a log).
pub(crate) fn read_log(
    root: &Root,
    file: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<String, LogFileError> {
    if let Some(p) = file {
        return read_lossy(p).map_err(|e| LogFileError(p.to_path_buf(), e));
    }
    if root.is_live() {
        match read_syslog_buffer() {
            Ok(t) => return Ok(t),
            Err(e) => log::info!("syslog(READ_ALL): {e}; reading /dev/kmsg instead"),
        }
    }
    let dev = root.join("dev/kmsg");
    if is_char_device(&dev) {
        match read_all(&dev) {
            Ok(t) => return Ok(t),
            Err(e) => warnings.push(format!(
                "cannot read {}: {e}; BAR sizes and windows from the log are unknown",
                dev.display()
            )),
        }
    }
    Ok(String::new())
}

/// The kmsg device at `path` opened for our records, which
/// `report::kmsg` writes; `None` when it cannot be (no such device under a
/// fixture root, `printk.devkmsg=off`).
pub(crate) fn open_for_records(path: &Path) -> Option<std::fs::File> {
    OpenOptions::new().write(true).open(path).ok()
}

/// Reads every record currently in the buffer, as text with one message per
/// line in the `/dev/kmsg` format (`prio,seq,usec,flags;message`).
fn read_all(path: &Path) -> io::Result<String> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if !out.ends_with(b"\n") {
                    out.push(b'\n');
                }
                if out.len() >= READ_LIMIT {
                    break;
                }
            }
            Err(e) if errno(&e) == Some(Errno::EAGAIN) => break,
            Err(e) if errno(&e) == Some(Errno::EPIPE) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The whole kernel log buffer in one `syslog(SYSLOG_ACTION_READ_ALL)`
/// call, as `dmesg` reads it: `/dev/kmsg` returns one record per read, and
/// under emulation those hundreds of calls were most of the boot step's
/// time. Needs CAP_SYSLOG (the initramfs runs as root); the caller falls
/// back to `/dev/kmsg`. Lines come back as `<6>[    1.234567] message`; the
/// priority prefix is dropped.
fn errno(e: &io::Error) -> Option<Errno> {
    e.raw_os_error().map(Errno::from_raw)
}

fn read_syslog_buffer() -> io::Result<String> {
    const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
    const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;
    // SAFETY: SIZE_BUFFER takes no buffer and returns the ring's size.
    let size = unsafe { libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0) };
    if size < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = (size as usize).clamp(4096, READ_LIMIT);
    let mut buf = vec![0u8; len];
    // SAFETY: the kernel writes at most `len` bytes into `buf`, which is
    // `len` bytes long, and returns how many it wrote.
    let n = unsafe {
        libc::klogctl(
            SYSLOG_ACTION_READ_ALL,
            buf.as_mut_ptr().cast(),
            len as libc::c_int,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    let text = String::from_utf8_lossy(&buf);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(strip_priority(line));
        out.push('\n');
    }
    Ok(out)
}

/// `<6>[ 1.0] msg` -> `[ 1.0] msg`.
fn strip_priority(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix('<') {
        if let Some((prio, msg)) = rest.split_once('>') {
            if !prio.is_empty() && prio.len() <= 3 && prio.bytes().all(|b| b.is_ascii_digit()) {
                return msg;
            }
        }
    }
    line
}

/// Whether `path` is the kmsg character device, not a leftover file in a
/// fixture tree.
fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_priority_prefixes_are_dropped() {
        assert_eq!(
            strip_priority("<6>[    1.0] pci 0000:00:00.0: x"),
            "[    1.0] pci 0000:00:00.0: x"
        );
        assert_eq!(strip_priority("<12>x"), "x");
        assert_eq!(strip_priority("<a>x"), "<a>x");
        assert_eq!(strip_priority("plain"), "plain");
    }

    #[test]
    fn the_syslog_buffer_reads_as_dmesg_text_or_fails_cleanly() {
        // Without CAP_SYSLOG (or with dmesg_restrict) this is an error the
        // caller falls back from; as root it is the log.
        match read_syslog_buffer() {
            Ok(t) => assert!(!t.lines().any(|l| l.starts_with("<6>"))),
            Err(e) => assert!(e.raw_os_error().is_some()),
        }
    }

    #[test]
    fn reading_a_plain_file_returns_its_text() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kmsg");
        std::fs::write(&p, b"6,1,0,-;hello\n").unwrap();
        assert_eq!(read_all(&p).unwrap(), "6,1,0,-;hello\n");
        assert!(!is_char_device(&p));
    }
}
