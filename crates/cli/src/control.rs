//! The control plane of an embedded run: the query's [`Control`] handle, with the adjustable
//! params of its operators (their current values from the query) and a validator that checks
//! a change as `anduin check` checks the query ([`anduin_graph::check_change`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_graph::{check_change, Catalog, ChangeRejected, LogicalGraph, ParamKind};
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, ParamInfo};

/// The handle of query `name` (read from `file`), running `graph`.
pub fn control_of(name: &str, file: Option<String>, graph: Arc<LogicalGraph<Bound>>) -> Control {
    let params = adjustable_params(&graph);
    let query = name.to_string();
    let validate = move |r: &ChangeRequest| {
        check_change(&graph, &BuiltinCatalog, &r.operator, &r.param, &r.value)
            .map_err(|e| refusal(&query, r, e))
    };
    Control::new(name, file, params, Box::new(validate))
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
        let params: Vec<ParamInfo> = BuiltinCatalog
            .adjustable(node.kind())
            .into_iter()
            .filter_map(|name| sig.param(name))
            .map(|spec| ParamInfo {
                name: spec.name.to_string(),
                kind: kind_name(spec.name, spec.kind).to_string(),
                value: node
                    .def
                    .param(spec.name)
                    .map(|p| p.value.as_text().to_string())
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

/// A param's type, in words.
fn kind_name(param: &str, kind: ParamKind) -> &'static str {
    match (param, kind) {
        ("condition", _) => "expression",
        ("columns", _) => "expressions",
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
        ChangeRejected::NotAdjustable { adjustable, exists } => {
            let can = if adjustable.is_empty() {
                "it has no param that can".to_string()
            } else {
                format!("it can change: {}", adjustable.join(", "))
            };
            ControlFailure::NotAdjustable {
                operator: request.operator.clone(),
                param: request.param.clone(),
                adjustable: if exists {
                    can
                } else {
                    format!("it has no such param; {can}")
                },
            }
        }
        ChangeRejected::Invalid(message) => ControlFailure::Invalid {
            operator: request.operator.clone(),
            param: request.param.clone(),
            message,
        },
    }
}
