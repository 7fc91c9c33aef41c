//! Writes a synthetic system root with N PCI functions for the benchmarks
//! (`bench/run`) and for trying the checker at scale:
//!
//! ```text
//! cargo run --release --example gen_tree -- --functions 10000 --out bench/work/tree-10000
//! ```
//!
//! An example rather than a second `[[bin]]` so that `cargo build --release`
//! (what goes into an initramfs) never builds or ships it. The tree layout is
//! described in `tests/support/gen_tree.rs`, which `tests/gen_tree.rs` shares.

#[path = "../tests/support/gen_tree.rs"]
mod gen_tree;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: gen_tree --functions N --out DIR [--unassigned K] [--log-cap BYTES]\n\
  Writes DIR/sys, DIR/proc and DIR/dmesg.txt for N PCI functions (8 GPUs, K of\n\
  them with BAR 2 unassigned, default 3). DIR must not exist yet. Prints a JSON\n\
  summary of what was written.";

fn parse(args: &[String]) -> Result<(gen_tree::Options, PathBuf), String> {
    let mut opts = gen_tree::Options::new(0);
    let mut functions = None;
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs {what}"))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{a}: not a number: {v:?}"))
        };
        match a.as_str() {
            "--functions" => functions = Some(number(value("a count")?)?),
            "--unassigned" => opts.unassigned = number(value("a count")?)?,
            "--log-cap" => opts.log_cap = number(value("a byte count")?)?,
            "--out" => out = Some(PathBuf::from(value("a directory")?)),
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    opts.functions = functions.ok_or("--functions is required")?;
    Ok((opts, out.ok_or("--out is required")?))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (opts, out) = match parse(&args) {
        Ok(x) => x,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if out.exists() {
        eprintln!(
            "error: {} already exists; remove it first (trees are written once)",
            out.display()
        );
        return ExitCode::from(2);
    }
    match gen_tree::generate(&out, &opts) {
        Ok(summary) => {
            println!("{}", summary.to_json());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: generating {}: {e}", out.display());
            ExitCode::from(1)
        }
    }
}
