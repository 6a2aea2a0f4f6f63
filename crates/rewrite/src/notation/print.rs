//! Printing a graph in the compact notation.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{is_ident, quote};
use crate::model::{Graph, OpId, Placement};

/// The graph in the compact notation, roots sorted by name and separated by `;\n`. See the
/// module docs of [`crate::notation`] for the form.
pub fn print_graph(graph: &Graph) -> String {
    let mut roots: Vec<(String, OpId)> = graph
        .sinks()
        .into_iter()
        .filter_map(|id| graph.get(id).map(|op| (op.name.clone(), id)))
        .collect();
    roots.sort();
    let mut seen = BTreeSet::new();
    let mut parts = Vec::new();
    for (_, id) in roots {
        let mut out = String::new();
        term(graph, id, &mut seen, &mut out);
        parts.push(out);
    }
    // Operators on a cycle are reachable from no root: print them too, by id.
    for id in graph.ids() {
        if !seen.contains(&id) {
            let mut out = String::new();
            term(graph, id, &mut seen, &mut out);
            parts.push(out);
        }
    }
    parts.join(";\n")
}

fn term(graph: &Graph, id: OpId, seen: &mut BTreeSet<OpId>, out: &mut String) {
    let Some(op) = graph.get(id) else {
        let _ = write!(out, "<missing {id}>");
        return;
    };
    if !seen.insert(id) {
        out.push_str(&op.name);
        return;
    }
    let _ = write!(out, "{} := {}", op.name, op.kind);
    if !op.params.is_empty() {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|(k, v)| {
                let key = if is_ident(k) { k.clone() } else { quote(k) };
                format!("{key} = {}", quote(v))
            })
            .collect();
        let _ = write!(out, "{{{}}}", params.join(", "));
    }
    if op.placement != Placement::Unplaced {
        let _ = write!(out, "{}", op.placement);
    }
    if !op.inputs.is_empty() {
        out.push('(');
        for (i, input) in op.inputs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            term(graph, *input, seen, out);
        }
        out.push(')');
    }
}
