//! Thin entry point: everything, exit status included, is `cli::main`.

use std::process::ExitCode;

fn main() -> ExitCode {
    gpu_preflight::main()
}
