//! Taking one task's share of a checkpoint: each operator of the chain writes its state into
//! a slot (inline JSON, and at most one file written under a temporary name); the files are
//! made durable later, off the data path, by the committer thread.

use std::io::Write;
use std::path::{Path, PathBuf};

use anduin_checkpoint::{FinishedFile, PendingFile};
use anduin_operators::{OperatorError, SnapshotOut};
use anduin_types::{Epoch, SnapshotKind};

/// One operator's share of a checkpoint, not yet durable.
#[derive(Debug)]
pub(crate) struct OpSnapshot {
    /// The operator instance's key in the manifest (its name, `name#i` for instance `i` of a
    /// parallel operator).
    pub name: String,
    /// Its inline state.
    pub inline: Option<serde_json::Value>,
    /// Its state file, if it wrote one.
    pub file: Option<(SnapshotKind, FinishedFile)>,
}

/// The [`SnapshotOut`] given to one operator.
pub(crate) struct Slot<'a> {
    epoch: Epoch,
    full: bool,
    dir: &'a Path,
    name: &'a str,
    key: String,
    stem: String,
    inline: Option<serde_json::Value>,
    file: Option<(SnapshotKind, PendingFile)>,
}

impl<'a> Slot<'a> {
    /// A slot for instance `instance` (of `parallelism`) of operator `name`, the `index`-th
    /// of the query, in checkpoint directory `dir`.
    pub(crate) fn new(
        epoch: Epoch,
        full: bool,
        dir: &'a Path,
        (index, instance, parallelism): (usize, usize, usize),
        name: &'a str,
    ) -> Self {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let (key, stem) = if parallelism > 1 {
            (
                format!("{name}#{instance}"),
                format!("{index:03}-{clean}-{instance}"),
            )
        } else {
            (name.to_string(), format!("{index:03}-{clean}"))
        };
        Self {
            epoch,
            full,
            dir,
            name,
            key,
            stem,
            inline: None,
            file: None,
        }
    }

    /// Flushes the file (if any) and hands the slot's content over.
    pub(crate) fn finish(self) -> Result<OpSnapshot, OperatorError> {
        let file = match self.file {
            None => None,
            Some((kind, f)) => Some((
                kind,
                f.finish().map_err(|e| checkpoint_error(self.name, &e))?,
            )),
        };
        Ok(OpSnapshot {
            name: self.key,
            inline: self.inline,
            file,
        })
    }
}

impl SnapshotOut for Slot<'_> {
    fn epoch(&self) -> Epoch {
        self.epoch
    }

    fn full_due(&self) -> bool {
        self.full
    }

    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }

    fn stream(&mut self, kind: SnapshotKind) -> Result<&mut dyn Write, OperatorError> {
        if self.file.as_ref().is_some_and(|(k, _)| *k != kind) {
            return Err(OperatorError::Execution {
                operator: self.name.to_string(),
                message: "a snapshot asked for both a full and a changes stream".into(),
            });
        }
        if self.file.is_none() {
            let suffix = match kind {
                SnapshotKind::Full => "full",
                SnapshotKind::Changes => "changes",
            };
            let path: PathBuf = self.dir.join(format!("{}.{suffix}", self.stem));
            let f = PendingFile::create(&path).map_err(|e| checkpoint_error(self.name, &e))?;
            self.file = Some((kind, f));
        }
        let (_, f) = self.file.as_mut().expect("created just above");
        Ok(f.writer())
    }
}

fn checkpoint_error(name: &str, e: &anduin_checkpoint::CheckpointError) -> OperatorError {
    OperatorError::Execution {
        operator: name.to_string(),
        message: format!("cannot write its snapshot: {e}"),
    }
}
