//! Inline JavaScript aggregate functions, as RisingWave writes them: `CREATE AGGREGATE
//! wavg(v BIGINT, w BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$ … $$`, whose body is a
//! module exporting the aggregate's functions:
//!
//! | export | required | does |
//! |---|---|---|
//! | `create_state()` | yes | a new, empty state |
//! | `accumulate(state, a, …)` | yes | the state with one row added |
//! | `retract(state, a, …)` | no | the state with one row taken out |
//! | `merge(state1, state2)` | no | one state holding both (sliding windows, sessions) |
//! | `finish(state)` | no | the result (without it: the state itself) |
//!
//! A group's state lives in anduin, as JSON text (see `crate::aggregate`): each batch's work
//! begins by reading the states it touches and ends by writing them back, checking that they
//! are plain JSON data (objects, arrays, strings, finite numbers, booleans, null), so that a
//! state written to a checkpoint and read back after a restore is the state the function
//! had, and a restored run computes what an uninterrupted one does. A state a function keeps
//! anywhere else (a variable at the module's top level) would be lost at a restore: the
//! lockdown freezes the global objects, and the documentation says so.
//!
//! Rows whose arguments hold a NULL are skipped (as SQL's own aggregates skip them); a group
//! that got no row (all NULL, or filtered out) gives `finish(create_state())`.

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, BooleanArray};

use super::aggregate_engine::AggEngine;
use super::sandbox::Sandbox;
use super::worker;
use crate::aggregate::{self, Answer, Exports, GroupStates, Job, Stepper};
use crate::idle::Idle;
use crate::{Declaration, Limits, UdfError};

/// What a JavaScript aggregate's engine is asked.
pub(super) enum Ask {
    /// Which functions the body exports.
    Describe,
    /// A batch's work.
    Work(Job),
}

/// An engine's answer to an [`Ask`].
pub(super) enum Told {
    Exports(Exports),
    Done(Answer),
}

type Worker = worker::Worker<Ask, Told>;

/// A JavaScript aggregate function, compiled and checked when declared, callable from any
/// thread: each caller at a time gets an engine of its own (on a thread of its own), kept
/// for later calls; an engine whose call failed is dropped.
pub struct JsAggregate {
    declaration: Arc<Declaration>,
    body: Arc<str>,
    limits: Limits,
    exports: Exports,
    idle: Idle<Worker>,
}

impl std::fmt::Debug for JsAggregate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsAggregate")
            .field("declaration", &self.declaration.to_string())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl JsAggregate {
    /// `declaration` (its arguments and its result) with `body`, a module exporting the
    /// aggregate's functions, compiled and run once now: a body that does not compile,
    /// whose top level runs away or throws, or that does not export `create_state` and
    /// `accumulate` is an error here, naming the aggregate.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use anduin_udf::{Declaration, JsAggregate, Limits};
    /// use arrow::array::{Array, Int64Array};
    /// let sum = JsAggregate::new(
    ///     Declaration::parse("total(BIGINT) -> BIGINT").expect("declaration"),
    ///     "export function create_state() { return 0 }
    ///      export function accumulate(s, x) { return s + x }",
    ///     Limits::default(),
    /// ).expect("compiles");
    /// let mut states = vec![None, None];
    /// let x: arrow::array::ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(4)]));
    /// sum.accumulate(&mut states, &[0, 1, 1, 0], &[x], None, false).expect("no throw");
    /// assert_eq!(states[0].as_deref(), Some(&b"5"[..]), "a state is JSON text");
    /// let out = sum.finish(states).expect("no throw");
    /// assert_eq!(out.as_any().downcast_ref::<Int64Array>(), Some(&Int64Array::from(vec![5, 2])));
    /// ```
    pub fn new(declaration: Declaration, body: &str, limits: Limits) -> Result<Self, UdfError> {
        let declaration = Arc::new(declaration);
        let body: Arc<str> = Arc::from(body);
        let first = start(&declaration, &body, limits)?;
        let exports = match first.call(Ask::Describe)? {
            Told::Exports(e) => e,
            Told::Done(_) => return Err(lost(&declaration.name)),
        };
        Ok(JsAggregate {
            declaration,
            body,
            limits,
            exports,
            idle: Idle::new(first),
        })
    }

    /// Its declaration: the arguments `accumulate` takes after the state, and the result's
    /// type.
    pub fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    /// Whether it exports `merge`: whether two of its states can be combined (the panes of
    /// a sliding window, sessions that meet).
    pub fn merges(&self) -> bool {
        self.exports.merge
    }

    /// Whether it exports `retract`: whether a row can be taken out of a state.
    pub fn retracts(&self) -> bool {
        self.exports.retract
    }

    /// Adds rows to (or, with `retract`, takes them out of) the states of their groups:
    /// row `i` of the argument columns `args` belongs to group `groups[i]` (an index into
    /// `states`, which is long enough). Rows that `filter` does not keep, and rows with a NULL
    /// argument, are skipped. On an error the states this batch touched are gone: the
    /// caller fails.
    pub fn accumulate(
        &self,
        states: &mut GroupStates,
        groups: &[usize],
        args: &[ArrayRef],
        filter: Option<&BooleanArray>,
        retract: bool,
    ) -> Result<(), UdfError> {
        aggregate::accumulate(self, states, groups, args, filter, retract)
    }

    /// Merges the states `incoming` (JSON text; a NULL is no state) into groups `groups[i]`
    /// of `states`. A group without a state takes the incoming one as it is; one with a
    /// state needs `merge` ([`UdfError::NoMerge`], whose `needed` is `needed`).
    pub fn merge(
        &self,
        states: &mut GroupStates,
        groups: &[usize],
        incoming: &BinaryArray,
        needed: &str,
    ) -> Result<(), UdfError> {
        aggregate::merge(self, states, groups, incoming, needed)
    }

    /// The result of each state (`finish(state)`, or the state itself without a `finish`;
    /// for a group without a state, that of `create_state()`), of the declared type.
    pub fn finish(&self, states: GroupStates) -> Result<ArrayRef, UdfError> {
        aggregate::finish(self, states)
    }
}

impl Stepper for JsAggregate {
    fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    fn exports(&self) -> Exports {
        self.exports
    }

    fn step(&self, job: Job) -> Result<Answer, UdfError> {
        let out = self.idle.run(
            || start(&self.declaration, &self.body, self.limits),
            |worker| worker.call(Ask::Work(job)),
        )?;
        match out {
            Told::Done(answer) => Ok(answer),
            Told::Exports(_) => Err(lost(&self.declaration.name)),
        }
    }
}

/// An engine for `declaration` with `body` on a thread of its own.
fn start(
    declaration: &Arc<Declaration>,
    body: &Arc<str>,
    limits: Limits,
) -> Result<Worker, UdfError> {
    let sandbox = Sandbox::new(limits)?;
    let meter = Arc::clone(&sandbox.meter);
    let (d, b) = (Arc::clone(declaration), Arc::clone(body));
    Worker::start(
        &declaration.name,
        meter,
        limits,
        move || AggEngine::new(sandbox, d, &b, limits),
        |engine, ask| match ask {
            Ask::Describe => Ok(Told::Exports(engine.exports())),
            Ask::Work(job) => engine.run(job).map(Told::Done),
        },
    )
}

fn lost(name: &str) -> UdfError {
    UdfError::Engine(format!(
        "the JavaScript engine of aggregate `{name}` answered another question (a bug in anduin)"
    ))
}
