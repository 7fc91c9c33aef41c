//! Real kernel logs and lspci output from public bug reports
//! (tests/corpus/, each file's header says where from): `explain` must name
//! every endpoint whose memory BAR failed, and call the noise case and the
//! all-assigned case healthy.

pub mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn explain(file: &str, extra: &[&str]) -> (i32, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(file);
    let o = Command::new(support::bin())
        .arg("explain")
        .arg(&path)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let code = o.status.code().unwrap();
    // Exit 3, "nothing to explain", prints no report: no verdict, no
    // device, no hint (a paste of only a hypervisor's or a driver's words
    // that are not PCI's).
    if code == 3 && o.stdout.is_empty() {
        let v = serde_json::json!({
            "mode": "explain", "verdict": null, "diagnosis": null, "summary": "nothing to explain",
            "unassigned": [], "gpus": [], "hints": [],
        });
        return (code, v);
    }
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    (code, v)
}

fn named(v: &Value) -> BTreeSet<String> {
    v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["bdf"].as_str().unwrap().to_string())
        .collect()
}

/// The BAR numbers of `unassigned[]`, in order.
fn unassigned_bars(v: &Value) -> Vec<u64> {
    v["unassigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["bar"].as_u64().unwrap())
        .collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// One corpus file and what its header says `explain` must find:
/// `EXPECT-VERDICT`, `EXPECT-UNASSIGNED` (the devices named with an
/// unassigned memory BAR), `EXPECT-GPUS` (the devices taken for GPUs),
/// `KIND` (failing, healthy, noise) and `FORMS` (the wordings it holds).
struct Case {
    file: String,
    verdict: String,
    unassigned: BTreeSet<String>,
    gpus: BTreeSet<String>,
    kind: String,
    forms: Vec<String>,
    /// `EXPECT-HINT`: the hint id that is the thread's fix or a step
    /// toward it (`-`: none, or no id of ours is), with `HINT-MATCH`:
    /// whether `hints[0]` is it today. Files 56 on have both.
    hint: Option<(String, bool)>,
    /// `FIX-KIND`: what the thread established, in a word (a hint id,
    /// `none`, `other:...`); `-` where the header has none.
    fix_kind: String,
    /// `PLATFORM`: the platform the thread says the text comes from,
    /// given as `explain --platform` (files 136 on have it).
    platform: Option<String>,
    /// `MISS`: what `explain` gets wrong today (`verdict`, `devices`),
    /// held both ways like `HINT-MATCH`: a miss that starts matching must
    /// be struck from the header.
    miss: Vec<String>,
}

impl Case {
    /// `--platform` as the header gives it, or nothing.
    fn extra(&self) -> Vec<&str> {
        match &self.platform {
            Some(p) => vec!["--platform", p.as_str()],
            None => Vec::new(),
        }
    }
}

fn header(text: &str, key: &str) -> Option<String> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&format!("# {key}:")))
        .map(|v| v.trim().to_string())
}

fn devices(v: &str) -> BTreeSet<String> {
    v.split([' ', ','])
        .filter(|d| !d.is_empty() && *d != "-")
        .map(str::to_string)
        .collect()
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".txt"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let text =
                String::from_utf8_lossy(&std::fs::read(dir.join(&file)).unwrap()).into_owned();
            let get = |k| header(&text, k).unwrap_or_else(|| panic!("{file}: no {k} header"));
            Case {
                verdict: get("EXPECT-VERDICT"),
                unassigned: devices(&get("EXPECT-UNASSIGNED")),
                gpus: devices(&get("EXPECT-GPUS")),
                kind: get("KIND"),
                forms: get("FORMS")
                    .split(',')
                    .map(|f| f.trim().to_string())
                    .collect(),
                hint: header(&text, "EXPECT-HINT").map(|h| {
                    let m = header(&text, "HINT-MATCH")
                        .unwrap_or_else(|| panic!("{file}: EXPECT-HINT without HINT-MATCH"));
                    assert!(m == "yes" || m == "no", "{file}: HINT-MATCH {m}");
                    (h, m == "yes")
                }),
                fix_kind: header(&text, "FIX-KIND").unwrap_or_else(|| "-".into()),
                platform: header(&text, "PLATFORM"),
                miss: header(&text, "MISS")
                    .map(|m| {
                        m.split(',')
                            .map(|w| w.trim().to_string())
                            .filter(|w| !w.is_empty())
                            .collect()
                    })
                    .unwrap_or_default(),
                file,
            }
        })
        .collect()
}

fn gpus(v: &Value) -> BTreeSet<String> {
    v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["bdf"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_corpus_file_gets_its_verdict_and_names_its_devices() {
    let mut failures = Vec::new();
    println!(
        "{:<62} {:<8} {:<8} {:<18} unassigned / gpus",
        "file", "kind", "verdict", "diagnosis"
    );
    for c in cases() {
        let (code, v) = explain(&c.file, &c.extra());
        println!(
            "{:<62} {:<8} {:<8} {:<18} {:?} / {:?}",
            c.file,
            c.kind,
            v["verdict"].as_str().unwrap_or("-"),
            v["diagnosis"].as_str().unwrap_or("-"),
            named(&v),
            gpus(&v)
        );
        let want_code = if c.verdict == "ok" { 0 } else { 1 };
        let verdict_right = v["verdict"] == c.verdict.as_str() && code == want_code;
        if verdict_right == c.miss.iter().any(|m| m == "verdict") {
            failures.push(format!(
                "{}: verdict {} (exit {code}), want {} (MISS {:?}): {}",
                c.file, v["verdict"], c.verdict, c.miss, v["summary"]
            ));
        }
        let devices_right = named(&v) == c.unassigned && gpus(&v) == c.gpus;
        if devices_right == c.miss.iter().any(|m| m == "devices") {
            failures.push(format!(
                "{}: unassigned {:?}, want {:?}; gpus {:?}, want {:?} (MISS {:?})",
                c.file,
                named(&v),
                c.unassigned,
                gpus(&v),
                c.gpus,
                c.miss
            ));
        }
        assert_eq!(v["mode"], "explain");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The first hint of every file that records the thread's fix: the table
/// (file, thread's fix, first hint, match), held to `HINT-MATCH` both ways
/// (a miss that starts matching must be marked so), and no healthy or
/// noise paste gets a hint but the ones whose header says so (`MISS:
/// hint`, held both ways too).
#[test]
fn the_first_hint_is_the_threads_fix_where_the_header_says_so() {
    let mut failures = Vec::new();
    let (mut failing, mut matched) = (0, 0);
    println!(
        "{:<72} {:<28} {:<26} {:<26} match",
        "file", "thread's fix (FIX-KIND)", "EXPECT-HINT", "first hint"
    );
    for c in cases() {
        let Some((want, matches)) = &c.hint else {
            // A healthy or noise paste without the header is held too: no
            // hint, unless `MISS: hint` says it gets one today.
            if c.kind != "failing" {
                let (_, v) = explain(&c.file, &c.extra());
                let first = v["hints"][0]["id"].as_str().unwrap_or("-");
                if (first != "-") != c.miss.iter().any(|m| m == "hint") {
                    failures.push(format!(
                        "{}: a {} paste got hint {first} (no EXPECT-HINT, MISS {:?})",
                        c.file, c.kind, c.miss
                    ));
                }
            }
            continue;
        };
        let (_, v) = explain(&c.file, &c.extra());
        let first = v["hints"][0]["id"].as_str().unwrap_or("-").to_string();
        let now = &first == want && want != "-";
        let shown = if c.kind == "failing" {
            now
        } else {
            first == "-"
        };
        println!(
            "{:<72} {:<28} {want:<26} {first:<26} {}",
            c.file,
            c.fix_kind,
            if shown { "yes" } else { "no" }
        );
        if c.kind == "failing" {
            failing += 1;
            matched += usize::from(now);
        } else {
            // A healthy or noise paste gets no hint (`HINT-MATCH: yes`);
            // one that does today says so (`MISS: hint`, `HINT-MATCH: no`).
            let hinted = first != "-";
            if hinted != c.miss.iter().any(|m| m == "hint") || hinted == *matches {
                failures.push(format!(
                    "{}: a {} paste got hint {first} (HINT-MATCH {}, MISS {:?})",
                    c.file,
                    c.kind,
                    if *matches { "yes" } else { "no" },
                    c.miss
                ));
            }
        }
        if c.kind == "failing" && now != *matches {
            failures.push(format!(
                "{}: first hint {first}, EXPECT-HINT {want}, HINT-MATCH {}",
                c.file,
                if *matches { "yes" } else { "no" }
            ));
        }
    }
    println!("first hint is the fix or a step toward it: {matched} of {failing} failing pastes");
    assert!(failing > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_corpus_covers_what_people_paste() {
    // The bar the corpus was built to: 30 logs, 10 healthy or noise-only,
    // 5 printed through a bound driver, 3 in old wordings, 3 lspci alone.
    let all = cases();
    let with = |form: &str| {
        all.iter()
            .filter(|c| c.forms.iter().any(|f| f == form))
            .count()
    };
    let healthy = all
        .iter()
        .filter(|c| c.kind == "healthy" || c.kind == "noise")
        .count();
    assert!(all.len() >= 30, "{}", all.len());
    assert!(healthy >= 10, "{healthy}");
    assert!(with("driver-prefixed") >= 5, "{}", with("driver-prefixed"));
    assert!(with("old-wording") >= 3, "{}", with("old-wording"));
    assert!(with("lspci-only") >= 3, "{}", with("lspci-only"));
    for c in &all {
        assert_eq!(c.kind == "failing", c.verdict == "fail", "{}", c.file);
    }
}

#[test]
fn a_device_named_only_by_its_ids_is_a_gpu_when_selected_by_vendor() {
    // Corpus 41: `lspci -t -nn` gives 10de:15f8, the Region fragment its
    // BARs; no class anywhere, so only a selector makes it a GPU.
    let (_, v) = explain(
        "41-kata-2432-p100-lspci-grep-unassigned.txt",
        &["--match", "10de:*"],
    );
    assert_eq!(gpus(&v), set(&["0000:01:01.0"]));
    assert_eq!(unassigned_bars(&v), [1, 3]);
}

#[test]
fn nvidia_region_numbers_become_bars_that_exist() {
    // NVRM counts memory regions: its BAR1 is PCI BAR 1, its BAR0 BAR 0;
    // never a BAR 2, which is the upper half of BAR 1.
    for (file, bar) in [
        ("02-lxd-14381-4gpu-ovmf-bar0-0M.txt", 0),
        ("22-ubuntu-9400gt-karmic-nvrm-nodomain.txt", 1),
        ("24-kubevirt-11093-m40-ovmf-bar0-0m.txt", 0),
        ("43-ubuntu-geforce7050-installer-log-nvrm.txt", 1),
    ] {
        let (_, v) = explain(file, &[]);
        for u in v["unassigned"].as_array().unwrap() {
            assert_eq!(u["bar"], bar, "{file}: {u}");
        }
    }
}

#[test]
fn a_driver_complaint_alone_does_not_blame_a_window() {
    let (_, v) = explain("45-gpu-operator-492-vmware-nvrm-two-gpus.txt", &[]);
    assert_eq!(v["diagnosis"], "unknown");
    let summary = v["summary"].as_str().unwrap();
    assert!(!summary.contains("32-bit window"), "{summary}");
    assert!(
        summary.contains("neither the BAR's type nor its size"),
        "{summary}"
    );
}

#[test]
fn the_positive_case_finds_its_gpu_with_its_bars() {
    let (_, v) = explain("19-positive-newformat-rtx5090-assigned.txt", &[]);
    assert_eq!(v["found"], 1);
    let g = &v["gpus"][0];
    assert_eq!(g["bdf"], "0000:84:00.0");
    assert_eq!(g["vendor"], "10de");
    let bar1 = g["bars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["index"] == 1)
        .unwrap();
    assert_eq!(bar1["start"], 0xe05c0000000u64);
    assert_eq!(bar1["size"], 256u64 << 20);
    assert_eq!(bar1["assigned"], true);
}

#[test]
fn the_kata_v100_is_a_gpu_with_its_16g_bar_sized_from_the_log() {
    let (_, v) = explain("05-kata-1704-v100-bar1-no-space.txt", &["--expect", "1"]);
    assert_eq!(v["found"], 1);
    let un = v["unassigned"].as_array().unwrap();
    let bar1 = un.iter().find(|u| u["bar"] == 1).unwrap();
    assert_eq!(bar1["size"], 16u64 << 30);
}

#[test]
fn the_whole_corpus_read_as_one_file_still_names_every_failure() {
    // Several reports pasted into one file: the union of the failures.
    // Device addresses repeat across reports and the last word on a BAR
    // wins, so only failing devices no healthy report mentions are checked,
    // and only of reports whose devices `explain` names today (no `MISS:
    // devices`).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let all = cases();
    let files: Vec<_> = all.iter().map(|c| dir.join(&c.file)).collect();
    let o = Command::new(support::bin())
        .arg("explain")
        .args(&files)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let healthy_text: String = all
        .iter()
        .filter(|c| c.verdict == "ok")
        .map(|c| std::fs::read_to_string(dir.join(&c.file)).unwrap_or_default())
        .collect();
    let want: BTreeSet<String> = all
        .iter()
        .filter(|c| !c.miss.iter().any(|m| m == "devices"))
        .flat_map(|c| c.unassigned.iter().cloned())
        .filter(|d| !healthy_text.contains(&d[5..]))
        .collect();
    assert!(want.len() >= 12, "{want:?}");
    let got = named(&v);
    assert!(
        want.is_subset(&got),
        "missing {:?}",
        want.difference(&got).collect::<Vec<_>>()
    );
}

#[test]
fn lspci_v_alone_identifies_the_gpu_and_its_unnumbered_bars() {
    // Plain `lspci -v` prints no region numbers and no ids: the class and
    // vendor come from names, BAR numbers from counting 64-bit pairs.
    let (_, v) = explain("14-mbp2016-tb3-egpu-unassigned.txt", &[]);
    assert_eq!(v["found"], 1);
    assert_eq!(v["gpus"][0]["vendor"], "10de");
    assert_eq!(v["gpus"][0]["device"], "1b80");
    assert_eq!(unassigned_bars(&v), [1, 3]);
    assert_eq!(v["diagnosis"], "unknown");
}

#[test]
fn a_bar_of_unknown_type_is_not_printed_as_32_bit() {
    // Corpus 02: NVRM's `BAR0 is 0M` says neither width nor prefetch.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/02-lxd-14381-4gpu-ovmf-bar0-0M.txt");
    let o = Command::new(support::bin())
        .arg("explain")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("BAR 0 mem (type unknown)"), "{text}");
    assert!(!text.contains("32-bit"), "{text}");
    assert!(
        // The opening lines have the next step (or, where the text does
        // not show the platform, the step on each likely one), before
        // the GPUs.
        text.lines()
            .take_while(|l| !l.starts_with("  0000:"))
            .any(|l| l.starts_with("next step: ") || l.starts_with("platform:  not shown")),
        "{text}"
    );
}

#[test]
fn the_whole_paste_of_corpus_105s_post_names_the_boards_window() {
    // Corpus 135, the same post as 105 with nothing cut: four host bridges,
    // one domain each, 256 MiB apiece. Only the GPU's domain's window
    // counts (not the 1 GiB of all four), which the GPU's 258 MiB do not
    // fit; a PowerPC board has no "Above 4G Decoding" to turn on.
    let (code, v) = explain(
        "135-amdgfx-t1042-ppc-e9171-text-part-lspci-v-and-pci-dmesg-quoted.txt",
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(v["diagnosis"], "window_too_small");
    assert_eq!(v["capacity"]["window_bytes"], 256u64 << 20);
    assert!(v["capacity"]["needed_bytes"].as_u64().unwrap() > 256 << 20);
    assert_eq!(v["firmware"]["platform"], "bare_metal");
    let ids: Vec<&str> = v["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["platform-window-too-small", "guest-pci-realloc"]);
}

/// A page or a form that drops a log's line breaks runs its records
/// together on one line (corpus 339, 350 hold such text). Every failing
/// paste whose lines are all dmesg or syslog records reads the same with
/// its breaks lost: the same verdict, the same unassigned devices.
#[test]
fn a_log_whose_line_breaks_were_lost_reads_the_same() {
    let stamped = |l: &str| {
        let t = l.trim_start();
        let dmesg = t
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .is_some_and(|(s, _)| {
                s.trim().split_once('.').is_some_and(|(a, b)| {
                    !a.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
                })
            });
        let syslog = t.split(' ').filter(|w| !w.is_empty()).nth(4) == Some("kernel:");
        dmesg || syslog
    };
    let dir = tempfile::tempdir().unwrap();
    let mut read = 0;
    for c in cases() {
        if c.kind != "failing" || c.miss.iter().any(|m| m == "verdict") {
            continue;
        }
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/corpus")
                .join(&c.file),
        )
        .unwrap();
        let body: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        if body.len() < 2 || !body.iter().all(|l| stamped(l)) {
            continue;
        }
        let joined = dir.path().join(&c.file);
        std::fs::write(&joined, body.join(" ")).unwrap();
        let (_, whole) = explain(&c.file, &c.extra());
        let (code, one) = explain(joined.to_str().unwrap(), &c.extra());
        assert_eq!(
            (code, &one["verdict"]),
            (1, &whole["verdict"]),
            "{}",
            c.file
        );
        assert_eq!(named(&one), named(&whole), "{}", c.file);
        read += 1;
    }
    println!("{read} files read with their breaks lost");
    assert!(read >= 10, "only {read} files");
}
