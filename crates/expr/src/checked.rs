//! Integer arithmetic that fails on overflow instead of wrapping.
//!
//! DataFusion's `+`, `-`, `*` and unary `-` wrap around on integer overflow by default
//! (`i64::MAX + 1` is `i64::MIN`), which would be a silent wrong answer. anduin compiles them
//! checked, as PostgreSQL does: an overflow is an error on the row, and the operator that
//! evaluates the expression sends that row to the dead letters (or stops, with
//! `on_error = "fail"`).

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion_common::tree_node::{Transformed, TreeNode};
use datafusion_common::ScalarValue;
use datafusion_expr::Operator;
use datafusion_physical_expr::expressions::{BinaryExpr, Literal, NegativeExpr};
use datafusion_physical_expr::PhysicalExpr;

/// `expr` with every addition, subtraction, multiplication and integer negation checked.
pub(crate) fn checked(
    expr: Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> datafusion_common::Result<Arc<dyn PhysicalExpr>> {
    expr.transform_up(|node| {
        if let Some(b) = node.downcast_ref::<BinaryExpr>() {
            if matches!(
                b.op(),
                Operator::Plus | Operator::Minus | Operator::Multiply
            ) {
                let e = BinaryExpr::new(Arc::clone(b.left()), *b.op(), Arc::clone(b.right()))
                    .with_fail_on_overflow(true);
                return Ok(Transformed::yes(Arc::new(e) as Arc<dyn PhysicalExpr>));
            }
        }
        if let Some(n) = node.downcast_ref::<NegativeExpr>() {
            let data_type = n.arg().data_type(schema)?;
            if data_type.is_signed_integer() {
                // 0 - x fails for the smallest value, whose negation does not exist.
                let zero = ScalarValue::new_zero(&data_type)?;
                let e = BinaryExpr::new(
                    Arc::new(Literal::new(zero)),
                    Operator::Minus,
                    Arc::clone(n.arg()),
                )
                .with_fail_on_overflow(true);
                return Ok(Transformed::yes(Arc::new(e) as Arc<dyn PhysicalExpr>));
            }
        }
        Ok(Transformed::no(node))
    })
    .map(|t| t.data)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field};
    use arrow::record_batch::RecordBatch;

    use super::*;
    use crate::{compile_expr, Scope};

    fn eval(text: &str, values: Vec<i64>) -> Result<Vec<Option<i64>>, String> {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(values))],
        )
        .expect("one column");
        let e = compile_expr(text, &Scope::new("s", schema)).expect("valid");
        let out = e.evaluate(&batch).map_err(|e| e.message)?;
        let out = out.as_any().downcast_ref::<Int64Array>().expect("ints");
        Ok((0..out.len())
            .map(|i| out.is_valid(i).then(|| out.value(i)))
            .collect())
    }

    #[test]
    fn integer_overflow_is_an_error_not_a_wrapped_value() {
        assert_eq!(eval("v + 1", vec![1, 2]), Ok(vec![Some(2), Some(3)]));
        for text in ["v + 1", "v * 2", "1 - v - 3", "-v - 2"] {
            let e = eval(text, vec![1, i64::MAX]).expect_err(text);
            assert!(e.contains("Overflow"), "{text}: {e}");
        }
        let e = eval("-v", vec![i64::MIN]).expect_err("no negation of the smallest");
        assert!(e.contains("Overflow"), "{e}");
        assert_eq!(eval("-v", vec![5]), Ok(vec![Some(-5)]));
    }

    #[test]
    fn the_site_of_an_expression_is_its_text_and_start() {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let cols = crate::compile_projection("v,\n  v / (v - 1) AS q", &Scope::new("s", schema))
            .expect("valid");
        assert_eq!(cols[1].site.text, "v / (v - 1)");
        assert_eq!((cols[1].site.line, cols[1].site.col), (2, 3));
    }
}
