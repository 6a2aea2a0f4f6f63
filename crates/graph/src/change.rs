//! Checking a change to a param of a running operator (a meta query, paper §4.5) before it is
//! applied: the param must be one its type can change while running, and the operator must
//! accept the new value as `anduin check` would accept it in the query — bound again against
//! the same inputs, with the same output columns (what it emits cannot change under the
//! operators that read it). Errors point into the value: `OPERATOR.PARAM:1:COL: …`; an error
//! that another param of the operator causes with the new value (a pattern that drops a
//! variable its measures read) names that param and no place.
//!
//! Params of one operator can depend on each other (a pattern's `define` names the variables
//! of its `pattern`): a change is checked with the values the earlier changes gave the
//! operator's other params, as the running operator has them.

use std::collections::BTreeMap;

use anduin_spec::Text;
use anduin_types::{Diagnostic, Diagnostics, Pos};

use crate::catalog::Catalog;
use crate::logical::{LogicalGraph, Node};
use crate::params::check_params;
use crate::schema::schema_mismatch;

/// Why a change is refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeRejected {
    /// The query has no operator of that name.
    UnknownOperator,
    /// The param cannot be changed while the operator runs.
    NotAdjustable {
        /// The params of the operator's type that can, in the catalog's order.
        adjustable: Vec<&'static str>,
        /// Whether the type has a param of that name at all.
        exists: bool,
    },
    /// The value is not valid for the param: the diagnostics, rendered with the value as
    /// their file (`OPERATOR.PARAM:1:COL: …`).
    Invalid(String),
}

/// Checks that `param` of `operator` in `graph` may become `value`, the operator's other
/// params being as the query declares them (see the module's documentation).
pub fn check_change<C: Catalog>(
    graph: &LogicalGraph<C::Bound>,
    catalog: &C,
    operator: &str,
    param: &str,
    value: &str,
) -> Result<(), ChangeRejected> {
    check_change_after(graph, catalog, operator, &BTreeMap::new(), param, value)
}

/// Why no param of `node` may change while the query runs, whatever its type allows (what
/// `anduin ctl params` then does not list, and `ctl set` refuses saying so); `None` when its
/// type's adjustable params may.
pub fn fixed_while_running<B>(graph: &LogicalGraph<B>, node: &Node<B>) -> Option<String> {
    let operator = node.name();
    // It takes its changes from a control stream only, so that a replay applies them at the
    // same point.
    if let Some(control) = &node.control {
        return Some(format!(
            "operator \"{operator}\" takes its changes from control stream \"{}\": send the change there (a row with operator, param and value), so that a replay applies it at the same point",
            control.stream
        ));
    }
    // The copies of a hot standby must compute the same rows: one changed alone would not.
    if node.def.asks_hot_standby() {
        return Some(format!(
            "operator \"{operator}\" is a copy of a hot standby: changing its params while it runs is not supported yet (its copies would no longer compute the same rows, and the stream selector would mix them)"
        ));
    }
    // Copies that spread partial matches run one definition: one changed alone would not.
    if node.def.spread_copies().is_some() {
        return Some(format!(
            "operator \"{operator}\" spreads its partial matches over copies (overflow_instances): changing its params while it runs is not supported yet (the copies would extend the matches they were handed under another definition)"
        ));
    }
    // A partitioned writer's directories are its path's: a new path would leave the pending
    // parts of every partition behind.
    if node.def.kind.as_str() == "writer" && node.def.param("partition_by").is_some() {
        return Some(format!(
            "operator \"{operator}\" is a partitioned writer (partition_by): its path cannot change while it runs"
        ));
    }
    // A filter that drops rows before a join relies on what the operators between a window
    // and the join compute (the planner names them in its `relies_on`).
    let relied_on_by = graph.nodes.iter().find(|n| {
        n.kind() == "extreme_filter"
            && n.def.param("relies_on").is_some_and(|p| {
                p.value
                    .as_text()
                    .as_str()
                    .split(',')
                    .any(|o| o.trim() == operator)
            })
    });
    if let Some(filter) = relied_on_by {
        return Some(format!(
            "operator \"{operator}\" computes what \"{}\" relies on to drop rows before a join (the extreme of a window): changing its params while it runs could join other rows than those it keeps (run with --no-join-pruning to change it)",
            filter.name()
        ));
    }
    // Over an updating stream, a row taken back is computed again when its retraction comes:
    // with other params in between, it would not match the row the operator passed on.
    let updating = node
        .data_inputs()
        .iter()
        .find(|s| graph.stream(**s).updating_from.is_some());
    if let (Some(s), false) = (updating, node.outputs.is_empty()) {
        return Some(format!(
            "operator \"{operator}\" reads the updating stream \"{}\": changing its params while it runs is not supported yet (the retraction of a row it passed before the change would be computed with the new value and no longer match, a wrong result)",
            graph.stream(*s).name
        ));
    }
    // A sink that numbers rows in their order of arrival must get the same rows after a
    // checkpoint in every run.
    if let Some(sink) = ordered_sink_downstream(graph, node) {
        return Some(format!(
            "operator \"{operator}\" feeds \"{sink}\", a NATS sink that writes exactly once by giving each row a message id from its place in the order the rows reach it: a change applied while the query runs lands between other rows in a run started again from a checkpoint, which would make other rows under the ids of those written before, and the stream would drop them as duplicates. Change it through a control stream with a `time` column (the change then applies by event time, at the same rows in every run), restart the query with the new value, or give \"{sink}\" `param delivery = \"at-least-once\"`"
        ));
    }
    None
}

/// The sink downstream of `node` that must read its rows in one order on every run
/// ([`anduin_spec::OperatorDef::needs_one_ordered_input`]), if there is one.
fn ordered_sink_downstream<B>(
    graph: &LogicalGraph<B>,
    node: &crate::logical::Node<B>,
) -> Option<String> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut next: Vec<crate::StreamId> = node.outputs.clone();
    while let Some(s) = next.pop() {
        for (consumer, _) in &graph.stream(s).consumers {
            if std::mem::replace(&mut seen[consumer.0], true) {
                continue;
            }
            let n = graph.node(*consumer);
            if n.def.needs_one_ordered_input() {
                return Some(n.name().to_string());
            }
            next.extend(n.outputs.iter().copied());
        }
    }
    None
}

/// Checks that `param` of `operator` in `graph` may become `value` after the changes that
/// gave the operator's params the values of `earlier` (param → its last new value); see the
/// module's documentation.
pub fn check_change_after<C: Catalog>(
    graph: &LogicalGraph<C::Bound>,
    catalog: &C,
    operator: &str,
    earlier: &BTreeMap<String, String>,
    param: &str,
    value: &str,
) -> Result<(), ChangeRejected> {
    let node = graph
        .nodes
        .iter()
        .find(|n| n.name() == operator)
        .ok_or(ChangeRejected::UnknownOperator)?;
    // Before the params its type could change: this operator takes none while it runs (and
    // `anduin ctl params` lists none of its).
    if let Some(why) = fixed_while_running(graph, node) {
        return Err(ChangeRejected::Invalid(why));
    }
    let adjustable = catalog.adjustable(node.kind());
    if !adjustable.contains(&param) {
        let exists = catalog
            .signature(node.kind())
            .is_some_and(|s| s.param(param).is_some());
        return Err(ChangeRejected::NotAdjustable { adjustable, exists });
    }
    let file = format!("{operator}.{param}");
    let invalid = |d: Diagnostics| ChangeRejected::Invalid(d.render(&file));
    let mut def = node.def.unplaced();
    for (p, v) in earlier.iter().filter(|(p, _)| p.as_str() != param) {
        def = def.with_param(p, Text::unplaced(v.as_str()));
    }
    let def = def.with_param(param, Text::at(value, Pos::new(1, 1)));
    if let Some(sig) = catalog.signature(node.kind()) {
        let mut diags = Diagnostics::default();
        check_params(&def, sig, &mut diags);
        if diags.has_errors() {
            return Err(invalid(diags));
        }
    }
    let inputs: Vec<(&str, arrow::datatypes::SchemaRef)> = node
        .data_inputs()
        .iter()
        .map(|s| {
            let stream = graph.stream(*s);
            (stream.name.as_str(), std::sync::Arc::clone(&stream.schema))
        })
        .collect();
    let declared: Vec<Option<arrow::datatypes::SchemaRef>> = node
        .outputs
        .iter()
        .map(|s| {
            let stream = graph.stream(*s);
            stream
                .type_name
                .as_ref()
                .map(|_| std::sync::Arc::clone(&stream.schema))
        })
        .collect();
    let binding = catalog.bind(&def, &inputs, &declared).map_err(invalid)?;
    for (s, new) in node.outputs.iter().zip(&binding.outputs) {
        let stream = graph.stream(*s);
        if let Some(mismatch) = schema_mismatch(&stream.schema, new.as_ref()) {
            return Err(invalid(
                Diagnostic::error(
                    Pos::new(1, 1),
                    format!(
                        "the new value changes the columns of output \"{}\" ({mismatch}); a running operator must keep emitting the same columns — change the query and restart it instead",
                        stream.name
                    ),
                )
                .into(),
            ));
        }
    }
    Ok(())
}
