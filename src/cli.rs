//! Command-line interface and exit codes.
//!
//! Exit codes (documented in README.md, asserted by tests/cli.rs):
//! 0 healthy, 1 problem found, 2 usage or configuration error,
//! 3 could not inspect (no sysfs, unreadable input).

use crate::check::{self, CheckOptions};
use crate::explain;
use crate::kmsg;
use crate::report::{self, Report, Verdict};
use crate::root::Root;
use crate::select::Selector;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub const EXIT_OK: u8 = 0;
pub const EXIT_PROBLEM: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_CANNOT_INSPECT: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "gpu-preflight",
    version,
    about = "Check that every GPU has its PCI BARs assigned, and say what fixes it when not"
)]
pub struct Cli {
    /// More log output on stderr (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect this system (or the tree at --root) and report.
    Check(CheckArgs),
    /// Diagnose from saved text: dmesg, journalctl -k, lspci -v/-vv.
    Explain(ExplainArgs),
    /// Run at boot from the initramfs hook: check, leave the report in
    /// /run/gpu-preflight, log the verdict. Exit 4 only in strict mode on failure.
    Boot(crate::boot::BootArgs),
    /// Make the next boot carry pci=realloc when the diagnosis calls for it (once).
    Remediate(crate::remediate::RemediateArgs),
    /// In the running system: publish the boot's metrics, remediate if configured.
    Publish(crate::publish::PublishArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Prometheus,
}

/// Which GPUs to look at, and how many there must be.
#[derive(Debug, Clone, Args)]
pub struct SelectionArgs {
    /// GPU selector replacing the default (display controllers minus emulated
    /// adapters): VENDOR:DEVICE, VENDOR:* or class:CCSS, hex. Repeatable.
    #[arg(long = "match", value_name = "SELECTOR", value_parser = parse_selector)]
    pub selectors: Vec<Selector>,

    /// Number of GPUs that must be present.
    #[arg(long, value_name = "N")]
    pub expect: Option<usize>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Directory that plays the system root.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,

    /// Read the kernel log from this dmesg or journalctl -k text instead of /dev/kmsg.
    #[arg(long, value_name = "FILE")]
    pub dmesg: Option<PathBuf>,

    #[command(flatten)]
    pub selection: SelectionArgs,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Also write the verdict and hints to /dev/kmsg (stderr if it cannot be opened).
    #[arg(long)]
    pub kmsg: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// Saved dmesg, journalctl -k or lspci -v text; several files are read as one.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub selection: SelectionArgs,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn parse_selector(s: &str) -> Result<Selector, String> {
    s.parse()
}

impl CheckArgs {
    pub fn options(&self) -> CheckOptions {
        CheckOptions {
            root: Root::new(&self.root),
            dmesg: self.dmesg.clone(),
            selectors: self.selection.selectors.clone(),
            expect: self.selection.expect,
        }
    }
}

pub fn exit_code_for(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Ok => EXIT_OK,
        Verdict::Fail => EXIT_PROBLEM,
    }
}

pub fn main() -> ExitCode {
    // The hooks' call, `gpu-preflight boot` with no options, skips clap:
    // building and matching the command tree was ~20 ms of the boot step
    // under TCG (BENCHMARKS.md, "In the guest"). A unit test holds it to
    // what clap would have parsed.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == "boot") && args.next().is_none() {
        init_logging(0);
        return ExitCode::from(crate::boot::run(&crate::boot::BootArgs::defaults()));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    EXIT_OK
                }
                _ => EXIT_USAGE,
            });
        }
    };
    init_logging(cli.verbose);
    ExitCode::from(run(cli))
}

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

pub fn run(cli: Cli) -> u8 {
    match cli.command {
        Command::Check(args) => match check::run(&args.options()) {
            Ok(report) => {
                if args.kmsg {
                    send_to_kmsg(&Root::new(&args.root), &report);
                }
                emit(&report, args.format)
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_CANNOT_INSPECT
            }
        },
        Command::Explain(args) => match explain::run(
            &args.files,
            &args.selection.selectors,
            args.selection.expect,
        ) {
            Ok(report) => emit(&report, args.format),
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_CANNOT_INSPECT
            }
        },
        Command::Boot(args) => crate::boot::run(&args),
        Command::Remediate(args) => crate::remediate::run(&args),
        Command::Publish(args) => crate::publish::run(&args),
    }
}

/// Prints the report in the chosen format; the exit code follows the verdict.
pub fn emit(report: &Report, format: Format) -> u8 {
    let text = match format {
        Format::Text => report::to_text(report),
        Format::Json => report::to_json(report),
        Format::Prometheus => report::to_prometheus(report),
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe is the reader's choice; anything else is worth a line.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: writing the report: {e}");
        }
    }
    exit_code_for(report.verdict)
}

/// Writes the verdict and hints to the root's /dev/kmsg, or stderr.
pub fn send_to_kmsg(root: &Root, report: &Report) {
    let records = report::kmsg_records(report);
    let dev = root.join("dev/kmsg");
    if let Err(e) = kmsg::write_records(&dev, &records, &mut std::io::stderr()) {
        log::warn!("writing to {}: {e}", dev.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_fast_path_means_what_clap_would_parse() {
        let cli = Cli::try_parse_from(["gpu-preflight", "boot"]).unwrap();
        match cli.command {
            Command::Boot(args) => assert_eq!(args, crate::boot::BootArgs::defaults()),
            other => panic!("parsed as {other:?}"),
        }
        assert_eq!(cli.verbose, 0);
    }
}
