//! Leadership by a lock file (`--leader-election file:///PATH`): the coordinator that holds
//! the operating system's lock (`flock`) on PATH leads. The lock is released when its
//! holder's process ends, however it ends, and never while it lives — a paused leader keeps
//! it, so no two coordinators ever lead at once. That holds for coordinators on one machine
//! (or on a file system whose locks every machine sees). Terms are counted in the state
//! directory: each leader's is one more than the last.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{Context, Result};

use super::Shared;

/// The file in the state directory that holds the last leader's term.
pub(super) const TERM_FILE: &str = "leader-term";

/// Waits until this coordinator (`me`) holds the lock on `path`; `standing_by` is told once,
/// with what the leader wrote into the lock, if another holds it at first. The open lock and
/// the term.
pub(super) fn lead(
    path: &Path,
    shared: &Shared,
    me: &str,
    standing_by: impl FnOnce(Option<String>),
) -> Result<(File, u64)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open the leader's lock `{}`", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .map(|_| text.trim().to_string())
                .filter(|t| !t.is_empty());
            standing_by(holder);
            file.lock()
                .with_context(|| format!("cannot wait for the lock `{}`", path.display()))?;
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock `{}`", path.display()))
        }
    }
    let write = |file: &mut File| -> std::io::Result<()> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        write!(file, "{me}")?;
        file.sync_all()
    };
    write(&mut file).with_context(|| format!("cannot write the lock `{}`", path.display()))?;
    let term = next_term(&shared.state_dir)?;
    Ok((file, term))
}

/// Records and returns the term after the last leader's (1 for the first).
fn next_term(state_dir: &Path) -> Result<u64> {
    next_term_at_least(state_dir, 0)
}

/// Records and returns the term after the last leader's, or `at_least` if that is larger.
pub(super) fn next_term_at_least(state_dir: &Path, at_least: u64) -> Result<u64> {
    let path = state_dir.join(TERM_FILE);
    let last: u64 = match std::fs::read_to_string(&path) {
        Ok(t) => t.trim().parse().with_context(|| {
            format!(
                "`{}` holds no term: it is the coordinators' own file",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let term = (last + 1).max(at_least);
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).with_context(|| format!("cannot write `{}`", tmp.display()))?;
    write!(f, "{term}")?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(term)
}
