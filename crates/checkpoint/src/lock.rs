//! One owner at a time: an exclusive lock on a file, held for as long as its guard lives.
//!
//! The lock is the operating system's (`flock`), so it dies with the process that holds it: a
//! `kill -9` leaves no stale lock behind, and nothing has to guess whether a holder is alive.
//! The holder writes its PID into the lock file, so that a refused process can say who holds
//! it. The lock file itself is never deleted: deleting it would let a waiter lock the old file
//! while a newcomer locks a new one under the same name, and both would believe they own it.
//!
//! A query's checkpoint directory is locked through `<dir>/LOCK`; its output files, which may
//! sit anywhere, through a file named after the output's absolute path in a shared directory
//! of locks (`$TMPDIR/anduin-locks`), so that nothing is added beside the user's files. Once
//! queries run on several processes, the fencing epochs of the coordinator take over this
//! role for what they write; this lock is what keeps two local runs apart.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The name of the lock file in a checkpoint directory.
pub const LOCK_NAME: &str = "LOCK";

/// An exclusive lock, released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct OwnerLock {
    // Held for its lock: closing the file releases it.
    _file: File,
    path: PathBuf,
}

/// A lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds it.
    #[error("{what} is in use by another anduin run ({}); wait for it to end, or stop it, and try again", holder(*pid))]
    Held {
        /// What is locked, for the message (`the checkpoint directory `ck``).
        what: String,
        /// The holder's PID, if it could be read.
        pid: Option<u32>,
    },
    /// The lock file could not be created or locked.
    #[error("cannot lock {what} (lock file {}): {cause}", path.display())]
    Io {
        /// What is locked.
        what: String,
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("PID {pid}"),
        None => "PID unknown".into(),
    }
}

impl OwnerLock {
    /// Takes the exclusive lock of `lock_file` (created if missing) without waiting; `what`
    /// names the locked thing in errors. Refused with [`LockError::Held`] when another process
    /// (or another guard of this one) holds it.
    pub fn acquire(lock_file: &Path, what: &str) -> Result<OwnerLock, LockError> {
        let io = |cause| LockError::Io {
            what: what.to_string(),
            path: lock_file.to_path_buf(),
            cause,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_file)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let pid = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(LockError::Held {
                    what: what.to_string(),
                    pid,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // Ours now: say who holds it (a reader may see it empty for a moment: "PID unknown").
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(OwnerLock {
            _file: file,
            path: lock_file.to_path_buf(),
        })
    }

    /// Locks the checkpoint directory `root` (created if missing) through `<root>/LOCK`.
    pub fn checkpoint_dir(root: &Path) -> Result<OwnerLock, LockError> {
        let what = format!("the checkpoint directory `{}`", root.display());
        std::fs::create_dir_all(root).map_err(|cause| LockError::Io {
            what: what.clone(),
            path: root.join(LOCK_NAME),
            cause,
        })?;
        OwnerLock::acquire(&root.join(LOCK_NAME), &what)
    }

    /// Locks the output `path` (a file or a directory of part files, existing or not)
    /// through a lock file in `locks` named after its absolute path, resolved as far as it
    /// exists. `locks` is created if missing, writable by everyone (as `/tmp` is), since other
    /// users' runs lock their outputs there too.
    pub fn output(locks: &Path, path: &Path) -> Result<OwnerLock, LockError> {
        let what = format!("the output `{}`", path.display());
        let io = |cause| LockError::Io {
            what: what.clone(),
            path: locks.to_path_buf(),
            cause,
        };
        if !locks.is_dir() {
            std::fs::create_dir_all(locks).map_err(io)?;
            use std::os::unix::fs::PermissionsExt;
            // Sticky and writable by all, as /tmp: everyone may add lock files, none may
            // remove another's. Best effort: a directory made by another user stays as it is.
            let _ = std::fs::set_permissions(locks, std::fs::Permissions::from_mode(0o1777));
        }
        let key = resolved(path);
        OwnerLock::acquire(&locks.join(lock_file_name(&key)), &what)
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The shared directory of output locks: `$TMPDIR/anduin-locks`.
pub fn output_locks_dir() -> PathBuf {
    std::env::temp_dir().join("anduin-locks")
}

/// The name of the lock file of an output whose resolved path is `key`: readable, and unique
/// through a checksum of the whole path (a long path is cut, its checksum is not).
fn lock_file_name(key: &Path) -> String {
    let text = key.to_string_lossy();
    let readable: String = text
        .chars()
        .rev()
        .take(80)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let crc = crc32fast::hash(text.as_bytes());
    let mut h = crc32fast::Hasher::new_with_initial(0x5eed);
    h.update(text.as_bytes());
    format!("{readable}.{crc:08x}{:08x}.lock", h.finalize())
}

/// `path` made absolute and resolved as far as it exists, so that two names of one output
/// (relative and absolute, through a symbolic link or `..`) lock the same file.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let joined = std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    match (joined.parent(), joined.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|d| d.join(name))
            .unwrap_or_else(|_| joined.clone()),
        _ => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holders_pid_and_taken_once_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = OwnerLock::checkpoint_dir(dir.path()).expect("free");
        let err = OwnerLock::checkpoint_dir(dir.path()).expect_err("held");
        match &err {
            LockError::Held { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.contains("checkpoint directory") && message.contains("PID"),
            "{message}"
        );
        drop(first);
        let again = OwnerLock::checkpoint_dir(dir.path()).expect("free again");
        assert!(again.path().ends_with(LOCK_NAME));
    }

    #[test]
    fn two_names_of_one_output_lock_the_same_file_and_other_outputs_do_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let locks = dir.path().join("locks");
        std::fs::create_dir(dir.path().join("out")).expect("dir");
        let a = OwnerLock::output(&locks, &dir.path().join("out/x.csv")).expect("free");
        let same = dir.path().join("out/../out/x.csv");
        assert!(matches!(
            OwnerLock::output(&locks, &same),
            Err(LockError::Held { .. })
        ));
        let _b = OwnerLock::output(&locks, &dir.path().join("out/y.csv")).expect("another");
        drop(a);
        let _c = OwnerLock::output(&locks, &same).expect("free again");
    }

    #[test]
    fn lock_file_names_are_short_and_tell_long_paths_apart() {
        let long_a = PathBuf::from(format!("/{}/a.csv", "d".repeat(500)));
        let long_b = PathBuf::from(format!("/{}/b/a.csv", "d".repeat(499)));
        let (na, nb) = (lock_file_name(&long_a), lock_file_name(&long_b));
        assert_ne!(na, nb);
        assert!(na.len() < 120, "{na}");
        assert!(lock_file_name(Path::new("/x/q 1.csv")).starts_with("_x_q_1.csv."));
    }
}
