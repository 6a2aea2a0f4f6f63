//! Record boundaries already found in a file, shared by the instances that read it in this
//! process, so that finding where each split starts costs one scan of the file, not one per
//! instance.
//!
//! A CSV file whose fields are quoted has no boundary that a newline alone can tell (a quoted
//! field may hold line breaks): a split's first boundary is found by the scanner
//! ([`super::boundary`]), which follows quotes from a boundary before it. Each instance
//! scanning from the file's start, the work grew with the parallelism times the file's size
//! (instance k of N scanned k/N of it, byte by byte when quotes are everywhere). A scan from
//! any boundary finds what a scan from the start finds: what follows a boundary depends only
//! on where it is (a record cut as too long resumes on a line after its own start, so after
//! the boundary). So the boundaries found are kept per file (its path, size, modification
//! time and dialect), one at least every [`STEP`] bytes along each scan, and a scan starts
//! from the last one kept at or before its target. One step of one scan of a file runs at a
//! time: a byte before the last split's start is scanned once in the process (and at most
//! [`STEP`] bytes more per split), whatever the order in which the instances open their
//! splits, and an instance waits at most a step for another.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use super::boundary::{self, Boundary, Dialect};

/// The longest scan between two kept boundaries.
const STEP: u64 = 1 << 20;

/// The files whose boundaries are kept, at most: beyond, the one kept longest is forgotten
/// (a later split of it scans from its start again, as before any was kept).
const FILES: usize = 64;

/// A file as its boundaries are kept: another size, another modification time or another
/// dialect is another file. (A file rewritten in place to the same size within the same tick
/// of its modification time would be taken for the one before; a reader refuses a file that
/// changes while a query reads it, and this process forgets all but [`FILES`] files.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileKey {
    path: String,
    size: u64,
    modified: Option<SystemTime>,
    dialect: Dialect,
}

/// The boundaries found in one file: offset → line.
type Found = BTreeMap<u64, u64>;

/// Every file's boundaries, and the order in which the files came.
#[derive(Default)]
struct Known {
    files: HashMap<FileKey, Arc<Mutex<Found>>>,
    order: VecDeque<FileKey>,
}

/// The boundaries kept of `key`'s file (none yet if it is new).
fn found_in(key: FileKey) -> Arc<Mutex<Found>> {
    static KNOWN: OnceLock<Mutex<Known>> = OnceLock::new();
    // A panic while the lock was held left nothing half-done: each entry is a true boundary.
    let mut known = KNOWN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(f) = known.files.get(&key) {
        return Arc::clone(f);
    }
    if known.order.len() >= FILES {
        if let Some(oldest) = known.order.pop_front() {
            known.files.remove(&oldest);
        }
    }
    let f = Arc::new(Mutex::new(Found::new()));
    known.files.insert(key.clone(), Arc::clone(&f));
    known.order.push_back(key);
    f
}

/// The first record boundary at or after `target` in `file` (`path`, of `size` bytes), whose
/// records start at `start` (its start, or after a byte-order mark): what
/// [`boundary::find`] from `start` finds, scanned from the last boundary this process found in
/// the file at or before `target`, a step at a time.
pub(crate) fn find(
    file: &mut File,
    path: &str,
    size: u64,
    dialect: Dialect,
    target: u64,
    start: Boundary,
) -> std::io::Result<Boundary> {
    // A target before the records start (in a byte-order mark) is their start.
    let target = target.max(start.offset);
    let key = FileKey {
        path: path.to_string(),
        size,
        modified: file.metadata()?.modified().ok(),
        dialect,
    };
    let found = found_in(key);
    loop {
        // Held for one step: another instance's scan goes on from where this one stops.
        let mut kept = found.lock().unwrap_or_else(PoisonError::into_inner);
        let from = kept
            .range(start.offset..=target)
            .next_back()
            .map_or(start, |(&offset, &line)| Boundary { offset, line });
        let step = from.offset.saturating_add(STEP).min(target);
        let b = boundary::find(file, dialect, step, from)?;
        kept.insert(b.offset, b.line);
        // The first boundary at or after `step`; at or after `target` too, it is the first
        // there (none lies between them).
        if step >= target || b.offset >= target {
            return Ok(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Dialect = Dialect::Csv {
        delimiter: b',',
        max_record: 1 << 20,
    };

    /// Every field quoted, some holding line breaks and doubled quotes: no boundary follows
    /// from a newline alone.
    fn quoted(rows: usize) -> String {
        let mut text = String::new();
        for i in 0..rows {
            match i % 5 {
                0 => text.push_str(&format!("\"{i}\",\"a\nb\",\"x\"\n")),
                1 => text.push_str(&format!("\"{i}\",\"\"\"q\"\"\",\"y\"\r\n")),
                _ => text.push_str(&format!("\"{i}\",\"plain text\",\"z\"\n")),
            }
        }
        text
    }

    fn from_start(text: &str, target: u64) -> Boundary {
        let mut file = std::io::Cursor::new(text.as_bytes().to_vec());
        boundary::find(&mut file, CSV, target, Boundary { offset: 0, line: 1 }).expect("reads")
    }

    #[test]
    fn a_boundary_found_from_those_kept_is_the_one_found_from_the_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("quoted.csv");
        // A few steps long, so that scans start from kept boundaries.
        let text = quoted(150_000);
        let len = text.len() as u64;
        assert!(len > 3 * STEP, "{len}");
        std::fs::write(&path, &text).expect("written");
        let shown = path.display().to_string();
        let start = Boundary { offset: 0, line: 1 };
        // Targets out of order, as instances open their splits, and again.
        let mut targets: Vec<u64> = (1..12).map(|k| len * k / 12).collect();
        targets.extend([len - 1, len, 1, 0, STEP, STEP + 1]);
        targets.reverse();
        for (n, target) in targets.iter().chain(&targets).enumerate() {
            let mut file = File::open(&path).expect("opens");
            let got = find(&mut file, &shown, len, CSV, *target, start).expect("reads");
            assert_eq!(got, from_start(&text, *target), "target {target} (#{n})");
        }
    }
}
