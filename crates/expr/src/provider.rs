//! The functions an expression may call: DataFusion's built-in scalar and aggregate functions.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, FieldRef};
use datafusion_common::{plan_err, Result, TableReference};
use datafusion_expr::planner::{ContextProvider, ExprPlanner};
use datafusion_expr::{AggregateUDF, HigherOrderUDF, ScalarUDF, TableSource, WindowUDF};

/// Resolves function names for DataFusion's SQL planner. There are no tables: expressions
/// only see the columns of the stream they are evaluated on.
#[derive(Debug)]
pub struct FunctionProvider {
    scalars: HashMap<String, Arc<ScalarUDF>>,
    aggregates: HashMap<String, Arc<AggregateUDF>>,
    planners: Vec<Arc<dyn ExprPlanner>>,
    options: datafusion_common::config::ConfigOptions,
}

impl FunctionProvider {
    /// The shared provider with every built-in function.
    pub fn get() -> &'static FunctionProvider {
        static PROVIDER: OnceLock<FunctionProvider> = OnceLock::new();
        PROVIDER.get_or_init(FunctionProvider::new)
    }

    fn new() -> Self {
        let mut scalars = HashMap::new();
        for f in datafusion_functions::all_default_functions() {
            for alias in f.aliases() {
                scalars.insert(alias.to_lowercase(), Arc::clone(&f));
            }
            scalars.insert(f.name().to_lowercase(), f);
        }
        let mut aggregates = HashMap::new();
        for f in datafusion_functions_aggregate::all_default_aggregate_functions() {
            for alias in f.aliases() {
                aggregates.insert(alias.to_lowercase(), Arc::clone(&f));
            }
            aggregates.insert(f.name().to_lowercase(), f);
        }
        // An integer SUM fails on overflow instead of wrapping (`checked_sum.rs`).
        aggregates.insert(
            "sum".to_string(),
            Arc::new(AggregateUDF::from(crate::checked_sum::CheckedSum::default())),
        );
        let planners: Vec<Arc<dyn ExprPlanner>> = vec![
            Arc::new(datafusion_functions::core::planner::CoreFunctionPlanner::default()),
            Arc::new(datafusion_functions::unicode::planner::UnicodeFunctionPlanner),
            Arc::new(datafusion_functions::datetime::planner::DatetimeFunctionPlanner),
            Arc::new(datafusion_functions_aggregate::planner::AggregateFunctionPlanner),
        ];
        Self {
            scalars,
            aggregates,
            planners,
            options: Default::default(),
        }
    }

    /// Whether `name` (any case) is a scalar function.
    pub fn is_scalar(&self, name: &str) -> bool {
        self.scalars.contains_key(&name.to_lowercase())
    }

    /// Whether `name` (any case) is an aggregate function.
    pub fn is_aggregate(&self, name: &str) -> bool {
        self.aggregates.contains_key(&name.to_lowercase())
    }

    /// The names of the scalar functions, sorted, for the reference.
    pub fn scalar_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.scalars.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

impl ContextProvider for FunctionProvider {
    fn get_table_source(&self, name: TableReference) -> Result<Arc<dyn TableSource>> {
        plan_err!("table `{name}` is not available in an expression")
    }

    fn get_expr_planners(&self) -> &[Arc<dyn ExprPlanner>] {
        &self.planners
    }

    fn get_function_meta(&self, name: &str) -> Option<Arc<ScalarUDF>> {
        self.scalars.get(&name.to_lowercase()).cloned()
    }

    fn get_higher_order_meta(&self, _name: &str) -> Option<Arc<HigherOrderUDF>> {
        None
    }

    fn get_aggregate_meta(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        self.aggregates.get(&name.to_lowercase()).cloned()
    }

    fn get_window_meta(&self, _name: &str) -> Option<Arc<WindowUDF>> {
        None
    }

    fn get_variable_type(&self, _variable_names: &[String]) -> Option<DataType> {
        None
    }

    fn get_variable_field(&self, _variable_names: &[String]) -> Option<FieldRef> {
        None
    }

    fn options(&self) -> &datafusion_common::config::ConfigOptions {
        &self.options
    }

    fn udf_names(&self) -> Vec<String> {
        self.scalars.keys().cloned().collect()
    }

    fn udaf_names(&self) -> Vec<String> {
        self.aggregates.keys().cloned().collect()
    }

    fn higher_order_function_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn udwf_names(&self) -> Vec<String> {
        Vec::new()
    }
}
