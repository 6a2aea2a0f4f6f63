//! Where everything of a checkpoint directory lives: the one place that builds paths.
//!
//! ```text
//! <root>/chk-00000007/MANIFEST.json        written last: the checkpoint is complete
//! <root>/chk-00000007/<file>               snapshot and changelog files named by the runtime
//! <root>/chk-00000007/.<file>.tmp          a file being written (never read)
//! ```

use std::path::{Path, PathBuf};

use anduin_types::Epoch;

/// The name of the manifest in a checkpoint's directory.
pub const MANIFEST_NAME: &str = "MANIFEST.json";

/// The root directory of a query's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointDir {
    root: PathBuf,
}

impl CheckpointDir {
    /// Checkpoints under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of checkpoint `epoch`.
    pub fn epoch_dir(&self, epoch: Epoch) -> PathBuf {
        self.root.join(format!("chk-{:08}", epoch.0))
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
}
