//! `map`: computed columns and projection.

use std::sync::Arc;

use anduin_expr::{compile_projection, CompiledExpr, ExprError, Scope};

use crate::replica_safe::replica_safe;
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use anduin_types::{
    change_column, is_updating, no_row_key, row_key, row_key_of, with_row_key, with_row_key_of,
    without_row_key, CHANGE_COLUMN,
};
use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{
    evaluate_rows, failures, kept_rows, Collector, ControlError, Evaluated, ExprAt, OnError,
    Operator, OperatorError, Piece, RowErrors, RowFailure, RowOrigins,
};

/// The `map` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "map",
    doc: "computes new columns from each row (a projection): one output row per input row",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[
        ParamSpec {
            name: "columns",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "comma-separated SQL expressions, each optionally `AS name`, e.g. \"ts, sensor, value * 2 AS doubled\"; `*` keeps every input column; adjustable while running (same output columns)",
        },
        anduin_operator_api::ON_ERROR,
        crate::in_turn::PARALLELISM,
        crate::in_turn::RANGES,
    ],
};

/// The params a running map can change.
pub const ADJUSTABLE: &[&str] = &["columns"];

/// Compiles `columns` over `scope`: the expressions, each as a stream column. The change kind
/// of an updating input's rows (which `*` selects) is not among them: the map keeps it apart.
/// A map in hot standby (`replicated`) may not call a volatile function.
fn compile_columns(
    text: &str,
    scope: &Scope,
    replicated: bool,
) -> Result<Vec<CompiledExpr>, anduin_expr::ExprError> {
    let change = is_updating(&scope.schema).then(|| scope.schema.fields().len() - 1);
    let mut columns = Vec::new();
    for e in compile_projection(text, scope)? {
        replica_safe(replicated, e.volatile_function(), &e.site)?;
        if let Some(c) = change {
            if e.name == CHANGE_COLUMN && e.column() == Some(c) {
                continue;
            }
            updating_safe(&e, c)?;
        }
        if e.name == CHANGE_COLUMN {
            return Err(reserved_name(&e));
        }
        columns.push(e.into_stream_type_or_list()?);
    }
    Ok(columns)
}

/// The error for an output column named as the change kind of updating streams.
fn reserved_name(e: &CompiledExpr) -> anduin_expr::ExprError {
    anduin_expr::ExprError::at(
        e.site.line,
        e.site.col,
        format!("`{CHANGE_COLUMN}` is the name of the change kind of an updating stream's rows, which a column cannot take: rename the column with AS"),
    )
}

/// Why `e` cannot be evaluated on the rows of an updating stream whose change kind is column
/// `change`, if it cannot: a retraction is evaluated again and must give the values of the
/// row it takes back, and the change kind is not data.
pub(crate) fn updating_safe(e: &CompiledExpr, change: usize) -> Result<(), anduin_expr::ExprError> {
    updating_safe_at(e.reads(change), e.volatile_function(), &e.site)
}

/// [`updating_safe`] for an expression at `site` that reads the change kind (`reads_change`)
/// or calls volatile function `volatile`.
pub(crate) fn updating_safe_at(
    reads_change: bool,
    volatile: Option<String>,
    site: &anduin_expr::ExprSite,
) -> Result<(), anduin_expr::ExprError> {
    if reads_change {
        return Err(anduin_expr::ExprError::at(
            site.line,
            site.col,
            format!("`{CHANGE_COLUMN}`, the change kind of an updating stream's rows, cannot be read as a column; write the stream with mode = 'changelog' to see each row's change"),
        ));
    }
    if let Some(f) = volatile {
        return Err(anduin_expr::ExprError::at(
            site.line,
            site.col,
            format!("`{f}()` gives another value at each call, so over an updating stream a row taken back would not match the row it retracts (a wrong result, silently): not supported over updating streams; compute it before the GROUP BY that makes the stream updating"),
        ));
    }
    Ok(())
}

/// The output schema of a map computing `exprs` over `input`: over an updating stream, the
/// change kind kept last, and the row key kept where every key column is passed on as it is.
fn output_schema(exprs: &[CompiledExpr], input: &Schema) -> Schema {
    let mut fields: Vec<Field> = exprs.iter().map(CompiledExpr::field).collect();
    if !is_updating(input) {
        return Schema::new(fields);
    }
    fields.push(change_column());
    let Some(key) = row_key(input) else {
        // Why there is none, as the input says it.
        return match no_row_key(input) {
            Some(why) => without_row_key(fields, why),
            None => Schema::new(fields),
        };
    };
    let kept: Option<Vec<usize>> = key
        .iter()
        .map(|k| exprs.iter().position(|e| e.column() == Some(*k)))
        .collect();
    let of = row_key_of(input);
    match (kept, of) {
        (Some(kept), Some(of)) => with_row_key_of(fields, &kept, of),
        (Some(kept), None) => with_row_key(fields, &kept),
        (None, Some(of)) => {
            let names: Vec<String> = key
                .iter()
                .map(|k| format!("`{}`", input.field(*k).name()))
                .collect();
            without_row_key(
                fields,
                &format!(
                    "its rows are identified by {} ({of}), which must reach the writer as they are (not computed over, not dropped); keep them in the SELECT, or write with mode = 'changelog'",
                    names.join(", ")
                ),
            )
        }
        (None, None) => Schema::new(fields),
    }
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, schema) = inputs.first().expect("arity checked: one input");
    let scope = Scope::new(*stream, Arc::clone(schema));
    let text = p.required("columns");
    let replicated = op.asks_hot_standby();
    crate::in_turn::check(&p, schema, is_updating(schema))?;
    let exprs = compile_columns(text.as_str(), &scope, replicated)
        .map_err(|e| p.expr_error("columns", &text, e))?;
    // Over an updating stream, each row keeps its change kind (as the last column).
    let change = is_updating(schema).then(|| schema.fields().len() - 1);
    let out_schema: SchemaRef = Arc::new(output_schema(&exprs, schema));
    let name = op.name.to_string();
    let schema_for_factory = Arc::clone(&out_schema);
    let sites: Vec<ExprAt> = exprs
        .iter()
        .map(|e| ExprAt::new(format!("column `{}`", e.name), &text, &e.site))
        .collect();
    let on_error = OnError::param(&p);
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(Map {
                name: name.clone(),
                exprs: exprs.clone(),
                change,
                schema: Arc::clone(&schema_for_factory),
                scope: scope.clone(),
                replicated,
                errors: RowErrors::new(&name, sites.clone(), on_error, ctx),
            }))
        })),
        outputs: vec![out_schema],
        warnings: Diagnostics::default(),
        // No key: instances take rows in turn.
        partition_by: vec![None],
    })
}

/// The first function the columns call whose value changes from call to call, and where (see
/// [`anduin_graph::Catalog::volatile_call`]); `None` if none, or if they do not compile (the
/// binding says why).
pub fn volatile_call(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Option<anduin_graph::VolatileCall> {
    let (stream, schema) = inputs.first()?;
    let text = Params::new(op).text("columns")?;
    let scope = Scope::new(*stream, Arc::clone(schema));
    compile_projection(text.as_str(), &scope)
        .ok()?
        .iter()
        .find_map(|e| {
            let function = e.volatile_function()?;
            Some(crate::volatile::call_at(&text, function, &e.site))
        })
}

/// A running map.
struct Map {
    name: String,
    exprs: Vec<CompiledExpr>,
    /// Over an updating stream, the input column of the rows' change kind, passed on as the
    /// last output column.
    change: Option<usize>,
    schema: SchemaRef,
    /// The input, for expressions changed while running.
    scope: Scope,
    /// A copy of a hot standby: changed columns must be deterministic too.
    replicated: bool,
    errors: RowErrors,
}

impl Map {
    /// Every column on `rows`, or the first expression that fails and its error.
    fn columns(&self, rows: &RecordBatch) -> Result<Vec<ArrayRef>, (usize, ExprError)> {
        let mut columns = self
            .exprs
            .iter()
            .enumerate()
            .map(|(i, e)| e.evaluate(rows).map_err(|err| (i, err)))
            .collect::<Result<Vec<_>, _>>()?;
        columns.extend(self.change.map(|c| Arc::clone(rows.column(c))));
        Ok(columns)
    }

    /// The columns of the rows of `batch` (whose rows came from `origins`) no expression
    /// fails on, and the rows that fail; an error if a function ran out of resources.
    fn evaluate(
        &self,
        batch: &RecordBatch,
        origins: Option<&RowOrigins>,
    ) -> Result<(Vec<ArrayRef>, Vec<RowFailure>), OperatorError> {
        let pieces = match evaluate_rows(batch, &mut |b: &RecordBatch| self.columns(b)) {
            Evaluated::Whole(columns) => return Ok((columns, Vec::new())),
            Evaluated::Split(pieces) => pieces,
            Evaluated::Exhausted(f) => return Err(self.errors.exhausted(&f, origins)),
        };
        let failed = failures(&pieces);
        let good: Vec<Vec<ArrayRef>> = pieces
            .into_iter()
            .filter_map(|p| match p {
                Piece::Good { value, .. } => Some(value),
                Piece::Bad(_) => None,
            })
            .collect();
        let columns = (0..self.schema.fields().len())
            .map(|c| {
                if good.is_empty() {
                    return Ok(arrow::array::new_empty_array(
                        self.schema.field(c).data_type(),
                    ));
                }
                let parts: Vec<&dyn Array> = good.iter().map(|cols| cols[c].as_ref()).collect();
                arrow::compute::concat(&parts).map_err(|e| {
                    OperatorError::internal(
                        &self.name,
                        format!("joining the rows that evaluated: {e}"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((columns, failed))
    }
}

impl Operator for Map {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.process_batch_from(input, batch, None, out)
    }

    fn process_batch_from(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        origins: Option<RowOrigins>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let (columns, failed) = self.evaluate(&batch, origins.as_ref())?;
        self.errors.reject(&batch, &failed, origins.as_ref())?;
        let rows = batch.num_rows() - failed.len();
        if rows == 0 {
            return Ok(());
        }
        let options = arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows));
        let result = RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)
            .map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            })?;
        let origins = match origins.filter(|_| out.wants_origins()) {
            Some(o) if !failed.is_empty() => Some(o.filter(&kept_rows(batch.num_rows(), &failed))),
            other => other,
        };
        out.collect_from(0, result, origins)
    }

    fn wants_origins(&self) -> bool {
        true
    }

    /// Row by row: once its input is exhausted, so is its output.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(true)
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        ADJUSTABLE
    }

    /// New expressions for the same output columns (names and types): what the map emits
    /// cannot change under the operators that read it.
    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        let invalid = |message: String| ControlError::Invalid {
            operator: self.name.clone(),
            param: param.to_string(),
            message,
        };
        if param != "columns" {
            return Err(ControlError::NotAdjustable {
                operator: self.name.clone(),
                param: param.to_string(),
                adjustable: ADJUSTABLE.join(", "),
            });
        }
        let exprs =
            compile_columns(value, &self.scope, self.replicated).map_err(|e| invalid(e.message))?;
        let mut fields: Vec<Field> = exprs.iter().map(CompiledExpr::field).collect();
        fields.extend(self.change.map(|_| change_column()));
        let schema = Schema::new(fields);
        if let Some(m) = anduin_graph::schema_mismatch(&self.schema, &schema) {
            return Err(invalid(format!(
                "the new columns differ from the running ones ({m}); a running map must keep its output columns"
            )));
        }
        let text = anduin_spec::Text::unplaced(value);
        let sites = exprs
            .iter()
            .map(|e| ExprAt::new(format!("column `{}`", e.name), &text, &e.site))
            .collect();
        self.errors.set_exprs(sites);
        self.exprs = exprs;
        Ok(())
    }
}
