//! A measuring stick, not a product: the least a boot step written in
//! Rust could run on a healthy boot, for `bench/tcg-blocks` to count what
//! the emulator translates (BENCHMARKS.md, "A verdict-only boot step").
//! Built as the release binary is (static, `opt-level=s`, LTO, `panic =
//! abort`, `#![no_main]`), with std and no crate.
//!
//! The parent reads the two settings files (the configuration file and the
//! kernel command line, looked at for one key only), forks, and waits for
//! the child on a pidfd with a deadline, as `deadline.rs` does. The child
//! walks `$VO_ROOT/sys/bus/pci/devices`, reads each function's `class`,
//! and for display controllers, accelerators and memory controllers (the
//! QEMU suite's stand-ins) the `resource` file, counting memory BARs with
//! a size and no address; it writes one record to the kernel log (stderr
//! when that cannot be opened) and exits. No report files, no kernel-log
//! reading, no model: what a boot whose sysfs shows every GPU placed would
//! need at the least, if the rest were done elsewhere.
#![no_main]

use std::ffi::c_int;
use std::io::Write as _;

extern "C" {
    fn fork() -> c_int;
    fn _exit(status: c_int) -> !;
    fn syscall(num: std::ffi::c_long, ...) -> std::ffi::c_long;
    fn poll(fds: *mut PollFd, n: std::ffi::c_ulong, timeout: c_int) -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
}

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

const SYS_PIDFD_OPEN: std::ffi::c_long = 434;
const POLLIN: i16 = 1;
const WNOHANG: c_int = 1;

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// GPU-like functions found, and their memory BARs with no address.
fn scan(root: &str) -> (u32, u32) {
    let (mut found, mut unassigned) = (0, 0);
    let Ok(dir) = std::fs::read_dir(format!("{root}/sys/bus/pci/devices")) else {
        return (0, 0);
    };
    for entry in dir.flatten() {
        let path = entry.path();
        let Some(class) = std::fs::read_to_string(path.join("class"))
            .ok()
            .and_then(|c| hex(&c))
        else {
            continue;
        };
        if !matches!(class >> 16, 0x03 | 0x05 | 0x12) {
            continue;
        }
        found += 1;
        let Ok(resource) = std::fs::read_to_string(path.join("resource")) else {
            continue;
        };
        for line in resource.lines().take(6) {
            let f: Vec<u64> = line.split_whitespace().filter_map(hex).collect();
            if let [start, end, flags] = f[..] {
                if flags & 0x200 != 0 && start == 0 && end > start {
                    unassigned += 1;
                }
            }
        }
    }
    (found, unassigned)
}

#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const u8) -> c_int {
    let conf = std::fs::read_to_string("/etc/gpu-preflight.conf").unwrap_or_default();
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if conf.lines().any(|l| l.trim() == "mode=off")
        || cmdline.split_whitespace().any(|w| w == "gpu_preflight.mode=off")
    {
        return 0;
    }
    // SAFETY: no threads; the child only reads files, writes and exits.
    let pid = unsafe { fork() };
    if pid == 0 {
        let (found, unassigned) = scan(&std::env::var("VO_ROOT").unwrap_or_default());
        let record = format!(
            "<6>gpu-preflight-verdict-only: verdict={} found={found} unassigned={unassigned}\n",
            if unassigned == 0 { "ok" } else { "fail" }
        );
        match std::fs::OpenOptions::new().write(true).open("/dev/kmsg") {
            Ok(mut kmsg) => drop(kmsg.write_all(record.as_bytes())),
            Err(_) => drop(std::io::stderr().write_all(record.as_bytes())),
        }
        // SAFETY: ends the child without running the parent's exit path.
        unsafe { _exit(0) }
    }
    // SAFETY: plain system calls on the child just forked.
    unsafe {
        let fd = syscall(SYS_PIDFD_OPEN, pid, 0) as c_int;
        let mut p = PollFd {
            fd,
            events: POLLIN,
            revents: 0,
        };
        poll(&mut p, 1, 3000);
        let mut status = 0;
        waitpid(pid, &mut status, WNOHANG);
    }
    0
}
