//! `anduin explain FILE --rewritten [--rules FILE]`: the query's graph before and after the
//! rewriting rules (paper §4.2), which rule matched where, and the placement constraints, as
//! text, JSON or Graphviz.

use std::fmt::Write;

use anduin_graph::rewriting::{rewrite_query, with_default_parallelism};
use anduin_registry::BuiltinCatalog;
use anduin_rewrite::{print_graph, Graph, Placement, Rewritten};
use anduin_spec::Spec;
use anyhow::Result;

use super::explain::Format;

/// Params the rules read or set on a query's own operators: the rest (conditions, paths…)
/// is left out of the picture, which is about the graph's shape.
const SHOWN: &[&str] = &[
    "fault_tolerance",
    "replicas",
    "pipeline",
    "parallelism",
    "ranges",
    "checkpoint",
];

/// The rewriting of `spec` (with the rules of file `rules`, if given) in `format`, when
/// operators that can run in parallel and set no `parallelism` run `parallelism` instances
/// (`--parallelism`), as a run plans them.
pub fn show<B>(
    spec: &Spec,
    graph: &anduin_graph::LogicalGraph<B>,
    rules: Option<crate::load::RuleText<'_>>,
    format: Format,
    parallelism: usize,
) -> Result<String> {
    let spec = &with_default_parallelism(spec, graph, parallelism);
    let (before, after) = rewrite_query(spec, &BuiltinCatalog, rules)?;
    let before_shown = shown(&before, &before);
    let after_shown = shown(&after.graph, &before);
    Ok(match format {
        Format::Text => text_of(&before_shown, &after_shown, &after),
        Format::Json => json_of(&before_shown, &after_shown, &after) + "\n",
        Format::Dot => dot_of(&before_shown, &after_shown),
    })
}

/// `g` with the params of `original`'s operators and their replicas (`NAME_replica_N`) cut
/// to [`SHOWN`] and those a rule set or changed; operators the rules made keep all theirs.
fn shown(g: &Graph, original: &Graph) -> Graph {
    let mut out = g.clone();
    for id in out.ids() {
        let Some(op) = out.get_mut(id) else { continue };
        let of = op
            .name
            .rsplit_once("_replica_")
            .filter(|(_, n)| n.parse::<u32>().is_ok())
            .map_or(op.name.as_str(), |(of, _)| of);
        let Some(first) = original.find(of).and_then(|i| original.get(i)) else {
            continue;
        };
        op.params
            .retain(|k, v| SHOWN.contains(&k.as_str()) || first.param(k) != Some(v.as_str()));
    }
    out
}

fn placements(g: &Graph) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = g
        .iter()
        .filter(|(_, op)| op.placement != Placement::Unplaced)
        .map(|(_, op)| (op.name.clone(), op.placement.to_string()))
        .collect();
    out.sort();
    out
}

fn text_of(before: &Graph, after: &Graph, rewritten: &Rewritten) -> String {
    let mut out = String::new();
    let indent = |s: String| s.lines().map(|l| format!("  {l}\n")).collect::<String>();
    out.push_str("logical:\n");
    out.push_str(&indent(print_graph(before)));
    out.push_str("rules applied:\n");
    if rewritten.applications.is_empty() {
        out.push_str("  none (no operator asks for fault_tolerance, replicas, parallelism ≥ 2 or pipeline, and no user rule matched)\n");
    }
    for a in &rewritten.applications {
        let bound: Vec<String> = a
            .bound
            .iter()
            .map(|(k, v)| format!("{k} = {}", v.join(" ")))
            .collect();
        let _ = writeln!(out, "  {} at {} ({})", a.rule, a.root, bound.join(", "));
    }
    out.push_str("rewritten:\n");
    out.push_str(&indent(print_graph(after)));
    let placed = placements(after);
    if !placed.is_empty() {
        out.push_str("placement (distinct slots of one group run on distinct workers):\n");
        for (name, p) in placed {
            let _ = writeln!(out, "  {name} {p}");
        }
    }
    out
}

fn json_of(before: &Graph, after: &Graph, rewritten: &Rewritten) -> String {
    let applications: Vec<serde_json::Value> = rewritten
        .applications
        .iter()
        .map(|a| serde_json::json!({ "rule": a.rule, "root": a.root, "bound": a.bound }))
        .collect();
    let placement: serde_json::Map<String, serde_json::Value> = placements(after)
        .into_iter()
        .map(|(n, p)| (n, serde_json::Value::String(p)))
        .collect();
    serde_json::json!({
        "logical": print_graph(before),
        "applications": applications,
        "rewritten": print_graph(after),
        "placement": placement,
    })
    .to_string()
}

fn dot_of(before: &Graph, after: &Graph) -> String {
    let mut out = String::from("digraph rewritten {\n  rankdir=BT;\n  node [shape=box];\n");
    for (prefix, label, g) in [("b", "logical", before), ("a", "rewritten", after)] {
        let _ = writeln!(
            out,
            "  subgraph cluster_{prefix} {{\n    label=\"{label}\";"
        );
        for (id, op) in g.iter() {
            let _ = writeln!(
                out,
                "    {prefix}{} [label=\"{}\\n{}{}\"];",
                id.0,
                escape(&op.name),
                escape(&op.kind),
                match &op.placement {
                    Placement::Unplaced => String::new(),
                    p => format!("\\n{}", escape(&p.to_string())),
                }
            );
            for input in &op.inputs {
                let _ = writeln!(out, "    {prefix}{} -> {prefix}{};", input.0, id.0);
            }
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
