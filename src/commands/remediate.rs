//! `gpu-preflight remediate`: run the check (with the boot's settings) and
//! let `remediate` act on its report, or undo what it did.

use crate::commands::check;
use crate::evidence::system::SystemSource;
use crate::model::select::Selector;
use crate::read::config;
use crate::read::root::Root;
use crate::remediate::{self, Ctx, Status};
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub(crate) struct RemediateOptions {
    pub root: PathBuf,
    pub dry_run: bool,
    /// Write our files but do not run the boot loader tool.
    pub no_regenerate: bool,
    pub undo: bool,
    /// With a root other than `/`: run the boot loader tool as `chroot ROOT
    /// TOOL`.
    pub chroot: bool,
    pub config: Option<PathBuf>,
    pub dmesg: Option<PathBuf>,
    /// Replace the configured selection when non-empty.
    pub selectors: Vec<Selector>,
    pub expect: Option<usize>,
}

pub(crate) fn run(opts: &RemediateOptions) -> Status {
    let root = Root::new(&opts.root);
    let ctx = Ctx {
        root: root.clone(),
        dry_run: opts.dry_run,
        regenerate: !opts.no_regenerate,
        chroot: opts.chroot,
        path: std::env::var_os("PATH").unwrap_or_default(),
    };
    if opts.undo {
        let t = remediate::undo(&ctx);
        t.print();
        return t.status;
    }
    let (settings, warnings) = config::load(&root, opts.config.as_deref());
    for w in &warnings {
        eprintln!("warning: config: {w}");
    }
    // Flags first, then the configuration the boot check used.
    let selectors = if opts.selectors.is_empty() {
        settings.selectors
    } else {
        opts.selectors.clone()
    };
    let src = SystemSource {
        root,
        dmesg: opts.dmesg.clone(),
        selectors,
        expect: opts.expect.or(settings.expect),
        cmdline: None,
    };
    match check::run(&src) {
        Ok(report) => {
            let t = remediate::remediate(&ctx, &report);
            t.print();
            t.status
        }
        Err(e) => {
            eprintln!("error: {e}");
            Status::Failed
        }
    }
}
