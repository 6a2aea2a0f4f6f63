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
//! A group's state lives in anduin, as JSON text ([`GroupStates`]): each batch's work begins
//! by reading the states it touches and ends by writing them back, checking that they are
//! plain JSON data (objects, arrays, strings, finite numbers, booleans, null), so that a
//! state written to a checkpoint and read back after a restore is the state the function
//! had, and a restored run computes what an uninterrupted one does. A state a function keeps
//! anywhere else (a variable at the module's top level) would be lost at a restore: the
//! lockdown freezes the global objects, and the documentation says so.
//!
//! Rows whose arguments hold a NULL are skipped (as SQL's own aggregates skip them); a group
//! that got no row (all NULL, or filtered out) gives `finish(create_state())`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::{Array, ArrayRef, BooleanArray, StringArray};

use super::aggregate_engine::AggEngine;
use super::sandbox::Sandbox;
use super::worker;
use crate::{Declaration, Limits, UdfError};

/// The states of an aggregate's groups, by group id: `None` for a group whose state was
/// never made (no row yet), else the state as JSON text.
pub type GroupStates = Vec<Option<String>>;

/// Which of the optional functions the body exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Exports {
    pub(super) retract: bool,
    pub(super) merge: bool,
    pub(super) finish: bool,
}

/// One batch's work for an engine. Each job carries the states it works on (one per slot,
/// in the order the slots were first touched) and gets them back changed.
pub(super) enum Job {
    /// Which functions the body exports.
    Describe,
    /// Rows into (or, with `retract`, out of) states: `steps` are (row, slot) in row order.
    Rows {
        states: Vec<Option<String>>,
        args: Vec<ArrayRef>,
        steps: Vec<(usize, usize)>,
        retract: bool,
    },
    /// States merged into states: `steps` are (slot, the incoming state), in order.
    Merge {
        states: Vec<Option<String>>,
        steps: Vec<(usize, String)>,
    },
    /// The result of every state.
    Finish { states: Vec<Option<String>> },
}

/// An engine's answer to a [`Job`].
pub(super) enum Answer {
    Exports(Exports),
    States(Vec<String>),
    Values(ArrayRef),
}

type Worker = worker::Worker<Job, Answer>;

/// A JavaScript aggregate function, compiled and checked when declared, callable from any
/// thread: each caller at a time gets an engine of its own (on a thread of its own), kept
/// for later calls; an engine whose call failed is dropped.
pub struct JsAggregate {
    declaration: Arc<Declaration>,
    body: Arc<str>,
    limits: Limits,
    exports: Exports,
    idle: Mutex<Vec<Worker>>,
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
    /// let out = sum.finish(states).expect("no throw");
    /// assert_eq!(out.as_any().downcast_ref::<Int64Array>(), Some(&Int64Array::from(vec![5, 2])));
    /// ```
    pub fn new(declaration: Declaration, body: &str, limits: Limits) -> Result<Self, UdfError> {
        let declaration = Arc::new(declaration);
        let body: Arc<str> = Arc::from(body);
        let first = start(&declaration, &body, limits)?;
        let exports = match first.call(Job::Describe)? {
            Answer::Exports(e) => e,
            _ => return Err(lost(&declaration.name)),
        };
        Ok(JsAggregate {
            declaration,
            body,
            limits,
            exports,
            idle: Mutex::new(vec![first]),
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
        if retract && !self.exports.retract {
            return Err(UdfError::AggregateBody {
                function: self.declaration.name.clone(),
                message: "it exports no `retract(state, …)`, which taking a row out of a group needs (a retraction of an updating input): export one from its body".into(),
            });
        }
        let mut slots = Slots::default();
        let mut steps = Vec::new();
        for (row, group) in groups.iter().enumerate() {
            let kept = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if !kept || args.iter().any(|a| a.is_null(row)) {
                continue;
            }
            steps.push((row, slots.of(*group, states)));
        }
        if steps.is_empty() {
            return Ok(());
        }
        let job = Job::Rows {
            states: std::mem::take(&mut slots.states),
            args: args.to_vec(),
            steps,
            retract,
        };
        let changed = self.states(job)?;
        slots.put_back(changed, states);
        Ok(())
    }

    /// Merges the states `incoming` (JSON text, as [`JsAggregate::finish`]'s input; a NULL is
    /// no state) into groups `groups[i]` of `states`. A group without a state takes the
    /// incoming one as it is; one with a state needs `merge` ([`UdfError::NoMerge`], whose
    /// `needed` is `needed`).
    pub fn merge(
        &self,
        states: &mut GroupStates,
        groups: &[usize],
        incoming: &StringArray,
        needed: &str,
    ) -> Result<(), UdfError> {
        let mut slots = Slots::default();
        let mut steps = Vec::new();
        for (row, group) in groups.iter().enumerate() {
            if incoming.is_null(row) {
                continue;
            }
            let text = incoming.value(row);
            match states.get_mut(*group) {
                Some(s @ None) if !slots.holds(*group) => *s = Some(text.to_string()),
                _ => steps.push((slots.of(*group, states), text.to_string())),
            }
        }
        if steps.is_empty() {
            return Ok(());
        }
        if !self.exports.merge {
            slots.put_back_unchanged(states);
            return Err(UdfError::NoMerge {
                function: self.declaration.name.clone(),
                needed: needed.to_string(),
            });
        }
        let job = Job::Merge {
            states: std::mem::take(&mut slots.states),
            steps,
        };
        let changed = self.states(job)?;
        slots.put_back(changed, states);
        Ok(())
    }

    /// The result of each state (`finish(state)`, or the state itself without a `finish`;
    /// for a group without a state, that of `create_state()`), of the declared type.
    pub fn finish(&self, states: GroupStates) -> Result<ArrayRef, UdfError> {
        match self.call(Job::Finish { states })? {
            Answer::Values(v) => Ok(v),
            _ => Err(lost(&self.declaration.name)),
        }
    }

    fn states(&self, job: Job) -> Result<Vec<String>, UdfError> {
        match self.call(job)? {
            Answer::States(s) => Ok(s),
            _ => Err(lost(&self.declaration.name)),
        }
    }

    fn call(&self, job: Job) -> Result<Answer, UdfError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let worker = match idle {
            Some(w) => w,
            None => start(&self.declaration, &self.body, self.limits)?,
        };
        // On an error the worker is dropped (and abandoned if its call is still running).
        let out = worker.call(job)?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(worker);
        Ok(out)
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
        |engine, job| engine.run(job),
    )
}

fn lost(name: &str) -> UdfError {
    UdfError::Engine(format!(
        "the JavaScript engine of aggregate `{name}` answered another question (a bug in anduin)"
    ))
}

/// The groups one job works on, each given a slot in the order it was first touched, with
/// its state taken out of the caller's states for the job.
#[derive(Default)]
struct Slots {
    of_group: HashMap<usize, usize>,
    groups: Vec<usize>,
    states: Vec<Option<String>>,
}

impl Slots {
    /// Group `group`'s slot, its state taken from `states` the first time.
    fn of(&mut self, group: usize, states: &mut GroupStates) -> usize {
        *self.of_group.entry(group).or_insert_with(|| {
            self.groups.push(group);
            self.states
                .push(states.get_mut(group).and_then(Option::take));
            self.groups.len() - 1
        })
    }

    fn holds(&self, group: usize) -> bool {
        self.of_group.contains_key(&group)
    }

    /// The job's changed states, back to their groups.
    fn put_back(&self, changed: Vec<String>, states: &mut GroupStates) {
        for (group, state) in self.groups.iter().zip(changed) {
            if let Some(s) = states.get_mut(*group) {
                *s = Some(state);
            }
        }
    }

    /// The states taken out, back as they were (no job ran).
    fn put_back_unchanged(&mut self, states: &mut GroupStates) {
        for (group, state) in self.groups.iter().zip(self.states.drain(..)) {
            if let Some(s) = states.get_mut(*group) {
                *s = state;
            }
        }
    }
}
