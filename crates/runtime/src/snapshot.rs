//! Taking one task's share of a checkpoint: each operator of the chain writes its state into
//! a slot (inline JSON, and at most one file written under a temporary name); the files are
//! made durable later, off the data path, by the committer thread.
//!
//! A slot tells a checkpoint that cannot be written (the checkpoint's disk is full, its
//! directory went away) from an operator that fails: it records every I/O error of its file,
//! and [`take`] turns a snapshot that failed on one into [`Taken::Failed`] — the checkpoint
//! fails, the query goes on — while any other error of the operator stays an error of the task.

use std::io::Write;
use std::path::{Path, PathBuf};

use anduin_checkpoint::{FinishedFile, PendingFile};
use anduin_operator_api::{OperatorError, SnapshotOut};
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
    /// The operator's index in the query, the instance, and how many there are: what names
    /// its file (`anduin_checkpoint::state_file`).
    slot: (usize, usize, usize),
    inline: Option<serde_json::Value>,
    file: Option<(SnapshotKind, Recording)>,
    /// The first I/O error of the slot's file (creating, writing or flushing it).
    io_failure: Option<String>,
}

/// A checkpoint file that records its first write error.
struct Recording {
    file: PendingFile,
    error: Option<String>,
}

impl Write for Recording {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.file.writer().write(buf);
        if let Err(e) = &r {
            self.error.get_or_insert_with(|| e.to_string());
        }
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.file.writer().flush();
        if let Err(e) = &r {
            self.error.get_or_insert_with(|| e.to_string());
        }
        r
    }
}

/// What became of one operator's snapshot.
#[derive(Debug)]
pub(crate) enum Taken {
    /// Written (not yet durable): hand it to the committer.
    Done(OpSnapshot),
    /// The checkpoint could not be written (why, naming the operator): the checkpoint fails,
    /// the query goes on. The slot's file is removed.
    Failed(String),
}

/// Runs `snapshot` into `slot` and sorts out the outcome (see the module's docs).
pub(crate) fn take(
    mut slot: Slot<'_>,
    snapshot: impl FnOnce(&mut Slot<'_>) -> Result<(), OperatorError>,
) -> Result<Taken, OperatorError> {
    let result = snapshot(&mut slot);
    let failure = slot
        .io_failure
        .take()
        .or_else(|| slot.file.as_mut().and_then(|(_, f)| f.error.take()));
    let name = slot.name.to_string();
    let failed = |why: String| {
        Taken::Failed(format!(
            "operator \"{name}\": cannot write its snapshot: {why}"
        ))
    };
    match (result, failure) {
        (_, Some(io)) => Ok(failed(io)),
        (Err(e), None) => Err(e),
        (Ok(()), None) => match slot.finish() {
            Ok(s) => Ok(Taken::Done(s)),
            Err(io) => Ok(failed(io)),
        },
    }
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
        let key = anduin_checkpoint::instance_key(name, instance, parallelism);
        let slot = (index, instance, parallelism);
        Self {
            epoch,
            full,
            dir,
            name,
            key,
            slot,
            inline: None,
            file: None,
            io_failure: None,
        }
    }

    /// Flushes the file (if any) and hands the slot's content over; an I/O error says why
    /// the file could not be written.
    fn finish(self) -> Result<OpSnapshot, String> {
        let file = match self.file {
            None => None,
            Some((kind, f)) => Some((kind, f.file.finish().map_err(|e| e.to_string())?)),
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
            let (index, instance, parallelism) = self.slot;
            let path: PathBuf = self.dir.join(anduin_checkpoint::state_file(
                index,
                self.name,
                instance,
                parallelism,
                kind,
            ));
            let file = PendingFile::create(&path).map_err(|e| {
                self.io_failure = Some(e.to_string());
                OperatorError::Execution {
                    operator: self.name.to_string(),
                    message: format!("cannot write its snapshot: {e}"),
                }
            })?;
            self.file = Some((kind, Recording { file, error: None }));
        }
        let (_, f) = self.file.as_mut().expect("created just above");
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(dir: &Path) -> Slot<'_> {
        Slot::new(Epoch(3), true, dir, (1, 0, 1), "w")
    }

    #[test]
    fn a_snapshot_that_cannot_reach_its_file_fails_the_checkpoint_and_removes_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("gone");
        let taken = take(slot(&missing), |s| {
            s.stream(SnapshotKind::Full)?;
            Ok(())
        })
        .expect("not an error of the task");
        assert!(
            matches!(&taken, Taken::Failed(why) if why.contains("operator \"w\"")),
            "{taken:?}"
        );

        // A write error of the file (a full disk) makes the operator fail, with whatever
        // message: the checkpoint fails, not the task.
        let taken = take(slot(dir.path()), |s| {
            let out = s.stream(SnapshotKind::Full)?;
            out.write_all(b"x").expect("buffered");
            if let Some((_, r)) = s.file.as_mut() {
                r.error = Some("No space left on device (os error 28)".into());
            }
            Err(OperatorError::Execution {
                operator: "w".into(),
                message: "state backend: writing a full snapshot: No space left on device".into(),
            })
        })
        .expect("not an error of the task");
        assert!(matches!(taken, Taken::Failed(_)));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(left.is_empty(), "uncommitted files are removed: {left:?}");
    }

    #[test]
    fn an_operator_that_fails_otherwise_fails_its_task() {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = take(slot(dir.path()), |_| {
            Err(OperatorError::Execution {
                operator: "w".into(),
                message: "a bug".into(),
            })
        });
        assert!(result.is_err());
        let done = take(slot(dir.path()), |s| {
            s.inline(serde_json::json!({"at": 1}));
            Ok(())
        })
        .expect("ok");
        assert!(matches!(done, Taken::Done(s) if s.name == "w"));
    }
}
