//! The WebAssembly modules of a submitted query. `anduin submit` reads them (the modules its
//! `CREATE FUNCTION`s and `CREATE AGGREGATE`s or its `udf` blocks name, relative to the
//! query file's folder, and its `--udf` modules) and sends them with the query; the
//! coordinator keeps them in its catalog, and it and each worker write them beside the query
//! file before loading it, so that every process loads the same modules whatever files it
//! can see (as Flink ships a job's jar). A module's path must stay inside the query file's
//! folder: a path that climbs out of it (or an absolute one) is refused at submit, and again
//! wherever it is written; the coordinator refuses a query naming a module not sent.

use std::path::{Component, Path, PathBuf};

use anduin_coordinator::catalog::ModuleFile;
use anyhow::{bail, Context, Result};

/// Where `--udf` modules go, under the folder of the query file.
const UDF_DIR: &str = "udf-modules";

/// The most bytes of modules a submission carries (its control frame holds them as base64).
const MAX_BYTES: usize = 8 << 20;

/// Reads the modules of the query `query` (its text `source`) and of the `--udf` flags in
/// `args`, whose paths are rewritten to where the modules are sent under.
pub fn collect(query: &Path, source: &str, args: &mut Vec<String>) -> Result<Vec<ModuleFile>> {
    // Checked here first, so that a bad module is named as the user named it (the
    // coordinator's copy is under its own folder).
    let given: Vec<PathBuf> = udf_values(args)
        .iter()
        .map(|v| PathBuf::from(&**v))
        .collect();
    let scratch = std::sync::Arc::new(anduin_expr::UserFunctions::default());
    anduin_expr::FunctionProvider::scoped(&scratch, || crate::udfs::register_modules(&given))?;
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
    let base = query.parent().unwrap_or(Path::new(""));
    let file_name = query.file_name().map(|n| n.to_string_lossy().into_owned());
    let udfs = modules.len();
    for (what, path) in declared(query, source, &vars_of(args))? {
        // One module named by several declarations is sent once (never one of `--udf`'s
        // for it: those are under a folder a declared path may not name).
        if modules[udfs..].iter().any(|m: &ModuleFile| m.path == path) {
            continue;
        }
        writable(&path, file_name.as_deref())
            .with_context(|| format!("{what}: its module cannot be sent"))?;
        if inside(&path)?.starts_with(UDF_DIR) {
            bail!(
                "{what}: its module `{path}` is in `{UDF_DIR}/`, where `anduin submit` puts the `--udf` modules: give the folder another name"
            );
        }
        let file = base.join(&path);
        let bytes = std::fs::read(&file)
            .with_context(|| format!("{what}: cannot read its module `{}`", file.display()))?;
        modules.push(ModuleFile { path, bytes });
    }
    let total: usize = modules.iter().map(|m| m.bytes.len()).sum();
    if total > MAX_BYTES {
        bail!(
            "the query's modules hold {total} bytes; a submission carries at most {MAX_BYTES}: make them smaller (strip their debug sections) or run the query with `anduin run`"
        );
    }
    Ok(modules)
}

/// The modules the query (read as `anduin run` reads `query`: by its extension) names, each
/// with what names it (for messages): its SQL `CREATE FUNCTION … LANGUAGE wasm`s, its `udf`
/// blocks (`.flow`, or `"udfs"` in JSON), their paths' `${NAME}` replaced by the `--var`
/// values `vars` as the coordinator will (a variable that is not set is refused here, at its
/// place, as `anduin run` refuses it). A query that does not parse names none here: the
/// coordinator refuses it, with its positions.
fn declared(
    query: &Path,
    source: &str,
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, String)>> {
    let Ok(mut spec) = crate::load::parse(query, source) else {
        return Ok(Vec::new());
    };
    if let Err(d) =
        anduin_spec::substitute_module_paths(&mut spec, vars, anduin_spec::Missing::Error)
    {
        bail!("{}", d.render(&query.display().to_string()).trim_end());
    }
    Ok(named(&spec))
}

/// The variables of the `--var NAME=VALUE` (or `--var=NAME=VALUE`) flags in `args`; the
/// last of one name wins, as with `anduin run`.
fn vars_of(args: &[String]) -> std::collections::BTreeMap<String, String> {
    let mut vars = std::collections::BTreeMap::new();
    let mut next_is_value = false;
    for a in args {
        let value = if next_is_value {
            next_is_value = false;
            Some(a.as_str())
        } else if a == "--var" {
            next_is_value = true;
            None
        } else {
            a.strip_prefix("--var=")
        };
        if let Some((k, v)) = value.and_then(|v| crate::load::parse_var(v).ok()) {
            vars.insert(k, v);
        }
    }
    vars
}

/// The modules `spec` names, each with what names it.
fn named(spec: &anduin_spec::Spec) -> Vec<(String, String)> {
    let functions = spec
        .functions
        .iter()
        .filter(|f| f.language.as_str() == "wasm")
        .map(|f| {
            (
                format!("function `{}`", f.name.as_str()),
                f.body.as_str().to_string(),
            )
        });
    let blocks = spec.modules.iter().map(|m| {
        let what = if m.pos.is_known() {
            format!("the `udf` block at {}:{}", m.pos.line, m.pos.col)
        } else {
            "a module of `udfs`".to_string()
        };
        (what, m.path.as_str().to_string())
    });
    functions.chain(blocks).collect()
}

/// Refuses `spec` (as the coordinator loaded it) when it names a module that did not come
/// with it: one written beside an earlier query's file would be loaded instead, silently.
pub fn all_sent(spec: &anduin_spec::Spec, modules: &[ModuleFile]) -> Result<()> {
    let sent: Vec<PathBuf> = modules
        .iter()
        .filter_map(|m| inside(&m.path).ok())
        .collect();
    for (what, path) in named(spec) {
        if !inside(&path).is_ok_and(|p| sent.contains(&p)) {
            bail!(
                "{what}: its module `{path}` was not sent with the query (submit it with this anduin's `anduin submit`, from the folder the query names it from)"
            );
        }
    }
    Ok(())
}

/// Writes `modules` under `dir` (the folder of the query file, named `file_name`) and
/// returns `args` with each `--udf` path made the written module's.
pub fn materialize(
    dir: &Path,
    file_name: &str,
    modules: &[ModuleFile],
    args: &[String],
) -> Result<Vec<String>> {
    for m in modules {
        let file = dir.join(writable(&m.path, Some(file_name))?);
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

/// The files a coordinator and a worker keep beside the query file (see `worker::
/// start_executor`, `worker::FAILURE_FILE`, `driver::prepare`): no module may take their
/// place, nor the query file's.
const KEPT_BESIDE: [&str; 3] = ["deployment.json", "failure.txt", "rules"];

/// [`inside`], and not a file kept beside the query file (`file_name`) or the query file.
fn writable(path: &str, file_name: Option<&str>) -> Result<PathBuf> {
    let p = inside(path)?;
    let top = p.to_string_lossy();
    if KEPT_BESIDE.contains(&top.as_ref()) || file_name == Some(top.as_ref()) {
        bail!(
            "module path `{path}` is the name of a file a cluster keeps beside the query file ({}, and the query file itself): put the module in a folder or give it another name",
            KEPT_BESIDE.join(", ")
        );
    }
    Ok(p)
}

/// `path` as a path inside the query file's folder: relative, no `..`, not empty (`./`
/// dropped).
fn inside(path: &str) -> Result<PathBuf> {
    if path.contains("${") {
        bail!(
            "module path `{path}` holds a variable: a query sent to a cluster names its modules by paths written out"
        );
    }
    let p = Path::new(path);
    let ok = p
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let normal: PathBuf = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    if !ok || normal.as_os_str().is_empty() {
        bail!(
            "module path `{path}` is not inside the query file's folder: a query sent to a cluster names its modules by relative paths without `..`"
        );
    }
    Ok(normal)
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
        let example = |name: &str| {
            std::fs::read(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/udfs/{name}")),
            )
            .expect("an example module")
        };
        std::fs::write(client.path().join("a.wasm"), example("add_one.wat")).expect("module");
        std::fs::write(client.path().join("b.wat"), example("shout.wat")).expect("module");
        // A bad one is named as given, before anything is sent.
        std::fs::write(client.path().join("bad.wat"), b"(module").expect("module");
        let bad = client.path().join("bad.wat").display().to_string();
        let e = collect(
            &client.path().join("q.flow"),
            "",
            &mut args(&["--udf", &bad]),
        )
        .expect_err("not a module");
        assert!(format!("{e:#}").contains(&bad), "{e:#}");
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
        let run = materialize(there.path(), "q.flow", &modules, &sent).expect("written");
        let written = there.path().join("udf-modules/1-b.wat");
        assert_eq!(
            std::fs::read(&written).expect("written"),
            example("shout.wat")
        );
        assert_eq!(run[5], written.display().to_string());
    }

    #[test]
    fn the_most_modules_a_submission_carries_fit_in_one_control_message() {
        let submission = super::super::proto::Submission {
            name: "q".into(),
            file_name: "q.sql".into(),
            given_file: None,
            source: String::new(),
            modules: vec![ModuleFile {
                path: "m.wasm".into(),
                bytes: vec![0xff; MAX_BYTES],
            }],
            args: Vec::new(),
            cwd: PathBuf::new(),
            rules: None,
            resume: false,
        };
        let sent = serde_json::to_vec(&super::super::proto::ToCoordinator::Submit(submission))
            .expect("serialises");
        assert!(
            sent.len() < super::super::proto::MESSAGE_LIMIT,
            "{} bytes",
            sent.len()
        );
    }

    #[test]
    fn a_query_naming_a_module_not_sent_is_refused_whatever_lies_in_the_folder() {
        let spec = anduin_spec::parse_flow("udf path = \"udfs/m.wat\"\n").expect("parses");
        let e = all_sent(&spec, &[]).expect_err("not sent");
        assert!(
            format!("{e:#}")
                .contains("the `udf` block at 1:1: its module `udfs/m.wat` was not sent"),
            "{e:#}"
        );
        let sent = ModuleFile {
            path: "./udfs/m.wat".into(),
            bytes: Vec::new(),
        };
        all_sent(&spec, &[sent]).expect("sent");
    }

    #[test]
    fn a_declared_module_never_takes_a_udf_module_s_place() {
        let client = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(client.path().join("udf-modules")).expect("folder");
        std::fs::write(client.path().join("udf-modules/0-m.wat"), b"declared").expect("module");
        std::fs::write(
            client.path().join("m.wat"),
            std::fs::read(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/udfs/add_one.wat"),
            )
            .expect("an example module"),
        )
        .expect("module");
        let query = client.path().join("q.sql");
        let source =
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udf-modules/0-m.wat';
CREATE TABLE t (x BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out SELECT f(x) AS y FROM t;";
        let flag = client.path().join("m.wat").display().to_string();
        let mut sent = args(&["--udf", &flag]);
        let e = collect(&query, source, &mut sent).expect_err("refused");
        assert!(
            format!("{e:#}")
                .contains("is in `udf-modules/`, where `anduin submit` puts the `--udf` modules"),
            "{e:#}"
        );
    }

    #[test]
    fn a_module_path_leaving_the_folder_is_never_written() {
        let there = tempfile::tempdir().expect("tempdir");
        for path in ["../x.wasm", "/tmp/x.wasm", "a/../../x.wasm", ""] {
            let m = ModuleFile {
                path: path.into(),
                bytes: b"x".to_vec(),
            };
            let e = materialize(there.path(), "q.flow", &[m], &[]).expect_err(path);
            assert!(
                format!("{e:#}").contains("is not inside the query file's folder"),
                "{e:#}"
            );
        }
        // Nor in place of a file kept beside the query file, nor of the query file.
        for path in ["deployment.json", "./failure.txt", "q.flow"] {
            let m = ModuleFile {
                path: path.into(),
                bytes: b"x".to_vec(),
            };
            let e = materialize(there.path(), "q.flow", &[m], &[]).expect_err(path);
            assert!(format!("{e:#}").contains("a cluster keeps beside"), "{e:#}");
        }
        // `./` is the folder itself.
        assert_eq!(
            inside("./udfs/m.wat").expect("inside"),
            Path::new("udfs/m.wat")
        );
        // A `--udf` the submission did not send is not loaded from wherever it points.
        let e = materialize(
            there.path(),
            "q.flow",
            &[],
            &args(&["--udf", "/etc/x.wasm"]),
        )
        .expect_err("not sent");
        assert!(
            format!("{e:#}").contains("was not sent with the query"),
            "{e:#}"
        );
    }
}
