//! The control plane of an embedded run: the query's [`Control`] handle, with the adjustable
//! params of its operators (their current values from the query) and a validator that checks
//! a change as `anduin check` checks the query ([`anduin_graph::check_change_after`], with
//! the values earlier changes gave the operator's other params).
//!
//! A writer's new `path` is also checked as `anduin run` checks an output before it starts
//! ([`crate::preflight::check_new_output`]: not an input, another output or an earlier one of
//! this run, nor another file of the run; a place that can be written) and locked as
//! [`crate::locks`] locks the outputs, before the change is sent: a path that another run
//! writes is refused. The locks are held until the run ends. A resumed run locks the paths
//! that the changes recorded by its checkpoint gave its writers, before anything is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anduin_checkpoint::{output_locks_dir, OwnerLock};
use anduin_graph::{check_change_after, Catalog, ChangeRejected, LogicalGraph, ParamKind};
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;
use anduin_runtime::control::{ChangeRecord, ChangeRequest, Control, ControlFailure, ParamInfo};
use anduin_spec::Spec;
use anyhow::{Context, Result};

use crate::locks::is_device;
use crate::preflight::{absolute, check_new_output, is_stdout, InUse};

/// What a run uses besides its operators' params, for checking a writer's new path.
#[derive(Debug, Clone, Default)]
pub struct RunPlaces {
    /// Whether the run takes checkpoints (a writer's output is then a directory of parts).
    pub checkpointing: bool,
    /// The dead-letter file, unless the dead letters go to stderr.
    pub dead_letter: Option<PathBuf>,
    /// The events file (`--events`), unless `-` or none.
    pub events: Option<PathBuf>,
    /// The local directory of `--checkpoint-store` (the store, or its staging and cache).
    pub checkpoint_dir: Option<PathBuf>,
    /// Where the LSM backends keep their run directories, when the query keeps state there.
    pub state_dir: Option<PathBuf>,
    /// The query file.
    pub query_file: Option<PathBuf>,
    /// The changes recorded by the checkpoint the run resumes from (applied again).
    pub restored: Vec<ChangeRecord>,
    /// The query's own functions, where the process holds several queries (a cluster's
    /// coordinator): a change's expression is checked with them. `None`: the process's.
    pub functions: Option<Arc<anduin_expr::UserFunctions>>,
}

/// The handle of query `name` (read from `file`), running `graph`, in a run that uses
/// `places`. Fails when a path the resumed run's writers write (after the changes its
/// checkpoint recorded) is held by another run.
pub fn control_of(
    name: &str,
    file: Option<String>,
    graph: Arc<LogicalGraph<Bound>>,
    places: RunPlaces,
) -> Result<Control> {
    let params = adjustable_params(&graph);
    let writers: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| n.kind() == "writer")
        .map(|n| n.name().to_string())
        .collect();
    let query = name.to_string();
    let functions = places.functions.clone();
    let outputs = Mutex::new(Outputs::new(&graph, places)?);
    let validate = move |r: &ChangeRequest, earlier: &BTreeMap<String, String>| {
        let check = || {
            check_change_after(
                &graph,
                &BuiltinCatalog,
                &r.operator,
                earlier,
                &r.param,
                &r.value,
            )
        };
        match &functions {
            Some(f) => anduin_expr::FunctionProvider::scoped(f, check),
            None => check(),
        }
        .map_err(|e| refusal(&query, r, e))?;
        let writer = graph
            .nodes
            .iter()
            .any(|n| n.name() == r.operator && n.kind() == "writer");
        if writer && r.param == "path" {
            outputs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .retarget(&r.operator, &r.value)
                .map_err(|e| ControlFailure::Invalid {
                    operator: r.operator.clone(),
                    param: r.param.clone(),
                    message: format!("{}.{}: {e:#}", r.operator, r.param),
                })?;
        }
        Ok(())
    };
    let control = Control::new(name, file, params, Box::new(validate));
    // A resumed run refuses a path a writer had before: it must know them all.
    for writer in writers {
        control.keep_every_change(&writer, "path");
    }
    Ok(control)
}

/// The outputs of a run's writers, over the changes of their paths, and the locks taken on
/// the new ones.
struct Outputs {
    /// The query's operators, as written (the readers' inputs).
    spec: Spec,
    places: RunPlaces,
    /// Per writer, every path it was given in this run, the current one last.
    paths: BTreeMap<String, Vec<String>>,
    /// The outputs locked (by [`crate::locks::lock_run`] for the query's own paths, or
    /// here), resolved.
    locked: BTreeSet<PathBuf>,
    /// The locks taken here, held for the run.
    held: Vec<OwnerLock>,
}

impl Outputs {
    fn new(graph: &LogicalGraph<Bound>, places: RunPlaces) -> Result<Self> {
        let spec = Spec {
            types: Vec::new(),
            operators: graph.nodes.iter().map(|n| n.def.clone()).collect(),
            ..Spec::default()
        };
        let mut paths: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for op in spec
            .operators
            .iter()
            .filter(|o| o.kind.as_str() == "writer")
        {
            if let Some(p) = op.param("path") {
                paths.insert(op.name.to_string(), vec![p.value.as_text().to_string()]);
            }
        }
        let locked = paths
            .values()
            .flatten()
            .filter(|p| p.as_str() != "-")
            .map(|p| absolute(Path::new(p)))
            .collect();
        let mut outputs = Self {
            spec,
            places,
            paths,
            locked,
            held: Vec::new(),
        };
        let restored = std::mem::take(&mut outputs.places.restored);
        for r in restored.iter().filter(|r| r.param == "path") {
            if let Some(p) = outputs.paths.get_mut(&r.operator) {
                p.push(r.new.clone());
            }
        }
        let current: Vec<String> = outputs
            .paths
            .values()
            .filter(|p| p.len() > 1)
            .filter_map(|p| p.last().cloned())
            .collect();
        for path in current.iter().filter(|p| p.as_str() != "-") {
            outputs.lock(Path::new(path)).with_context(|| {
                format!("the checkpoint resumed from changed a writer's path to `{path}`")
            })?;
        }
        Ok(outputs)
    }

    /// Checks `new` as the next path of `writer`, locks it, and counts it as the writer's.
    fn retarget(&mut self, writer: &str, new: &str) -> Result<()> {
        if new == "-" {
            if let Some(events) = self.places.events.as_deref().filter(|e| is_stdout(e)) {
                anyhow::bail!(
                    "the events file `{}` is this run's standard output: the output of operator \"{writer}\" would be mixed into it; choose a file",
                    events.display()
                );
            }
        } else {
            let path = Path::new(new);
            anduin_connectors::writer::check_output_place(path, self.places.checkpointing)
                .map_err(|e| anyhow::anyhow!("cannot write to `{new}`: {e}"))?;
            check_new_output(&self.spec, writer, path, &self.others(writer))?;
            self.lock(path)?;
        }
        self.paths
            .entry(writer.to_string())
            .or_default()
            .push(new.to_string());
        Ok(())
    }

    /// What a new output of `writer` must not be.
    fn others(&self, writer: &str) -> Vec<InUse> {
        let dirs = self.places.checkpointing;
        let mut others = Vec::new();
        for (w, paths) in &self.paths {
            for p in paths.iter().filter(|p| p.as_str() != "-") {
                let what = if w == writer {
                    "an output this operator was given in this run".to_string()
                } else {
                    format!("an output of operator \"{w}\"")
                };
                others.push(InUse {
                    what,
                    path: PathBuf::from(p),
                    directory: dirs,
                });
            }
        }
        let files = [
            ("the dead-letter file", &self.places.dead_letter, false),
            ("the events file", &self.places.events, false),
            ("the query file", &self.places.query_file, false),
            (
                "the checkpoint directory",
                &self.places.checkpoint_dir,
                true,
            ),
            ("the state directory", &self.places.state_dir, true),
        ];
        for (what, path, directory) in files {
            if let Some(p) = path {
                others.push(InUse {
                    what: what.to_string(),
                    path: p.clone(),
                    directory,
                });
            }
        }
        others
    }

    /// Locks the output `path` as [`crate::locks::lock_run`] does (made empty first if
    /// missing, so that it is locked from the start), unless this run holds it already.
    fn lock(&mut self, path: &Path) -> Result<()> {
        let key = absolute(path);
        if is_device(path) || self.locked.contains(&key) {
            return Ok(());
        }
        let by_path = OwnerLock::output(&output_locks_dir(), path)?;
        if !path.exists() {
            // If this fails, the writer reports why when it opens it.
            let _ = if self.places.checkpointing {
                std::fs::create_dir_all(path)
            } else {
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map(drop)
            };
        }
        let itself = OwnerLock::output_itself(path)?;
        self.held.push(by_path);
        self.held.extend(itself);
        self.locked.insert(key);
        Ok(())
    }
}

/// Per operator with params that can change while running, those params as the query sets
/// them (or their defaults).
fn adjustable_params(graph: &LogicalGraph<Bound>) -> BTreeMap<String, Vec<ParamInfo>> {
    let mut all = BTreeMap::new();
    for id in &graph.topo {
        let node = graph.node(*id);
        let Some(sig) = BuiltinCatalog.signature(node.kind()) else {
            continue;
        };
        // Those `ctl set` refuses whatever the param (`check_change_after` asks the same):
        // an operator following a control stream takes its changes from there only; some
        // take none while running (copies that must stay alike, over an updating stream,
        // before an exactly-once NATS sink).
        if anduin_graph::fixed_while_running(graph, node).is_some() {
            continue;
        }
        let params: Vec<ParamInfo> = BuiltinCatalog
            .adjustable(node.kind())
            .into_iter()
            .filter_map(|name| sig.param(name))
            .map(|spec| ParamInfo {
                name: spec.name.to_string(),
                kind: kind_name(spec.name, spec.kind).to_string(),
                value: declared_value(&node.def, spec.name)
                    .or_else(|| spec.default.map(str::to_string))
                    .unwrap_or_default(),
                doc: spec.doc.to_string(),
            })
            .collect();
        if !params.is_empty() {
            all.insert(node.name().to_string(), params);
        }
    }
    all
}

/// The value the query gives param `name` of `def`: a repeated one's values joined by `, `
/// (a pattern's `define`, one condition per `param define`, is one list of them).
fn declared_value(def: &anduin_spec::OperatorDef, name: &str) -> Option<String> {
    let values: Vec<String> = def
        .params_named(name)
        .map(|p| p.value.as_text().to_string())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// A param's type, in words.
fn kind_name(param: &str, kind: ParamKind) -> &'static str {
    match (param, kind) {
        ("condition", _) => "expression",
        ("columns", _) => "expressions",
        ("pattern", _) => "row pattern",
        ("define", _) => "conditions",
        (_, ParamKind::Text | ParamKind::Repeated) => "text",
        (_, ParamKind::Int) => "integer",
        (_, ParamKind::Number) => "number",
        (_, ParamKind::Bool) => "boolean",
        (_, ParamKind::Duration) => "duration",
        (_, ParamKind::OneOf(_)) => "choice",
    }
}

/// Why `request` is refused, for the control plane.
fn refusal(query: &str, request: &ChangeRequest, e: ChangeRejected) -> ControlFailure {
    match e {
        ChangeRejected::UnknownOperator => ControlFailure::UnknownOperator {
            query: query.to_string(),
            operator: request.operator.clone(),
            hint: String::new(),
        },
        ChangeRejected::NotAdjustable { adjustable, exists } => ControlFailure::not_adjustable(
            &request.operator,
            &request.param,
            adjustable.into_iter().map(str::to_string).collect(),
            exists,
        ),
        ChangeRejected::Invalid(message) => ControlFailure::Invalid {
            operator: request.operator.clone(),
            param: request.param.clone(),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The params `anduin ctl params` lists for each operator of `query` as it runs.
    fn listed(query: &str) -> BTreeMap<String, Vec<String>> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.flow");
        std::fs::write(&path, query).expect("query");
        let loaded = match crate::load::load_to_run(&path, &[], &[], None) {
            Ok(loaded) => loaded,
            Err(crate::load::LoadError::Diagnostics(d)) => panic!("{}", d.render("q.flow")),
            Err(crate::load::LoadError::Other(e)) => panic!("{e:#}"),
        };
        adjustable_params(&loaded.graph)
            .into_iter()
            .map(|(op, params)| (op, params.into_iter().map(|p| p.name).collect()))
            .collect()
    }

    const PATTERN: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 10
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "dips", type = "pattern" {
  input name = "events"
  param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS B.value < PREV(B.value)"
  param measures = "A.ts AS a_ts"
  param after_match = "skip to next row"
  EXTRA
  output name = "dips"
}
operator name = "out", type = "writer" {
  input name = "dips"
  param path = "out.csv"
}
"#;

    const BEFORE_A_NATS_SINK: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 10
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "kept", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "kept"
  param server = "nats://127.0.0.1:4222"
  param stream = "OUT"
  param subject = "out"
  DELIVERY
}
"#;

    /// Every param `anduin ctl params` lists for `query` with a value is one `anduin ctl set`
    /// takes (with that value); the listing.
    fn listed_and_taken(query: &str) -> BTreeMap<String, Vec<String>> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.flow");
        std::fs::write(&path, query).expect("query");
        let loaded = match crate::load::load_to_run(&path, &[], &[], None) {
            Ok(loaded) => loaded,
            Err(crate::load::LoadError::Diagnostics(d)) => panic!("{}", d.render("q.flow")),
            Err(crate::load::LoadError::Other(e)) => panic!("{e:#}"),
        };
        let listed = adjustable_params(&loaded.graph);
        for (op, params) in &listed {
            // (A param without a value, such as a generator's `rate`, has none to set again.)
            for p in params.iter().filter(|p| !p.value.is_empty()) {
                let taken = anduin_graph::check_change(
                    &loaded.graph,
                    &BuiltinCatalog,
                    op,
                    &p.name,
                    &p.value,
                );
                assert_eq!(taken, Ok(()), "ctl params lists {op}.{}", p.name);
            }
        }
        listed
            .into_iter()
            .map(|(op, params)| (op, params.into_iter().map(|p| p.name).collect()))
            .collect()
    }

    #[test]
    fn an_operator_before_an_exactly_once_nats_sink_lists_no_param_that_ctl_set_would_refuse() {
        // Issue 19 (L1): `ctl params` listed the filter's condition, and `ctl set` refused it.
        let exactly_once = listed_and_taken(&BEFORE_A_NATS_SINK.replace("DELIVERY", ""));
        assert!(!exactly_once.contains_key("low"), "{exactly_once:?}");
        let at_least_once = listed_and_taken(
            &BEFORE_A_NATS_SINK.replace("DELIVERY", r#"param delivery = "at-least-once""#),
        );
        assert_eq!(
            at_least_once.get("low"),
            Some(&vec!["condition".to_string()]),
            "{at_least_once:?}"
        );
        for extra in [
            "",
            "param overflow_instances = 3\n  param max_partial_matches = 10",
        ] {
            listed_and_taken(&PATTERN.replace("EXTRA", extra));
        }
    }

    #[test]
    fn copies_that_must_stay_alike_list_no_param_that_ctl_set_would_refuse() {
        let plain = listed(&PATTERN.replace("EXTRA", ""));
        assert!(plain["dips"].contains(&"define".to_string()), "{plain:?}");
        for extra in [
            "param overflow_instances = 3\n  param max_partial_matches = 10",
            "param fault_tolerance = \"hot-standby\"",
        ] {
            let copies = listed(&PATTERN.replace("EXTRA", extra));
            assert!(
                copies.keys().all(|op| !op.starts_with("dips")),
                "{extra}: {copies:?}"
            );
            assert!(copies.contains_key("out"), "{copies:?}");
        }
    }
}
