//! `--checkpoint-store`: parsing it, the local directory a run writes its checkpoint files to
//! (the store itself, or the staging and cache directory of an object store), and opening it
//! with a clear error before anything runs.

use std::path::{Path, PathBuf};

use anduin_checkpoint::{Store, StoreLocation};
use anyhow::{Context, Result};

/// Parses `--checkpoint-store` (clap's value parser): the error names the value and what is
/// supported.
pub fn parse_store(s: &str) -> Result<StoreLocation, String> {
    StoreLocation::parse(s).map_err(|e| e.to_string())
}

/// The local directory of `location`: the directory itself, or where an object store's
/// checkpoints are staged and cached: `cache` when given, else
/// `<state root>/checkpoint-cache/<store>`.
pub fn local_dir(location: &StoreLocation, cache: Option<&Path>, state_root: &Path) -> PathBuf {
    match location {
        StoreLocation::Local(dir) => dir.clone(),
        _ => cache.map(Path::to_path_buf).unwrap_or_else(|| {
            state_root
                .join("checkpoint-cache")
                .join(anduin_types::file_safe(&location.to_string()))
        }),
    }
}

/// Opens the store at `location` (cached in `dir`) and checks that it can be used: an object
/// store is listed, and with `write` written to, so that a wrong URL, bucket or credentials
/// fail now, naming the store.
pub fn open_checked(location: &StoreLocation, dir: &Path, write: bool) -> Result<Store> {
    let store = Store::open_location(location, dir).with_context(|| match location {
        StoreLocation::Local(d) => format!("cannot use the checkpoint directory `{}`", d.display()),
        other => format!("cannot use the checkpoint store {other}"),
    })?;
    store.preflight(write)?;
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_store_is_cached_under_the_state_root_unless_told_where() {
        let s3 = parse_store("s3://bucket/team/q2").expect("parses");
        assert_eq!(
            local_dir(&s3, None, Path::new("/st")),
            PathBuf::from("/st/checkpoint-cache/s3___bucket_team_q2")
        );
        assert_eq!(
            local_dir(&s3, Some(Path::new("c")), Path::new("/st")),
            PathBuf::from("c")
        );
        let dir = parse_store("ckpt").expect("parses");
        assert_eq!(
            local_dir(&dir, None, Path::new("/st")),
            PathBuf::from("ckpt")
        );
        let e = parse_store("gs://b/p").expect_err("refused");
        assert!(e.contains("s3://bucket/prefix"), "{e}");
    }
}
