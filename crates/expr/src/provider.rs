//! The functions an expression may call: DataFusion's built-in scalar and aggregate
//! functions, and the user's scalar and aggregate functions registered for this process
//! ([`FunctionProvider::register_scalar`], [`FunctionProvider::register_aggregate`]: the
//! WebAssembly and JavaScript functions of `anduin-udf`), or for one query of a process that
//! holds several (a cluster's coordinator: [`FunctionProvider::scoped`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use arrow::datatypes::{DataType, FieldRef};
use datafusion_common::{plan_err, Result, TableReference};
use datafusion_expr::planner::{ContextProvider, ExprPlanner};
use datafusion_expr::{AggregateUDF, HigherOrderUDF, ScalarUDF, TableSource, WindowUDF};

use crate::{UserAggregate, UserOperator};

/// Resolves function names for DataFusion's SQL planner. There are no tables: expressions
/// only see the columns of the stream they are evaluated on.
#[derive(Debug)]
pub struct FunctionProvider {
    scalars: HashMap<String, Arc<ScalarUDF>>,
    aggregates: HashMap<String, Arc<AggregateUDF>>,
    planners: Vec<Arc<dyn ExprPlanner>>,
    /// The user's functions of the whole process (the query it runs), since expressions are
    /// compiled wherever operators are built; a thread in a [`FunctionProvider::scoped`]
    /// call sees that scope's instead.
    user: Arc<UserFunctions>,
    options: datafusion_common::config::ConfigOptions,
}

/// The user's functions of one scope: a process's, or one query's
/// ([`FunctionProvider::scoped`]).
#[derive(Debug, Default)]
pub struct UserFunctions {
    /// Scalar functions, by lower-case name.
    scalars: RwLock<HashMap<String, Arc<ScalarUDF>>>,
    /// Aggregate functions, by lower-case name, each with its stepping face (see
    /// [`FunctionProvider::register_aggregate`]).
    aggregates: RwLock<HashMap<String, UserAggregateFaces>>,
    /// Operators (table functions called in FROM), by lower-case name.
    operators: RwLock<HashMap<String, Arc<dyn UserOperator>>>,
}

/// The maps of one scope's user functions, locked for a registration.
struct Registered<'a> {
    scalars: std::sync::RwLockWriteGuard<'a, HashMap<String, Arc<ScalarUDF>>>,
    aggregates: std::sync::RwLockWriteGuard<'a, HashMap<String, UserAggregateFaces>>,
    operators: std::sync::RwLockWriteGuard<'a, HashMap<String, Arc<dyn UserOperator>>>,
}

/// A user's aggregate as DataFusion calls it, and as an updating `GROUP BY` steps it.
type UserAggregateFaces = (Arc<AggregateUDF>, Arc<dyn UserAggregate>);

thread_local! {
    /// The scope of the [`FunctionProvider::scoped`] call this thread is in, if any.
    static SCOPE: RefCell<Option<Arc<UserFunctions>>> = const { RefCell::new(None) };
}

/// Puts the scope a [`FunctionProvider::scoped`] call replaced back, even when its closure
/// panics.
struct ScopeGuard(Option<Arc<UserFunctions>>);

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        let before = self.0.take();
        SCOPE.with(|s| *s.borrow_mut() = before);
    }
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
        // Flink's DATE_FORMAT with Java's pattern letters (`date_format.rs`), in place of
        // DataFusion's alias of `to_char`, which takes chrono's.
        scalars.insert(
            "date_format".to_string(),
            Arc::new(crate::date_format::DateFormat::udf()),
        );
        // Flink's functions that DataFusion lacks or names otherwise (`flink_strings.rs`,
        // `flink_aliases.rs`).
        for f in [
            crate::flink_strings::regexp_extract(),
            crate::flink_strings::split_index(),
            crate::flink_aliases::hour(),
            crate::flink_aliases::modulo(),
        ] {
            scalars.insert(f.name().to_string(), Arc::new(f));
        }
        // The processing time (`proctime.rs`), as Flink's `PROCTIME()`.
        scalars.insert(
            "proctime".to_string(),
            Arc::new(crate::proctime::ProcTime::udf()),
        );
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
            user: Arc::default(),
            options: Default::default(),
        }
    }

    /// Runs `f` with `functions` as the user's functions of this thread: what `f` registers
    /// goes there, and the expressions it compiles call those (and no other scope's, nor the
    /// process's). A process that loads several queries (a cluster's coordinator) keeps each
    /// query's functions apart so: two queries may declare one name, each its own way.
    pub fn scoped<R>(functions: &Arc<UserFunctions>, f: impl FnOnce() -> R) -> R {
        let before = SCOPE.with(|s| s.borrow_mut().replace(Arc::clone(functions)));
        let _back = ScopeGuard(before);
        f()
    }

    /// The user's functions this thread sees now.
    fn user(&self) -> Arc<UserFunctions> {
        SCOPE
            .with(|s| s.borrow().clone())
            .unwrap_or_else(|| Arc::clone(&self.user))
    }

    /// Whether `name` (any case) is a scalar function, built in or the user's.
    pub fn is_scalar(&self, name: &str) -> bool {
        self.scalar(name).is_some()
    }

    fn scalar(&self, name: &str) -> Option<Arc<ScalarUDF>> {
        let name = name.to_lowercase();
        self.scalars.get(&name).cloned().or_else(|| {
            self.user()
                .scalars
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&name)
                .cloned()
        })
    }

    /// Makes the user's scalar function `f` callable by its name (any case) from every
    /// expression compiled in this process from now on. A built-in function's name is
    /// refused, and so is a name registered before (any case): two declarations of one name
    /// (a `CREATE FUNCTION` and a `--udf` module, two modules) would leave one silently
    /// unreachable.
    ///
    /// # Examples
    /// ```
    /// use anduin_expr::FunctionProvider;
    /// let upper = datafusion_functions::string::upper().as_ref().clone();
    /// let e = FunctionProvider::get().register_scalar(upper).expect_err("built in");
    /// assert_eq!(e.message, "function `upper` is built in: give yours another name");
    /// ```
    pub fn register_scalar(&self, f: ScalarUDF) -> Result<(), crate::ExprError> {
        let (shown, name) = (f.name().to_string(), f.name().to_lowercase());
        self.register_user(&shown, |r| {
            r.scalars.insert(name, Arc::new(f));
        })
    }

    /// Makes the user's aggregate function `f` callable by its name (any case) from every
    /// aggregate compiled in this process from now on (a window's `aggregates`), as
    /// [`FunctionProvider::register_scalar`] does for a scalar function, and with the same
    /// refusals (a scalar function and an aggregate share their names). `user` is the same
    /// aggregate as an updating `GROUP BY` steps it, adding and taking out rows
    /// ([`FunctionProvider::user_aggregate`]); it says whether it can combine two of its
    /// states, which the panes of a sliding window and sessions that meet need
    /// ([`FunctionProvider::user_aggregate_merges`]).
    pub fn register_aggregate(
        &self,
        f: AggregateUDF,
        user: Arc<dyn UserAggregate>,
    ) -> Result<(), crate::ExprError> {
        let (shown, name) = (f.name().to_string(), f.name().to_lowercase());
        self.register_user(&shown, |r| {
            r.aggregates.insert(name, (Arc::new(f), user));
        })
    }

    /// Makes the user's operator `op` (a table function: `FROM op(input => TABLE t PARTITION
    /// BY k)`) available by its name (any case) to the `user_operator`s built in this
    /// process (or scope) from now on ([`FunctionProvider::user_operator`]), with the
    /// refusals of [`FunctionProvider::register_scalar`]: operators, functions and aggregates
    /// share their names.
    pub fn register_operator(&self, op: Arc<dyn UserOperator>) -> Result<(), crate::ExprError> {
        let (shown, name) = (op.name().to_string(), op.name().to_lowercase());
        self.register_user(&shown, |r| {
            r.operators.insert(name, op);
        })
    }

    /// Registers a user's function, aggregate or operator called `name` once it is free (not
    /// built in, not declared before in any case, [`FunctionProvider::free`]): `insert` puts it
    /// in its map. The three maps are locked together, always in this order, so that two
    /// declarations of one name cannot both find it free.
    fn register_user(
        &self,
        name: &str,
        insert: impl FnOnce(&mut Registered<'_>),
    ) -> Result<(), crate::ExprError> {
        let scope = self.user();
        let mut r = Registered {
            scalars: scope
                .scalars
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            aggregates: scope
                .aggregates
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            operators: scope
                .operators
                .write()
                .unwrap_or_else(PoisonError::into_inner),
        };
        let lower = name.to_lowercase();
        let before = r
            .scalars
            .get(&lower)
            .map(|b| b.name())
            .or_else(|| r.aggregates.get(&lower).map(|(b, _)| b.name()))
            .or_else(|| r.operators.get(&lower).map(|o| o.name()));
        self.free(name, before)?;
        insert(&mut r);
        Ok(())
    }

    /// The user's operator `name` (any case); `None` if no operator of the user's is called
    /// so.
    pub fn user_operator(&self, name: &str) -> Option<Arc<dyn UserOperator>> {
        self.user()
            .operators
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name.to_lowercase())
            .map(Arc::clone)
    }

    /// An error unless `name` is free for a function of the user's: not built in, and not
    /// declared before (as `before`, in any case).
    fn free(&self, name: &str, before: Option<&str>) -> Result<(), crate::ExprError> {
        let lower = name.to_lowercase();
        if self.scalars.contains_key(&lower) || self.aggregates.contains_key(&lower) {
            return Err(crate::ExprError::whole(format!(
                "function `{name}` is built in: give yours another name"
            )));
        }
        if let Some(before) = before {
            return Err(crate::ExprError::whole(format!(
                "function `{name}` is declared twice (as `{before}` before; names are the same in any case): give one of them another name"
            )));
        }
        Ok(())
    }

    /// Whether the user's aggregate `name` (any case) can combine two of its states;
    /// `None` if no aggregate of the user's is called so.
    pub fn user_aggregate_merges(&self, name: &str) -> Option<bool> {
        self.user_aggregate(name).map(|u| u.merges())
    }

    /// The user's aggregate `name` (any case) as an updating `GROUP BY` steps it; `None` if
    /// no aggregate of the user's is called so.
    pub fn user_aggregate(&self, name: &str) -> Option<Arc<dyn UserAggregate>> {
        self.user()
            .aggregates
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name.to_lowercase())
            .map(|(_, user)| Arc::clone(user))
    }

    /// Whether `name` (any case) is an aggregate function.
    pub fn is_aggregate(&self, name: &str) -> bool {
        self.aggregate(name).is_some()
    }

    fn aggregate(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        let name = name.to_lowercase();
        self.aggregates.get(&name).cloned().or_else(|| {
            self.user()
                .aggregates
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&name)
                .map(|(f, _)| Arc::clone(f))
        })
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
        self.scalar(name)
    }

    fn get_higher_order_meta(&self, _name: &str) -> Option<Arc<HigherOrderUDF>> {
        None
    }

    fn get_aggregate_meta(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        self.aggregate(name)
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
        let scope = self.user();
        let user = scope.scalars.read().unwrap_or_else(PoisonError::into_inner);
        self.scalars.keys().chain(user.keys()).cloned().collect()
    }

    fn udaf_names(&self) -> Vec<String> {
        let scope = self.user();
        let user = scope
            .aggregates
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        self.aggregates.keys().chain(user.keys()).cloned().collect()
    }

    fn higher_order_function_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn udwf_names(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion_expr::{create_udf, ColumnarValue, Volatility};

    /// A scalar function `name` that returns its argument.
    fn same(name: &str) -> ScalarUDF {
        create_udf(
            name,
            vec![DataType::Int64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(|args: &[ColumnarValue]| Ok(args[0].clone())),
        )
    }

    /// An operator of no use but its name.
    #[derive(Debug)]
    struct Named(&'static str);

    impl UserOperator for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn args(&self) -> Vec<(String, DataType)> {
            Vec::new()
        }
        fn output(&self) -> Vec<(String, DataType)> {
            Vec::new()
        }
        fn has_timers(&self) -> bool {
            false
        }
        fn process(
            &self,
            _: crate::UserStates,
            _: &[arrow::array::ArrayRef],
            _: &[(usize, usize)],
        ) -> Result<crate::Emitted, crate::OperatorFailure> {
            Ok(crate::Emitted::default())
        }
        fn on_timer(
            &self,
            _: crate::UserStates,
            _: i64,
        ) -> Result<crate::Emitted, crate::OperatorFailure> {
            Ok(crate::Emitted::default())
        }
    }

    /// Operators share their names with functions and aggregates, in any case.
    #[test]
    fn an_operator_is_found_by_name_and_takes_no_name_a_function_has() {
        let provider = FunctionProvider::get();
        let scope = Arc::new(UserFunctions::default());
        FunctionProvider::scoped(&scope, || {
            provider.register_scalar(same("shared_name")).expect("free");
            let e = provider
                .register_operator(Arc::new(Named("Shared_Name")))
                .expect_err("a function's name");
            assert!(e.message.contains("declared twice"), "{}", e.message);
            provider
                .register_operator(Arc::new(Named("Dedup")))
                .expect("free");
            assert!(provider.user_operator("DEDUP").is_some());
            let e = provider
                .register_scalar(same("dedup"))
                .expect_err("an operator's name");
            assert!(e.message.contains("declared twice"), "{}", e.message);
        });
        assert!(
            provider.user_operator("dedup").is_none(),
            "not the process's"
        );
    }

    #[test]
    fn each_scope_keeps_its_own_functions_apart_from_the_others_and_the_process() {
        let provider = FunctionProvider::get();
        let (a, b) = (
            Arc::new(UserFunctions::default()),
            Arc::new(UserFunctions::default()),
        );
        FunctionProvider::scoped(&a, || provider.register_scalar(same("scoped_same")))
            .expect("free in a");
        // Another scope declares the name again, its own way.
        FunctionProvider::scoped(&b, || provider.register_scalar(same("scoped_same")))
            .expect("free in b");
        assert!(FunctionProvider::scoped(&a, || provider.is_scalar("SCOPED_SAME")));
        assert!(!provider.is_scalar("scoped_same"), "not the process's");
        let again = FunctionProvider::scoped(&a, || provider.register_scalar(same("scoped_same")))
            .expect_err("declared twice in a");
        assert!(
            again.message.contains("declared twice"),
            "{}",
            again.message
        );
        // A panic inside a scope leaves the thread out of it.
        let panicked = std::panic::catch_unwind(|| {
            FunctionProvider::scoped(&a, || panic!("inside"));
        });
        assert!(panicked.is_err());
        assert!(!provider.is_scalar("scoped_same"));
    }
}
