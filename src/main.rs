//! Thin entry point: everything, exit status included, is `cli::main`.
//!
//! `#![no_main]`: the C library calls this `main` itself, without std's
//! runtime start in between. That start reads `/proc/self/maps` to find
//! the main thread's stack, maps an alternate signal stack and installs a
//! handler that names a stack overflow; under emulation (the boot step in
//! a TCG guest) its code alone is as much to translate as the whole floor
//! program (BENCHMARKS.md, "What the emulator translates"). The two things
//! of it a command needs, `cli::start` does: file descriptors 0-2 open,
//! SIGPIPE ignored (a closed pipe is an error the writer sees). Arguments
//! and the environment need no start: glibc hands them to std before
//! `main` (its `.init_array`). The test build of this file keeps the test
//! harness's own `main` (it has no tests; the binary is tested whole).
#![cfg_attr(not(test), no_main)]

// Only glibc hands the arguments to std before `main` (a musl build would
// see none): the binary is built for x86_64-unknown-linux-gnu.
#[cfg(not(target_env = "gnu"))]
compile_error!("gpu-preflight's main relies on glibc passing argv to std (.init_array)");

#[cfg(not(test))]
use std::ffi::{c_char, c_int};

// SAFETY: the one `main` symbol of the program, called once by the C
// library's start with its usual arguments, which std reads on its own.
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    c_int::from(gpu_preflight::main())
}
