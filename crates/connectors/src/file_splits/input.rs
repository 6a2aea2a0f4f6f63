//! The bytes of one instance's splits, one split after the other: each split opens at its
//! first record boundary (found by [`super::boundary`]) and ends before the first boundary
//! at or after its end. A file whose size is not the planned one has changed, and is refused
//! with its name; so is one that ends early or grows while it is read.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::boundary::{self, Boundary, Dialect, Step};
use super::Split;

/// How much is read at a time.
const CHUNK: usize = 1 << 20;

/// The size of a file whose size is not known (a named pipe): it is read to its end, whole.
pub(crate) const UNSIZED: u64 = u64::MAX;

/// Why the splits could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SplitError {
    /// Reading the file failed.
    #[error("reading `{path}`: {cause}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        cause: std::io::Error,
    },
    /// The file is not as it was when its splits were planned (or checkpointed).
    #[error("`{path}` {what}")]
    Changed {
        /// The file.
        path: String,
        /// What changed.
        what: String,
    },
}

/// What the next read produced.
pub(crate) enum Next<'a> {
    /// A split starts: the decoder starts `path` and stands at `first` (after reading the
    /// file's header, when `first` is not at the file's start).
    Start {
        /// The file.
        path: String,
        /// Its first record.
        first: Boundary,
    },
    /// The next bytes of the split.
    Data(&'a [u8]),
    /// The split has ended: it is read.
    End,
    /// Nothing arrived before the deadline (a named pipe whose writer is quiet).
    Idle,
    /// Every split has been read.
    Done,
}

/// A split being read.
struct Open {
    file: File,
    /// The offset of the next byte.
    pos: u64,
    /// Where the split ends ([`UNSIZED`]: at the end of the file); while `ending` looks for
    /// it, the end of the file.
    stop: u64,
    /// The split ends inside the file, before a boundary not found yet: a scanner fed the
    /// split's bytes as they are read (up to its target, the split's `end`), instead of a
    /// read of them all before the first (see [`Ending`]).
    ending: Option<Ending>,
    /// A file of unknown size (a named pipe) is read on a thread of its own, so that a reader
    /// waiting for its writer still takes barriers, changes and stops meanwhile: its chunks.
    piped: Option<Receiver<std::io::Result<Vec<u8>>>>,
}

/// The search for where a split ends, done while the split is read: the bytes before its
/// `end` are the split's whatever the boundary, so they are read (and fed to the scanner)
/// at once; at `end` the scanner reads on to the boundary, usually a few bytes further.
/// Reading a split does not wait for a scan of it first (a second pass over half the file
/// at parallelism 2, issue 19).
struct Ending {
    scanner: boundary::Scanner,
    /// The split's `end`: the boundary is the first at or after it.
    target: u64,
}

/// The splits of one instance, read in order.
pub(crate) struct SplitInput {
    dialect: Dialect,
    /// The splits not read to their end; the first is being read when `open` is set.
    splits: VecDeque<Split>,
    open: Option<Open>,
    buf: Vec<u8>,
}

impl SplitInput {
    /// Reads `splits`, whose records end as `dialect` says.
    pub(crate) fn new(dialect: Dialect, splits: Vec<Split>) -> Self {
        Self {
            dialect,
            splits: splits.into(),
            open: None,
            buf: vec![0; CHUNK],
        }
    }

    /// The splits left (from where they are: `consumed` is the first byte of the split being
    /// read that no record emitted so far covers).
    pub(crate) fn position(&self, consumed: Option<u64>) -> Vec<Split> {
        let mut left: Vec<Split> = self.splits.iter().cloned().collect();
        if let (Some(_), Some(at), Some(first)) = (&self.open, consumed, left.first_mut()) {
            first.resume_at(at);
        }
        left
    }

    /// Reads from `splits` instead (a restore); nothing may be open.
    pub(crate) fn replace(&mut self, splits: Vec<Split>) {
        self.splits = splits.into();
        self.open = None;
    }

    /// The next bytes, at most `max` of them, waiting at most until `deadline` for a named
    /// pipe's writer.
    pub(crate) fn next_at_most(
        &mut self,
        max: usize,
        deadline: Instant,
    ) -> Result<Next<'_>, SplitError> {
        loop {
            let Some(split) = self.splits.front() else {
                return Ok(Next::Done);
            };
            let path = split.path.clone();
            let io = |cause| SplitError::Io {
                path: path.clone(),
                cause,
            };
            let Some(open) = self.open.as_mut() else {
                match open_split(split, self.dialect).map_err(|e| e.or_io(&path))? {
                    Some((open, first)) => {
                        self.open = Some(open);
                        return Ok(Next::Start { path, first });
                    }
                    None => {
                        // Nothing starts in it.
                        self.splits.pop_front();
                        continue;
                    }
                }
            };
            if open.ending.as_ref().is_some_and(|e| open.pos >= e.target) {
                // At the split's `end`: the scanner reads on to the boundary.
                if let Some(e) = open.ending.take() {
                    open.stop = boundary::scan_on(&mut open.file, e.scanner)
                        .map_err(io)?
                        .offset;
                    open.file.seek(SeekFrom::Start(open.pos)).map_err(io)?;
                }
            }
            if open.pos >= open.stop {
                let size = split.size;
                if open.stop == size {
                    let now = open.file.metadata().map_err(io)?.len();
                    if now != size {
                        return Err(changed(
                            &path,
                            format!("changed size while it was read ({size} bytes when planned, {now} now)"),
                        ));
                    }
                }
                self.open = None;
                self.splits.pop_front();
                return Ok(Next::End);
            }
            if let Some(rx) = open.piped.as_ref() {
                let wait = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(Ok(bytes)) => {
                        let n = bytes.len();
                        if self.buf.len() < n {
                            self.buf.resize(n, 0);
                        }
                        let into = self.buf.get_mut(..n).unwrap_or_default();
                        into.copy_from_slice(&bytes);
                        open.pos += n as u64;
                        return Ok(Next::Data(self.buf.get(..n).unwrap_or_default()));
                    }
                    Ok(Err(cause)) => return Err(io(cause)),
                    Err(RecvTimeoutError::Timeout) => return Ok(Next::Idle),
                    Err(RecvTimeoutError::Disconnected) => {
                        open.stop = open.pos;
                        continue;
                    }
                }
            }
            // While the end is looked for, reads stop at the split's `end`.
            let limit = open.ending.as_ref().map_or(open.stop, |e| e.target);
            let want = usize::try_from(limit - open.pos)
                .unwrap_or(usize::MAX)
                .min(max.max(1))
                .min(self.buf.len());
            let n = read_some(&mut open.file, self.buf.get_mut(..want).unwrap_or_default())
                .map_err(io)?;
            if let Some(e) = open.ending.as_mut().filter(|_| n > 0) {
                match e.scanner.feed(self.buf.get(..n).unwrap_or_default()) {
                    Step::More => {}
                    Step::Found(b) => {
                        open.stop = b.offset;
                        open.ending = None;
                    }
                    Step::Restart { offset, line } => {
                        // A record too long to keep, cut from a line already read: the
                        // boundary is found from there, as a scan before the read would have
                        // (the bytes read are before `end`, the split's whatever it is).
                        let target = e.target;
                        let mut scan = File::open(&path).map_err(io)?;
                        let from = Boundary { offset, line };
                        open.stop = boundary::find(&mut scan, self.dialect, target, from)
                            .map_err(io)?
                            .offset;
                        open.ending = None;
                    }
                }
            }
            if n == 0 {
                if open.stop == UNSIZED {
                    open.stop = open.pos;
                    continue;
                }
                return Err(changed(
                    &path,
                    format!(
                        "ended at byte {}, before byte {} where its split ends: it changed while it was read",
                        open.pos, open.stop
                    ),
                ));
            }
            open.pos += n as u64;
            return Ok(Next::Data(self.buf.get(..n).unwrap_or_default()));
        }
    }
}

fn changed(path: &str, what: String) -> SplitError {
    SplitError::Changed {
        path: path.to_string(),
        what,
    }
}

/// An I/O error, or a file that changed, while opening a split.
enum OpenError {
    Io(std::io::Error),
    Changed(SplitError),
}

impl OpenError {
    fn or_io(self, path: &str) -> SplitError {
        match self {
            OpenError::Io(cause) => SplitError::Io {
                path: path.to_string(),
                cause,
            },
            OpenError::Changed(e) => e,
        }
    }
}

impl From<std::io::Error> for OpenError {
    fn from(e: std::io::Error) -> Self {
        OpenError::Io(e)
    }
}

/// Opens `split` at its first record and finds where it ends; `None` when no record starts
/// in it.
fn open_split(split: &Split, dialect: Dialect) -> Result<Option<(Open, Boundary)>, OpenError> {
    let mut file = File::open(&split.path)?;
    if split.size == UNSIZED {
        // Read whole, from its start: only an exact position can be resumed, by reading up to it.
        let line = 1 + boundary::count_lines(&mut file, split.from)?;
        let first = Boundary {
            offset: split.from,
            line,
        };
        let reading = file.try_clone()?;
        let open = Open {
            file,
            pos: split.from,
            stop: UNSIZED,
            ending: None,
            piped: Some(crate::input::read_on_a_thread(reading, &split.path)),
        };
        return Ok(Some((open, first)));
    }
    let size = file.metadata()?.len();
    if size != split.size {
        return Err(OpenError::Changed(changed(
            &split.path,
            format!(
                "is {size} bytes, but {} when the query planned its splits: a file must not change while a query reads it (start over with --from-scratch)",
                split.size
            ),
        )));
    }
    let start = data_start(&mut file)?;
    let first = if split.exact {
        file.seek(SeekFrom::Start(0))?;
        Boundary {
            offset: split.from,
            line: 1 + boundary::count_lines(&mut file, split.from)?,
        }
    } else {
        let from_start = Boundary {
            offset: start,
            line: 1,
        };
        // From the last boundary found in the file before it (by this instance or another).
        let target = split.from.max(start);
        super::known::find(&mut file, &split.path, size, dialect, target, from_start)?
    };
    let (stop, ending) = if split.end >= size {
        (size, None)
    } else if split.end > first.offset {
        // Found while the split is read.
        let mut scanner = boundary::Scanner::new(dialect, split.end, first.offset);
        scanner.restart(first.offset, first.line);
        let ending = Ending {
            scanner,
            target: split.end,
        };
        (size, Some(ending))
    } else {
        let stop = boundary::find(&mut file, dialect, split.end, first)?.offset;
        (stop, None)
    };
    if stop <= first.offset && !(split.exact && split.from == 0) {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(first.offset))?;
    let open = Open {
        file,
        pos: first.offset,
        stop,
        ending,
        piped: None,
    };
    Ok(Some((open, first)))
}

/// Where a file's records begin: after its byte-order mark, if it has one.
fn data_start(file: &mut File) -> std::io::Result<u64> {
    let mut head = [0u8; 3];
    file.seek(SeekFrom::Start(0))?;
    let n = read_some(file, &mut head)?;
    Ok(if n == 3 && head == *b"\xef\xbb\xbf" {
        3
    } else {
        0
    })
}

/// Fills `buf` as far as the file allows; 0 means end of file.
fn read_some(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
        match f.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The first `upto` bytes of `path`, in chunks, to `f` until it says stop (reading a
/// file's header before a split that starts later in it).
pub(crate) fn read_prefix(
    path: &str,
    upto: u64,
    mut f: impl FnMut(&[u8]) -> bool,
) -> Result<(), SplitError> {
    let io = |cause| SplitError::Io {
        path: path.to_string(),
        cause,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = upto;
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = read_some(&mut file, buf.get_mut(..want).unwrap_or_default()).map_err(io)?;
        if n == 0 {
            break;
        }
        left -= n as u64;
        if !f(buf.get(..n).unwrap_or_default()) {
            break;
        }
    }
    Ok(())
}
