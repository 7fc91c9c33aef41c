//! Fake system roots for the boot and remediate tests: copies of captured
//! fixtures, whole-tree snapshots to prove a run changed nothing (or exactly
//! one thing), and mounts for the read-only and full filesystem cases.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Every entry below `root` with its kind, mode and content (link target).
pub type Tree = BTreeMap<String, (char, u32, Vec<u8>)>;

pub fn snapshot(root: &Path) -> Tree {
    fn walk(base: &Path, dir: &Path, out: &mut Tree) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if m.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap();
                out.insert(rel, ('l', 0, t.into_os_string().into_encoded_bytes()));
            } else if m.is_dir() {
                out.insert(rel, ('d', m.mode() & 0o7777, Vec::new()));
                walk(base, &p, out);
            } else {
                out.insert(rel, ('f', m.mode() & 0o7777, fs::read(&p).unwrap()));
            }
        }
    }
    let mut t = Tree::new();
    walk(root, root, &mut t);
    t
}

/// Paths added, removed or changed between two snapshots.
pub fn diff(a: &Tree, b: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push(format!("-{k}")),
            Some(w) if w != v => out.push(format!("~{k}")),
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            out.push(format!("+{k}"));
        }
    }
    out
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

/// Runs `mount ARGS...` for `target`. `None` only when not root (the test
/// then says it is skipped); as root a failing mount fails the test.
pub fn mount(args: &[&str], target: &Path) -> Option<Mount> {
    if !is_root() {
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
