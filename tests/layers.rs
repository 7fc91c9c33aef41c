//! The source tree's layers: a top-level module of `src/` may use only the
//! modules listed before it, so the pipeline reads top to bottom and there
//! is no import cycle between them. Run it alone with
//! `cargo test --test layers -- --nocapture` to see the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top, as `src/lib.rs` lists them.
const LAYERS: &[&str] = &[
    "model",
    "parse",
    "read",
    "evidence",
    "decide",
    "report",
    "atomic_file",
    "remediate",
    "commands",
    "cli",
    // The fuzz targets' entry points (fuzz/), which nothing uses.
    "fuzz",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `crate::NAME` references in `text` (comments included: a doc link to a
/// higher layer is a dependency in the reader's mind too).
fn references(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        assert!(
            !name.is_empty(),
            "a `crate::{{...}}` group: name modules one by one"
        );
        out.insert(name);
    }
    out
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for layer in LAYERS {
        let mut files = Vec::new();
        let dir = src.join(layer);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{layer}.rs")));
        }
        assert!(files.iter().all(|f| f.exists()), "{layer}: no source");
        let deps = graph.entry(layer).or_default();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            deps.extend(references(&text).into_iter().filter(|d| d != layer));
        }
    }
    // Every top-level module is placed in the order.
    let mut tops: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || stem != "lib" && stem != "main").then_some(stem)
        })
        .collect();
    tops.sort();
    for t in &tops {
        assert!(LAYERS.contains(&t.as_str()), "src/{t} is in no layer");
    }
    let mut wrong = Vec::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        let deps = &graph[layer];
        println!(
            "{layer} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(" ")
        );
        for d in deps {
            match LAYERS.iter().position(|l| l == d) {
                Some(j) if j < i => {}
                Some(_) => wrong.push(format!("{layer} uses {d}, a layer above it")),
                None => wrong.push(format!("{layer} uses crate::{d}, which is no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `text` with comments, string and character literals blanked (newlines
/// kept, so line numbers hold) and every `#[cfg(test)]` item removed: the
/// production code a reader of the source would run.
fn production_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|c| if *c == b'\n' { b'\n' } else { b' ' }))
    };
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter().position(|c| *c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            rest.windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |p| p + 2)
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|c| **c == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = 2 + hashes;
            rest[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| body + p + close.len())
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if rest[0] == b'\'' && rest.get(1) == Some(&b'\\') {
            rest[2..]
                .iter()
                .position(|c| *c == b'\'')
                .map_or(2, |p| p + 3)
        } else if rest[0] == b'\'' && rest.get(2) == Some(&b'\'') {
            3
        } else {
            0
        };
        if end > 0 {
            blank(&mut out, &rest[..end]);
            i += end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let mut code = String::from_utf8_lossy(&out).into_owned();
    // An item under `#[cfg(test)]` runs to its `;` or its matching brace.
    while let Some(at) = code.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let bytes = code.as_bytes();
        let mut j = after;
        while j < bytes.len() && bytes[j] != b';' && bytes[j] != b'{' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'{' {
            let mut depth = 0;
            while j < bytes.len() {
                match bytes[j] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                j += 1;
            }
        }
        let end = (j + 1).min(code.len());
        let kept: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &kept);
    }
    code
}

/// Every file access of the program is in the few places that read or
/// write the machine: `read/` (below one root), `remediate/` and
/// `atomic_file` (boot configuration), the boot and publish steps, and
/// the fuzz entry points. Elsewhere code works on values: parse, evidence
/// gathered through `read`, decisions, reports. `std::fs`, `nix`, the
/// file-opening calls and the `Path` methods that ask the file system are
/// looked for in production code (not tests, comments or strings).
#[test]
fn files_are_opened_only_where_the_machine_is_read_or_changed() {
    const ALLOWED: &[&str] = &[
        "read/",
        "remediate/",
        "atomic_file.rs",
        "commands/boot.rs",
        "commands/publish.rs",
        "fuzz/",
        "fuzz.rs",
    ];
    // Path segments, matched at the start of a word; methods, after a dot.
    const CALLS: &[&str] = &[
        "fs::",
        "nix::",
        "File::open",
        "File::create",
        "OpenOptions",
        "read_dir(",
        "read_to_string(",
        "read_link(",
        "symlink_metadata(",
        "canonicalize(",
    ];
    const METHODS: &[&str] = &[".exists()", ".is_dir()", ".is_file()", ".metadata()"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("tests.rs") || rel.contains("/tests/") {
            continue;
        }
        if ALLOWED.iter().any(|a| rel.starts_with(a) || rel == *a) {
            continue;
        }
        let code = production_code(&std::fs::read_to_string(f).unwrap());
        for (n, line) in code.lines().enumerate() {
            let word_start = |at: usize| {
                at == 0
                    || !line.as_bytes()[at - 1].is_ascii_alphanumeric()
                        && line.as_bytes()[at - 1] != b'_'
            };
            let hit = CALLS
                .iter()
                .find(|c| line.match_indices(**c).any(|(at, _)| word_start(at)));
            let hit = hit.or_else(|| METHODS.iter().find(|m| line.contains(**m)));
            if let Some(h) = hit {
                wrong.push(format!("src/{rel}:{}: {h} in `{}`", n + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "file access outside read/, remediate/, atomic_file, the boot and publish steps and fuzz:\n{}",
        wrong.join("\n")
    );
}
