//! `aggregate`: aggregates per key over the whole stream (a `GROUP BY` without a window), with
//! retractions. Its output is an updating stream (see `anduin_types::change`): each time rows
//! change a group's result, it emits the change — `+I` for a group's first result, `-U` then
//! `+U` for a new value, `-D` when the group's last row is taken out or its result no longer
//! passes `having`.
//!
//! Its input may be append-only, or updating (another `aggregate`'s output, filtered or
//! projected): a `+I` or `+U` row is added to its group, a `-U` or `-D` row taken out of it.
//! The aggregates are `COUNT`, `SUM`, `AVG`, `MIN`, `MAX` (a multiset of values, so that any
//! row can be taken out; over an append-only input only the extreme: `extreme.rs`),
//! `COUNT(DISTINCT …)` (several over one column share their values: `shared.rs`) and the
//! user's aggregates (WebAssembly or JavaScript; over an updating input only those with a
//! `retract`, refused otherwise), each with an optional `FILTER (WHERE …)` (`acc.rs`). The changes a batch makes are emitted after it, one change per group touched
//! (a mini-batch of one input batch): the changes of a group never cancel out in between, and
//! a group whose result did not change emits nothing. A row an aggregate's argument or
//! filter fails on goes to the dead letters (or stops the query, with `on_error = "fail"`),
//! as in a window: added or taken out, it counts in no group.
//!
//! The groups live in memory; checkpoints go through a keyed table (`anduin_state::KeyedTable`,
//! heap or LSM), one entry per group under its key's group key, written when changed
//! (`running.rs`).

pub(crate) mod acc;
mod extreme;
mod running;
mod shared;

use std::sync::Arc;

use anduin_expr::{compile_aggregates, compile_predicate, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{
    change_column, is_updating, with_row_key, ColumnType, Diagnostics, CHANGE_COLUMN,
};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::window::keys::KeyCodec;
use acc::{AggPlan, Fun};

/// How the accumulators of an updating operator (GROUP BY, OVER) compute aggregate `a` of
/// `p`'s `aggregates` (`context` says where, in a refusal): its plan, the type of its
/// argument (`Null` for `COUNT(*)`), and its output column. `empty` is the input's schema
/// with no rows. A user's aggregate is planned only where `users` (a GROUP BY); elsewhere it
/// is refused as any aggregate the operator does not know.
pub(crate) fn plan_aggregate(
    p: &Params,
    a: &anduin_expr::CompiledAggregate,
    empty: &RecordBatch,
    context: &str,
    users: bool,
) -> Result<(AggPlan, arrow::datatypes::DataType, Field), Diagnostics> {
    let unsupported = |message: String| -> Diagnostics {
        p.error("aggregates", format!("aggregate `{}`: {message}", a.name))
            .into()
    };
    let args = a.arguments(empty).map_err(|e| unsupported(e.message))?;
    let arg_type = args.first().map(|c| c.data_type().clone());
    if let Some(user) = a.user().filter(|_| users) {
        if ColumnType::carrying(&a.data_type()).is_none() {
            return Err(unsupported(format!(
                "of type {}, which a stream cannot carry",
                a.data_type()
            )));
        }
        let field = Field::new(&a.name, a.data_type(), true);
        let arg_type = arg_type.unwrap_or(arrow::datatypes::DataType::Null);
        return Ok((AggPlan::user(user), arg_type, field));
    }
    let fun = Fun::of(
        a.function_name(),
        a.is_distinct(),
        arg_type.as_ref(),
        context,
    )
    .map_err(unsupported)?;
    let Some(t) = ColumnType::carrying(&a.data_type()) else {
        return Err(unsupported(format!(
            "of type {}, which a stream cannot carry",
            a.data_type()
        )));
    };
    let out = match fun {
        Fun::Min | Fun::Max => a.data_type(),
        _ => t.arrow_type(),
    };
    let arg_type = arg_type.unwrap_or(arrow::datatypes::DataType::Null);
    let plan = AggPlan::new(fun, &arg_type).map_err(unsupported)?;
    Ok((plan, arg_type, Field::new(&a.name, out, true)))
}
use running::Aggregate;

/// The `aggregate` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "aggregate",
    doc: "aggregates rows per key over the whole stream (GROUP BY without a window); emits each change of a group's result (+I, -U, +U, -D): an updating stream",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec {
            name: "keys",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the key columns, comma-separated; without it one group holds every row",
        },
        ParamSpec {
            name: "aggregates",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "aggregate columns: \"COUNT(*) AS cnt, SUM(value) AS total, MAX(value) AS max\"; COUNT, SUM, AVG, MIN, MAX, COUNT(DISTINCT …) and the user's aggregates (over an updating input, those with a `retract`), each with an optional FILTER (WHERE …)",
        },
        ParamSpec {
            name: "having",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "a condition on the keys and aggregate columns: a group's result is in the output only while it holds",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "how many instances run the aggregate, each owning a share of the keys (default: the query's --parallelism)",
        },
        ParamSpec {
            name: "state_backend",
            required: false,
            kind: ParamKind::OneOf(&["heap", "lsm"]),
            default: Some("heap"),
            doc: "where the checkpointed copy of the groups is kept: heap (memory) or lsm (an LSM tree on local disk); either way checkpoints write only the groups that changed (default: the query's --state-backend)",
        },
        crate::ttl::STATE_TTL,
        anduin_operator_api::ON_ERROR,
    ],
};

/// What a running aggregate is built from.
#[derive(Debug, Clone)]
pub(crate) struct GroupSetup {
    pub name: String,
    pub key_columns: Vec<usize>,
    pub codec: KeyCodec,
    pub aggs: Vec<anduin_expr::CompiledAggregate>,
    pub plans: Vec<AggPlan>,
    /// The condition on a group's result, over `rows`.
    pub having: Option<anduin_expr::CompiledExpr>,
    /// A result row: keys, then aggregates.
    pub rows: SchemaRef,
    /// The output: a result row and its change kind.
    pub schema: SchemaRef,
    /// The input's change-kind column, if the input is updating.
    pub change_in: Option<usize>,
    pub backend: BackendKind,
    /// The state time-to-live in ms (`state_ttl`; 0: none).
    pub ttl_ms: u64,
    /// Each aggregate's place in the query, for a row its argument or filter fails on.
    pub sites: Vec<anduin_operator_api::ExprAt>,
    /// The `on_error` param, if set.
    pub on_error: Option<anduin_operator_api::OnError>,
}

/// The first function a GROUP BY's aggregates call (in their arguments or FILTER) whose value
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
    let change_in = is_updating(input).then(|| input.fields().len() - 1);
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("keys") {
        for k in keys
            .as_str()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            match input.index_of(k) {
                // `GROUP BY k, k` groups as `GROUP BY k`.
                Ok(i) if key_columns.contains(&i) => {}
                Ok(i) if k != CHANGE_COLUMN => key_columns.push(i),
                _ => {
                    let names: Vec<&str> = input
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .filter(|n| *n != CHANGE_COLUMN)
                        .collect();
                    return Err(p
                        .error(
                            "keys",
                            format!(
                                "unknown column `{k}`: stream `{stream}` has {}",
                                names.join(", ")
                            ),
                        )
                        .into());
                }
            }
        }
    }
    let key_fields: Vec<Field> = key_columns
        .iter()
        .map(|i| input.field(*i).clone())
        .collect();
    let codec = KeyCodec::new(Arc::new(Schema::new(key_fields.clone())))
        .map_err(|e| Diagnostics::from(p.error("keys", e)))?;
    let text = p.required("aggregates");
    let aggs = compile_aggregates(text.as_str(), &Scope::new(*stream, Arc::clone(input)))
        .map(|aggs| {
            // `AVG` of integers adds them exactly (DataFusion's casts them to doubles, whose
            // sum loses a small value beside a large one, taken out or not).
            aggs.into_iter()
                .map(|a| match a.function_name() {
                    "avg" => a.with_integer_argument(),
                    _ => a,
                })
                .collect::<Vec<_>>()
        })
        .and_then(|aggs| {
            // An updating input's retractions are taken out with their arguments evaluated
            // again: the same values, or the group's state goes wrong.
            if let Some(c) = change_in {
                for a in &aggs {
                    crate::map::updating_safe_at(a.reads(c), a.volatile_function(), &a.site)?;
                }
            }
            Ok(aggs)
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
    let mut fields = key_fields;
    for a in &aggs {
        let (plan, _, field) =
            plan_aggregate(&p, a, &empty, "in a GROUP BY without a window", true)?;
        if let Some(user) = plan.user.as_ref().filter(|u| !u.retracts()) {
            if change_in.is_some() {
                return Err(p.expr_error(
                    "aggregates",
                    &text,
                    anduin_expr::ExprError::at(
                        a.site.line,
                        a.site.col,
                        format!(
                            "aggregate `{}` has no `retract`, and its input is updating (the changes of a GROUP BY or a join): a row the input takes back (-U, -D) must be taken out of its group's state. Give the aggregate a `retract` (JavaScript: `export function retract(state, …)`; WebAssembly: `{}_retract`), or aggregate an append-only stream",
                            user.name(),
                            user.name(),
                        ),
                    ),
                ));
            }
        }
        // No row of an append-only input is taken out: a MIN or MAX keeps its extreme only,
        // a COUNT(DISTINCT …) of ints its values without counts.
        plans.push(match change_in {
            None => plan.over_append_only(),
            Some(_) => plan,
        });
        fields.push(field);
    }
    // COUNT(DISTINCT …)s of one column share a set of its values.
    let arguments: Vec<Option<usize>> = aggs.iter().map(|a| a.column_argument()).collect();
    shared::share(&mut plans, &arguments);
    let names: std::collections::BTreeSet<&str> =
        fields.iter().map(|f| f.name().as_str()).collect();
    if names.len() != fields.len() {
        return Err(p
            .error(
                "aggregates",
                "an aggregate has the name of a key or of another aggregate: rename it with `AS`",
            )
            .into());
    }
    let rows: SchemaRef = Arc::new(Schema::new(fields.clone()));
    let having = match p.text("having") {
        None => None,
        Some(text) => Some(
            compile_predicate(
                text.as_str(),
                &Scope::new(op.name.as_str(), Arc::clone(&rows)),
            )
            .and_then(|h| match h.volatile_function() {
                // A group's result is evaluated again at each of its changes.
                Some(f) => Err(anduin_expr::ExprError::at(
                    h.site.line,
                    h.site.col,
                    format!("`{f}()` gives another value at each call, and HAVING is evaluated again at each change of a group, so its row would come and go at random and its retractions not match (a wrong result, silently): not supported in HAVING"),
                )),
                None => Ok(h),
            })
            .map_err(|e| p.expr_error("having", &text, e))?,
        ),
    };
    fields.push(change_column());
    // The grouping columns identify a row of the result (an upsert writer checks its
    // primary key against them).
    let key_positions: Vec<usize> = (0..key_columns.len()).collect();
    let schema: SchemaRef = Arc::new(with_row_key(fields, &key_positions));
    let partition_by = crate::window::keys::partitioned_by(
        &p,
        &key_columns,
        "an aggregate without `keys` (one group)",
    )?;
    let setup = GroupSetup {
        name: op.name.to_string(),
        key_columns,
        codec,
        aggs,
        plans,
        having,
        rows,
        schema: Arc::clone(&schema),
        change_in,
        backend: p.state_backend(),
        ttl_ms: crate::ttl::ttl_ms(&p),
        sites,
        on_error: anduin_operator_api::OnError::param(&p),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(Aggregate::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by,
    })
}
