//! The Prometheus form of every fixture's report, read by a strict reader
//! of the text exposition format (Prometheus's exposition_formats.md):
//! `# HELP` and `# TYPE` once per family and before its samples, a family's
//! samples together, names and label names of the allowed characters,
//! label values quoted with `\\`, `\"` and `\n` the only escapes, each
//! series once, every value a number. And the configuration's series: a
//! VM's window too small says its GPUs are present but unplaced, with the
//! setting; a healthy guest says 0.

pub mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use support::bin;

fn name_ok(n: &str, colon: bool) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || (colon && f == ':'))
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || (colon && x == ':'))
}

/// `{a="x",b="y"}` into its pairs; `Err` where it is not that.
fn labels(mut t: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    t = t.strip_prefix('{').ok_or("no {")?;
    loop {
        if let Some(rest) = t.strip_prefix('}') {
            return if rest.is_empty() {
                Ok(out)
            } else {
                Err(format!("text after }}: {rest}"))
            };
        }
        let eq = t.find("=\"").ok_or("no =\"")?;
        let name = &t[..eq];
        if !name_ok(name, false) || name.starts_with("__") {
            return Err(format!("label name {name:?}"));
        }
        t = &t[eq + 2..];
        let mut value = String::new();
        let mut chars = t.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().ok_or("lone \\")?.1 {
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    'n' => value.push('\n'),
                    c => return Err(format!("escape \\{c}")),
                },
                (_, '\n') => return Err("newline in a value".into()),
                (_, c) => value.push(c),
            }
        };
        out.push((name.to_string(), value));
        t = &t[end + 1..];
        t = t.strip_prefix(',').unwrap_or(t);
    }
}

/// Every sample, `name{labels}` to value; panics naming the line where the
/// text breaks the format.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = BTreeSet::new();
    let mut done = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut samples = BTreeMap::new();
    assert!(text.ends_with('\n'), "no final newline");
    for (i, line) in text.lines().enumerate() {
        let at = format!("line {}: {line}", i + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            let mut w = rest.splitn(3, ' ');
            let (kw, name, tail) = (w.next(), w.next().unwrap_or(""), w.next());
            assert!(name_ok(name, true), "{at}");
            match kw {
                Some("HELP") => {
                    assert!(helped.insert(name.to_string()), "HELP twice, {at}");
                    assert!(tail.is_some_and(|t| !t.is_empty()), "{at}");
                }
                Some("TYPE") => {
                    let t = tail.unwrap_or("");
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&t),
                        "{at}"
                    );
                    assert!(
                        typed.insert(name.to_string(), t.to_string()).is_none(),
                        "TYPE twice, {at}"
                    );
                    assert!(!done.contains(name), "TYPE after its samples, {at}");
                }
                _ => panic!("unknown comment, {at}"),
            }
            continue;
        }
        assert!(!line.trim().is_empty(), "blank line, {at}");
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{at}"));
        let v: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|e| panic!("value ({e}), {at}")),
        };
        let (name, lab) = match series.find('{') {
            Some(b) => (
                &series[..b],
                labels(&series[b..]).unwrap_or_else(|e| panic!("{e}, {at}")),
            ),
            None => (series, Vec::new()),
        };
        assert!(name_ok(name, true), "{at}");
        assert_eq!(typed.get(name).map(String::as_str), Some("gauge"), "{at}");
        assert!(helped.contains(name), "no HELP, {at}");
        if current.as_deref() != Some(name) {
            if let Some(prev) = current.replace(name.to_string()) {
                done.insert(prev);
            }
            assert!(!done.contains(name), "family split, {at}");
        }
        let mut names: Vec<&str> = lab.iter().map(|(n, _)| n.as_str()).collect();
        let before = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), before, "a label twice, {at}");
        let key = format!("{name}{lab:?}");
        assert!(samples.insert(key, v).is_none(), "series twice, {at}");
    }
    samples
}

fn prometheus(fixture: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let scenario = std::fs::read_to_string(dir.join("scenario.txt")).unwrap();
    let args: Vec<&str> = scenario
        .lines()
        .find_map(|l| l.strip_prefix("check args: "))
        .unwrap()
        .split_whitespace()
        .collect();
    let o = Command::new(bin())
        .arg("check")
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--dmesg")
        .arg(dir.join("dmesg.txt"))
        .args(args)
        .args(["--format", "prometheus"])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn every_fixtures_metrics_parse_strictly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut n = 0;
    for e in std::fs::read_dir(&root).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !root.join(&name).join("scenario.txt").is_file() {
            continue;
        }
        let text = prometheus(&name);
        let s = parse(&text);
        assert!(s.contains_key("gpu_preflight_ok[]"), "{name}");
        n += 1;
    }
    assert!(n >= 20, "{n} fixtures");
}

#[test]
fn the_reader_refuses_what_breaks_the_format() {
    let ok = "# HELP a_b x\n# TYPE a_b gauge\na_b{c=\"d\\\"e\"} 1\n";
    assert_eq!(parse(ok).len(), 1);
    for bad in [
        "a_b 1\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{c=\"d\\x\"} 1\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{c=\"d\"} one\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b 1\na_b 2\n",
        "# HELP a_b x\n# TYPE a_b gauge\n# HELP c x\n# TYPE c gauge\na_b 1\nc 1\na_b{x=\"1\"} 2\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{1c=\"d\"} 1\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b 1",
    ] {
        let r = std::panic::catch_unwind(|| parse(bad));
        assert!(r.is_err(), "accepted: {bad:?}");
    }
}

#[test]
fn a_vms_unplaced_gpus_are_configuration_not_hardware() {
    let s = parse(&prometheus("ovmf-8x32g"));
    let key = "gpu_preflight_gpus_unplaced_by_configuration[(\"reason\", \"vm_configuration\"), (\"setting\", \"cpu-pdpe1gb\")]";
    assert_eq!(s.get(key), Some(&5.0), "{s:#?}");
    let per_gpu: Vec<&String> = s
        .keys()
        .filter(|k| k.starts_with("gpu_preflight_gpu_unplaced_by_configuration["))
        .collect();
    assert_eq!(per_gpu.len(), 5);
    assert!(per_gpu[0].contains("\"0000:04:00.0\""), "{per_gpu:?}");
    // The same GPUs fail gpu_ok: the new series add, they do not replace.
    assert_eq!(s.get("gpu_preflight_unassigned_bars[]"), Some(&5.0));
    for healthy in ["h200-kvm-passthrough", "seabios-40bit-7x128g"] {
        let s = parse(&prometheus(healthy));
        assert_eq!(
            s.get("gpu_preflight_gpus_unplaced_by_configuration[]"),
            Some(&0.0),
            "{healthy}"
        );
    }
    // A GPU missing is not the configuration's.
    let s = parse(&prometheus("ovmf-7x32g-hole1t-expect8"));
    assert_eq!(
        s.get("gpu_preflight_gpus_unplaced_by_configuration[]"),
        Some(&0.0)
    );
}
