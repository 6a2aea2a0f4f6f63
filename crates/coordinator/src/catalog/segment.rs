//! The edit-log segment the catalog appends to.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::CatalogError;
use super::files::{self, segment_path};
use super::format::segment_header;
use crate::ids::Txid;

/// The segment appended to.
#[derive(Debug)]
pub(super) struct Segment {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    /// Its last edit (`None` while it has none).
    pub(super) last: Option<Txid>,
}

/// Creates the segment whose first edit will be `first`: its header written and fsynced, its
/// name made durable.
pub(super) fn create_segment(dir: &Path, first: Txid) -> Result<Segment, CatalogError> {
    let path = segment_path(dir, first);
    let header = segment_header(first);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| CatalogError::io("create", &path, e))?;
    file.write_all(&header)
        .and_then(|()| file.sync_all())
        .map_err(|e| CatalogError::io("write", &path, e))?;
    files::sync_dir(dir)?;
    Ok(Segment {
        path,
        file,
        len: header.len() as u64,
        last: None,
    })
}
