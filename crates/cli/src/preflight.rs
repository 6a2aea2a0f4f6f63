//! Checks made before a query starts that need the file system: no file is both read and
//! written, no two writers write the same file, and the dead-letter file is none of them.
//! Two paths name the same file when they resolve to the same place (symbolic links, `..`)
//! or, for files that exist, when they are the same file on disk (hard links: the same
//! device and inode).

use std::path::{Path, PathBuf};

use anduin_connectors::resolve_input_paths;
use anduin_spec::Spec;
use anyhow::{bail, Result};

/// A file the query reads or writes, and who does.
struct Use {
    path: PathBuf,
    /// The device and inode of the file, if it exists.
    identity: Option<(u64, u64)>,
    who: String,
    writes: bool,
}

/// Refuses a query whose outputs would overwrite its inputs or each other.
pub fn check_files(spec: &Spec, dead_letter: Option<&Path>) -> Result<()> {
    let mut uses = Vec::new();
    for op in &spec.operators {
        let Some(path) = op.param("path").map(|p| p.value.as_text().to_string()) else {
            continue;
        };
        if path == "-" {
            continue;
        }
        match op.kind.as_str() {
            "reader" => {
                // Missing inputs are reported by the reader itself when it is created.
                for f in resolve_input_paths(&path).unwrap_or_default() {
                    uses.push(Use {
                        identity: identity(&f),
                        path: absolute(&f),
                        who: format!("operator \"{}\" reads", op.name),
                        writes: false,
                    });
                }
            }
            "writer" => uses.push(Use {
                identity: identity(Path::new(&path)),
                path: absolute(Path::new(&path)),
                who: format!("operator \"{}\" writes", op.name),
                writes: true,
            }),
            _ => {}
        }
    }
    if let Some(p) = dead_letter {
        uses.push(Use {
            identity: identity(p),
            path: absolute(p),
            who: "the dead-letter file is".into(),
            writes: true,
        });
    }
    for (i, a) in uses.iter().enumerate() {
        for b in uses.iter().skip(i + 1) {
            let same = a.path == b.path || (a.identity.is_some() && a.identity == b.identity);
            if same && (a.writes || b.writes) {
                bail!(
                    "{} `{}`, and {} `{}` too: a query must not overwrite what it reads or writes elsewhere; choose another path",
                    a.who,
                    a.path.display(),
                    b.who,
                    b.path.display()
                );
            }
        }
    }
    Ok(())
}

/// The device and inode of the file at `path` (following symbolic links), if it exists.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `path` made absolute and resolved as far as it exists (symbolic links included), so that
/// two names of one file compare equal.
fn absolute(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let joined = std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    match (joined.parent(), joined.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|d| d.join(name))
            .unwrap_or(joined.clone()),
        _ => joined,
    }
}
