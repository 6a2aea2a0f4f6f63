//! The dead-letter output: where malformed input records go, so that none is lost silently.
//!
//! One JSON object per line: `{"operator":…,"source":…,"line":…,"reason":…,"record":…}`.
//! The file is created (or truncated) on the first rejected record of a run; a run without
//! any leaves an existing file alone.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One rejected record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedRecord {
    /// The input file (or `-` for stdin).
    pub source: String,
    /// 1-based line where the record starts.
    pub line: u64,
    /// Why it was rejected.
    pub reason: String,
    /// The record's text, without its line terminator.
    pub record: String,
}

/// Where rejected records go.
#[derive(Debug)]
pub enum DeadLetterTarget {
    /// A JSON Lines file, created on the first record.
    File(PathBuf),
    /// Standard error (when there is no output file to put a `.rejected` file beside).
    Stderr,
}

/// The dead-letter output of a query, shared by its sources.
#[derive(Debug)]
pub struct DeadLetter {
    target: DeadLetterTarget,
    writer: Mutex<Option<BufWriter<File>>>,
    count: AtomicU64,
    /// Append to an existing file instead of creating it.
    append: bool,
}

impl DeadLetter {
    /// A dead-letter output writing to `target`; the file is replaced by the first reject.
    pub fn new(target: DeadLetterTarget) -> Self {
        Self {
            target,
            writer: Mutex::new(None),
            count: AtomicU64::new(0),
            append: false,
        }
    }

    /// Whether the file could be created (its directory exists and is writable), checked
    /// without touching it, so that a query can refuse to start.
    pub fn check_writable(&self) -> std::io::Result<()> {
        match &self.target {
            DeadLetterTarget::File(p) => crate::fs_check::check_creatable(p),
            DeadLetterTarget::Stderr => Ok(()),
        }
    }

    /// A dead-letter output for a run that resumes from a checkpoint: rejects are appended to
    /// what earlier runs wrote. (Records rejected between the checkpoint and a failure are
    /// read again and reported again: the dead-letter file is at-least-once.)
    pub fn resume(target: DeadLetterTarget) -> Self {
        Self {
            target,
            writer: Mutex::new(None),
            count: AtomicU64::new(0),
            append: true,
        }
    }

    /// Records a rejected record of operator `operator`.
    pub fn reject(&self, operator: &str, r: &RejectedRecord) -> std::io::Result<()> {
        self.count.fetch_add(1, Ordering::Relaxed);
        let line = serde_json::json!({
            "operator": operator,
            "source": r.source,
            "line": r.line,
            "reason": r.reason,
            "record": r.record,
        })
        .to_string();
        match &self.target {
            DeadLetterTarget::Stderr => {
                eprintln!("rejected: {line}");
                Ok(())
            }
            DeadLetterTarget::File(path) => {
                let mut guard = self
                    .writer
                    .lock()
                    .map_err(|_| std::io::Error::other("dead-letter writer poisoned"))?;
                if guard.is_none() {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(self.append)
                        .write(true)
                        .truncate(!self.append)
                        .open(path)?;
                    *guard = Some(BufWriter::new(file));
                }
                let w = guard.as_mut().expect("created just above");
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")
            }
        }
    }

    /// How many records were rejected so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The file, if rejects go to one.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            DeadLetterTarget::File(p) => Some(p),
            DeadLetterTarget::Stderr => None,
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&self) -> std::io::Result<()> {
        let mut guard = self
            .writer
            .lock()
            .map_err(|_| std::io::Error::other("dead-letter writer poisoned"))?;
        match guard.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_by_the_first_reject_and_holds_json_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.csv.rejected");
        std::fs::write(&path, "stale\n").expect("write");
        let dl = DeadLetter::new(DeadLetterTarget::File(path.clone()));
        dl.check_writable().expect("writable");
        assert!(path.exists(), "nothing is touched before a reject");
        assert!(
            DeadLetter::new(DeadLetterTarget::File(dir.path().join("no/such/dir/x")))
                .check_writable()
                .is_err()
        );
        dl.reject(
            "source",
            &RejectedRecord {
                source: "in.csv".into(),
                line: 7,
                reason: "column `value`: `x` is not an int".into(),
                record: "1,2,x".into(),
            },
        )
        .expect("writes");
        dl.flush().expect("flushes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let v: serde_json::Value = serde_json::from_str(text.trim()).expect("json");
        assert_eq!(v["line"], 7);
        assert_eq!(v["record"], "1,2,x");
        assert_eq!(dl.count(), 1);
    }
}
