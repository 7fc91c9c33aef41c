//! Work that must never hold up its caller: done in a child process that a
//! parent, waiting on nothing else, abandons when its time is up.
//!
//! The boot step runs it so (`commands::boot`): a sysfs read that never
//! returns, a log too large to parse in time, a crash, all end in the
//! child, and the parent, which has done nothing but read two regular
//! files, says so in one line and lets the boot go on.
//!
//! How the parent waits: SIGCHLD is blocked before the fork and taken
//! through a signalfd, so a child that exits before the parent looks is
//! not missed; the parent sleeps in ppoll(2) on that descriptor with the
//! time left until the deadline, measured on CLOCK_MONOTONIC (what
//! `Instant` reads on Linux), and asks `waitpid(WNOHANG)` only when woken.
//! No timer ticks, no polling. At the deadline the child gets SIGKILL and
//! is left: a process stuck in the kernel (state D) dies only when that
//! call returns, and waiting for it would hold the boot until then; init
//! reaps it when it does.
//!
//! A signal reaches a thread that does not block it, so this is for
//! single-threaded processes, which the boot binary is; the tests drive it
//! through the binary for that reason.

use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::signal::{kill, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::os::fd::AsFd;
use std::time::Instant;

/// How the child's work ended, as the parent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited with this status (the work's own, 0 to 255).
    Exited(i32),
    /// It died of this signal: a crash (SIGSEGV), an abort (SIGABRT, a
    /// panic in a release build), or someone else's kill.
    Signaled(i32),
    /// It was still running at the deadline: sent SIGKILL and left.
    Abandoned(i32),
    /// It is gone and how it ended cannot be known (waitpid says it is
    /// not our child: someone else reaped it).
    Vanished,
}

/// Runs `work` in a child process and waits for it until `deadline`. The
/// child exits with the status `work` returns; a panic in it (where
/// panics unwind) exits 101 and never runs the parent's code. Err: the
/// child could not be started (signal mask, signalfd or fork failed), and
/// `work` did not run.
pub(crate) fn run_until(deadline: Instant, work: impl FnOnce() -> u8) -> Result<Ended, Errno> {
    // An ignored SIGCHLD (a disposition inherited through exec) would have
    // the kernel reap the child unseen: take the default, under which the
    // blocked signal waits for the signalfd.
    // SAFETY: SIG_DFL installs no handler.
    unsafe { nix::sys::signal::signal(Signal::SIGCHLD, nix::sys::signal::SigHandler::SigDfl) }?;
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    let mut old = SigSet::empty();
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), Some(&mut old))?;
    let restore = |old: &SigSet| {
        let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(old), None);
    };
    let sfd = match SignalFd::with_flags(&chld, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
        Ok(s) => s,
        Err(e) => {
            restore(&old);
            return Err(e);
        }
    };
    // SAFETY: the process is single-threaded here (see the module's
    // note), so the child may do anything the parent could.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(sfd);
            restore(&old);
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(101);
            use std::io::Write;
            let _ = std::io::stdout().flush();
            // SAFETY: _exit ends the child at once, without the parent's
            // exit handlers; everything the work wrote is flushed above.
            unsafe { libc::_exit(i32::from(code)) }
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => {
            restore(&old);
            return Err(e);
        }
    };
    let ended = wait_until(child, &sfd, deadline);
    drop(sfd);
    restore(&old);
    Ok(ended)
}

/// The parent's side: sleep on the signalfd until SIGCHLD or the deadline.
fn wait_until(child: Pid, sfd: &SignalFd, deadline: Instant) -> Ended {
    loop {
        match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return Ended::Exited(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ended::Signaled(sig as i32),
            // Still running (or stopped, which is as good as running here).
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            // ECHILD: not ours to wait for any more.
            Err(_) => return Ended::Vanished,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // ESRCH: it ended between the look and the kill; still,
            // nothing came by the deadline.
            let _ = kill(child, Signal::SIGKILL);
            return Ended::Abandoned(child.as_raw());
        }
        let mut fds = [PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
        match ppoll(&mut fds, Some(TimeSpec::from_duration(left)), None) {
            // Drain what woke us (several exits may be folded into one);
            // the loop's waitpid then says whether it was our child.
            Ok(n) if n > 0 => while let Ok(Some(_)) = sfd.read_signal() {},
            // The time is up, or a signal interrupted the wait: look again.
            Ok(_) | Err(Errno::EINTR) => {}
            // ppoll itself failed (it does not, on a valid descriptor):
            // treat the time as spent rather than spin.
            Err(_) => {
                let _ = kill(child, Signal::SIGKILL);
                return Ended::Abandoned(child.as_raw());
            }
        }
    }
}
