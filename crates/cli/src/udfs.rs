//! A query's user-defined functions: the WebAssembly modules of its `CREATE FUNCTION`s and
//! of `--udf`, loaded, checked against their declarations, and its inline JavaScript
//! functions, aggregates (`CREATE AGGREGATE`) and operators (`RETURNS TABLE`), compiled; all
//! registered so that the query's expressions, aggregates and `user_operator`s can call them
//! (`anduin_expr::FunctionProvider::register_scalar`, `register_aggregate`,
//! `register_operator`).
//!
//! Registration is for the whole process (`anduin run` runs one query, and so does each
//! executor of a cluster), or, in a cluster's coordinator, which loads several queries, for
//! the query it loads (`anduin_expr::FunctionProvider::scoped`). A cluster's modules come
//! with the submission (`cluster::modules`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anduin_expr::FunctionProvider;
use anduin_spec::{FunctionDef, Spec};
use anduin_types::{Diagnostic, Diagnostics};
use anduin_udf::{
    Declaration, JsAggregate, JsFunction, JsOperator, Limits, OperatorDeclaration, SqlType,
    WasmAggregate, WasmFunction, WasmModule,
};
use anyhow::Result;

/// Loads the modules of `spec`'s `CREATE FUNCTION`s and `udf` blocks (paths relative to the
/// folder of `query`, the query file) and registers each function; every problem is a
/// diagnostic at the statement (a module that cannot be loaded: at its path).
pub fn register_declared(query: &Path, spec: &Spec) -> Result<(), Diagnostics> {
    let base = query.parent().unwrap_or(Path::new(""));
    let mut modules: HashMap<PathBuf, WasmModule> = HashMap::new();
    let mut diags = Diagnostics::default();
    for f in &spec.functions {
        if let Err(d) = register_one(base, f, &mut modules) {
            diags.push(d);
        }
    }
    // A module named by several blocks is loaded once (`a.wat` and `./a.wat` are one).
    let mut loaded: Vec<PathBuf> = Vec::new();
    for m in &spec.modules {
        let path: PathBuf = base.join(m.path.as_str()).components().collect();
        if loaded.contains(&path) {
            continue;
        }
        if let Err(e) = register_module(&path) {
            diags.push(Diagnostic::error(m.path.pos(), format!("{e:#}")));
        }
        loaded.push(path);
    }
    if diags.0.is_empty() {
        Ok(())
    } else {
        Err(diags)
    }
}

/// The code a query runs beside its text, for the lineage digest: the bytes of each `--udf`
/// module (`udfs`), then [`code_of`] the query `query` (its functions and modules).
pub fn lineage_code(query: &Path, udfs: &[PathBuf], spec: &Spec) -> Result<Vec<Vec<u8>>> {
    let mut code = udfs
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display())))
        .collect::<Result<Vec<_>>>()?;
    code.extend(code_of(query, spec));
    Ok(code)
}

/// The code `spec`'s functions run, for the lineage digest (a function edited between two
/// runs makes other rows from the same text): each function's text (name, types, language
/// and body: an inline JavaScript body, or a module's path) and the bytes of each module a
/// `CREATE FUNCTION` or a `udf` block loads, in the query's order (paths relative to the folder
/// of `query`). A module that cannot be read adds its path (loading it fails the run anyway).
pub fn code_of(query: &Path, spec: &Spec) -> Vec<Vec<u8>> {
    let base = query.parent().unwrap_or(Path::new(""));
    let module = |path: &str| {
        let path: PathBuf = base.join(path).components().collect();
        std::fs::read(&path).unwrap_or_else(|_| path.to_string_lossy().as_bytes().to_vec())
    };
    let mut code = Vec::new();
    for f in &spec.functions {
        // The text without positions: a line added above it changes no row.
        let text = |t: &anduin_spec::Text| t.as_str().to_string();
        let names: Vec<String> = f.arg_names.iter().flatten().map(text).collect();
        let table: Vec<String> = f
            .table
            .iter()
            .map(|(n, t)| format!("{} {}", n.as_str(), t.as_str()))
            .collect();
        let args: Vec<String> = f.args.iter().map(text).collect();
        code.push(
            format!(
                "{}({args:?} {names:?}) {} {table:?} {} {} {}",
                f.name.as_str(),
                f.returns.as_str(),
                f.language.as_str(),
                f.aggregate,
                f.body.as_str()
            )
            .into_bytes(),
        );
        if f.language.as_str() != "javascript" {
            code.push(module(f.body.as_str()));
        }
    }
    for m in &spec.modules {
        code.push(module(m.path.as_str()));
    }
    code
}

fn register_one(
    base: &Path,
    f: &FunctionDef,
    modules: &mut HashMap<PathBuf, WasmModule>,
) -> Result<(), Diagnostic> {
    let types = |t: &anduin_spec::Text| {
        SqlType::parse(t.as_str()).ok_or_else(|| {
            Diagnostic::error(t.pos(), format!("type {} is not supported", t.as_str()))
        })
    };
    if !f.table.is_empty() {
        return register_table_function(base, f, modules);
    }
    let declaration = Declaration {
        name: f.name.as_str().to_string(),
        args: f.args.iter().map(types).collect::<Result<_, _>>()?,
        result: types(&f.returns)?,
    };
    if f.aggregate && f.language.as_str() == "javascript" {
        let aggregate = JsAggregate::new(declaration, f.body.as_str(), limits())
            .map_err(|e| Diagnostic::error(f.body.pos(), e.to_string()))?;
        let aggregate = Arc::new(aggregate);
        return FunctionProvider::get()
            .register_aggregate(Arc::clone(&aggregate).into_aggregate_udf(), aggregate)
            .map_err(|e| Diagnostic::error(f.pos, e.message));
    }
    if f.language.as_str() == "javascript" {
        let names: Vec<String> = f
            .arg_names
            .iter()
            .map(|n| {
                n.as_ref()
                    .map_or_else(String::new, |n| n.as_str().to_string())
            })
            .collect();
        let function = JsFunction::new(declaration, &names, f.body.as_str(), limits())
            .map_err(|e| Diagnostic::error(f.body.pos(), e.to_string()))?;
        return FunctionProvider::get()
            .register_scalar(Arc::new(function).into_scalar_udf())
            .map_err(|e| Diagnostic::error(f.pos, e.message));
    }
    let module = load(base, f, modules)?;
    if f.aggregate {
        let aggregate = module
            .aggregate(declaration, limits())
            .map_err(|e| Diagnostic::error(f.pos, e.to_string()))?;
        return register_aggregate(aggregate).map_err(|e| Diagnostic::error(f.pos, e));
    }
    let function = module
        .function(declaration, limits())
        .map_err(|e| Diagnostic::error(f.pos, e.to_string()))?;
    register(function).map_err(|e| Diagnostic::error(f.pos, e))
}

/// A `CREATE FUNCTION … RETURNS TABLE (…)`: an operator with keyed state, in JavaScript or
/// in a WebAssembly module, registered for the query's `user_operator`s.
fn register_table_function(
    base: &Path,
    f: &FunctionDef,
    modules: &mut HashMap<PathBuf, WasmModule>,
) -> Result<(), Diagnostic> {
    let column = |(n, t): (&anduin_spec::Text, &anduin_spec::Text)| {
        SqlType::parse(t.as_str())
            .map(|ty| (n.as_str().to_string(), ty))
            .ok_or_else(|| {
                Diagnostic::error(t.pos(), format!("type {} is not supported", t.as_str()))
            })
    };
    let args = f
        .arg_names
        .iter()
        .zip(&f.args)
        .map(|(n, t)| {
            let n = n
                .as_ref()
                .ok_or_else(|| Diagnostic::error(t.pos(), "an operator's argument needs a name"))?;
            column((n, t))
        })
        .collect::<Result<_, _>>()?;
    let declaration = OperatorDeclaration {
        name: f.name.as_str().to_string(),
        args,
        output: f
            .table
            .iter()
            .map(|(n, t)| column((n, t)))
            .collect::<Result<_, _>>()?,
    };
    let operator: Arc<dyn anduin_expr::UserOperator> = if f.language.as_str() == "javascript" {
        Arc::new(
            JsOperator::new(declaration, f.body.as_str(), limits())
                .map_err(|e| Diagnostic::error(f.body.pos(), e.to_string()))?,
        )
    } else {
        let module = load(base, f, modules)?;
        Arc::new(
            module
                .operator(declaration, limits())
                .map_err(|e| Diagnostic::error(f.pos, e.to_string()))?,
        )
    };
    FunctionProvider::get()
        .register_operator(operator)
        .map_err(|e| Diagnostic::error(f.pos, e.message))
}

/// The module of `f` (its path relative to `base`), loaded once for all the functions that
/// name it.
fn load(
    base: &Path,
    f: &FunctionDef,
    modules: &mut HashMap<PathBuf, WasmModule>,
) -> Result<WasmModule, Diagnostic> {
    let path = base.join(f.body.as_str());
    if let Some(m) = modules.get(&path) {
        return Ok(m.clone());
    }
    let m = WasmModule::load(&path).map_err(|e| Diagnostic::error(f.body.pos(), e.to_string()))?;
    modules.insert(path, m.clone());
    Ok(m)
}

/// The limits of the query's functions: the defaults. `ANDUIN_UDF_BACKSTOP` (a duration;
/// undocumented, for tests, as `--fail-after` is) replaces the wall-clock backstop, so that a
/// test of what happens before it fires (a stop signal) never races it on a loaded machine.
fn limits() -> Limits {
    let backstop = std::env::var("ANDUIN_UDF_BACKSTOP")
        .ok()
        .and_then(|t| anduin_types::parse_duration_ms(&t))
        .map_or(Limits::DEFAULT_BACKSTOP, std::time::Duration::from_millis);
    Limits {
        backstop,
        ..Limits::default()
    }
}

/// Loads each module of `--udf` and registers the functions it declares in its
/// `anduin:functions` section and the aggregates of its `anduin:aggregates` section.
pub fn register_modules(paths: &[PathBuf]) -> Result<()> {
    paths.iter().try_for_each(|p| register_module(p))
}

/// Loads the module at `path` and registers the functions and aggregates it declares.
fn register_module(path: &Path) -> Result<()> {
    let module = WasmModule::load(path)?;
    let functions = module.declared_functions(limits())?;
    let aggregates = module.declared_aggregates(limits())?;
    let operators = module.declared_operators(limits())?;
    let names = functions
        .iter()
        .map(|f| f.declaration().name.clone())
        .chain(aggregates.iter().map(|a| a.declaration().name.clone()))
        .chain(operators.iter().map(|o| o.declaration().name.clone()));
    for name in names {
        if let Some(what) = anduin_spec::reserved_function(&name) {
            anyhow::bail!(
                "module `{}` declares function `{name}`, a reserved name: it is {what}, which the query reads as its own wherever it is called; give yours another name",
                path.display()
            );
        }
    }
    for f in functions {
        register(f).map_err(|e| anyhow::anyhow!("module `{}`: {e}", path.display()))?;
    }
    for a in aggregates {
        register_aggregate(a).map_err(|e| anyhow::anyhow!("module `{}`: {e}", path.display()))?;
    }
    for o in operators {
        FunctionProvider::get()
            .register_operator(Arc::new(o))
            .map_err(|e| anyhow::anyhow!("module `{}`: {}", path.display(), e.message))?;
    }
    Ok(())
}

fn register_aggregate(a: WasmAggregate) -> Result<(), String> {
    let a = Arc::new(a);
    FunctionProvider::get()
        .register_aggregate(Arc::clone(&a).into_aggregate_udf(), a)
        .map_err(|e| e.message)
}

fn register(f: WasmFunction) -> Result<(), String> {
    FunctionProvider::get()
        .register_scalar(Arc::new(f).into_scalar_udf())
        .map_err(|e| e.message)
}
