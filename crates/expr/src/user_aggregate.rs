//! A user's aggregate (a WebAssembly or JavaScript one of `anduin-udf`) as an operator that
//! keeps its groups' states itself steps it: the updating `aggregate` (a `GROUP BY` without
//! a window), whose rows come and go, adds rows to a state and takes them out of it, which
//! DataFusion's face of an aggregate (a groups accumulator, which only adds) cannot do.
//!
//! The states are the aggregate's bytes, kept by the caller between batches and written to
//! its checkpoints as they are; `None` is a group that never got a row. Registered beside
//! the aggregate's DataFusion face ([`crate::FunctionProvider::register_aggregate`]) and
//! found from a compiled aggregate ([`crate::CompiledAggregate::user`]).

use arrow::array::{ArrayRef, BooleanArray};

/// The states of an aggregate's groups, by group: `None` for a group without one (no row
/// yet), else its bytes.
pub type UserStates = Vec<Option<Vec<u8>>>;

/// One user-defined aggregate, stepped over the states of many groups at once.
pub trait UserAggregate: Send + Sync + std::fmt::Debug {
    /// Its name as declared.
    fn name(&self) -> &str;

    /// Whether it can combine two of its states (it exports `merge`).
    fn merges(&self) -> bool;

    /// Whether it can take a row out of a state (it exports `retract`): an updating input,
    /// whose rows are taken back, needs it.
    fn retracts(&self) -> bool;

    /// Adds rows to (or, with `retract`, takes them out of) the states of their groups, in
    /// row order: row `i` of the argument columns `args` belongs to group `groups[i]` (an
    /// index into `states`). Rows `filter` does not keep, and rows with a NULL argument, are
    /// skipped. On an error (its message names the function) the states of the groups it
    /// touched are lost: the caller fails.
    fn accumulate(
        &self,
        states: &mut UserStates,
        groups: &[usize],
        args: &[ArrayRef],
        filter: Option<&BooleanArray>,
        retract: bool,
    ) -> Result<(), String>;

    /// The result of each state (for a group without one, that of a fresh state), of the
    /// declared type; an error's message names the function.
    fn finish(&self, states: UserStates) -> Result<ArrayRef, String>;
}
