//! Helpers for the crate's unit tests.

use crate::{parse_graph, print_graph, rewrite, RuleSet, TableFacts, DEFAULT_LIMIT};

/// Facts in which filters, maps, readers, writers and system operators are stateless.
pub(crate) fn facts() -> TableFacts {
    TableFacts::stateless([
        "filter",
        "map",
        "reader",
        "writer",
        "multicast",
        "splitter",
        "merge",
        "stream-selector",
        "failover",
    ])
}

/// The graph, rewritten to a fixed point, printed.
pub(crate) fn rewritten(
    rules: &RuleSet,
    graph: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let g = parse_graph("<graph>", graph)?;
    Ok(print_graph(
        &rewrite(&g, rules, &facts(), DEFAULT_LIMIT)?.graph,
    ))
}

/// The expected graph, parsed and printed again (so that it may be written unnamed or
/// spread over lines).
pub(crate) fn expected(graph: &str) -> Result<String, Box<dyn std::error::Error>> {
    Ok(print_graph(&parse_graph("<expected>", graph)?))
}
