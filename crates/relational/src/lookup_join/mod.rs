//! `lookup_join`: enriches a stream with a bounded side table read once (SQL's `JOIN side FOR
//! SYSTEM_TIME AS OF s.ts AS d ON s.k = d.k`, Flink's lookup join on a static table; Nexmark
//! q13). Inner or left.
//!
//! Input 0 is the stream, input 1 the side table, which must end (a file, a generator with a
//! `count`). The side's rows are kept in memory by key; stream rows that come before the side
//! has ended wait (in arrival order) and are joined when it ends, so every stream row sees the
//! whole side table. From then on a stream row is joined with its key's side rows and
//! forgotten: the state is the side table, whatever the length of the stream. The output is
//! append-only: a left join emits a stream row without side rows once, padded with nulls.
//!
//! Checkpoints keep the side's rows (and the stream rows still waiting) in a keyed table
//! (heap or LSM), one entry per key: a restored join does not read the side table again (its
//! reader resumes at its end, as every reader resumes where its checkpoint left it).
//! Not: a temporal join on a versioned table, a side table that changes, an updating input.

mod entry;
mod running;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{is_updating, Diagnostics};
use arrow::datatypes::{Field, Schema, SchemaRef};

use running::LookupJoin;

/// The `lookup_join` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "lookup_join",
    doc: "enriches a stream (input 0) with the rows of a bounded side table (input 1) of equal keys, read fully before any stream row is joined and kept by key; stream rows are not kept (inner or left, append-only)",
    inputs: Arity::Exactly(2),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        ParamSpec { name: "on", required: true, kind: ParamKind::Text, default: None, doc: "equal keys: \"bids.k = side.k AND …\" (columns qualified by their stream's name)" },
        ParamSpec { name: "how", required: false, kind: ParamKind::OneOf(&["inner", "left"]), default: Some("inner"), doc: "inner: a stream row once per side row of its key; left: also a stream row with no side row, padded with nulls" },
        ParamSpec { name: "parallelism", required: false, kind: ParamKind::Int, default: Some("1"), doc: "how many instances run the join, each owning a share of the keys (default: the query's --parallelism)" },
        ParamSpec { name: "state_backend", required: false, kind: ParamKind::OneOf(&["heap", "lsm"]), default: Some("heap"), doc: "where the checkpointed copy of the side table is kept: heap (memory) or lsm (an LSM tree on local disk) (default: the query's --state-backend)" },
    ],
};

/// What a running lookup join is built from.
#[derive(Debug, Clone)]
pub(crate) struct LookupSetup {
    pub name: String,
    /// Whether a stream row without side rows is emitted padded with nulls.
    pub left: bool,
    /// Each input's key columns, pairwise equal.
    pub keys: [Vec<usize>; 2],
    /// The output: the stream's columns, then the side's.
    pub schema: SchemaRef,
    /// How many columns the stream has.
    pub stream_width: usize,
    pub backend: BackendKind,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let [(sname, stream), (dname, side)] = inputs else {
        return Err(p
            .error("on", "a lookup join takes exactly two inputs")
            .into());
    };
    for (name, schema) in [(sname, stream), (dname, side)] {
        if is_updating(schema) {
            return Err(p
                .error(
                    "on",
                    format!("`{name}` is an updating stream: a lookup join takes append-only inputs (the side table is read once and does not change)"),
                )
                .into());
        }
    }
    let (stream_keys, side_keys) = crate::join::keys(&p, (sname, stream), (dname, side))?;
    let left = p.str_or("how", "inner") == "left";
    // Named as the regular join names them: a side column whose name is taken gets its
    // stream's name in front.
    let mut fields: Vec<Field> = Vec::new();
    for (name, schema) in [(sname, stream), (dname, side)] {
        for f in schema.fields() {
            let mut n = f.name().clone();
            while fields.iter().any(|x| *x.name() == n) {
                n = format!("{name}_{n}");
            }
            fields.push(Field::new(n, f.data_type().clone(), true));
        }
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
    }
    let setup = LookupSetup {
        name: op.name.to_string(),
        left,
        keys: [stream_keys.clone(), side_keys.clone()],
        schema: Arc::clone(&schema),
        stream_width: stream.fields().len(),
        backend: p.state_backend(),
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(LookupJoin::new(setup.clone(), ctx)?))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: vec![Some(stream_keys), Some(side_keys)],
    })
}
