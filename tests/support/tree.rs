//! Whole-tree snapshots: every entry below a root with its kind, mode and
//! content, to compare before and after a run. Shared with the unit tests
//! of `src/remediate` (which include this file by path): std only.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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
