//! Which boot loader configuration the target root has, and how to run its
//! tools: on `PATH` for `/`, inside the root (`--chroot`) for another one.

use crate::read::root::Root;
use crate::remediate::{Ctx, Transcript};
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where tools are looked for inside a root other than `/`.
const SYSTEM_BIN_DIRS: [&str; 4] = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Backend {
    /// Debian/Ubuntu: our fragment in /etc/default/grub.d.
    GrubD,
    /// Fedora/RHEL BLS entries edited by grubby (its path on the target).
    Grubby(PathBuf),
    /// systemd-boot / kernel-install: a plugin of ours in
    /// /etc/kernel/install.d.
    SystemdBoot,
    /// Nothing we know how to edit; the reason.
    Manual(String),
}

/// Picks the backend from what the root holds.
pub(crate) fn detect(ctx: &Ctx) -> Backend {
    let root = &ctx.root;
    // systemd-boot first: a Fedora-style BLS directory may exist there too,
    // but grubby would then edit entries systemd-boot does not read.
    for esp in ["/boot", "/efi", "/boot/efi"] {
        if root.join(format!("{esp}/loader/loader.conf")).is_file() {
            return Backend::SystemdBoot;
        }
    }
    if has_bls_entries(root) {
        return match find_tool(ctx, "grubby") {
            Some(p) => Backend::Grubby(p),
            None => Backend::Manual(
                "boot entries in /boot/loader/entries (BLS) but no grubby to edit them".into(),
            ),
        };
    }
    if root.join("/etc/default/grub").is_file() {
        return Backend::GrubD;
    }
    if root.join("/etc/kernel/cmdline").is_file() {
        return Backend::SystemdBoot;
    }
    Backend::Manual("no /etc/default/grub, BLS entries or systemd-boot found".into())
}

fn has_bls_entries(root: &Root) -> bool {
    std::fs::read_dir(root.join("/boot/loader/entries"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".conf"))
        })
        .unwrap_or(false)
}

/// Finds a tool of the target system: on PATH for `/`, in the standard
/// directories inside any other root. Returns its path as seen by the
/// target system.
pub(crate) fn find_tool(ctx: &Ctx, name: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if ctx.root.is_live() {
        std::env::split_paths(&ctx.path)
            .map(|d| d.join(name))
            .find(|p| p.is_absolute() && executable(p))
    } else {
        SYSTEM_BIN_DIRS
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| executable(&ctx.root.join(p)))
    }
}

/// Applies the `--root`/`--chroot` rule to a tool's command line: as is
/// for `/`, through `chroot ROOT` when the caller prepared that root, and
/// otherwise `None`, with the reason said: boot loader tools probe the
/// running system's disks.
pub(crate) fn wrap_for_root(
    ctx: &Ctx,
    argv: Vec<OsString>,
    t: &mut Transcript,
) -> Option<Vec<OsString>> {
    if ctx.root.is_live() {
        return Some(argv);
    }
    if ctx.chroot {
        // chroot itself is a tool of the running system, found on PATH.
        let chroot = std::env::split_paths(&ctx.path)
            .map(|d| d.join("chroot"))
            .find(|p| p.is_absolute() && p.is_file())
            .map(PathBuf::into_os_string)
            .unwrap_or_else(|| "chroot".into());
        let mut v: Vec<OsString> = vec![chroot, ctx.root.path().as_os_str().to_owned()];
        v.extend(argv);
        return Some(v);
    }
    t.say(not_running(ctx, &format!("`{}`", shell_words(&argv))));
    None
}

/// Why a tool is not run for another root, and what to do instead.
pub(crate) fn not_running(ctx: &Ctx, what: &str) -> String {
    format!(
        "not running {what} for {}: boot loader tools probe the running system's disks. \
         Run it inside that system (or pass --chroot after mounting /dev, /proc and /sys there).",
        ctx.root.path().display()
    )
}

pub(crate) fn run_tool(argv: &[OsString]) -> Result<(), String> {
    let Some((tool, args)) = argv.split_first() else {
        return Err("no command to run".into());
    };
    let shown = shell_words(argv);
    let status = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

/// A command line as one would type it (for messages, not for a shell).
pub(crate) fn shell_words(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || "\"'$`\\".contains(c)) {
                format!("'{}'", s.replace('\'', "'\\''"))
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The same command line as strings, for the record.
pub(crate) fn as_strings(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}
