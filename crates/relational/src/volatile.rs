//! Where an operator calls a function whose value changes from call to call (`random()`,
//! `uuid()`, `PROCTIME()`), for the planner ([`anduin_graph::Catalog::volatile_call`]): a sink
//! that must get the same rows on every run (an exactly-once NATS sink) refuses such an
//! operator upstream: a filter's condition, a map's columns, the aggregates of a GROUP BY, a
//! window or an OVER window (here). A join's condition refuses such a call itself.

use std::sync::Arc;

use anduin_expr::{compile_aggregates, ExprSite, Scope};
use anduin_graph::VolatileCall;
use anduin_operator_api::Params;
use anduin_spec::{OperatorDef, Text};
use arrow::datatypes::SchemaRef;

/// Function `function`, called in the expression at `site` of param text `text`.
pub(crate) fn call_at(text: &Text, function: String, site: &ExprSite) -> VolatileCall {
    let pos = if site.line == 0 {
        text.pos()
    } else {
        text.pos_at_line_col(site.line, site.col)
    };
    VolatileCall { function, pos }
}

/// The first call, in the aggregates of operator `op` (param `aggregates`: their arguments and
/// their FILTER), of a function whose value changes from call to call: for a GROUP BY, a window
/// and an OVER window alike, whose aggregates read the rows of their one input. `None` if none,
/// or if they do not compile (the binding says why).
pub(crate) fn in_aggregates(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Option<VolatileCall> {
    let (stream, schema) = inputs.first()?;
    let text = Params::new(op).text("aggregates")?;
    let scope = Scope::new(*stream, Arc::clone(schema));
    compile_aggregates(text.as_str(), &scope)
        .ok()?
        .iter()
        .find_map(|a| Some(call_at(&text, a.volatile_function()?, &a.site)))
}
