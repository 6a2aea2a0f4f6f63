//! `over`: aggregates over a window of rows ending at each row (SQL's `agg(…) OVER
//! (PARTITION BY … ORDER BY <event time> ROWS|RANGE BETWEEN … PRECEDING AND CURRENT ROW)`,
//! Flink's OVER aggregation). Each input row comes out once, with its columns and one column
//! per aggregate, computed over the rows of its partition up to it in event-time order: the
//! `n` rows before it (`rows n`), the rows at most `x` older (`range x`, the row's peers of
//! equal time included), or every row before it (`unbounded`).
//!
//! Over an append-only input its output is append-only. As Flink does, it holds each row
//! until the watermark passes the row's time, then emits the rows of each partition in
//! event-time order (of equal times, in the order they came); a row whose time is not after
//! the last row its partition emitted is late and dropped (counted in `late_rows_dropped`). A
//! row without an event time goes to the dead letters. The aggregates (`COUNT`, `SUM`, `AVG`, `MIN`, `MAX`, `COUNT(DISTINCT …)`, each with
//! an optional `FILTER (WHERE …)`) are those of the updating `aggregate`, kept incrementally:
//! a row entering the frame is added, one leaving it taken out (`frame.rs`).
//!
//! Over an updating input (which Flink refuses) its output is updating: the OVER window of
//! the table the input's changes describe, kept up to date as RisingWave keeps its OVER
//! windows over changes. Each change takes back the results it alters (of its row, and of the
//! rows after it whose frames held or now hold it) and emits them anew; nothing waits for the
//! watermark and no row is late; rows of one time are ordered by their values, so that a
//! `ROWS` frame does not depend on when they came (`updating.rs`, `changes.rs`).
//!
//! The partitions live in memory; checkpoints go through a keyed table (heap or LSM), one
//! entry per partition under its key's group key, written when changed (`running.rs`), so the
//! operator rescales by key group as `top_n` does.

mod changes;
mod entry;
mod frame;
#[cfg(test)]
mod order_tests;
mod running;
mod updating;

use std::sync::Arc;

use anduin_expr::{compile_aggregates, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{is_updating, Diagnostics};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;

use crate::group::acc::AggPlan;
use crate::window::keys::KeyCodec;
pub(crate) use frame::Frame;
use running::Over;
use updating::UpdatingOver;

/// The `over` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "over",
    doc: "aggregates per key over the rows up to each row in event-time order (SQL's agg(…) OVER (PARTITION BY … ORDER BY time ROWS|RANGE BETWEEN … PRECEDING AND CURRENT ROW)); emits each row once the watermark passes it, with its aggregates: append-only. Over an updating stream it keeps the results of the rows the changes describe: updating (each change takes back the results it alters and emits them anew)",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec {
            name: "keys",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the partition key columns, comma-separated; without it one partition holds every row",
        },
        ParamSpec {
            name: "time",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the event-time column the rows are ordered by (ascending)",
        },
        ParamSpec {
            name: "frame",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the rows before each row that its aggregates cover: \"rows 10\" (the 10 rows before it), \"range 1 minute\" (the rows at most a minute older, its peers of equal time included), \"rows unbounded\" or \"range unbounded\" (every row before it)",
        },
        ParamSpec {
            name: "aggregates",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "aggregate columns added to each row: \"AVG(price) AS avg_price, COUNT(*) AS n\"; COUNT, SUM, AVG, MIN, MAX, COUNT(DISTINCT …), each with an optional FILTER (WHERE …)",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "how many instances run it, each owning a share of the keys (default: the query's --parallelism)",
        },
        ParamSpec {
            name: "state_backend",
            required: false,
            kind: ParamKind::OneOf(&["heap", "lsm"]),
            default: Some("heap"),
            doc: "where the checkpointed copy of the partitions is kept: heap (memory) or lsm (an LSM tree on local disk); either way checkpoints write only the partitions that changed (default: the query's --state-backend)",
        },
        crate::ttl::STATE_TTL,
        anduin_operator_api::ON_ERROR,
    ],
};

/// What a running OVER window is built from.
#[derive(Debug, Clone)]
pub(crate) struct OverSetup {
    pub name: String,
    pub key_columns: Vec<usize>,
    pub codec: KeyCodec,
    pub time: usize,
    pub frame: Frame,
    pub aggs: Vec<anduin_expr::CompiledAggregate>,
    pub plans: Vec<AggPlan>,
    /// Each aggregate's argument type, as the arguments are kept.
    pub arg_types: Vec<DataType>,
    /// The results: the input's columns (but an updating input's change kind), then the
    /// aggregates.
    pub schema: SchemaRef,
    pub backend: BackendKind,
    /// The state time-to-live in ms (`state_ttl`; 0: none).
    pub ttl_ms: u64,
    pub sites: Vec<anduin_operator_api::ExprAt>,
    pub on_error: Option<anduin_operator_api::OnError>,
}

/// The frame `text` names: `rows N`, `range DURATION`, `rows unbounded`, `range unbounded`.
pub(crate) fn parse_frame(text: &str) -> Result<Frame, String> {
    let text = text.trim();
    let (unit, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    let unbounded = rest.eq_ignore_ascii_case("unbounded");
    match unit.to_ascii_lowercase().as_str() {
        "rows" if unbounded => Ok(Frame::Rows(None)),
        "range" if unbounded => Ok(Frame::Range(None)),
        "rows" => rest
            .parse::<u64>()
            .map(|n| Frame::Rows(Some(n)))
            .map_err(|_| format!("`{text}`: rows takes how many rows before each row, a whole number (or `unbounded`)")),
        "range" => anduin_types::duration_ms(rest)
            .map_err(|e| format!("`{text}`: range takes a duration (or `unbounded`): {e}"))
            .and_then(|ms| {
                i64::try_from(ms)
                    .map(|ms| Frame::Range(Some(ms)))
                    .map_err(|_| format!("`{text}`: the duration is too long"))
            }),
        _ => Err(format!(
            "`{text}`: a frame is `rows N`, `range DURATION`, `rows unbounded` or `range unbounded`"
        )),
    }
}

/// The first function an OVER window's aggregates call (in their arguments or FILTER) whose value
/// changes from call to call, and where (see [`anduin_graph::Catalog::volatile_call`]); `None`
/// if none, or if they do not compile (the binding says why).
pub fn volatile_call(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Option<anduin_graph::VolatileCall> {
    crate::volatile::in_aggregates(op, inputs)
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, input) = inputs.first().expect("arity checked: one input");
    let updating = is_updating(input);
    let column = |param: &str, name: &str| -> Result<usize, Diagnostics> {
        input.index_of(name).map_err(|_| {
            let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
            Diagnostics::from(p.error(
                param,
                format!(
                    "unknown column `{name}`: stream `{stream}` has {}",
                    names.join(", ")
                ),
            ))
        })
    };
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("keys") {
        for k in keys.as_str().split(',').filter(|k| !k.trim().is_empty()) {
            let i = column("keys", &crate::top_n::unquoted(k))?;
            if !key_columns.contains(&i) {
                key_columns.push(i);
            }
        }
    }
    let time_text = p.required("time");
    let time = column("time", &crate::top_n::unquoted(time_text.as_str()))?;
    match input.field(time).data_type() {
        DataType::Int64 | DataType::Timestamp(TimeUnit::Millisecond, _) => {}
        other => {
            return Err(p
                .error(
                    "time",
                    format!("the event-time column is a {other}: a timestamp or an int of epoch milliseconds"),
                )
                .into())
        }
    }
    let frame = parse_frame(p.required("frame").as_str())
        .map_err(|m| Diagnostics::from(p.error("frame", m)))?;
    let text = p.required("aggregates");
    let aggs = compile_aggregates(text.as_str(), &Scope::new(*stream, Arc::clone(input)))
        .map(|aggs| {
            // `AVG` of integers adds them exactly, as the updating aggregate does.
            aggs.into_iter()
                .map(|a| match a.function_name() {
                    "avg" => a.with_integer_argument(),
                    _ => a,
                })
                .collect::<Vec<_>>()
        })
        .map_err(|e| p.expr_error("aggregates", &text, e))?;
    let sites = aggs
        .iter()
        .map(|a| {
            anduin_operator_api::ExprAt::new(format!("aggregate `{}`", a.name), &text, &a.site)
        })
        .collect();
    let empty = RecordBatch::new_empty(Arc::clone(input));
    let mut plans = Vec::new();
    let mut arg_types = Vec::new();
    // The input's columns, but an updating input's change kind (which comes last).
    let columns = input.fields().len() - usize::from(updating);
    let mut fields: Vec<Field> = (input.fields().iter().take(columns))
        .map(|f| f.as_ref().clone())
        .collect();
    for a in &aggs {
        let (plan, arg_type, field) =
            crate::group::plan_aggregate(&p, a, &empty, "in an OVER window", false)?;
        plans.push(plan);
        arg_types.push(arg_type);
        fields.push(field);
    }
    let names: std::collections::BTreeSet<&str> =
        fields.iter().map(|f| f.name().as_str()).collect();
    if names.len() != fields.len() {
        return Err(p
            .error(
                "aggregates",
                "an aggregate has the name of a column of the input or of another aggregate: rename it with `AS`",
            )
            .into());
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let key_fields: Vec<Field> = key_columns
        .iter()
        .map(|i| input.field(*i).clone())
        .collect();
    let codec = KeyCodec::new(Arc::new(Schema::new(key_fields)))
        .map_err(|e| Diagnostics::from(p.error("keys", e)))?;
    let partition_by = crate::window::keys::partitioned_by(
        &p,
        &key_columns,
        "an OVER window without `keys` (one partition)",
    )?;
    let setup = OverSetup {
        name: op.name.to_string(),
        key_columns,
        codec,
        time,
        frame,
        aggs,
        plans,
        arg_types,
        schema: Arc::clone(&schema),
        backend: p.state_backend(),
        ttl_ms: crate::ttl::ttl_ms(&p),
        sites,
        on_error: anduin_operator_api::OnError::param(&p),
    };
    if updating {
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(anduin_types::change_column()));
        return Ok(Binding {
            bound: Bound::Operator(Arc::new(move |ctx| {
                Ok(Box::new(UpdatingOver::new(setup.clone(), ctx)?))
            })),
            outputs: vec![Arc::new(Schema::new(fields))],
            warnings: Diagnostics::default(),
            partition_by,
        });
    }
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(Over::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_rows_or_range_bounded_or_not() {
        assert_eq!(parse_frame("rows 10"), Ok(Frame::Rows(Some(10))));
        assert_eq!(parse_frame(" ROWS  unbounded "), Ok(Frame::Rows(None)));
        assert_eq!(
            parse_frame("range 1 minute"),
            Ok(Frame::Range(Some(60_000)))
        );
        assert_eq!(parse_frame("range 250ms"), Ok(Frame::Range(Some(250))));
        assert_eq!(parse_frame("range unbounded"), Ok(Frame::Range(None)));
        assert!(parse_frame("rows -1").is_err());
        assert!(parse_frame("range 10").is_err_and(|e| e.contains("duration")));
        assert!(parse_frame("groups 2").is_err());
    }
}
