//! systemd-boot / kernel-install, and systems we cannot edit: instructions
//! only.
//!
//! With systemd-boot the command line lives in `/etc/kernel/cmdline` (or,
//! when absent, is copied from the running `/proc/cmdline` by
//! kernel-install) and in each installed boot entry. All of those are files
//! we did not create, and there is no drop-in directory to put ours in;
//! creating `/etc/kernel/cmdline` would freeze whatever one-off parameters
//! this boot had into every future kernel. So we print the exact edit and
//! the command to rerun, and change nothing.

use crate::remediate::{Status, Transcript, PARAM};
use crate::report::Report;

pub(crate) fn instructions(report: &Report, mut t: Transcript) -> Transcript {
    t.say(format!(
        "gpu-preflight: the next boot needs {PARAM} (diagnosis {}). This system boots with \
         systemd-boot/kernel-install, whose command line files gpu-preflight does not edit. \
         Changing nothing; to do it yourself:",
        report.diagnosis.as_str()
    ));
    t.say(format!(
        "  add {PARAM} to /etc/kernel/cmdline (if that file does not exist, start it from \
         /proc/cmdline, without one-off parameters), then reinstall the boot entries: \
         kernel-install add \"$(uname -r)\" \"/lib/modules/$(uname -r)/vmlinuz\""
    ));
    t.done(Status::NeedsHand)
}

/// No boot loader configuration we know how to edit; `why` says what was
/// found.
pub(crate) fn manual(report: &Report, why: &str, mut t: Transcript) -> Transcript {
    t.say(format!(
        "gpu-preflight: the next boot needs {PARAM} (diagnosis {}), but {why}. \
         Changing nothing: add {PARAM} to the kernel command line in your boot loader's configuration.",
        report.diagnosis.as_str()
    ));
    t.done(Status::NeedsHand)
}
