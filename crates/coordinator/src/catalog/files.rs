//! The files of a state directory: their names (built and parsed here only), listing them,
//! and the fsyncs that make a name change durable.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::CatalogError;
use crate::ids::Txid;

/// The lock file that keeps a second coordinator out.
pub const LOCK_FILE: &str = anduin_checkpoint::LOCK_NAME;

const SNAPSHOT_PREFIX: &str = "snapshot-";
const SNAPSHOT_SUFFIX: &str = ".img";
const SEGMENT_PREFIX: &str = "edits-";
const SEGMENT_SUFFIX: &str = ".log";
const TEMP_SUFFIX: &str = ".tmp";
const CORRUPT_SUFFIX: &str = ".corrupt";

/// The snapshot holding every edit up to `txid`: `snapshot-<txid, 20 digits>.img`.
pub fn snapshot_path(dir: &Path, txid: Txid) -> PathBuf {
    dir.join(format!("{SNAPSHOT_PREFIX}{:020}{SNAPSHOT_SUFFIX}", txid.0))
}

/// The name a snapshot is written under before its rename.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TEMP_SUFFIX);
    PathBuf::from(name)
}

/// The name a damaged snapshot is set aside under (kept for inspection, never read).
pub fn corrupt_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(CORRUPT_SUFFIX);
    PathBuf::from(name)
}

/// The edit-log segment whose first edit is `first`: `edits-<txid, 20 digits>.log`.
pub fn segment_path(dir: &Path, first: Txid) -> PathBuf {
    dir.join(format!("{SEGMENT_PREFIX}{:020}{SEGMENT_SUFFIX}", first.0))
}

/// The catalog's files in a state directory, each list in txid order.
#[derive(Debug, Default)]
pub struct Listing {
    /// Snapshots, by the txid they hold edits up to.
    pub snapshots: Vec<(Txid, PathBuf)>,
    /// Edit-log segments, by their first txid.
    pub segments: Vec<(Txid, PathBuf)>,
    /// Snapshots left half-written by a crash.
    pub temporary: Vec<PathBuf>,
}

/// Lists the catalog's files in `dir`; other files are left alone.
pub fn list(dir: &Path) -> Result<Listing, CatalogError> {
    let mut listing = Listing::default();
    let entries = std::fs::read_dir(dir).map_err(|e| CatalogError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| CatalogError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = entry.path();
        if name.starts_with(SNAPSHOT_PREFIX) && name.ends_with(TEMP_SUFFIX) {
            listing.temporary.push(path);
        } else if let Some(txid) = number(name, SNAPSHOT_PREFIX, SNAPSHOT_SUFFIX) {
            listing.snapshots.push((txid, path));
        } else if let Some(txid) = number(name, SEGMENT_PREFIX, SEGMENT_SUFFIX) {
            listing.segments.push((txid, path));
        }
    }
    listing.snapshots.sort();
    listing.segments.sort();
    listing.temporary.sort();
    Ok(listing)
}

pub(super) fn number(name: &str, prefix: &str, suffix: &str) -> Option<Txid> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Txid)
}

/// Fsyncs directory `dir`, so that the names created, renamed or removed in it last.
pub fn sync_dir(dir: &Path) -> Result<(), CatalogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| CatalogError::io("fsync the directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_built_and_parsed_in_one_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let snap = snapshot_path(dir.path(), Txid(42));
        let seg = segment_path(dir.path(), Txid(43));
        for p in [
            &snap,
            &seg,
            &temp_path(&snap),
            &corrupt_path(&snap),
            &dir.path().join("notes.txt"),
        ] {
            std::fs::write(p, b"x").expect("write");
        }
        std::fs::write(dir.path().join("edits-12.log"), b"x").expect("write");
        let listing = list(dir.path()).expect("list");
        assert_eq!(listing.snapshots, vec![(Txid(42), snap.clone())]);
        assert_eq!(listing.segments, vec![(Txid(43), seg)]);
        assert_eq!(listing.temporary, vec![temp_path(&snap)]);
        assert!(snap.ends_with("snapshot-00000000000000000042.img"));
    }
}
