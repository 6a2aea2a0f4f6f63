//! `filter`: keeps the rows for which a condition holds.

use std::sync::Arc;

use anduin_expr::{compile_predicate, CompiledExpr, Scope};

use crate::replica_safe::replica_safe;
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::{is_updating, Diagnostics};
use arrow::array::{BooleanArray, BooleanBuilder};
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{
    evaluate_rows, Collector, ControlError, Evaluated, ExprAt, OnError, Operator, OperatorError,
    Piece, RowErrors, RowFailure, RowOrigins,
};

/// The `filter` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "filter",
    doc: "keeps the rows for which `condition` is true (null counts as false)",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[
        ParamSpec {
            name: "condition",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "a SQL boolean expression over the input's columns, e.g. \"readings.value < 42\"; adjustable while running",
        },
        anduin_operator_api::ON_ERROR,
        crate::in_turn::PARALLELISM,
        crate::in_turn::RANGES,
    ],
};

/// The params a running filter can change.
pub const ADJUSTABLE: &[&str] = &["condition"];

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, schema) = inputs.first().expect("arity checked: one input");
    let scope = Scope::new(*stream, Arc::clone(schema));
    let text = p.required("condition");
    let replicated = op.asks_hot_standby();
    crate::in_turn::check(&p, schema, is_updating(schema))?;
    let predicate = compile_predicate(text.as_str(), &scope)
        .and_then(|c| match is_updating(schema) {
            true => crate::map::updating_safe(&c, schema.fields().len() - 1).map(|()| c),
            false => Ok(c),
        })
        .and_then(|c| replica_safe(replicated, c.volatile_function(), &c.site).map(|()| c))
        .map_err(|e| p.expr_error("condition", &text, e))?;
    let name = op.name.to_string();
    let site = ExprAt::new("condition", &text, &predicate.site);
    let on_error = OnError::param(&p);
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(Filter {
                name: name.clone(),
                predicate: predicate.clone(),
                scope: scope.clone(),
                replicated,
                errors: RowErrors::new(&name, vec![site.clone()], on_error, ctx),
            }))
        })),
        outputs: vec![Arc::clone(schema)],
        warnings: Diagnostics::default(),
        // No key: instances take rows in turn.
        partition_by: vec![None],
    })
}

/// The first function the condition calls whose value changes from call to call, and where
/// (see [`anduin_graph::Catalog::volatile_call`]); `None` if none, or if it does not compile
/// (the binding says why).
pub fn volatile_call(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Option<anduin_graph::VolatileCall> {
    let (stream, schema) = inputs.first()?;
    let text = Params::new(op).text("condition")?;
    let scope = Scope::new(*stream, Arc::clone(schema));
    let c = compile_predicate(text.as_str(), &scope).ok()?;
    let function = c.volatile_function()?;
    Some(crate::volatile::call_at(&text, function, &c.site))
}

/// A running filter.
struct Filter {
    name: String,
    predicate: CompiledExpr,
    scope: Scope,
    /// A copy of a hot standby: a changed condition must be deterministic too.
    replicated: bool,
    errors: RowErrors,
}

impl Filter {
    /// Which rows of `batch` (whose rows came from `origins`) the condition keeps (false
    /// where it fails), and the rows it failed on; an error if a function in it ran out of
    /// resources.
    fn mask(
        &self,
        batch: &RecordBatch,
        origins: Option<&RowOrigins>,
    ) -> Result<(BooleanArray, Vec<RowFailure>), OperatorError> {
        let mut eval = |b: &RecordBatch| self.predicate.evaluate_bool(b).map_err(|e| (0, e));
        let pieces = match evaluate_rows(batch, &mut eval) {
            Evaluated::Whole(mask) => return Ok((mask, Vec::new())),
            Evaluated::Split(pieces) => pieces,
            Evaluated::Exhausted(f) => return Err(self.errors.exhausted(&f, origins)),
        };
        let mut mask = BooleanBuilder::with_capacity(batch.num_rows());
        let mut failed = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Good { value, .. } => {
                    mask.extend(value.iter().map(|v| Some(v.unwrap_or(false))));
                }
                Piece::Bad(f) => {
                    mask.append_value(false);
                    failed.push(f);
                }
            }
        }
        Ok((mask.finish(), failed))
    }
}

impl Operator for Filter {
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
        let (mask, failed) = self.mask(&batch, origins.as_ref())?;
        self.errors.reject(&batch, &failed, origins.as_ref())?;
        let kept = mask.true_count();
        if kept == 0 {
            return Ok(());
        }
        let origins = origins.filter(|_| out.wants_origins());
        if kept == batch.num_rows() {
            return out.collect_from(0, batch, origins);
        }
        let filtered =
            filter_record_batch(&batch, &mask).map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            })?;
        out.collect_from(0, filtered, origins.map(|o| o.filter(&mask)))
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

    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        if param != "condition" {
            return Err(ControlError::NotAdjustable {
                operator: self.name.clone(),
                param: param.to_string(),
                adjustable: ADJUSTABLE.join(", "),
            });
        }
        let predicate = compile_predicate(value, &self.scope)
            .and_then(|c| replica_safe(self.replicated, c.volatile_function(), &c.site).map(|()| c))
            .map_err(|e| ControlError::Invalid {
                operator: self.name.clone(),
                param: param.to_string(),
                message: e.message,
            })?;
        // The new condition is not in the query file: rejected rows name it by its text.
        let site = ExprAt::new(
            "condition",
            &anduin_spec::Text::unplaced(value),
            &predicate.site,
        );
        self.errors.set_exprs(vec![site]);
        self.predicate = predicate;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    struct Sink(Vec<RecordBatch>);
    impl Collector for Sink {
        fn collect(&mut self, _port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
            self.0.push(batch);
            Ok(())
        }
    }

    fn filter(cond: &str) -> Filter {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let scope = Scope::new("s", schema);
        let predicate = compile_predicate(cond, &scope).expect("valid");
        let site = ExprAt::new(
            "condition",
            &anduin_spec::Text::unplaced(cond),
            &predicate.site,
        );
        Filter {
            name: "f".into(),
            predicate,
            scope,
            replicated: false,
            errors: RowErrors::new(
                "f",
                vec![site],
                Some(OnError::Fail),
                &anduin_operator_api::BuildContext::default(),
            ),
        }
    }

    fn batch(values: Vec<Option<i64>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))]).expect("valid")
    }

    #[test]
    fn keeps_matching_rows_and_drops_nulls() {
        let mut f = filter("v < 3");
        let mut out = Sink(vec![]);
        f.process_batch(0, batch(vec![Some(1), None, Some(5), Some(2)]), &mut out)
            .expect("runs");
        assert_eq!(out.0.len(), 1);
        assert_eq!(out.0[0].num_rows(), 2);
    }

    #[test]
    fn the_condition_changes_while_running_and_a_bad_one_changes_nothing() {
        let mut f = filter("v < 3");
        let err = f
            .set_param("condition", "w < 1")
            .expect_err("unknown column");
        assert!(err.to_string().contains("unknown column `w`"), "{err}");
        f.set_param("condition", "v > 3").expect("valid");
        let mut out = Sink(vec![]);
        f.process_batch(0, batch(vec![Some(1), Some(5)]), &mut out)
            .expect("runs");
        assert_eq!(out.0[0].num_rows(), 1);
    }
}
