//! `/dev/kmsg`: reading the kernel log without blocking, and writing our
//! verdict into it.
//!
//! Reading: each `read` returns one record; `EAGAIN` means we reached the
//! end, `EPIPE` that a record was overwritten while we read (skip it).
//! Writing: at most 1024 bytes a record, and the kernel silently drops
//! beyond 10 records per 5 s per descriptor, so we send at most 8.

use nix::errno::Errno;
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Stop reading after this much: a log larger than this is not a boot's
/// PCI story, and the boot step has a deadline.
pub const READ_LIMIT: usize = 8 << 20;
pub const MAX_RECORDS: usize = 8;
/// Current kernels take 1024 bytes a record; before the printk ring
/// buffer rework (5.10 and older) anything over 992 (`LOG_LINE_MAX`) is
/// refused with EINVAL. Stay under both.
pub const MAX_RECORD_BYTES: usize = 992;

/// Reads every record currently in the buffer, as text with one message per
/// line in the `/dev/kmsg` format (`prio,seq,usec,flags;message`).
pub fn read_all(path: &Path) -> io::Result<String> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
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
            Err(e) if e.raw_os_error() == Some(Errno::EAGAIN as i32) => break,
            Err(e) if e.raw_os_error() == Some(Errno::EPIPE as i32) => continue,
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
pub fn read_syslog_buffer() -> io::Result<String> {
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

/// Syslog priorities for the `<N>` prefix.
pub const PRIO_ERR: u8 = 3;
pub const PRIO_WARNING: u8 = 4;
pub const PRIO_INFO: u8 = 6;

/// Cuts a message to fit one record with its prefix, on a char boundary.
pub fn record(prio: u8, msg: &str) -> String {
    let prefix = format!("<{prio}>gpu-preflight: ");
    let room = MAX_RECORD_BYTES - prefix.len() - 1;
    let mut m = msg.replace('\n', " ");
    if m.len() > room {
        let mut cut = room - 3;
        while !m.is_char_boundary(cut) {
            cut -= 1;
        }
        m.truncate(cut);
        m.push_str("...");
    }
    format!("{prefix}{m}\n")
}

/// Writes up to `MAX_RECORDS` records to the kmsg device at `path`; if it
/// cannot be opened (e.g. `printk.devkmsg=off`) they go to `fallback`.
pub fn write_records(
    path: &Path,
    records: &[(u8, String)],
    fallback: &mut dyn Write,
) -> io::Result<bool> {
    let lines: Vec<String> = records
        .iter()
        .take(MAX_RECORDS)
        .map(|(p, m)| record(*p, m))
        .collect();
    let strip = |l: &str| {
        l.split_once('>')
            .map(|(_, t)| t.to_string())
            .unwrap_or_else(|| l.to_string())
    };
    match OpenOptions::new().write(true).open(path) {
        Ok(mut f) => {
            let mut all = true;
            for l in &lines {
                // One write per record: the kernel takes each write as one.
                // A record refused costs that record, which goes to the
                // fallback; the rest are still tried.
                if f.write_all(l.as_bytes()).is_err() {
                    all = false;
                    fallback.write_all(strip(l).as_bytes())?;
                }
            }
            Ok(all)
        }
        Err(_) => {
            for l in &lines {
                // Without the priority prefix, for humans.
                fallback.write_all(strip(l).as_bytes())?;
            }
            Ok(false)
        }
    }
}

/// Whether `path` is the kmsg character device, not a leftover file in a
/// fixture tree.
pub fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_bounded_and_prefixed() {
        let r = record(PRIO_WARNING, &"é".repeat(2000));
        assert!(r.len() <= MAX_RECORD_BYTES);
        assert!(r.starts_with("<4>gpu-preflight: ") && r.ends_with("...\n"));
        assert_eq!(record(6, "a\nb"), "<6>gpu-preflight: a b\n");
    }

    #[test]
    fn falls_back_when_the_device_cannot_be_opened() {
        let mut out = Vec::new();
        let recs: Vec<(u8, String)> = (0..12).map(|i| (PRIO_INFO, format!("r{i}"))).collect();
        let wrote = write_records(Path::new("/nonexistent/kmsg"), &recs, &mut out).unwrap();
        assert!(!wrote);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), MAX_RECORDS);
        assert!(text.starts_with("gpu-preflight: r0\n"));
    }

    #[test]
    fn a_refused_record_goes_to_the_fallback_and_the_rest_are_tried() {
        // /dev/full opens for writing and fails every write, as a kernel
        // refusing records would.
        let mut out = Vec::new();
        let recs = vec![
            (PRIO_INFO, "one".to_string()),
            (PRIO_INFO, "two".to_string()),
        ];
        let wrote_all = write_records(Path::new("/dev/full"), &recs, &mut out).unwrap();
        assert!(!wrote_all);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "gpu-preflight: one\ngpu-preflight: two\n"
        );
    }

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
