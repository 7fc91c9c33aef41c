//! The kernel-log form: a few records in `/dev/kmsg`, so that `journalctl
//! -k` shows the verdict and the hints of a boot.
//!
//! A record holds at most 1024 bytes, and the kernel silently drops beyond
//! 10 records per 5 s per descriptor, so we send at most 8.

use crate::report::{Report, Verdict};
use std::io::{self, Write};

pub(crate) const MAX_RECORDS: usize = 8;
/// Current kernels take 1024 bytes a record; before the printk ring
/// buffer rework (5.10 and older) anything over 992 (`LOG_LINE_MAX`) is
/// refused with EINVAL. Stay under both.
const MAX_RECORD_BYTES: usize = 992;

/// Syslog priorities for the `<N>` prefix.
pub(crate) const PRIO_ERR: u8 = 3;
pub(crate) const PRIO_WARNING: u8 = 4;
pub(crate) const PRIO_INFO: u8 = 6;

/// The report's records: the verdict line first, then the summary on
/// failure, then hints, at most `MAX_RECORDS` in all.
pub(crate) fn records(r: &Report) -> Vec<(u8, String)> {
    let unassigned: Vec<String> = r
        .unassigned
        .iter()
        .map(|u| format!("{}/BAR{}", u.bdf, u.bar))
        .collect();
    let prio = if r.verdict == Verdict::Ok {
        PRIO_INFO
    } else {
        PRIO_WARNING
    };
    let mut out = vec![(
        prio,
        format!(
            "verdict={} diagnosis={} found={} expected={} realloc={} unassigned={} elapsed_ms={}",
            match r.verdict {
                Verdict::Ok => "ok",
                Verdict::Fail => "fail",
                Verdict::Unknown => "unknown",
            },
            r.diagnosis.as_str(),
            r.found,
            r.expected
                .map(|e| e.to_string())
                .unwrap_or_else(|| "-".into()),
            u8::from(r.realloc_active),
            if unassigned.is_empty() {
                "-".to_string()
            } else {
                unassigned.join(",")
            },
            r.elapsed_ms
        ),
    )];
    let p2p_refused = r
        .p2p
        .as_ref()
        .and_then(crate::report::p2p::expected_refusal);
    if r.verdict != Verdict::Ok {
        out.push((prio, r.summary.clone()));
        if let Some(why) = &p2p_refused {
            out.push((prio, why.clone()));
        }
    }
    let p2p_hints = match (&p2p_refused, &r.p2p) {
        (Some(_), Some(p)) => p.hints.iter().map(|h| (h.id, &h.text)).collect(),
        _ => Vec::new(),
    };
    for (id, text) in r.hints.iter().map(|h| (h.id, &h.text)).chain(p2p_hints) {
        if out.len() >= MAX_RECORDS {
            break;
        }
        out.push((prio, format!("hint {id}: {text}")));
    }
    out
}

/// Cuts a message to fit one record with its prefix, on a char boundary.
fn record(prio: u8, msg: &str) -> String {
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

/// Writes up to `MAX_RECORDS` records to the kmsg device
/// (`read::kmsg::open_for_records`); without one (it could not be opened,
/// e.g. `printk.devkmsg=off`) they go to `fallback`. Returns whether every
/// record reached the device.
pub(crate) fn write_records(
    device: Option<&mut dyn Write>,
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
    match device {
        Some(f) => {
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
        None => {
            for l in &lines {
                // Without the priority prefix, for humans.
                fallback.write_all(strip(l).as_bytes())?;
            }
            Ok(false)
        }
    }
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
        let wrote = write_records(None, &recs, &mut out).unwrap();
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
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let wrote_all = write_records(Some(&mut full), &recs, &mut out).unwrap();
        assert!(!wrote_all);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "gpu-preflight: one\ngpu-preflight: two\n"
        );
    }
}
