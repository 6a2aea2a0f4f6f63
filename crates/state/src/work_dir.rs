//! Where a run's LSM backends keep their working files: one directory per run, owned by it
//! through an OS file lock, removed when the run ends. A run killed with `kill -9` cannot
//! remove its directory, so each run, as it starts, removes the directories under the same
//! root whose lock nobody holds (their run is dead).
//!
//! ```text
//! <root>/run-<pid>-<random>/LOCK            locked by the run for as long as it lives
//! <root>/run-<pid>-<random>/<op>-<instance> one LSM backend's directory
//! <root>/.new-<random>/                     a run's directory being made (renamed at once)
//! ```
//!
//! A run makes its directory under a temporary name, locks it, then renames it to `run-…`:
//! so every `run-…` directory is locked while its run lives, and one that can be locked is
//! stale. The working files are not durable state (checkpoints are): removing a stale
//! directory loses nothing.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::StateError;

/// The name of the lock file in a run's directory.
const LOCK: &str = "LOCK";

/// The working directory of one run, removed (with everything in it) when dropped.
#[derive(Debug)]
#[must_use = "the directory is removed when this is dropped"]
pub struct RunStateDir {
    dir: PathBuf,
    // Held for its lock until the directory is removed.
    _lock: File,
}

impl RunStateDir {
    /// Removes the stale directories under `root` (created if missing), then makes this run's.
    pub fn create(root: &Path) -> Result<RunStateDir, StateError> {
        let io = |source| StateError::WorkDir {
            dir: root.to_path_buf(),
            source,
        };
        if !root.is_dir() {
            std::fs::create_dir_all(root).map_err(io)?;
            use std::os::unix::fs::PermissionsExt;
            // Shared by every user's runs, as /tmp is (best effort: another user's root stays
            // as it is).
            let _ = std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o1777));
        }
        for stale in remove_stale(root) {
            tracing::info!(dir = %stale.display(), "removed the state directory of a run that is gone");
        }
        let staging = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(root)
            .map_err(io)?;
        let lock = File::create(staging.path().join(LOCK)).map_err(io)?;
        lock.try_lock().map_err(|e| match e {
            TryLockError::Error(e) => io(e),
            TryLockError::WouldBlock => io(std::io::Error::other("a fresh lock file is held")),
        })?;
        let name = staging
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().trim_start_matches(".new-").to_string())
            .unwrap_or_default();
        let dir = root.join(format!("run-{}-{name}", std::process::id()));
        std::fs::rename(staging.path(), &dir).map_err(io)?;
        // Renamed away: the staging guard finds nothing to remove.
        let _ = staging.keep();
        Ok(RunStateDir { dir, _lock: lock })
    }

    /// The run's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The working directory of instance `instance` of operator `operator` (not created).
    pub fn backend_dir(&self, operator: &str, instance: usize) -> PathBuf {
        let clean = anduin_types::file_safe(operator);
        self.dir.join(format!("{clean}-{instance}"))
    }
}

impl Drop for RunStateDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove the run's state directory");
        }
    }
}

/// Removes every `run-…` directory under `root` whose lock nobody holds, and returns them.
/// Directories it cannot inspect or remove (another user's) are left alone.
pub fn remove_stale(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_run = entry.file_name().to_string_lossy().starts_with("run-");
        if !is_run || !path.is_dir() {
            continue;
        }
        let lock = match File::open(path.join(LOCK)) {
            Ok(f) => Some(f),
            // Being removed by its run (or by another run's clean-up).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => continue,
        };
        let free = lock.as_ref().is_none_or(|f| f.try_lock().is_ok());
        if free && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_is_removed_when_dropped_and_a_live_one_is_never_stale() {
        let root = tempfile::tempdir().expect("tempdir");
        let a = RunStateDir::create(root.path()).expect("creates");
        let b = RunStateDir::create(root.path()).expect("creates");
        assert_ne!(a.path(), b.path());
        std::fs::create_dir(a.backend_dir("win/1", 2)).expect("inside");
        assert!(a.backend_dir("win/1", 2).ends_with("win_1-2"));
        assert!(remove_stale(root.path()).is_empty(), "both are alive");
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
        assert!(b.path().exists());
    }

    #[test]
    fn a_directory_whose_run_died_is_removed_by_the_next_run() {
        let root = tempfile::tempdir().expect("tempdir");
        // What a killed run leaves: its directory, with a lock file nobody holds.
        let dead = root.path().join("run-999999-abc");
        std::fs::create_dir_all(dead.join("win-0")).expect("dir");
        std::fs::write(dead.join(LOCK), "").expect("lock");
        std::fs::write(dead.join("win-0/data"), vec![0u8; 1024]).expect("state");
        let unrelated = root.path().join("keep-me");
        std::fs::create_dir(&unrelated).expect("dir");
        let live = RunStateDir::create(root.path()).expect("creates");
        assert!(!dead.exists(), "the dead run's directory is gone");
        assert!(unrelated.exists(), "only run directories are touched");
        assert!(live.path().exists());
    }
}
