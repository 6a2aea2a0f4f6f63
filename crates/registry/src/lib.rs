//! anduin's registry of operator types: every built-in operator and connector, as the graph
//! checker sees them ([`BuiltinCatalog`], [`SIGNATURES`]), bound to factories of instances.
//!
//! This crate only assembles: the operators live in `anduin-relational` (filter, map, union,
//! window, join), `anduin-cep` (pattern) and `anduin-connectors` (sources and sinks), all
//! written against `anduin-operator-api`. No operator imports this crate.

use anduin_connectors::{discard, generator, kafka, nats, nexmark, reader, writer};
use std::sync::Arc;

use anduin_graph::{Binding, Catalog, ControlInput, OperatorSignature};
use anduin_operator_api::controlled::controlled;
use anduin_operator_api::Bound;
use anduin_relational::{
    extremes, filter, group, join, lookup_join, map, over, regular_join, selector, top_n, union,
    user_op, window,
};
use anduin_spec::OperatorDef;

/// The planner's rewrite that drops, before a join, the rows that can never equal the
/// extreme of a window they are joined with (`anduin_relational::extremes`).
pub use anduin_relational::extremes::rule::prune_extremes;
use anduin_types::{Diagnostic, Diagnostics};
use arrow::datatypes::SchemaRef;

/// Every built-in operator type, in the order of the reference.
pub static SIGNATURES: &[&OperatorSignature] = &[
    &reader::SIGNATURE,
    &generator::SIGNATURE,
    &nexmark::SIGNATURE,
    &writer::SIGNATURE,
    &discard::SIGNATURE,
    &kafka::SIGNATURE,
    &nats::SIGNATURE,
    &filter::SIGNATURE,
    &map::SIGNATURE,
    &union::SIGNATURE,
    &selector::SIGNATURE,
    &window::SIGNATURE,
    &group::SIGNATURE,
    &join::SIGNATURE,
    &extremes::SIGNATURE,
    &regular_join::SIGNATURE,
    &lookup_join::SIGNATURE,
    &top_n::SIGNATURE,
    &over::SIGNATURE,
    &user_op::SIGNATURE,
    &anduin_cep::SIGNATURE,
];

/// The catalog of built-in operators.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinCatalog;

impl Catalog for BuiltinCatalog {
    type Bound = Bound;

    fn signature(&self, kind: &str) -> Option<&OperatorSignature> {
        SIGNATURES.iter().copied().find(|s| s.kind == kind)
    }

    fn kinds(&self) -> Vec<&'static str> {
        SIGNATURES.iter().map(|s| s.kind).collect()
    }

    fn adjustable(&self, kind: &str) -> Vec<&'static str> {
        match kind {
            "filter" => filter::ADJUSTABLE.to_vec(),
            "map" => map::ADJUSTABLE.to_vec(),
            "generator" => generator::ADJUSTABLE.to_vec(),
            "reader" => reader::ADJUSTABLE.to_vec(),
            "writer" => writer::ADJUSTABLE.to_vec(),
            "window" => window::ADJUSTABLE.to_vec(),
            "pattern" => anduin_cep::ADJUSTABLE.to_vec(),
            _ => Vec::new(),
        }
    }

    fn consumes_updates(&self, op: &OperatorDef) -> Result<(), String> {
        match op.kind.as_str() {
            // Row by row: a change filtered or projected is still a change.
            "filter" | "map" | "discard" => Ok(()),
            "aggregate" | "regular_join" | "top_n" | "over" => Ok(()),
            "writer" => anduin_connectors::changelog::updates_accepted(
                &op.param("mode")
                    .map_or_else(|| "append".to_string(), |p| p.value.as_text().to_string()),
            ),
            "window" => Err("a window over an updating stream is not supported yet (its windows fire once, and cannot take rows back)".into()),
            "join" => Err("a join with a time bound of an updating stream is not supported yet (a regular join, without a time bound, takes one)".into()),
            "pattern" => Err("a row pattern over an updating stream is not supported yet".into()),
            "union" => Err("a union of updating streams is not supported yet".into()),
            _ => Err("it consumes append-only streams only".into()),
        }
    }

    fn survives_input_loss(&self, kind: &str) -> bool {
        kind == "stream-selector"
    }

    fn source_ends(&self, op: &OperatorDef) -> bool {
        let p = anduin_operator_api::Params::new(op);
        match op.kind.as_str() {
            "generator" => p.int("count").is_some(),
            "nexmark" => p.int("events").is_some(),
            "kafka" | "nats" => p.bool_or("bounded", false),
            // A reader reads files, or stdin to its end.
            _ => true,
        }
    }

    fn volatile_call(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
    ) -> Option<anduin_graph::VolatileCall> {
        match op.kind.as_str() {
            "filter" => filter::volatile_call(op, inputs),
            "map" => map::volatile_call(op, inputs),
            "aggregate" => group::volatile_call(op, inputs),
            "window" => window::volatile_call(op, inputs),
            "over" => over::volatile_call(op, inputs),
            "pattern" => anduin_cep::volatile_call(op, inputs),
            _ => None,
        }
    }

    fn feeds_back(
        &self,
        source: &OperatorDef,
        sink: &OperatorDef,
    ) -> Option<anduin_graph::FeedbackLoop> {
        match (source.kind.as_str(), sink.kind.as_str()) {
            ("nats", "nats") => nats::feeds_back(source, sink),
            ("kafka", "kafka") => kafka::feeds_back(source, sink),
            _ => None,
        }
    }

    fn input_that_must_end(&self, op: &OperatorDef) -> Option<(usize, &'static str)> {
        (op.kind.as_str() == "lookup_join").then_some((
            1,
            "reads its side table (its second input) to its end before it joins any row of the stream",
        ))
    }

    fn makes_updates(&self, op: &OperatorDef) -> bool {
        match op.kind.as_str() {
            "aggregate" => true,
            "regular_join" => regular_join::makes_updates(op),
            "top_n" => top_n::makes_updates(op),
            _ => false,
        }
    }

    fn with_control(
        &self,
        op: &OperatorDef,
        bound: Bound,
        data: &SchemaRef,
        control: &ControlInput,
    ) -> Result<Bound, Diagnostics> {
        let Bound::Operator(inner) = bound else {
            return Err(Diagnostic::error(
                op.pos,
                format!(
                    "source \"{}\" cannot take a control input: a control stream drives a filter or a map",
                    op.name
                ),
            )
            .into());
        };
        let initial = control
            .adjustable
            .iter()
            .filter_map(|p| {
                op.param(p)
                    .map(|v| (p.to_string(), v.value.as_text().to_string()))
            })
            .collect();
        Ok(Bound::Operator(controlled(
            op.name.as_str(),
            inner,
            control.clone(),
            Arc::clone(data),
            initial,
        )))
    }

    fn bind(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
        declared_outputs: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        match op.kind.as_str() {
            "reader" => reader::bind(op, declared_outputs),
            "generator" => generator::bind(op, declared_outputs),
            "nexmark" => nexmark::bind(op, declared_outputs),
            "writer" => writer::bind(op, inputs),
            "discard" => discard::bind(op),
            "kafka" => kafka::bind(op, inputs, declared_outputs),
            "nats" => nats::bind(op, inputs, declared_outputs),
            "filter" => filter::bind(op, inputs),
            "map" => map::bind(op, inputs),
            "union" => union::bind(op, inputs),
            "stream-selector" => selector::bind(op, inputs),
            "window" => window::bind(op, inputs),
            "aggregate" => group::bind(op, inputs),
            "join" => join::bind(op, inputs),
            "extreme_filter" => extremes::bind(op, inputs),
            "regular_join" => regular_join::bind(op, inputs),
            "lookup_join" => lookup_join::bind(op, inputs),
            "top_n" => top_n::bind(op, inputs),
            "over" => over::bind(op, inputs),
            "user_operator" => user_op::bind(op, inputs),
            "pattern" => anduin_cep::bind(op, inputs),
            other => Err(Diagnostic::error(
                op.kind.pos(),
                format!("unknown operator type `{other}`"),
            )
            .into()),
        }
    }
}
