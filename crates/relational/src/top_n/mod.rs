//! `top_n`: per partition key, the first `limit` rows in an order (SQL's `ROW_NUMBER() OVER
//! (PARTITION BY … ORDER BY …)` filtered by `rn <= N`, Flink's Top-N), and deduplication
//! (`rn = 1`). Its output is an updating stream (see `anduin_types::change`): a row that
//! enters the first `limit` of its partition is inserted (`+I`), one that leaves them deleted
//! (`-D`); with `rank_column`, each row carries its rank and a rank whose row changed is
//! updated (`-U` then `+U`). A partition of one row (`limit = 1`) updates its row in place.
//!
//! Its input may be append-only, or updating (a `GROUP BY`, a regular join): a `+I` or `+U`
//! row is added to its partition, a `-U` or `-D` row taken out of it. Rows of equal order
//! values rank by arrival, the earliest first. Of an append-only input only the first
//! `limit` rows of each partition are kept (a row past them can never come back); of an
//! updating one every row is kept, since taking one of the first out brings the next in.
//! `ORDER BY` puts nulls first for `ASC` and last for `DESC` unless told (`NULLS FIRST`,
//! `NULLS LAST`), as Flink does. The changes a batch makes are emitted after it, per
//! partition touched (a mini-batch of one input batch).
//!
//! Deduplication by event time (`time` set to the event-time column, `limit = 1`):
//! - ordered by `time` (ascending), of an append-only input, it **keeps the first** row of
//!   each key: it holds the earliest row seen until the watermark passes its time, then
//!   emits it once (`+I`) and drops every later row of the key. The output is append-only.
//! - ordered by `time DESC`, it **keeps the last**: the latest row (of equal times, the one
//!   that came last) replaces the previous one (`-U`, `+U`).
//!
//! Window top-N (`window_end` set to a key column holding each row's window end, the keys
//! holding a window's bounds): of an append-only input, each window's first `limit` rows
//! (per the other keys) are held until the watermark reaches the window's end, then emitted
//! once with their rank and their state dropped; the output is append-only (`windowed.rs`).
//! Of an updating input the param is ignored: the running top-N ranks the rows.
//!
//! The partitions live in memory; checkpoints go through a keyed table (heap or LSM), one
//! entry per partition under its key's group key, written when changed (`running.rs`), so
//! the operator rescales by key group like the aggregate.

mod entry;
mod rank;
mod rows;
mod running;
mod windowed;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{
    change_column, is_updating, with_row_key_of, without_row_key, Diagnostics, CHANGE_COLUMN,
};
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::window::keys::KeyCodec;
use rank::Ties;
use running::TopN;
use windowed::WindowTopN;

/// The `top_n` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "top_n",
    doc: "keeps per key the first rows in an order (top-N, ROW_NUMBER() … WHERE rn <= N) and deduplicates (limit 1); emits each row entering or leaving them (+I, -U, +U, -D): an updating stream, except keep-first deduplication by event time",
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
            name: "order",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the order of rows in a partition: \"price DESC, ts\" (ASC by default; NULLS FIRST or NULLS LAST, by default nulls rank as the smallest value)",
        },
        ParamSpec {
            name: "limit",
            required: true,
            kind: ParamKind::Int,
            default: None,
            doc: "how many rows of each partition are in the output (N of rn <= N)",
        },
        ParamSpec {
            name: "rank_column",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "a BIGINT column added to the output with each row's rank (1 for the first); without it the output has the input's columns, and a change of rank alone emits nothing",
        },
        ParamSpec {
            name: "time",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the event-time column; with limit 1 and order \"<time>\" (ASC) the first row of each key is kept and emitted once the watermark passes it (append-only output); with order \"<time> DESC\" the last row is kept, of equal times the latest to come",
        },
        ParamSpec {
            name: "window_end",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the column of `keys` holding each row's window end, when `keys` hold a window's bounds (a window aggregate's results, a windowing table function's rows): of an append-only input, a window top-N — each window's first rows are emitted once, with their rank, when the watermark reaches its end, and its state dropped (append-only output; late rows dropped)",
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
    ],
};

/// How a running top-N treats its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Rows ranked by the order: the output follows the first `limit` of each partition.
    Ranked(Ties),
    /// Keep-first deduplication by event time: each key's earliest row, emitted once the
    /// watermark passes it.
    KeepFirst,
}

/// What a running top-N is built from.
#[derive(Debug, Clone)]
pub(crate) struct TopSetup {
    pub name: String,
    pub key_columns: Vec<usize>,
    pub codec: KeyCodec,
    /// The input's columns but the change kind: a row's values.
    pub values: Vec<usize>,
    /// The order columns and how each sorts.
    pub order: Vec<(usize, SortOptions)>,
    pub limit: usize,
    pub mode: Mode,
    /// The event-time column (keep-first).
    pub time: Option<usize>,
    /// The output: the values, the rank if asked, the change kind unless keep-first.
    pub schema: SchemaRef,
    /// Whether the output carries the rank.
    pub ranked: bool,
    /// The input's change-kind column, if the input is updating.
    pub change_in: Option<usize>,
    pub backend: BackendKind,
    /// The state time-to-live in ms (`state_ttl`; 0: none).
    pub ttl_ms: u64,
}

/// `name` without the double quotes of a quoted identifier.
pub(crate) fn unquoted(name: &str) -> String {
    let name = name.trim();
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => name.to_string(),
    }
}

/// One item of `order`: a column, `ASC`/`DESC`, `NULLS FIRST`/`NULLS LAST`.
fn order_item(item: &str) -> Result<(String, SortOptions), String> {
    let mut words: Vec<&str> = item.split_whitespace().collect();
    let upper = |w: Option<&&str>| w.map(|w| w.to_ascii_uppercase());
    let mut nulls_first = None;
    if words.len() >= 3 && upper(words.get(words.len() - 2)).as_deref() == Some("NULLS") {
        nulls_first = match upper(words.last()).as_deref() {
            Some("FIRST") => Some(true),
            Some("LAST") => Some(false),
            _ => return Err(format!("`{item}`: NULLS FIRST or NULLS LAST")),
        };
        words.truncate(words.len() - 2);
    }
    let mut descending = false;
    match upper(words.last()).as_deref() {
        Some("DESC") => {
            descending = true;
            words.pop();
        }
        Some("ASC") => {
            words.pop();
        }
        _ => {}
    }
    if words.is_empty() {
        return Err(format!("`{item}` names no column"));
    }
    let column = unquoted(&words.join(" "));
    // Nulls are the smallest value (Flink's default): first ascending, last descending.
    let nulls_first = nulls_first.unwrap_or(!descending);
    Ok((
        column,
        SortOptions {
            descending,
            nulls_first,
        },
    ))
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, input) = inputs.first().expect("arity checked: one input");
    let change_in = is_updating(input).then(|| input.fields().len() - 1);
    let column = |param: &str, name: &str| -> Result<usize, Diagnostics> {
        match input.index_of(name) {
            Ok(i) if Some(i) != change_in => Ok(i),
            _ => {
                let names: Vec<&str> = input
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .filter(|n| *n != CHANGE_COLUMN)
                    .collect();
                Err(p
                    .error(
                        param,
                        format!(
                            "unknown column `{name}`: stream `{stream}` has {}",
                            names.join(", ")
                        ),
                    )
                    .into())
            }
        }
    };
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("keys") {
        for k in keys.as_str().split(',').filter(|k| !k.trim().is_empty()) {
            let i = column("keys", &unquoted(k))?;
            if !key_columns.contains(&i) {
                key_columns.push(i);
            }
        }
    }
    let mut order = Vec::new();
    let text = p.required("order");
    for item in text.as_str().split(',') {
        let (name, options) = order_item(item).map_err(|m| p.error("order", m))?;
        order.push((column("order", &name)?, options));
    }
    let limit = match p.int("limit") {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Err(p.error("limit", "must be at least 1").into()),
    };
    let time = match p.text("time") {
        None => None,
        Some(t) => {
            let i = column("time", &unquoted(t.as_str()))?;
            match input.field(i).data_type() {
                DataType::Int64 | DataType::Timestamp(TimeUnit::Millisecond, _) => Some(i),
                other => {
                    return Err(p
                        .error(
                            "time",
                            format!("the event-time column is a {other}: a timestamp or an int of epoch milliseconds"),
                        )
                        .into())
                }
            }
        }
    };
    let window_end = match p.text("window_end") {
        None => None,
        Some(t) => {
            let i = column("window_end", &unquoted(t.as_str()))?;
            if !key_columns.contains(&i) {
                return Err(p
                    .error(
                        "window_end",
                        format!("`{}` is not one of `keys`: a window top-N is partitioned by its window", t.as_str()),
                    )
                    .into());
            }
            match input.field(i).data_type() {
                DataType::Int64 | DataType::Timestamp(TimeUnit::Millisecond, _) => Some(i),
                other => {
                    return Err(p
                        .error(
                            "window_end",
                            format!("the window end is a {other}: a timestamp or an int of epoch milliseconds"),
                        )
                        .into())
                }
            }
        }
    };
    // Of an updating input, a window's rows may still change after it ends: the running
    // top-N ranks them.
    let windowed = window_end.filter(|_| change_in.is_none());
    let by_time = |descending: bool| {
        limit == 1
            && matches!(order.as_slice(), [(c, o)] if Some(*c) == time && o.descending == descending)
    };
    let mode = if by_time(false) && change_in.is_none() && windowed.is_none() {
        Mode::KeepFirst
    } else if by_time(true) {
        Mode::Ranked(Ties::Latest)
    } else {
        Mode::Ranked(Ties::Earliest)
    };
    let values: Vec<usize> = (0..input.fields().len())
        .filter(|i| Some(*i) != change_in)
        .collect();
    let mut fields: Vec<Field> = values
        .iter()
        .map(|i| {
            let f = input.field(*i);
            Field::new(f.name(), f.data_type().clone(), true)
        })
        .collect();
    let rank_column = p.text("rank_column").map(|t| unquoted(t.as_str()));
    if let Some(r) = &rank_column {
        if fields.iter().any(|f| f.name() == r) || r == CHANGE_COLUMN {
            return Err(p
                .error(
                    "rank_column",
                    format!(
                        "stream `{stream}` has a column `{r}` already: name the rank otherwise"
                    ),
                )
                .into());
        }
        fields.push(Field::new(r, DataType::Int64, false));
    }
    // A row of the output is identified by its key and rank, or by its key alone in a
    // partition of one row.
    let mut row_key: Option<Vec<usize>> = None;
    let key_at = |c: &usize| values.iter().position(|v| v == c).unwrap_or(0);
    if rank_column.is_some() {
        let mut k: Vec<usize> = key_columns.iter().map(key_at).collect();
        k.push(values.len());
        row_key = Some(k);
    } else if limit == 1 {
        row_key = Some(key_columns.iter().map(key_at).collect());
    }
    let schema: SchemaRef = if mode == Mode::KeepFirst || windowed.is_some() {
        Arc::new(Schema::new(fields))
    } else {
        fields.push(change_column());
        // A hidden column the SQL planner computed for an expression of PARTITION BY has a
        // name the user never wrote: said as what it is.
        let partition: Vec<String> = key_columns
            .iter()
            .map(|i| input.field(*i).name())
            .map(|n| match n.starts_with("__") {
                true => "an expression of PARTITION BY (select it as a column, `… AS p`, and partition by that)".to_string(),
                false => format!("`{n}`"),
            })
            .collect();
        let partition = if partition.is_empty() {
            "no partition column".to_string()
        } else {
            partition.join(", ")
        };
        Arc::new(match &row_key {
            Some(k) if rank_column.is_some() => with_row_key_of(
                fields,
                k,
                "the top-N's partition columns and its row number",
            ),
            Some(k) => with_row_key_of(fields, k, "the top-N's partition columns (one row each)"),
            None => without_row_key(
                fields,
                &format!(
                    "a top-N keeps up to {limit} rows per partition ({partition}), told apart by their row number: select the row number (`… AS rn` of ROW_NUMBER()) and put it in the primary key with the partition columns, or write with mode = 'changelog'"
                ),
            ),
        })
    };
    let key_fields: Vec<Field> = key_columns
        .iter()
        .map(|i| input.field(*i).clone())
        .collect();
    let codec = KeyCodec::new(Arc::new(Schema::new(key_fields)))
        .map_err(|e| Diagnostics::from(p.error("keys", e)))?;
    let partition_by = crate::window::keys::partitioned_by(
        &p,
        &key_columns,
        "a top-N without `keys` (one partition)",
    )?;
    let setup = TopSetup {
        name: op.name.to_string(),
        key_columns,
        codec,
        values,
        order,
        limit,
        mode,
        time,
        schema: Arc::clone(&schema),
        ranked: rank_column.is_some(),
        change_in,
        backend: p.state_backend(),
        ttl_ms: crate::ttl::ttl_ms(&p),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| match windowed {
            Some(end) => Ok(Box::new(WindowTopN::new(setup.clone(), end, ctx)?)),
            None => Ok(Box::new(TopN::new(setup.clone(), ctx)?)),
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by,
    })
}

/// Whether a `top_n` with these params makes an updating stream of an append-only input:
/// every one but the keep-first deduplication by event time and the window top-N.
pub fn makes_updates(op: &OperatorDef) -> bool {
    let param = |n: &str| op.param(n).map(|p| p.value.as_text().to_string());
    let keep_first = param("limit").is_some_and(|l| l.trim() == "1")
        && match (param("time"), param("order")) {
            (Some(t), Some(o)) => order_item(&o).is_ok_and(|(c, options)| {
                c == unquoted(&t) && !options.descending && !o.contains(',')
            }),
            _ => false,
        };
    !keep_first && op.param("window_end").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_item_reads_its_direction_and_nulls_with_flink_s_defaults() {
        let item = |s: &str| order_item(s).map(|(c, o)| (c, o.descending, o.nulls_first));
        assert_eq!(item(" price "), Ok(("price".into(), false, true)));
        assert_eq!(item("price desc"), Ok(("price".into(), true, false)));
        assert_eq!(
            item("\"dateTime\" ASC NULLS LAST"),
            Ok(("dateTime".into(), false, false))
        );
        assert_eq!(item("v DESC NULLS FIRST"), Ok(("v".into(), true, true)));
        assert!(item("DESC").is_err());
        assert!(item("v NULLS SOMEWHERE").is_err());
    }
}
