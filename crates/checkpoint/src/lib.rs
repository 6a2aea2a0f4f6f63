//! Checkpoint storage and the decisions around it, in the HDFS manner: one directory per
//! checkpoint, every file written under a temporary name, fsynced, checksummed and renamed,
//! and a manifest written last, whose presence is what makes a checkpoint complete.
//!
//! The decisions (which checkpoint is complete, what may be deleted, which one to restore,
//! whether a changed query may restore at all, whether a start keeps the checkpoints' lineage)
//! are pure functions of facts, in [`decide`], [`plan`] and [`lineage`], tested without any I/O. The I/O (writing files, reading and validating
//! manifests, listing a directory) is a thin shell around them.
//!
//! The store is a local directory or an object store (`s3://bucket/prefix`, through the
//! `object_store` crate) with a local directory that stages and caches it: the same layout,
//! checksums and commit protocol in both ([`Store`], [`StoreLocation`]).
//!
//! This crate does not know what is in a snapshot file (that is `anduin-state`'s format or an
//! operator's own), nor how a checkpoint is taken (the runtime's coordinator); when one is
//! taken is decided here, in [`schedule`].

mod bucket;
pub mod decide;
mod error;
mod files;
mod layout;
pub mod lineage;
mod location;
mod lock;
mod manifest;
mod objects;
pub mod plan;
pub mod recovery;
pub mod schedule;
mod store;

pub use bucket::{Bucket, Created};
pub use error::CheckpointError;
pub use files::{write_file_atomically, CrcWriter, FinishedFile, PendingFile};
pub use layout::{instance_key, state_file, CheckpointDir, LINEAGE_FACTS_DIR, LINEAGE_NAME};
pub use lineage::{FactCheck, LineageStart, TakenLineage};
pub use location::{S3Settings, StoreLocation, SUPPORTED};
pub use lock::{output_locks_dir, LockError, OwnerLock, LOCK_NAME};
pub use manifest::{
    ChangeRecord, FileEntry, Manifest, OperatorState, StateFileRef, MANIFEST_FORMAT, READ_FORMATS,
};
pub use store::{draw_lineage, CheckpointListing, CheckpointStatus, CommitGuard, Store, Validated};
