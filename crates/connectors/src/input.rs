//! Bytes in: the files a reader's `path` names (one file, a glob, or `-` for stdin), read in
//! chunks, one file after the other. The reader reads stdin through it; files, which it
//! splits between its instances, through [`crate::file_splits`].

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError};

/// How much a reader reads at a time.
const CHUNK: usize = 1 << 20;

/// What the next read produced.
pub(crate) enum Chunk<'a> {
    /// A new file starts; its name is for messages and dead letters.
    FileStart(String),
    /// The next bytes of the current file.
    Data(&'a [u8]),
    /// The current file has ended.
    FileEnd,
    /// Nothing arrived before the deadline (stdin only).
    Idle,
    /// Every file has been read.
    Done,
}

/// The files a reader's `path` names: one file, or a glob's matches in name order (a path
/// that exists as written is taken literally, even if it contains `*`, `?` or `[`).
pub fn resolve(path: &str) -> Result<Vec<PathBuf>, String> {
    let literal = PathBuf::from(path);
    if literal.exists() || !path.contains(['*', '?', '[']) {
        if literal.is_dir() {
            return Err(format!(
                "input `{path}` is a directory: name its files, e.g. `{path}/*.csv`"
            ));
        }
        if !literal.exists() {
            return Err(format!("input file `{path}` does not exist"));
        }
        return Ok(vec![literal]);
    }
    let mut v: Vec<PathBuf> = glob::glob(path)
        .map_err(|e| format!("malformed glob pattern `{path}`: {e}"))?
        .filter_map(Result::ok)
        .filter(|p| !p.is_dir())
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(format!("no input file matches `{path}`"));
    }
    Ok(v)
}

/// The files of one reader, read in order.
pub(crate) struct Input {
    kind: Kind,
    buf: Vec<u8>,
}

enum Kind {
    Files {
        files: Vec<PathBuf>,
        /// The index in `files` of the next file to open.
        next: usize,
        current: Option<File>,
    },
    Stdin {
        started: bool,
        chunks: Option<Receiver<std::io::Result<Vec<u8>>>>,
        last: Vec<u8>,
    },
}

impl Input {
    /// Resolves `path`: `-` is stdin; a pattern with `*`, `?` or `[` is a glob (sorted); anything
    /// else is one file. Fails when no file exists, with a message saying what was looked for.
    pub(crate) fn open(path: &str) -> Result<Self, String> {
        if path == "-" {
            return Ok(Self {
                kind: Kind::Stdin {
                    started: false,
                    chunks: None,
                    last: Vec::new(),
                },
                buf: Vec::new(),
            });
        }
        let files = resolve(path)?;
        for f in &files {
            File::open(f).map_err(|e| format!("cannot open input file `{}`: {e}", f.display()))?;
        }
        Ok(Self {
            kind: Kind::Files {
                files,
                next: 0,
                current: None,
            },
            buf: vec![0; CHUNK],
        })
    }

    /// The next chunk, blocking at most until `deadline` (only stdin ever waits); a chunk of a
    /// file holds at most `max` bytes.
    pub(crate) fn next_at_most(
        &mut self,
        deadline: Instant,
        max: usize,
    ) -> std::io::Result<Chunk<'_>> {
        match &mut self.kind {
            Kind::Files {
                files,
                next,
                current,
            } => match current {
                None => match files.get(*next) {
                    None => Ok(Chunk::Done),
                    Some(p) => {
                        *current = Some(File::open(p)?);
                        *next += 1;
                        Ok(Chunk::FileStart(p.display().to_string()))
                    }
                },
                Some(f) => {
                    let limit = max.min(self.buf.len());
                    let n = read_full(f, &mut self.buf[..limit])?;
                    if n == 0 {
                        *current = None;
                        Ok(Chunk::FileEnd)
                    } else {
                        Ok(Chunk::Data(&self.buf[..n]))
                    }
                }
            },
            Kind::Stdin {
                started,
                chunks,
                last,
            } => {
                if !*started {
                    *started = true;
                    *chunks = Some(read_on_a_thread(std::io::stdin(), "stdin"));
                    return Ok(Chunk::FileStart("-".into()));
                }
                let Some(rx) = chunks else {
                    return Ok(Chunk::Done);
                };
                let wait = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(Ok(bytes)) => {
                        *last = bytes;
                        Ok(Chunk::Data(last))
                    }
                    Ok(Err(e)) => Err(e),
                    Err(RecvTimeoutError::Timeout) => Ok(Chunk::Idle),
                    Err(RecvTimeoutError::Disconnected) => {
                        *chunks = None;
                        Ok(Chunk::FileEnd)
                    }
                }
            }
        }
    }
}

/// Fills `buf` as far as the file allows; 0 means end of file.
fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads `source` (stdin, a named pipe: `what`) on a thread of its own, so that a reader
/// waiting for input can still flush what it has, take barriers and notice a stop request.
/// The channel closes at end of input; the thread ends there, or once the channel's receiver
/// is gone and its next read returns.
pub(crate) fn read_on_a_thread<R: Read + Send + 'static>(
    mut source: R,
    what: &str,
) -> Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = crossbeam_channel::bounded(4);
    let failed = tx.clone();
    let spawned = std::thread::Builder::new()
        .name("anduin-read".into())
        .spawn(move || loop {
            let mut buf = vec![0u8; 64 * 1024];
            match source.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        // The reader sees the error instead of an empty stdin.
        let _ = failed.send(Err(std::io::Error::other(format!(
            "cannot start the thread that reads {what}: {e}"
        ))));
    }
    rx
}
