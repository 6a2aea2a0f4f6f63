//! Expression text → DataFusion logical expression → type-coerced, simplified physical
//! expression.

use std::sync::Arc;

use anduin_spec::nesting::with_stack;
use anduin_types::ColumnType;
use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::DFSchema;
use datafusion_expr::execution_props::ExecutionProps;
use datafusion_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion_expr::simplify::SimplifyContext;
use datafusion_expr::{Expr, ExprSchemable};
use datafusion_optimizer::simplify_expressions::ExprSimplifier;
use datafusion_physical_expr::expressions::CastExpr;
use datafusion_physical_expr::{create_physical_expr, PhysicalExpr};
use datafusion_sql::planner::{ParserOptions, PlannerContext, SqlToRel};
use sqlparser::ast::{Expr as SqlExpr, SelectItem, Spanned};
use sqlparser::parser::Parser;

use crate::coerce::coerce;
use crate::locate::{evaluation_error, located};
use crate::narrow;
use crate::parse::tokenize;
use crate::strict::{check_comparisons, check_functions};
use crate::{ExprError, FunctionProvider};

/// The columns an expression can see: one input stream's schema, whose name may qualify
/// columns (`readings.value`).
#[derive(Clone, Debug)]
pub struct Scope {
    /// The stream's name, usable as a qualifier.
    pub qualifier: String,
    /// The stream's schema.
    pub schema: Arc<Schema>,
}

impl Scope {
    /// A scope over one stream.
    pub fn new(qualifier: impl Into<String>, schema: Arc<Schema>) -> Self {
        Self {
            qualifier: qualifier.into(),
            schema,
        }
    }

    fn df_schema(&self) -> Result<DFSchema, ExprError> {
        DFSchema::try_from_qualified_schema(self.qualifier.as_str(), &self.schema)
            .map_err(|e| ExprError::whole(format!("invalid input schema: {e}")))
    }
}

/// A compiled expression, ready to evaluate on batches of its scope's schema.
#[derive(Debug, Clone)]
pub struct CompiledExpr {
    /// The vectorized expression, over the scope's columns that it reads (in their order, the
    /// first numbered 0; see [`crate::narrow`]): [`CompiledExpr::evaluate`] gives it a batch
    /// narrowed to them.
    pub physical: Arc<dyn PhysicalExpr>,
    /// The indices in the scope's schema of the columns `physical` reads, when not all.
    pub(crate) columns: Option<Arc<[usize]>>,
    /// The output column's name (the alias, the column name, or the expression as written).
    pub name: String,
    /// The result type.
    pub data_type: DataType,
    /// Whether the result may be null.
    pub nullable: bool,
    /// At most how many levels deep the expression's tree is: evaluating it takes a stack
    /// for that many.
    pub depth: usize,
    /// The expression as written and where it starts in the text it was compiled from, for
    /// an error on a row.
    pub site: ExprSite,
}

/// Whether `e` reads input column `index`.
pub(crate) fn reads(e: &Arc<dyn PhysicalExpr>, index: usize) -> bool {
    datafusion_physical_expr::utils::collect_columns(e)
        .iter()
        .any(|c| c.index() == index)
}

/// The first volatile function (`random()`) in `e`, by name.
pub(crate) fn volatile_function(e: &Arc<dyn PhysicalExpr>) -> Option<String> {
    if let Some(f) = e.downcast_ref::<datafusion_physical_expr::ScalarFunctionExpr>() {
        if f.fun().signature().volatility == datafusion_expr::Volatility::Volatile {
            return Some(f.name().to_string());
        }
    }
    e.children().into_iter().find_map(volatile_function)
}

/// An expression as written (normalised by the SQL printer: `a / b`) and where it starts in
/// the text it was compiled from: what a rejected row names as its cause.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExprSite {
    /// The expression's SQL text.
    pub text: String,
    /// 1-based line of its start in the compiled text (0 when unknown).
    pub line: u64,
    /// 1-based column of its start in the compiled text (0 when unknown).
    pub col: u64,
}

impl ExprSite {
    pub(crate) fn of(sql: &SqlExpr) -> Self {
        let start = sql.span().start;
        Self {
            text: sql.to_string(),
            line: start.line,
            col: start.column,
        }
    }
}

impl CompiledExpr {
    /// Evaluates on `batch`, returning one value per row.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef, ExprError> {
        let input = narrow::input(self.columns.as_deref(), batch)?;
        with_stack(self.depth, || {
            self.physical
                .evaluate(&input)
                .and_then(|v| v.into_array(input.num_rows()))
        })
        .map_err(|e| evaluation_error(&e))
    }

    /// Evaluates a boolean expression on `batch`.
    pub fn evaluate_bool(&self, batch: &RecordBatch) -> Result<BooleanArray, ExprError> {
        let arr = self.evaluate(batch)?;
        arr.as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| ExprError::whole("expression did not evaluate to booleans"))
    }

    /// The output field.
    pub fn field(&self) -> Field {
        Field::new(&self.name, self.data_type.clone(), self.nullable)
    }

    /// The index of the input column this expression is, if it is one column as it is (`k`,
    /// `k AS key`), not computed from it.
    pub fn column(&self) -> Option<usize> {
        self.physical
            .downcast_ref::<datafusion_physical_expr::expressions::Column>()
            .and_then(|c| narrow::original(self.columns.as_deref(), c.index()))
    }

    /// Whether the expression reads input column `index`.
    pub fn reads(&self, index: usize) -> bool {
        narrow::position(self.columns.as_deref(), index).is_some_and(|i| reads(&self.physical, i))
    }

    /// The first function in the expression whose result may differ between two calls on the
    /// same row (`random()`, `uuid()`), by name; `None` if every call on a row gives the
    /// same value.
    pub fn volatile_function(&self) -> Option<String> {
        volatile_function(&self.physical)
    }

    /// The expression cast to the column type a stream carries (see
    /// [`ColumnType::carrying`]), so that every stream holds only anduin's five types.
    /// Fails, naming the column, for a result type a stream cannot carry.
    pub fn into_stream_type(self) -> Result<Self, ExprError> {
        let Some(target) = ColumnType::carrying(&self.data_type).map(ColumnType::arrow_type) else {
            return Err(ExprError::whole(format!(
                "column `{}` is of type {}, which a stream cannot carry: CAST it to BIGINT, DOUBLE, BOOLEAN, VARCHAR or TIMESTAMP",
                self.name, self.data_type
            )));
        };
        if target == self.data_type {
            return Ok(self);
        }
        let options = arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        Ok(Self {
            physical: Arc::new(CastExpr::new(self.physical, target.clone(), Some(options))),
            columns: self.columns,
            name: self.name,
            data_type: target,
            nullable: self.nullable,
            depth: self.depth + 1,
            site: self.site,
        })
    }

    /// [`Self::into_stream_type`], except that a list of one of the column types (a
    /// pattern's `array_agg` measure, see [`ColumnType::list_item`]) passes as it is: a
    /// `map` carries it on to a writer.
    pub fn into_stream_type_or_list(self) -> Result<Self, ExprError> {
        if ColumnType::list_item(&self.data_type).is_some() {
            return Ok(self);
        }
        self.into_stream_type()
    }
}

/// Compiles one expression, such as `readings.value * 2 + 1`.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use arrow::datatypes::{DataType, Field, Schema};
/// use anduin_expr::{compile_expr, Scope};
/// let schema = Arc::new(Schema::new(vec![Field::new("value", DataType::Int64, true)]));
/// let e = compile_expr("readings.value * 2 + 1", &Scope::new("readings", schema)).expect("valid");
/// assert_eq!(e.data_type, DataType::Int64);
/// ```
pub fn compile_expr(text: &str, scope: &Scope) -> Result<CompiledExpr, ExprError> {
    let tokens = tokenize(text)?;
    let depth = tokens.depth;
    with_stack(depth, || {
        let sql = tokens.parse(|p| p.parse_expr())?;
        let name = default_name(&sql);
        compile_sql(sql, name, scope, depth)
    })
}

/// Compiles an expression already parsed by the caller: the pattern operator hands over the
/// parts of its conditions it does not evaluate itself, with its own references (`A.x`,
/// `PREV(x)`, …) replaced by columns of `scope`. `depth` bounds the tree's depth (the depth
/// of the text it was parsed from will do). Errors point into that text.
pub fn compile_parsed(
    sql: SqlExpr,
    scope: &Scope,
    depth: usize,
) -> Result<CompiledExpr, ExprError> {
    with_stack(depth, || {
        let name = default_name(&sql);
        compile_sql(sql, name, scope, depth)
    })
}

/// Compiles a condition, which must be boolean (`value < 42 AND sensor <> 3`).
pub fn compile_predicate(text: &str, scope: &Scope) -> Result<CompiledExpr, ExprError> {
    let e = compile_expr(text, scope)?;
    match e.data_type {
        DataType::Boolean | DataType::Null => Ok(e),
        ref other => Err(ExprError::at(
            1,
            1,
            format!("a condition must be true or false, but this expression is of type {other}"),
        )),
    }
}

/// Compiles a projection list: `ts, sensor, value * 2 AS doubled, readings.*`.
pub fn compile_projection(text: &str, scope: &Scope) -> Result<Vec<CompiledExpr>, ExprError> {
    let tokens = tokenize(text)?;
    let depth = tokens.depth;
    with_stack(depth, || {
        let items = tokens.parse(|p| p.parse_comma_separated(Parser::parse_select_item))?;
        projection(items, scope, depth)
    })
}

fn projection(
    items: Vec<SelectItem>,
    scope: &Scope,
    depth: usize,
) -> Result<Vec<CompiledExpr>, ExprError> {
    let mut out = Vec::new();
    for item in items {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let name = default_name(&e);
                out.push(compile_sql(e, name, scope, depth)?);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                out.push(compile_sql(expr, alias.value.clone(), scope, depth)?);
            }
            SelectItem::Wildcard(_) => {
                for f in scope.schema.fields() {
                    let e = sqlparser::ast::Expr::Identifier(sqlparser::ast::Ident::with_quote(
                        '"',
                        f.name(),
                    ));
                    out.push(compile_sql(e, f.name().clone(), scope, 1)?);
                }
            }
            SelectItem::ExprWithAliases { expr, .. } => {
                let loc = expr.span().start;
                return Err(ExprError::at(
                    loc.line,
                    loc.column,
                    "`AS (a, b, …)` is not supported: give each column its own `AS name`",
                ));
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let q = match &kind {
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => n.to_string(),
                    sqlparser::ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                };
                if q != scope.qualifier {
                    let loc = kind.span().start;
                    return Err(ExprError::at(
                        loc.line,
                        loc.column,
                        format!(
                            "unknown stream `{q}` in `{q}.*`: expected `{}`",
                            scope.qualifier
                        ),
                    ));
                }
                for f in scope.schema.fields() {
                    let e = sqlparser::ast::Expr::Identifier(sqlparser::ast::Ident::with_quote(
                        '"',
                        f.name(),
                    ));
                    out.push(compile_sql(e, f.name().clone(), scope, 1)?);
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in &out {
        if !seen.insert(e.name.as_str()) {
            return Err(ExprError::whole(format!(
                "column `{}` is produced twice: give one of them another name with `AS`",
                e.name
            )));
        }
    }
    Ok(out)
}

pub(crate) fn default_name(e: &SqlExpr) -> String {
    match e {
        SqlExpr::Identifier(id) => id.value.clone(),
        SqlExpr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()).unwrap_or_default(),
        other => other.to_string(),
    }
}

fn compile_sql(
    sql: SqlExpr,
    name: String,
    scope: &Scope,
    depth: usize,
) -> Result<CompiledExpr, ExprError> {
    let start = sql.span().start;
    let site = ExprSite::of(&sql);
    let (logical, df_schema) = to_logical(sql, scope, false)?;
    // Not `to_field`, which names every subexpression on the way (quadratic in a chain).
    let typed = |l: &Expr| {
        Ok::<_, datafusion_common::DataFusionError>((
            l.get_type(&df_schema)?,
            l.nullable(&df_schema)?,
        ))
    };
    let (data_type, nullable) = typed(&logical).map_err(|e| located(&e, start, scope))?;
    let narrowed =
        narrow::narrowed(&logical, &df_schema, scope).map_err(|e| located(&e, start, scope))?;
    let physical = physical_expr(&logical, &narrowed.df_schema, start, scope)?;
    Ok(CompiledExpr {
        physical,
        columns: narrowed.columns,
        name,
        data_type,
        nullable,
        depth,
        site,
    })
}

/// SQL to a checked, type-coerced and simplified logical expression over `scope`. Aggregate
/// calls are allowed at the top only when `aggregate` is set.
pub(crate) fn to_logical(
    sql: SqlExpr,
    scope: &Scope,
    aggregate: bool,
) -> Result<(Expr, Arc<DFSchema>), ExprError> {
    let start = sql.span().start;
    let df_schema = scope.df_schema()?;
    let options = ParserOptions {
        enable_ident_normalization: false,
        collect_spans: true,
        ..ParserOptions::default()
    };
    let planner = SqlToRel::new_with_options(FunctionProvider::get(), options);
    let logical = planner
        .sql_to_expr(sql, &df_schema, &mut PlannerContext::new())
        .map_err(|e| located(&e, start, scope))?;
    check_comparisons(&logical, &df_schema, start)?;
    match (&logical, aggregate) {
        (Expr::AggregateFunction(a), true) => {
            for arg in &a.params.args {
                check_functions(arg, start)?;
            }
        }
        (other, true) => {
            return Err(ExprError::at(
                start.line,
                start.column,
                format!(
                    "`{}` is not an aggregate: each column of a window is one aggregate call, such as `MAX(value)` (an expression over aggregates is not supported yet)",
                    other.human_display()
                ),
            ))
        }
        (_, false) => check_functions(&logical, start)?,
    }
    let df_schema = Arc::new(df_schema);
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(&df_schema))
            .build(),
    );
    let coerced = coerce(logical, &df_schema).map_err(|e| located(&e, start, scope))?;
    let simplified = simplifier
        .simplify(coerced)
        .map_err(|e| located(&e, start, scope))?;
    Ok((simplified, df_schema))
}

/// A logical expression to a physical one, with checked integer arithmetic (see
/// [`crate::checked`]).
pub(crate) fn physical_expr(
    logical: &Expr,
    df_schema: &DFSchema,
    start: sqlparser::tokenizer::Location,
    scope: &Scope,
) -> Result<Arc<dyn PhysicalExpr>, ExprError> {
    create_physical_expr(
        logical,
        df_schema,
        &ExecutionProps::new(),
        &PhysicalPlanningContext::default(),
    )
    .and_then(|e| crate::checked::checked(e, df_schema.as_arrow()))
    .map_err(|e| located(&e, start, scope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::TimeUnit;

    fn scope() -> Scope {
        Scope::new(
            "readings",
            Arc::new(Schema::new(vec![
                Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
                Field::new("sensor", DataType::Int64, true),
                Field::new("value", DataType::Int64, true),
                Field::new("name", DataType::Utf8, true),
            ])),
        )
    }

    fn batch() -> RecordBatch {
        let s = scope().schema;
        RecordBatch::try_new(
            s,
            vec![
                Arc::new(arrow::array::TimestampMillisecondArray::from(vec![1, 2, 3])),
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(Int64Array::from(vec![10, 50, 41])),
                Arc::new(StringArray::from(vec!["a", "bb", "ccc"])),
            ],
        )
        .expect("valid batch")
    }

    #[test]
    fn a_qualified_predicate_filters() {
        let p = compile_predicate("readings.value < 42", &scope()).expect("valid");
        let mask = p.evaluate_bool(&batch()).expect("evaluates");
        assert_eq!(mask, BooleanArray::from(vec![true, false, true]));
    }

    #[test]
    fn a_projection_names_its_columns() {
        let cols = compile_projection(
            "ts, readings.sensor, value * 2 + 1 AS v2, CASE WHEN value > 40 THEN 'hi' ELSE 'lo' END AS level, upper(name)",
            &scope(),
        )
        .expect("valid");
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["ts", "sensor", "v2", "level", "upper(name)"]);
        let v2 = cols[2].evaluate(&batch()).expect("evaluates");
        assert_eq!(
            v2.as_any().downcast_ref::<Int64Array>(),
            Some(&Int64Array::from(vec![21, 101, 83]))
        );
    }

    #[test]
    fn an_unknown_column_is_located_and_named() {
        let e = compile_predicate("readings.valu < 42", &scope()).expect_err("must fail");
        assert_eq!(
            e.message,
            "unknown column `valu`: stream `readings` has ts, sensor, value, name"
        );
        assert_eq!((e.line, e.col), (1, 1));
        let e = compile_predicate("value > 1 AND sensr = 3", &scope()).expect_err("must fail");
        assert_eq!((e.line, e.col), (1, 15));
    }

    #[test]
    fn comparing_a_number_with_text_is_a_type_mismatch() {
        let e = compile_predicate("sensor = 1 OR value < 'abc'", &scope()).expect_err("must fail");
        assert_eq!((e.line, e.col), (1, 15));
        assert!(
            e.message
                .starts_with("type mismatch: `value` is int but `'abc'` is string"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_between_whose_bound_has_another_type_is_a_type_mismatch_not_an_internal_error() {
        // A timestamp between a timestamp and an integer: DataFusion fails to coerce the
        // types and says its own code has a bug (issue 17).
        let e = compile_predicate("sensor = 1 AND ts BETWEEN ts AND value", &scope())
            .expect_err("must fail");
        assert_eq!((e.line, e.col), (1, 16));
        assert_eq!(
            e.message,
            "type mismatch in `ts BETWEEN ts AND value`: `ts` is timestamp but its bound `value` is int; CAST the bound to timestamp (e.g. `CAST(value AS TIMESTAMP)`)"
        );
        let e = compile_predicate("value NOT BETWEEN 'a' AND 3", &scope()).expect_err("must fail");
        assert!(
            e.message.starts_with("type mismatch in `value NOT BETWEEN 'a' AND 3`: `value` is int but its bound `'a'` is string"),
            "{}",
            e.message
        );
        compile_predicate("ts BETWEEN ts AND ts + INTERVAL '1' SECOND", &scope())
            .expect("bounds of the column's type");
        compile_predicate("value BETWEEN 1 AND sensor", &scope()).expect("integers");
    }

    #[test]
    fn a_syntax_error_is_located() {
        let e = compile_predicate("value < < 3", &scope()).expect_err("must fail");
        assert_eq!((e.line, e.col), (1, 9));
        assert!(e.message.starts_with("syntax error"), "{}", e.message);
    }

    #[test]
    fn a_condition_must_be_boolean() {
        let e = compile_predicate("value + 1", &scope()).expect_err("must fail");
        assert!(e.message.starts_with("a condition must be true or false"));
    }

    #[test]
    fn a_qualified_wildcard_expands_to_every_column() {
        let cols = compile_projection("readings.*", &scope()).expect("valid");
        assert_eq!(cols.len(), 4);
        let e = compile_projection("other.*", &scope()).expect_err("unknown stream");
        assert_eq!(
            e.message,
            "unknown stream `other` in `other.*`: expected `readings`"
        );
    }

    #[test]
    fn aggregates_and_start_time_functions_are_refused() {
        let e = compile_projection("sum(value) AS s", &scope()).expect_err("aggregate");
        assert!(
            e.message
                .starts_with("aggregate function `sum` is not allowed"),
            "{}",
            e.message
        );
        let e = compile_predicate("ts < now()", &scope()).expect_err("now");
        assert!(
            e.message.starts_with("`now()` would be fixed"),
            "{}",
            e.message
        );
        let e = compile_predicate("nosuchfn(value) > 1", &scope()).expect_err("unknown");
        assert!(!e.message.contains('\n'), "{}", e.message);
    }

    #[test]
    fn proctime_is_a_volatile_timestamp() {
        let e = compile_expr("PROCTIME()", &scope()).expect("proctime");
        assert_eq!(
            e.field().data_type(),
            &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None)
        );
        assert_eq!(e.volatile_function().as_deref(), Some("proctime"));
        let p = compile_predicate("PROCTIME() > ts", &scope()).expect("compared");
        assert_eq!(
            p.evaluate_bool(&batch()).expect("evaluates").len(),
            batch().num_rows()
        );
    }

    #[test]
    fn computed_columns_are_cast_to_the_types_streams_carry() {
        let cols = compile_projection(
            "CAST(value AS INT) AS i, CAST(value AS REAL) AS f, TIMESTAMP '2023-11-14 22:13:20' AS t, CAST(value AS DECIMAL(10, 2)) AS d",
            &scope(),
        )
        .expect("valid")
        .into_iter()
        .map(|c| c.into_stream_type().expect("carried"))
        .collect::<Vec<_>>();
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type.clone()).collect();
        assert_eq!(
            types,
            vec![
                DataType::Int64,
                DataType::Float64,
                DataType::Timestamp(TimeUnit::Millisecond, None),
                DataType::Float64
            ]
        );
        let t = cols[2].evaluate(&batch()).expect("evaluates");
        assert_eq!(
            t.data_type(),
            &DataType::Timestamp(TimeUnit::Millisecond, None)
        );
        let e = compile_projection("NULL AS n", &scope())
            .expect("valid")
            .pop()
            .expect("one")
            .into_stream_type()
            .expect_err("untyped");
        assert!(
            e.message.starts_with("column `n` is of type Null"),
            "{}",
            e.message
        );
    }

    #[test]
    fn time_functions_work_on_timestamps() {
        compile_predicate("ts >= TIMESTAMP '1970-01-01 00:00:00.002'", &scope()).expect("valid");
        compile_projection(
            "date_trunc('second', ts) AS sec, extract(year FROM ts) AS y",
            &scope(),
        )
        .expect("valid");
    }
}
