//! Feedback loops: a sink that writes where a source of the same query reads (a NATS sink
//! publishing to a subject its own source reads, a Kafka sink writing a topic its own source
//! reads) makes the query read its own output again, and write it again, without end. Such a
//! query is refused before it runs, naming both operators ([`crate::Catalog::feeds_back`]
//! says what they share and what to do).

use anduin_spec::Spec;
use anduin_types::{Diagnostic, Diagnostics};

use crate::catalog::{Catalog, FeedbackLoop};

/// An error at each sink that writes where a source of `spec` reads.
pub(crate) fn check_feedback<C: Catalog>(spec: &Spec, catalog: &C) -> Diagnostics {
    let mut diags = Diagnostics::default();
    let sources: Vec<_> = spec
        .operators
        .iter()
        .filter(|o| o.inputs.is_empty() && o.control.is_none())
        .collect();
    for sink in spec.operators.iter().filter(|o| o.outputs.is_empty()) {
        for source in &sources {
            let Some(FeedbackLoop { shared, fix }) = catalog.feeds_back(source, sink) else {
                continue;
            };
            diags.push(Diagnostic::error(
                sink.pos,
                format!(
                    "operator \"{}\" ({}) writes to {shared}, which source \"{}\" ({}) at {}:{} reads: the query would read its own output again and write it again, without end (a feedback loop). {fix}",
                    sink.name, sink.kind, source.name, source.kind, source.pos.line, source.pos.col
                ),
            ));
        }
    }
    diags
}
