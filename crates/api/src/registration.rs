//! How `anduin ctl` finds the runs of this user on this machine without an address.
//!
//! Each run that serves the API writes `<name>.<pid>.json` into a per-user runtime directory
//! — `$XDG_RUNTIME_DIR/anduin` when that is set, else `$TMPDIR/anduin-<uid>` (or
//! `/tmp/anduin-<uid>`) — made with mode 0700 and refused when someone else owns it. The
//! file holds the query's name, the process id, the API's URL and whether a token is needed
//! (never the token). A [`RegistrationGuard`] removes it when the run ends; a run killed
//! with `kill -9` leaves it behind, and [`RuntimeDir::list`] removes the entries whose
//! process is gone. Entries that are not regular files named after what they hold (symbolic
//! links, FIFOs, junk) are skipped: never followed, never removed.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A run, as its registration file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The query's name.
    pub name: String,
    /// The process that runs it.
    pub pid: u32,
    /// Its API, `http://ADDR`.
    pub api: String,
    /// Whether requests need a bearer token.
    pub token: bool,
}

/// Why the runtime directory or a registration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The directory could not be made or read.
    #[error("cannot use the runtime directory {dir}: {reason}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// The directory (or a symbolic link there) belongs to someone else: its entries
    /// could point `anduin ctl` at another user's server.
    #[error(
        "refusing the runtime directory {dir}: it is owned by uid {owner}, not by you (uid {uid}); \
         remove it, or set XDG_RUNTIME_DIR or TMPDIR to a directory of your own"
    )]
    NotOwned {
        /// The directory.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// This user.
        uid: u32,
    },
    /// The path is not a directory.
    #[error("refusing the runtime directory {dir}: it is not a directory (remove it)")]
    NotADirectory {
        /// The path.
        dir: PathBuf,
    },
    /// The registration file could not be written.
    #[error("cannot write the registration {file}: {reason}")]
    Write {
        /// The file.
        file: PathBuf,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// The query's name cannot be part of a file name.
    #[error(transparent)]
    BadName(#[from] crate::RegistryError),
}

/// Where the runtime directory is, from the environment's `XDG_RUNTIME_DIR` and `TMPDIR` and
/// the user's id. A relative (or empty) `XDG_RUNTIME_DIR` is ignored, as the XDG Base
/// Directory specification says; so is a relative `TMPDIR`: the directory would depend on
/// where a command is started.
pub fn runtime_dir_path(
    xdg_runtime_dir: Option<OsString>,
    tmpdir: Option<OsString>,
    uid: u32,
) -> PathBuf {
    let absolute = |d: &OsString| Path::new(d).is_absolute();
    match xdg_runtime_dir.filter(absolute) {
        Some(xdg) => PathBuf::from(xdg).join("anduin"),
        None => PathBuf::from(tmpdir.filter(absolute).unwrap_or_else(|| "/tmp".into()))
            .join(format!("anduin-{uid}")),
    }
}

/// The largest registration file read: ours are a few hundred bytes.
const MAX_REGISTRATION_BYTES: u64 = 64 * 1024;

/// The registration in `path`, if it is a regular file (never through a symbolic link, never
/// a FIFO that would block) that parses.
fn read_registration(path: &Path) -> Option<Registration> {
    use std::io::Read;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_REGISTRATION_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// This process's user id.
fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Whether process `pid` exists (a process of another user counts as existing).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 checks for the process and delivers nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The per-user runtime directory, made and checked.
#[derive(Debug, Clone)]
pub struct RuntimeDir {
    path: PathBuf,
}

impl RuntimeDir {
    /// The directory the environment names ([`runtime_dir_path`]), made if missing.
    pub fn from_env() -> Result<Self, RegistrationError> {
        Self::open(runtime_dir_path(
            std::env::var_os("XDG_RUNTIME_DIR"),
            std::env::var_os("TMPDIR"),
            current_uid(),
        ))
    }

    /// `path`, made with mode 0700 if missing; refused unless it is a directory (not a
    /// symbolic link) owned by this user. A directory of this user's that others can read is
    /// made private.
    pub fn open(path: PathBuf) -> Result<Self, RegistrationError> {
        let io = |reason| RegistrationError::Io {
            dir: path.clone(),
            reason,
        };
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        let meta = fs::symlink_metadata(&path).map_err(io)?;
        let uid = current_uid();
        if meta.uid() != uid {
            return Err(RegistrationError::NotOwned {
                dir: path,
                owner: meta.uid(),
                uid,
            });
        }
        if !meta.is_dir() {
            return Err(RegistrationError::NotADirectory { dir: path });
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).map_err(io)?;
        }
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `entry` (atomically: a reader sees all of it or nothing) and returns the guard
    /// that removes it.
    pub fn register(&self, entry: &Registration) -> Result<RegistrationGuard, RegistrationError> {
        crate::registry::check_name(&entry.name)?;
        let file = self.path.join(format!("{}.{}.json", entry.name, entry.pid));
        let tmp = self
            .path
            .join(format!(".{}.{}.json.tmp", entry.name, entry.pid));
        let write = |reason| RegistrationError::Write {
            file: file.clone(),
            reason,
        };
        let json = serde_json::to_vec_pretty(entry).map_err(|e| write(std::io::Error::other(e)))?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(write)?;
        f.write_all(&json).map_err(write)?;
        drop(f);
        fs::rename(&tmp, &file).map_err(write)?;
        tracing::debug!(file = %file.display(), api = %entry.api, "registered for anduin ctl");
        Ok(RegistrationGuard { file })
    }

    /// The runs registered, sorted by name and pid. Entries whose process is gone are
    /// removed; unreadable ones are skipped.
    pub fn list(&self) -> Result<Vec<Registration>, RegistrationError> {
        let entries = fs::read_dir(&self.path).map_err(|reason| RegistrationError::Io {
            dir: self.path.clone(),
            reason,
        })?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            // Only regular files: a symbolic link (to anywhere) or anything else is skipped,
            // never followed, and left alone, as is a file that does not parse (it is not
            // ours: ours are written whole, by a rename).
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                tracing::debug!(file = %path.display(), "skipping a registration that is not a regular file");
                continue;
            }
            let Some(r) = read_registration(&path) else {
                tracing::debug!(file = %path.display(), "skipping an unreadable registration");
                continue;
            };
            // A file we wrote is named after what it holds.
            if name != format!("{}.{}.json", r.name, r.pid) {
                tracing::debug!(file = %path.display(), "skipping a registration whose name does not match its content");
                continue;
            }
            if alive(r.pid) {
                out.push(r);
            } else {
                tracing::debug!(file = %path.display(), pid = r.pid, "removing the registration of a run that is gone");
                let _ = fs::remove_file(&path);
            }
        }
        out.sort_by(|a, b| (&a.name, a.pid).cmp(&(&b.name, b.pid)));
        Ok(out)
    }
}

/// A run's registration file; removed when dropped (when the run ends). Keep it for as
/// long as the API serves the query; dropping it early hides the run from `anduin ctl`.
#[derive(Debug)]
#[must_use = "the registration is removed when this is dropped"]
pub struct RegistrationGuard {
    file: PathBuf,
}

impl RegistrationGuard {
    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

impl Drop for RegistrationGuard {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(file = %self.file.display(), error = %e, "cannot remove the registration");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, pid: u32) -> Registration {
        Registration {
            name: name.into(),
            pid,
            api: "http://127.0.0.1:4000".into(),
            token: false,
        }
    }

    #[test]
    fn the_directory_is_under_xdg_runtime_dir_else_tmpdir_else_tmp() {
        assert_eq!(
            runtime_dir_path(Some("/run/user/7".into()), Some("/t".into()), 7),
            PathBuf::from("/run/user/7/anduin")
        );
        assert_eq!(
            runtime_dir_path(None, Some("/t".into()), 7),
            PathBuf::from("/t/anduin-7")
        );
        assert_eq!(
            runtime_dir_path(Some("".into()), None, 7),
            PathBuf::from("/tmp/anduin-7")
        );
        // Relative: ignored (the XDG specification), whatever the working directory.
        assert_eq!(
            runtime_dir_path(Some("run/user/7".into()), Some("/t".into()), 7),
            PathBuf::from("/t/anduin-7")
        );
        assert_eq!(
            runtime_dir_path(Some(".".into()), Some("tmp".into()), 7),
            PathBuf::from("/tmp/anduin-7")
        );
    }

    #[test]
    fn the_directory_is_made_private_and_a_registration_lives_as_long_as_its_guard() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = RuntimeDir::open(tmp.path().join("anduin")).expect("made");
        let mode = fs::metadata(dir.path()).expect("exists").mode();
        assert_eq!(mode & 0o777, 0o700);
        let me = std::process::id();
        let guard = dir.register(&entry("sensors", me)).expect("written");
        assert_eq!(guard.file(), dir.path().join(format!("sensors.{me}.json")));
        assert_eq!(dir.list().expect("listed"), vec![entry("sensors", me)]);
        drop(guard);
        assert_eq!(dir.list().expect("listed"), vec![]);
    }

    #[test]
    fn a_registration_whose_process_is_gone_is_skipped_and_removed() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = RuntimeDir::open(tmp.path().join("anduin")).expect("made");
        // A process that has exited and been reaped: its pid names no process (unless the
        // system reuses it at once, which it does not do within a test's lifetime).
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("`true` runs");
        let dead = child.id();
        child.wait().expect("reaped");
        let stale = dir.register(&entry("old", dead)).expect("written");
        let file = stale.file().to_path_buf();
        std::mem::forget(stale); // as a run killed with -9 leaves it
        let me = std::process::id();
        let _live = dir.register(&entry("live", me)).expect("written");
        fs::write(dir.path().join("junk.json"), "not json").expect("written");
        assert_eq!(dir.list().expect("listed"), vec![entry("live", me)]);
        assert!(!file.exists(), "the stale registration is removed");
        assert!(
            dir.path().join("junk.json").exists(),
            "an unreadable file is only skipped"
        );
    }

    #[test]
    fn symbolic_links_fifos_and_misnamed_entries_are_skipped_never_followed_nor_removed() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = RuntimeDir::open(tmp.path().join("anduin")).expect("made");
        let me = std::process::id();
        // A live registration elsewhere, linked in under the name it would have.
        let elsewhere = tmp.path().join("elsewhere.json");
        fs::write(
            &elsewhere,
            serde_json::to_vec(&entry("linked", me)).expect("JSON"),
        )
        .expect("written");
        let link = dir.path().join(format!("linked.{me}.json"));
        std::os::unix::fs::symlink(&elsewhere, &link).expect("a link");
        // A FIFO would block a plain read forever.
        let fifo = dir.path().join(format!("fifo.{me}.json"));
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: a valid C string; mkfifo has no other precondition.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        // A regular file whose name does not match what it says.
        fs::write(
            dir.path().join("other.json"),
            serde_json::to_vec(&entry("sensors", me)).expect("JSON"),
        )
        .expect("written");
        assert_eq!(dir.list().expect("listed"), vec![]);
        assert!(link.symlink_metadata().is_ok(), "the link is left alone");
        assert!(fifo.exists() && elsewhere.exists());
    }

    #[test]
    fn a_directory_others_can_read_is_made_private_and_a_file_in_its_place_is_refused() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let open = tmp.path().join("open");
        fs::create_dir(&open).expect("made");
        fs::set_permissions(&open, fs::Permissions::from_mode(0o755)).expect("chmod");
        RuntimeDir::open(open.clone()).expect("ours, so made private");
        assert_eq!(fs::metadata(&open).expect("exists").mode() & 0o777, 0o700);
        let file = tmp.path().join("file");
        fs::write(&file, "").expect("written");
        let e = RuntimeDir::open(file).expect_err("refused");
        assert!(matches!(e, RegistrationError::NotADirectory { .. }), "{e}");
    }

    #[test]
    fn a_directory_owned_by_someone_else_is_refused() {
        // As root, a directory given to `nobody`; as anyone else, `/` (root's).
        if current_uid() == 0 {
            let tmp = tempfile::tempdir().expect("a temporary directory");
            let theirs = tmp.path().join("theirs");
            fs::create_dir(&theirs).expect("made");
            std::os::unix::fs::chown(&theirs, Some(65534), None).expect("root can chown");
            let e = RuntimeDir::open(theirs).expect_err("refused");
            assert!(
                matches!(e, RegistrationError::NotOwned { owner: 65534, .. }),
                "{e}"
            );
        } else {
            let e = RuntimeDir::open(PathBuf::from("/")).expect_err("refused");
            assert!(
                matches!(e, RegistrationError::NotOwned { owner: 0, .. }),
                "{e}"
            );
        }
    }
}
