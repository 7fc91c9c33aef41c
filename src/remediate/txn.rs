//! A small transaction: what to take back when a change fails half-way.

use crate::atomic_file;
use crate::read::root::Root;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Default)]
pub(crate) struct Rollback {
    /// A file we replaced or created, with its previous content.
    pub file: Option<(PathBuf, Option<Vec<u8>>)>,
    /// Directories we created, outermost first.
    dirs: Vec<PathBuf>,
}

impl Rollback {
    pub(crate) fn take_back(&mut self) {
        if let Some((path, previous)) = self.file.take() {
            let _ = match previous {
                Some(bytes) => atomic_file::write(&path, &bytes, 0o644),
                None => atomic_file::remove(&path),
            };
        }
        for d in self.dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Creates `dir` (a system path) under the root with any missing parents,
/// returning the ones it created, outermost first, as system paths.
pub(crate) fn ensure_dir(
    root: &Root,
    dir: &str,
    undo_log: &mut Rollback,
) -> Result<Vec<String>, String> {
    let mut created = Vec::new();
    let mut sys = PathBuf::from("/");
    for comp in Path::new(dir).components().skip(1) {
        sys.push(comp);
        let real = root.join(&sys);
        if real.is_dir() {
            continue;
        }
        match std::fs::create_dir(&real) {
            Ok(()) => {
                let _ = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755));
                created.push(sys.to_string_lossy().into_owned());
                undo_log.dirs.push(real);
            }
            Err(e) => return Err(format!("cannot create {}: {e}", real.display())),
        }
    }
    Ok(created)
}

/// Writes one file of ours (`text` at `path`, when `needed`), creating
/// `dir` and the state directory as needed, as one step: on failure
/// everything done is taken back. Returns the directories created, as
/// system paths, and the log that takes the step back if a later one
/// fails.
pub(crate) fn install_file(
    root: &Root,
    dir: &str,
    path: &Path,
    text: &[u8],
    mode: u32,
    previous: Option<Vec<u8>>,
    needed: bool,
) -> Result<(Vec<String>, Rollback), String> {
    let mut undo_log = Rollback::default();
    let result = (|| -> Result<Vec<String>, String> {
        let mut created = ensure_dir(root, dir, &mut undo_log)?;
        if needed {
            atomic_file::write(path, text, mode)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            undo_log.file = Some((path.to_path_buf(), previous));
        }
        created.extend(ensure_dir(root, "/var/lib/gpu-preflight", &mut undo_log)?);
        Ok(created)
    })();
    match result {
        Ok(created) => Ok((created, undo_log)),
        Err(msg) => {
            undo_log.take_back();
            Err(msg)
        }
    }
}
