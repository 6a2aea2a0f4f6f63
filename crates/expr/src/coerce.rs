//! DataFusion's type coercion, in linear time for long chains.
//!
//! DataFusion coerces an expression from the leaves up, and at each node asks for the type of
//! its operands, which it works out by walking their whole subtrees: a chain `a + a + … + a`
//! of n terms costs n² steps (seconds for a few thousand terms), calls nested in calls n³
//! (they name every argument on the way). Here the same rewriter ([`TypeCoercionRewriter`])
//! runs node by node, and every node that heads a subtree [`PIECE`] levels high is set aside
//! once coerced, replaced by a placeholder of its type (which is all that the coercion of the
//! nodes above it looks at: a literal, which a function may look at, is a leaf and never set
//! aside), and put back at the end. No subtree walked for a type is then more than [`PIECE`]
//! levels high.

use std::sync::Arc;

use arrow::datatypes::Field;
use datafusion_common::tree_node::{Transformed, TreeNode, TreeNodeRewriter};
use datafusion_common::{DFSchema, Result};
use datafusion_expr::expr::Placeholder;
use datafusion_expr::{Expr, ExprSchemable};
use datafusion_optimizer::analyzer::type_coercion::TypeCoercionRewriter;

/// How high a coerced subtree grows before it is set aside.
const PIECE: usize = 16;

/// The id of the placeholder for the i-th piece set aside: a space cannot be in the id of a
/// placeholder written in an expression (`$1`, `$name`), so none is taken for one.
const PIECE_ID: &str = "$anduin piece ";

/// `expr` with DataFusion's type coercion applied, as [`ExprSimplifier::coerce`] does.
///
/// [`ExprSimplifier::coerce`]: datafusion_optimizer::simplify_expressions::ExprSimplifier::coerce
pub(crate) fn coerce(expr: Expr, schema: &DFSchema) -> Result<Expr> {
    let mut pieces = Pieces {
        inner: TypeCoercionRewriter::new(schema),
        schema,
        heights: Vec::new(),
        set_aside: Vec::new(),
    };
    let top = expr.rewrite(&mut pieces)?.data;
    let mut set_aside = pieces.set_aside;
    top.transform_down(|e| match e {
        Expr::Placeholder(Placeholder { ref id, .. }) => {
            let piece = id
                .strip_prefix(PIECE_ID)
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| set_aside.get_mut(i))
                .and_then(Option::take);
            Ok(match piece {
                Some(p) => Transformed::yes(p),
                None => Transformed::no(e),
            })
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

struct Pieces<'a> {
    inner: TypeCoercionRewriter<'a>,
    schema: &'a DFSchema,
    /// Per node being rewritten, the height of its highest child so far.
    heights: Vec<usize>,
    /// The coerced pieces, by placeholder number.
    set_aside: Vec<Option<Expr>>,
}

impl TreeNodeRewriter for Pieces<'_> {
    type Node = Expr;

    fn f_down(&mut self, node: Expr) -> Result<Transformed<Expr>> {
        self.heights.push(0);
        Ok(Transformed::no(node))
    }

    fn f_up(&mut self, node: Expr) -> Result<Transformed<Expr>> {
        let below = self.heights.pop().unwrap_or(0);
        let coerced = self.inner.f_up(node)?;
        let mut height = below + 1;
        let node = if height >= PIECE && !matches!(coerced.data, Expr::Alias(_)) {
            let piece = coerced.data;
            let field = Field::new(
                "",
                piece.get_type(self.schema)?,
                piece.nullable(self.schema)?,
            );
            let id = format!("{PIECE_ID}{}", self.set_aside.len());
            self.set_aside.push(Some(piece));
            height = 1;
            Transformed::yes(Expr::Placeholder(Placeholder::new_with_field(
                id,
                Some(Arc::new(field)),
            )))
        } else {
            coerced
        };
        if let Some(parent) = self.heights.last_mut() {
            *parent = (*parent).max(height);
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Schema};
    use datafusion_expr::{col, lit};
    use datafusion_optimizer::simplify_expressions::ExprSimplifier;

    #[test]
    fn a_long_chain_coerces_as_datafusion_does() {
        let schema = DFSchema::try_from(Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("d", DataType::Float64, true),
        ]))
        .expect("schema");
        let mut e = col("i");
        for k in 0..100 {
            e = e + if k % 7 == 3 { col("d") } else { lit(k) };
        }
        let e = e.lt(lit(3.5_f32)).and(col("i").eq(lit(2_i64)));
        let simplifier = ExprSimplifier::new(
            datafusion_expr::simplify::SimplifyContext::builder()
                .with_schema(Arc::new(schema.clone()))
                .build(),
        );
        let theirs = simplifier.coerce(e.clone(), &schema).expect("coerces");
        assert_eq!(coerce(e, &schema).expect("coerces"), theirs);
    }
}
