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
//! of locks (`$TMPDIR/anduin-locks`), so that nothing is added beside the user's files, and,
//! when the output exists, through the output itself (see [`OwnerLock::output_itself`]): that
//! one lock is seen whatever the name the output is reached by (a hard link, a bind mount) and
//! whatever `$TMPDIR` each run has. Once
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
    /// A checkpoint directory's own lock, beside its `LOCK` file's
    /// ([`OwnerLock::checkpoint_dir`]); released with it.
    _dir: Option<File>,
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
            _dir: None,
            path: lock_file.to_path_buf(),
        })
    }

    /// Locks the checkpoint directory `root` (created if missing) through the directory
    /// itself and through `<root>/LOCK`, holding both. The directory's own lock (an `flock`
    /// on it, opened for reading) stays with the directory whatever is done to the files in
    /// it: a `LOCK` removed while a run holds it (a cleanup script, a user) would let a second
    /// run lock a new `LOCK` and share the directory, and the directory's lock refuses it. The
    /// `LOCK` file says the holder's PID (and is what an older anduin locks); the directory's
    /// holder is read from `/proc/locks`.
    pub fn checkpoint_dir(root: &Path) -> Result<OwnerLock, LockError> {
        let what = format!("the checkpoint directory `{}`", root.display());
        OwnerLock::directory(root, LOCK_NAME, &what)
    }

    /// Locks directory `root` (created if missing) through the directory itself and through
    /// its file `lock_name`, holding both, as [`OwnerLock::checkpoint_dir`] does for a
    /// checkpoint directory (a coordinator's checkpoint store takes `COORDINATOR.LOCK`): the
    /// file says the holder's PID, the directory's lock outlives the file's removal. `what`
    /// names the directory in errors.
    pub fn directory(root: &Path, lock_name: &str, what: &str) -> Result<OwnerLock, LockError> {
        std::fs::create_dir_all(root).map_err(|cause| LockError::Io {
            what: what.to_string(),
            path: root.join(lock_name),
            cause,
        })?;
        let dir = match OwnerLock::output_itself_named(root, what)? {
            Some(lock) => lock._file,
            // A directory this user may not read: its lock file is all there is.
            None => return OwnerLock::acquire(&root.join(lock_name), what),
        };
        let mut lock = OwnerLock::acquire(&root.join(lock_name), what)?;
        lock._dir = Some(dir);
        Ok(lock)
    }

    /// Locks the output `path` (a file or a directory of part files, existing or not)
    /// through a lock file in `locks` named after its absolute path, resolved as far as it
    /// exists. `locks` is created if missing, writable by everyone (as `/tmp` is), since other
    /// users' runs lock their outputs there too.
    pub fn output(locks: &Path, path: &Path) -> Result<OwnerLock, LockError> {
        Self::output_named(locks, path, &format!("the output `{}`", path.display()))
    }

    /// [`OwnerLock::output`] for a file of the run that errors name `what` (`the events
    /// file `ev.jsonl``).
    pub fn output_named(locks: &Path, path: &Path, what: &str) -> Result<OwnerLock, LockError> {
        let what = what.to_string();
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

    /// Locks the output `path` itself, if it exists as a file or a directory (an `flock` on
    /// the file or directory, opened for reading: nothing in it changes). Since the lock is on
    /// the file, not on a name, it is seen by a run that reaches the same file under another
    /// name (a hard link, a bind mount) or that keeps its output locks under another
    /// `$TMPDIR`. The holder's PID is found in `/proc/locks` (Linux). Anything else (a named
    /// pipe, a device such as `/dev/null`, a path that does not exist yet) is not locked:
    /// `Ok(None)`.
    pub fn output_itself(path: &Path) -> Result<Option<OwnerLock>, LockError> {
        Self::output_itself_named(path, &format!("the output `{}`", path.display()))
    }

    /// [`OwnerLock::output_itself`] for a file of the run that errors name `what`.
    pub fn output_itself_named(path: &Path, what: &str) -> Result<Option<OwnerLock>, LockError> {
        use std::os::unix::fs::MetadataExt;
        let what = what.to_string();
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !meta.is_file() && !meta.is_dir() {
            return Ok(None);
        }
        let file = match File::open(path) {
            Ok(f) => f,
            // Not readable by this user: its path lock is all there is.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(None),
            Err(cause) => {
                return Err(LockError::Io {
                    what,
                    path: path.to_path_buf(),
                    cause,
                })
            }
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(OwnerLock {
                _file: file,
                _dir: None,
                path: path.to_path_buf(),
            })),
            Err(TryLockError::WouldBlock) => Err(LockError::Held {
                what,
                pid: flock_holder(meta.dev(), meta.ino()),
            }),
            Err(TryLockError::Error(cause)) => Err(LockError::Io {
                what,
                path: path.to_path_buf(),
                cause,
            }),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The PID of the process holding an `flock` on the file with device `dev` and inode `ino`,
/// from `/proc/locks` (lines such as `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`), if
/// it can be read.
fn flock_holder(dev: u64, ino: u64) -> Option<u32> {
    // The kernel prints the device as major:minor in hex; st_dev encodes them as glibc's
    // `major()` and `minor()` decode them.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    parse_flock_holder(&text, major, minor, ino)
}

fn parse_flock_holder(text: &str, major: u64, minor: u64, ino: u64) -> Option<u32> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Blocked waiters are listed as `1: -> FLOCK …`: skip them.
        if fields.get(1) != Some(&"FLOCK") {
            return None;
        }
        let mut id = fields.get(5)?.split(':');
        let hex = |s: Option<&str>| s.and_then(|s| u64::from_str_radix(s, 16).ok());
        let (ma, mi) = (hex(id.next())?, hex(id.next())?);
        let i: u64 = id.next()?.parse().ok()?;
        (ma == major && mi == minor && i == ino)
            .then(|| fields.get(4)?.parse().ok())
            .flatten()
    })
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
    fn a_checkpoint_directory_whose_lock_file_was_removed_is_still_locked_by_the_directory() {
        // Issue 19: removing `LOCK` while a run held it let a second run share the directory.
        let dir = tempfile::tempdir().expect("tempdir");
        let first = OwnerLock::checkpoint_dir(dir.path()).expect("free");
        std::fs::remove_file(dir.path().join(LOCK_NAME)).expect("removed");
        match OwnerLock::checkpoint_dir(dir.path()).expect_err("held by the directory") {
            LockError::Held { what, pid } => {
                assert!(what.contains("checkpoint directory"), "{what}");
                assert_eq!(pid, Some(std::process::id()), "read from /proc/locks");
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        let _again = OwnerLock::checkpoint_dir(dir.path()).expect("free once the first is dropped");
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
    fn an_existing_output_is_locked_itself_so_a_hard_link_or_another_lock_directory_sees_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out.csv");
        std::fs::write(&out, "a\n").expect("output");
        let link = dir.path().join("link.csv");
        std::fs::hard_link(&out, &link).expect("hard link");
        let first = OwnerLock::output_itself(&out)
            .expect("free")
            .expect("a file is locked");
        // A hard link is another name: the path locks differ, the file's lock is the same.
        match OwnerLock::output_itself(&link) {
            Err(LockError::Held { what, pid }) => {
                assert!(what.contains("link.csv"), "{what}");
                if Path::new("/proc/locks").exists() {
                    assert_eq!(pid, Some(std::process::id()));
                }
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        let _again = OwnerLock::output_itself(&link)
            .expect("free again")
            .expect("locked");
        // A directory of part files is locked too; what does not exist yet, or is not a
        // file or a directory, is not.
        let _parts = OwnerLock::output_itself(dir.path())
            .expect("free")
            .expect("dir");
        assert!(OwnerLock::output_itself(&dir.path().join("none"))
            .expect("nothing to lock")
            .is_none());
        assert!(OwnerLock::output_itself(Path::new("/dev/null"))
            .expect("a device")
            .is_none());
    }

    #[test]
    fn the_holder_of_a_flock_is_read_from_proc_locks() {
        let text = "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 77 08:01:99 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 99 00:2d:99 0 EOF\n\
                    3: POSIX  ADVISORY  WRITE 5 00:2d:7 0 EOF\n";
        assert_eq!(parse_flock_holder(text, 8, 1, 1234), Some(4242));
        assert_eq!(parse_flock_holder(text, 0, 0x2d, 99), Some(99));
        assert_eq!(parse_flock_holder(text, 0, 0x2d, 7), None, "not an flock");
        assert_eq!(
            parse_flock_holder(text, 8, 1, 99),
            None,
            "a waiter, not the holder"
        );
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
