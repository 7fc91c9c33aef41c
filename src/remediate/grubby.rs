//! Fedora/RHEL BLS entries (`/boot/loader/entries/*.conf`) and `grubby`:
//! `grubby --update-kernel=ALL --args=pci=realloc`, the distribution's own
//! tool for exactly this edit; undo is `--remove-args`.

use crate::atomic_file;
use crate::remediate::detect::{as_strings, find_tool, run_tool, shell_words, wrap_for_root};
use crate::remediate::state::{new_state, write_state, STATE_FILE};
use crate::remediate::txn::{ensure_dir, Rollback};
use crate::remediate::{Ctx, Status, Transcript, PARAM};
use crate::report::Report;
use std::ffi::OsString;
use std::path::Path;

pub(crate) fn apply(ctx: &Ctx, report: &Report, tool: &Path, mut t: Transcript) -> Transcript {
    let root = &ctx.root;
    let args: Vec<OsString> = vec![
        tool.as_os_str().to_owned(),
        "--update-kernel=ALL".into(),
        format!("--args={PARAM}").into(),
    ];
    let plain = shell_words(&args);
    let argv = if ctx.regenerate {
        wrap_for_root(ctx, args, &mut t)
    } else {
        None
    };
    let Some(argv) = argv else {
        // grubby is the edit: without running it there is nothing of ours
        // to write.
        t.say(format!(
            "gpu-preflight: the next boot needs {PARAM} (diagnosis {}); changing nothing. Run: {plain}",
            report.diagnosis.as_str()
        ));
        return t.done(Status::NeedsHand);
    };
    if ctx.dry_run {
        t.say(format!(
            "would record the change in {}",
            root.join(STATE_FILE).display()
        ));
        t.say(format!("would run: {}", shell_words(&argv)));
        return t.done(Status::Done);
    }
    // The record first: if it cannot be written (read-only or full), grubby
    // must not run, or the next run would add the parameter again.
    let mut undo_log = Rollback::default();
    let created = match ensure_dir(root, "/var/lib/gpu-preflight", &mut undo_log) {
        Ok(c) => c,
        Err(msg) => return t.error(format!("{msg}; nothing was changed")),
    };
    let mut state = new_state(
        root,
        "grubby",
        report,
        Vec::new(),
        created,
        Some(as_strings(&argv)),
    );
    if let Err(e) = write_state(root, &state) {
        undo_log.take_back();
        return t.error(format!("{e}; nothing was changed"));
    }
    if let Err(msg) = run_tool(&argv) {
        let _ = atomic_file::remove(&root.join(STATE_FILE));
        undo_log.take_back();
        return t.error(format!("{msg}; the record was taken back"));
    }
    state.regenerated = true;
    if let Err(e) = write_state(root, &state) {
        t.say(format!("warning: could not update the record: {e}"));
    }
    t.say(format!(
        "gpu-preflight: ran {}: the next boot carries {PARAM}",
        shell_words(&argv)
    ));
    t.done(Status::Done)
}

/// Runs `grubby --remove-args`; the caller removes the record after.
pub(crate) fn undo(ctx: &Ctx, mut t: Transcript) -> Result<Transcript, Transcript> {
    let Some(tool) = find_tool(ctx, "grubby") else {
        return Err(t.error("the record says grubby added the parameter, but grubby is not found"));
    };
    let args: Vec<OsString> = vec![
        tool.into_os_string(),
        "--update-kernel=ALL".into(),
        format!("--remove-args={PARAM}").into(),
    ];
    let plain = shell_words(&args);
    let Some(argv) = wrap_for_root(ctx, args, &mut t) else {
        return Err(t.fail(
            Status::NeedsHand,
            format!("nothing was changed; run inside that system: {plain}"),
        ));
    };
    if ctx.dry_run {
        t.say(format!("would run: {}", shell_words(&argv)));
        return Ok(t);
    }
    if let Err(msg) = run_tool(&argv) {
        return Err(t.error(format!("{msg}; the record is kept")));
    }
    t.say(format!("gpu-preflight: ran {}", shell_words(&argv)));
    Ok(t)
}
