//! Thin entry point: parse arguments, run, print one error line, exit with
//! the documented code.

use std::process::ExitCode;

fn main() -> ExitCode {
    gpu_preflight::cli::main()
}
