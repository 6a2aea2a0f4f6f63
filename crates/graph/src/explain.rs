//! `anduin explain`: the logical graph and the physical plan as text or Graphviz.

use std::fmt::Write;

use crate::logical::{LogicalGraph, NodeId};
use crate::physical::{Partitioning, PhysicalPlan};
use crate::schema::describe_schema;

/// The graph and plan as indented text.
pub fn explain_text<B>(graph: &LogicalGraph<B>, plan: &PhysicalPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "logical graph: {}, {}",
        count(graph.nodes.len(), "operator"),
        count(graph.streams.len(), "stream")
    );
    for &id in &graph.topo {
        let node = graph.node(id);
        let _ = writeln!(
            out,
            "  {} [{}] {}",
            node.name(),
            node.kind(),
            changes(graph, id)
        );
        for p in &node.def.params {
            let _ = writeln!(
                out,
                "    param {} = {:?}",
                p.name,
                p.value.as_text().as_str()
            );
        }
        for s in node.data_inputs() {
            let _ = writeln!(out, "    in  {}", graph.stream(*s).name);
        }
        if let Some(c) = &node.control {
            let time = c
                .time
                .as_ref()
                .map_or(" (changes apply on arrival)".to_string(), |t| {
                    format!(" (changes apply by event time `{}`)", t.name)
                });
            let _ = writeln!(out, "    control {}{time}", c.stream);
        }
        for s in &node.outputs {
            let stream = graph.stream(*s);
            let _ = writeln!(
                out,
                "    out {}: {}{}",
                stream.name,
                stream
                    .type_name
                    .as_deref()
                    .map(|t| format!("{t} "))
                    .unwrap_or_default(),
                describe_schema(&stream.schema)
            );
        }
    }
    let _ = writeln!(
        out,
        "physical plan: {}, {}",
        count(plan.tasks.len(), "task"),
        count(plan.channels.len(), "channel")
    );
    for t in &plan.tasks {
        let names: Vec<&str> = t.chain.iter().map(|n| graph.node(*n).name()).collect();
        let _ = writeln!(
            out,
            "  task {}: {}{}",
            t.id,
            names.join(" -> "),
            instances(t.parallelism)
        );
    }
    for c in &plan.channels {
        let stream = graph.stream(c.stream);
        let how = match &c.partitioning {
            Partitioning::Gather => String::new(),
            Partitioning::Hash(keys) => {
                let cols: Vec<&str> = keys
                    .iter()
                    .filter_map(|k| stream.schema.fields().get(*k).map(|f| f.name().as_str()))
                    .collect();
                format!(", by key ({})", cols.join(", "))
            }
            Partitioning::Broadcast => ", to every instance".into(),
            Partitioning::Forward => ", each instance to its own".into(),
            Partitioning::RoundRobin => ", round robin".into(),
            Partitioning::Range(r) => {
                format!(
                    ", by ranges of {} split at {}",
                    r.column,
                    r.bounds.join(", ")
                )
            }
        };
        let _ = writeln!(
            out,
            "  channel {}: task {} -> task {} ({}, input {}{how})",
            c.id, c.from_task, c.to_task, stream.name, c.to_input
        );
    }
    out
}

/// The graph as Graphviz `dot`: one cluster per task, one edge per stream consumer. An
/// operator whose output is updating (a sink: whose input is) says so on a third line of its
/// label, as the text does (`updating (+I -U +U -D)`, `updating (from NAME)`, `takes updating
/// (from NAME)`), and is drawn bold; so are the edges of updating streams. Append-only ones
/// are drawn as before, without a third line.
pub fn explain_dot<B>(graph: &LogicalGraph<B>, plan: &PhysicalPlan) -> String {
    let mut out = String::from(
        "digraph anduin {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n",
    );
    for t in &plan.tasks {
        let _ = writeln!(out, "  subgraph cluster_task{} {{", t.id);
        let _ = writeln!(
            out,
            "    label=\"task {}{}\"; style=dashed;",
            t.id,
            instances(t.parallelism)
        );
        for n in &t.chain {
            let node = graph.node(*n);
            let updating = match updating_from(graph, *n) {
                Some(_) => format!("\\n{}\", style=bold", escape(&changes(graph, *n))),
                None => "\"".to_string(),
            };
            let _ = writeln!(
                out,
                "    n{} [label=\"{}\\n[{}]{updating}];",
                n.0,
                escape(node.name()),
                escape(node.kind())
            );
        }
        let _ = writeln!(out, "  }}");
    }
    for s in &graph.streams {
        for (consumer, port) in &s.consumers {
            let control = graph
                .node(*consumer)
                .control
                .as_ref()
                .is_some_and(|c| c.port == *port);
            let style = match (control, s.updating_from.is_some()) {
                (true, true) => ", style=\"dashed,bold\"",
                (true, false) => ", style=dashed",
                (false, true) => ", style=bold",
                (false, false) => "",
            };
            let _ = writeln!(
                out,
                "  n{} -> n{} [label=\"{}\"{style}];",
                s.producer.0 .0,
                consumer.0,
                escape(&s.name),
            );
        }
    }
    out.push_str("}\n");
    out
}

/// The operator that makes the stream operator `id` emits (a sink: the stream it takes) an
/// updating one (`id` itself, or one upstream), or `None` if it is append-only. `anduin
/// explain` shows it in every format.
pub fn updating_from<B>(graph: &LogicalGraph<B>, id: NodeId) -> Option<NodeId> {
    let node = graph.node(id);
    let streams = if node.outputs.is_empty() {
        node.data_inputs()
    } else {
        node.outputs.as_slice()
    };
    streams.iter().find_map(|s| graph.stream(*s).updating_from)
}

/// Whether operator `id` emits an append-only or an updating stream (a sink: which it takes),
/// and for an updating one, which operator made it so.
fn changes<B>(graph: &LogicalGraph<B>, id: NodeId) -> String {
    let verb = if graph.node(id).outputs.is_empty() {
        "takes "
    } else {
        ""
    };
    match updating_from(graph, id) {
        None => format!("{verb}append-only"),
        Some(f) if f == id => format!("{verb}updating (+I -U +U -D)"),
        Some(f) => format!("{verb}updating (from {})", graph.node(f).name()),
    }
}

/// ` (3 instances)` for a task run in parallel, nothing for one instance.
fn instances(parallelism: usize) -> String {
    if parallelism > 1 {
        format!(" ({parallelism} instances)")
    } else {
        String::new()
    }
}

/// `1 task`, `3 tasks`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physical::tests::graph;
    use crate::PlanOptions;

    #[test]
    fn a_source_run_in_parallel_shows_its_instances() {
        let mut g = graph(2, &[(0, 1)]);
        g.nodes[0].parallelizable = true;
        let plan = PhysicalPlan::plan(
            &g,
            PlanOptions {
                chaining: true,
                default_parallelism: 2,
                max_parallelism: None,
            },
        )
        .expect("the graph plans");
        let text = explain_text(&g, &plan);
        assert!(text.contains("  task 0: n0 (2 instances)\n"), "{text}");
        assert!(text.contains("  task 1: n1\n"), "{text}");
        let dot = explain_dot(&g, &plan);
        assert!(dot.contains("label=\"task 0 (2 instances)\""), "{dot}");
    }
}
