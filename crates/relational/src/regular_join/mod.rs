//! `regular_join`: joins two streams on equal keys with no time bound (SQL's `FROM a JOIN b ON
//! a.k = b.k`, Flink's regular join). INNER, LEFT, RIGHT or FULL OUTER, with an optional
//! residual condition on the joined row.
//!
//! Every row of both sides is kept, per key, for as long as the query runs (until an
//! updating input takes it back): the state grows with the keys and their rows (no
//! time-to-live yet). The output follows Flink's changelog semantics (`changes.rs`): an inner
//! join of append-only inputs is append-only; an outer join, or a join of an updating input
//! (a `GROUP BY` without a window), is an updating stream whose rows carry `+I -U +U -D`. A
//! row whose key has a null column joins nothing (SQL's `NULL = NULL` is not true): it is not
//! kept, and an outer side emits it padded with nulls.
//!
//! A kept row holds only the columns the rest of the query reads (`keep`, which the SQL
//! planner sets; every column when not given): two rows that differ only in columns nobody
//! reads are kept once, counted twice.
//!
//! The rows live in memory; checkpoints keep a copy in a keyed table (heap or LSM), one entry
//! per key under its key group, written for the keys changed since the previous checkpoint,
//! so the join rescales by key group like the window, join and aggregate (`running.rs`).
//! Its output carries no event-time progress but the end of input (a joined row can be
//! older than anything the watermark allowed): event-time operators after it see their
//! input end, as Flink's regular join drops the time attributes.

mod changes;
mod entry;
mod pairs;
mod running;

use std::sync::Arc;

use anduin_expr::{compile_predicate, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{
    change_column, is_updating, no_row_key, row_key, with_row_key_of, without_row_key, Diagnostics,
    CHANGE_COLUMN,
};
use arrow::datatypes::{Field, Schema, SchemaRef};

use running::RegularJoin;

/// The `regular_join` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "regular_join",
    doc: "joins two streams on equal keys with no time bound, keeping every row of both sides (inner, left, right or full outer); an outer join, or a join of an updating stream, emits an updating stream (+I, -U, +U, -D)",
    inputs: Arity::Exactly(2),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec { name: "on", required: true, kind: ParamKind::Text, default: None, doc: "equal keys: \"orders.item = stock.item AND …\" (columns qualified by their input's name: see `names`)" },
        ParamSpec { name: "names", required: false, kind: ParamKind::Text, default: None, doc: "the names the two inputs go by, left then right (\"a, b\"): `on` qualifies its columns by them, and a right column whose name is taken is named after its input's (`b_price`) (default: the streams' names; the SQL planner sets the tables' aliases)" },
        ParamSpec { name: "how", required: false, kind: ParamKind::OneOf(&["inner", "left", "right", "full"]), default: Some("inner"), doc: "inner: matched pairs only; left, right, full: also every row of that side (both for full) without a partner, with nulls on the other side, retracted when its first partner comes" },
        ParamSpec { name: "condition", required: false, kind: ParamKind::Text, default: None, doc: "a condition on the joined row (the output's column names, as `on` makes them): a pair joins only if it holds; for an outer join, a row with no pair that holds is padded with nulls" },
        ParamSpec { name: "keep", required: false, kind: ParamKind::Text, default: None, doc: "the output columns the rest of the query reads (and the condition), by output name, separated by commas: the others are left out of the output and of the state (default: every column; the SQL planner sets it)" },
        ParamSpec { name: "parallelism", required: false, kind: ParamKind::Int, default: Some("1"), doc: "how many instances run the join, each owning a share of the keys (default: the query's --parallelism)" },
        ParamSpec { name: "state_backend", required: false, kind: ParamKind::OneOf(&["heap", "lsm"]), default: Some("heap"), doc: "where the checkpointed copy of the rows is kept: heap (memory) or lsm (an LSM tree on local disk); live rows stay in memory either way (default: the query's --state-backend)" },
        crate::ttl::STATE_TTL,
    ],
};

/// Which rows of a regular join are kept without a partner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Inner,
    Left,
    Right,
    Full,
}

impl How {
    /// Whether side `side` (0 left, 1 right) keeps its rows without a partner.
    pub(crate) fn outer(self, side: usize) -> bool {
        match self {
            How::Inner => false,
            How::Left => side == 0,
            How::Right => side == 1,
            How::Full => true,
        }
    }
}

/// One input of a regular join.
#[derive(Debug, Clone)]
pub(crate) struct SideSetup {
    /// Its key columns, pairwise equal to the other side's.
    pub keys: Vec<usize>,
    /// Its columns (but the change kind) that a row is kept and joined with: those `keep`
    /// names, or its first key column when it names none of them.
    pub values: Vec<usize>,
    /// Its change-kind column, if it is updating.
    pub change: Option<usize>,
}

/// What a running regular join is built from.
#[derive(Debug, Clone)]
pub(crate) struct RegularSetup {
    pub name: String,
    pub how: How,
    pub sides: [SideSetup; 2],
    /// The types of the key columns (the left side's).
    pub key_types: Vec<arrow::datatypes::DataType>,
    /// A joined row: the left values, then the right values.
    pub rows: SchemaRef,
    /// The residual condition, over `rows`.
    pub condition: Option<anduin_expr::CompiledExpr>,
    /// The output: `rows`, and the change kind if it is updating.
    pub schema: SchemaRef,
    pub backend: BackendKind,
    /// The state time-to-live in ms (`state_ttl`; 0: none).
    pub ttl_ms: u64,
}

impl RegularSetup {
    /// Whether the output carries change kinds.
    pub(crate) fn updating(&self) -> bool {
        is_updating(&self.schema)
    }
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let [(lname, left), (rname, right)] = inputs else {
        return Err(p.error("on", "a join takes exactly two inputs").into());
    };
    let (lname, rname) = crate::join::input_names(&p, lname, rname)?;
    let (lname, rname) = (lname.as_str(), rname.as_str());
    let (left_keys, right_keys) = crate::join::keys(&p, (lname, left), (rname, right))?;
    for (keys, schema) in [(&left_keys, left), (&right_keys, right)] {
        if keys
            .iter()
            .any(|k| schema.field(*k).name() == CHANGE_COLUMN && is_updating(schema))
        {
            return Err(p
                .error(
                    "on",
                    format!("`{CHANGE_COLUMN}` is a row's change kind, not a column to join on"),
                )
                .into());
        }
    }
    let how = match p.str_or("how", "inner").as_str() {
        "left" => How::Left,
        "right" => How::Right,
        "full" => How::Full,
        _ => How::Inner,
    };
    let side = |schema: &SchemaRef, keys: Vec<usize>| {
        let change = is_updating(schema).then(|| schema.fields().len() - 1);
        let values = (0..schema.fields().len())
            .filter(|i| Some(*i) != change)
            .collect();
        SideSetup {
            keys,
            values,
            change,
        }
    };
    let mut sides = [
        side(left, left_keys.clone()),
        side(right, right_keys.clone()),
    ];
    // Named as the time-bounded join names them: a right column whose name is taken gets its
    // input's name in front (every column named, so that a name does not depend on which
    // others are kept).
    let mut named: Vec<Field> = Vec::new();
    let mut by_side: [Vec<(usize, Field)>; 2] = [Vec::new(), Vec::new()];
    for (((stream, schema), s), out) in [(lname, left), (rname, right)]
        .into_iter()
        .zip(&sides)
        .zip(&mut by_side)
    {
        for i in &s.values {
            let f = schema.field(*i);
            let mut name = f.name().clone();
            while named.iter().any(|x| *x.name() == name) {
                name = format!("{stream}_{name}");
            }
            let field = Field::new(name, f.data_type().clone(), true);
            named.push(field.clone());
            out.push((*i, field));
        }
    }
    let keep = crate::join::kept(&p, &named)?;
    let mut fields: Vec<Field> = Vec::new();
    for (s, all) in sides.iter_mut().zip(by_side) {
        let mut kept: Vec<(usize, Field)> = all
            .iter()
            .filter(|(_, f)| keep.as_ref().is_none_or(|k| k.contains(f.name())))
            .cloned()
            .collect();
        if kept.is_empty() {
            // A row has at least one column: a side none of whose columns is read keeps its
            // first key column.
            kept.extend(all.into_iter().filter(|(i, _)| s.keys.first() == Some(i)));
        }
        s.values = kept.iter().map(|(i, _)| *i).collect();
        fields.extend(kept.into_iter().map(|(_, f)| f));
    }
    let rows: SchemaRef = Arc::new(Schema::new(fields.clone()));
    let condition = match p.text("condition") {
        None => None,
        Some(text) => Some(
            compile_predicate(text.as_str(), &Scope::new(op.name.as_str(), Arc::clone(&rows)))
                .and_then(|c| match c.volatile_function() {
                    // A retraction is joined again with the condition evaluated again.
                    Some(f) => Err(anduin_expr::ExprError::at(
                        c.site.line,
                        c.site.col,
                        format!("`{f}()` gives another value at each call, and a join evaluates its condition again when a row is retracted, so the retraction would not match what was joined (a wrong result, silently): not supported in a join's condition"),
                    )),
                    None => Ok(c),
                })
                .map_err(|e| p.expr_error("condition", &text, e))?,
        ),
    };
    let schema: SchemaRef = if how != How::Inner || sides.iter().any(|s| s.change.is_some()) {
        let key = row_key_of_pairs(how, &sides, [(lname, left), (rname, right)]);
        fields.push(change_column());
        Arc::new(match key {
            Ok((key, names)) => with_row_key_of(
                fields,
                &key,
                &format!("the row keys of both joined inputs ({names})"),
            ),
            Err(why) => without_row_key(fields, &why),
        })
    } else {
        Arc::new(Schema::new(fields))
    };
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
    }
    let key_types = left_keys
        .iter()
        .map(|k| left.field(*k).data_type().clone())
        .collect();
    let setup = RegularSetup {
        name: op.name.to_string(),
        how,
        sides,
        key_types,
        rows,
        condition,
        schema: Arc::clone(&schema),
        backend: p.state_backend(),
        ttl_ms: crate::ttl::ttl_ms(&p),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(RegularJoin::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: vec![Some(left_keys), Some(right_keys)],
    })
}

/// The row key of a regular join's updating output (positions in its columns without the
/// change kind) and their names as the query writes them (`side.column`), or why it has none. An output row is a pair of
/// one row of each side, or one side's row padded with nulls: where each input's rows are
/// identified by a key, the two keys together identify the pairs, and (left, right) an
/// inner, LEFT or RIGHT join's padded rows too — a row is padded only while it has no partner.
/// A FULL join's can collide: a left row padded with nulls and a right one, both with a null
/// key, would have the same key. An append-only input's rows have no key (equal rows may
/// come twice).
fn row_key_of_pairs(
    how: How,
    sides: &[SideSetup; 2],
    inputs: [(&str, &SchemaRef); 2],
) -> Result<(Vec<usize>, String), String> {
    if how == How::Full {
        return Err("a FULL join's rows are not known to be identified by a key: a left row padded with nulls and a right one may share it (when both inputs hold a row with a null key); write with mode = 'changelog', or join with LEFT, RIGHT or INNER".to_string());
    }
    let mut key = Vec::new();
    // Each key column as the query writes it, `side.column` (`y.k`), not as the output names
    // it (`y_k`, where the left side has a `k`): a user who wrote `y.k AS b` never sees `y_k`.
    let mut names: Vec<String> = Vec::new();
    let mut offset = 0;
    for (side, (name, schema)) in sides.iter().zip(inputs) {
        let Some(own) = row_key(schema).filter(|_| is_updating(schema)) else {
            return Err(match no_row_key(schema) {
                Some(why) => format!("a join's rows are identified by the row keys of both its inputs, and `{name}` has none: {why}"),
                None if !is_updating(schema) => format!("a join's rows are identified by the row keys of both its inputs, and `{name}` is append-only (two of its rows may be equal, so two joined rows may be); write with mode = 'changelog'"),
                None => format!("a join's rows are identified by the row keys of both its inputs, and the rows of `{name}` have no known key; write with mode = 'changelog'"),
            });
        };
        for k in own {
            let Some(at) = side.values.iter().position(|v| *v == k) else {
                return Err(format!(
                    "a join's rows are identified by the row keys of both its inputs, and `{}` of `{name}` is not selected; keep it in the SELECT, or write with mode = 'changelog'",
                    schema.field(k).name()
                ));
            };
            key.push(offset + at);
            names.push(format!("`{name}.{}`", schema.field(k).name()));
        }
        offset += side.values.len();
    }
    Ok((key, names.join(", ")))
}

/// Whether a `regular_join` with these params makes an updating stream of append-only
/// inputs (it is an outer join).
pub fn makes_updates(op: &OperatorDef) -> bool {
    op.param("how")
        .is_some_and(|h| h.value.as_text().as_str() != "inner")
}
