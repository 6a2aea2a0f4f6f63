//! The manifest: what a complete checkpoint holds. Written last; its presence (and validity)
//! is what makes a checkpoint complete.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plan::PlanFingerprint;

/// The manifest format this build writes and reads. A checkpoint of another format is
/// refused by name ([`crate::CheckpointError::OtherFormat`]), never misread.
///
/// - 1: the first.
/// - 2: keyed state (window, join, pattern) in `anduin_state::KeyedTable` entries (group key
///   length, group key, sub-key), a pattern's waiting rows under their partitions, and typed
///   operator metadata.
/// - 3: the param changes applied to the running query (`controls`).
pub const MANIFEST_FORMAT: u32 = 3;

/// The formats this build reads: 2 is 3 without param changes.
pub const READ_FORMATS: &[u32] = &[2, 3];

/// A param change applied to a running query (a meta query, paper §4.5), as the history and
/// the manifests keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// Its number in the query's history, from 1.
    pub seq: u64,
    /// When it was applied everywhere, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// The epoch of the barrier that carried it: every instance switched at that barrier,
    /// so the rows before it were processed with the old value and the rows after it with
    /// the new one. With checkpoints, the checkpoint of that epoch is taken at the same
    /// point (its state is from before the change) and records the change.
    pub epoch: u64,
    /// The operator.
    pub operator: String,
    /// The param.
    pub param: String,
    /// The value before.
    pub old: String,
    /// The value after.
    pub new: String,
    /// Who asked.
    pub from: String,
}

/// One file of a checkpoint directory, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Name inside the checkpoint's directory.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// CRC32 of the whole file.
    pub crc32: u32,
}

/// A state file an operator needs to restore: which checkpoint holds it, and its name there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFileRef {
    /// The checkpoint (epoch) whose directory holds the file.
    pub epoch: u64,
    /// The file's name in that directory.
    pub file: String,
}

/// What one operator instance needs to resume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OperatorState {
    /// Small state kept in the manifest itself: a source's position, a sink's pending parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<serde_json::Value>,
    /// State files to restore, oldest first: a full snapshot, then the changelogs after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<StateFileRef>,
}

/// A complete checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The checkpoint's epoch.
    pub epoch: u64,
    /// When the checkpoint completed, in milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// Whether every source had ended: the query had nothing left to do.
    #[serde(default)]
    pub finished: bool,
    /// The query the checkpoint was taken of.
    pub plan: PlanFingerprint,
    /// Every file in this checkpoint's directory besides the manifest.
    pub files: Vec<FileEntry>,
    /// Per operator (by name): what it needs to resume.
    pub operators: BTreeMap<String, OperatorState>,
    /// Every param change applied to the query up to this checkpoint, oldest first: a
    /// restore applies them (those of this epoch after restoring the state, which is from
    /// before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<ChangeRecord>,
}

impl Manifest {
    /// The epochs of other checkpoints whose files this one needs (changelog chains).
    pub fn depends_on(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .operators
            .values()
            .flat_map(|o| o.files.iter().map(|f| f.epoch))
            .filter(|e| *e != self.epoch)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
