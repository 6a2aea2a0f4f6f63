//! A query's user-defined functions: the WebAssembly modules of its `CREATE FUNCTION`s and
//! of `--udf`, loaded, checked against their declarations, and its inline JavaScript
//! functions and aggregates (`CREATE AGGREGATE`), compiled; all registered so that the
//! query's expressions and aggregates can call them
//! (`anduin_expr::FunctionProvider::register_scalar`, `register_aggregate`).
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
    Declaration, JsAggregate, JsFunction, Limits, SqlType, WasmAggregate, WasmFunction, WasmModule,
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
    let path = base.join(f.body.as_str());
    let module = match modules.get(&path) {
        Some(m) => m.clone(),
        None => {
            let m = WasmModule::load(&path)
                .map_err(|e| Diagnostic::error(f.body.pos(), e.to_string()))?;
            modules.insert(path, m.clone());
            m
        }
    };
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
    let names = functions
        .iter()
        .map(|f| f.declaration().name.clone())
        .chain(aggregates.iter().map(|a| a.declaration().name.clone()));
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
