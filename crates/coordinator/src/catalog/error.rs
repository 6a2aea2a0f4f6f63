//! What can go wrong with the catalog, classified by what its caller can do.

use std::path::PathBuf;

use anduin_checkpoint::LockError;

use super::model::EditRefused;
use crate::ids::Txid;

/// A catalog error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// Another coordinator holds the state directory.
    #[error(transparent)]
    Locked(#[from] LockError),
    /// A file operation failed.
    #[error("cannot {doing} {}: {cause}", path.display())]
    Io {
        /// What was being done (`write`, `fsync`, `rename`, …).
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A record in the middle of an edit-log segment is damaged. The catalog stops rather than
    /// skip edits.
    #[error("{}: damaged at byte {offset}: {why}; the catalog will not skip edits: restore the state directory (or, for a catalog in an object store, its objects) from a backup (see docs/operations.md, \"The coordinator's state directory\")", path.display())]
    Corrupt {
        /// The segment.
        path: PathBuf,
        /// Where the damage starts.
        offset: u64,
        /// What is wrong.
        why: String,
    },
    /// A file written by another version of anduin, in a format this one does not read.
    #[error("{} is written in catalog format {found}, this anduin reads format {}: run the anduin version that wrote it", path.display(), super::format::FORMAT_VERSION)]
    OtherVersion {
        /// The file.
        path: PathBuf,
        /// Its format version.
        found: u32,
    },
    /// Edits the catalog needs are not in any file.
    #[error("edits {} to {} are missing{}: no valid snapshot holds them and no edit-log segment (or edit object) has them; restore the state directory (or the catalog's objects) from a backup", from.0, to.0, match path { Some(p) => format!(" before {}", p.display()), None => String::new() })]
    Missing {
        /// The first missing.
        from: Txid,
        /// The last missing.
        to: Txid,
        /// The segment found after the gap, if any.
        path: Option<PathBuf>,
    },
    /// A logged edit does not apply to the state before it (a bug in anduin, or files from
    /// two different catalogs mixed).
    #[error("{}: edit {} at byte {offset} does not apply to the catalog before it: {why} (a bug in anduin, or files of two state directories mixed)", path.display(), txid.0)]
    Replay {
        /// The segment.
        path: PathBuf,
        /// The record's offset.
        offset: u64,
        /// The edit.
        txid: Txid,
        /// Why it does not apply.
        why: EditRefused,
    },
    /// The edit does not apply to the catalog: nothing was written.
    #[error(transparent)]
    Refused(#[from] EditRefused),
    /// An earlier write or fsync failed, so what is on disk is unknown: the catalog takes no
    /// more edits until it is reopened (and what it reads back then is the truth).
    #[error("the catalog in {} takes no more edits after a failed write ({cause}): restart the coordinator; it will recover the catalog from its files", dir.display())]
    Poisoned {
        /// The state directory.
        dir: PathBuf,
        /// The failure.
        cause: String,
    },
    /// Another coordinator wrote the catalog's next edit in the object store first: a later
    /// leader took the catalog over, and this one no longer leads.
    #[error("edit {} of the catalog at {url} was written by another coordinator first: a later leader took the catalog over, and this coordinator no longer leads", txid.0)]
    Superseded {
        /// Where the catalog is (`s3://bucket/prefix/.catalog`).
        url: String,
        /// The edit.
        txid: Txid,
    },
    /// The object store the catalog is kept in failed (whether a write landed is unknown:
    /// the catalog takes no more edits, and reading it again tells).
    #[error(transparent)]
    Remote(#[from] anduin_checkpoint::CheckpointError),
    /// The catalog could not be encoded (a bug in anduin).
    #[error("cannot encode {what}: {cause} (a bug in anduin)")]
    Encode {
        /// What.
        what: &'static str,
        /// Why.
        cause: String,
    },
}

impl CatalogError {
    pub(super) fn io(doing: &'static str, path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        CatalogError::Io {
            doing,
            path: path.into(),
            cause,
        }
    }
}
