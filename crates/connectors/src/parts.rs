//! Transactional output as part files, for a writer in a query with checkpoints.
//!
//! A writer appends to an in-progress part; a checkpoint barrier closes it (fsynced) as
//! pending for that epoch; when the checkpoint completes, pending parts are committed by a
//! rename to their final name. Readers of the directory see only committed parts: whole, and
//! each row exactly once. On restore from checkpoint `e`, pending parts of epochs up to `e`
//! are committed (the crash came between completion and commit), and every other
//! uncommitted part, and any part committed by a later checkpoint than `e`, is deleted: the
//! rows in it will be produced again.
//!
//! ```text
//! <dir>/part-00000007-000003.csv             committed by checkpoint 7 (the 4th part)
//! <dir>/.part-00000008-000004.csv.pending    closed at barrier 8, waiting for its completion
//! <dir>/.part-000005.csv.inprogress          being written
//! ```

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anduin_types::Epoch;

/// What a file in the output directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartName {
    Committed { epoch: u64, seq: u64 },
    Pending { epoch: u64, seq: u64 },
    InProgress { seq: u64 },
}

fn parse(name: &str, ext: &str) -> Option<PartName> {
    let numbers = |s: &str| -> Option<(u64, u64)> {
        let (e, q) = s.split_once('-')?;
        Some((e.parse().ok()?, q.parse().ok()?))
    };
    if let Some(rest) = name.strip_prefix(".part-") {
        if let Some(core) = rest.strip_suffix(&format!(".{ext}.pending")) {
            let (epoch, seq) = numbers(core)?;
            return Some(PartName::Pending { epoch, seq });
        }
        if let Some(core) = rest.strip_suffix(&format!(".{ext}.inprogress")) {
            return Some(PartName::InProgress {
                seq: core.parse().ok()?,
            });
        }
        return None;
    }
    let core = name
        .strip_prefix("part-")?
        .strip_suffix(&format!(".{ext}"))?;
    let (epoch, seq) = numbers(core)?;
    Some(PartName::Committed { epoch, seq })
}

/// A closed part: the epoch of the barrier that closed it, and its sequence number.
type PartId = (u64, u64);

/// The part files of one writer.
#[derive(Debug)]
pub(crate) struct Parts {
    dir: PathBuf,
    ext: &'static str,
    next_seq: u64,
    current: Option<(u64, File)>,
    /// Parts closed at a barrier, not yet committed.
    pending: Vec<PartId>,
}

impl Parts {
    /// Opens the output directory `dir` (creating it). For a fresh start (`restore` is
    /// `None`), every part file from an earlier run is removed; when resuming from checkpoint
    /// `e`, the directory is brought back to what checkpoint `e` had committed.
    pub(crate) fn open(
        dir: &Path,
        ext: &'static str,
        restore: Option<Epoch>,
    ) -> std::io::Result<Self> {
        if dir.is_file() {
            return Err(std::io::Error::other(format!(
                "`{}` is a file, but with checkpoints a writer writes part files into a directory of that name",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir)?;
        let mut next_seq = 0;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(part) = parse(&name, ext) else {
                continue;
            };
            let path = entry.path();
            let keep = match (part, restore) {
                (_, None) => false,
                (PartName::Committed { epoch, seq }, Some(e)) if epoch <= e.0 => {
                    next_seq = next_seq.max(seq + 1);
                    true
                }
                (PartName::Pending { epoch, seq }, Some(e)) if epoch <= e.0 => {
                    std::fs::rename(&path, dir.join(committed_name(epoch, seq, ext)))?;
                    next_seq = next_seq.max(seq + 1);
                    true
                }
                _ => false,
            };
            if !keep {
                std::fs::remove_file(&path)?;
            }
        }
        sync_dir(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            ext,
            next_seq,
            current: None,
            pending: Vec::new(),
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether a part is open; the writer starts a new encoder (and header) for a new part.
    pub(crate) fn has_current(&self) -> bool {
        self.current.is_some()
    }

    /// Whether closed parts wait for their checkpoint to be committed.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The pending parts, with their directory.
    pub(crate) fn pending_paths(&self) -> Vec<String> {
        self.pending
            .iter()
            .map(|(e, s)| {
                self.dir
                    .join(pending_name(*e, *s, self.ext))
                    .display()
                    .to_string()
            })
            .collect()
    }

    /// Appends to the in-progress part, opening one if needed.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.current.is_none() {
            let seq = self.next_seq;
            self.next_seq += 1;
            let f = File::create(self.dir.join(in_progress_name(seq, self.ext)))?;
            self.current = Some((seq, f));
        }
        let (_, f) = self.current.as_mut().expect("opened just above");
        f.write_all(bytes)
    }

    /// A barrier of `epoch`: the in-progress part (if any) is made durable and becomes
    /// pending for `epoch`. Returns the pending parts' names (for the manifest).
    pub(crate) fn close_for(&mut self, epoch: Epoch) -> std::io::Result<Vec<String>> {
        if let Some((seq, f)) = self.current.take() {
            f.sync_all()?;
            drop(f);
            std::fs::rename(
                self.dir.join(in_progress_name(seq, self.ext)),
                self.dir.join(pending_name(epoch.0, seq, self.ext)),
            )?;
            self.pending.push((epoch.0, seq));
        }
        Ok(self
            .pending
            .iter()
            .map(|(e, s)| pending_name(*e, *s, self.ext))
            .collect())
    }

    /// Checkpoint `epoch` is complete: commits the parts pending for it and earlier ones.
    pub(crate) fn commit(&mut self, epoch: Epoch) -> std::io::Result<()> {
        let (done, later): (Vec<PartId>, Vec<PartId>) =
            self.pending.iter().partition(|(e, _)| *e <= epoch.0);
        for (e, s) in &done {
            std::fs::rename(
                self.dir.join(pending_name(*e, *s, self.ext)),
                self.dir.join(committed_name(*e, *s, self.ext)),
            )?;
        }
        self.pending = later;
        if !done.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

fn committed_name(epoch: u64, seq: u64, ext: &str) -> String {
    format!("part-{epoch:08}-{seq:06}.{ext}")
}

fn pending_name(epoch: u64, seq: u64, ext: &str) -> String {
    format!(".part-{epoch:08}-{seq:06}.{ext}.pending")
}

fn in_progress_name(seq: u64, ext: &str) -> String {
    format!(".part-{seq:06}.{ext}.inprogress")
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("lists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn parts_become_visible_only_when_their_checkpoint_completes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("out");
        let mut p = Parts::open(&dir, "csv", None).expect("opens");
        p.write(b"a\n").expect("writes");
        assert_eq!(names(&dir), vec![".part-000000.csv.inprogress"]);
        p.close_for(Epoch(1)).expect("closes");
        assert_eq!(names(&dir), vec![".part-00000001-000000.csv.pending"]);
        p.write(b"b\n").expect("writes");
        p.commit(Epoch(1)).expect("commits");
        assert_eq!(
            names(&dir),
            vec![".part-000001.csv.inprogress", "part-00000001-000000.csv"]
        );
    }

    #[test]
    fn restore_commits_what_its_checkpoint_covers_and_drops_the_rest() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("out");
        let mut p = Parts::open(&dir, "csv", None).expect("opens");
        for (epoch, row) in [(1, b"a\n"), (2, b"b\n"), (3, b"c\n")] {
            p.write(row).expect("writes");
            p.close_for(Epoch(epoch)).expect("closes");
        }
        p.commit(Epoch(1)).expect("commits 1");
        p.write(b"d\n").expect("in progress");
        // The process dies: 1 committed; 2 complete but not committed; 3 not complete.
        drop(p);
        let mut p = Parts::open(&dir, "csv", Some(Epoch(2))).expect("restores");
        assert_eq!(
            names(&dir),
            vec!["part-00000001-000000.csv", "part-00000002-000001.csv"]
        );
        p.write(b"c\n").expect("writes again");
        p.close_for(Epoch(3)).expect("closes");
        p.commit(Epoch(3)).expect("commits");
        assert_eq!(
            names(&dir).last().map(String::as_str),
            Some("part-00000003-000002.csv")
        );
        // Falling back to an older checkpoint removes parts committed after it.
        drop(p);
        Parts::open(&dir, "csv", Some(Epoch(1))).expect("falls back");
        assert_eq!(names(&dir), vec!["part-00000001-000000.csv"]);
        // A fresh start removes every part.
        Parts::open(&dir, "csv", None).expect("starts over");
        assert!(names(&dir).is_empty());
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_an_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("out.csv");
        std::fs::write(&file, "x").expect("writes");
        let err = Parts::open(&file, "csv", None).expect_err("a file");
        assert!(err.to_string().contains("is a file"));
    }
}
