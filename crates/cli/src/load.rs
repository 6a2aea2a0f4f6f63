//! Reading a query file and checking it: the steps `run`, `check` and `explain` share.

use std::collections::BTreeMap;
use std::path::Path;

use anduin_graph::LogicalGraph;
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;
use anduin_spec::{Missing, Spec};
use anduin_types::Diagnostics;
use anyhow::{Context, Result};

/// `--var NAME=VALUE`, parsed.
pub fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected NAME=VALUE, found `{s}`")),
    }
}

/// A query file, checked: its spec, its graph, and its warnings.
#[derive(Clone)]
pub struct Loaded {
    pub spec: Spec,
    pub graph: std::sync::Arc<LogicalGraph<Bound>>,
    pub warnings: Diagnostics,
    /// The query as written, when rules reshaped it into `graph` (the web UI draws both).
    pub written: Option<std::sync::Arc<LogicalGraph<Bound>>>,
}

impl Loaded {
    /// The query as written, when rules reshaped it (other operators or streams: a rule that
    /// only set params leaves the graph as written), for the API and the web UI.
    pub fn reshaped(&self) -> Option<Vec<anduin_runtime::control::WrittenOperator>> {
        let written = anduin_runtime::control::written(self.written.as_deref()?);
        (written != anduin_runtime::control::written(&self.graph)).then_some(written)
    }
}

/// Why a query could not be loaded.
pub enum LoadError {
    /// The file has problems, each with a position.
    Diagnostics(Diagnostics),
    /// Something else (the file cannot be read, SQL is not supported yet).
    Other(anyhow::Error),
}

/// Reads, substitutes variables in, and checks `path`.
pub fn load(path: &Path, vars: &[(String, String)], missing: Missing) -> Result<Loaded, LoadError> {
    load_with(path, vars, missing, &[])
}

/// [`load`], with `defaults`: `(param, value)` given to every operator whose type accepts
/// that param and that does not set it (`--state-backend`).
pub fn load_with(
    path: &Path,
    vars: &[(String, String)],
    missing: Missing,
    defaults: &[(&str, &str)],
) -> Result<Loaded, LoadError> {
    load_edited(path, vars, missing, defaults, |_| {})
}

/// A rule file given with a query (`--rules FILE`): its name, as the user named it, and its
/// text.
pub type RuleText<'a> = (&'a str, &'a str);

/// [`load_with`] for a query about to run (embedded or on a cluster): rewritten by the rules
/// of `rules` that reshape the graph ([`by_rules`]), and with the operators that ask for hot
/// standby replicated behind stream selectors
/// (`anduin_graph::rewriting::hot_standby_spec`), checked again.
pub fn load_to_run(
    path: &Path,
    vars: &[(String, String)],
    defaults: &[(&str, &str)],
    rules: Option<RuleText<'_>>,
) -> Result<Loaded, LoadError> {
    let loaded = load_with(path, vars, Missing::Error, defaults)?;
    let loaded = match rules {
        Some(rules) => by_rules(path, loaded, rules)?,
        None => loaded,
    };
    as_it_runs(loaded)
}

/// `loaded` (the query file `path`) rewritten by the rules of the file `rules` that reshape
/// the graph (paper §4.2; the others are applied while it runs), and checked again as a
/// user's query is: `loaded` itself when no such rule matches.
pub fn by_rules(path: &Path, loaded: Loaded, rules: RuleText<'_>) -> Result<Loaded, LoadError> {
    let (file, text) = rules;
    let plan = crate::run_rules::plan_rules(file, text).map_err(LoadError::Other)?;
    let rewritten = anduin_graph::rewriting::rewritten_by(&loaded.spec, &BuiltinCatalog, &plan)
        .map_err(|e| {
            LoadError::Other(anyhow::Error::new(e).context(format!(
                "the rules of `{file}` cannot be applied to the query"
            )))
        })?;
    let Some((spec, after)) = rewritten else {
        return Ok(loaded);
    };
    let applied: Vec<String> = after
        .applications
        .iter()
        .map(|a| format!("{} at {}", a.rule, a.root))
        .collect();
    tracing::info!(rules = file, applied = ?applied, "the query is rewritten by the rules");
    let (graph, more) = anduin_graph::check(&spec, &BuiltinCatalog).map_err(|d| {
        let lines: Vec<String> = d.0.iter().map(|x| format!("{}:{x}", path.display())).collect();
        LoadError::Other(anyhow::anyhow!(
            "the query as the rules of `{file}` rewrite it ({}) has problems (an operator a rule made is named as the rule named it; `anduin explain {} --rewritten --rules {file}` shows the rewritten graph):\n{}",
            applied.join(", "),
            path.display(),
            lines.join("\n")
        ))
    })?;
    // The rewritten query's own warnings (an output no operator reads any more), once.
    let mut warnings = loaded.warnings;
    let said: std::collections::BTreeSet<String> =
        warnings.0.iter().map(|w| w.to_string()).collect();
    warnings.0.extend(
        more.0
            .into_iter()
            .filter(|w| !said.contains(&w.to_string())),
    );
    Ok(Loaded {
        spec,
        graph: std::sync::Arc::new(graph),
        warnings,
        written: Some(loaded.written.unwrap_or(loaded.graph)),
    })
}

/// The query `loaded` as it runs: the operators that ask for hot standby replicated behind
/// stream selectors, the patterns that spread partial matches (`overflow_instances`) copied
/// with a union of their outputs, checked again (`loaded` itself when none asks).
pub fn as_it_runs(loaded: Loaded) -> Result<Loaded, LoadError> {
    // A stream selector takes append-only streams only.
    for node in &loaded.graph.nodes {
        let hot = node.def.asks_hot_standby();
        let updating = node
            .outputs
            .iter()
            .any(|s| loaded.graph.stream(*s).updating_from.is_some());
        if hot && updating {
            return Err(LoadError::Diagnostics(
                anduin_types::Diagnostic::error(
                    node.def.pos,
                    format!(
                        "operator \"{}\": fault_tolerance = \"hot-standby\" is not supported for an operator that emits an updating stream (its stream selector takes append-only streams only)",
                        node.name()
                    ),
                )
                .into(),
            ));
        }
    }
    let hot = anduin_graph::rewriting::hot_standby_spec(&loaded.spec, &BuiltinCatalog)
        .map_err(|e| LoadError::Other(anyhow::Error::new(e)))?;
    let spread = anduin_graph::rewriting::overflow_spec(
        hot.as_ref().unwrap_or(&loaded.spec),
        &BuiltinCatalog,
    )
    .map_err(|e| LoadError::Other(anyhow::Error::new(e)))?;
    let Some(spec) = spread.or(hot) else {
        return Ok(loaded);
    };
    // The warnings are those of the query as written: the copies would repeat them.
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).map_err(LoadError::Diagnostics)?;
    Ok(Loaded {
        spec,
        graph: std::sync::Arc::new(graph),
        warnings: loaded.warnings,
        written: Some(loaded.written.unwrap_or(loaded.graph)),
    })
}

/// [`load_with`], with `edit` applied to the spec after variables are substituted and before
/// it is checked (`bench` replaces the writers by `discard` sinks).
pub fn load_edited(
    path: &Path,
    vars: &[(String, String)],
    missing: Missing,
    defaults: &[(&str, &str)],
    edit: impl FnOnce(&mut Spec),
) -> Result<Loaded, LoadError> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read query file `{}`", path.display()))
        .map_err(LoadError::Other)?;
    let src = anduin_spec::decode(&bytes).map_err(|d| LoadError::Diagnostics(d.into()))?;
    load_text_edited(path, src, vars, missing, defaults, edit)
}

/// [`load_edited`] of the text `src` rather than of the file's: `path` names the query (its
/// extension says how to parse it; UDF paths are relative to its folder) and need not exist
/// (`bench nexmark --dump` runs a query built into anduin).
pub fn load_text_edited(
    path: &Path,
    src: &str,
    vars: &[(String, String)],
    missing: Missing,
    defaults: &[(&str, &str)],
    edit: impl FnOnce(&mut Spec),
) -> Result<Loaded, LoadError> {
    let mut spec = parse(path, src).map_err(|e| match e.downcast::<Diagnostics>() {
        Ok(d) => LoadError::Diagnostics(d),
        Err(e) => LoadError::Other(e),
    })?;
    let vars: BTreeMap<String, String> = vars.iter().cloned().collect();
    let mut warnings =
        anduin_spec::substitute(&mut spec, &vars, missing).map_err(LoadError::Diagnostics)?;
    // Before the check: operators' expressions may call the query's functions.
    crate::udfs::register_declared(path, &spec).map_err(LoadError::Diagnostics)?;
    edit(&mut spec);
    for op in &mut spec.operators {
        let Some(sig) = anduin_graph::Catalog::signature(&BuiltinCatalog, op.kind.as_str()) else {
            continue;
        };
        for (name, value) in defaults {
            if sig.param(name).is_some() && op.param(name).is_none() {
                op.params.push(anduin_spec::Param {
                    name: anduin_spec::Text::unplaced(*name),
                    value: anduin_spec::Value::String(anduin_spec::Text::unplaced(*value)),
                });
            }
        }
    }
    let (graph, more) = anduin_graph::check(&spec, &BuiltinCatalog).map_err(|mut d| {
        d.0.splice(0..0, warnings.0.clone());
        d.sort();
        LoadError::Diagnostics(d)
    })?;
    warnings.extend(more);
    warnings.sort();
    // The planner's rewrites of the checked query, checked again: a filter before a join
    // with a window's extreme (`prune = "off"` on the join keeps it out).
    if let Some(pruned) = anduin_registry::prune_extremes(&spec, &graph) {
        let (graph, _) = anduin_graph::check(&pruned, &BuiltinCatalog).map_err(|d| {
            LoadError::Other(anyhow::anyhow!(
                "the query with its joins' rows pruned (a bug in anduin: `anduin run --no-join-pruning` runs it without) has problems:\n{}",
                d.render(&path.display().to_string())
            ))
        })?;
        return Ok(Loaded {
            spec: pruned,
            graph: std::sync::Arc::new(graph),
            warnings,
            written: None,
        });
    }
    Ok(Loaded {
        spec,
        graph: std::sync::Arc::new(graph),
        warnings,
        written: None,
    })
}

/// The spec of `src`, read as `path`'s extension says: `.json`, `.sql`, `.flow` otherwise.
pub(crate) fn parse(path: &Path, src: &str) -> Result<Spec> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "json" => anduin_spec::from_json(src).map_err(anyhow::Error::new),
        "sql" => anduin_spec::parse_sql(src).map_err(anyhow::Error::new),
        _ => anduin_spec::parse_flow(src).map_err(anyhow::Error::new),
    }
}

/// Prints `text` to stdout. A closed stdout (`anduin explain … | head`) is not an error.
pub fn print_out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(()),
    }
}

/// Prints diagnostics to stderr as `FILE:LINE:COL: message`.
pub fn print_diagnostics(path: &Path, d: &Diagnostics) {
    eprint!("{}", d.render(&path.display().to_string()));
}
