//! `gpu-preflight remediate` on RHEL-family roots: the captured OVMF
//! 8 x 32G boot with a 1 TiB hole (the window has room, the kernel asks for
//! `pci=realloc`), laid out as RHEL 9 (BLS entries with their options,
//! `/etc/kernel/cmdline`) and as RHEL 8 (entries with `options $kernelopts`,
//! the arguments in `grubenv`), with `tests/data/fake-grubby` in
//! `/usr/sbin/grubby`: it takes its arguments as the real grubby-bls does,
//! rejects what that rejects, records each call and makes grubby's edit.
//! `--chroot` runs it through a stand-in `chroot` on PATH.

pub mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{bin, copy_root, diff, fixture, put, snapshot, text};

const CASE: &str = "ovmf-8x32g-hole1t";
const STATE: &str = "var/lib/gpu-preflight/remediate.json";
const MACHINE_ID: &str = "3f2a9c1e5b7d4e0f8a6c2b1d9e4f7a3c";
const RHEL9_OPTIONS: &str = "root=/dev/mapper/rhel-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap console=ttyS0";

struct Rhel {
    dir: tempfile::TempDir,
    _tools: tempfile::TempDir,
    bin_dir: PathBuf,
    log: PathBuf,
}

impl Rhel {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.root().join(rel)).unwrap()
    }

    fn remediate(&self, extra: &[&str]) -> Output {
        let mut c = Command::new(bin());
        c.arg("remediate").arg("--root").arg(self.root());
        if !extra.contains(&"--undo") {
            c.arg("--dmesg").arg(fixture(CASE).join("dmesg.txt")).args([
                "--match",
                "1af4:1110",
                "--expect",
                "8",
            ]);
        }
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.args(extra)
            .env("PATH", path)
            .env("GRUBBY_LOG", &self.log)
            .output()
            .unwrap()
    }
}

fn entry(version: &str, options: &str) -> String {
    format!(
        "title Red Hat Enterprise Linux ({version}) 9.4 (Plow)\n\
         version {version}\n\
         linux /vmlinuz-{version}\n\
         initrd /initramfs-{version}.img $tuned_initrd\n\
         options {options}\n\
         grub_users $grub_users\n\
         grub_arg --unrestricted\n\
         grub_class rhel\n"
    )
}

/// A 1024-byte grubenv block, as grub2-editenv writes it.
fn grubenv(lines: &str) -> String {
    let head = format!("# GRUB Environment Block\n{lines}");
    format!("{head}{}", "#".repeat(1024 - head.len()))
}

fn rhel(kernelopts: bool) -> Rhel {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_root(CASE, root);
    let kernels = [
        "5.14.0-427.13.1.el9_4.x86_64",
        "5.14.0-362.8.1.el9_3.x86_64",
    ];
    for k in kernels {
        // RHEL 8's entries carry "$kernelopts" (grubby then edits grubenv).
        let options = if kernelopts {
            "$kernelopts"
        } else {
            RHEL9_OPTIONS
        };
        put(
            root,
            &format!("boot/loader/entries/{MACHINE_ID}-{k}.conf"),
            &entry(k, options),
        );
    }
    put(
        root,
        &format!("boot/loader/entries/{MACHINE_ID}-0-rescue.conf"),
        &entry(&format!("0-rescue-{MACHINE_ID}"), RHEL9_OPTIONS),
    );
    put(root, "etc/machine-id", &format!("{MACHINE_ID}\n"));
    put(
        root,
        "etc/os-release",
        "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"9.4 (Plow)\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.4\"\n",
    );
    put(root, "etc/kernel/cmdline", &format!("{RHEL9_OPTIONS}\n"));
    let env_lines = if kernelopts {
        format!(
            "saved_entry={MACHINE_ID}-{}\nkernelopts={RHEL9_OPTIONS}\nboot_success=0\n",
            kernels[0]
        )
    } else {
        format!("saved_entry={MACHINE_ID}-{}\nboot_success=0\n", kernels[0])
    };
    put(root, "boot/grub2/grubenv", &grubenv(&env_lines));
    let grubby = root.join("usr/sbin/grubby");
    fs::create_dir_all(grubby.parent().unwrap()).unwrap();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fake-grubby"),
        &grubby,
    )
    .unwrap();
    fs::set_permissions(&grubby, fs::Permissions::from_mode(0o755)).unwrap();

    // The stand-in chroot: runs ROOT/TOOL with ROOT known to the fake.
    let tools = tempfile::tempdir().unwrap();
    let bin_dir = tools.path().to_path_buf();
    let chroot = bin_dir.join("chroot");
    fs::write(
        &chroot,
        "#!/bin/sh\nroot=$1; shift; tool=$1; shift\nGRUBBY_ROOT=$root exec \"$root$tool\" \"$@\"\n",
    )
    .unwrap();
    fs::set_permissions(&chroot, fs::Permissions::from_mode(0o755)).unwrap();
    let log = bin_dir.join("grubby.log");
    Rhel {
        dir,
        _tools: tools,
        bin_dir,
        log,
    }
}

fn entries(r: &Rhel) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = fs::read_dir(r.root().join("boot/loader/entries"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let opts = fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("options ").map(String::from))
                .unwrap();
            (e.file_name().to_string_lossy().into_owned(), opts)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn the_fake_grubby_rejects_what_grubby_rejects() {
    let r = rhel(false);
    let grubby = r.root().join("usr/sbin/grubby");
    let run = |args: &[&str]| {
        Command::new(&grubby)
            .args(args)
            .env("GRUBBY_ROOT", r.root())
            .env("GRUBBY_LOG", &r.log)
            .output()
            .unwrap()
            .status
            .code()
    };
    let before = snapshot(r.root());
    assert_eq!(run(&[]), Some(1), "no action");
    assert_eq!(run(&["--bogus"]), Some(1), "unknown option");
    assert_eq!(run(&["--update-kernel"]), Some(1), "missing value");
    assert_eq!(
        run(&["--update-kernel=ALL", "--lilo"]),
        Some(1),
        "deprecated"
    );
    assert_eq!(
        run(&["--update-kernel=/vmlinuz-none", "--args=x"]),
        Some(1),
        "no such kernel"
    );
    assert_eq!(diff(&before, &snapshot(r.root())), Vec::<String>::new());
    // What remediate passes, it takes.
    assert_eq!(run(&["--update-kernel=ALL", "--args=pci=realloc"]), Some(0));
}

#[test]
fn rhel9_every_bls_entry_gets_the_parameter_once_and_undo_restores_each_byte() {
    let r = rhel(false);
    let before = snapshot(r.root());
    let cmdline = r.read("etc/kernel/cmdline");

    let o = r.remediate(&["--chroot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        r.calls(),
        vec!["grubby --update-kernel=ALL --args=pci=realloc"],
        "{}",
        text(&o)
    );
    for (name, opts) in entries(&r) {
        assert_eq!(
            opts.split(' ').filter(|w| *w == "pci=realloc").count(),
            1,
            "{name}: {opts}"
        );
        assert!(
            opts.starts_with("root=/dev/mapper/rhel-root ro "),
            "{name}: {opts}"
        );
    }
    let state: serde_json::Value = serde_json::from_str(&r.read(STATE)).unwrap();
    assert_eq!(state["backend"], "grubby");
    assert_eq!(state["regenerated"], true);
    // grubby's own files only: /etc/kernel/cmdline is left as it was.
    assert_eq!(r.read("etc/kernel/cmdline"), cmdline);
    let changed = diff(&before, &snapshot(r.root()));
    assert!(
        changed
            .iter()
            .all(|c| c.contains("boot/loader/entries/") || c.contains("var")),
        "{changed:?}"
    );

    // Once: a second run runs nothing and changes nothing.
    let after = snapshot(r.root());
    let o = r.remediate(&["--chroot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r.calls().len(), 1);
    assert_eq!(diff(&after, &snapshot(r.root())), Vec::<String>::new());

    let o = r.remediate(&["--undo", "--chroot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        r.calls()[1],
        "grubby --update-kernel=ALL --remove-args=pci=realloc"
    );
    assert_eq!(diff(&before, &snapshot(r.root())), Vec::<String>::new());
}

#[test]
fn rhel8_the_parameter_goes_to_grubenv_kernelopts_and_undo_restores_it() {
    let r = rhel(true);
    let before = snapshot(r.root());
    let entries_before = entries(&r);

    let o = r.remediate(&["--chroot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let env = r.read("boot/grub2/grubenv");
    let kernelopts = env
        .lines()
        .find_map(|l| l.strip_prefix("kernelopts="))
        .unwrap();
    assert_eq!(kernelopts, format!("{RHEL9_OPTIONS} pci=realloc"));
    // The entries that say $kernelopts are unchanged; the rescue entry,
    // with its own options, got the parameter.
    for ((name, was), (_, now)) in entries_before.iter().zip(entries(&r)) {
        if was == "$kernelopts" {
            assert_eq!(&now, was, "{name}");
        } else {
            assert_eq!(now, format!("{was} pci=realloc"), "{name}");
        }
    }

    let o = r.remediate(&["--undo", "--chroot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(diff(&before, &snapshot(r.root())), Vec::<String>::new());
}

#[test]
fn without_chroot_for_another_root_grubby_is_named_not_run() {
    let r = rhel(false);
    let before = snapshot(r.root());
    let o = r.remediate(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("/usr/sbin/grubby --update-kernel=ALL --args=pci=realloc"),
        "{}",
        text(&o)
    );
    assert!(r.calls().is_empty());
    assert_eq!(diff(&before, &snapshot(r.root())), Vec::<String>::new());
}
