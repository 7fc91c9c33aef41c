//! The record of what we did (`/var/lib/gpu-preflight/remediate.json`), so
//! that it is done once and can be undone.

use crate::atomic_file;
use crate::read::root::Root;
use crate::remediate::PARAM;
use crate::report::Report;
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;

pub(crate) const STATE_FILE: &str = "/var/lib/gpu-preflight/remediate.json";
const STATE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    pub version: u32,
    /// `grub.d`, `grubby` or `kernel-install`.
    pub backend: String,
    pub parameter: String,
    /// The kernel that was running (`/proc/sys/kernel/osrelease`).
    pub kernel_release: Option<String>,
    /// `/proc/sys/kernel/random/boot_id` of the boot that made the change:
    /// a later boot without the parameter means the change did not reach
    /// the boot loader.
    pub boot_id: Option<String>,
    /// UTC, RFC 3339.
    pub timestamp: String,
    pub diagnosis: String,
    /// Files we created, as paths on the target system.
    pub written: Vec<String>,
    /// Directories we created, outermost first; removed on undo if empty.
    pub created_dirs: Vec<String>,
    /// The boot loader command (run, or to be run inside the target).
    pub command: Option<Vec<String>>,
    /// Whether that command ran and succeeded.
    pub regenerated: bool,
}

pub(crate) fn new_state(
    root: &Root,
    backend: &str,
    report: &Report,
    written: Vec<String>,
    created_dirs: Vec<String>,
    command: Option<Vec<String>>,
) -> State {
    State {
        version: STATE_VERSION,
        backend: backend.to_string(),
        parameter: PARAM.to_string(),
        kernel_release: root.read_trimmed("/proc/sys/kernel/osrelease"),
        boot_id: root.read_trimmed("/proc/sys/kernel/random/boot_id"),
        timestamp: rfc3339_utc(std::time::SystemTime::now()),
        diagnosis: report.diagnosis.as_str().to_string(),
        written,
        created_dirs,
        command,
        regenerated: false,
    }
}

pub(crate) fn load_state(root: &Root) -> Result<Option<State>, String> {
    let p = root.join(STATE_FILE);
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            format!(
                "cannot parse {}: {e}; remove it (or run `gpu-preflight remediate --undo`) to start over",
                p.display()
            )
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::read::root::cannot_read(&p, &e)),
    }
}

pub(crate) fn write_state(root: &Root, s: &State) -> Result<(), String> {
    let p = root.join(STATE_FILE);
    let mut text = serde_json::to_string_pretty(s).map_err(|e| e.to_string())?;
    text.push('\n');
    atomic_file::write(&p, text.as_bytes(), 0o644)
        .map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// `YYYY-MM-DDTHH:MM:SSZ` without a date crate: days since the epoch to a
/// civil date (the proleptic Gregorian algorithm by Howard Hinnant).
fn rfc3339_utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        use std::time::{Duration, UNIX_EPOCH};
        for (secs, want) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_164_799, "2024-02-28T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
        ] {
            assert_eq!(rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs)), want);
        }
    }
}
