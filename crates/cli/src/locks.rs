//! One owner at a time for what a run writes: its checkpoint directory and its output files
//! (writers' paths, the dead-letter file and the events file) are locked before anything is read or written,
//! and stay locked until the run ends. A second run on any of them is refused, naming the PID
//! of the run that holds it (see `anduin_checkpoint::OwnerLock`). The checkpoint directory is
//! locked twice too: by its `LOCK` file and by the directory itself, so that a `LOCK` removed
//! while a run holds it does not let a second run share the directory.
//!
//! Each output is locked twice: by its path (a lock file in `$TMPDIR/anduin-locks`, which
//! covers an output that does not exist yet) and, once it exists, by the file or directory
//! itself, which a run sees whatever name it reaches the output by (a hard link) and whatever
//! its `$TMPDIR`. An output that does not exist yet (a writer's file, or with checkpoints its
//! directory of part files) is made here, empty, before it is locked, so that it is locked
//! from the start.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anduin_checkpoint::{output_locks_dir, OwnerLock};
use anduin_operator_api::DeadLetterTarget;
use anduin_spec::Spec;
use anyhow::Result;

/// The locks a run holds; dropping it releases them.
#[derive(Debug)]
#[must_use = "the run's files are unlocked when this is dropped"]
pub struct RunLocks {
    _held: Vec<OwnerLock>,
    /// The outputs made here (they did not exist): removed when the run does not get to run
    /// and leaves them empty (see [`RunLocks::ran`]).
    made: Vec<PathBuf>,
    /// Whether the run ran: set by [`RunLocks::ran`], or by the query as it starts running
    /// ([`RunLocks::when_running`]).
    ran: Arc<AtomicBool>,
}

impl RunLocks {
    /// The run ran (to its end, until stopped, or until it failed while running): the
    /// outputs it made are its own, empty or not, as what it wrote to them until then is.
    /// Until this is called, an output made by [`lock_run`] and still empty is removed when
    /// the locks are released, so that a run refused before it starts (a planning error, a
    /// missing input) leaves no empty file behind where there was none.
    pub fn ran(&mut self) {
        self.ran.store(true, Ordering::SeqCst);
    }

    /// What to call once the query runs (every operator built and restored: see
    /// `QueryHandle::when_running`), as [`RunLocks::ran`]: a run that fails after that (an
    /// overflowing SUM, a bad row) keeps the outputs it made, even those it had not written
    /// to yet.
    pub fn when_running(&self) -> impl FnOnce() + Send + 'static {
        let ran = Arc::clone(&self.ran);
        move || ran.store(true, Ordering::SeqCst)
    }
}

impl Drop for RunLocks {
    fn drop(&mut self) {
        if self.ran.load(Ordering::SeqCst) {
            return;
        }
        for path in &self.made {
            // Still held: no other run can have made it its own meanwhile. Only if empty:
            // a file of length 0, a directory without entries (`remove_dir` refuses others).
            let _ = match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_file() && m.len() == 0 => std::fs::remove_file(path),
                Ok(m) if m.is_dir() => std::fs::remove_dir(path),
                _ => Ok(()),
            };
        }
    }
}

/// Locks `checkpoint_dir` (if any), then every file output of `spec`, the dead-letter file
/// and the events file (`--events`, unless `-`): refused if another run holds any of them.
pub fn lock_run(
    spec: &Spec,
    dead_letter: &DeadLetterTarget,
    checkpoint_dir: Option<&Path>,
    events: Option<&Path>,
) -> Result<RunLocks> {
    let mut held = Vec::new();
    let mut made = Vec::new();
    if let Some(dir) = checkpoint_dir {
        held.push(OwnerLock::checkpoint_dir(dir)?);
    }
    // A partitioned writer writes a directory, with checkpoints or without.
    let partitioned: Vec<PathBuf> = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "writer" && o.param("partition_by").is_some())
        .filter_map(|o| {
            o.param("path")
                .map(|p| PathBuf::from(p.value.as_text().as_str()))
        })
        .collect();
    let mut outputs: Vec<PathBuf> = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "writer")
        .filter_map(|o| o.param("path").map(|p| p.value.as_text().to_string()))
        .filter(|p| p != "-")
        .map(PathBuf::from)
        .collect();
    if let DeadLetterTarget::File(p) = dead_letter {
        outputs.push(p.clone());
    }
    let locks = output_locks_dir();
    let writers = outputs.len() - usize::from(matches!(dead_letter, DeadLetterTarget::File(_)));
    for (i, path) in outputs.iter().enumerate() {
        if is_device(path) {
            // `/dev/null` and the like: nothing to lose, and runs that discard their output
            // (benchmarks) may run side by side.
            continue;
        }
        held.push(OwnerLock::output(&locks, path)?);
        if i < writers && !path.exists() {
            // The writer would make it (a directory of parts with checkpoints, a file without)
            // as it starts or at its first write; made now, empty, it is locked from the start,
            // so that a run under another name or $TMPDIR that makes it too is refused. (If
            // this fails, the writer reports why.)
            let created = if checkpoint_dir.is_some() || partitioned.contains(path) {
                std::fs::create_dir_all(path)
            } else {
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map(drop)
            };
            if created.is_ok() {
                made.push(path.clone());
            }
        }
        held.extend(OwnerLock::output_itself(path)?);
    }
    if let Some(path) = events.filter(|p| *p != Path::new("-") && !is_device(p)) {
        // Made (not truncated: it may be another run's, which the locks are to find out)
        // and locked as an output is; the run empties it once it is its own.
        let what = format!("the events file `{}`", path.display());
        held.push(OwnerLock::output_named(&locks, path, &what)?);
        if !path.exists() {
            // If this fails, opening it reports why.
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path);
        }
        held.extend(OwnerLock::output_itself_named(path, &what)?);
    }
    Ok(RunLocks {
        _held: held,
        made,
        ran: Arc::new(AtomicBool::new(false)),
    })
}

/// Whether `path` is a character or block device (`/dev/null`, `/dev/stdout` on a terminal).
pub(crate) fn is_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| {
        let t = m.file_type();
        t.is_char_device() || t.is_block_device()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_not_outputs_to_lock_and_files_are() {
        assert!(is_device(Path::new("/dev/null")));
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!is_device(dir.path()));
        assert!(!is_device(&dir.path().join("missing.csv")));
    }
}
