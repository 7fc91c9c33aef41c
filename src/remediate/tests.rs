//! Remediation against fake roots: a fake Debian (or Fedora, or
//! systemd-boot) tree, stand-in boot loader tools that record their calls,
//! and whole-tree snapshots to prove what changed.

use super::decide::{decide, Decision};
use super::detect::{detect, find_tool, Backend};
use super::grub_d::{header, FRAGMENT, FRAGMENT_TEXT};
use super::state::{load_state, State};
use super::*;
use crate::decide::diagnosis::DiagnosisKind;
use crate::decide::hint::{Change, Hint, HintId, Side};
use crate::evidence::system::{gather, SystemSource};
use crate::report::{Mode, Verdict};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../tests/support/tree.rs"]
mod tree;
use tree::{diff, snapshot};

/// The failing report of the captured OVMF 8 x 32G, 1 TiB hole boot:
/// `firmware_left_unassigned` with the realloc hint. Taken from the
/// fixture rather than built field by field so it stays a real report.
fn failing_report() -> Report {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ovmf-8x32g-hole1t");
    let g = gather(
        &SystemSource {
            root: Root::new(fx.join("root")),
            dmesg: Some(fx.join("dmesg.txt")),
            selectors: vec!["1af4:1110".parse().unwrap()],
            expect: Some(8),
            cmdline: None,
        },
        false,
    )
    .expect("fixture readable");
    let r = crate::report::build(
        std::time::Instant::now(),
        Mode::Check,
        &g.evidence,
        crate::decide::conclude(&g.evidence, None),
        g.warnings,
    );
    assert_eq!(r.diagnosis, DiagnosisKind::FirmwareLeftUnassigned);
    assert!(r.has_hint(HintId::GuestPciRealloc) && !r.realloc_active);
    r
}

fn with(mut r: Report, verdict: Verdict, realloc: bool, hints: &[HintId]) -> Report {
    r.verdict = verdict;
    r.realloc_active = realloc;
    r.hints = hints
        .iter()
        .map(|id| {
            Hint::new(
                *id,
                format!("do {id}"),
                Side::Host,
                None,
                Default::default(),
            )
        })
        .collect();
    r
}

/// `r` failing with the seed case's first step: 41 address bits on the
/// host and `pci=realloc` in the guest, one step of two parts; then
/// `rest`, hints without a change.
fn two_part_first(mut r: Report, diagnosis: DiagnosisKind, rest: &[HintId]) -> Report {
    r.verdict = Verdict::Fail;
    r.diagnosis = diagnosis;
    r.realloc_active = false;
    let mut first = Hint::new(
        HintId::CpuPhysBits,
        "give the vCPU 41 bits, with pci=realloc in the guest first".into(),
        Side::Host,
        Some(crate::decide::hint::Restart::Vm),
        Change {
            phys_bits_min: Some(41),
            kernel_cmdline_add: vec![PARAM.into()],
            ..Change::default()
        },
    );
    first.expect = Some(DiagnosisKind::Ok);
    first.boots_to_ok = Some(1);
    r.hints = vec![first];
    r.hints
        .extend(with(r.clone(), Verdict::Fail, false, rest).hints);
    r
}

/// The failing report of the captured OVMF 8 x 32G boot (the default
/// hole): `window_too_small`; its first hint is the host's pdpe1gb alone,
/// and a later one (the hole) carries pci=realloc as its guest part.
fn window_too_small_report() -> Report {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ovmf-8x32g");
    let g = gather(
        &SystemSource {
            root: Root::new(fx.join("root")),
            dmesg: Some(fx.join("dmesg.txt")),
            selectors: vec!["1af4:1110".parse().unwrap()],
            expect: Some(8),
            cmdline: None,
        },
        false,
    )
    .expect("fixture readable");
    crate::report::build(
        std::time::Instant::now(),
        Mode::Check,
        &g.evidence,
        crate::decide::conclude(&g.evidence, None),
        g.warnings,
    )
}

fn state(boot_id: Option<&str>) -> State {
    State {
        version: 1,
        backend: "grub.d".into(),
        parameter: PARAM.into(),
        kernel_release: None,
        boot_id: boot_id.map(String::from),
        timestamp: "2024-01-01T00:00:00Z".into(),
        diagnosis: "firmware_left_unassigned".into(),
        written: vec![FRAGMENT.into()],
        created_dirs: vec![],
        command: None,
        regenerated: true,
    }
}

#[test]
fn decision_table() {
    let base = failing_report();
    let hint = [HintId::GuestPciRealloc, HintId::QemuPciHole64Size];
    let host = [HintId::QemuPciHole64Size, HintId::OvmfMmio64Aperture];
    let (a, b) = (Some("boot-a"), Some("boot-b"));
    let cases: Vec<(Report, Option<State>, Option<&str>, Decision)> = vec![
        (
            with(base.clone(), Verdict::Ok, false, &[]),
            None,
            a,
            Decision::Healthy,
        ),
        (
            with(base.clone(), Verdict::Ok, false, &[]),
            Some(state(a)),
            a,
            Decision::Healthy,
        ),
        (
            with(base.clone(), Verdict::Fail, true, &host),
            None,
            a,
            Decision::ReallocDidNotHelp,
        ),
        // Realloc active wins over a record and over a stray hint.
        (
            with(base.clone(), Verdict::Fail, true, &hint),
            Some(state(a)),
            b,
            Decision::ReallocDidNotHelp,
        ),
        (
            with(base.clone(), Verdict::Fail, false, &host),
            None,
            a,
            Decision::HostSide,
        ),
        (
            with(base.clone(), Verdict::Fail, false, &[]),
            None,
            a,
            Decision::HostSide,
        ),
        (
            with(base.clone(), Verdict::Fail, false, &hint),
            None,
            a,
            Decision::Apply,
        ),
        (
            with(base.clone(), Verdict::Fail, false, &hint),
            Some(state(a)),
            a,
            Decision::AlreadyDone {
                state: Box::new(state(a)),
                same_boot: true,
            },
        ),
        (
            with(base.clone(), Verdict::Fail, false, &hint),
            Some(state(a)),
            b,
            Decision::AlreadyDone {
                state: Box::new(state(a)),
                same_boot: false,
            },
        ),
        // Without boot ids (a fixture root) a record counts as this boot's.
        (
            with(base.clone(), Verdict::Fail, false, &hint),
            Some(state(None)),
            b,
            Decision::AlreadyDone {
                state: Box::new(state(None)),
                same_boot: true,
            },
        ),
        (
            with(base.clone(), Verdict::Fail, false, &hint),
            Some(state(a)),
            None,
            Decision::AlreadyDone {
                state: Box::new(state(a)),
                same_boot: true,
            },
        ),
    ];
    for (i, (r, s, boot, want)) in cases.into_iter().enumerate() {
        assert_eq!(decide(&r, s, boot), want, "case {i}");
    }
}

#[test]
fn the_first_steps_guest_part_is_written_even_where_the_diagnosis_would_not_call_for_it() {
    let base = failing_report();
    let (a, b) = (Some("boot-a"), Some("boot-b"));
    // phys_bits_too_small, no guest-pci-realloc hint: the first step's
    // guest part is pci=realloc, so it is written.
    let seed = two_part_first(base.clone(), DiagnosisKind::PhysBitsTooSmall, &[]);
    assert!(!seed.has_hint(HintId::GuestPciRealloc));
    assert_eq!(decide(&seed, None, a), Decision::Apply);
    // Once, as any other: a record of this boot or an earlier one.
    assert_eq!(
        decide(&seed, Some(state(a)), a),
        Decision::AlreadyDone {
            state: Box::new(state(a)),
            same_boot: true
        }
    );
    assert_eq!(
        decide(&seed, Some(state(a)), b),
        Decision::AlreadyDone {
            state: Box::new(state(a)),
            same_boot: false
        }
    );
    // With realloc on and still failing, only the host can help.
    let mut on = seed.clone();
    on.realloc_active = true;
    assert_eq!(decide(&on, None, a), Decision::ReallocDidNotHelp);
    // Healthy: nothing.
    let mut ok = seed.clone();
    ok.verdict = Verdict::Ok;
    assert_eq!(decide(&ok, None, a), Decision::Healthy);
    // A host step first and the two-part one later: the first is the
    // step to take; realloc is not written.
    let mut later = with(base.clone(), Verdict::Fail, false, &[HintId::CpuPdpe1gb]);
    later.hints.extend(seed.hints.clone());
    assert_eq!(decide(&later, None, a), Decision::HostSide);
    // The same from a real report: OVMF 8 x 32G, pdpe1gb first, the hole
    // with realloc third.
    let real = window_too_small_report();
    assert_eq!(real.diagnosis, DiagnosisKind::WindowTooSmall);
    assert!(!real.hints[0].change.has_guest_part());
    assert!(real.hints.iter().any(|h| h.change.is_two_part()));
    assert_eq!(decide(&real, None, a), Decision::HostSide);
}

#[test]
fn a_two_part_first_step_writes_realloc_and_names_the_host_part_left() {
    let f = Fake::debian();
    let report = two_part_first(failing_report(), DiagnosisKind::PhysBitsTooSmall, &[]);
    let o = remediate(&f.ctx(false, false), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(
        fs::read_to_string(f.r().join(&FRAGMENT[1..])).unwrap(),
        FRAGMENT_TEXT
    );
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert_eq!(s.diagnosis, "phys_bits_too_small");
    let text = o.text();
    assert!(
        text.contains("the guest's part of [cpu-phys-bits]")
            && text.contains("stop the VM")
            && text.contains("hint [cpu-phys-bits] give the vCPU 41 bits"),
        "{text}"
    );
    // The realloc-only step has no host part to name.
    let f = Fake::debian();
    let o = remediate(&f.ctx(false, false), &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(!o.text().contains("host's part"), "{}", o.text());
}

/// A fake Debian root, a directory of stand-in tools for PATH and the
/// log those tools append their command lines to.
struct Fake {
    root: tempfile::TempDir,
    tools: tempfile::TempDir,
}

impl Fake {
    fn debian() -> Fake {
        let f = Fake {
            root: tempfile::tempdir().unwrap(),
            tools: tempfile::tempdir().unwrap(),
        };
        f.file("etc/default/grub", "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n", 0o644);
        f.file("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n", 0o444);
        f.file(
            "proc/sys/kernel/random/boot_id",
            "11111111-2222-3333-4444-555555555555\n",
            0o444,
        );
        // chroot stand-in: records, then runs the tool from the root
        // with the host's shell (the fake root has none).
        let log = f.log_path();
        f.tool(
            "chroot",
            &format!("echo \"chroot $*\" >> '{}'\nroot=$1; shift; tool=$1; shift\nexec \"$root$tool\" \"$@\"\n", log.display()),
        );
        f
    }

    fn r(&self) -> &Path {
        self.root.path()
    }

    fn log_path(&self) -> PathBuf {
        self.tools.path().join("calls.log")
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn file(&self, rel: &str, text: &str, mode: u32) {
        // Always below the fake root, whatever the caller wrote.
        let p = self.r().join(rel.trim_start_matches('/'));
        assert!(p.starts_with(self.r()) && !rel.contains(".."));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn tool(&self, name: &str, body: &str) {
        let p = self.tools.path().join(name);
        fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// update-grub inside the root: records its call and writes a
    /// grub.cfg from the defaults and fragments, as the real one does.
    /// Fails while `fail-update-grub` exists beside the log.
    fn update_grub(&self, name: &str, sys_dir: &str) {
        let r = self.r().display().to_string();
        let body = format!(
            "echo \"{name} $*\" >> '{log}'\n\
             [ -e '{fail}' ] && exit 1\n\
             GRUB_CMDLINE_LINUX_DEFAULT=\n\
             . '{r}/etc/default/grub'\n\
             for f in '{r}'/etc/default/grub.d/*.cfg; do [ -e \"$f\" ] && . \"$f\"; done\n\
             mkdir -p '{r}/boot/grub'\n\
             printf 'linux /vmlinuz ro %s %s\\n' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\" > '{r}/boot/grub/grub.cfg'\n",
            log = self.log_path().display(),
            fail = self.tools.path().join("fail-update-grub").display(),
        );
        self.file(
            &format!("{sys_dir}/{name}"),
            &format!("#!/bin/sh\n{body}"),
            0o755,
        );
    }

    fn ctx(&self, regenerate: bool, chroot: bool) -> Ctx {
        Ctx {
            root: Root::new(self.r()),
            dry_run: false,
            regenerate,
            chroot,
            path: self.tools.path().as_os_str().to_owned(),
        }
    }

    fn grub_cfg(&self) -> String {
        fs::read_to_string(self.r().join("boot/grub/grub.cfg")).unwrap_or_default()
    }
}

#[test]
fn fragment_is_valid_sh_and_appends_to_the_defaults() {
    let d = tempfile::tempdir().unwrap();
    let frag = d.path().join("99-gpu-preflight.cfg");
    fs::write(&frag, FRAGMENT_TEXT).unwrap();
    let st = Command::new("sh").arg("-n").arg(&frag).status().unwrap();
    assert!(st.success());
    for (defaults, want) in [
        (
            "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"",
            "quiet splash pci=realloc",
        ),
        ("GRUB_CMDLINE_LINUX_DEFAULT=\"\"", " pci=realloc"),
        ("GRUB_TIMEOUT=5", " pci=realloc"),
    ] {
        let grub = d.path().join("grub");
        fs::write(
            &grub,
            format!("{defaults}\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n"),
        )
        .unwrap();
        let out = Command::new("sh")
            .arg("-c")
            .arg("unset GRUB_CMDLINE_LINUX_DEFAULT; . \"$1\"; . \"$2\"; printf '%s|%s' \"$GRUB_CMDLINE_LINUX_DEFAULT\" \"$GRUB_CMDLINE_LINUX\"")
            .arg("sh")
            .arg(&grub)
            .arg(&frag)
            .output()
            .unwrap();
        // The recovery entries' variable is left alone.
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{want}|console=ttyS0")
        );
    }
    assert!(FRAGMENT_TEXT.starts_with(header()));
}

#[test]
fn backend_detection() {
    let f = Fake::debian();
    assert_eq!(detect(&f.ctx(true, false)), Backend::GrubD);
    // BLS entries with grubby in the root: grubby; without: manual.
    f.file(
        "boot/loader/entries/abc-6.1.conf",
        "title x\noptions root=/dev/sda1\n",
        0o644,
    );
    assert!(matches!(detect(&f.ctx(true, false)), Backend::Manual(_)));
    f.file("usr/sbin/grubby", "#!/bin/sh\n", 0o755);
    assert_eq!(
        detect(&f.ctx(true, false)),
        Backend::Grubby(PathBuf::from("/usr/sbin/grubby"))
    );
    // systemd-boot's loader.conf on the ESP wins.
    f.file("boot/efi/loader/loader.conf", "timeout 3\n", 0o644);
    assert_eq!(detect(&f.ctx(true, false)), Backend::SystemdBoot);

    let g = tempfile::tempdir().unwrap();
    let ctx = Ctx {
        root: Root::new(g.path()),
        dry_run: false,
        regenerate: true,
        chroot: false,
        path: OsString::new(),
    };
    assert!(matches!(detect(&ctx), Backend::Manual(_)));
    fs::create_dir_all(g.path().join("etc/kernel")).unwrap();
    fs::write(g.path().join("etc/kernel/cmdline"), "root=/dev/sda1 ro\n").unwrap();
    assert_eq!(detect(&ctx), Backend::SystemdBoot);
}

#[test]
fn tools_are_found_on_path_for_the_live_root() {
    let f = Fake::debian();
    f.tool("update-grub", "exit 0\n");
    let live = Ctx {
        root: Root::new("/"),
        ..f.ctx(true, false)
    };
    assert_eq!(
        find_tool(&live, "update-grub"),
        Some(f.tools.path().join("update-grub"))
    );
    assert_eq!(find_tool(&live, "no-such-tool-here"), None);
    // For another root, PATH is not that system's: look inside it.
    assert_eq!(find_tool(&f.ctx(true, false), "update-grub"), None);
}

#[test]
fn grubd_writes_once_and_undo_restores_the_tree() {
    let f = Fake::debian();
    let before = snapshot(f.r());
    let report = failing_report();

    let o = remediate(&f.ctx(false, false), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(
        fs::read_to_string(f.r().join(&FRAGMENT[1..])).unwrap(),
        FRAGMENT_TEXT
    );
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert_eq!(s.backend, "grub.d");
    assert_eq!(s.kernel_release.as_deref(), Some("6.1.0-57-amd64"));
    assert_eq!(
        s.boot_id.as_deref(),
        Some("11111111-2222-3333-4444-555555555555")
    );
    assert_eq!(s.written, vec![FRAGMENT.to_string()]);
    assert_eq!(
        s.created_dirs,
        vec![
            "/etc/default/grub.d",
            "/var",
            "/var/lib",
            "/var/lib/gpu-preflight"
        ]
    );
    assert!(!s.regenerated);
    assert!(f.calls().is_empty(), "no tool runs with --no-regenerate");

    // A second run changes no byte.
    let after_first = snapshot(f.r());
    let o = remediate(&f.ctx(false, false), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(o.text().contains("already added"), "{}", o.text());
    assert_eq!(snapshot(f.r()), after_first);

    let o = undo(&f.ctx(false, false));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(diff(&before, &snapshot(f.r())), Vec::<String>::new());
}

#[test]
fn grubd_regenerates_through_chroot_and_undo_regenerates_again() {
    let f = Fake::debian();
    f.update_grub("update-grub", "/usr/sbin");
    // The system as installed: a grub.cfg from its own defaults.
    Command::new(f.r().join("usr/sbin/update-grub"))
        .status()
        .unwrap();
    fs::remove_file(f.log_path()).unwrap();
    let original_cfg = f.grub_cfg();
    assert!(!original_cfg.contains("pci=realloc"));
    let before = snapshot(f.r());
    let report = failing_report();

    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    let root = f.r().display().to_string();
    assert_eq!(
        f.calls(),
        vec![
            format!("chroot {root} /usr/sbin/update-grub"),
            "update-grub ".to_string()
        ]
    );
    assert_eq!(
        f.grub_cfg(),
        "linux /vmlinuz ro console=ttyS0 quiet pci=realloc\n"
    );
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert!(s.regenerated);
    assert_eq!(
        s.command.as_ref().unwrap()[1..],
        [root.clone(), "/usr/sbin/update-grub".to_string()]
    );

    let after_first = snapshot(f.r());
    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(snapshot(f.r()), after_first, "second run changed the tree");
    assert_eq!(f.calls().len(), 2, "second run ran a tool");

    let o = undo(&f.ctx(true, true));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(f.calls().len(), 4);
    assert_eq!(f.grub_cfg(), original_cfg);
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn grub_mkconfig_is_the_fallback() {
    let f = Fake::debian();
    f.update_grub("grub-mkconfig", "/usr/sbin");
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(f.calls()[1], "grub-mkconfig -o /boot/grub/grub.cfg");
}

#[test]
fn no_tool_means_nothing_written() {
    let f = Fake::debian();
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(
        o.text().contains("neither update-grub nor grub-mkconfig"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn a_failed_update_grub_is_retried_by_the_next_run() {
    let f = Fake::debian();
    f.update_grub("update-grub", "/usr/sbin");
    fs::write(f.tools.path().join("fail-update-grub"), "").unwrap();
    let report = failing_report();
    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(o.text().contains("failed"), "{}", o.text());
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert!(!s.regenerated);
    assert!(f.r().join(&FRAGMENT[1..]).exists());

    fs::remove_file(f.tools.path().join("fail-update-grub")).unwrap();
    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(load_state(&Root::new(f.r())).unwrap().unwrap().regenerated);
    assert!(f.grub_cfg().contains("pci=realloc"));
    // Still one fragment, still one parameter.
    assert_eq!(f.grub_cfg().matches("pci=realloc").count(), 1);
}

#[test]
fn a_fragment_we_did_not_write_is_left_alone() {
    let f = Fake::debian();
    f.file(
        &FRAGMENT[1..],
        "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT mine\"\n",
        0o644,
    );
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(false, false), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(
        o.text().contains("not written by gpu-preflight"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
    let o = undo(&f.ctx(false, false));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn a_failure_after_the_fragment_takes_everything_back() {
    let f = Fake::debian();
    // /var is a dangling symlink: reading the record finds nothing, but
    // its directory cannot be made once the fragment is written.
    std::os::unix::fs::symlink("/nonexistent/gpu-preflight-test", f.r().join("var")).unwrap();
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(false, false), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(o.text().contains("nothing was changed"), "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn an_unreadable_record_stops_everything() {
    let f = Fake::debian();
    f.file("var/lib/gpu-preflight/remediate.json", "{ not json", 0o644);
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(false, false), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn realloc_active_and_still_failing_changes_nothing() {
    let f = Fake::debian();
    let before = snapshot(f.r());
    let r = with(
        failing_report(),
        Verdict::Fail,
        true,
        &[HintId::QemuPciHole64Size],
    );
    let o = remediate(&f.ctx(true, true), &r);
    assert_eq!(o.status, Status::NeedsHand);
    assert!(
        o.text()
            .contains("hint [qemu-pci-hole64-size] do qemu-pci-hole64-size"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
    assert!(f.calls().is_empty());
}

#[test]
fn a_record_from_an_earlier_boot_without_the_parameter_is_reported() {
    let f = Fake::debian();
    let report = failing_report();
    assert_eq!(
        remediate(&f.ctx(false, false), &report).status,
        Status::Done
    );
    f.file(
        "proc/sys/kernel/random/boot_id",
        "99999999-2222-3333-4444-555555555555\n",
        0o444,
    );
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(false, false), &report);
    assert_eq!(o.status, Status::NeedsHand, "{}", o.text());
    assert!(o.text().contains("does not carry it"), "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn dry_run_prints_the_change_and_touches_nothing() {
    let f = Fake::debian();
    f.update_grub("update-grub", "/usr/sbin");
    let before = snapshot(f.r());
    let ctx = Ctx {
        dry_run: true,
        ..f.ctx(true, true)
    };
    let o = remediate(&ctx, &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(
        o.text()
            .contains("GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} pci=realloc\""),
        "{}",
        o.text()
    );
    assert!(o.text().contains("would run: "), "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
    assert!(f.calls().is_empty());
}

#[test]
fn grubby_adds_once_and_removes_on_undo() {
    let f = Fake::debian();
    fs::remove_file(f.r().join("etc/default/grub")).unwrap();
    f.file(
        "boot/loader/entries/abc-6.1.0.conf",
        "title Fedora\noptions root=/dev/vda2 ro\n",
        0o644,
    );
    f.file(
        "usr/sbin/grubby",
        &format!(
            "#!/bin/sh\necho \"grubby $*\" >> '{}'\n",
            f.log_path().display()
        ),
        0o755,
    );
    let before = snapshot(f.r());
    let report = failing_report();
    let root = f.r().display().to_string();

    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(
        f.calls(),
        vec![
            format!("chroot {root} /usr/sbin/grubby --update-kernel=ALL --args=pci=realloc"),
            "grubby --update-kernel=ALL --args=pci=realloc".to_string(),
        ]
    );
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert_eq!((s.backend.as_str(), s.regenerated), ("grubby", true));

    let after_first = snapshot(f.r());
    assert_eq!(remediate(&f.ctx(true, true), &report).status, Status::Done);
    assert_eq!(snapshot(f.r()), after_first);
    assert_eq!(f.calls().len(), 2);

    let o = undo(&f.ctx(true, true));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(
        f.calls()[3],
        "grubby --update-kernel=ALL --remove-args=pci=realloc"
    );
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn a_failed_grubby_leaves_no_record() {
    let f = Fake::debian();
    f.file("boot/loader/entries/abc.conf", "options ro\n", 0o644);
    f.file("usr/sbin/grubby", "#!/bin/sh\nexit 1\n", 0o755);
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert_eq!(snapshot(f.r()), before);
}

#[test]
fn grubby_for_another_root_without_chroot_only_says_what_to_run() {
    let f = Fake::debian();
    f.file("boot/loader/entries/abc.conf", "options ro\n", 0o644);
    f.file("usr/sbin/grubby", "#!/bin/sh\nexit 0\n", 0o755);
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(true, false), &failing_report());
    assert_eq!(o.status, Status::NeedsHand, "{}", o.text());
    assert!(
        o.text()
            .contains("/usr/sbin/grubby --update-kernel=ALL --args=pci=realloc"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
}

/// A Debian system booted by systemd-boot: the ESP at /boot/efi, one
/// kernel with its entry as kernel-install 252 wrote it, and a stand-in
/// kernel-install that does what the real one does for us: writes the
/// entry from /etc/kernel/cmdline (90-loaderentry.install), then runs the
/// plugins of /etc/kernel/install.d in name order with its environment.
/// `layout` other than bls writes no entry (as a UKI setup); a file
/// `fail-kernel-install` beside the log makes it fail.
fn sdboot(layout: &str) -> Fake {
    let f = Fake::debian();
    fs::remove_file(f.r().join("etc/default/grub")).unwrap();
    f.file("boot/efi/loader/loader.conf", "timeout 0\n", 0o644);
    f.file(
        "etc/kernel/cmdline",
        "root=UUID=1234 ro console=ttyS0\n",
        0o644,
    );
    f.file("boot/vmlinuz-6.1.0-57-amd64", "kernel image\n", 0o644);
    let r = f.r().display().to_string();
    let body = format!(
        "echo \"kernel-install $*\" >> '{log}'\n\
         [ -e '{fail}' ] && exit 1\n\
         [ \"$1\" = add ] || exit 0\n\
         export KERNEL_INSTALL_BOOT_ROOT='{r}/boot/efi' KERNEL_INSTALL_ENTRY_TOKEN=abc \\\n\
           KERNEL_INSTALL_LAYOUT={layout} KERNEL_INSTALL_MACHINE_ID=abc\n\
         if [ {layout} = bls ]; then\n\
           mkdir -p '{r}/boot/efi/loader/entries'\n\
           printf 'title      Debian GNU/Linux 12 (bookworm)\\nversion    %s\\noptions    %s\\nlinux      /abc/%s/linux\\n' \\\n\
             \"$2\" \"$(tr -s ' \\n' ' ' < '{r}/etc/kernel/cmdline' | sed 's/ $//')\" \"$2\" \\\n\
             > '{r}/boot/efi/loader/entries/abc-'\"$2\"'.conf'\n\
         fi\n\
         for p in '{r}'/etc/kernel/install.d/*.install; do\n\
           [ -x \"$p\" ] || continue\n\
           sh \"$p\" add \"$2\" '{r}/boot/efi/abc/'\"$2\" \"$3\" || exit 1\n\
         done\n",
        log = f.log_path().display(),
        fail = f.tools.path().join("fail-kernel-install").display(),
    );
    f.file(
        "usr/bin/kernel-install",
        &format!("#!/bin/sh\n{body}"),
        0o755,
    );
    // The system as installed: its entry written once.
    let st = Command::new(f.r().join("usr/bin/kernel-install"))
        .args(["add", "6.1.0-57-amd64", "/boot/vmlinuz-6.1.0-57-amd64"])
        .status()
        .unwrap();
    assert!(st.success());
    fs::remove_file(f.log_path()).unwrap();
    f
}

const ENTRY: &str = "boot/efi/loader/entries/abc-6.1.0-57-amd64.conf";

fn options(f: &Fake) -> String {
    fs::read_to_string(f.r().join(ENTRY))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("options"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn systemd_boot_plugin_adds_once_and_undo_restores_the_tree() {
    let f = sdboot("bls");
    assert_eq!(detect(&f.ctx(true, true)), Backend::SystemdBoot);
    let before = snapshot(f.r());
    let report = failing_report();
    let root = f.r().display().to_string();

    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(
        f.calls(),
        vec![
            format!(
                "chroot {root} /usr/bin/kernel-install add 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64"
            ),
            "kernel-install add 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64".to_string(),
        ]
    );
    assert_eq!(
        options(&f),
        "options    root=UUID=1234 ro console=ttyS0 pci=realloc"
    );
    let plugin = f.r().join(&systemd_boot::PLUGIN[1..]);
    assert_eq!(
        fs::read_to_string(&plugin).unwrap(),
        systemd_boot::PLUGIN_TEXT
    );
    assert_eq!(
        fs::metadata(&plugin).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // Only the plugin, the record and their directories are new; the
    // entry is kernel-install's output, written again; nothing else moved.
    let changed = diff(&before, &snapshot(f.r()));
    assert_eq!(
        changed,
        vec![
            format!("~{ENTRY}"),
            "+etc/kernel/install.d".to_string(),
            "+etc/kernel/install.d/95-gpu-preflight.install".to_string(),
            "+var".to_string(),
            "+var/lib".to_string(),
            "+var/lib/gpu-preflight".to_string(),
            "+var/lib/gpu-preflight/remediate.json".to_string(),
        ]
    );
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert_eq!(
        (s.backend.as_str(), s.regenerated),
        ("kernel-install", true)
    );
    assert_eq!(s.written, vec![systemd_boot::PLUGIN.to_string()]);
    assert!(!fs::read_to_string(f.r().join("etc/kernel/cmdline"))
        .unwrap()
        .contains("pci=realloc"));

    // A second run changes nothing and runs nothing.
    let after_first = snapshot(f.r());
    let o = remediate(&f.ctx(true, true), &report);
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(snapshot(f.r()), after_first);
    assert_eq!(f.calls().len(), 2);
    // A kernel-install of its own (an upgrade, an initramfs update) keeps
    // the parameter: the plugin runs every time.
    Command::new(f.r().join("usr/bin/kernel-install"))
        .args(["add", "6.1.0-57-amd64", "/boot/vmlinuz-6.1.0-57-amd64"])
        .status()
        .unwrap();
    assert_eq!(snapshot(f.r()), after_first);

    let o = undo(&f.ctx(true, true));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(!o.text().contains("note:"), "{}", o.text());
    assert_eq!(
        f.calls().last().unwrap(),
        "kernel-install add 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64"
    );
    assert_eq!(diff(&before, &snapshot(f.r())), Vec::<String>::new());
}

#[test]
fn systemd_boot_dry_run_and_another_root_without_chroot() {
    let f = sdboot("bls");
    let before = snapshot(f.r());
    let mut ctx = f.ctx(true, true);
    ctx.dry_run = true;
    let o = remediate(&ctx, &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(o.text().contains("would write"), "{}", o.text());
    assert!(
        o.text().contains("would run: ")
            && o.text()
                .contains("/usr/bin/kernel-install add 6.1.0-57-amd64"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
    assert!(f.calls().is_empty());

    // Another root, no --chroot: the plugin is written, kernel-install is
    // named, not run.
    let o = remediate(&f.ctx(true, false), &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(
        o.text()
            .contains("kernel-install add 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64"),
        "{}",
        o.text()
    );
    assert!(f.r().join(&systemd_boot::PLUGIN[1..]).exists());
    assert!(f.calls().is_empty());
    assert!(!options(&f).contains("pci=realloc"));
    let o = undo(&f.ctx(true, false));
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert_eq!(diff(&before, &snapshot(f.r())), Vec::<String>::new());
}

#[test]
fn systemd_boot_failed_kernel_install_is_retried_by_the_next_run() {
    let f = sdboot("bls");
    fs::write(f.tools.path().join("fail-kernel-install"), "").unwrap();
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    let s = load_state(&Root::new(f.r())).unwrap().unwrap();
    assert!(!s.regenerated);
    assert!(!options(&f).contains("pci=realloc"));

    fs::remove_file(f.tools.path().join("fail-kernel-install")).unwrap();
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(o.text().contains("written again"), "{}", o.text());
    assert!(options(&f).ends_with(" pci=realloc"));
    assert!(load_state(&Root::new(f.r())).unwrap().unwrap().regenerated);
}

#[test]
fn systemd_boot_without_bls_entries_is_an_error() {
    let f = sdboot("uki");
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(o.text().contains("no boot entry carries"), "{}", o.text());
}

#[test]
fn systemd_boot_plugin_not_ours_is_left_alone() {
    let f = sdboot("bls");
    f.file(
        &systemd_boot::PLUGIN[1..],
        "#!/bin/sh\n# someone else's\nexit 0\n",
        0o755,
    );
    let before = snapshot(f.r());
    let o = remediate(&f.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::Failed, "{}", o.text());
    assert!(
        o.text().contains("not written by gpu-preflight"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(f.r()), before);
    let o = undo(&f.ctx(true, true));
    assert!(o.text().contains("leaving it"), "{}", o.text());
    assert!(f.r().join(&systemd_boot::PLUGIN[1..]).exists());
}

/// The plugin itself, run by sh on entries as kernel-install 252 names
/// them: once, idempotent, boot counting, an entry without options, and
/// never a failure.
#[test]
fn systemd_boot_plugin_script_edits_only_the_added_kernels_entry() {
    let d = tempfile::tempdir().unwrap();
    let plugin = d.path().join("95-gpu-preflight.install");
    fs::write(&plugin, systemd_boot::PLUGIN_TEXT).unwrap();
    let entries = d.path().join("boot/loader/entries");
    fs::create_dir_all(&entries).unwrap();
    let write = |name: &str, text: &str| fs::write(entries.join(name), text).unwrap();
    write("tok-6.1.conf", "title T\noptions    ro quiet\nlinux /l\n");
    write("tok-6.2+3.conf", "title T\nlinux /l\n");
    write("tok-6.3.conf", "options ro\n");
    let run = |args: &[&str], layout: &str| {
        let o = Command::new("sh")
            .arg(&plugin)
            .args(args)
            .env("KERNEL_INSTALL_BOOT_ROOT", d.path().join("boot"))
            .env("KERNEL_INSTALL_ENTRY_TOKEN", "tok")
            .env("KERNEL_INSTALL_LAYOUT", layout)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    };
    let read = |name: &str| fs::read_to_string(entries.join(name)).unwrap();
    run(&["add", "6.1", "/x", "/vmlinuz"], "bls");
    assert_eq!(
        read("tok-6.1.conf"),
        "title T\noptions    ro quiet pci=realloc\nlinux /l\n"
    );
    run(&["add", "6.1", "/x", "/vmlinuz"], "bls");
    assert_eq!(
        read("tok-6.1.conf"),
        "title T\noptions    ro quiet pci=realloc\nlinux /l\n"
    );
    run(&["add", "6.2", "/x", "/vmlinuz"], "bls");
    assert_eq!(
        read("tok-6.2+3.conf"),
        "title T\nlinux /l\noptions    pci=realloc\n"
    );
    assert_eq!(
        read("tok-6.3.conf"),
        "options ro\n",
        "another kernel's entry"
    );
    run(&["remove", "6.3", "/x"], "bls");
    run(&["add", "6.3", "/x", "/vmlinuz"], "other");
    assert_eq!(read("tok-6.3.conf"), "options ro\n");
    // A kernel without an entry, an unwritable directory: still exit 0.
    run(&["add", "9.9", "/x", "/vmlinuz"], "bls");
    assert_eq!(
        fs::read_dir(&entries).unwrap().count(),
        3,
        "no temporary file left"
    );
}

#[test]
fn unknown_systems_get_instructions_only() {
    let g = Fake::debian();
    fs::remove_file(g.r().join("etc/default/grub")).unwrap();
    let before = snapshot(g.r());
    let o = remediate(&g.ctx(true, true), &failing_report());
    assert_eq!(o.status, Status::NeedsHand, "{}", o.text());
    assert!(
        o.text()
            .contains("add pci=realloc to the kernel command line"),
        "{}",
        o.text()
    );
    assert_eq!(snapshot(g.r()), before);
}

#[test]
fn another_root_without_chroot_writes_the_fragment_and_says_what_to_run() {
    let f = Fake::debian();
    let o = remediate(&f.ctx(true, false), &failing_report());
    assert_eq!(o.status, Status::Done, "{}", o.text());
    assert!(o.text().contains("not running update-grub"), "{}", o.text());
    assert!(f.r().join(&FRAGMENT[1..]).exists());
    assert!(f.calls().is_empty());
}

/// The plugin under the real kernel-install (systemd 252 on Debian 12, where
/// the tests run) and its own 90-loaderentry.install, kept away from the
/// machine's /boot and /etc by kernel-install's environment variables.
#[test]
fn systemd_boot_plugin_under_the_real_kernel_install() {
    let ki = Path::new("/usr/bin/kernel-install");
    let loaderentry = Path::new("/usr/lib/kernel/install.d/90-loaderentry.install");
    assert!(
        ki.is_file() && loaderentry.is_file(),
        "this test needs systemd's kernel-install and 90-loaderentry.install (Debian: systemd)"
    );
    let d = tempfile::tempdir().unwrap();
    let (boot, conf) = (d.path().join("boot"), d.path().join("conf"));
    let mid = "0123456789abcdef0123456789abcdef";
    fs::create_dir_all(boot.join(mid)).unwrap();
    fs::create_dir_all(&conf).unwrap();
    fs::write(conf.join("cmdline"), "root=UUID=1234 ro\n").unwrap();
    let plugin = d.path().join("95-gpu-preflight.install");
    fs::write(&plugin, systemd_boot::PLUGIN_TEXT).unwrap();
    fs::set_permissions(&plugin, fs::Permissions::from_mode(0o755)).unwrap();
    let image = d.path().join("vmlinuz");
    fs::write(&image, "kernel").unwrap();
    let o = Command::new(ki)
        .args(["add", "6.1.0-test"])
        .arg(&image)
        .env("BOOT_ROOT", &boot)
        .env("MACHINE_ID", mid)
        .env("KERNEL_INSTALL_CONF_ROOT", &conf)
        .env(
            "KERNEL_INSTALL_PLUGINS",
            format!("{} {}", loaderentry.display(), plugin.display()),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let entry =
        fs::read_to_string(boot.join(format!("loader/entries/{mid}-6.1.0-test.conf"))).unwrap();
    let opts: Vec<&str> = entry.lines().filter(|l| l.starts_with("options")).collect();
    assert_eq!(
        opts,
        vec![format!(
            "options    root=UUID=1234 ro systemd.machine_id={mid} pci=realloc"
        )],
        "{entry}"
    );
}

/// The package's postrm recognises the GRUB fragment (first line) and the
/// plugin (second line) by one header.
#[test]
fn the_plugin_and_the_fragment_share_the_header() {
    assert_eq!(systemd_boot::header(), header());
    assert!(systemd_boot::PLUGIN_TEXT.starts_with("#!/bin/sh\n"));
}
