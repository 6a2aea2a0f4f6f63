//! `filter`: keeps the rows for which a condition holds.

use std::sync::Arc;

use anduin_expr::{compile_predicate, CompiledExpr, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::catalog::Bound;
use crate::params::Params;
use crate::{Collector, ControlError, Operator, OperatorError};

/// The `filter` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "filter",
    doc: "keeps the rows for which `condition` is true (null counts as false)",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[ParamSpec {
        name: "condition",
        required: true,
        kind: ParamKind::Text,
        default: None,
        doc: "a SQL boolean expression over the input's columns, e.g. \"readings.value < 42\"; adjustable while running",
    }],
};

pub(crate) fn bind(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, schema) = inputs.first().expect("arity checked: one input");
    let scope = Scope::new(*stream, Arc::clone(schema));
    let text = p.required("condition");
    let predicate = compile_predicate(text.as_str(), &scope)
        .map_err(|e| p.expr_error("condition", &text, e))?;
    let name = op.name.to_string();
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_| {
            Ok(Box::new(Filter {
                name: name.clone(),
                predicate: predicate.clone(),
                scope: scope.clone(),
            }))
        })),
        outputs: vec![Arc::clone(schema)],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// A running filter.
struct Filter {
    name: String,
    predicate: CompiledExpr,
    scope: Scope,
}

impl Operator for Filter {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let mask = self
            .predicate
            .evaluate_bool(&batch)
            .map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: format!("condition failed: {e}"),
            })?;
        let kept = mask.true_count();
        if kept == 0 {
            return Ok(());
        }
        if kept == batch.num_rows() {
            return out.collect(0, batch);
        }
        let filtered =
            filter_record_batch(&batch, &mask).map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            })?;
        out.collect(0, filtered)
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        &["condition"]
    }

    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        if param != "condition" {
            return Err(ControlError::NotAdjustable {
                operator: self.name.clone(),
                param: param.to_string(),
                adjustable: "condition".into(),
            });
        }
        self.predicate =
            compile_predicate(value, &self.scope).map_err(|e| ControlError::Invalid {
                operator: self.name.clone(),
                param: param.to_string(),
                message: e.message,
            })?;
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
        Filter {
            name: "f".into(),
            predicate: compile_predicate(cond, &scope).expect("valid"),
            scope,
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
