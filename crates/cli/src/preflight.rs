//! Checks made before a query starts that need the file system: no file is both read and
//! written, no two writers write the same file, the dead-letter file is none of them, and the
//! events file (`--events`) is nothing else the run reads or writes, nor inside it.
//! Two paths name the same file when they resolve to the same place (symbolic links, `..`)
//! or, for files that exist, when they are the same file on disk (hard links: the same
//! device and inode). A path is inside a directory when it resolves to a place under it, or
//! one of its existing parent directories is that directory on disk (a bind mount).

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
    // A write that does not exist yet is made as the run starts, before a reader resolves
    // its glob: it would be read as input.
    for op in spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "reader")
    {
        let Some(pattern) = op.param("path").map(|p| p.value.as_text().to_string()) else {
            continue;
        };
        if let Some(w) = uses
            .iter()
            .find(|u| u.writes && matches_glob(&pattern, &u.path))
        {
            bail!(
                "{} `{}`, which the input pattern `{pattern}` of operator \"{}\" matches: the query would read what it writes; choose another path",
                w.who,
                w.path.display(),
                op.name
            );
        }
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
pub(crate) fn absolute(path: &Path) -> PathBuf {
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

/// What a run touches besides its query's readers and writers, for [`check_events_file`].
pub struct RunFiles<'a> {
    /// The query file (`anduin run FILE`).
    pub query_file: &'a Path,
    /// The dead-letter file, unless the dead letters go to stderr.
    pub dead_letter: Option<&'a Path>,
    /// The local directory of `--checkpoint-store` (the store, or its staging and cache).
    pub checkpoint_dir: Option<&'a Path>,
    /// Where the LSM backends keep their run directories, when the query keeps state there.
    pub state_dir: Option<&'a Path>,
}

/// Refuses an events file (`--events`) that is, or is inside, something else of the run:
/// an input (or a file an input's glob would match), an output (a file, or a directory of
/// parts), the dead-letter file, the checkpoint directory, the state directory or the query
/// file; or that is the process's stdout while a writer writes the query's output there.
/// Made before anything is opened, since the events file is emptied when the run opens it.
/// `-` (stderr) is always allowed.
pub fn check_events_file(spec: &Spec, events: &Path, run: &RunFiles) -> Result<()> {
    if events == Path::new("-") {
        return Ok(());
    }
    let place = absolute(events);
    let own = identity(events);
    if own.is_some() && own == identity(Path::new("/dev/null")) {
        // Discarded: nothing to overwrite or mix.
        return Ok(());
    }
    let parents: Vec<(u64, u64)> = place.ancestors().skip(1).filter_map(identity).collect();
    let refuse = |what: &str, other: &Path, inside: bool| -> anyhow::Error {
        let relation = if inside { "is inside" } else { "is" };
        anyhow::anyhow!(
            "the events file `{}` {relation} {what} (`{}`): the events would overwrite it or be overwritten; choose another path for --events",
            events.display(),
            other.display()
        )
    };
    let mut others: Vec<(String, PathBuf)> = Vec::new();
    let mut stdout_writer = None;
    for op in &spec.operators {
        let Some(path) = op.param("path").map(|p| p.value.as_text().to_string()) else {
            continue;
        };
        match (op.kind.as_str(), path.as_str()) {
            ("writer", "-") => stdout_writer = Some(op.name.clone()),
            ("writer", _) => others.push((
                format!("the output of operator \"{}\"", op.name),
                PathBuf::from(path),
            )),
            ("reader", "-") => {}
            ("reader", _) => {
                let what = format!("an input of operator \"{}\"", op.name);
                if matches_glob(&path, events) {
                    bail!(
                        "the events file `{}` matches the input pattern `{path}` of operator \"{}\": the run would read its own events; choose another path for --events",
                        events.display(),
                        op.name
                    );
                }
                for f in resolve_input_paths(&path).unwrap_or_default() {
                    others.push((what.clone(), f));
                }
                others.push((what, PathBuf::from(path)));
            }
            _ => {}
        }
    }
    if let Some(p) = run.dead_letter {
        others.push(("the dead-letter file".into(), p.to_path_buf()));
    }
    if let Some(p) = run.checkpoint_dir {
        others.push(("the checkpoint directory".into(), p.to_path_buf()));
    }
    if let Some(p) = run.state_dir {
        others.push(("the state directory".into(), p.to_path_buf()));
    }
    others.push(("the query file".into(), run.query_file.to_path_buf()));
    for (what, other) in &others {
        let theirs = identity(other);
        if place == absolute(other) || (own.is_some() && own == theirs) {
            return Err(refuse(what, other, false));
        }
        if place.starts_with(absolute(other)) || theirs.is_some_and(|t| parents.contains(&t)) {
            return Err(refuse(what, other, true));
        }
    }
    if events.is_dir() {
        bail!(
            "the events file `{}` is a directory; name a file for --events",
            events.display()
        );
    }
    if let Some(parent) = place.parent().filter(|p| !p.is_dir()) {
        bail!(
            "cannot create the events file `{}`: the directory `{}` does not exist",
            events.display(),
            parent.display()
        );
    }
    if let Some(writer) = stdout_writer {
        if own.is_some() && own == stdout_identity() {
            bail!(
                "the events file `{}` is this run's standard output, where operator \"{writer}\" writes the query's output: the events would be mixed into it; choose another path for --events (`-` writes them to stderr)",
                events.display()
            );
        }
    }
    Ok(())
}

/// Whether `file` is a path the glob `pattern` (a reader's path that does not exist as
/// written) would match, once it exists.
fn matches_glob(pattern: &str, file: &Path) -> bool {
    if Path::new(pattern).exists() || !pattern.contains(['*', '?', '[']) {
        return false;
    }
    let Ok(cwd) = std::env::current_dir() else {
        return false;
    };
    let absolute_pattern = if Path::new(pattern).is_absolute() {
        pattern.to_string()
    } else {
        format!(
            "{}/{pattern}",
            glob::Pattern::escape(&cwd.to_string_lossy())
        )
    };
    let Ok(p) = glob::Pattern::new(&absolute_pattern) else {
        return false;
    };
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..glob::MatchOptions::new()
    };
    [cwd.join(file), absolute(file)]
        .iter()
        .any(|f| p.matches_path_with(f, options))
}

/// The device and inode of this process's stdout, if it can be read.
fn stdout_identity() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    std::fs::File::from(fd)
        .metadata()
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Something a running query reads or writes besides its readers' inputs, for
/// [`check_new_output`].
#[derive(Debug, Clone)]
pub struct InUse {
    /// What it is, for the message (`the output of operator "out"`).
    pub what: String,
    /// Where it is.
    pub path: PathBuf,
    /// Whether a new output must not be inside it either (the checkpoint directory).
    pub directory: bool,
}

/// Refuses `new` as the new output of writer `writer` of the running query `spec` (a change
/// of its `path`) when `anduin run` would refuse it as an output before the query starts:
/// it is one of the query's inputs, or a file one of their globs would match; it is one of
/// `others` (the other outputs, the earlier outputs of this run, the dead-letter and events
/// files, the query file), or inside one that is a directory; or it is this process's
/// stdout (`/dev/stdout`) while an events file is too. `-` (stdout) is checked by the caller.
pub fn check_new_output(spec: &Spec, writer: &str, new: &Path, others: &[InUse]) -> Result<()> {
    let place = absolute(new);
    let own = identity(new);
    let parents: Vec<(u64, u64)> = place.ancestors().skip(1).filter_map(identity).collect();
    let refuse = |what: &str, other: &Path, inside: bool| -> anyhow::Error {
        let relation = if inside { "is inside" } else { "is" };
        anyhow::anyhow!(
            "operator \"{writer}\" cannot write to `{}`: it {relation} {what} (`{}`); a query must not overwrite what it reads or writes elsewhere: choose another path",
            new.display(),
            other.display()
        )
    };
    for op in spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "reader")
    {
        let Some(pattern) = op.param("path").map(|p| p.value.as_text().to_string()) else {
            continue;
        };
        if pattern == "-" {
            continue;
        }
        let what = format!("an input of operator \"{}\"", op.name);
        if matches_glob(&pattern, new) {
            return Err(refuse(&what, Path::new(&pattern), false));
        }
        for f in resolve_input_paths(&pattern).unwrap_or_default() {
            if place == absolute(&f) || (own.is_some() && own == identity(&f)) {
                return Err(refuse(&what, &f, false));
            }
        }
    }
    for other in others {
        let theirs = identity(&other.path);
        if place == absolute(&other.path) || (own.is_some() && own == theirs) {
            return Err(refuse(&other.what, &other.path, false));
        }
        let inside = place.starts_with(absolute(&other.path))
            || theirs.is_some_and(|t| parents.contains(&t));
        if other.directory && inside {
            return Err(refuse(&other.what, &other.path, true));
        }
    }
    Ok(())
}

/// Whether `path` is this process's standard output (`/dev/stdout`, or the file it was
/// redirected to).
pub fn is_stdout(path: &Path) -> bool {
    let own = identity(path);
    own.is_some() && own == stdout_identity()
}
