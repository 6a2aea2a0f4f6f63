//! `user_operator`: a user's operator with keyed state (issue 21; a JavaScript or
//! WebAssembly one of `anduin-udf`, found by name as `anduin_expr::UserOperator`), as SQL
//! calls it in FROM — `FROM first_row(input => TABLE events PARTITION BY sensor)`, Flink's
//! process table functions — or a `.flow` operator names it (`param function`).
//!
//! Per key (the `keys` columns: `PARTITION BY`) the operator keeps the user's state, bytes
//! the user's engine reads and writes (JSON text for JavaScript), and the key's timer: the
//! event time at which the user asked to be called again. Each batch's rows go to the
//! user's `process(state, columns…)` in their order, the keys' states (and timers) come back
//! changed, and the rows the calls emitted go out: the key's columns, then the declared
//! output columns. When the watermark advances, the keys whose timers it reached get
//! `on_timer(state, watermark)`, earliest timer first (of equal times, in key order), once
//! per advance; at the end of the input, with a watermark of +∞. The output is append-only
//! and carries no event time.
//!
//! The states live in memory; checkpoints go through a keyed table (heap or LSM), one entry
//! per key under its key's bytes, written when changed (`running.rs`), so the operator
//! rescales by key group as the aggregate does.
//!
//! A row on which `process` throws or traps goes to the dead letters (the key's state as it
//! was before the row), or stops the query naming it with `on_error = "fail"`; one that
//! runs out of fuel or time stops the query whatever `on_error` says; so does a failing
//! `on_timer`, which is no row's.

mod entry;
mod running;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::top_n::unquoted;
use crate::window::keys::KeyCodec;
use running::UserOp;

/// The `user_operator` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "user_operator",
    doc: "runs a user's operator with keyed state (JavaScript or WebAssembly: CREATE FUNCTION … RETURNS TABLE, or a module's anduin:operators): per key a state, process(state, row…) per row emitting rows, on_timer(state, watermark) when the watermark reaches the key's timer; append-only output: the key columns, then the operator's",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec {
            name: "function",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the user operator's name, as CREATE FUNCTION … RETURNS TABLE (…) or a module's anduin:operators section declares it",
        },
        ParamSpec {
            name: "keys",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "the partition key columns, comma-separated (SQL's PARTITION BY): each key has a state of its own; without it one state holds every row",
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
            doc: "where the checkpointed copy of the states is kept: heap (memory) or lsm (an LSM tree on local disk); either way checkpoints write only the keys that changed (default: the query's --state-backend)",
        },
        ParamSpec {
            name: "on_error",
            required: false,
            kind: ParamKind::OneOf(&["dead_letter", "fail"]),
            default: None,
            doc: "what a row on which the operator's process throws or traps does: `dead_letter` sends it to the dead-letter file (its key's state as before it) and goes on; `fail` stops the query, naming it (default: `anduin run --on-error`, whose default is `dead_letter`). A runaway stops the query either way",
        },
    ],
};

/// What a running user operator is built from.
#[derive(Debug, Clone)]
pub(crate) struct UserSetup {
    pub name: String,
    pub user: Arc<dyn anduin_expr::UserOperator>,
    pub key_columns: Vec<usize>,
    pub codec: KeyCodec,
    /// The input columns the user's `process` takes, each cast to the type it takes.
    pub args: Vec<(usize, DataType)>,
    /// The output: the key columns, then the user's.
    pub schema: SchemaRef,
    pub backend: anduin_state::BackendKind,
    /// The user operator, as a rejected row names it.
    pub site: anduin_operator_api::ExprAt,
    pub on_error: Option<anduin_operator_api::OnError>,
}

/// Whether a column of type `given` can be given to the user's operator as `wanted`: a
/// lossless widening (an INT as a BIGINT, a FLOAT as a DOUBLE), or a timestamp as its epoch
/// milliseconds (a BIGINT).
fn takes(wanted: &DataType, given: &DataType) -> bool {
    use DataType::*;
    match wanted {
        Int64 => matches!(
            given,
            Int8 | Int16
                | Int32
                | Int64
                | UInt8
                | UInt16
                | UInt32
                | Timestamp(TimeUnit::Millisecond, _)
        ),
        Float64 => matches!(
            given,
            Float32 | Float64 | Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32
        ),
        Boolean => matches!(given, Boolean),
        Utf8 => matches!(given, Utf8 | LargeUtf8 | Utf8View),
        _ => false,
    }
}

/// The SQL name of a type a user's operator takes, for errors.
fn sql_name(t: &DataType) -> &'static str {
    match t {
        DataType::Int64 => "BIGINT",
        DataType::Float64 => "DOUBLE",
        DataType::Boolean => "BOOLEAN",
        _ => "VARCHAR",
    }
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, input) = inputs.first().expect("arity checked: one input");
    let function = p.required("function");
    let fname = unquoted(function.as_str());
    let user = anduin_expr::FunctionProvider::get()
        .user_operator(&fname)
        .ok_or_else(|| {
            p.error(
                "function",
                format!("no user operator `{fname}` is declared: declare it with CREATE FUNCTION {fname}(column TYPE, …) RETURNS TABLE (column TYPE, …) LANGUAGE javascript AS $$ … $$ (or LANGUAGE wasm AS 'module.wasm'), or load a module that declares it in its `anduin:operators` section (anduin run --udf, a `udf` block)"),
            )
        })?;
    let name = user.name().to_string();
    let columns: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
    let column = |param: &str, wanted: &str, what: &str| -> Result<usize, Diagnostics> {
        input.index_of(wanted).map_err(|_| {
            p.error(
                param,
                format!(
                    "{what}: stream `{stream}` has no column `{wanted}`; it has {}",
                    columns.join(", ")
                ),
            )
            .into()
        })
    };
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("keys") {
        for k in keys.as_str().split(',').filter(|k| !k.trim().is_empty()) {
            let k = unquoted(k);
            let i = column("keys", &k, &format!("PARTITION BY {k}"))?;
            if !key_columns.contains(&i) {
                key_columns.push(i);
            }
        }
    }
    let mut args = Vec::new();
    for (arg, wanted) in user.args() {
        let what = format!("operator `{name}` takes column `{arg}`");
        let i = column("function", &arg, &what)?;
        let given = input.field(i).data_type();
        if !takes(&wanted, given) {
            return Err(p
                .error(
                    "function",
                    format!(
                        "{what} as {}, but `{stream}.{arg}` is {given}: give it a column of that type (a view can CAST one)",
                        sql_name(&wanted)
                    ),
                )
                .into());
        }
        args.push((i, wanted));
    }
    let mut fields: Vec<Field> = key_columns
        .iter()
        .map(|i| input.field(*i).clone())
        .collect();
    for (column, t) in user.output() {
        if fields.iter().any(|f| f.name() == &column) {
            return Err(p
                .error(
                    "function",
                    format!("operator `{name}` returns a column `{column}`, which is also a PARTITION BY column (the output starts with the key's columns): name it otherwise"),
                )
                .into());
        }
        fields.push(Field::new(column, t, true));
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
        "a user operator without keys (PARTITION BY: one state)",
    )?;
    let site = anduin_operator_api::ExprAt {
        role: "user operator".into(),
        text: name.clone(),
        pos: function.pos(),
    };
    let setup = UserSetup {
        name: op.name.to_string(),
        user,
        key_columns,
        codec,
        args,
        schema: Arc::clone(&schema),
        backend: p.state_backend(),
        site,
        on_error: anduin_operator_api::OnError::param(&p),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(UserOp::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by,
    })
}
