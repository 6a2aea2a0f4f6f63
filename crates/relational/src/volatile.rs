//! Where an operator calls a function whose value changes from call to call (`random()`,
//! `uuid()`, `PROCTIME()`), for the planner ([`anduin_graph::Catalog::volatile_call`]): a sink
//! that must get the same rows on every run (an exactly-once NATS sink) refuses such an
//! operator upstream.

use anduin_expr::ExprSite;
use anduin_graph::VolatileCall;
use anduin_spec::Text;

/// Function `function`, called in the expression at `site` of param text `text`.
pub(crate) fn call_at(text: &Text, function: String, site: &ExprSite) -> VolatileCall {
    let pos = if site.line == 0 {
        text.pos()
    } else {
        text.pos_at_line_col(site.line, site.col)
    };
    VolatileCall { function, pos }
}
