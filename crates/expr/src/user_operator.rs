//! A user's operator (a WebAssembly or JavaScript one of `anduin-udf`: `CREATE FUNCTION f(…)
//! RETURNS TABLE (…)`, called as `FROM f(input => TABLE t PARTITION BY k)`), as the
//! `user_operator` of `anduin-relational` runs it: per key a state of the user's own, kept
//! by the operator as bytes (and in its checkpoints), a function called per row that may
//! change the state and emit rows, and a timer per key that fires when the watermark
//! reaches it.
//!
//! Registered beside the user's functions ([`crate::FunctionProvider::register_operator`]),
//! so that a query's operators find it by name wherever they are built, in the query's
//! scope ([`crate::FunctionProvider::scoped`]).

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;

use crate::UserStates;

/// What a job of a user operator gives back: the states it was given, changed (`None`: the
/// key holds no state any more), the timer of each (`None`: none), and the rows it emitted,
/// as columns of the declared output, each row with the slot (the index into the states) of
/// the key it was emitted for, in the order they were emitted.
#[derive(Debug, Default)]
pub struct Emitted {
    /// The states, one per slot given.
    pub states: UserStates,
    /// When each state's timer is due (event time, in ms), if it has one.
    pub timers: Vec<Option<i64>>,
    /// The slot of each emitted row.
    pub slots: Vec<usize>,
    /// The emitted rows, one column per declared output column.
    pub columns: Vec<ArrayRef>,
}

/// A failed job of a user operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorFailure {
    /// What failed, naming the function: `function `f` threw Error: boom (in process(state, …))`.
    pub message: String,
    /// The row of the batch on which `process` failed, if it was a row's call.
    pub row: Option<usize>,
    /// The slot whose call failed (`on_timer`, or `process` on row `row`), if known.
    pub slot: Option<usize>,
    /// Whether it ran out of its resources (fuel, time), which is no row's fault and stops
    /// the query whatever `on_error` says.
    pub exhausted: bool,
}

/// One user-defined operator, stepped over the states of many keys at once.
pub trait UserOperator: Send + Sync + std::fmt::Debug {
    /// Its name as declared.
    fn name(&self) -> &str;

    /// The columns of its input row it takes, in order, by name, each with the type it takes
    /// it as (`Int64`, `Float64`, `Boolean`, `Utf8`).
    fn args(&self) -> Vec<(String, DataType)>;

    /// The columns of the rows it emits, in order, by name, with their types.
    fn output(&self) -> Vec<(String, DataType)>;

    /// Whether it has timers (it exports `timer` and `on_timer`).
    fn has_timers(&self) -> bool;

    /// Calls `process` on rows of a batch: step `(row, slot)` is row `row` of the argument
    /// columns `args` (of the declared types, in order) for the key whose state is
    /// `states[slot]` (`None`: a fresh state), in step order.
    fn process(
        &self,
        states: UserStates,
        args: &[ArrayRef],
        steps: &[(usize, usize)],
    ) -> Result<Emitted, OperatorFailure>;

    /// Calls `on_timer(state, watermark)` on each of `states`, whose timers the watermark
    /// `watermark` (in ms; `i64::MAX` at the end of the input) reached, in order.
    fn on_timer(&self, states: UserStates, watermark: i64) -> Result<Emitted, OperatorFailure>;
}
