//! Where everything of a checkpoint directory lives: the one place that builds paths.
//!
//! ```text
//! <root>/chk-00000007/MANIFEST.json        written last: the checkpoint is complete
//! <root>/chk-00000007/003-count-1.full     a snapshot ([`state_file`]: operator 3 of the
//!                                          query, `count`, instance 1; `.changes` for a changelog)
//! <root>/chk-00000007/.<file>.tmp          a file being written (never read)
//! ```
//!
//! In an object store the same names sit under the store's prefix
//! ([`ObjectLayout`]): `<prefix>/chk-00000007/MANIFEST.json`, `<prefix>/chk-00000007/003-count-1.full`;
//! a local directory stages and caches them under the layout above.

use std::path::{Path, PathBuf};

use anduin_types::Epoch;

/// The name of the manifest in a checkpoint's directory.
pub const MANIFEST_NAME: &str = "MANIFEST.json";

/// The root directory of a query's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointDir {
    root: PathBuf,
    /// Whether it stages the files of an object store ([`CheckpointDir::staging`]).
    staging: bool,
}

impl CheckpointDir {
    /// Checkpoints under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            staging: false,
        }
    }

    /// The directory under `root` where tasks write the files of checkpoints that go to an
    /// object store before their upload: its writers make each checkpoint's directory
    /// themselves ([`CheckpointDir::prepare_epoch`]), as a cluster's executor must, whose
    /// checkpoint coordinator runs in another process.
    pub fn staging(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            staging: true,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of checkpoint `epoch`.
    pub fn epoch_dir(&self, epoch: Epoch) -> PathBuf {
        self.root.join(epoch_dir_name(epoch))
    }

    /// The directory a task writes its files of checkpoint `epoch` into. In a store's own
    /// directory it is the one the checkpoint coordinator made as the checkpoint began
    /// ([`crate::Store::begin`]): one that went away (the checkpoint was abandoned) is not
    /// made again, and the writes into it fail the checkpoint. In a staging directory
    /// ([`CheckpointDir::staging`]) it is made here when missing; when it cannot be, the
    /// writes into it say why.
    pub fn prepare_epoch(&self, epoch: Epoch) -> PathBuf {
        let dir = self.epoch_dir(epoch);
        if self.staging && !dir.is_dir() {
            if let Err(e) = std::fs::create_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot make a checkpoint's staging directory");
            }
        }
        dir
    }

    /// The manifest of checkpoint `epoch`.
    pub fn manifest(&self, epoch: Epoch) -> PathBuf {
        self.epoch_dir(epoch).join(MANIFEST_NAME)
    }

    /// A file of checkpoint `epoch`.
    pub fn file(&self, epoch: Epoch, name: &str) -> PathBuf {
        self.epoch_dir(epoch).join(name)
    }

    /// The epoch a directory name stands for (`chk-00000007` → 7), if it is one.
    pub fn parse_epoch_dir(name: &str) -> Option<Epoch> {
        let digits = name.strip_prefix("chk-")?;
        (digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().ok().map(Epoch))
            .flatten()
    }
}

/// The name of checkpoint `epoch`'s directory (or key prefix): `chk-00000007`.
fn epoch_dir_name(epoch: Epoch) -> String {
    format!("chk-{:08}", epoch.0)
}

/// The file, beside the checkpoints' directories, that keeps their lineage
/// ([`crate::Store::lineage`]).
pub const LINEAGE_NAME: &str = "lineage";

/// The directory (or key prefix), beside the lineage, where operators keep facts for it: one
/// file per operator ([`crate::lineage::KeptFacts`], [`crate::Store::keep_lineage_fact`]).
pub const LINEAGE_FACTS_DIR: &str = "lineage-facts";

/// Where everything of a checkpoint store lives in an object store: the names of
/// [`CheckpointDir`] under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectLayout {
    prefix: object_store::path::Path,
}

impl ObjectLayout {
    /// Checkpoints under `prefix` (`/`-separated, possibly empty).
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: object_store::path::Path::from(prefix),
        }
    }

    /// The prefix.
    pub(crate) fn root(&self) -> &object_store::path::Path {
        &self.prefix
    }

    /// The prefix of checkpoint `epoch`'s objects.
    pub(crate) fn epoch_dir(&self, epoch: Epoch) -> object_store::path::Path {
        self.prefix.clone().join(epoch_dir_name(epoch))
    }

    /// The manifest of checkpoint `epoch`.
    pub(crate) fn manifest(&self, epoch: Epoch) -> object_store::path::Path {
        self.file(epoch, MANIFEST_NAME)
    }

    /// A file of checkpoint `epoch`.
    pub(crate) fn file(&self, epoch: Epoch, name: &str) -> object_store::path::Path {
        self.epoch_dir(epoch).join(name)
    }

    /// The object that keeps the lineage of the checkpoints ([`LINEAGE_NAME`]).
    pub(crate) fn lineage(&self) -> object_store::path::Path {
        self.prefix.clone().join(LINEAGE_NAME)
    }

    /// The object where operator `operator` keeps facts for the lineage
    /// ([`LINEAGE_FACTS_DIR`]).
    pub(crate) fn lineage_facts(&self, operator: &str) -> object_store::path::Path {
        self.prefix
            .clone()
            .join(LINEAGE_FACTS_DIR)
            .join(crate::lineage::facts_file_name(operator))
    }

    /// The object a store's preflight writes and removes (`tag` makes it this process's).
    pub(crate) fn probe(&self, tag: &str) -> object_store::path::Path {
        self.prefix.clone().join(format!(".anduin-probe-{tag}"))
    }
}

/// An operator instance's key in a checkpoint's manifest: the operator's name, and `#i` for
/// instance `i` of an operator that runs as several.
pub fn instance_key(operator: &str, instance: usize, parallelism: usize) -> String {
    if parallelism > 1 {
        format!("{operator}#{instance}")
    } else {
        operator.to_string()
    }
}

/// The name of an operator instance's state file in a checkpoint: the operator's index in
/// the query, its name (characters other than letters, digits, `-` and `_` as `_`), the
/// instance when it runs as several, and `full` (a full snapshot) or `changes` (a changelog)
/// as extension: `003-count-1.full`.
pub fn state_file(
    index: usize,
    operator: &str,
    instance: usize,
    parallelism: usize,
    kind: anduin_types::SnapshotKind,
) -> String {
    let clean = anduin_types::file_safe(operator);
    let suffix = match kind {
        anduin_types::SnapshotKind::Full => "full",
        anduin_types::SnapshotKind::Changes => "changes",
    };
    if parallelism > 1 {
        format!("{index:03}-{clean}-{instance}.{suffix}")
    } else {
        format!("{index:03}-{clean}.{suffix}")
    }
}

/// The temporary name a file is written under before it is renamed to `path`.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_keys_and_state_files_keep_the_names_existing_checkpoints_use() {
        use anduin_types::SnapshotKind::{Changes, Full};
        assert_eq!(instance_key("count", 0, 1), "count");
        assert_eq!(instance_key("count", 1, 4), "count#1");
        assert_eq!(state_file(3, "count", 0, 1, Full), "003-count.full");
        assert_eq!(state_file(3, "count", 1, 4, Changes), "003-count-1.changes");
        assert_eq!(state_file(12, "a b/é", 0, 1, Full), "012-a_b__.full");
    }

    #[test]
    fn epoch_directories_round_trip_through_their_names() {
        let d = CheckpointDir::new("/ck");
        let dir = d.epoch_dir(Epoch(7));
        assert_eq!(dir, PathBuf::from("/ck/chk-00000007"));
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert_eq!(CheckpointDir::parse_epoch_dir(name), Some(Epoch(7)));
        assert_eq!(CheckpointDir::parse_epoch_dir("chk-7"), None);
        assert_eq!(CheckpointDir::parse_epoch_dir("other"), None);
        assert_eq!(
            temp_path(&d.manifest(Epoch(7))),
            PathBuf::from("/ck/chk-00000007/.MANIFEST.json.tmp")
        );
    }

    #[test]
    fn only_a_staging_directory_makes_the_directory_of_a_checkpoint_its_tasks_write() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = CheckpointDir::new(tmp.path().join("store"));
        assert!(
            !store.prepare_epoch(Epoch(3)).exists(),
            "made by Store::begin only"
        );
        let staging = CheckpointDir::staging(tmp.path().join("staging"));
        let dir = staging.prepare_epoch(Epoch(3));
        assert!(dir.is_dir());
        assert_eq!(dir, staging.epoch_dir(Epoch(3)));
        assert_eq!(staging.prepare_epoch(Epoch(3)), dir, "made once");
    }

    #[test]
    fn object_keys_use_the_directory_names_under_the_prefix() {
        let o = ObjectLayout::new("team/q2");
        assert_eq!(
            o.manifest(Epoch(7)).as_ref(),
            "team/q2/chk-00000007/MANIFEST.json"
        );
        assert_eq!(
            o.file(Epoch(7), "003-count.full").as_ref(),
            "team/q2/chk-00000007/003-count.full"
        );
        assert_eq!(
            ObjectLayout::new("").epoch_dir(Epoch(1)).as_ref(),
            "chk-00000001"
        );
    }
}
