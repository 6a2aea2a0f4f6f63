//! Opening a state directory: the newest valid snapshot, the edits after it, and where
//! appends go on. Read top to bottom, it is the recovery the module's documentation describes.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use super::error::CatalogError;
use super::files::{self, corrupt_path, Listing};
use super::format::{self, decode_snapshot, scan_segment, Scan};
use super::model::CatalogState;
use super::segment::{create_segment, Segment};
use super::{Recovered, TornTail};
use crate::ids::Txid;

/// What a state directory holds once recovered.
pub(super) struct Found {
    pub(super) state: CatalogState,
    /// The last edit the loaded snapshot holds.
    pub(super) snapshot_txid: Txid,
    /// The segment appends go to.
    pub(super) log: Segment,
    /// The segments before it, with their last edit.
    pub(super) older: Vec<(PathBuf, Option<Txid>)>,
    pub(super) recovered: Recovered,
}

/// Recovers the catalog in `dir` (locked by the caller).
pub(super) fn recover(dir: &Path) -> Result<Found, CatalogError> {
    let mut recovered = Recovered::default();
    let listing = files::list(dir)?;
    remove_temporary(dir, &listing, &mut recovered)?;
    let (mut state, base) = newest_snapshot(dir, &listing, &mut recovered)?;
    let replayed = replay(&listing, &mut state, base, &mut recovered)?;
    let (log, mut older) = (replayed.tail, replayed.older);
    let log = match settle_tail(dir, log, replayed.last, &mut recovered, &mut older)? {
        Some(log) => log,
        None => create_segment(dir, replayed.last.next())?,
    };
    recovered.last_txid = replayed.last;
    info!(
        dir = %dir.display(),
        snapshot = recovered.snapshot.map(|t| t.0),
        replayed = recovered.replayed,
        last_txid = replayed.last.0,
        "catalog recovered"
    );
    Ok(Found {
        state,
        snapshot_txid: base,
        log,
        older,
        recovered,
    })
}

/// Removes the snapshots a crash left half-written.
fn remove_temporary(
    dir: &Path,
    listing: &Listing,
    recovered: &mut Recovered,
) -> Result<(), CatalogError> {
    for temp in &listing.temporary {
        std::fs::remove_file(temp).map_err(|e| CatalogError::io("remove", temp, e))?;
        warn!(file = %temp.display(), "removed a snapshot a crash left half-written");
        recovered.removed_temporary.push(temp.clone());
    }
    if !listing.temporary.is_empty() {
        files::sync_dir(dir)?;
    }
    Ok(())
}

/// The newest valid snapshot (the empty catalog if none); damaged newer ones are set aside.
/// The catalog must reach at least the newest snapshot found, valid or not (checked after
/// replay).
fn newest_snapshot(
    dir: &Path,
    listing: &Listing,
    recovered: &mut Recovered,
) -> Result<(CatalogState, Txid), CatalogError> {
    let mut found = (CatalogState::default(), Txid(0));
    for (txid, path) in listing.snapshots.iter().rev() {
        let bytes = std::fs::read(path).map_err(|e| CatalogError::io("read", path, e))?;
        let why = match decode_snapshot(&bytes) {
            Ok((held, snapshot)) if held == *txid => {
                recovered.snapshot = Some(held);
                found = (snapshot, held);
                break;
            }
            Ok((held, _)) => format!(
                "it says it holds edits up to {}, its name says {}",
                held.0, txid.0
            ),
            Err(format::SnapshotDamage::Version(found)) => {
                return Err(CatalogError::OtherVersion {
                    path: path.clone(),
                    found,
                })
            }
            Err(damage) => damage.to_string(),
        };
        let aside = corrupt_path(path);
        std::fs::rename(path, &aside).map_err(|e| CatalogError::io("set aside", path, e))?;
        warn!(file = %path.display(), set_aside = %aside.display(), %why, "a damaged catalog snapshot is set aside; recovering from the one before it");
        recovered.set_aside.push(aside);
    }
    if !recovered.set_aside.is_empty() {
        files::sync_dir(dir)?;
    }
    Ok(found)
}

/// What replaying the segments gives.
pub(super) struct Replayed {
    /// The last edit in the catalog.
    pub(super) last: Txid,
    /// The last segment and what it holds.
    tail: Option<(PathBuf, Scan)>,
    /// The other segments, with their last edit.
    older: Vec<(PathBuf, Option<Txid>)>,
}

/// Applies every edit after `base`, in txid order, with no gap.
pub(super) fn replay(
    listing: &Listing,
    state: &mut CatalogState,
    base: Txid,
    recovered: &mut Recovered,
) -> Result<Replayed, CatalogError> {
    let mut last = base;
    let mut tail = None;
    let mut older = Vec::new();
    let count = listing.segments.len();
    for (i, (first, path)) in listing.segments.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| CatalogError::io("read", path, e))?;
        let corrupt = |offset, why| CatalogError::Corrupt {
            path: path.clone(),
            offset,
            why,
        };
        let scan = scan_segment(&bytes).map_err(|d| match d.other_version {
            Some(found) => CatalogError::OtherVersion {
                path: path.clone(),
                found,
            },
            None => corrupt(d.offset, d.why),
        })?;
        if let Some(said) = scan.first.filter(|said| said != first) {
            return Err(corrupt(
                16,
                format!(
                    "its header says its first edit is {}, its name says {}",
                    said.0, first.0
                ),
            ));
        }
        let is_last = i + 1 == count;
        if let (Some(torn), false) = (scan.torn, is_last) {
            return Err(corrupt(
                torn.offset,
                "cut short, yet later segments follow it".into(),
            ));
        }
        for record in &scan.records {
            if record.txid <= last {
                continue;
            }
            if record.txid != last.next() {
                return Err(CatalogError::Missing {
                    from: last.next(),
                    to: Txid(record.txid.0 - 1),
                    path: Some(path.clone()),
                });
            }
            state
                .apply(&record.edit)
                .map_err(|why| CatalogError::Replay {
                    path: path.clone(),
                    offset: record.offset,
                    txid: record.txid,
                    why,
                })?;
            last = record.txid;
            recovered.replayed += 1;
        }
        if is_last {
            tail = Some((path.clone(), scan));
        } else {
            older.push((path.clone(), scan.records.last().map(|r| r.txid)));
        }
    }
    let newest_seen = listing
        .snapshots
        .last()
        .map(|(t, _)| *t)
        .unwrap_or_default();
    if last < newest_seen {
        return Err(CatalogError::Missing {
            from: last.next(),
            to: newest_seen,
            path: None,
        });
    }
    Ok(Replayed { last, tail, older })
}

/// Drops a torn end of the last segment, and opens it for appends if the log goes on there
/// (`None`: a new segment is to be made).
fn settle_tail(
    dir: &Path,
    tail: Option<(PathBuf, Scan)>,
    last: Txid,
    recovered: &mut Recovered,
    older: &mut Vec<(PathBuf, Option<Txid>)>,
) -> Result<Option<Segment>, CatalogError> {
    let Some((path, scan)) = tail else {
        return Ok(None);
    };
    if let Some(torn) = scan.torn {
        warn!(file = %path.display(), offset = torn.offset, bytes = torn.bytes, "dropping the torn end of the catalog's edit log (a crash in the middle of an append, never acknowledged)");
        recovered.torn_tail = Some(TornTail {
            path: path.clone(),
            offset: torn.offset,
            bytes: torn.bytes,
        });
        if scan.first.is_none() {
            // Only a header was being written: the whole file goes.
            std::fs::remove_file(&path).map_err(|e| CatalogError::io("remove", &path, e))?;
            files::sync_dir(dir)?;
            return Ok(None);
        }
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| CatalogError::io("open", &path, e))?;
        file.set_len(scan.valid_len)
            .and_then(|()| file.sync_all())
            .map_err(|e| CatalogError::io("truncate", &path, e))?;
    }
    let tail_last = scan.records.last().map(|r| r.txid);
    if scan.next_txid() == Some(last.next()) {
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| CatalogError::io("open", &path, e))?;
        return Ok(Some(Segment {
            path,
            file,
            len: scan.valid_len,
            last: tail_last,
        }));
    }
    if tail_last.is_none() {
        // An empty segment where the log does not go on (files moved by hand): it holds
        // nothing, and a new segment takes over.
        std::fs::remove_file(&path).map_err(|e| CatalogError::io("remove", &path, e))?;
        files::sync_dir(dir)?;
        warn!(file = %path.display(), "removed an empty edit-log segment that does not continue the log");
    } else {
        older.push((path, tail_last));
    }
    Ok(None)
}
