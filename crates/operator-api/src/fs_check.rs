//! Checks that a file could be written, made before a query starts, without touching it.

use std::path::Path;

/// Checks that `path` could be created or replaced, without touching it: it is not a
/// directory, an existing file is writable, and its directory exists and is writable.
pub fn check_creatable(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    if path.exists() {
        // Opening for writing without truncating tests the permission and changes nothing.
        std::fs::OpenOptions::new().write(true).open(path)?;
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("its directory `{}`: {e}", dir.display()))
    })?;
    if !meta.is_dir() || meta.permissions().readonly() {
        return Err(std::io::Error::other(format!(
            "its directory `{}` is not a writable directory",
            dir.display()
        )));
    }
    Ok(())
}
