//! What the integration tests share: the binary, the fixtures, copies of
//! captured system roots, whole-tree snapshots (`tree`) to prove a run
//! changed nothing (or exactly one thing), mounts for the read-only and
//! full filesystem cases, and synthetic sysfs trees (`gen_tree`).
//!
//! Each test file declares it as `pub mod support;`: its helpers are then
//! public items of that test crate, and one that a given test file does not
//! use is no dead code.

pub mod gen_tree;
pub mod tree;

pub use tree::{diff, snapshot};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A finished command's status and output, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gpu-preflight")
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A private copy of a fixture's `root/` (links kept, as sysfs has them).
pub fn copy_root(case: &str, into: &Path) {
    let src = fixture(case).join("root");
    let st = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(into)
        .status()
        .expect("cp");
    assert!(st.success(), "copying {}", src.display());
}

/// Writes `text` at `rel` below `root`, never outside it.
pub fn put(root: &Path, rel: &str, text: &str) {
    assert!(!rel.contains(".."));
    let p = root.join(rel.trim_start_matches('/'));
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A mount made for one test, undone when dropped (even on a failed assert).
pub struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// Runs `mount ARGS...` for `target`. `None` only when not root and not
/// in CI (the test then says it is skipped); under `CI` a test that cannot
/// mount fails rather than pass without testing; as root a failing mount
/// fails the test.
pub fn mount(args: &[&str], target: &Path) -> Option<Mount> {
    if !is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test mounts file systems and needs root; CI runs as root"
        );
        eprintln!("SKIPPED: mounting needs root (CI runs as root)");
        return None;
    }
    let st = Command::new("mount")
        .args(args)
        .arg(target)
        .status()
        .expect("mount");
    assert!(st.success(), "mount {args:?} {}", target.display());
    Some(Mount(target.to_path_buf()))
}

/// A read-only view of `dir` at `at`.
pub fn read_only_view(dir: &Path, at: &Path) -> Option<Mount> {
    let m = mount(&["--bind", dir.to_str().unwrap()], at)?;
    let st = Command::new("mount")
        .args(["-o", "remount,bind,ro"])
        .arg(at)
        .status()
        .expect("mount");
    assert!(st.success(), "remount {} read-only", at.display());
    Some(m)
}

/// Fills the filesystem holding `dir` until a write fails with ENOSPC.
pub fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = fs::File::create(dir.join(".filler")).unwrap();
    let chunk = vec![0u8; 4096];
    loop {
        if let Err(e) = f.write_all(&chunk).and_then(|()| f.sync_all()) {
            assert_eq!(e.raw_os_error(), Some(28), "filling {}: {e}", dir.display());
            break;
        }
    }
}
