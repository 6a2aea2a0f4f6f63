//! The coordinator's durable catalog: what it must not forget (queries with their source and
//! settings, plans, placements, checkpoint pointers, parameter values, control history,
//! workers), kept in a state directory as HDFS keeps its namespace, as a snapshot (the
//! fsimage) plus an edit log:
//!
//! ```text
//! <state-dir>/LOCK                                  held while a coordinator has the catalog open
//! <state-dir>/snapshot-00000000000000000040.img     the catalog after edits 1..=40
//! <state-dir>/edits-00000000000000000001.log        edits 1..=40 (kept until a newer snapshot exists)
//! <state-dir>/edits-00000000000000000041.log        edits 41.. (appended to now)
//! ```
//!
//! Every change is an [`Edit`]; [`Catalog::append`] checks it against the catalog, appends it
//! as a length-prefixed, CRC32-checked record, fsyncs the segment, and only then applies it
//! and returns: the caller acknowledges after. After [`CatalogOptions::snapshot_every_edits`]
//! edits or [`CatalogOptions::snapshot_every`], a new snapshot is written under a temporary
//! name, fsynced, renamed, the directory fsynced, and the edit log rolled to a new segment
//! numbered after the snapshot's last edit. The last [`CatalogOptions::keep_snapshots`]
//! snapshots are kept, and every segment holding an edit after the oldest of them.
//!
//! [`Catalog::open`] recovers: it loads the newest valid snapshot (a damaged one is set aside
//! as `*.corrupt`, and the one before it is used), then replays the edits after it, through
//! the same [`CatalogState::apply`] as live edits. Edits the snapshot holds are skipped, so a
//! crash between a snapshot's rename and the roll of the log is harmless. A record cut or
//! zeroed at the end of the last segment (a crash in the middle of an append, so never
//! acknowledged) is truncated away and reported; damage anywhere else is an error naming the
//! file and byte offset — edits are never silently skipped. An `flock` on `LOCK` keeps a
//! second coordinator out (and dies with its holder).
//!
//! Coordinators elected by a lease keep one directory per leader term ([`terms`]), or, with
//! no shared file system, the catalog in the checkpoint store's object store, one object per
//! edit created only if absent, which fences a superseded leader where its edits land
//! ([`objects`], [`Catalog::take_over_objects`]).
//!
//! # Example
//!
//! ```
//! use std::time::Instant;
//! use anduin_coordinator::catalog::{Catalog, CatalogOptions, Edit};
//! use anduin_coordinator::WorkerId;
//!
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! let register = Edit::WorkerRegistered { worker: WorkerId(1), address: "127.0.0.1:7401".into(), slots: 4 };
//! let mut catalog = Catalog::open(dir.path(), CatalogOptions::default(), Instant::now())?;
//! let txid = catalog.append(register, Instant::now())?; // durable once this returns
//! drop(catalog);
//!
//! let catalog = Catalog::open(dir.path(), CatalogOptions::default(), Instant::now())?;
//! assert_eq!(catalog.last_txid(), txid);
//! assert_eq!(catalog.state().workers[&WorkerId(1)].slots, 4);
//! # Ok::<(), anduin_coordinator::catalog::CatalogError>(())
//! ```

mod edit;
mod error;
mod files;
pub mod format;
mod model;
mod objects;
mod recover;
mod segment;
pub mod terms;

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anduin_checkpoint::{Bucket, OwnerLock};
use tracing::{debug, info, warn};

pub use edit::Edit;
pub use error::CatalogError;
pub use files::{corrupt_path, segment_path, snapshot_path, temp_path, LOCK_FILE};
pub use model::{
    AttemptFailure, CatalogState, CheckpointPointer, ControlRecord, EditRefused, ModuleFile,
    QueryEntry, QuerySettings, QuerySource, WorkerEntry, CONTROL_HISTORY_KEPT,
};
pub use objects::{CatalogFence, Fenced, CATALOG_PREFIX};

use crate::ids::Txid;
use format::{encode_record, encode_snapshot};
use segment::{create_segment, Segment};

/// When snapshots are written and how many are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogOptions {
    /// A snapshot after this many edits (HDFS' `dfs.namenode.checkpoint.txns`).
    pub snapshot_every_edits: u64,
    /// A snapshot at the latest this long after the first edit no snapshot holds (HDFS'
    /// `dfs.namenode.checkpoint.period`; an idle catalog writes none).
    pub snapshot_every: Duration,
    /// Snapshots kept (at least 1): with 2, a damaged newest snapshot falls back to the one
    /// before, whose later edits are kept for that.
    pub keep_snapshots: usize,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            snapshot_every_edits: 1000,
            snapshot_every: Duration::from_secs(600),
            keep_snapshots: 2,
        }
    }
}

impl CatalogOptions {
    /// For a catalog in an object store: a snapshot every 100 edits, as a take-over reads
    /// every edit after the newest snapshot, one request each (16 at a time).
    pub fn in_object_store() -> Self {
        CatalogOptions {
            snapshot_every_edits: 100,
            ..CatalogOptions::default()
        }
    }
}

/// Whether a snapshot is due with `edits` edits since the last one, the first of them
/// `elapsed` ago.
pub fn snapshot_due(options: &CatalogOptions, edits: u64, elapsed: Duration) -> bool {
    edits > 0 && (edits >= options.snapshot_every_edits || elapsed >= options.snapshot_every)
}

/// What [`Catalog::open`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The snapshot loaded, by the last edit it holds (`None`: none, replayed from edit 1).
    pub snapshot: Option<Txid>,
    /// Damaged snapshots set aside (renamed `*.corrupt`).
    pub set_aside: Vec<PathBuf>,
    /// Edits replayed after the snapshot.
    pub replayed: u64,
    /// The last edit in the catalog.
    pub last_txid: Txid,
    /// The end of the log a crash cut, dropped.
    pub torn_tail: Option<TornTail>,
    /// Half-written snapshots removed.
    pub removed_temporary: Vec<PathBuf>,
}

/// The end of an edit-log segment that a crash in the middle of an append left, dropped on
/// recovery (it was never acknowledged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The segment.
    pub path: PathBuf,
    /// Where the dropped bytes started.
    pub offset: u64,
    /// How many bytes were dropped.
    pub bytes: u64,
}

/// The catalog, open in its state directory (and locked there until dropped) or in an
/// object store.
#[derive(Debug)]
pub struct Catalog {
    options: CatalogOptions,
    state: CatalogState,
    last_txid: Txid,
    snapshot_txid: Txid,
    /// When the oldest edit no snapshot holds yet was appended (or found, on open).
    unsnapshotted_since: Option<Instant>,
    poisoned: Option<String>,
    recovered: Recovered,
    backing: Backing,
}

/// Where a catalog's edits and snapshots are kept.
#[derive(Debug)]
enum Backing {
    /// Files of a state directory.
    Files(FileLog),
    /// Objects of an object store, one per edit ([`objects`]).
    Objects(objects::ObjectLog),
}

/// A catalog's files in its state directory.
#[derive(Debug)]
struct FileLog {
    dir: PathBuf,
    log: Segment,
    /// The segments before the current one, oldest first, with their last edit (`None`: empty).
    older: Vec<(PathBuf, Option<Txid>)>,
    // Held for its lock: released when the catalog is dropped.
    _lock: OwnerLock,
}

impl Catalog {
    /// Opens (creating if missing) and recovers the catalog in `dir`, locking it; `now` starts
    /// the clock of time-based snapshots for the edits found after the newest snapshot.
    /// Refused with [`CatalogError::Locked`] while another process holds it; see the module's
    /// documentation for what recovery does with damaged files.
    pub fn open(
        dir: &Path,
        options: CatalogOptions,
        now: Instant,
    ) -> Result<Catalog, CatalogError> {
        // Kept by elected leaders once: the current one's directory (see [`terms`]).
        let dir = &terms::resolve(dir)?;
        if !dir.is_dir() {
            std::fs::create_dir_all(dir).map_err(|e| CatalogError::io("create", dir, e))?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                files::sync_dir(parent)?;
            }
        }
        let lock = OwnerLock::acquire(
            &dir.join(LOCK_FILE),
            &format!("the coordinator state directory `{}`", dir.display()),
        )?;
        let found = recover::recover(dir)?;
        let (last, base) = (found.recovered.last_txid, found.snapshot_txid);
        Ok(Catalog {
            options,
            state: found.state,
            last_txid: last,
            snapshot_txid: base,
            unsnapshotted_since: (last > base).then_some(now),
            poisoned: None,
            recovered: found.recovered,
            backing: Backing::Files(FileLog {
                dir: dir.to_path_buf(),
                log: found.log,
                older: found.older,
                _lock: lock,
            }),
        })
    }

    /// The term of the last leader that took the catalog in object store `bucket` over, and
    /// the election it was elected by (read only); `None` if none did.
    pub fn last_leader(bucket: Bucket) -> Result<Option<(u64, String)>, CatalogError> {
        let state = objects::ObjectLog::new(bucket, 0)?.read()?.state;
        Ok(state
            .leader_term
            .map(|t| (t, state.elected_by.unwrap_or_default())))
    }

    /// Takes the catalog in object store `bucket` (its prefix, as [`CATALOG_PREFIX`] under the
    /// checkpoint store) over for leader term `term` (see [`objects`]): reads it to its end and
    /// writes that `term` of `election` (its identity: the coordinators of another election
    /// are refused, [`EditRefused::OtherElection`]) took it over as the next edit, reading on
    /// past edits another coordinator writes meanwhile. Refused
    /// ([`EditRefused::TermNotAfter`]) once a later term took it over, or by the same term.
    /// `still_leading` is called before each write, as in [`Catalog::take_over`]. A leader
    /// before, paused, finds its next edit's place taken (or a later term marked) when it
    /// runs again ([`CatalogError::Superseded`]).
    pub fn take_over_objects(
        bucket: Bucket,
        term: u64,
        election: &str,
        options: CatalogOptions,
        now: Instant,
        still_leading: &dyn Fn(),
    ) -> Result<Catalog, CatalogError> {
        let log = objects::ObjectLog::new(bucket, term)?;
        let refused_by_later = |log: &objects::ObjectLog| -> Result<(), CatalogError> {
            match log.later_term()? {
                Some(current) => Err(EditRefused::TermNotAfter { current, got: term }.into()),
                None => Ok(()),
            }
        };
        refused_by_later(&log)?;
        still_leading();
        // Marked first: an earlier leader's edit written from now on is not acknowledged.
        log.mark_leader(term)?;
        loop {
            let read = log.read()?;
            let mut catalog = Catalog {
                options,
                state: read.state,
                last_txid: read.last,
                snapshot_txid: read.snapshot,
                unsnapshotted_since: (read.last > read.snapshot).then_some(now),
                poisoned: None,
                recovered: read.recovered,
                backing: Backing::Objects(log.clone()),
            };
            still_leading();
            let took = Edit::LeaderTookOver {
                term,
                election: election.to_string(),
            };
            match catalog.append(took, now) {
                Ok(txid) => {
                    info!(url = %catalog.location(), term, txid = txid.0, "catalog taken over");
                    return Ok(catalog);
                }
                // Another coordinator wrote that edit meanwhile: read on, unless a later
                // term took it over.
                Err(CatalogError::Superseded { .. }) => refused_by_later(&log)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes the catalog at `root` over for leader term `term` (see [`terms`]): reads the
    /// current leader's directory as far as it is complete, without locking or changing it
    /// (that leader may be paused, and write on when it runs again), writes what it read as
    /// the first snapshot of a directory of `term`'s own, points `root/CURRENT` at it, and
    /// opens it. The directories of terms before the last are removed. `still_leading` is
    /// called before the pointer is changed and before anything is removed: the caller ends
    /// there if its term may be over (it was paused meanwhile, and a later leader may have
    /// taken the catalog over already).
    pub fn take_over(
        root: &Path,
        term: u64,
        options: CatalogOptions,
        now: Instant,
        still_leading: &dyn Fn(),
    ) -> Result<Catalog, CatalogError> {
        std::fs::create_dir_all(root).map_err(|e| CatalogError::io("create", root, e))?;
        let from = terms::resolve(root)?;
        let (state, last) = terms::read_only(&from)?;
        let mine = terms::term_dir(root, term);
        if mine == from {
            // This term took it over already (and died, or is asked again): its own.
            return Catalog::open(root, options, now);
        }
        if mine.exists() {
            // A take-over of this term that died before it pointed at it.
            std::fs::remove_dir_all(&mine).map_err(|e| CatalogError::io("remove", &mine, e))?;
        }
        std::fs::create_dir_all(&mine).map_err(|e| CatalogError::io("create", &mine, e))?;
        if last > Txid(0) {
            let bytes = encode_snapshot(last, &state).map_err(|e| CatalogError::Encode {
                what: "the catalog snapshot",
                cause: e.to_string(),
            })?;
            let path = snapshot_path(&mine, last);
            File::create(&path)
                .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
                .map_err(|e| CatalogError::io("write", &path, e))?;
        }
        files::sync_dir(&mine)?;
        let pointer = root.join(terms::CURRENT);
        let temp = temp_path(&pointer);
        still_leading();
        let name = mine
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        File::create(&temp)
            .and_then(|mut f| f.write_all(name.as_bytes()).and_then(|()| f.sync_all()))
            .map_err(|e| CatalogError::io("write", &temp, e))?;
        still_leading();
        std::fs::rename(&temp, &pointer).map_err(|e| CatalogError::io("rename", &temp, e))?;
        files::sync_dir(root)?;
        still_leading();
        info!(root = %root.display(), term, from = %from.display(), last_txid = last.0, "catalog taken over");
        // Every term's directory before the one taken over from goes.
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten() {
                let path = entry.path();
                let is_term = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("term-"));
                if is_term && path != mine && path != from {
                    if let Err(e) = std::fs::remove_dir_all(&path) {
                        warn!(dir = %path.display(), error = %e, "cannot remove an old term's catalog");
                    }
                }
            }
        }
        Catalog::open(root, options, now)
    }

    /// The catalog now.
    pub fn state(&self) -> &CatalogState {
        &self.state
    }

    /// The last edit appended.
    pub fn last_txid(&self) -> Txid {
        self.last_txid
    }

    /// The last edit the newest snapshot holds.
    pub fn snapshot_txid(&self) -> Txid {
        self.snapshot_txid
    }

    /// What opening it found and did.
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    /// For a catalog in an object store, the check a leader makes before it completes a
    /// checkpoint: that no later leader took the catalog over ([`CatalogFence`]).
    pub fn fence(&self) -> Option<CatalogFence> {
        match (&self.backing, self.state.leader_term) {
            (Backing::Objects(log), Some(_)) => Some(CatalogFence::new(log.clone())),
            // A leader's own term directory under a shared state directory (a lease-elected
            // leader's, [`Catalog::take_over`]): the pointer must still name it.
            (Backing::Files(f), _) => {
                let own = f.dir.file_name()?.to_str()?;
                let root = f.dir.parent()?;
                (own.starts_with("term-") && root.join(terms::CURRENT).exists())
                    .then(|| CatalogFence::files(root.join(terms::CURRENT), own.to_string()))
            }
            _ => None,
        }
    }

    /// Where the catalog is: its state directory, or `s3://bucket/prefix/.catalog`.
    pub fn location(&self) -> String {
        match &self.backing {
            Backing::Files(f) => f.dir.display().to_string(),
            Backing::Objects(o) => o.url().to_string(),
        }
    }

    /// Checks `edit`, appends it, fsyncs the log, applies it and returns its txid: once this
    /// returns the edit survives a crash, so acknowledge after it. A refused edit is not
    /// written ([`CatalogError::Refused`]). If the write or fsync fails the catalog takes no
    /// more edits ([`CatalogError::Poisoned`]): whether that edit is on disk is then unknown,
    /// and reopening the catalog tells. So it does after [`CatalogError::Superseded`] (a later
    /// leader wrote the place of this edit in the object store). A snapshot due after the
    /// edit is written too; if that fails it is logged and tried again later (every edit
    /// stays in the log meanwhile).
    pub fn append(&mut self, edit: Edit, now: Instant) -> Result<Txid, CatalogError> {
        self.check_poisoned()?;
        self.state.check(&edit)?;
        let txid = self.last_txid.next();
        let bytes = encode_record(txid, &edit).map_err(|e| CatalogError::Encode {
            what: "an edit",
            cause: e.to_string(),
        })?;
        let written = match &mut self.backing {
            Backing::Files(f) => f.append(txid, &bytes),
            Backing::Objects(o) => o.append(txid, &bytes),
        };
        if let Err(e) = written {
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        self.state.apply(&edit)?;
        self.last_txid = txid;
        self.unsnapshotted_since.get_or_insert(now);
        debug!(txid = txid.0, query = ?edit.query().map(|q| &q.0), "catalog edit appended");
        if let Err(error) = self.snapshot_if_due(now) {
            warn!(%error, "the catalog snapshot failed; every edit stays in the edit log, and the snapshot is tried again after the next edit");
        }
        Ok(txid)
    }

    /// Writes a snapshot if one is due at `now` (call it now and then: a time-based snapshot
    /// is otherwise only written at the next append); the txid it holds edits up to, if
    /// written.
    pub fn snapshot_if_due(&mut self, now: Instant) -> Result<Option<Txid>, CatalogError> {
        let edits = self.last_txid.0 - self.snapshot_txid.0;
        let elapsed = self
            .unsnapshotted_since
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        if snapshot_due(&self.options, edits, elapsed) {
            self.snapshot().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Writes a snapshot of every edit so far (in a state directory: temporary name, fsync,
    /// rename, directory fsync, and the edit log rolled to a new segment; in an object store:
    /// an object created only if absent), and removes the snapshots and edits no longer kept.
    /// Nothing is written when no edit came since the last snapshot.
    pub fn snapshot(&mut self) -> Result<Txid, CatalogError> {
        self.check_poisoned()?;
        let txid = self.last_txid;
        if txid == self.snapshot_txid {
            return Ok(txid);
        }
        let bytes = encode_snapshot(txid, &self.state).map_err(|e| CatalogError::Encode {
            what: "the catalog snapshot",
            cause: e.to_string(),
        })?;
        let keep = self.options.keep_snapshots;
        match &mut self.backing {
            Backing::Files(f) => f.snapshot(txid, &bytes)?,
            Backing::Objects(o) => o.write_snapshot(txid, bytes)?,
        }
        self.snapshot_txid = txid;
        self.unsnapshotted_since = None;
        let retired = match &mut self.backing {
            Backing::Files(f) => f.retire(keep),
            Backing::Objects(o) => o.retire(keep),
        };
        if let Err(error) = retired {
            warn!(%error, "could not remove old catalog files; tried again after the next snapshot");
        }
        Ok(txid)
    }

    /// Makes the catalog take no more edits, as a failed write does (`why`: the failure to
    /// report). For fault-injection tests of what a coordinator does then.
    pub fn poison(&mut self, why: &str) {
        self.poisoned.get_or_insert_with(|| why.to_string());
    }

    fn check_poisoned(&self) -> Result<(), CatalogError> {
        match &self.poisoned {
            Some(cause) => Err(CatalogError::Poisoned {
                dir: PathBuf::from(self.location()),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }
}

impl FileLog {
    /// Appends `bytes` (edit `txid`) to the segment and fsyncs it.
    fn append(&mut self, txid: Txid, bytes: &[u8]) -> Result<(), CatalogError> {
        self.log
            .file
            .write_all_at(bytes, self.log.len)
            .and_then(|()| self.log.file.sync_data())
            .map_err(|cause| CatalogError::io("append to", &self.log.path, cause))?;
        self.log.len += bytes.len() as u64;
        self.log.last = Some(txid);
        Ok(())
    }

    /// Writes `bytes`, the snapshot of edits up to `txid` (temporary name, fsync, rename,
    /// directory fsync), and rolls the edit log to a new segment.
    fn snapshot(&mut self, txid: Txid, bytes: &[u8]) -> Result<(), CatalogError> {
        let path = snapshot_path(&self.dir, txid);
        let temp = temp_path(&path);
        let written =
            File::create(&temp).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
        if let Err(cause) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(CatalogError::io("write", &temp, cause));
        }
        std::fs::rename(&temp, &path).map_err(|e| CatalogError::io("rename", &temp, e))?;
        files::sync_dir(&self.dir)?;
        info!(file = %path.display(), txid = txid.0, bytes = bytes.len(), "catalog snapshot written");

        // Roll the log. A crash before this is harmless: the old segment goes on, and replay
        // skips what the snapshot holds. So does a failure.
        match create_segment(&self.dir, txid.next()) {
            Ok(segment) => {
                let old = std::mem::replace(&mut self.log, segment);
                self.older.push((old.path, old.last));
            }
            Err(error) => {
                let _ = std::fs::remove_file(segment_path(&self.dir, txid.next()));
                warn!(%error, "could not roll the catalog's edit log after a snapshot; edits go on in the current segment");
            }
        }
        Ok(())
    }

    /// Removes the snapshots beyond the kept ones, and the segments whose every edit the
    /// oldest kept snapshot holds.
    fn retire(&mut self, keep: usize) -> Result<(), CatalogError> {
        let listing = files::list(&self.dir)?;
        let keep = keep.max(1);
        let snapshots = &listing.snapshots;
        // With fewer snapshots than kept, the empty catalog counts as the oldest kept.
        let (oldest_kept, retired) = match snapshots.len().checked_sub(keep) {
            Some(over) => (
                snapshots.get(over).map(|(t, _)| *t).unwrap_or_default(),
                snapshots.get(..over).unwrap_or_default(),
            ),
            None => (Txid(0), &[][..]),
        };
        let mut removed = false;
        for (_, path) in retired {
            std::fs::remove_file(path).map_err(|e| CatalogError::io("remove", path, e))?;
            removed = true;
        }
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.older)
            .into_iter()
            .partition(|(_, last)| last.is_none_or(|last| last <= oldest_kept));
        self.older = kept;
        let mut failed = None;
        for (path, last) in gone {
            match std::fs::remove_file(&path) {
                Ok(()) => removed = true,
                Err(cause) => {
                    failed.get_or_insert(CatalogError::io("remove", &path, cause));
                    self.older.push((path, last));
                }
            }
        }
        self.older.sort();
        if removed {
            files::sync_dir(&self.dir)?;
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Helpers of the catalog's unit tests.
#[cfg(test)]
mod testing {
    use super::{Catalog, Edit};
    use crate::WorkerId;

    /// Worker `n` registered (at `wN`, with `n` slots).
    pub(super) fn worker(n: u32) -> Edit {
        Edit::WorkerRegistered {
            worker: WorkerId(n),
            address: format!("w{n}"),
            slots: n,
        }
    }

    /// The catalog's workers' numbers.
    pub(super) fn workers(c: &Catalog) -> Vec<u32> {
        c.state().workers.keys().map(|w| w.0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_due_after_n_edits_or_t_seconds_and_never_without_edits() {
        let o = CatalogOptions {
            snapshot_every_edits: 10,
            snapshot_every: Duration::from_secs(60),
            keep_snapshots: 2,
        };
        assert!(!snapshot_due(&o, 0, Duration::from_secs(3600)));
        assert!(!snapshot_due(&o, 9, Duration::from_secs(59)));
        assert!(snapshot_due(&o, 10, Duration::ZERO));
        assert!(snapshot_due(&o, 1, Duration::from_secs(60)));
    }
}
