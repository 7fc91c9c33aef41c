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
