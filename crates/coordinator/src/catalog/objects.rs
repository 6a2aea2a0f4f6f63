//! The catalog kept in an object store (under `.catalog/` of the checkpoint store), for
//! coordinators elected by a lease that share no file system:
//!
//! ```text
//! s3://bucket/prefix/.catalog/snapshot-00000000000000000040.img   the catalog after edits 1..=40
//! s3://bucket/prefix/.catalog/edit-00000000000000000041.rec       edit 41, created only if absent
//! s3://bucket/prefix/.catalog/edit-00000000000000000042.rec       edit 42 …
//! s3://bucket/prefix/.catalog/leaders/00000000000000000007         term 7 took it over
//! ```
//!
//! Every edit is an object of its own (a segment of one record, as in a state directory),
//! created only if absent: two coordinators cannot both write edit N, the second is told.
//! A leader taking the catalog over reads it to its end and writes [`Edit::LeaderTookOver`]
//! with its term as the next edit (reading on past edits written meanwhile). A leader before
//! it, paused past its lease, that writes on when it runs again finds the place of its next
//! edit taken and stops ([`CatalogError::Superseded`]): the fence is where the effect lands,
//! no pointer is changed and nobody is waited for. The place may be free again when the
//! new leader's snapshots have removed the edits there: so a leader marks its term under
//! `leaders/` before it takes the catalog over, and every edit, once written, is
//! acknowledged only if no later term is marked (an edit written in a removed range is
//! below a snapshot, and never read). Snapshots and the removal of what the
//! kept snapshots hold work as in a state directory; they are safe whoever writes them, as
//! every object holds a settled part of the one log.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anduin_checkpoint::{Bucket, Created};
use tracing::{info, warn};

use super::error::CatalogError;
use super::files::number;
use super::format::{decode_snapshot, scan_segment, segment_header};
use super::model::CatalogState;
use super::{Edit, Recovered};
use crate::ids::Txid;

/// The prefix of the catalog under the checkpoint store's (no query is named so: a query's
/// name has no `.`).
pub const CATALOG_PREFIX: &str = ".catalog";

const EDIT_PREFIX: &str = "edit-";
const EDIT_SUFFIX: &str = ".rec";
const SNAPSHOT_PREFIX: &str = "snapshot-";
const SNAPSHOT_SUFFIX: &str = ".img";
/// Where the leaders' marks are, under the catalog's prefix.
const LEADERS: &str = "leaders";

/// The mark of term `term`, under [`LEADERS`].
fn leader_name(term: u64) -> String {
    format!("{term:020}")
}

/// How often a write or read the object store failed is tried, in all.
const TRIES: u32 = 6;

/// The pause before try `n` (1-based) again: 100 ms, doubled each time (3.1 s in all).
fn backoff(n: u32) -> std::time::Duration {
    std::time::Duration::from_millis(100 << n.saturating_sub(1).min(10))
}

/// The object of edit `txid`.
fn edit_name(txid: Txid) -> String {
    format!("{EDIT_PREFIX}{:020}{EDIT_SUFFIX}", txid.0)
}

/// The object of the snapshot holding edits up to `txid`.
fn snapshot_name(txid: Txid) -> String {
    format!("{SNAPSHOT_PREFIX}{:020}{SNAPSHOT_SUFFIX}", txid.0)
}

/// The catalog's objects (clones share the connection).
#[derive(Clone, Debug)]
pub(super) struct ObjectLog {
    bucket: Bucket,
    /// The leaders' marks.
    leaders: Bucket,
    /// The term of the leader writing (0: none, reading only).
    term: u64,
}

/// The catalog as read from its objects.
pub(super) struct Read {
    pub(super) state: CatalogState,
    /// The last edit.
    pub(super) last: Txid,
    /// The last edit the snapshot read holds.
    pub(super) snapshot: Txid,
    pub(super) recovered: Recovered,
}

/// The snapshots and edits listed.
#[derive(Default)]
struct Listing {
    snapshots: Vec<Txid>,
    edits: BTreeSet<Txid>,
}

impl ObjectLog {
    /// The catalog in `bucket` (the prefix of its objects), written by the leader of `term`
    /// (0: read only).
    pub(super) fn new(bucket: Bucket, term: u64) -> Result<Self, CatalogError> {
        let leaders = bucket.child(LEADERS)?;
        Ok(Self {
            bucket,
            leaders,
            term,
        })
    }

    /// The latest term marked after this log's, if any.
    pub(super) fn later_term(&self) -> Result<Option<u64>, CatalogError> {
        let later = self
            .leaders
            .list()?
            .iter()
            .filter_map(|n| n.parse::<u64>().ok())
            .filter(|t| *t > self.term)
            .max();
        Ok(later)
    }

    /// Where it is: `s3://bucket/prefix/.catalog`.
    pub(super) fn url(&self) -> &str {
        self.bucket.url()
    }

    fn show(&self, name: &str) -> PathBuf {
        PathBuf::from(self.bucket.show(name))
    }

    fn list(&self) -> Result<Listing, CatalogError> {
        let mut listing = Listing::default();
        for name in self.bucket.list()? {
            if let Some(t) = number(&name, SNAPSHOT_PREFIX, SNAPSHOT_SUFFIX) {
                listing.snapshots.push(t);
            } else if let Some(t) = number(&name, EDIT_PREFIX, EDIT_SUFFIX) {
                listing.edits.insert(t);
            }
        }
        listing.snapshots.sort();
        Ok(listing)
    }

    /// The catalog: the newest snapshot that reads whole, and every edit after it. Read
    /// again when an object listed goes meanwhile (a newer snapshot made it redundant), and
    /// when the store fails, [`TRIES`] times in all.
    pub(super) fn read(&self) -> Result<Read, CatalogError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.read_once() {
                Ok(Some(read)) => return Ok(read),
                Ok(None) if tries < TRIES => {}
                Err(CatalogError::Remote(e)) if tries < TRIES => {
                    warn!(url = %self.url(), error = %e, "cannot read the catalog; trying again");
                    std::thread::sleep(backoff(tries));
                }
                Err(e) => return Err(e),
                Ok(None) => {
                    return Err(CatalogError::Missing {
                        from: Txid(1),
                        to: Txid(1),
                        path: Some(self.show("")),
                    })
                }
            }
        }
    }

    /// [`ObjectLog::read`] once; `None` if an object listed was gone when read.
    fn read_once(&self) -> Result<Option<Read>, CatalogError> {
        let listing = self.list()?;
        let mut recovered = Recovered::default();
        let (mut state, mut base) = (CatalogState::default(), Txid(0));
        for &txid in listing.snapshots.iter().rev() {
            let name = snapshot_name(txid);
            let Some(bytes) = self.bucket.get(&name)? else {
                return Ok(None);
            };
            match decode_snapshot(&bytes) {
                Ok((held, snapshot)) if held == txid => {
                    (state, base) = (snapshot, txid);
                    recovered.snapshot = Some(txid);
                    break;
                }
                Ok(_) | Err(_) => {
                    warn!(object = %self.bucket.show(&name), "a damaged catalog snapshot is not read; the one before it is");
                    recovered.set_aside.push(self.show(&name));
                }
            }
        }
        let mut last = base;
        let txids: Vec<Txid> = listing.edits.range(base.next()..).copied().collect();
        let names: Vec<String> = txids.iter().map(|t| edit_name(*t)).collect();
        let fetched = self.bucket.get_all(&names)?;
        for ((&txid, name), bytes) in txids.iter().zip(&names).zip(fetched) {
            if txid != last.next() {
                return Err(CatalogError::Missing {
                    from: last.next(),
                    to: Txid(txid.0 - 1),
                    path: Some(self.show(name)),
                });
            }
            let Some(bytes) = bytes else {
                return Ok(None);
            };
            let edit = self.decode_edit(txid, &bytes)?;
            state.apply(&edit).map_err(|why| CatalogError::Replay {
                path: self.show(name),
                offset: 0,
                txid,
                why,
            })?;
            last = txid;
            recovered.replayed += 1;
        }
        recovered.last_txid = last;
        Ok(Some(Read {
            state,
            last,
            snapshot: base,
            recovered,
        }))
    }

    /// The edit in object `bytes` of edit `txid`: a segment of that one record.
    fn decode_edit(&self, txid: Txid, bytes: &[u8]) -> Result<Edit, CatalogError> {
        let path = self.show(&edit_name(txid));
        let scan = scan_segment(bytes).map_err(|d| match d.other_version {
            Some(found) => CatalogError::OtherVersion {
                path: path.clone(),
                found,
            },
            None => CatalogError::Corrupt {
                path: path.clone(),
                offset: d.offset,
                why: d.why,
            },
        })?;
        match (scan.first, scan.torn, scan.records.as_slice()) {
            (Some(first), None, [record]) if first == txid && record.txid == txid => {
                Ok(record.edit.clone())
            }
            _ => Err(CatalogError::Corrupt {
                path,
                offset: 0,
                why: format!("not edit {} alone, whole", txid.0),
            }),
        }
    }

    /// Writes `record` (edit `txid`, encoded) only if no edit `txid` exists, and then checks
    /// that no later term is marked: else a later leader took the catalog over
    /// ([`CatalogError::Superseded`]). A failed request is tried again ([`TRIES`] in all); an
    /// edit found there after a try whose answer was lost is this one's if it holds the same
    /// bytes.
    pub(super) fn append(&self, txid: Txid, record: &[u8]) -> Result<(), CatalogError> {
        let name = edit_name(txid);
        let mut bytes = segment_header(txid);
        bytes.extend_from_slice(record);
        let superseded = || CatalogError::Superseded {
            url: self.url().to_string(),
            txid,
        };
        let mut tries = 0;
        let mut unsure = false;
        loop {
            tries += 1;
            let written = self
                .bucket
                .create(&name, bytes.clone())
                .and_then(|c| match c {
                    Created::Written => Ok(true),
                    // A try before may have written it, its answer lost.
                    Created::Exists if unsure => {
                        Ok(self.bucket.get(&name)?.as_ref() == Some(&bytes))
                    }
                    Created::Exists => Ok(false),
                });
            let checked = written.and_then(|mine| Ok((mine, self.later_term_checked()?)));
            match checked {
                Ok((true, None)) => return Ok(()),
                Ok(_) => return Err(superseded()),
                Err(e) if tries < TRIES => {
                    warn!(url = %self.url(), txid = txid.0, error = %e, "cannot write an edit of the catalog; trying again");
                    unsure = true;
                    std::thread::sleep(backoff(tries));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// [`ObjectLog::later_term`], as the store's error.
    fn later_term_checked(&self) -> Result<Option<u64>, anduin_checkpoint::CheckpointError> {
        match self.later_term() {
            Ok(t) => Ok(t),
            Err(CatalogError::Remote(e)) => Err(e),
            // Listing fails only remotely.
            Err(_) => Ok(None),
        }
    }

    /// Marks that term `term` takes the catalog over, for every later edit of an earlier
    /// term and every [`CatalogFence`] to see.
    pub(super) fn mark_leader(&self, term: u64) -> Result<(), CatalogError> {
        self.leaders.create(&leader_name(term), Vec::new())?;
        Ok(())
    }

    /// Writes the snapshot of edits up to `txid` (one there already holds the same).
    pub(super) fn write_snapshot(&self, txid: Txid, bytes: Vec<u8>) -> Result<(), CatalogError> {
        let name = snapshot_name(txid);
        self.bucket.create(&name, bytes)?;
        info!(object = %self.bucket.show(&name), txid = txid.0, "catalog snapshot written");
        Ok(())
    }

    /// Removes the snapshots beyond the newest `keep`, and the edits the oldest kept holds.
    pub(super) fn retire(&self, keep: usize) -> Result<(), CatalogError> {
        let listing = self.list()?;
        let over = listing.snapshots.len().saturating_sub(keep.max(1));
        if over == 0 {
            return Ok(());
        }
        let (retired, kept) = listing.snapshots.split_at(over);
        let oldest_kept = kept.first().copied().unwrap_or_default();
        let names: Vec<String> = retired.iter().map(|t| snapshot_name(*t)).collect();
        self.bucket.delete_all(&names)?;
        let names: Vec<String> = listing
            .edits
            .range(..=oldest_kept)
            .map(|t| edit_name(*t))
            .collect();
        self.bucket.delete_all(&names)?;
        Ok(())
    }
}

/// Asks the object store whether a later leader than term `term` took the catalog over:
/// what a leader checks just before it completes a checkpoint, so that one superseded while
/// paused does not (a leader marks its term when it takes the catalog over). One listing per
/// check. It narrows the window of a paused leader's commit to the time between the listing
/// and the manifest's write; the catalog's own edits are fenced wholly.
#[derive(Clone, Debug)]
pub struct CatalogFence(Fence);

/// Why a [`CatalogFence`] does not let a leader act.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fenced {
    /// A later leader took the catalog over: this one no longer leads (why).
    Superseded(String),
    /// The store or the directory cannot say now (it failed, why): the act waits, and the
    /// leader, whose lease still counts, goes on.
    Unknown(String),
}

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fenced::Superseded(why) => f.write_str(why),
            Fenced::Unknown(why) => write!(f, "the catalog's fence cannot say now: {why}"),
        }
    }
}

#[derive(Clone, Debug)]
enum Fence {
    /// The catalog in an object store: its leader marks.
    Objects(ObjectLog),
    /// The catalog in a shared state directory, one directory per term: `current` (the
    /// `CURRENT` pointer) must still name `own`, this leader's directory.
    Files {
        current: std::path::PathBuf,
        own: String,
    },
}

impl CatalogFence {
    pub(super) fn new(log: ObjectLog) -> Self {
        Self(Fence::Objects(log))
    }

    /// The fence of a catalog in term directory `own` under a shared state directory whose
    /// pointer is `current`.
    pub(super) fn files(current: std::path::PathBuf, own: String) -> Self {
        Self(Fence::Files { current, own })
    }

    /// `Err` once a later term took the catalog over ([`Fenced::Superseded`]), or when the
    /// store cannot say ([`Fenced::Unknown`]).
    pub fn check(&self) -> Result<(), Fenced> {
        match &self.0 {
            Fence::Objects(log) => match log
                .later_term()
                .map_err(|e| Fenced::Unknown(e.to_string()))?
            {
                None => Ok(()),
                Some(t) => Err(Fenced::Superseded(format!(
                    "the leader of term {t} took the catalog at {} over from this one (term \
                     {}), which no longer leads",
                    log.url(),
                    log.term
                ))),
            },
            Fence::Files { current, own } => {
                let named = std::fs::read_to_string(current).map_err(|e| {
                    Fenced::Unknown(format!("cannot read `{}`: {e}", current.display()))
                })?;
                if named.trim() == own {
                    Ok(())
                } else {
                    Err(Fenced::Superseded(format!(
                        "a later leader took the catalog over: `{}` names {}, this leader's \
                         is {own}",
                        current.display(),
                        named.trim()
                    )))
                }
            }
        }
    }
}

#[cfg(test)]
mod fence_tests {
    use super::*;

    #[test]
    fn a_pointer_that_cannot_be_read_cannot_say_and_another_terms_supersedes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let current = dir.path().join("CURRENT");
        let fence = CatalogFence::files(current.clone(), "term-2".into());
        assert!(matches!(fence.check(), Err(Fenced::Unknown(_))));
        std::fs::write(&current, "term-2\n").expect("written");
        assert_eq!(fence.check(), Ok(()));
        std::fs::write(&current, "term-5\n").expect("written");
        let Err(Fenced::Superseded(why)) = fence.check() else {
            panic!("superseded")
        };
        assert!(why.contains("term-5") && why.contains("term-2"), "{why}");
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Instant;

    use anduin_checkpoint::Bucket;

    use super::super::testing::{worker, workers};
    use super::super::{Catalog, CatalogOptions, EditRefused};
    use super::*;

    fn bucket() -> Bucket {
        Bucket::in_memory("memory://store")
            .and_then(|b| b.child(CATALOG_PREFIX))
            .expect("a bucket")
    }

    fn take_over(b: &Bucket, term: u64, o: CatalogOptions) -> Result<Catalog, CatalogError> {
        Catalog::take_over_objects(b.clone(), term, "etcd:/a", o, Instant::now(), &|| ())
    }

    #[test]
    fn a_paused_leader_that_writes_on_finds_its_place_taken_and_writes_nothing_more() {
        let b = bucket();
        let o = CatalogOptions::default();
        let mut old = take_over(&b, 1, o).expect("term 1");
        old.append(worker(1), Instant::now()).expect("appended");
        old.append(worker(2), Instant::now()).expect("appended");
        let mut new = take_over(&b, 2, o).expect("term 2");
        assert_eq!(workers(&new), vec![1, 2]);
        assert_eq!(new.state().leader_term, Some(2));
        // The old leader runs again: its next edit's place is the new leader's.
        let err = old
            .append(worker(3), Instant::now())
            .expect_err("superseded");
        assert!(
            matches!(err, CatalogError::Superseded { txid: Txid(4), .. }),
            "{err}"
        );
        assert!(err.to_string().contains("memory://store/.catalog"), "{err}");
        assert!(matches!(
            old.append(worker(4), Instant::now()),
            Err(CatalogError::Poisoned { .. })
        ));
        new.append(worker(5), Instant::now()).expect("appended");
        let fence = new.fence().expect("a catalog in an object store");
        assert_eq!(fence.check(), Ok(()));
        let third = take_over(&b, 3, o).expect("term 3");
        let Err(Fenced::Superseded(why)) = fence.check() else {
            panic!("superseded")
        };
        assert!(why.contains("term 3") && why.contains("(term 2)"), "{why}");
        assert_eq!(third.fence().expect("one").check(), Ok(()));
        assert_eq!(workers(&third), vec![1, 2, 5]);
        // A term before the last to take it over is refused.
        let err = take_over(&b, 2, o).expect_err("an older term");
        assert!(
            matches!(
                err,
                CatalogError::Refused(EditRefused::TermNotAfter { current: 3, got: 2 })
            ),
            "{err}"
        );
    }

    #[test]
    fn an_edit_the_old_leader_writes_during_the_take_over_is_read_and_kept() {
        let b = bucket();
        let o = CatalogOptions::default();
        let old = RefCell::new(take_over(&b, 1, o).expect("term 1"));
        old.borrow_mut()
            .append(worker(1), Instant::now())
            .expect("appended");
        let wrote = RefCell::new(false);
        // Between the new leader's reading and its writing, the old one appends once.
        let new = Catalog::take_over_objects(b.clone(), 2, "etcd:/a", o, Instant::now(), &|| {
            if !wrote.replace(true) {
                old.borrow_mut()
                    .append(worker(2), Instant::now())
                    .expect("still its place");
            }
        })
        .expect("term 2");
        assert_eq!(workers(&new), vec![1, 2]);
        assert_eq!(
            new.last_txid(),
            Txid(4),
            "term 1, worker 1, worker 2, term 2"
        );
        assert!(old.borrow_mut().append(worker(3), Instant::now()).is_err());
    }

    #[test]
    fn snapshots_retire_old_edits_and_a_damaged_newest_snapshot_falls_back() {
        let b = bucket();
        let o = CatalogOptions {
            snapshot_every_edits: 3,
            keep_snapshots: 2,
            ..CatalogOptions::default()
        };
        let mut c = take_over(&b, 1, o).expect("term 1");
        for n in 1..=10 {
            c.append(worker(n), Instant::now()).expect("appended");
        }
        // Edits 1..=11 (the term, then ten workers); snapshots at 3, 6, 9: 3 retired, and
        // the edits 6 holds (the mark of term 1 is under leaders/).
        let names = b.list().expect("lists");
        assert_eq!(
            names,
            [
                "edit-00000000000000000007.rec",
                "edit-00000000000000000008.rec",
                "edit-00000000000000000009.rec",
                "edit-00000000000000000010.rec",
                "edit-00000000000000000011.rec",
                "snapshot-00000000000000000006.img",
                "snapshot-00000000000000000009.img",
            ]
        );
        drop(c);
        let again = take_over(&b, 2, o).expect("term 2");
        assert_eq!(again.recovered().snapshot, Some(Txid(9)));
        assert_eq!(workers(&again), (1..=10).collect::<Vec<_>>());
        // Its own edit (the term) made a snapshot due: 12, with 9 kept.
        assert_eq!(again.snapshot_txid(), Txid(12));
        drop(again);
        // The newest snapshot damaged: the one before it and the edits after it.
        let newest = "snapshot-00000000000000000012.img";
        b.delete(newest).expect("deleted");
        b.create(newest, b"ANDUINCS garbage".to_vec())
            .expect("written");
        let fallen = take_over(&b, 3, o).expect("term 3");
        assert_eq!(fallen.recovered().snapshot, Some(Txid(9)));
        assert_eq!(workers(&fallen), (1..=10).collect::<Vec<_>>());
        assert_eq!(fallen.state().leader_term, Some(3));
    }

    #[test]
    fn a_paused_leader_whose_next_place_was_removed_by_snapshots_is_still_refused() {
        let b = bucket();
        let o = CatalogOptions {
            snapshot_every_edits: 3,
            keep_snapshots: 2,
            ..CatalogOptions::default()
        };
        let mut old = take_over(&b, 1, o).expect("term 1");
        old.append(worker(1), Instant::now()).expect("appended");
        // The new leader writes on far past the old one's next place, and its snapshots
        // remove the edits there.
        let mut new = take_over(&b, 2, o).expect("term 2");
        for n in 2..=12 {
            new.append(worker(n), Instant::now()).expect("appended");
        }
        assert!(
            b.get(&edit_name(Txid(3))).expect("reads").is_none(),
            "removed"
        );
        let err = old
            .append(worker(99), Instant::now())
            .expect_err("superseded");
        assert!(matches!(err, CatalogError::Superseded { .. }), "{err}");
        drop((old, new));
        let read = take_over(&b, 3, o).expect("term 3");
        assert!(!workers(&read).contains(&99));
    }

    #[test]
    fn the_coordinators_of_another_election_or_an_earlier_term_are_refused() {
        let b = bucket();
        let o = CatalogOptions::default();
        drop(take_over(&b, 1, o).expect("term 1"));
        let other = Catalog::take_over_objects(b.clone(), 5, "etcd:/b", o, Instant::now(), &|| ())
            .expect_err("another election");
        assert!(
            matches!(
                other,
                CatalogError::Refused(EditRefused::OtherElection { .. })
            ),
            "{other}"
        );
        assert!(other.to_string().contains("etcd:/a"), "{other}");
        drop(take_over(&b, 7, o).expect("term 7"));
        // A candidate of term 4 (its lease ran out meanwhile) is refused before it writes.
        let early = take_over(&b, 4, o).expect_err("an earlier term");
        assert!(
            matches!(
                early,
                CatalogError::Refused(EditRefused::TermNotAfter { current: 7, got: 4 })
            ),
            "{early}"
        );
    }

    #[test]
    fn a_missing_edit_is_an_error_naming_the_gap() {
        let b = bucket();
        let o = CatalogOptions::default();
        let mut c = take_over(&b, 1, o).expect("term 1");
        for n in 1..=3 {
            c.append(worker(n), Instant::now()).expect("appended");
        }
        drop(c);
        b.delete(&edit_name(Txid(2))).expect("deleted");
        let err = take_over(&b, 2, o).expect_err("a gap");
        assert!(
            matches!(
                err,
                CatalogError::Missing {
                    from: Txid(2),
                    to: Txid(2),
                    ..
                }
            ),
            "{err}"
        );
    }
}
