//! What every user-defined aggregate shares, whatever its language: the states of its groups
//! kept by anduin as bytes (a JavaScript aggregate's as JSON text, a WebAssembly one's as
//! the bytes of its state in the module's memory), and one batch's work on them, cut into a
//! [`Job`] for the engine that runs the aggregate's functions.
//!
//! A state lives outside the engine between batches, so that it can be written to a
//! checkpoint and read back the same (`state()` / `merge_batch()` of the DataFusion face,
//! `udaf.rs`), and so that an engine may be dropped after a failure without losing anything
//! a later batch needs. A group without a state (no row yet) is `None`: merging a state into
//! it takes the state as it is, so that a restore, or a window of one pane, needs no `merge`.
//!
//! Rows whose arguments hold a NULL are skipped, as SQL's own aggregates skip them; a group
//! that got no row (all NULL, or filtered out) gives the result of a fresh state.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, BinaryArray, BooleanArray};

use crate::{Declaration, UdfError};

/// The states of an aggregate's groups, by group id: `None` for a group whose state was
/// never made (no row yet), else the state's bytes (JSON text for JavaScript).
pub type GroupStates = Vec<Option<Vec<u8>>>;

/// Which of the optional functions an aggregate has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Exports {
    pub(crate) retract: bool,
    pub(crate) merge: bool,
}

/// One batch's work for an engine. Each job carries the states it works on (one per slot,
/// in the order the slots were first touched) and gets them back changed.
#[derive(Debug)]
pub(crate) enum Job {
    /// Rows into (or, with `retract`, out of) states: `steps` are (row, slot) in row order.
    Rows {
        states: Vec<Option<Vec<u8>>>,
        args: Vec<ArrayRef>,
        steps: Vec<(usize, usize)>,
        retract: bool,
    },
    /// States merged into states: `steps` are (slot, the incoming state), in order.
    Merge {
        states: Vec<Option<Vec<u8>>>,
        steps: Vec<(usize, Vec<u8>)>,
    },
    /// The result of every state.
    Finish { states: Vec<Option<Vec<u8>>> },
}

/// An engine's answer to a [`Job`].
#[derive(Debug)]
pub(crate) enum Answer {
    /// The changed states of a [`Job::Rows`] or [`Job::Merge`], one per slot.
    States(Vec<Vec<u8>>),
    /// The results of a [`Job::Finish`].
    Values(ArrayRef),
}

/// An aggregate whose engine does jobs: a JavaScript or a WebAssembly one.
pub(crate) trait Stepper: Send + Sync + std::fmt::Debug {
    fn declaration(&self) -> &Declaration;
    fn exports(&self) -> Exports;
    /// Does `job` (on an engine of its own: the caller may be any thread).
    fn step(&self, job: Job) -> Result<Answer, UdfError>;
}

/// Adds rows to (or, with `retract`, takes them out of) the states of their groups: row `i`
/// of the argument columns `args` belongs to group `groups[i]` (an index into `states`,
/// which is long enough). Rows that `filter` does not keep, and rows with a NULL argument,
/// are skipped. On an error the states this batch touched are gone: the caller fails.
pub(crate) fn accumulate(
    f: &dyn Stepper,
    states: &mut GroupStates,
    groups: &[usize],
    args: &[ArrayRef],
    filter: Option<&BooleanArray>,
    retract: bool,
) -> Result<(), UdfError> {
    if retract && !f.exports().retract {
        return Err(UdfError::AggregateBody {
            function: f.declaration().name.clone(),
            message: "it has no `retract`, which taking a row out of a group needs (a retraction of an updating input): give it one".into(),
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
    let changed = changed_states(f, job)?;
    slots.put_back(changed, states);
    Ok(())
}

/// Merges the states `incoming` (a NULL is no state) into groups `groups[i]` of `states`. A
/// group without a state takes the incoming one as it is; one with a state needs the
/// aggregate's `merge` ([`UdfError::NoMerge`], whose `needed` is `needed`).
pub(crate) fn merge(
    f: &dyn Stepper,
    states: &mut GroupStates,
    groups: &[usize],
    incoming: &BinaryArray,
    needed: &str,
) -> Result<(), UdfError> {
    let mut slots = Slots::default();
    let mut steps = Vec::new();
    for (row, group) in groups.iter().enumerate() {
        if incoming.is_null(row) {
            continue;
        }
        let bytes = incoming.value(row);
        match states.get_mut(*group) {
            Some(s @ None) if !slots.holds(*group) => *s = Some(bytes.to_vec()),
            _ => steps.push((slots.of(*group, states), bytes.to_vec())),
        }
    }
    if steps.is_empty() {
        return Ok(());
    }
    if !f.exports().merge {
        slots.put_back_unchanged(states);
        return Err(UdfError::NoMerge {
            function: f.declaration().name.clone(),
            needed: needed.to_string(),
        });
    }
    let job = Job::Merge {
        states: std::mem::take(&mut slots.states),
        steps,
    };
    let changed = changed_states(f, job)?;
    slots.put_back(changed, states);
    Ok(())
}

/// The result of each state (for a group without a state, that of a fresh one), of the
/// declared type.
pub(crate) fn finish(f: &dyn Stepper, states: GroupStates) -> Result<ArrayRef, UdfError> {
    match f.step(Job::Finish { states })? {
        Answer::Values(v) => Ok(v),
        Answer::States(_) => Err(lost(&f.declaration().name)),
    }
}

fn changed_states(f: &dyn Stepper, job: Job) -> Result<Vec<Vec<u8>>, UdfError> {
    match f.step(job)? {
        Answer::States(s) => Ok(s),
        Answer::Values(_) => Err(lost(&f.declaration().name)),
    }
}

fn lost(name: &str) -> UdfError {
    UdfError::Engine(format!(
        "the engine of aggregate `{name}` answered another question (a bug in anduin)"
    ))
}

/// The groups one job works on, each given a slot in the order it was first touched, with
/// its state taken out of the caller's states for the job.
#[derive(Default)]
struct Slots {
    of_group: HashMap<usize, usize>,
    groups: Vec<usize>,
    states: Vec<Option<Vec<u8>>>,
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
    fn put_back(&self, changed: Vec<Vec<u8>>, states: &mut GroupStates) {
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
