//! Inputs that must end: an operator that reads one of its inputs to its end before it uses
//! the others (a lookup join's side table) would wait for ever behind a source that runs
//! until stopped. Such a query is refused before it runs, naming the source.

use anduin_spec::Spec;
use anduin_types::{Diagnostic, Diagnostics};

use crate::catalog::Catalog;
use crate::logical::{NodeId, Stream, StreamId};

/// Errors for each operator whose input that must end is fed by a source that never ends.
/// `topo` orders the operators so that producers come before their consumers.
pub(crate) fn check_ending<C: Catalog>(
    spec: &Spec,
    catalog: &C,
    topo: &[NodeId],
    inputs_of: &[Vec<StreamId>],
    streams: &[Stream],
) -> Diagnostics {
    let mut diags = Diagnostics::default();
    // Per operator, a source that never ends among those feeding it (itself for a source).
    let mut endless: Vec<Option<NodeId>> = vec![None; spec.operators.len()];
    for &id in topo {
        let op = &spec.operators[id.0];
        let ins = &inputs_of[id.0];
        endless[id.0] = if op.inputs.is_empty() && op.control.is_none() {
            (!catalog.source_ends(op)).then_some(id)
        } else {
            ins.iter().find_map(|s| endless[streams[s.0].producer.0 .0])
        };
        let Some((port, what)) = catalog.input_that_must_end(op) else {
            continue;
        };
        let (Some(stream), Some(input)) = (ins.get(port), op.inputs.get(port)) else {
            continue;
        };
        let Some(source) = endless[streams[stream.0].producer.0 .0] else {
            continue;
        };
        let src = &spec.operators[source.0];
        diags.push(Diagnostic::error(
            input.pos(),
            format!(
                "operator \"{}\" ({}) {what}, but stream \"{input}\" never ends: it comes from source \"{}\" ({}) at {}:{}, which runs until the query is stopped; feed it from sources that end (a reader of files, a generator with a `count`, a nexmark source with `events`, kafka or nats with `bounded = true`)",
                op.name, op.kind, src.name, src.kind, src.pos.line, src.pos.col
            ),
        ));
    }
    diags
}
