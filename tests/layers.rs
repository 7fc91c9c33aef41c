//! The source tree's layers: a top-level module of `src/` may use only the
//! modules listed before it, so the pipeline reads top to bottom and there
//! is no import cycle between them (and `decide` and `report` use no
//! `read`); inside a folder, no module uses another in a circle, and
//! `src/decide/` keeps an order of its own. Run it alone with
//! `cargo test --test layers -- --nocapture` to see the graphs.

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
    // A child process and a parent that abandons it (the boot step's).
    "deadline",
    "commands",
    "cli",
    // The fuzz targets' entry points (fuzz/), which nothing uses.
    "fuzz",
];

/// Uses the order allows and the pipeline does not: deciding and
/// reporting work on values (the evidence `read` gathered), never on the
/// machine itself.
const NOT_BELOW: &[(&str, &str)] = &[("decide", "read"), ("report", "read")];

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
            if NOT_BELOW.contains(&(*layer, d.as_str())) {
                wrong.push(format!(
                    "{layer} uses {d}: it works on values, not the machine"
                ));
                continue;
            }
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
    let mut code = code_only(text);
    for r in test_items(&code) {
        let kept: String = code[r.clone()]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(r, &kept);
    }
    code
}

/// `text` with comments, string and character literals blanked, newlines
/// kept.
fn code_only(text: &str) -> String {
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
    String::from_utf8_lossy(&out).into_owned()
}

/// Where each `#[cfg(test)]` item of `code` (comments and literals
/// blanked) lies: from the attribute to its `;` or its matching brace.
fn test_items(code: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|i| from + i) {
        let mut j = at + "#[cfg(test)]".len();
        while j < bytes.len() && bytes[j] != b';' && bytes[j] != b'{' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'{' {
            j = matching_brace(bytes, j);
        }
        let end = (j + 1).min(code.len());
        out.push(at..end);
        from = end;
    }
    out
}

/// The `}` that closes the `{` at `open` in `code` (comments and literals
/// blanked), or the last byte.
fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (j, c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return j;
        }
    }
    code.len().saturating_sub(1)
}

/// Every file access of the program is in the few places that read or
/// write the machine: `read/` (below one root), `remediate/` and
/// `atomic_file` (boot configuration), the boot and publish steps (and
/// `deadline`, whose nix calls are about processes), and
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
        // Processes and signals through nix, no file.
        "deadline.rs",
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

/// The files of `src/decide/`, bottom to top: each may use only those
/// before it. The hint vocabulary (`hint`) and its syntax (`syntax`) sit
/// under everything that builds hints, so `space`, `fallback` and `hints`
/// use them and not one another's in a circle.
const DECIDE: &[&str] = &[
    "sizing",
    "passthrough",
    "host",
    "room",
    "diagnosis",
    "hint",
    "syntax",
    "window",
    "summary",
    "predict",
    "prescribe",
    "origin",
    "space",
    "fallback",
    "hints",
    "p2p",
    "decision",
];

/// A module: its path below `crate` and the folder or file it is.
struct Module {
    path: Vec<String>,
    file: PathBuf,
}

/// Every module under `dir` (whose module path is `path`): its files but
/// `mod.rs` and `tests.rs` (the folder itself, and test code), and its
/// folders, each with its own modules.
fn modules(dir: &Path, path: &[String], out: &mut Vec<Module>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        let mut sub = path.to_vec();
        sub.push(stem.clone());
        if p.is_dir() {
            out.push(Module {
                path: sub.clone(),
                file: p.join("mod.rs"),
            });
            modules(&p, &sub, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !["mod", "tests", "lib", "main"].contains(&stem.as_str())
        {
            out.push(Module { path: sub, file: p });
        }
    }
}

/// `text` without test code: each `#[cfg(test)]` item (a `use`, a
/// `const`, a `mod tests { ... }`).
fn production(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        let semi = rest.find(';').unwrap_or(rest.len());
        let brace = rest.find('{').unwrap_or(rest.len());
        rest = if semi < brace {
            &rest[semi + 1..]
        } else {
            &rest[block_end(rest, brace)..]
        };
    }
    out.push_str(rest);
    out
}

/// Where the block that opens at `open` ends, strings and comments
/// skipped (a `{` in a format string is no block).
fn block_end(s: &str, open: usize) -> usize {
    let b = s.as_bytes();
    let (mut depth, mut i) = (0usize, open);
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = s[i..].find('\n').map_or(b.len(), |n| i + n);
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'r' if b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"') => {
                let hashes = s[i + 1..].bytes().take_while(|c| *c == b'#').count();
                let close = format!("\"{}", "#".repeat(hashes));
                let from = i + 2 + hashes;
                i = s[from..]
                    .find(&close)
                    .map_or(b.len(), |n| from + n + close.len() - 1);
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

fn ident(s: &str) -> &str {
    let n = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '*'))
        .map_or(s.len(), |(i, _)| i);
    &s[..n]
}

/// The paths of one use tree (or plain path) in `s`, each appended to
/// `prefix`: `a::{b, c::d as e}` gives `a::b` and `a::c::d`.
fn use_tree(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        let end = block_end(s, 0) - 1;
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in group[..end - 1].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_tree(&group[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        use_tree(&group[start..end - 1], prefix, out);
        return;
    }
    let name = ident(s);
    if name.is_empty() {
        return;
    }
    let mut path = prefix.to_vec();
    path.push(name.to_string());
    match s[name.len()..].trim_start().strip_prefix("::") {
        Some(more) => use_tree(more, &path, out),
        None => out.push(path),
    }
}

/// Every path `text` names from `crate::`, `super::` or `self::`,
/// resolved against `module`, the path of the module the text is.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("::") {
        let head_start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let head = &text[head_start..at];
        // Only the first `::` of a path: `super::super::x` once.
        if text[..head_start].ends_with("::") {
            continue;
        }
        let mut base: Vec<String> = match head {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        let mut rest = &text[at + 2..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        use_tree(rest, &base, &mut out);
    }
    out
}

/// The items a folder's `mod.rs` re-exports, by the child that has them
/// (`pub(crate) use text::from_text;`): a sibling that names one through
/// `super::` uses that child.
fn reexports(mod_rs: &str, children: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in mod_rs.split(';') {
        let Some(at) = stmt.find("use ") else {
            continue;
        };
        let mut paths = Vec::new();
        use_tree(&stmt[at + 4..], &[], &mut paths);
        for p in paths {
            let p: Vec<String> = p.into_iter().filter(|s| s != "self").collect();
            if p.len() >= 2 && children.contains(&p[0]) {
                out.insert(p[p.len() - 1].clone(), p[0].clone());
            }
        }
    }
    out
}

/// For each folder of `src/` (`""` for `src/` itself), its child modules
/// and which of them each uses, test code left out.
fn sibling_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    modules(&src, &[], &mut all);
    let mut folders: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    folders.insert(Vec::new(), Vec::new());
    for m in &all {
        let (name, parent) = m.path.split_last().unwrap();
        folders
            .entry(parent.to_vec())
            .or_default()
            .push(name.clone());
        if m.file.ends_with("mod.rs") {
            folders.entry(m.path.clone()).or_default();
        }
    }
    let mut graphs = BTreeMap::new();
    for (folder, children) in &folders {
        let root = if folder.is_empty() {
            src.join("lib.rs")
        } else {
            src.join(folder.join("/")).join("mod.rs")
        };
        let root = std::fs::read_to_string(root).unwrap();
        let again = reexports(&production(&root), children);
        let mut graph: BTreeMap<String, BTreeSet<String>> = children
            .iter()
            .map(|c| (c.clone(), BTreeSet::new()))
            .collect();
        for m in all
            .iter()
            .filter(|m| m.path.starts_with(folder) && m.path.len() > folder.len())
        {
            let node = &m.path[folder.len()];
            let text = production(&std::fs::read_to_string(&m.file).unwrap());
            // The module the text is: a folder's mod.rs is the folder.
            for p in named_paths(&text, &m.path) {
                if !p.starts_with(folder) || p.len() <= folder.len() {
                    continue;
                }
                let name = &p[folder.len()];
                let used = if children.contains(name) {
                    name.clone()
                } else if let Some(c) = again.get(name) {
                    c.clone()
                } else {
                    continue;
                };
                if used != *node {
                    graph.get_mut(node).unwrap().insert(used);
                }
            }
        }
        graphs.insert(folder.join("/"), graph);
    }
    graphs
}

/// A cycle in `graph`, as the modules on it, the first repeated last.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut c = stack[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in &graph[n] {
            if let Some(c) = visit(m, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn no_folder_has_an_import_cycle_among_its_modules() {
    let mut cycles = Vec::new();
    for (folder, graph) in sibling_graphs() {
        for (n, uses) in &graph {
            if !uses.is_empty() {
                let uses: Vec<&str> = uses.iter().map(String::as_str).collect();
                println!("src/{folder}: {n} -> {}", uses.join(" "));
            }
        }
        if let Some(c) = cycle(&graph) {
            cycles.push(format!("src/{folder}: {}", c.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn each_decide_module_uses_only_those_before_it() {
    let graphs = sibling_graphs();
    let decide = &graphs["decide"];
    let mut listed: Vec<&str> = DECIDE.to_vec();
    listed.sort();
    let found: Vec<&str> = decide.keys().map(String::as_str).collect();
    assert_eq!(found, listed, "src/decide/ and DECIDE list other modules");
    let mut wrong = Vec::new();
    for (i, n) in DECIDE.iter().enumerate() {
        for u in &decide[*n] {
            if DECIDE.iter().position(|d| d == u) >= Some(i) {
                wrong.push(format!("decide::{n} uses decide::{u}, listed after it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The longest production file and function allowed, in lines.
const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 150;

/// Functions allowed to be longer, by file and name: the firmware models
/// that follow upstream's C step by step, so each step can be read beside
/// the source it cites.
const LONG_FNS: &[(&str, &str)] = &[
    ("decide/window/seabios.rs", "boot"),
    ("decide/window/ovmf.rs", "boot"),
];

/// How many lines of `text` are production code: every line (comments and
/// blank lines too) but those of `#[cfg(test)]` items.
fn production_lines(text: &str) -> usize {
    let tests = test_items(&code_only(text));
    let in_test = |at: usize| tests.iter().any(|r| r.contains(&at));
    let mut n = 0;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let first = body.find(|c: char| !c.is_whitespace());
        // A line is test code when it starts in a test item (its first
        // character, or for a blank line its start).
        if !in_test(start + first.unwrap_or(0)) {
            n += 1;
        }
        start += line.len();
    }
    n
}

/// Each function of `code` (production code, as `production_code` gives
/// it) with a body: its name, the line its `fn` is on (from 1), and how
/// many lines it spans to its closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` outside the signature's
        // parentheses; a `;` first is a declaration without one.
        let mut depth = 0i32;
        let mut j = at;
        while j < b.len() {
            match b[j] {
                b'(' | b'[' | b'<' => depth += 1,
                b')' | b']' => depth -= 1,
                b'>' if j > 0 && b[j - 1] != b'-' && b[j - 1] != b'=' => depth -= 1,
                b'{' | b';' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        if j >= b.len() || b[j] == b';' {
            continue;
        }
        let end = matching_brace(b, j);
        out.push((name, line_of(at), line_of(end) - line_of(at) + 1));
    }
    out
}

/// No production file of `src/` is over 500 lines (its `#[cfg(test)]`
/// items, `tests.rs` and `tests/` left out) and no function over 150,
/// but the firmware models' `boot`: a longer one splits where its own
/// steps are, a longer file where its parts are.
#[test]
fn files_and_functions_stay_small() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut sizes = Vec::new();
    let mut longest = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("tests.rs") || rel.contains("tests/") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let lines = production_lines(&text);
        sizes.push((lines, rel.clone()));
        if lines > MAX_FILE_LINES {
            wrong.push(format!(
                "src/{rel}: {lines} production lines (at most {MAX_FILE_LINES})"
            ));
        }
        for (name, at, n) in functions(&production_code(&text)) {
            longest.push((n, format!("src/{rel}:{at}: fn {name}")));
            if n > MAX_FN_LINES && !LONG_FNS.contains(&(rel.as_str(), name.as_str())) {
                wrong.push(format!(
                    "src/{rel}:{at}: fn {name} is {n} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    sizes.sort();
    for (n, rel) in sizes.iter().rev().take(5) {
        println!("{n:5} src/{rel}");
    }
    longest.sort();
    for (n, f) in longest.iter().rev().take(5) {
        println!("{n:5} {f}");
    }
    assert!(wrong.is_empty(), "too long:\n{}", wrong.join("\n"));
}

#[test]
fn the_size_rules_count_what_they_say() {
    let text = "/// A doc line.\nfn short() {\n    let s = \"{\";\n}\n\n#[cfg(test)]\nmod tests {\n    fn long() {\n    }\n}\n";
    // Five production lines: the test module's five are left out.
    assert_eq!(production_lines(text), 5);
    let code = production_code(text);
    assert_eq!(functions(&code), [("short".to_string(), 2, 3)]);
    // A declaration has no body; a fn pointer type no name.
    let decl = "trait T {\n    fn leaf(&self) -> [u32; 4];\n    fn f(&self, g: fn(u8) -> u8) -> Vec<u8> {\n        vec![g(1)]\n    }\n}\n";
    assert_eq!(functions(&production_code(decl)), [("f".to_string(), 3, 3)]);
}
