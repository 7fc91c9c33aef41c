//! The command line: parse arguments (`args`), run the command, print its
//! report in the chosen format, and exit with the documented status
//! (`exit`). Nothing below `cli` knows clap or exit numbers.

mod args;
mod exit;
mod screen;

use crate::commands::boot::{self, BootOptions};
use crate::commands::plan::PlanError;
use crate::commands::{check, explain, plan, publish, remediate};
use crate::read::root::Root;
use crate::remediate::Status;
use crate::report::{self, Report, Verdict};
use args::{Cli, Command, Format, PlanFormat};
use clap::Parser;
pub(crate) use exit::Exit;
use std::io::Write;

/// The command-line definition and the exit statuses, for the manual pages
/// and shell completions (`examples/gen_docs.rs`); the boot binary never
/// calls it.
#[doc(hidden)]
pub mod manual {
    /// The whole command tree, as clap builds it.
    pub fn command() -> clap::Command {
        <super::args::Cli as clap::CommandFactory>::command()
    }

    /// Every exit status with its meaning.
    pub fn exit_statuses() -> &'static [(u8, &'static str)] {
        &super::exit::MEANINGS
    }
}

/// The program: start-up (`start`), the command, and its exit status.
/// A panic where panics unwind (debug builds; release aborts) exits 101,
/// as std's own start would have made it, and stdout is flushed before
/// the status is returned: without std's start, nothing flushes it at
/// exit.
pub fn main() -> u8 {
    start();
    let code = std::panic::catch_unwind(command).unwrap_or(101);
    let _ = std::io::stdout().flush();
    code
}

/// What std's runtime start did that a command needs (the binary's `main`
/// skips that start, src/main.rs): file descriptors 0-2 open, so that no
/// file the command opens becomes its stdout or stderr (the boot hook may
/// start it with one closed); SIGPIPE ignored, so that writing to a closed
/// pipe is an error the writer sees (`write_out`), not a silent death.
fn start() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll reads and writes the three entries of `fds`, a timeout
    // of 0 returns at once; fcntl, open, abort and signal take constant
    // arguments.
    unsafe {
        let polled = libc::poll(fds.as_mut_ptr(), 3, 0) >= 0;
        for p in fds {
            let closed = if polled {
                p.revents & libc::POLLNVAL != 0
            } else {
                libc::fcntl(p.fd, libc::F_GETFD) == -1
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
            };
            // The lowest free descriptor is this one; without /dev/null
            // the next file opened could become it: stop, as std's start
            // does.
            if closed && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != p.fd {
                libc::abort();
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

fn command() -> u8 {
    // The hooks' call, `gpu-preflight boot` with no options, skips clap:
    // building and matching the command tree was ~20 ms of the boot step
    // under TCG (BENCHMARKS.md, "In the guest"). A unit test holds it to
    // what clap would have parsed. No logger either: the boot path logs
    // nothing above info, which the default level drops, and setting one
    // up is code run once, paid for in translation under emulation.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == "boot") && args.next().is_none() {
        return boot_exit(boot::run(&BootOptions::defaults())).code();
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    Exit::Ok
                }
                _ => Exit::Usage,
            }
            .code();
        }
    };
    init_logging(cli.verbose);
    run(cli).code()
}

/// `-v` shows what was read and which warnings it raised; the report has
/// the warnings whatever the level.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    env_logger::Builder::new()
        .filter_level(level)
        .parse_env("GPU_PREFLIGHT_LOG")
        .format_timestamp(None)
        .init();
}

fn run(cli: Cli) -> Exit {
    match cli.command {
        Command::Check(args) => match check::run_with(&args.source(), args.expect_p2p) {
            Ok(report) => {
                if args.kmsg {
                    check::send_to_kmsg(&Root::new(&args.root.root), &report);
                }
                emit(&report, args.format)
            }
            Err(e) => {
                eprintln!("error: {e}");
                Exit::CannotInspect
            }
        },
        Command::Explain(args) => match explain::run(
            &args.files,
            &args.selection.selectors,
            args.selection.expect,
            args.platform.map(|p| p.platform()),
        ) {
            Ok(report) => emit(&report, args.format),
            Err(e) => {
                eprintln!("error: {e}");
                Exit::CannotInspect
            }
        },
        Command::Boot(args) => boot_exit(boot::run(&args.options())),
        Command::Remediate(args) => match remediate::run(&args.options()) {
            Status::Done => Exit::Ok,
            Status::NeedsHand => Exit::Problem,
            Status::Failed => Exit::CannotApply,
        },
        Command::Plan(args) => match plan::run(&args.options()) {
            Ok(r) => {
                let text = match args.format {
                    PlanFormat::Text => report::plan::text_for(&r, screen::screen()),
                    PlanFormat::Json => report::plan::json(&r),
                };
                write_out(&text);
                if r.predicted.ok {
                    Exit::Ok
                } else {
                    Exit::Problem
                }
            }
            Err(PlanError::Usage(e)) => {
                eprintln!("error: {e}");
                Exit::Usage
            }
            Err(PlanError::Unreadable(e)) => {
                eprintln!("error: {e}");
                Exit::CannotInspect
            }
        },
        Command::Publish(args) => {
            if publish::run(&args.options()) {
                Exit::Ok
            } else {
                Exit::CannotApply
            }
        }
    }
}

fn boot_exit(stop: bool) -> Exit {
    if stop {
        Exit::StopBoot
    } else {
        Exit::Ok
    }
}

/// Prints the report in the chosen format; the exit status follows the
/// verdict.
fn emit(report: &Report, format: Format) -> Exit {
    let text = match format {
        Format::Text => report::text::render_for(report, screen::screen()),
        Format::Json => report::json::render(report),
        Format::Prometheus => report::prometheus::render(report),
    };
    write_out(&text);
    match report.verdict {
        Verdict::Ok => Exit::Ok,
        // Not shown healthy: a script that trusts exit 0 must not pass it.
        Verdict::Fail | Verdict::Unknown => Exit::Problem,
    }
}

/// Writes a report to stdout. A closed pipe is the reader's choice;
/// anything else is worth a line.
fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write the report: {e}");
        }
    }
}
