//! Errors of checkpoint storage.

use std::path::PathBuf;

use anduin_types::Epoch;

/// A checkpoint could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A file operation failed (disk full, permissions, …).
    #[error("checkpoint I/O on {path}: {cause}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
    /// The file that keeps the checkpoints' lineage holds something else than a lineage.
    #[error("the lineage of the checkpoints, {at}, holds `{found}`, not a lineage (1 to 64 letters and digits, then perhaps a line `query` and the digest of the query it was drawn for): remove it if no run with these checkpoints is to be repeated, or start over with --from-scratch")]
    BadLineage {
        /// The file or object.
        at: String,
        /// What it holds (its start).
        found: String,
    },
    /// An operator's facts kept beside the lineage hold something else than facts.
    #[error("the facts operator \"{operator}\" kept beside the lineage of the checkpoints, {at}, hold `{found}`, not facts (a line `lineage` and the lineage, then a name and a value a line): remove the file if no run with these checkpoints is to be repeated")]
    BadLineageFacts {
        /// The operator.
        operator: String,
        /// The file or object.
        at: String,
        /// What it holds (its start).
        found: String,
    },
    /// A fact to keep beside the lineage cannot be kept (a bug in the operator that keeps it).
    #[error("operator \"{operator}\" cannot keep fact `{fact}` = `{value}` beside the lineage: a fact's name is 1 to 64 letters, digits, `.`, `-` and `_`, and its value one line (a bug in anduin)")]
    BadLineageFact {
        /// The operator.
        operator: String,
        /// The fact's name.
        fact: String,
        /// Its value.
        value: String,
    },
    /// A manifest is not valid JSON of the expected form.
    #[error("checkpoint {epoch}: manifest {path} is malformed: {message}")]
    BadManifest {
        /// The checkpoint.
        epoch: u64,
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A manifest of another format than this build's [`crate::MANIFEST_FORMAT`]: written by
    /// an older (or newer) anduin, whose state this build cannot read.
    #[error(
        "checkpoint {epoch}: manifest {path} has format {found}, written by {} anduin; this \
         anduin reads format {expected} only: resume it with the anduin that wrote it, or \
         start over with --from-scratch",
        if found < expected { "an older" } else { "a newer" }
    )]
    OtherFormat {
        /// The checkpoint.
        epoch: u64,
        /// The manifest file.
        path: PathBuf,
        /// Its format.
        found: u32,
        /// This build's format.
        expected: u32,
    },
    /// A checkpoint file is missing, truncated or corrupt.
    #[error("checkpoint {}: file {file}: {problem}", epoch.0)]
    BadFile {
        /// The checkpoint.
        epoch: Epoch,
        /// The file, relative to the checkpoint directory.
        file: String,
        /// What is wrong (missing, size, checksum).
        problem: String,
    },
    /// `--checkpoint-store` names nothing this build can store checkpoints in.
    #[error("checkpoint store `{given}`: {problem}")]
    BadLocation {
        /// What was given.
        given: String,
        /// What is wrong, and what is supported.
        problem: String,
    },
    /// An object store could not be reached or refused a request (credentials, bucket,
    /// network).
    #[error("checkpoint store {url}: cannot {operation}: {cause}")]
    Remote {
        /// The store (`s3://bucket/prefix`).
        url: String,
        /// What was being done (`list the checkpoints`, `upload chk-00000003/001-w.full`).
        operation: String,
        /// The store's or the network's error.
        cause: String,
    },
    /// Checkpoint `epoch` is already complete in the store: another run writes to the same
    /// store. Nothing was overwritten; this run takes no more checkpoints there.
    #[error(
        "checkpoint {epoch} in {url} was committed by another run ({what} already exists): \
         two runs write to one checkpoint store; nothing was overwritten, and this run takes \
         no more checkpoints there (give each run a store of its own)"
    )]
    AlreadyCommitted {
        /// The checkpoint.
        epoch: u64,
        /// The store.
        url: String,
        /// The object that exists (its key under the store).
        what: String,
    },
    /// The writer may no longer act on the store (its [`crate::CommitGuard`] said why): the
    /// checkpoint was neither begun (its directory cleared) nor deleted.
    #[error("{act} of checkpoint {epoch} refused: {why}")]
    Fenced {
        /// What was refused (`checkpoint begin`, `checkpoint deletion`).
        act: String,
        /// The checkpoint.
        epoch: u64,
        /// Why.
        why: String,
    },
    /// The writer may no longer commit checkpoints (its [`crate::CommitGuard`] said why):
    /// the manifest was not written.
    #[error("checkpoint {epoch} not committed: {why}")]
    NotCommitted {
        /// The checkpoint.
        epoch: u64,
        /// Why.
        why: String,
    },
}

impl CheckpointError {
    pub(crate) fn io(path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        CheckpointError::Io {
            path: path.into(),
            cause,
        }
    }
}
