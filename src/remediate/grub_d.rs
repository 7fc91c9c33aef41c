//! Debian/Ubuntu GRUB: a fragment we own,
//! `/etc/default/grub.d/99-gpu-preflight.cfg`, sourced after
//! `/etc/default/grub`, appending to `GRUB_CMDLINE_LINUX_DEFAULT` (which the
//! recovery entries do not use, so they stay a clean fallback), then
//! `update-grub` (or `grub-mkconfig -o /boot/grub/grub.cfg`).
//!
//! The fragment is the data file `99-gpu-preflight.cfg` beside this source;
//! the package's postrm recognises it by the same first line.

use crate::atomic_file;
use crate::remediate::detect::{
    as_strings, find_tool, not_running, run_tool, shell_words, wrap_for_root,
};
use crate::remediate::state::{new_state, write_state};
use crate::remediate::txn::install_file;
use crate::remediate::{Ctx, Status, Transcript, PARAM};
use crate::report::Report;
use std::ffi::OsString;
use std::io::ErrorKind;

/// Our GRUB fragment: `99-` so that it is sourced after any other fragment
/// that sets the variable outright (cloud images ship `50-*.cfg` ones).
pub(crate) const FRAGMENT: &str = "/etc/default/grub.d/99-gpu-preflight.cfg";

/// The fragment, byte for byte: constant, so a rerun compares equal.
pub(crate) const FRAGMENT_TEXT: &str = include_str!("99-gpu-preflight.cfg");

/// The fragment's first line: the mark a rerun, `--undo` and the package's
/// postrm look for before touching the file.
pub(crate) fn header() -> &'static str {
    FRAGMENT_TEXT.lines().next().unwrap_or_default()
}

/// The command that regenerates GRUB's configuration, `None` when it is
/// not to be run (with the reason said), `Err` when it is wanted but the
/// system has no tool for it.
pub(crate) fn regen_command(
    ctx: &Ctx,
    t: &mut Transcript,
) -> Option<Result<Vec<OsString>, String>> {
    if !ctx.regenerate {
        return None;
    }
    if !ctx.root.is_live() && !ctx.chroot {
        t.say(not_running(ctx, "update-grub"));
        return None;
    }
    let tool = find_tool(ctx, "update-grub")
        .map(|p| vec![p.into_os_string()])
        .or_else(|| {
            find_tool(ctx, "grub-mkconfig").map(|p| {
                vec![
                    p.into_os_string(),
                    "-o".into(),
                    "/boot/grub/grub.cfg".into(),
                ]
            })
        });
    let Some(argv) = tool else {
        return Some(Err(format!(
            "neither update-grub nor grub-mkconfig found in {}; nothing was changed \
             (use --no-regenerate to only write {FRAGMENT})",
            if ctx.root.is_live() {
                "PATH".to_string()
            } else {
                ctx.root.path().display().to_string()
            }
        )));
    };
    wrap_for_root(ctx, argv, t).map(Ok)
}

pub(crate) fn apply(ctx: &Ctx, report: &Report, mut t: Transcript) -> Transcript {
    let root = &ctx.root;
    let frag = root.join(FRAGMENT);
    let previous = match std::fs::read(&frag) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return t.error(crate::read::root::cannot_read(&frag, &e)),
    };
    if let Some(prev) = &previous {
        if !prev.starts_with(header().as_bytes()) {
            return t.error(format!(
                "{} exists and was not written by gpu-preflight; not touching it. \
                 Add {PARAM} to GRUB_CMDLINE_LINUX_DEFAULT yourself, or move that file away.",
                frag.display()
            ));
        }
    }
    let fragment_needed = previous.as_deref() != Some(FRAGMENT_TEXT.as_bytes());

    // What regen_command has to say comes after what we wrote.
    let mut note = Transcript::new();
    let regen = match regen_command(ctx, &mut note) {
        Some(Err(msg)) => return t.error(msg),
        Some(Ok(argv)) => Some(argv),
        None => None,
    };
    let command_text: Option<Vec<String>> = regen
        .as_deref()
        .map(as_strings)
        .or_else(|| (!ctx.regenerate || !root.is_live()).then(|| vec!["update-grub".to_string()]));

    if ctx.dry_run {
        t.say_would_install(root, &frag, "", FRAGMENT_TEXT, fragment_needed);
        if let Some(argv) = &regen {
            t.say(format!("would run: {}", shell_words(argv)));
        }
        t.out.append(&mut note.out);
        return t.done(Status::Done);
    }

    // Transaction: our directories, the fragment, the record. If any step
    // fails, everything done so far is taken back.
    let (created_dirs, mut undo_log) = match install_file(
        root,
        "/etc/default/grub.d",
        &frag,
        FRAGMENT_TEXT.as_bytes(),
        0o644,
        previous.clone(),
        fragment_needed,
    ) {
        Ok(done) => done,
        Err(msg) => return t.error(format!("{msg}; nothing was changed")),
    };
    let mut state = new_state(
        root,
        "grub.d",
        report,
        vec![FRAGMENT.to_string()],
        created_dirs,
        command_text,
    );
    if let Err(e) = write_state(root, &state) {
        undo_log.take_back();
        return t.error(format!("{e}; nothing was changed"));
    }
    t.say(format!(
        "gpu-preflight: wrote {} adding {PARAM} to GRUB_CMDLINE_LINUX_DEFAULT",
        frag.display()
    ));
    t.out.append(&mut note.out);

    let Some(argv) = regen else {
        if !ctx.regenerate {
            t.say("  --no-regenerate: run update-grub before the next boot for it to take effect");
        }
        return t.done(Status::Done);
    };
    if let Err(msg) = run_tool(&argv) {
        // The fragment is right; the tool is what failed. The record says
        // `regenerated: false`, so a rerun tries the tool again.
        return t.error(format!(
            "{msg}. {} stays in place for the next successful update-grub; \
             rerun `gpu-preflight remediate` to retry, or `gpu-preflight remediate --undo`",
            frag.display()
        ));
    }
    state.regenerated = true;
    if let Err(e) = write_state(root, &state) {
        t.say(format!("warning: could not update the record: {e}"));
    }
    t.say(format!(
        "  ran {}: the next boot carries {PARAM}",
        shell_words(&argv)
    ));
    t.done(Status::Done)
}

/// Removes our fragment (recognised by its header) and regenerates. `None`
/// when there is no fragment of ours, with what was said.
pub(crate) fn remove_fragment(
    ctx: &Ctx,
    mut t: Transcript,
) -> Result<(bool, Transcript), Transcript> {
    let frag = ctx.root.join(FRAGMENT);
    let ours = match std::fs::read(&frag) {
        Ok(b) if b.starts_with(header().as_bytes()) => true,
        Ok(_) => {
            t.say(format!(
                "{} was not written by gpu-preflight; leaving it",
                frag.display()
            ));
            false
        }
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(t.error(crate::read::root::cannot_read(&frag, &e))),
    };
    if ours && ctx.dry_run {
        t.say(format!("would remove {}", frag.display()));
    } else if ours {
        if let Err(e) = atomic_file::remove(&frag) {
            return Err(t.error(format!(
                "cannot remove {}: {e}; nothing was changed",
                frag.display()
            )));
        }
        t.say(format!("gpu-preflight: removed {}", frag.display()));
    }
    Ok((ours, t))
}

/// Regenerates after the fragment went away.
pub(crate) fn regenerate_after_undo(ctx: &Ctx, mut t: Transcript) -> Transcript {
    match regen_command(ctx, &mut t) {
        None => t.done(Status::Done),
        Some(Err(msg)) => t.error(format!("{msg}; run update-grub yourself")),
        Some(Ok(argv)) => match run_tool(&argv) {
            Ok(()) => {
                t.say(format!("  ran {}", shell_words(&argv)));
                t.done(Status::Done)
            }
            Err(msg) => t.error(format!("{msg}; run update-grub yourself")),
        },
    }
}
