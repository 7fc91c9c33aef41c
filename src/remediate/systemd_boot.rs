//! systemd-boot / kernel-install: a kernel-install plugin we own,
//! `/etc/kernel/install.d/95-gpu-preflight.install`, then `kernel-install
//! add` for each installed kernel so that its entry is written again with
//! the plugin in place.
//!
//! systemd-boot reads each kernel's command line from its boot entry
//! (`$BOOT/loader/entries/TOKEN-VERSION.conf`), which kernel-install writes
//! afresh on every `add` (kernel upgrades, Debian's initramfs updates), from
//! `/etc/kernel/cmdline`, else `/usr/lib/kernel/cmdline`, else the running
//! `/proc/cmdline`. None of those is ours and none has a drop-in directory
//! (systemd 252), so the parameter goes in where kernel-install itself lets
//! others in: its plugin directory. The plugin, sorted after
//! `90-loaderentry.install`, appends `pci=realloc` to the entry just
//! written; the entry stays kernel-install's output, as `grub.cfg` stays
//! update-grub's. Undo removes the plugin and runs `kernel-install add`
//! again. docs/boot.md has the whole decision.
//!
//! The plugin is the data file `95-gpu-preflight.install` beside this
//! source; its first line after the interpreter line is our mark.

use crate::atomic_file;
use crate::read::root::Root;
use crate::remediate::detect::{
    as_strings, find_tool, not_running, run_tool, shell_words, wrap_for_root,
};
use crate::remediate::state::{new_state, write_state};
use crate::remediate::txn::install_file;
use crate::remediate::{Ctx, Status, Transcript, PARAM};
use crate::report::Report;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::PathBuf;

/// Our plugin: `95-` so that it runs after `90-loaderentry.install`, which
/// writes the entry (plugins run in the order of their file names).
pub(crate) const PLUGIN: &str = "/etc/kernel/install.d/95-gpu-preflight.install";

/// The plugin, byte for byte: constant, so a rerun compares equal.
pub(crate) const PLUGIN_TEXT: &str = include_str!("95-gpu-preflight.install");

/// The backend's name in the record.
pub(crate) const BACKEND: &str = "kernel-install";

/// Where kernel-install (252) looks for `$BOOT`, in its order.
const BOOT_ROOTS: [&str; 3] = ["/efi", "/boot", "/boot/efi"];

/// The plugin's mark: its second line (the first is `#!/bin/sh`).
pub(crate) fn header() -> &'static str {
    PLUGIN_TEXT.lines().nth(1).unwrap_or_default()
}

fn is_ours(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).lines().nth(1) == Some(header())
}

/// One installed kernel: its version and its image as the target sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kernel {
    version: String,
    image: String,
}

/// The kernels whose entries are to be written again: every version a
/// boot entry names (`version` lines) and the running one, each with an
/// image where Debian (`/boot/vmlinuz-V`) or the kernel-install layout
/// (`/usr/lib/modules/V/vmlinuz`) keeps it. Versions without an image are
/// said and left out.
fn kernels(root: &Root, t: &mut Transcript) -> Vec<Kernel> {
    let mut versions: Vec<String> = entries(root)
        .into_iter()
        .filter_map(|(_, text)| entry_field(&text, "version").map(String::from))
        .collect();
    if let Some(running) = root.read_trimmed("/proc/sys/kernel/osrelease") {
        versions.push(running);
    }
    versions.sort();
    versions.dedup();
    let mut out = Vec::new();
    for v in versions {
        let image = [
            format!("/boot/vmlinuz-{v}"),
            format!("/usr/lib/modules/{v}/vmlinuz"),
            format!("/lib/modules/{v}/vmlinuz"),
        ]
        .into_iter()
        .find(|p| root.join(p).is_file());
        match image {
            Some(image) => out.push(Kernel { version: v, image }),
            None => t.say(format!(
                "  kernel {v}: no image in /boot or /usr/lib/modules, its entry is left as it is"
            )),
        }
    }
    out
}

/// Every boot entry under the places kernel-install uses, with its text.
fn entries(root: &Root) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for b in BOOT_ROOTS {
        let Ok(dir) = std::fs::read_dir(root.join(format!("{b}/loader/entries"))) else {
            continue;
        };
        let mut found: Vec<PathBuf> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        found.sort();
        for p in found {
            if let Ok(text) = std::fs::read_to_string(&p) {
                out.push((p, text));
            }
        }
    }
    out
}

/// A BLS entry's field (`key value...`), the first one.
fn entry_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let l = l.trim_start();
        let rest = l.strip_prefix(key)?;
        (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| rest.trim())
    })
}

fn carries_param(text: &str) -> bool {
    text.lines().any(|l| {
        let mut w = l.split_whitespace();
        w.next() == Some("options") && w.any(|a| a == PARAM)
    })
}

/// `kernel-install add V IMAGE` for each kernel, wrapped for the root;
/// `None` when they are not to be run (with the reason said), `Err` when
/// wanted but impossible.
fn commands(ctx: &Ctx, t: &mut Transcript) -> Option<Result<Vec<Vec<OsString>>, String>> {
    if !ctx.regenerate {
        return None;
    }
    if !ctx.root.is_live() && !ctx.chroot {
        t.say(not_running(ctx, "kernel-install"));
        return None;
    }
    let Some(tool) = find_tool(ctx, "kernel-install") else {
        return Some(Err(
            "kernel-install not found; nothing was changed (use --no-regenerate to only \
             write the plugin)"
                .into(),
        ));
    };
    let ks = kernels(&ctx.root, t);
    if ks.is_empty() {
        return Some(Err(
            "no installed kernel image found for kernel-install; nothing was changed".into(),
        ));
    }
    let mut out = Vec::new();
    for k in ks {
        let argv: Vec<OsString> = vec![
            tool.clone().into_os_string(),
            "add".into(),
            k.version.into(),
            k.image.into(),
        ];
        out.push(wrap_for_root(ctx, argv, t)?);
    }
    Some(Ok(out))
}

/// The commands as one would type them inside the target, for the record
/// and the message when they are not run here.
fn typed_commands(ctx: &Ctx) -> Vec<String> {
    let mut quiet = Transcript::new();
    kernels(&ctx.root, &mut quiet)
        .into_iter()
        .map(|k| format!("kernel-install add {} {}", k.version, k.image))
        .collect()
}

/// Runs the commands; after an `add` with the plugin in place each entry
/// of those kernels must carry the parameter (a UKI or non-BLS layout does
/// not, and the plugin leaves it alone).
fn run_all(ctx: &Ctx, cmds: &[Vec<OsString>], want_param: bool) -> Result<(), String> {
    for argv in cmds {
        run_tool(argv)?;
    }
    let entries = entries(&ctx.root);
    let versions: Vec<&OsString> = cmds.iter().filter_map(|c| c.iter().rev().nth(1)).collect();
    let wrong: Vec<String> = entries
        .iter()
        .filter(|(_, text)| {
            entry_field(text, "version")
                .is_some_and(|v| versions.iter().any(|w| w.to_str() == Some(v)))
        })
        .filter(|(_, text)| carries_param(text) != want_param)
        .map(|(p, _)| p.display().to_string())
        .collect();
    if want_param && !entries.iter().any(|(_, text)| carries_param(text)) {
        return Err(format!(
            "kernel-install ran, but no boot entry carries {PARAM} (is the layout BLS, \
             with entries in loader/entries?)"
        ));
    }
    if want_param && !wrong.is_empty() {
        return Err(format!(
            "kernel-install ran, but these entries do not carry {PARAM}: {}",
            wrong.join(", ")
        ));
    }
    Ok(())
}

pub(crate) fn apply(ctx: &Ctx, report: &Report, mut t: Transcript) -> Transcript {
    let root = &ctx.root;
    let plugin = root.join(PLUGIN);
    let previous = match std::fs::read(&plugin) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return t.error(crate::read::root::cannot_read(&plugin, &e)),
    };
    if let Some(prev) = &previous {
        if !is_ours(prev) {
            return t.error(format!(
                "{} exists and was not written by gpu-preflight; not touching it. \
                 Add {PARAM} to /etc/kernel/cmdline yourself and run kernel-install add, \
                 or move that file away.",
                plugin.display()
            ));
        }
    }
    let plugin_needed = previous.as_deref() != Some(PLUGIN_TEXT.as_bytes());

    let mut note = Transcript::new();
    let cmds = match commands(ctx, &mut note) {
        Some(Err(msg)) => return t.error(msg),
        Some(Ok(c)) => Some(c),
        None => None,
    };
    let recorded: Option<Vec<String>> = match &cmds {
        Some(c) => c.first().map(|a| as_strings(a)),
        None => typed_commands(ctx)
            .first()
            .map(|c| c.split(' ').map(String::from).collect()),
    };

    if ctx.dry_run {
        t.say_would_install(root, &plugin, " (mode 0755)", PLUGIN_TEXT, plugin_needed);
        for argv in cmds.iter().flatten() {
            t.say(format!("would run: {}", shell_words(argv)));
        }
        t.out.append(&mut note.out);
        return t.done(Status::Done);
    }

    let (created_dirs, mut undo_log) = match install_file(
        root,
        "/etc/kernel/install.d",
        &plugin,
        PLUGIN_TEXT.as_bytes(),
        0o755,
        previous.clone(),
        plugin_needed,
    ) {
        Ok(done) => done,
        Err(msg) => return t.error(format!("{msg}; nothing was changed")),
    };
    let mut state = new_state(
        root,
        BACKEND,
        report,
        vec![PLUGIN.to_string()],
        created_dirs,
        recorded,
    );
    if let Err(e) = write_state(root, &state) {
        undo_log.take_back();
        return t.error(format!("{e}; nothing was changed"));
    }
    t.say(format!(
        "gpu-preflight: wrote {}, a kernel-install plugin adding {PARAM} to the boot entries it writes",
        plugin.display()
    ));
    t.out.append(&mut note.out);

    let Some(cmds) = cmds else {
        t.say("  run inside that system, before the next boot, for it to take effect:");
        for c in typed_commands(ctx) {
            t.say(format!("    {c}"));
        }
        return t.done(Status::Done);
    };
    if let Err(msg) = run_all(ctx, &cmds, true) {
        return t.error(format!(
            "{msg}. {} stays in place for the next kernel-install; rerun `gpu-preflight \
             remediate` to retry, or `gpu-preflight remediate --undo`",
            plugin.display()
        ));
    }
    state.regenerated = true;
    if let Err(e) = write_state(root, &state) {
        t.say(format!("warning: could not update the record: {e}"));
    }
    for argv in &cmds {
        t.say(format!("  ran {}", shell_words(argv)));
    }
    t.say(format!("  the next boot carries {PARAM}"));
    t.done(Status::Done)
}

/// A record whose commands did not run (or failed): run them now.
pub(crate) fn finish(ctx: &Ctx, t: &mut Transcript) -> Option<Result<Vec<String>, String>> {
    let cmds = match commands(ctx, t)? {
        Ok(c) => c,
        Err(msg) => return Some(Err(msg)),
    };
    if ctx.dry_run {
        for argv in &cmds {
            t.say(format!("would run: {}", shell_words(argv)));
        }
        return Some(Ok(Vec::new()));
    }
    Some(
        run_all(ctx, &cmds, true).map(|()| cmds.first().map(|a| as_strings(a)).unwrap_or_default()),
    )
}

/// `--undo` for this backend: removes our plugin (recognised by its mark)
/// and writes the entries again without it. The caller removes the record.
pub(crate) fn undo(ctx: &Ctx, mut t: Transcript) -> Result<Transcript, Transcript> {
    let root = &ctx.root;
    let plugin = root.join(PLUGIN);
    let ours = match std::fs::read(&plugin) {
        Ok(b) if is_ours(&b) => true,
        Ok(_) => {
            t.say(format!(
                "{} was not written by gpu-preflight; leaving it",
                plugin.display()
            ));
            false
        }
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(t.error(crate::read::root::cannot_read(&plugin, &e))),
    };
    let mut note = Transcript::new();
    let cmds = match commands(ctx, &mut note) {
        Some(Err(msg)) => return Err(t.error(format!("{msg}; the record is kept"))),
        Some(Ok(c)) => Some(c),
        None => None,
    };
    if ctx.dry_run {
        if ours {
            t.say(format!("would remove {}", plugin.display()));
        }
        for argv in cmds.iter().flatten() {
            t.say(format!("would run: {}", shell_words(argv)));
        }
        return Ok(t);
    }
    if ours {
        if let Err(e) = atomic_file::remove(&plugin) {
            return Err(t.error(format!(
                "cannot remove {}: {e}; nothing was changed",
                plugin.display()
            )));
        }
        t.say(format!("gpu-preflight: removed {}", plugin.display()));
    }
    t.out.append(&mut note.out);
    let Some(cmds) = cmds else {
        t.say("  run inside that system for the entries to lose it:");
        for c in typed_commands(ctx) {
            t.say(format!("    {c}"));
        }
        return Ok(t);
    };
    for argv in &cmds {
        if let Err(msg) = run_tool(argv) {
            return Err(t.error(format!("{msg}; run it again yourself")));
        }
        t.say(format!("  ran {}", shell_words(argv)));
    }
    // Without /etc/kernel/cmdline (or /usr/lib/kernel/cmdline) kernel-install
    // copies the running command line, which carries the parameter while
    // this boot had it.
    if !root.join("/etc/kernel/cmdline").is_file()
        && !root.join("/usr/lib/kernel/cmdline").is_file()
        && entries(root).iter().any(|(_, text)| carries_param(text))
    {
        t.say(format!(
            "  note: without /etc/kernel/cmdline kernel-install takes this boot's command line, \
             which has {PARAM}: boot once more and run kernel-install add again, or write \
             /etc/kernel/cmdline"
        ));
    }
    Ok(t)
}
