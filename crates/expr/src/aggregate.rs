//! Aggregate columns of a window (`COUNT(*) AS cnt, AVG(CAST(value AS DOUBLE)) AS avg`):
//! DataFusion's aggregate functions, compiled against a stream's schema, with their
//! vectorized group accumulators.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::{DataType, Field, FieldRef, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion_expr::{Expr, GroupsAccumulator};
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::GroupsAccumulatorAdapter;
use datafusion_physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion_physical_expr::PhysicalExpr;
use sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem, Spanned,
};
use sqlparser::parser::Parser;

use anduin_spec::nesting::with_stack;

use crate::compile::{default_name, physical_expr, to_logical};
use crate::locate::{clean_message, evaluation_error, located};
use crate::narrow;
use crate::parse::tokenize;
use crate::{ExprError, Scope};

/// One aggregate column, ready to accumulate batches of its scope's schema.
#[derive(Debug, Clone)]
pub struct CompiledAggregate {
    /// The output column's name.
    pub name: String,
    expr: Arc<AggregateFunctionExpr>,
    /// The arguments and the filter, over the scope's columns they read (see
    /// [`crate::narrow`]).
    args: Vec<Arc<dyn PhysicalExpr>>,
    filter: Option<Arc<dyn PhysicalExpr>>,
    /// The indices in the scope's schema of the columns they read, when not all.
    columns: Option<Arc<[usize]>>,
    /// The schema they are planned over: the scope's narrowed to `columns`.
    input: SchemaRef,
    /// At most how many levels deep the arguments and the filter are.
    depth: usize,
    /// The aggregate call as written and where it starts, for an error on a row.
    pub site: crate::ExprSite,
}

impl CompiledAggregate {
    /// A fresh accumulator for any number of groups (vectorized where DataFusion has one for
    /// this function, an adapter over the row-wise accumulator otherwise). `MIN` and `MAX`
    /// of floats order NaN above every number and -0 below +0, whatever the rows' order
    /// (see [`crate::SqlFloat`]).
    pub fn groups_accumulator(&self) -> Result<Box<dyn GroupsAccumulator>, ExprError> {
        if let Some(acc) =
            crate::float_order::min_max_accumulator(self.expr.fun().name(), &self.data_type())
        {
            return Ok(acc);
        }
        if self.expr.groups_accumulator_supported() {
            return self
                .expr
                .create_groups_accumulator()
                .map_err(|e| ExprError::whole(clean_message(&e)));
        }
        let expr = Arc::clone(&self.expr);
        Ok(Box::new(GroupsAccumulatorAdapter::new(move || {
            expr.create_accumulator()
        })))
    }

    /// The argument columns of `batch` that the accumulator takes.
    pub fn arguments(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>, ExprError> {
        let batch = narrow::input(self.columns.as_deref(), batch)?;
        with_stack(self.depth, || {
            self.args
                .iter()
                .map(|a| {
                    a.evaluate(&batch)
                        .and_then(|v| v.into_array(batch.num_rows()))
                        .map_err(|e| evaluation_error(&e))
                })
                .collect()
        })
    }

    /// The rows a `FILTER (WHERE …)` clause keeps, if there is one.
    pub fn filter(&self, batch: &RecordBatch) -> Result<Option<BooleanArray>, ExprError> {
        let Some(f) = &self.filter else {
            return Ok(None);
        };
        let batch = narrow::input(self.columns.as_deref(), batch)?;
        let v = with_stack(self.depth, || {
            f.evaluate(&batch)
                .and_then(|v| v.into_array(batch.num_rows()))
        })
        .map_err(|e| evaluation_error(&e))?;
        v.as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .map(Some)
            .ok_or_else(|| ExprError::whole("a FILTER clause must be true or false"))
    }

    /// The fields of the intermediate state (what a snapshot stores per group).
    pub fn state_fields(&self) -> Result<Vec<FieldRef>, ExprError> {
        self.expr
            .state_fields()
            .map_err(|e| ExprError::whole(clean_message(&e)))
    }

    /// The output field, named after the column.
    pub fn field(&self) -> Field {
        let f = self.expr.field();
        Field::new(&self.name, f.data_type().clone(), true)
    }

    /// The aggregate function's name as DataFusion calls it (`count`, `sum`, `avg`, `min`,
    /// `max`, …).
    pub fn function_name(&self) -> &str {
        self.expr.fun().name()
    }

    /// The function's name if it is a user-defined aggregate that cannot combine two of its
    /// states (a JavaScript aggregate that exports no `merge`): the panes of a sliding window
    /// and sessions that meet need it ([`crate::FunctionProvider::register_aggregate`]).
    pub fn without_merge(&self) -> Option<&str> {
        let name = self.function_name();
        (crate::FunctionProvider::get().user_aggregate_merges(name) == Some(false)).then_some(name)
    }

    /// The user-defined aggregate it calls, as an operator that keeps its groups' states
    /// steps it ([`crate::UserAggregate`]); `None` for a built-in function.
    pub fn user(&self) -> Option<Arc<dyn crate::UserAggregate>> {
        crate::FunctionProvider::get().user_aggregate(self.function_name())
    }

    /// Whether it aggregates the distinct values of its argument (`COUNT(DISTINCT x)`).
    pub fn is_distinct(&self) -> bool {
        self.expr.is_distinct()
    }

    /// The index in the scope's schema of its argument when it has one and it is a column as
    /// it is (`COUNT(DISTINCT bidder)`), not an expression over columns: aggregates whose
    /// argument is the same column may share their state of its values.
    pub fn column_argument(&self) -> Option<usize> {
        let [arg] = self.args.as_slice() else {
            return None;
        };
        let c = arg.downcast_ref::<datafusion_physical_expr::expressions::Column>()?;
        match &self.columns {
            Some(read) => read.get(c.index()).copied(),
            None => Some(c.index()),
        }
    }

    /// This aggregate with an argument that DataFusion cast from `BIGINT` to `DOUBLE` (as it
    /// does for `AVG`) taken as the `BIGINT` it was, for an accumulator that adds integers
    /// exactly; unchanged otherwise.
    pub fn with_integer_argument(mut self) -> Self {
        let inner = self.args.first().and_then(|a| {
            let cast = a.downcast_ref::<datafusion_physical_expr::expressions::CastExpr>()?;
            let int = cast.expr().data_type(&self.input).ok()? == DataType::Int64;
            (int && *cast.cast_type() == DataType::Float64).then(|| Arc::clone(cast.expr()))
        });
        if let Some(inner) = inner {
            self.args[0] = inner;
        }
        self
    }

    /// Whether its arguments or its filter read input column `index`.
    pub fn reads(&self, index: usize) -> bool {
        narrow::position(self.columns.as_deref(), index).is_some_and(|i| {
            self.args
                .iter()
                .chain(&self.filter)
                .any(|e| crate::compile::reads(e, i))
        })
    }

    /// The first volatile function (`random()`) in its arguments or its filter, by name.
    pub fn volatile_function(&self) -> Option<String> {
        self.args
            .iter()
            .chain(&self.filter)
            .find_map(crate::compile::volatile_function)
    }

    /// The output type.
    pub fn data_type(&self) -> DataType {
        self.expr.field().data_type().clone()
    }
}

/// Compiles a list of aggregate columns, each one aggregate call optionally named with `AS`:
/// `COUNT(*) AS cnt, AVG(CAST(value AS DOUBLE)) AS avg, COUNT(DISTINCT sensor),
/// SUM(value) FILTER (WHERE value > 0) AS positive`.
pub fn compile_aggregates(text: &str, scope: &Scope) -> Result<Vec<CompiledAggregate>, ExprError> {
    let tokens = tokenize(text)?;
    let depth = tokens.depth;
    with_stack(depth, || {
        let items = tokens.parse(|p| p.parse_comma_separated(Parser::parse_select_item))?;
        aggregates(items, scope, depth)
    })
}

fn aggregates(
    items: Vec<SelectItem>,
    scope: &Scope,
    depth: usize,
) -> Result<Vec<CompiledAggregate>, ExprError> {
    let mut out: Vec<CompiledAggregate> = Vec::new();
    for item in items {
        let (sql, name) = match item {
            SelectItem::UnnamedExpr(e) => {
                let name = default_name(&e);
                (e, name)
            }
            SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            other => {
                let loc = other.span().start;
                return Err(ExprError::at(
                    loc.line,
                    loc.column,
                    "expected an aggregate such as `COUNT(*) AS n` or `AVG(value) AS avg`",
                ));
            }
        };
        if out.iter().any(|a| a.name == name) {
            return Err(ExprError::whole(format!(
                "aggregate column `{name}` is given twice: give one of them another name with `AS`"
            )));
        }
        out.push(compile_one(
            count_star_as_count_one(sql),
            name,
            scope,
            depth,
        )?);
    }
    if out.is_empty() {
        return Err(ExprError::whole("expected at least one aggregate"));
    }
    Ok(out)
}

/// `COUNT(*)` counts rows: the same as `COUNT(1)`, which DataFusion's expression planner takes.
fn count_star_as_count_one(mut sql: SqlExpr) -> SqlExpr {
    if let SqlExpr::Function(f) = &mut sql {
        if let FunctionArguments::List(list) = &mut f.args {
            for arg in &mut list.args {
                if let FunctionArg::Unnamed(a @ FunctionArgExpr::Wildcard) = arg {
                    *a = FunctionArgExpr::Expr(SqlExpr::value(sqlparser::ast::Value::Number(
                        "1".into(),
                        false,
                    )));
                }
            }
        }
    }
    sql
}

fn compile_one(
    sql: SqlExpr,
    name: String,
    scope: &Scope,
    depth: usize,
) -> Result<CompiledAggregate, ExprError> {
    let start = sql.span().start;
    let site = crate::ExprSite::of(&sql);
    let (logical, df_schema) = to_logical(sql, scope, true)?;
    let Expr::AggregateFunction(agg) = &logical else {
        return Err(ExprError::at(
            start.line,
            start.column,
            format!(
                "`{}` is not an aggregate: each column of a window is one aggregate call, such as `MAX(value)` (an expression over aggregates is not supported yet)",
                logical.human_display()
            ),
        ));
    };
    let params = &agg.params;
    if !params.order_by.is_empty() {
        return Err(ExprError::at(
            start.line,
            start.column,
            "ORDER BY inside an aggregate is not supported yet",
        ));
    }
    let narrowed =
        narrow::narrowed(&logical, &df_schema, scope).map_err(|e| located(&e, start, scope))?;
    let args = params
        .args
        .iter()
        .map(|a| physical_expr(a, &narrowed.df_schema, start, scope))
        .collect::<Result<Vec<_>, _>>()?;
    let filter = params
        .filter
        .as_deref()
        .map(|f| physical_expr(f, &narrowed.df_schema, start, scope))
        .transpose()?;
    let input = Arc::clone(narrowed.df_schema.inner());
    let expr = AggregateExprBuilder::new(Arc::clone(&agg.func), args.clone())
        .schema(Arc::clone(&input))
        .alias(name.clone())
        .with_distinct(params.distinct)
        .build()
        .map_err(|e| located(&e, start, scope))?;
    Ok(CompiledAggregate {
        name,
        expr: Arc::new(expr),
        args,
        filter,
        columns: narrowed.columns,
        input,
        depth,
        site,
    })
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float64Array, Int64Array};
    use arrow::datatypes::Schema;
    use datafusion_expr::EmitTo;

    use super::*;

    fn scope() -> Scope {
        Scope::new(
            "events",
            Arc::new(Schema::new(vec![
                Field::new("sensor", DataType::Int64, true),
                Field::new("value", DataType::Int64, true),
            ])),
        )
    }

    fn batch() -> RecordBatch {
        RecordBatch::try_new(
            Arc::clone(&scope().schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 1, 2, 2, 2])),
                Arc::new(Int64Array::from(vec![
                    Some(10),
                    Some(20),
                    Some(5),
                    None,
                    Some(5),
                ])),
            ],
        )
        .expect("valid")
    }

    fn run(text: &str) -> Vec<ArrayRef> {
        let aggs = compile_aggregates(text, &scope()).expect("valid");
        let b = batch();
        let groups = [0usize, 0, 1, 1, 1];
        aggs.iter()
            .map(|a| {
                let mut acc = a.groups_accumulator().expect("accumulator");
                let args = a.arguments(&b).expect("arguments");
                let filter = a.filter(&b).expect("filter");
                acc.update_batch(&args, &groups, filter.as_ref(), 2)
                    .expect("updates");
                acc.evaluate(EmitTo::All).expect("evaluates")
            })
            .collect()
    }

    #[test]
    fn count_avg_max_distinct_and_filter_per_group() {
        let out = run("COUNT(*) AS n, COUNT(value) AS nv, AVG(CAST(value AS DOUBLE)) AS avg, MAX(value) AS mx, COUNT(DISTINCT value) AS d, SUM(value) FILTER (WHERE value > 5) AS big");
        let ints = |i: usize| {
            out[i]
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        assert_eq!(ints(0), Int64Array::from(vec![2, 3]));
        assert_eq!(ints(1), Int64Array::from(vec![2, 2]));
        let avg = out[2]
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("doubles");
        assert_eq!(avg, &Float64Array::from(vec![15.0, 5.0]));
        assert_eq!(ints(3), Int64Array::from(vec![20, 5]));
        assert_eq!(ints(4), Int64Array::from(vec![2, 1]));
        assert_eq!(ints(5), Int64Array::from(vec![Some(30), None]));
    }

    #[test]
    fn a_non_aggregate_column_is_refused() {
        let e = compile_aggregates("value + 1 AS v", &scope()).expect_err("not an aggregate");
        assert!(e.message.contains("is not an aggregate"), "{}", e.message);
        let e = compile_aggregates("SUM(value) / COUNT(*) AS mean", &scope())
            .expect_err("expression over aggregates");
        assert!(e.message.contains("is not an aggregate"), "{}", e.message);
    }
}
