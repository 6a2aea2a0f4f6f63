//! Writing a checkpoint file: under a temporary name, with a running CRC32, then fsynced and
//! renamed, so that a file under its final name is always whole.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::CheckpointError;
use crate::layout::temp_path;
use crate::manifest::FileEntry;

/// A writer that counts bytes and computes the CRC32 of everything written through it.
#[derive(Debug)]
pub struct CrcWriter<W: Write> {
    inner: W,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> CrcWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    /// Bytes written so far and their CRC32.
    pub fn summary(&self) -> (u64, u32) {
        (self.len, self.hasher.clone().finalize())
    }

    /// The wrapped writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The temporary name of a file not yet committed: removed when dropped, so that a
/// checkpoint file abandoned on any path (a failed write, a failed checkpoint, an error in
/// between) leaves nothing behind. Committing renames the file away first.
#[derive(Debug)]
struct TempName(PathBuf);

impl Drop for TempName {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.0) {
            Ok(()) => {
                tracing::debug!(path = %self.0.display(), "removed an uncommitted checkpoint file")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %self.0.display(), error = %e, "cannot remove an uncommitted checkpoint file")
            }
        }
    }
}

/// A checkpoint file being written under its temporary name. [`PendingFile::writer`] gives
/// the bytes a place to go; [`PendingFile::finish`] flushes and returns the data needed to
/// make it durable later ([`PendingFile::commit`]), possibly on another thread. Dropped
/// before it is committed, it removes its temporary file.
#[derive(Debug)]
pub struct PendingFile {
    path: PathBuf,
    temp: TempName,
    writer: CrcWriter<BufWriter<File>>,
}

impl PendingFile {
    /// Starts writing `path` (its directory must exist) under a temporary name.
    pub fn create(path: &Path) -> Result<Self, CheckpointError> {
        let temp = temp_path(path);
        let file = File::create(&temp).map_err(|e| CheckpointError::io(&temp, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            temp: TempName(temp),
            writer: CrcWriter::new(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Where the bytes go.
    pub fn writer(&mut self) -> &mut CrcWriter<BufWriter<File>> {
        &mut self.writer
    }

    /// Flushes to the OS and returns the file's final name, size and checksum, and the open
    /// file for [`PendingFile::commit`].
    pub fn finish(self) -> Result<FinishedFile, CheckpointError> {
        let (size, crc32) = self.writer.summary();
        let file = self
            .writer
            .into_inner()
            .into_inner()
            .map_err(|e| CheckpointError::io(&self.temp.0, e.into_error()))?;
        Ok(FinishedFile {
            path: self.path,
            temp: self.temp,
            file,
            size,
            crc32,
        })
    }

    /// Flushes, fsyncs and renames in one go.
    pub fn commit(self) -> Result<FileEntry, CheckpointError> {
        self.finish()?.commit()
    }
}

/// A checkpoint file fully written under its temporary name, not yet durable. Dropped before
/// it is committed, it removes its temporary file.
#[derive(Debug)]
pub struct FinishedFile {
    path: PathBuf,
    temp: TempName,
    file: File,
    size: u64,
    crc32: u32,
}

impl FinishedFile {
    /// Fsyncs, renames to the final name, and fsyncs the directory: from then on the file
    /// survives a crash under its final name.
    pub fn commit(self) -> Result<FileEntry, CheckpointError> {
        self.file
            .sync_all()
            .map_err(|e| CheckpointError::io(&self.temp.0, e))?;
        drop(self.file);
        std::fs::rename(&self.temp.0, &self.path)
            .map_err(|e| CheckpointError::io(&self.path, e))?;
        sync_dir(&self.path)?;
        Ok(FileEntry {
            name: self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            size: self.size,
            crc32: self.crc32,
        })
    }

    /// Drops the temporary file (the checkpoint failed); dropping does the same.
    pub fn abandon(self) {}
}

/// Writes `bytes` to `path` atomically (temporary name, fsync, rename, directory fsync).
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<FileEntry, CheckpointError> {
    let mut f = PendingFile::create(path)?;
    f.writer()
        .write_all(bytes)
        .map_err(|e| CheckpointError::io(path, e))?;
    f.commit()
}

/// Fsyncs the directory holding `path`, so that a rename in it is durable.
fn sync_dir(path: &Path) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    match File::open(dir) {
        Ok(d) => d.sync_all().map_err(|e| CheckpointError::io(dir, e)),
        Err(e) => Err(CheckpointError::io(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_appears_under_its_name_only_when_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.bin");
        let mut f = PendingFile::create(&path).expect("creates");
        f.writer().write_all(b"hello").expect("writes");
        assert!(!path.exists());
        let finished = f.finish().expect("finishes");
        assert!(!path.exists());
        let entry = finished.commit().expect("commits");
        assert_eq!(std::fs::read(&path).expect("reads"), b"hello");
        assert_eq!(entry.size, 5);
        assert_eq!(entry.crc32, crc32fast::hash(b"hello"));
        assert!(!dir.path().join(".state.bin.tmp").exists());
    }

    #[test]
    fn a_file_dropped_before_its_commit_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.bin");
        let mut f = PendingFile::create(&path).expect("creates");
        f.writer().write_all(b"half").expect("writes");
        drop(f);
        let finished = PendingFile::create(&path)
            .expect("creates")
            .finish()
            .expect("finishes");
        assert!(dir.path().join(".state.bin.tmp").exists());
        drop(finished);
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("lists").collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
