//! The WebAssembly modules of a submitted query. `anduin submit` reads them (the modules its
//! `CREATE FUNCTION`s and `CREATE AGGREGATE`s name, relative to the query file's folder, and
//! its `--udf` modules) and sends them with the query; the coordinator keeps them in its
//! catalog, and it and each worker write them beside the query file before loading it, so
//! that every process loads the same modules whatever files it can see (as Flink ships a
//! job's jar). A module's path must stay inside the query file's folder: a path that climbs
//! out of it (or an absolute one) is refused at submit, and again wherever it is written.

use std::path::{Component, Path, PathBuf};

use anduin_coordinator::catalog::ModuleFile;
use anyhow::{bail, Context, Result};

/// Where `--udf` modules go, under the folder of the query file.
const UDF_DIR: &str = "udf-modules";

/// The most bytes of modules a submission carries (its frame holds them as JSON).
const MAX_BYTES: usize = 8 << 20;

/// Reads the modules of the query `query` (its text `source`) and of the `--udf` flags in
/// `args`, whose paths are rewritten to where the modules are sent under.
pub fn collect(query: &Path, source: &str, args: &mut Vec<String>) -> Result<Vec<ModuleFile>> {
    let mut modules = Vec::new();
    for (udf, value) in udf_values(args).into_iter().enumerate() {
        let read =
            std::fs::read(&*value).with_context(|| format!("cannot read --udf `{value}`"))?;
        let name = Path::new(value.as_str())
            .file_name()
            .map_or_else(|| "module".into(), |n| n.to_string_lossy().into_owned());
        let path = format!("{UDF_DIR}/{udf}-{name}");
        *value = path.clone();
        modules.push(ModuleFile { path, bytes: read });
    }
    if query.extension().is_some_and(|e| e == "sql") {
        let base = query.parent().unwrap_or(Path::new(""));
        // A query that does not parse is the coordinator's to refuse, with its positions.
        let declared = anduin_spec::parse_sql(source)
            .map(|spec| spec.functions)
            .unwrap_or_default();
        for f in declared.iter().filter(|f| f.language.as_str() == "wasm") {
            let path = f.body.as_str().to_string();
            if modules.iter().any(|m: &ModuleFile| m.path == path) {
                continue;
            }
            inside(&path).with_context(|| {
                format!("function `{}`: its module cannot be sent", f.name.as_str())
            })?;
            let file = base.join(&path);
            let bytes = std::fs::read(&file).with_context(|| {
                format!(
                    "function `{}`: cannot read its module `{}`",
                    f.name.as_str(),
                    file.display()
                )
            })?;
            modules.push(ModuleFile { path, bytes });
        }
    }
    let total: usize = modules.iter().map(|m| m.bytes.len()).sum();
    if total > MAX_BYTES {
        bail!(
            "the query's modules hold {total} bytes; a submission carries at most {MAX_BYTES}: make them smaller (strip their debug sections) or run the query with `anduin run`"
        );
    }
    Ok(modules)
}

/// Writes `modules` under `dir` (the folder of the query file) and returns `args` with each
/// `--udf` path made the written module's.
pub fn materialize(dir: &Path, modules: &[ModuleFile], args: &[String]) -> Result<Vec<String>> {
    for m in modules {
        let file = dir.join(inside(&m.path)?);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(&file, &m.bytes)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
    }
    let mut args = args.to_vec();
    for value in udf_values(&mut args) {
        if !modules.iter().any(|m| m.path == *value) {
            bail!("--udf `{value}` was not sent with the query (submit it again with this anduin's `anduin submit`)");
        }
        *value = dir.join(&*value).display().to_string();
    }
    Ok(args)
}

/// The values of the `--udf` flags in `args`, to rewrite (`--udf=PATH` is split into
/// `--udf PATH` first).
fn udf_values(args: &mut Vec<String>) -> Vec<&mut String> {
    *args = std::mem::take(args)
        .into_iter()
        .flat_map(|a| match a.strip_prefix("--udf=") {
            Some(path) => vec!["--udf".to_string(), path.to_string()],
            None => vec![a],
        })
        .collect();
    let mut out = Vec::new();
    let mut next_is_value = false;
    for a in args.iter_mut() {
        if next_is_value {
            next_is_value = false;
            out.push(a);
        } else if a == "--udf" {
            next_is_value = true;
        }
    }
    out
}

/// `path` as a path inside the query file's folder: relative, no `..`, not empty.
fn inside(path: &str) -> Result<PathBuf> {
    let p = Path::new(path);
    let ok = !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if !ok {
        bail!(
            "module path `{path}` is not inside the query file's folder: a query sent to a cluster names its modules by relative paths without `..`"
        );
    }
    Ok(p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn udf_flags_are_sent_under_their_own_folder_and_written_where_the_query_is() {
        let client = tempfile::tempdir().expect("tempdir");
        std::fs::write(client.path().join("a.wasm"), b"first").expect("module");
        std::fs::write(client.path().join("b.wat"), b"second").expect("module");
        let query = client.path().join("q.flow");
        let (a, b) = (
            client.path().join("a.wasm").display().to_string(),
            client.path().join("b.wat").display().to_string(),
        );
        let mut sent = args(&["--var", "X=1", "--udf", &a, &format!("--udf={b}")]);
        let modules = collect(&query, "", &mut sent).expect("read");
        assert_eq!(
            sent,
            args(&[
                "--var",
                "X=1",
                "--udf",
                "udf-modules/0-a.wasm",
                "--udf",
                "udf-modules/1-b.wat"
            ])
        );
        let there = tempfile::tempdir().expect("tempdir");
        let run = materialize(there.path(), &modules, &sent).expect("written");
        let written = there.path().join("udf-modules/1-b.wat");
        assert_eq!(std::fs::read(&written).expect("written"), b"second");
        assert_eq!(run[5], written.display().to_string());
    }

    #[test]
    fn a_module_path_leaving_the_folder_is_never_written() {
        let there = tempfile::tempdir().expect("tempdir");
        for path in ["../x.wasm", "/tmp/x.wasm", "a/../../x.wasm", ""] {
            let m = ModuleFile {
                path: path.into(),
                bytes: b"x".to_vec(),
            };
            let e = materialize(there.path(), &[m], &[]).expect_err(path);
            assert!(
                format!("{e:#}").contains("is not inside the query file's folder"),
                "{e:#}"
            );
        }
        // A `--udf` the submission did not send is not loaded from wherever it points.
        let e =
            materialize(there.path(), &[], &args(&["--udf", "/etc/x.wasm"])).expect_err("not sent");
        assert!(
            format!("{e:#}").contains("was not sent with the query"),
            "{e:#}"
        );
    }
}
