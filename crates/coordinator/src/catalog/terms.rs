//! The catalog of coordinators elected by a lease (etcd, Redlock), fenced by term. Such a
//! leader may be paused past its lease and write on once it runs again, before it notices it
//! lost the lease; the next leader must neither wait for it nor read what it writes then.
//! So each leader's catalog is a directory of its own, and a pointer names the current one:
//!
//! ```text
//! <root>/CURRENT                   term-00000000000000000007   (replaced by a rename)
//! <root>/term-00000000000000000007/  snapshot, edit log and LOCK, as in a plain catalog
//! <root>/term-00000000000000000005/  the leader before: read once by the next, never again
//! ```
//!
//! [`super::Catalog::take_over`] reads the current leader's directory without locking it or
//! changing anything in it (a torn end is the old leader's append in flight, and not read),
//! writes what it read as the first snapshot of a directory for its own term, and then points
//! `CURRENT` at it. What the old leader appends after that read lands in a directory nobody
//! reads again. [`super::Catalog::open`] follows `CURRENT` when there is one.

use std::path::{Path, PathBuf};

use super::error::CatalogError;
use super::files::{self, Listing};
use super::format::decode_snapshot;
use super::model::CatalogState;
use super::recover;
use super::Recovered;
use crate::ids::Txid;

/// The pointer to the current leader's directory.
pub const CURRENT: &str = "CURRENT";

/// The directory of term `term`'s catalog under `root`.
pub fn term_dir(root: &Path, term: u64) -> PathBuf {
    root.join(format!("term-{term:020}"))
}

/// The directory the catalog at `root` lives in: the one `CURRENT` names, or `root` itself.
pub fn resolve(root: &Path) -> Result<PathBuf, CatalogError> {
    let pointer = root.join(CURRENT);
    match std::fs::read_to_string(&pointer) {
        Ok(name) => Ok(root.join(name.trim())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(root.to_path_buf()),
        Err(e) => Err(CatalogError::io("read", &pointer, e)),
    }
}

/// The catalog in `dir` as far as it is complete, read without changing anything there (its
/// writer may be appending still): the newest snapshot that reads whole, and the edits after
/// it up to a torn end. Read again from the start when a file goes meanwhile (its writer
/// removed it after a newer snapshot).
pub(super) fn read_only(dir: &Path) -> Result<(CatalogState, Txid), CatalogError> {
    let mut tries = 0;
    loop {
        match read_once(dir) {
            Err(CatalogError::Io { cause, .. })
                if cause.kind() == std::io::ErrorKind::NotFound && tries < 5 =>
            {
                tries += 1;
            }
            other => return other,
        }
    }
}

fn read_once(dir: &Path) -> Result<(CatalogState, Txid), CatalogError> {
    if !dir.is_dir() {
        return Ok((CatalogState::default(), Txid(0)));
    }
    let listing = files::list(dir)?;
    let mut state = (CatalogState::default(), Txid(0));
    let mut usable = Listing {
        segments: listing.segments.clone(),
        ..Listing::default()
    };
    for (txid, path) in listing.snapshots.iter().rev() {
        let bytes = std::fs::read(path).map_err(|e| CatalogError::io("read", path, e))?;
        if let Ok((held, snapshot)) = decode_snapshot(&bytes) {
            if held == *txid {
                state = (snapshot, held);
                usable.snapshots.push((*txid, path.clone()));
                break;
            }
        }
    }
    let (mut catalog, base) = state;
    let replayed = recover::replay(&usable, &mut catalog, base, &mut Recovered::default())?;
    Ok((catalog, replayed.last))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::testing::{worker, workers};
    use super::super::{Catalog, CatalogOptions};
    use super::*;

    #[test]
    fn what_a_paused_leader_writes_after_the_take_over_is_never_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("catalog");
        let o = CatalogOptions::default();
        let mut old = Catalog::take_over(&root, 1, o, Instant::now(), &|| ()).expect("term 1");
        old.append(worker(1), Instant::now()).expect("appended");
        old.append(worker(2), Instant::now()).expect("appended");
        // The next leader takes over while the old one still has its catalog open (and
        // locked): it is not waited for.
        let mut new = Catalog::take_over(&root, 2, o, Instant::now(), &|| ()).expect("term 2");
        assert_eq!(workers(&new), vec![1, 2]);
        // The old one runs again and writes on, in its own directory.
        old.append(worker(3), Instant::now())
            .expect("its append succeeds");
        new.append(worker(4), Instant::now()).expect("appended");
        drop((old, new));
        let reopened = Catalog::open(&root, o, Instant::now()).expect("reopens");
        assert_eq!(workers(&reopened), vec![1, 2, 4]);
        assert_eq!(resolve(&root).expect("resolves"), term_dir(&root, 2));
        drop(reopened);
        // A third takes over from the second; the first's directory goes.
        let third = Catalog::take_over(&root, 3, o, Instant::now(), &|| ()).expect("term 3");
        assert_eq!(workers(&third), vec![1, 2, 4]);
        assert!(!term_dir(&root, 1).exists());
        assert!(
            term_dir(&root, 2).exists(),
            "the one taken over from is kept"
        );
    }

    #[test]
    fn an_append_in_flight_is_neither_read_nor_cut_and_a_plain_catalog_is_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("catalog");
        let o = CatalogOptions::default();
        // A catalog kept before any election, in the root itself.
        let mut plain = Catalog::open(&root, o, Instant::now()).expect("plain");
        plain.append(worker(1), Instant::now()).expect("appended");
        let super::super::Backing::Files(files) = &plain.backing else {
            panic!("a catalog in a state directory")
        };
        let segment = files.log.path.clone();
        drop(plain);
        // Half a record: an append of the old leader in flight.
        let before = std::fs::read(&segment).expect("the segment");
        let mut torn = before.clone();
        torn.extend_from_slice(&[0x41, 0x4e, 0x00, 0x00, 0x10]);
        std::fs::write(&segment, &torn).expect("written");
        let new = Catalog::take_over(&root, 7, o, Instant::now(), &|| ()).expect("term 7");
        assert_eq!(workers(&new), vec![1]);
        assert_eq!(
            std::fs::read(&segment).expect("the segment").len(),
            torn.len(),
            "the old leader's file is left as it is"
        );
    }
}
