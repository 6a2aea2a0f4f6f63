//! `join`: joins two keyed streams on equal keys and close event times. An interval join
//! pairs rows whose times are within bounds of each other (`right.time - left.time` in
//! `[lower, upper]`); a window join pairs rows of the same tumbling window. Inner or left
//! outer. A row with a null key column pairs with no row (SQL's `NULL = NULL` is not true):
//! it is not buffered, and a left join emits such a left row at once, with nulls on the right.
//! Buffered rows are dropped as soon as the watermark says no partner can come, so
//! the state is bounded by the watermark. The rows live in memory; checkpoints keep a copy
//! in the state backend (heap or LSM), one entry per key under its key group, written for
//! the keys that changed since the previous checkpoint.
//!
//! A buffered row holds only the columns the rest of the query reads (`keep`, which the SQL
//! planner sets), copied out of its input batch into a batch of the rows buffered from it:
//! the input batch, its unread columns and its rows that are late or dropped are let go at
//! once (`store.rs`). Keys and times are read from the input before that, so that neither
//! needs to be kept unless read.

mod checkpoint;
pub(crate) mod codec;
mod output;
mod running;
#[cfg(test)]
mod state_tests;
mod store;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{parse_duration_ms, ColumnType, Diagnostics};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use sqlparser::ast::{BinaryOperator, Expr};

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
pub(crate) use running::Join;

/// The `join` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "join",
    doc: "joins two streams on equal keys and close event times (interval or window join), inner or left outer",
    inputs: Arity::Exactly(2),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec { name: "kind", required: true, kind: ParamKind::OneOf(&["interval", "window"]), default: None, doc: "interval: rows whose times are within [lower, upper] of each other; window: rows of the same tumbling window of `size`" },
        ParamSpec { name: "how", required: false, kind: ParamKind::OneOf(&["inner", "left"]), default: Some("inner"), doc: "inner: matched pairs only; left: also every left row without a partner, with nulls on the right" },
        ParamSpec { name: "on", required: true, kind: ParamKind::Text, default: None, doc: "equal keys: \"orders.item = stock.item AND …\" (columns qualified by their input's name: see `names`)" },
        ParamSpec { name: "names", required: false, kind: ParamKind::Text, default: None, doc: "the names the two inputs go by, left then right (\"a, b\"): `on` qualifies its columns by them, and a right column whose name is taken is named after its input's (`b_price`) (default: the streams' names; the SQL planner sets the tables' aliases)" },
        ParamSpec { name: "left_time", required: true, kind: ParamKind::Text, default: None, doc: "the event-time column of the first input" },
        ParamSpec { name: "right_time", required: true, kind: ParamKind::Text, default: None, doc: "the event-time column of the second input" },
        ParamSpec { name: "lower", required: false, kind: ParamKind::Text, default: None, doc: "interval: the smallest `right time - left time` that matches, e.g. \"-5s\"" },
        ParamSpec { name: "upper", required: false, kind: ParamKind::Text, default: None, doc: "interval: the largest `right time - left time` that matches, e.g. \"5s\"" },
        ParamSpec { name: "size", required: false, kind: ParamKind::Duration, default: None, doc: "window: the tumbling window's length" },
        ParamSpec { name: "keep", required: false, kind: ParamKind::Text, default: None, doc: "the output columns the rest of the query reads, by output name, separated by commas: the others are left out of the output and of the state (default: every column; the SQL planner sets it)" },
        ParamSpec { name: "parallelism", required: false, kind: ParamKind::Int, default: Some("1"), doc: "how many instances run the join, each owning a share of the keys (default: the query's --parallelism)" },
        ParamSpec { name: "prune", required: false, kind: ParamKind::OneOf(&["on", "off"]), default: Some("on"), doc: "on: when one input is joined with the MAX (or MIN) of its own column over a tumbling window, the planner drops the rows that can never equal it before the join buffers them (an `extreme_filter`, shown by `anduin explain`); off: every row is buffered (`anduin run --no-join-pruning`)" },
        ParamSpec { name: "state_backend", required: false, kind: ParamKind::OneOf(&["heap", "lsm"]), default: Some("heap"), doc: "where the checkpointed copy of the rows is kept: heap (memory) or lsm (an LSM tree on local disk); live rows stay in memory either way (default: the query's --state-backend)" },
    ],
};

/// Which rows pair up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinKind {
    /// `right.time - left.time` in `[lower, upper]` (milliseconds).
    Interval { lower: i64, upper: i64 },
    /// The same tumbling window of `size` milliseconds.
    Window { size: i64 },
}

/// What a running join is built from.
#[derive(Debug, Clone)]
pub(crate) struct JoinSetup {
    pub name: String,
    pub kind: JoinKind,
    pub left_outer: bool,
    /// Key columns of each side, pairwise equal.
    pub left_keys: Vec<usize>,
    pub right_keys: Vec<usize>,
    pub left_time: usize,
    pub right_time: usize,
    pub left_schema: SchemaRef,
    /// Per side, the input columns a buffered row keeps (and the output carries), in order.
    pub stored: [Vec<usize>; 2],
    /// Per side, those columns' schema.
    pub stored_schemas: [SchemaRef; 2],
    /// The result: [window_start, window_end,] left columns, right columns.
    pub schema: SchemaRef,
    /// Where the checkpointed copy of the rows is kept.
    pub backend: BackendKind,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let [(lname, left), (rname, right)] = inputs else {
        return Err(p.error("on", "a join takes exactly two inputs").into());
    };
    let (lname, rname) = input_names(&p, lname, rname)?;
    let (lname, rname) = (lname.as_str(), rname.as_str());
    let (left_keys, right_keys) = keys(&p, (lname, left), (rname, right))?;
    let time = |param: &str, schema: &Schema, stream: &str| -> Result<usize, Diagnostics> {
        let name = p.required(param).to_string();
        let i = schema.index_of(name.trim()).map_err(|_| {
            Diagnostics::from(p.error(
                param,
                format!("unknown column `{name}` in input `{stream}`"),
            ))
        })?;
        match ColumnType::from_arrow(schema.field(i).data_type()) {
            Some(ColumnType::Timestamp | ColumnType::Int) => Ok(i),
            _ => Err(p
                .error(
                    param,
                    format!("column `{name}` must be a timestamp or an int of epoch milliseconds"),
                )
                .into()),
        }
    };
    let left_time = time("left_time", left, lname)?;
    let right_time = time("right_time", right, rname)?;
    let kind = match p.str_or("kind", "interval").as_str() {
        "window" => JoinKind::Window {
            size: p
                .text("size")
                .and_then(|t| parse_duration_ms(t.as_str()))
                .filter(|ms| *ms > 0)
                .and_then(|ms| i64::try_from(ms).ok())
                .ok_or_else(|| {
                    Diagnostics::from(
                        p.error("size", "a window join needs a positive `size`, e.g. \"1s\""),
                    )
                })?,
        },
        _ => {
            let bound = |name: &str| -> Result<i64, Diagnostics> {
                let text = p.text(name).ok_or_else(|| {
                    Diagnostics::from(p.error(
                        name,
                        format!("an interval join needs `param {name} = \"…\"`, e.g. \"-5s\""),
                    ))
                })?;
                signed_duration(text.as_str()).ok_or_else(|| {
                    p.error(
                        name,
                        format!("expected a duration such as \"-5s\" or \"5s\", found \"{text}\""),
                    )
                    .into()
                })
            };
            let (lower, upper) = (bound("lower")?, bound("upper")?);
            if lower > upper {
                return Err(p
                    .error("lower", "`lower` is after `upper`: no row would match")
                    .into());
            }
            JoinKind::Interval { lower, upper }
        }
    };
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
    }
    let mut fields: Vec<Field> = Vec::new();
    if matches!(kind, JoinKind::Window { .. }) {
        fields.push(Field::new(
            "window_start",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ));
        fields.push(Field::new(
            "window_end",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ));
    }
    // Every input column's output name, as if every column were kept (so that a name does
    // not depend on which others are read).
    let mut named: Vec<Field> = fields.clone();
    let mut sides: [Vec<(usize, Field)>; 2] = [Vec::new(), Vec::new()];
    for ((stream, schema), side) in [(lname, left), (rname, right)].into_iter().zip(&mut sides) {
        for (i, f) in schema.fields().iter().enumerate() {
            let mut name = f.name().clone();
            while named.iter().any(|x| *x.name() == name) {
                name = format!("{stream}_{name}");
            }
            let field = f.as_ref().clone().with_name(name).with_nullable(true);
            named.push(field.clone());
            side.push((i, field));
        }
    }
    let keep = kept(&p, &named)?;
    let times = [left_time, right_time];
    let mut stored: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for ((side, stored), time) in sides.iter().zip(&mut stored).zip(times) {
        stored.extend(
            side.iter()
                .filter(|(_, f)| keep.as_ref().is_none_or(|k| k.contains(f.name())))
                .map(|(i, _)| *i),
        );
        if stored.is_empty() {
            // A batch has at least one column: a side none of whose columns is read keeps
            // its time (8 bytes a row).
            stored.push(time);
        }
        fields.extend(
            side.iter()
                .filter(|(i, _)| stored.contains(i))
                .map(|(_, f)| f.clone()),
        );
    }
    let project = |schema: &SchemaRef, columns: &[usize]| -> Result<SchemaRef, Diagnostics> {
        schema
            .project(columns)
            .map(Arc::new)
            .map_err(|e| Diagnostics::from(p.error("keep", e.to_string())))
    };
    let stored_schemas = [project(left, &stored[0])?, project(right, &stored[1])?];
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let setup = JoinSetup {
        name: op.name.to_string(),
        kind,
        left_outer: p.str_or("how", "inner") == "left",
        left_keys: left_keys.clone(),
        right_keys: right_keys.clone(),
        left_time,
        right_time,
        left_schema: Arc::clone(left),
        stored,
        stored_schemas,
        schema: Arc::clone(&schema),
        backend: p.state_backend(),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(Join::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: vec![Some(left_keys), Some(right_keys)],
    })
}

/// The output names `keep` lists (`None`: every column), each checked to be one of `named`.
pub(crate) fn kept(p: &Params<'_>, named: &[Field]) -> Result<Option<Vec<String>>, Diagnostics> {
    let Some(text) = p.text("keep") else {
        return Ok(None);
    };
    if text.as_str().trim().is_empty() {
        return Ok(Some(Vec::new()));
    }
    let idents = anduin_expr::parse_text(text.as_str(), |parser| {
        parser.parse_comma_separated(|q| q.parse_identifier())
    })
    .map_err(|e| p.expr_error("keep", &text, e))?;
    let mut names = Vec::with_capacity(idents.len());
    for id in idents {
        if !named.iter().any(|f| *f.name() == id.value) {
            let all: Vec<&str> = named.iter().map(|f| f.name().as_str()).collect();
            return Err(p
                .error(
                    "keep",
                    format!(
                        "unknown column `{}`: the join's output columns are {}",
                        id.value,
                        all.join(", ")
                    ),
                )
                .into());
        }
        names.push(id.value);
    }
    Ok(Some(names))
}

/// `-5s`, `5s`, `+250ms` in milliseconds.
pub(crate) fn signed_duration(text: &str) -> Option<i64> {
    let t = text.trim();
    let (sign, rest) = match t.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    parse_duration_ms(rest.trim())
        .and_then(|ms| i64::try_from(ms).ok())
        .map(|ms| sign * ms)
}

/// The names the inputs go by (`names`, or the streams' `lname` and `rname`): in `on`, and
/// in the output's names of right columns whose names are taken.
pub(crate) fn input_names(
    p: &Params<'_>,
    lname: &str,
    rname: &str,
) -> Result<(String, String), Diagnostics> {
    let Some(text) = p.text("names") else {
        return Ok((lname.to_string(), rname.to_string()));
    };
    match text.as_str().split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [l, r] if !l.is_empty() && !r.is_empty() && l != r => Ok((l.to_string(), r.to_string())),
        _ => Err(p
            .error(
                "names",
                format!("expected two different names, the left input's and the right's (\"a, b\"), found \"{text}\""),
            )
            .into()),
    }
}

/// The key columns of each side from `on`: `a.k = b.k AND a.k2 = b.k2`.
pub(crate) fn keys(
    p: &Params<'_>,
    (lname, left): (&str, &SchemaRef),
    (rname, right): (&str, &SchemaRef),
) -> Result<(Vec<usize>, Vec<usize>), Diagnostics> {
    let text = p.required("on");
    let bad = |m: String| Diagnostics::from(p.error("on", m));
    // Measured first: a chain of thousands of ANDs is refused, not walked.
    let expr = anduin_expr::parse_text(text.as_str(), |parser| parser.parse_expr())
        .map_err(|e| p.expr_error("on", &text, e))?;
    let mut conjuncts = Vec::new();
    flatten_and(&expr, &mut conjuncts);
    let mut lk = Vec::new();
    let mut rk = Vec::new();
    for c in conjuncts {
        let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        else {
            return Err(bad(format!(
                "expected equalities of columns joined by AND, found `{c}`"
            )));
        };
        let side = |e: &Expr| -> Result<(bool, usize), Diagnostics> {
            let (q, name) = match e {
                Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                    (Some(ids[0].value.as_str()), ids[1].value.as_str())
                }
                Expr::Identifier(id) => (None, id.value.as_str()),
                other => return Err(bad(format!("expected a column, found `{other}`"))),
            };
            let in_left = left.index_of(name).ok();
            let in_right = right.index_of(name).ok();
            match (q, in_left, in_right) {
                (Some(q), Some(i), _) if q == lname => Ok((true, i)),
                (Some(q), _, Some(i)) if q == rname => Ok((false, i)),
                (None, Some(i), None) => Ok((true, i)),
                (None, None, Some(i)) => Ok((false, i)),
                (None, Some(_), Some(_)) => Err(bad(format!("column `{name}` is in both inputs: qualify it, `{lname}.{name}` or `{rname}.{name}`"))),
                _ => Err(bad(format!("unknown column `{e}`: the inputs are `{lname}` and `{rname}`"))),
            }
        };
        let (sa, ia) = side(a)?;
        let (sb, ib) = side(b)?;
        let (li, ri) = match (sa, sb) {
            (true, false) => (ia, ib),
            (false, true) => (ib, ia),
            _ => {
                return Err(bad(format!(
                "`{c}` compares two columns of one input: each equality takes one column of each"
            )))
            }
        };
        if left.field(li).data_type() != right.field(ri).data_type() {
            let name = |t: &DataType| {
                ColumnType::from_arrow(t).map_or_else(|| t.to_string(), |c| c.name().to_string())
            };
            return Err(bad(format!(
                "`{c}` compares {} with {}: join keys must have the same type (CAST one in a `map` before the join)",
                name(left.field(li).data_type()),
                name(right.field(ri).data_type())
            )));
        }
        lk.push(li);
        rk.push(ri);
    }
    Ok((lk, rk))
}

fn flatten_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        Expr::Nested(inner) => flatten_and(inner, out),
        other => out.push(other),
    }
}
