//! Remediation: make the next boot carry `pci=realloc`, once, when the
//! diagnosis says that is what the guest can do about it.
//!
//! It acts only when the check fails, realloc is not active, and the
//! report has the `guest-pci-realloc` hint or its first hint is a step of
//! two parts whose guest part is `pci=realloc` (a host change the guest
//! kernel then finishes: written now, before the VM is stopped, the one
//! boot after the host change carries both). After a boot that had
//! `pci=realloc` and still failed it changes nothing and prints the
//! host-side hints: realloc cannot create address space (docs/lab.md,
//! "Which knob fixes which variant"), and adding it again would only loop.
//!
//! The backend is chosen from what the target root holds (`detect`):
//! `grub_d` (Debian/Ubuntu), `grubby` (Fedora/RHEL BLS), `systemd_boot`
//! (a kernel-install plugin of ours); anything else gets instructions only.
//!
//! Boot loader tools probe the running system's disks, so for a `--root`
//! other than `/` they are not run unless `--chroot` says the caller has
//! prepared that root (with `/dev`, `/proc` and `/sys` mounted) for
//! `chroot ROOT TOOL`; without it our own files are written and the command
//! to run inside that system is printed.
//!
//! Every attempt is recorded (`state`): with a record present the parameter
//! is never added again; `undo` uses it to remove exactly what we created.

mod decide;
mod detect;
mod grub_d;
mod grubby;
mod state;
mod systemd_boot;
mod txn;

#[cfg(test)]
mod tests;

use crate::atomic_file;
use crate::read::root::Root;
use crate::report::Report;
use decide::{decide, Decision};
use detect::{detect, run_tool, shell_words, Backend};
use state::{load_state, write_state, State, STATE_FILE};
use std::ffi::OsString;
use std::io::ErrorKind;

/// The parameter remediation adds.
pub(crate) const PARAM: &str = "pci=realloc";

/// How one run is to behave: the part of the arguments the backends need.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub root: Root,
    pub dry_run: bool,
    pub regenerate: bool,
    pub chroot: bool,
    /// Search path for the tools when the root is `/` (the process's PATH).
    pub path: OsString,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Done, or nothing to do.
    Done,
    /// Nothing changed: the fix is on the host, or a person must make it.
    NeedsHand,
    /// Something could not be written or run.
    Failed,
}

/// What a run says and how it ends; returned whole so tests can read it.
#[derive(Debug)]
pub(crate) struct Transcript {
    pub status: Status,
    pub out: Vec<String>,
    pub err: Vec<String>,
}

impl Transcript {
    fn new() -> Transcript {
        Transcript {
            status: Status::Done,
            out: Vec::new(),
            err: Vec::new(),
        }
    }

    fn say(&mut self, line: impl Into<String>) {
        self.out.push(line.into());
    }

    /// A dry run's account of one file of ours (`label` follows its path)
    /// and of the record it would keep.
    fn say_would_install(
        &mut self,
        root: &Root,
        path: &std::path::Path,
        label: &str,
        text: &str,
        needed: bool,
    ) {
        if needed {
            self.say(format!("would write {}{label}:", path.display()));
            for l in text.lines() {
                self.say(format!("  {l}"));
            }
        } else {
            self.say(format!("{} is already in place", path.display()));
        }
        self.say(format!(
            "would record the change in {}",
            root.join(STATE_FILE).display()
        ));
    }

    fn fail(mut self, status: Status, line: impl Into<String>) -> Transcript {
        self.err.push(line.into());
        self.status = status;
        self
    }

    /// A failure to write or run: `error: ...` on stderr.
    fn error(self, msg: impl AsRef<str>) -> Transcript {
        let line = format!("error: {}", msg.as_ref());
        self.fail(Status::Failed, line)
    }

    fn done(mut self, status: Status) -> Transcript {
        self.status = status;
        self
    }

    #[cfg(test)]
    pub(crate) fn text(&self) -> String {
        let mut s = self.out.join("\n");
        for e in &self.err {
            s.push('\n');
            s.push_str(e);
        }
        s
    }

    pub(crate) fn print(&self) {
        for l in &self.out {
            println!("{l}");
        }
        for l in &self.err {
            eprintln!("{l}");
        }
    }
}

/// Decides and acts on a report (from the check just run).
pub(crate) fn remediate(ctx: &Ctx, report: &Report) -> Transcript {
    let mut t = Transcript::new();
    let state = match load_state(&ctx.root) {
        Ok(s) => s,
        // A record we cannot read might say the parameter was added already:
        // adding it again is the one thing we must not do.
        Err(e) => return t.error(e),
    };
    let boot_id = ctx.root.read_trimmed("/proc/sys/kernel/random/boot_id");
    match decide(report, state, boot_id.as_deref()) {
        Decision::Healthy => {
            t.say("gpu-preflight: every selected GPU has its BARs assigned: nothing to do");
            t.done(Status::Done)
        }
        Decision::ReallocDidNotHelp => {
            t.say(format!(
                "gpu-preflight: {PARAM} is active and BARs are still unassigned ({}): \
                 changing nothing; the fix is on the host side",
                report.diagnosis.as_str()
            ));
            host_hints(&mut t, report);
            t.done(Status::NeedsHand)
        }
        Decision::HostSide => {
            t.say(format!(
                "gpu-preflight: {}: {PARAM} in the guest would not fix this; changing nothing",
                report.diagnosis.as_str()
            ));
            host_hints(&mut t, report);
            t.done(Status::NeedsHand)
        }
        Decision::AlreadyDone { state, same_boot } => already_done(ctx, *state, same_boot, t),
        Decision::Apply => {
            let t = match detect(ctx) {
                Backend::GrubD => grub_d::apply(ctx, report, t),
                Backend::Grubby(tool) => grubby::apply(ctx, report, &tool, t),
                Backend::SystemdBoot => systemd_boot::apply(ctx, report, t),
                Backend::Manual(why) => manual(report, &why, t),
            };
            host_part(report, t)
        }
    }
}

/// After the guest's part of a step of two parts: what is left, on the
/// host, with the VM stopped.
fn host_part(report: &Report, mut t: Transcript) -> Transcript {
    let Some(h) = report.hints.first() else {
        return t;
    };
    if t.status == Status::Failed || !h.change.is_two_part() {
        return t;
    }
    t.say(format!(
        "gpu-preflight: {PARAM} is the guest's part of [{}]; the host's part is left:          stop the VM, make the change below and start it, and the next boot carries both",
        h.id
    ));
    t.say(format!("  hint [{}] {}", h.id, h.text));
    t
}

/// No boot loader configuration we know how to edit; `why` says what was
/// found.
fn manual(report: &Report, why: &str, mut t: Transcript) -> Transcript {
    t.say(format!(
        "gpu-preflight: the next boot needs {PARAM} (diagnosis {}), but {why}. \
         Changing nothing: add {PARAM} to the kernel command line in your boot loader's configuration.",
        report.diagnosis.as_str()
    ));
    t.done(Status::NeedsHand)
}

fn host_hints(t: &mut Transcript, report: &Report) {
    t.say(format!("  {}", report.summary));
    if report.hints.is_empty() {
        t.say("  (no hint applies: run `gpu-preflight check` for the numbers)");
    }
    for h in &report.hints {
        t.say(format!("  hint [{}] {}", h.id, h.text));
    }
}

fn already_done(ctx: &Ctx, mut s: State, same_boot: bool, mut t: Transcript) -> Transcript {
    let when = format!("{} by gpu-preflight ({} backend)", s.timestamp, s.backend);
    // A fragment written without regenerating (--no-regenerate, or a tool
    // that failed) is finished now if we may run the tool.
    if !s.regenerated && s.backend == "grub.d" && ctx.regenerate {
        match grub_d::regen_command(ctx, &mut t) {
            None => {}
            Some(Err(msg)) => return t.error(msg),
            Some(Ok(argv)) => {
                if ctx.dry_run {
                    t.say(format!("would run: {}", shell_words(&argv)));
                    return t.done(Status::Done);
                }
                if let Err(msg) = run_tool(&argv) {
                    return t.error(format!("{msg}; rerun to retry"));
                }
                s.regenerated = true;
                s.command = Some(detect::as_strings(&argv));
                if let Err(e) = write_state(&ctx.root, &s) {
                    t.say(format!("warning: could not update the record: {e}"));
                }
                t.say(format!(
                    "gpu-preflight: {PARAM} was added {when}; boot loader configuration regenerated now"
                ));
                return t.done(Status::Done);
            }
        }
    }
    // The same for the plugin: its kernel-install runs.
    if !s.regenerated && s.backend == systemd_boot::BACKEND && ctx.regenerate {
        match systemd_boot::finish(ctx, &mut t) {
            None => {}
            Some(Err(msg)) => return t.error(format!("{msg}; rerun to retry")),
            Some(Ok(_)) if ctx.dry_run => return t.done(Status::Done),
            Some(Ok(first)) => {
                s.regenerated = true;
                s.command = Some(first);
                if let Err(e) = write_state(&ctx.root, &s) {
                    t.say(format!("warning: could not update the record: {e}"));
                }
                t.say(format!(
                    "gpu-preflight: {PARAM} was added {when}; boot entries written again now"
                ));
                return t.done(Status::Done);
            }
        }
    }
    if same_boot {
        t.say(format!(
            "gpu-preflight: {PARAM} was already added {when}; it takes effect at the next boot. Not adding it again."
        ));
        if !s.regenerated {
            if let Some(cmd) = &s.command {
                t.say(format!(
                    "  the boot loader configuration still has to be regenerated: {}",
                    cmd.join(" ")
                ));
            }
        }
        t.done(Status::Done)
    } else {
        t.say(format!(
            "gpu-preflight: {PARAM} was added {when} during boot {}, but this boot's command line \
             does not carry it. Not adding it again: check that the boot loader configuration was \
             regenerated and that this boot loader is the one in use, or run \
             `gpu-preflight remediate --undo` to start over.",
            s.boot_id.as_deref().unwrap_or("?")
        ));
        t.done(Status::NeedsHand)
    }
}

/// `--undo`: remove what the record (or our header) says is ours, then
/// regenerate.
pub(crate) fn undo(ctx: &Ctx) -> Transcript {
    let mut t = Transcript::new();
    let root = &ctx.root;
    let state = match load_state(root) {
        Ok(s) => s,
        Err(e) => {
            // An unreadable record still is our file: undo what the header
            // proves is ours and drop the record.
            t.say(format!("warning: {e}"));
            None
        }
    };
    let state_path = root.join(STATE_FILE);

    // The kernel-install plugin: by the record, or by its mark when there
    // is no readable record.
    let plugin_backend = match &state {
        Some(s) => s.backend == systemd_boot::BACKEND,
        None => root.join(systemd_boot::PLUGIN).is_file(),
    };
    if plugin_backend {
        let t = match systemd_boot::undo(ctx, t) {
            Ok(t) => t,
            Err(t) => return t,
        };
        if ctx.dry_run {
            let mut t = t;
            if state_path.exists() {
                t.say(format!("would remove {}", state_path.display()));
            }
            return t.done(Status::Done);
        }
        return remove_state(root, state.as_ref(), t);
    }

    if state.as_ref().is_some_and(|s| s.backend == "grubby") {
        let t = match grubby::undo(ctx, t) {
            Ok(t) => t,
            Err(t) => return t,
        };
        if ctx.dry_run {
            let mut t = t;
            t.say(format!("would remove {}", state_path.display()));
            return t.done(Status::Done);
        }
        return remove_state(root, state.as_ref(), t);
    }

    // grub.d, or no readable record: our fragment is recognised by its header.
    let state_exists = state_path.exists();
    let (ours, mut t) = match grub_d::remove_fragment(ctx, t) {
        Ok(x) => x,
        Err(t) => return t,
    };
    if !ours && !state_exists {
        t.say("gpu-preflight: nothing to undo");
        return t.done(Status::Done);
    }
    if ctx.dry_run {
        if state_exists {
            t.say(format!("would remove {}", state_path.display()));
        }
        return t.done(Status::Done);
    }
    let t = remove_state(root, state.as_ref(), t);
    if t.status != Status::Done || !ours {
        return t;
    }
    grub_d::regenerate_after_undo(ctx, t)
}

/// Removes the record and the directories it says we created (if empty).
fn remove_state(root: &Root, state: Option<&State>, t: Transcript) -> Transcript {
    let p = root.join(STATE_FILE);
    match atomic_file::remove(&p) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return t.error(format!("cannot remove {}: {e}", p.display())),
    }
    if let Some(s) = state {
        for d in s.created_dirs.iter().rev() {
            // Only if empty: something else may have moved in since.
            let _ = std::fs::remove_dir(root.join(d));
        }
    }
    t.done(Status::Done)
}
