//! `window`: aggregates over event-time windows: tumbling, sliding (hop), session, and
//! count windows, keyed or global, with DataFusion's aggregate functions.
//!
//! A window's result is emitted when the watermark passes its end plus `allowed_lateness` (at
//! the end of a bounded input, the watermark goes to +∞ and every window fires). Rows behind
//! that point, the window's cutoff (`running.rs`), are late: counted and dropped, or sent to
//! the output named by `late_output`. The output is append-only: a window fires once, so the
//! lateness delays its result instead of revising it (Spark's watermark delay, not Flink's
//! allowed lateness, which fires again for each late row). `allowed_lateness` can change
//! while the query runs ([`ADJUSTABLE`]). A row whose window would not fit in a timestamp
//! (an event time within a window length of either end of the `i64` range) goes to the dead
//! letters with the reason (`assign.rs`, `reject.rs`).
//! Sliding windows are built from panes (`gcd(size, slide)` long): each row is accumulated
//! once, into its pane, and a window merges the intermediate states of its panes.
//!
//! With `time_kind = "processing"` the windows are over processing time: the window's own
//! wall clock at the instant it processes a row, not the time column (`proctime.rs`).
//!
//! The open windows live in memory; checkpoints go through a keyed table
//! (`anduin_state::KeyedTable`, heap or LSM, `state_backend`), one entry per key and pane,
//! session or count window under the key's key group, written when changed (`entries.rs`).

mod accs;
pub(crate) mod assign;
mod count;
mod entries;
mod input;
pub(crate) mod keys;
#[cfg(test)]
mod lateness_tests;
mod moves;
#[cfg(test)]
mod order_tests;
mod output;
mod panes;
pub(crate) mod proctime;
#[cfg(test)]
mod proctime_tests;
pub(crate) mod reject;
mod running;
mod session;

use std::sync::Arc;

use anduin_expr::{compile_aggregates, CompiledAggregate, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{ColumnType, Diagnostics};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use keys::KeyCodec;
pub(crate) use running::Window;

/// The `window` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "window",
    doc: "aggregates rows per key over event-time windows; emits one row per window and key when the watermark passes the window's end",
    inputs: Arity::Exactly(1),
    outputs: Arity::AtLeast(1),
    stateful: true,
    params: &[
        ParamSpec {
            name: "kind",
            required: true,
            kind: ParamKind::OneOf(&["tumbling", "sliding", "hop", "cumulate", "session", "count"]),
            default: None,
            doc: "tumbling (fixed, back to back), sliding (`hop`: `size` long every `slide`), cumulate (from each multiple of `size`, windows growing by `step` up to `size`, as Flink's CUMULATE), session (rows of a key closer than `gap`), count (`size` rows of a key)",
        },
        ParamSpec {
            name: "size",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "tumbling and sliding: the window's length (\"1s\"); cumulate: the longest window's; count: the number of rows",
        },
        ParamSpec {
            name: "step",
            required: false,
            kind: ParamKind::Duration,
            default: None,
            doc: "cumulate: how much each window is longer than the one before (`size` is a multiple of it); a window fires when the watermark passes its end",
        },
        ParamSpec {
            name: "slide",
            required: false,
            kind: ParamKind::Duration,
            default: None,
            doc: "sliding: how far apart consecutive windows start",
        },
        ParamSpec {
            name: "gap",
            required: false,
            kind: ParamKind::Duration,
            default: None,
            doc: "session: rows of a key closer than this are in one session",
        },
        ParamSpec {
            name: "time",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the event-time column (a timestamp, or an int of epoch milliseconds)",
        },
        ParamSpec {
            name: "time_kind",
            required: false,
            kind: ParamKind::OneOf(&["event", "processing"]),
            default: Some("event"),
            doc: "event: the windows are over the `time` column, fired by the watermark; processing (tumbling and sliding only): over the wall clock at which the window processes each row (the `time` column is overwritten with it), fired when the clock passes their end, even without rows, as Flink's processing-time windows; results depend on timing",
        },
        ParamSpec {
            name: "keys",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the key columns, comma-separated; without it the window is global",
        },
        ParamSpec {
            name: "aggregates",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "aggregate columns: \"COUNT(*) AS cnt, AVG(CAST(value AS DOUBLE)) AS avg, MAX(value) AS max\"; any DataFusion aggregate, DISTINCT and FILTER (WHERE …) included",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "how many instances run the window, each owning a share of the keys (default: the query's --parallelism)",
        },
        ParamSpec {
            name: "late_output",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the name of an output of this operator that receives late rows (with the input's columns); without it late rows are counted and dropped",
        },
        ParamSpec {
            name: "allowed_lateness",
            required: false,
            kind: ParamKind::Duration,
            default: Some("0s"),
            doc: "how far behind the watermark a row may be and still count in its window: a window fires (once) when the watermark passes its end plus this, and the watermark it forwards is held back by as much; adjustable while running",
        },
        ParamSpec {
            name: "state_backend",
            required: false,
            kind: ParamKind::OneOf(&["heap", "lsm"]),
            default: Some("heap"),
            doc: "where the checkpointed copy of the open windows is kept: heap (memory) or lsm (an LSM tree on local disk); either way checkpoints write only what changed (default: the query's --state-backend)",
        },
        anduin_operator_api::ON_ERROR,
    ],
};

/// The params a running window can change.
pub const ADJUSTABLE: &[&str] = &["allowed_lateness"];

/// Which windows, with lengths in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowKind {
    /// `size` long every `slide` (tumbling when equal).
    Sliding { size: i64, slide: i64 },
    /// From each multiple of `size`, windows `step`, `2 step`, … up to `size` long.
    Cumulate { size: i64, step: i64 },
    /// Rows of a key closer than `gap`.
    Session { gap: i64 },
    /// Every `size` rows of a key.
    Count { size: u64 },
}

/// What a running window is built from.
#[derive(Debug, Clone)]
pub(crate) struct WindowSetup {
    pub name: String,
    pub kind: WindowKind,
    pub time_column: usize,
    /// Over processing time (`time_kind = "processing"`, `proctime.rs`).
    pub processing: bool,
    pub key_columns: Vec<usize>,
    pub codec: KeyCodec,
    pub aggs: Vec<CompiledAggregate>,
    /// The result schema: window_start, window_end, keys, aggregates.
    pub schema: SchemaRef,
    /// The output port of late rows, if any.
    pub late_port: Option<usize>,
    /// `allowed_lateness` as the query sets it, in milliseconds.
    pub allowed_lateness: i64,
    /// Where checkpointed state is kept.
    pub backend: BackendKind,
    /// Each aggregate's place in the query, for a row its arguments fail on.
    pub sites: Vec<anduin_operator_api::ExprAt>,
    /// The `on_error` param, if set.
    pub on_error: Option<anduin_operator_api::OnError>,
    /// The query file, for the place of an aggregate in an error (set as an instance is built).
    pub query_file: Option<Arc<str>>,
}

/// The first function a window's aggregates call (in their arguments or FILTER) whose value
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
    let Checked {
        setup,
        outputs,
        partition_by,
    } = check(op, inputs)?;
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            let setup = WindowSetup {
                query_file: ctx.query_file.clone(),
                ..setup.clone()
            };
            Ok(Box::new(Window::new(setup, ctx)?))
        })),
        outputs,
        warnings: Diagnostics::default(),
        partition_by,
    })
}

/// A window's params checked against its input: what its instances are built from.
pub(crate) struct Checked {
    pub setup: WindowSetup,
    pub outputs: Vec<SchemaRef>,
    pub partition_by: Vec<Option<Vec<usize>>>,
}

/// Checks a window's params and input (see [`bind`]).
pub(crate) fn check(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Result<Checked, Diagnostics> {
    let p = Params::new(op);
    let (stream, input) = inputs.first().expect("arity checked: one input");
    let column = |param: &str, name: &str| -> Result<usize, Diagnostics> {
        input.index_of(name).map_err(|_| {
            let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
            p.error(
                param,
                format!(
                    "unknown column `{name}`: stream `{stream}` has {}",
                    names.join(", ")
                ),
            )
            .into()
        })
    };
    let kind = window_kind(&p)?;
    let time_name = p.required("time").to_string();
    let time_column = column("time", time_name.trim())?;
    if !matches!(
        ColumnType::from_arrow(input.field(time_column).data_type()),
        Some(ColumnType::Timestamp | ColumnType::Int)
    ) {
        return Err(p
            .error(
                "time",
                format!("column `{time_name}` must be a timestamp or an int of epoch milliseconds"),
            )
            .into());
    }
    let processing = p.str_or("time_kind", "event").as_str() == "processing";
    if processing && !matches!(kind, WindowKind::Sliding { .. }) {
        return Err(p
            .error(
                "time_kind",
                "processing-time windows are tumbling or sliding: a cumulate, session or count window is over event time",
            )
            .into());
    }
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("keys") {
        for k in keys
            .as_str()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            key_columns.push(column("keys", k)?);
        }
    }
    let key_fields: Vec<Field> = key_columns
        .iter()
        .map(|i| input.field(*i).clone())
        .collect();
    let codec = KeyCodec::new(Arc::new(Schema::new(key_fields.clone())))
        .map_err(|e| Diagnostics::from(p.error("keys", e)))?;
    let text = p.required("aggregates");
    let replicated = op.asks_hot_standby();
    let aggs = compile_aggregates(text.as_str(), &Scope::new(*stream, Arc::clone(input)))
        .and_then(|aggs| {
            aggs.iter().try_for_each(|a| {
                crate::replica_safe::replica_safe(replicated, a.volatile_function(), &a.site)
            })?;
            Ok(aggs)
        })
        .map_err(|e| p.expr_error("aggregates", &text, e))?;
    let merging = match kind {
        WindowKind::Sliding { size, slide } if size != slide => {
            Some("a sliding window (it combines the states of its panes)")
        }
        WindowKind::Cumulate { size, step } if size != step => {
            Some("a cumulate window (it combines the states of its panes)")
        }
        WindowKind::Session { .. } => {
            Some("a session window (sessions that meet combine their states)")
        }
        _ => None,
    };
    if let Some(needs) = merging {
        if let Some(a) = aggs.iter().find(|a| a.without_merge().is_some()) {
            let e = anduin_expr::ExprError::at(
                a.site.line,
                a.site.col,
                format!(
                    "aggregate `{f}` has no `merge`, which {needs} needs: give it one (JavaScript: `export function merge(state1, state2)`; WebAssembly: `{f}_merge`), or use a tumbling window",
                    f = a.function_name()
                ),
            );
            return Err(p.expr_error("aggregates", &text, e));
        }
    }
    let sites = aggs
        .iter()
        .map(|a| {
            anduin_operator_api::ExprAt::new(format!("aggregate `{}`", a.name), &text, &a.site)
        })
        .collect();
    let mut fields = vec![
        Field::new(
            "window_start",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new(
            "window_end",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ];
    fields.extend(key_fields);
    for a in &aggs {
        let Some(t) = ColumnType::carrying(&a.data_type()) else {
            return Err(p
                .error(
                    "aggregates",
                    format!(
                        "aggregate `{}` is of type {}, which a stream cannot carry",
                        a.name,
                        a.data_type()
                    ),
                )
                .into());
        };
        fields.push(Field::new(&a.name, t.arrow_type(), true));
    }
    let names: std::collections::BTreeSet<&str> =
        fields.iter().map(|f| f.name().as_str()).collect();
    if names.len() != fields.len() {
        return Err(p
            .error("aggregates", "an aggregate has the name of a key or of window_start / window_end: rename it with `AS`")
            .into());
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let late_port = match p.text("late_output") {
        None => None,
        Some(name) => match op.outputs.iter().position(|o| o.name.as_str() == name.as_str()) {
            Some(0) | None => {
                return Err(p
                    .error("late_output", format!("name one of this operator's outputs other than the first (the results), e.g. add `output name = \"{name}\"`"))
                    .into())
            }
            Some(i) => Some(i),
        },
    };
    let allowed_lateness = match p.text("allowed_lateness") {
        None => 0,
        Some(text) => lateness_ms(text.as_str()).map_err(|e| p.error("allowed_lateness", e))?,
    };
    let expected_outputs = 1 + usize::from(late_port.is_some());
    if op.outputs.len() != expected_outputs {
        return Err(p
            .error(
                "late_output",
                format!("a window has one output (its results), and a second one only for `late_output`; found {}", op.outputs.len()),
            )
            .into());
    }
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
        if n > 1 && setup_keys_empty(&p) {
            return Err(p
                .error("parallelism", "a global window (without `keys`) cannot run in parallel: give it keys, or parallelism 1")
                .into());
        }
    }
    let mut outputs = vec![Arc::clone(&schema)];
    if late_port.is_some() {
        outputs.push(Arc::clone(input));
    }
    let partition_by = if key_columns.is_empty() {
        vec![None]
    } else {
        vec![Some(key_columns.clone())]
    };
    let setup = WindowSetup {
        name: op.name.to_string(),
        kind,
        time_column,
        processing,
        key_columns,
        codec,
        aggs,
        schema,
        late_port,
        allowed_lateness,
        backend: p.state_backend(),
        sites,
        on_error: anduin_operator_api::OnError::param(&p),
        query_file: None,
    };
    Ok(Checked {
        setup,
        outputs,
        partition_by,
    })
}

/// An `allowed_lateness` in milliseconds: a duration, zero or more ("0s", "500ms", "2m"). One
/// too long for a timestamp counts as the longest (`i64::MAX` ms, about 292 million years).
pub(crate) fn lateness_ms(text: &str) -> Result<i64, String> {
    let ms = anduin_types::duration_ms(text)
        .map_err(|e| format!("expected a duration such as \"5s\" or \"0s\": {e}"))?;
    Ok(i64::try_from(ms).unwrap_or(i64::MAX))
}

fn setup_keys_empty(p: &Params<'_>) -> bool {
    p.text("keys")
        .is_none_or(|k| k.as_str().split(',').all(|c| c.trim().is_empty()))
}

fn window_kind(p: &Params<'_>) -> Result<WindowKind, Diagnostics> {
    let duration = |name: &str| -> Result<i64, Diagnostics> {
        let text = p.text(name).ok_or_else(|| {
            Diagnostics::from(p.error(
                "kind",
                format!("this kind of window needs `param {name} = \"…\"`"),
            ))
        })?;
        match anduin_types::parse_duration_ms(text.as_str()) {
            Some(ms) if ms > 0 => Ok(i64::try_from(ms).unwrap_or(i64::MAX)),
            _ => Err(p
                .error(
                    name,
                    format!("expected a positive duration such as \"1s\", found \"{text}\""),
                )
                .into()),
        }
    };
    Ok(match p.str_or("kind", "tumbling").as_str() {
        "tumbling" => {
            let size = duration("size")?;
            WindowKind::Sliding { size, slide: size }
        }
        "sliding" | "hop" => {
            let size = duration("size")?;
            let slide = duration("slide")?;
            if slide > size {
                return Err(p.error("slide", "a slide longer than the window would skip rows; use a tumbling window or a shorter slide").into());
            }
            WindowKind::Sliding { size, slide }
        }
        "cumulate" => {
            let size = duration("size")?;
            let step = duration("step")?;
            if size % step != 0 {
                return Err(p
                    .error(
                        "size",
                        format!("a cumulate window's size ({size} ms) must be a multiple of its step ({step} ms)"),
                    )
                    .into());
            }
            WindowKind::Cumulate { size, step }
        }
        "session" => WindowKind::Session {
            gap: duration("gap")?,
        },
        _ => {
            let text = p.required("size");
            match text.as_str().parse::<u64>() {
                Ok(n) if n > 0 => WindowKind::Count { size: n },
                _ => {
                    return Err(p
                        .error(
                            "size",
                            format!("a count window's size is a number of rows, found \"{text}\""),
                        )
                        .into())
                }
            }
        }
    })
}
