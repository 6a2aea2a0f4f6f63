//! `extreme_filter`: drops the rows of a stream that can never equal the `MAX` (or `MIN`) of
//! a column over a tumbling window they are joined with, before the join buffers them.
//!
//! A stream `S` joined on `S.v = W.m` with `W`, the `MAX(v)` of `S` per tumbling window,
//! within an interval of the window's end (Nexmark's q7: every bid with the highest price of
//! its 10-second window) buffers every row of `S` in the join for as long as the interval
//! is open, though only the few rows at the top of each window can ever match. The planner
//! (`rule.rs`) puts this filter between `S` and both of its readers: the window reads every
//! row through it (output 1) and the join only the rows kept (output 0). The filter keeps,
//! per window, the best value of the rows counted so far (`best.rs`), and drops a row strictly
//! worse than the best of every window the join can pair it with. A row at a window's end
//! with `BETWEEN end - size AND end` reaches two windows (its own and the one it ends) and is
//! kept if it may match either; ties are kept.
//!
//! **Why no row it drops could match.** The window's extreme is at least (for `MAX`) the
//! value of every row the window counts, so the filter must count only rows the window
//! counts too. The window drops a row as late when it is before its cutoff (its watermark
//! less `allowed_lateness`); it reads its rows through this filter, after the filter, so its
//! watermark when a row reaches it is at most the filter's when the filter passed the row on:
//! a row not before the filter's watermark is not late at the window, whatever the window's
//! lateness, its parallelism or the order in which several producers' rows and watermarks
//! arrive. The filter counts only those (a row late here is not counted, but still judged by
//! the windows held). A row without a time or a value, or whose window does not fit in a
//! timestamp, is counted by neither and passes through (the join then does what it does
//! with it). Holding fewer windows, or none (after a window is let go, or on a restore from a
//! checkpoint without them), only keeps more rows: the state can shrink without changing a
//! result.
//!
//! **State.** A window's best value is held while a row on time can still be counted in it or
//! be joined with it, and let go when the watermark passes both; a handful of windows at a
//! time, kept inline in the checkpoint's manifest with the watermark. Instances restored at
//! another parallelism take, per window, the best over the old instances (each counted rows
//! the window counts).
//!
//! `prune = "off"` on the join (or `anduin run --no-join-pruning`) keeps the planner from
//! placing it.

mod best;
pub mod rule;
mod running;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_types::{ColumnType, Diagnostics};
use arrow::datatypes::{DataType, SchemaRef};

use best::{Extreme, Reach};
use running::ExtremeFilter;

/// The `extreme_filter` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "extreme_filter",
    doc: "passes every row on its second output and, on its first, only the rows that may still equal the MAX (or MIN) of `value` over a tumbling window they can be joined with (the planner places it before a join with such an aggregate)",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(2),
    stateful: true,
    params: &[
        ParamSpec { name: "value", required: true, kind: ParamKind::Text, default: None, doc: "the column whose extreme the window computes (an integer, a date or a timestamp)" },
        ParamSpec { name: "extreme", required: true, kind: ParamKind::OneOf(&["max", "min"]), default: None, doc: "max: a row below the best of a window cannot equal its MAX; min: a row above it cannot equal its MIN" },
        ParamSpec { name: "time", required: true, kind: ParamKind::Text, default: None, doc: "the event-time column, the window's and the join's" },
        ParamSpec { name: "size", required: true, kind: ParamKind::Duration, default: None, doc: "the tumbling window's length" },
        ParamSpec { name: "window_time", required: false, kind: ParamKind::OneOf(&["end", "start"]), default: Some("end"), doc: "which bound of a window the join compares a row's time with" },
        ParamSpec { name: "lower", required: true, kind: ParamKind::Text, default: None, doc: "a row at t can be joined with the windows whose bound (`window_time`) minus t is at least this, e.g. \"0s\"" },
        ParamSpec { name: "upper", required: true, kind: ParamKind::Text, default: None, doc: "… and at most this, e.g. \"10s\"" },
        ParamSpec { name: "relies_on", required: false, kind: ParamKind::Text, default: None, doc: "the operators between the window and the join, comma-separated, whose params may not change while the query runs (the filter relies on what they compute)" },
    ],
};

/// The most windows a row may be joined with: beyond, judging a row costs too much.
pub const MOST_WINDOWS: i128 = 64;

/// What a running filter is built from.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub name: String,
    pub value: usize,
    pub time: usize,
    pub extreme: Extreme,
    pub reach: Reach,
}

/// Whether a column of `data_type` can be compared as the filter compares values (as
/// 64-bit integers, in the order `MAX` and `MIN` use).
pub fn comparable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(_, _)
    )
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, input) = inputs.first().expect("arity checked: one input");
    let column = |param: &str| -> Result<usize, Diagnostics> {
        let name = p.required(param).to_string();
        input.index_of(name.trim()).map_err(|_| {
            Diagnostics::from(p.error(
                param,
                format!("unknown column `{name}` in input `{stream}`"),
            ))
        })
    };
    let value = column("value")?;
    if !comparable(input.field(value).data_type()) {
        return Err(p
            .error(
                "value",
                format!(
                    "column `{}` is of type {}: the filter compares integers, dates and timestamps",
                    input.field(value).name(),
                    input.field(value).data_type()
                ),
            )
            .into());
    }
    let time = column("time")?;
    if !matches!(
        ColumnType::from_arrow(input.field(time).data_type()),
        Some(ColumnType::Timestamp | ColumnType::Int)
    ) {
        return Err(p
            .error(
                "time",
                "the time column must be a timestamp or an int of epoch milliseconds",
            )
            .into());
    }
    let size = anduin_types::parse_duration_ms(p.required("size").as_str())
        .and_then(|ms| i64::try_from(ms).ok())
        .filter(|ms| *ms > 0)
        .ok_or_else(|| {
            Diagnostics::from(p.error("size", "expected a positive duration, e.g. \"10s\""))
        })?;
    let bound = |name: &str| -> Result<i64, Diagnostics> {
        let text = p.required(name);
        crate::join::signed_duration(text.as_str()).ok_or_else(|| {
            p.error(
                name,
                format!("expected a duration such as \"-5s\" or \"5s\", found \"{text}\""),
            )
            .into()
        })
    };
    let (lower, upper) = (bound("lower")?, bound("upper")?);
    if lower > upper {
        return Err(p.error("lower", "`lower` is after `upper`").into());
    }
    let reach = Reach {
        size,
        at_end: p.str_or("window_time", "end") == "end",
        lower,
        upper,
    };
    if reach.most_windows() > MOST_WINDOWS {
        return Err(p
            .error(
                "upper",
                format!("a row could be joined with up to {} windows: at most {MOST_WINDOWS} are judged", reach.most_windows()),
            )
            .into());
    }
    let extreme = if p.str_or("extreme", "max") == "min" {
        Extreme::Min
    } else {
        Extreme::Max
    };
    let setup = Setup {
        name: op.name.to_string(),
        value,
        time,
        extreme,
        reach,
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_ctx| {
            Ok(Box::new(ExtremeFilter::new(setup.clone())))
        })),
        outputs: vec![Arc::clone(input), Arc::clone(input)],
        warnings: Diagnostics::default(),
        partition_by: vec![None],
    })
}

#[cfg(test)]
mod tests;
