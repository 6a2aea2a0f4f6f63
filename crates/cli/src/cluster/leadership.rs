//! Which of several coordinators leads (`anduin coordinator --leader-election
//! file:///PATH`): the one that holds an exclusive lock on PATH. The others stand by — they
//! listen, refusing every connection with [`super::coordinators::STANDING_BY`] so that
//! workers, executors and clients go on to the next address of their `--coordinator` list —
//! until the lock is theirs; the one that gets it opens the catalog the leader kept in the
//! shared `--state-dir` and takes the running queries over, as a restarted coordinator does.
//!
//! The lock is the operating system's (`flock`): it is released when its holder's process
//! ends, however it ends, and never while it lives — a paused leader keeps it, so no two
//! coordinators ever lead at once. That holds for coordinators on one machine (or on a file
//! system whose locks every machine sees). Each leader is given a term, one more than the
//! last leader's; workers refuse a coordinator of an older term than one they have seen.
//!
//! Not yet: leases of a lock service (`etcd://`, `redlock://`), for coordinators on several
//! machines: refused, saying so.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// `--leader-election`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Election {
    /// The coordinator that holds the lock on this file leads.
    File(PathBuf),
}

/// Parses `--leader-election`.
pub fn parse_election(s: &str) -> Result<Election, String> {
    if let Some(path) = s.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(format!(
                "`{s}`: give an absolute path after file:// (file:///var/lib/anduin/leader.lock)"
            ));
        }
        return Ok(Election::File(PathBuf::from(path)));
    }
    match s.split_once("://") {
        Some((scheme @ ("etcd" | "redlock"), _)) => Err(format!(
            "`{s}`: leader election through {scheme} is not supported yet; coordinators on one \
             machine can share a lock file: --leader-election file:///PATH"
        )),
        _ => Err(format!(
            "`{s}` is not a leader election anduin knows: give file:///PATH (a lock file every \
             coordinator of the cluster reaches)"
        )),
    }
}

/// This coordinator's leadership: held as long as this value lives (and the process).
#[derive(Debug)]
pub struct Leadership {
    _lock: File,
    /// One more than the last leader's.
    pub term: u64,
}

/// The file beside the lock in which the leader says what its standbys must share with it.
fn state_note(lock: &Path) -> PathBuf {
    let mut name = lock.file_name().unwrap_or_default().to_os_string();
    name.push(".state-dir");
    lock.with_file_name(name)
}

/// The file in the state directory that names the lock its coordinators elect by.
const LOCK_NOTE: &str = "leader-lock";

/// What every coordinator electing by one lock shares with the leader: the catalog a standby
/// takes the queries over from, and the checkpoints it restores them from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shared {
    /// `--state-dir`, canonical.
    pub state_dir: PathBuf,
    /// `--checkpoint-store`, a local one as a canonical path.
    pub checkpoint_store: String,
}

impl Shared {
    /// What a coordinator with `state_dir` (which exists) and `checkpoint_store` shares.
    pub fn of(state_dir: &Path, checkpoint_store: &str) -> Result<Self> {
        let state_dir = state_dir.canonicalize().with_context(|| {
            format!("cannot find the state directory `{}`", state_dir.display())
        })?;
        let local = match checkpoint_store.split_once("://") {
            None => Some(checkpoint_store),
            Some(("file", path)) => Some(path),
            Some(_) => None,
        };
        let checkpoint_store = match local.map(Path::new) {
            Some(p) => p
                .canonicalize()
                .or_else(|_| std::path::absolute(p))
                .map_or_else(
                    |_| checkpoint_store.to_string(),
                    |p| p.display().to_string(),
                ),
            None => checkpoint_store.to_string(),
        };
        Ok(Self {
            state_dir,
            checkpoint_store,
        })
    }
}

/// Refuses, before anything is started, a coordinator that would take over what it cannot:
/// one whose state directory or checkpoint store is not the leader's, or whose state
/// directory's coordinators elect by another lock. Nothing is refused on a first start.
pub fn check(election: &Election, shared: &Shared) -> Result<()> {
    let Election::File(lock) = election;
    let note = state_note(lock);
    if let Ok(text) = std::fs::read_to_string(&note) {
        let theirs: Option<Shared> = serde_json::from_str(&text).ok();
        if theirs.as_ref() != Some(shared) {
            let (dir, store) = theirs.map_or_else(
                || ("?".to_string(), "?".to_string()),
                |t| (t.state_dir.display().to_string(), t.checkpoint_store),
            );
            bail!(
                "the coordinators electing a leader by `{}` keep their catalog in `{dir}` and \
                 their checkpoints in `{store}`, this one in `{}` and `{}`: give every \
                 coordinator of the cluster the same --state-dir and --checkpoint-store (a \
                 standby takes the running queries over from the leader's catalog and \
                 checkpoints), or remove `{}` if that cluster is gone for good",
                lock.display(),
                shared.state_dir.display(),
                shared.checkpoint_store,
                note.display()
            );
        }
    }
    let theirs = shared.state_dir.join(LOCK_NOTE);
    if let Ok(other) = std::fs::read_to_string(&theirs) {
        if Path::new(other.trim()) != lock {
            bail!(
                "the coordinators of the state directory `{}` elect their leader by `{}`, this \
                 one by `{}`: give it the same --leader-election (or remove `{}` if no \
                 coordinator elects by that lock any more)",
                shared.state_dir.display(),
                other.trim(),
                lock.display(),
                theirs.display()
            );
        }
    }
    Ok(())
}

/// The file in the state directory that holds the last leader's term.
const TERM_FILE: &str = "leader-term";

/// Waits until this coordinator, sharing `shared`, leads by `election`; `standing_by` is
/// told once, with the PID of the leader, if another leads at first. Refuses what [`check`]
/// refuses, at once and again once the lock is its (the leader before it may have been
/// another cluster's).
pub fn lead(
    election: &Election,
    shared: &Shared,
    standing_by: impl FnOnce(Option<u32>),
) -> Result<Leadership> {
    let Election::File(path) = election;
    check(election, shared)?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open the leader's lock `{}`", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            standing_by(holder);
            file.lock()
                .with_context(|| format!("cannot wait for the lock `{}`", path.display()))?;
            // The leader may have been another cluster's (it started after this).
            check(election, shared)?;
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock `{}`", path.display()))
        }
    }
    let write = |file: &mut File| -> std::io::Result<()> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        write!(file, "{}", std::process::id())?;
        file.sync_all()
    };
    write(&mut file).with_context(|| format!("cannot write the lock `{}`", path.display()))?;
    let term = next_term(&shared.state_dir)?;
    let note = state_note(path);
    std::fs::write(&note, serde_json::to_vec(shared)?)
        .with_context(|| format!("cannot write `{}`", note.display()))?;
    let theirs = shared.state_dir.join(LOCK_NOTE);
    std::fs::write(&theirs, path.display().to_string())
        .with_context(|| format!("cannot write `{}`", theirs.display()))?;
    Ok(Leadership { _lock: file, term })
}

/// Records and returns the term after the last leader's (1 for the first).
fn next_term(state_dir: &Path) -> Result<u64> {
    let path = state_dir.join(TERM_FILE);
    let last: u64 = match std::fs::read_to_string(&path) {
        Ok(t) => t.trim().parse().with_context(|| {
            format!(
                "`{}` holds no term: it is the coordinators' own file",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let term = last + 1;
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).with_context(|| format!("cannot write `{}`", tmp.display()))?;
    write!(f, "{term}")?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(term)
}

/// Whether a worker that has seen a coordinator of term `seen` refuses one of term `offered`
/// (a coordinator that led before and no longer does; one without elections has none).
pub fn older_term(seen: Option<u64>, offered: Option<u64>) -> bool {
    matches!((seen, offered), (Some(s), Some(o)) if o < s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lock_file_elects_for_now_and_the_others_say_so() {
        assert_eq!(
            parse_election("file:///tmp/l"),
            Ok(Election::File("/tmp/l".into()))
        );
        assert!(parse_election("file://rel/l")
            .expect_err("refused")
            .contains("absolute"));
        assert!(parse_election("etcd://127.0.0.1:2379")
            .expect_err("refused")
            .contains("not supported yet"));
        assert!(parse_election("zk://x")
            .expect_err("refused")
            .contains("not a leader"));
    }

    /// What a coordinator with the state directory `dir` and checkpoints in `dir/ck` shares.
    fn shared(dir: &Path) -> Shared {
        Shared::of(dir, &dir.join("ck").display().to_string()).expect("the directory exists")
    }

    #[test]
    fn each_leader_has_the_term_after_the_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = Election::File(dir.path().join("lock"));
        let first = lead(&lock, &shared(dir.path()), |_| panic!("nobody leads")).expect("leads");
        assert_eq!(first.term, 1);
        drop(first);
        let second = lead(&lock, &shared(dir.path()), |_| panic!("nobody leads")).expect("leads");
        assert_eq!(second.term, 2);
    }

    #[test]
    fn a_standby_waits_for_the_lock_and_leads_when_it_is_let_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = Election::File(dir.path().join("lock"));
        let first = lead(&lock, &shared(dir.path()), |_| panic!("nobody leads")).expect("leads");
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        let standby = {
            let (lock, state) = (lock.clone(), shared(dir.path()));
            std::thread::spawn(move || {
                lead(&lock, &state, |holder| {
                    told_tx.send(holder).expect("the test waits");
                })
            })
        };
        // It said who leads before it waited for the lock.
        let holder = told_rx.recv().expect("the standby says it stands by");
        assert_eq!(holder, Some(std::process::id()));
        drop(first);
        let second = standby.join().expect("no panic").expect("leads");
        assert_eq!(second.term, 2);
    }

    #[test]
    fn a_coordinator_with_another_state_directory_or_store_or_lock_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let lock = Election::File(dir.path().join("lock"));
        let _first = lead(&lock, &shared(&a), |_| panic!("nobody leads")).expect("leads");
        let refused = |e: anyhow::Error, what: &str| {
            let e = format!("{e:#}");
            assert!(e.contains(what), "{e}");
        };
        let e = lead(&lock, &shared(&b), |_| panic!("refused before")).expect_err("another dir");
        refused(e, "same --state-dir and --checkpoint-store");
        // The same state directory, checkpoints elsewhere.
        let elsewhere = Shared::of(&a, "s3://bucket/ck").expect("a exists");
        let e = lead(&lock, &elsewhere, |_| panic!("refused before")).expect_err("another store");
        refused(e, "s3://bucket/ck");
        // Its state directory's coordinators elect by another lock: refused before it leads
        // by its own (which would cost a term).
        let other = Election::File(dir.path().join("other.lock"));
        let e = lead(&other, &shared(&a), |_| panic!("refused before")).expect_err("another lock");
        refused(e, "same --leader-election");
        assert_eq!(
            std::fs::read_to_string(a.join(TERM_FILE))
                .expect("a term")
                .trim(),
            "1"
        );
    }

    #[test]
    fn a_worker_refuses_a_coordinator_of_an_older_term() {
        assert!(older_term(Some(3), Some(2)));
        assert!(!older_term(Some(3), Some(3)));
        assert!(!older_term(Some(3), Some(4)));
        assert!(!older_term(None, Some(1)));
        assert!(!older_term(Some(3), None));
    }
}
