//! The running aggregates of the DEFINE conditions, grown with each partial match (issue 18:
//! `count(DISTINCT v)`, `sum(A.v)`, `stddev(v)` in a condition cost a row's work per row, not
//! a walk over the whole match): the state of every aggregate after a history's rows
//! (`eval/grown.rs`), kept beside the history's last step and derived from its previous
//! step's when a row extends it.
//!
//! A history is shared by the threads that parted at it, and each extension is a new step, so
//! the state of a step never changes: the state after a row is a copy of the state before it
//! with the row added (the last thread of a row to extend a step takes its state instead of a
//! copy). A step whose state is not known (after a restore, a hand-over, or a row refused
//! after its state was taken) gets it by one walk over its rows.
//!
//! The states are the working space's ([`super::Scratch`]), not the partition's: nothing of
//! them is saved. They are found by the address of the step, which a weak reference keeps
//! from being reused while the entry lives; entries of steps gone are swept once the map has
//! doubled since the last sweep.
//!
//! A partial match shorter than [`GROW_AFTER`] rows keeps no states: its conditions walk its
//! rows, which costs less than keeping states for a few rows (most of Nexmark's partial
//! matches are a row or two); the first row past it makes the states with one walk.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use ahash::RandomState;

use super::super::eval::{grows, Grown};
use super::super::expr::{Agg, E};
use super::views::{to_steps, Past};
use super::{Partition, Pattern, Step};

/// How many rows a partial match has before the states of its aggregates grow with it.
pub(crate) const GROW_AFTER: u64 = 32;

/// The aggregates of the DEFINE conditions that grow with a partial match (see
/// [`grows`]), each once.
#[derive(Debug, Default)]
pub(crate) struct Running {
    pub aggs: Vec<Agg>,
    /// The address of each aggregate of the conditions (in `Pattern::defines`, which keep
    /// them in boxes: the addresses hold while the pattern lives) and its place in `aggs`.
    at: Vec<(usize, usize)>,
}

impl Running {
    /// The growing aggregates of `defines`.
    pub(crate) fn of(defines: &[Option<E>]) -> Self {
        let mut r = Running::default();
        for e in defines.iter().flatten() {
            e.walk(&mut |x| {
                if let E::Agg(a) = x {
                    if grows(a) {
                        let slot = match r.aggs.iter().position(|b| **a == *b) {
                            Some(slot) => slot,
                            None => {
                                r.aggs.push((**a).clone());
                                r.aggs.len() - 1
                            }
                        };
                        r.at.push((std::ptr::from_ref::<Agg>(a) as usize, slot));
                    }
                }
            });
        }
        r
    }

    /// The place of aggregate `a` among [`Running::aggs`]: by its address (an aggregate of
    /// the conditions), else by its value (the pruner's copy).
    pub(crate) fn slot(&self, a: &Agg) -> Option<usize> {
        let addr = std::ptr::from_ref(a) as usize;
        if let Some((_, slot)) = self.at.iter().find(|(at, _)| *at == addr) {
            return Some(*slot);
        }
        self.aggs.iter().position(|b| b == a)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.aggs.is_empty()
    }

    /// The states over no row.
    fn empty(&self) -> Box<[Grown]> {
        self.aggs.iter().map(Grown::new).collect()
    }
}

/// The states of the aggregates after a step, and the step.
#[derive(Debug)]
struct Entry {
    step: Weak<Step>,
    states: Box<[Grown]>,
}

/// How much work the running aggregates did (tests assert on it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Work {
    /// Rows added to states as partial matches grew.
    pub grown: u64,
    /// Rows walked to make the state of a step that had none.
    pub rebuilt: u64,
}

/// The states by step (see the module's notes).
#[derive(Debug, Default)]
pub(crate) struct GrownStates {
    map: HashMap<usize, Entry, RandomState>,
    /// Entries after the last sweep.
    swept: usize,
    /// How many threads of the attempt being advanced are still to extend each history in
    /// the row (by the address of its last step).
    users: HashMap<usize, u32, RandomState>,
    pub work: Work,
}

impl GrownStates {
    /// Counts the threads that will extend each history in the row (see
    /// [`GrownStates::last_use`]).
    pub(crate) fn count_users(&mut self, threads: &[super::Thread]) {
        self.users.clear();
        for h in threads.iter().filter_map(|t| t.hist.as_ref()) {
            *self.users.entry(Arc::as_ptr(h) as usize).or_default() += 1;
        }
    }

    /// Whether the thread with `hist` is the last in the row to extend it (counted by
    /// [`GrownStates::count_users`]): it may take the history's states.
    pub(crate) fn last_use(&mut self, hist: Option<&Arc<Step>>) -> bool {
        let Some(h) = hist else { return false };
        match self.users.get_mut(&(Arc::as_ptr(h) as usize)) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        }
    }

    /// The states after `hist`, if known.
    pub(crate) fn get(&self, hist: Option<&Arc<Step>>) -> Option<&[Grown]> {
        let h = hist?;
        let e = self.map.get(&(Arc::as_ptr(h) as usize))?;
        Some(&e.states)
    }

    /// The states of the aggregates of pattern `p` after `hist` extended by `row` (row,
    /// variable) of `part`, where the conditions see match number `number`: those after `hist` (taken if `last`, the last
    /// use of `hist` in this row; else copied; made by a walk if unknown) with the row added.
    pub(crate) fn extended(
        &mut self,
        p: &Pattern,
        part: &Partition,
        number: i64,
        hist: Option<&Arc<Step>>,
        row: (u64, usize),
        last: bool,
    ) -> Box<[Grown]> {
        let (running, vars) = (&p.running, &p.vars[..]);
        let known = hist.and_then(|h| {
            let key = Arc::as_ptr(h) as usize;
            if last {
                self.map.remove(&key).map(|e| e.states)
            } else {
                self.map.get(&key).map(|e| e.states.clone())
            }
        });
        let past = Past {
            part,
            hist,
            number,
            grown: None,
        };
        let mut states = match known {
            Some(states) => states,
            None => {
                let mut states = running.empty();
                for r in to_steps(hist) {
                    self.work.rebuilt += 1;
                    for (g, a) in states.iter_mut().zip(&running.aggs) {
                        g.add(a, &past, vars, r);
                    }
                }
                // The threads after this one that extend `hist` find them.
                if let (Some(h), false) = (hist, last) {
                    self.keep(h, states.clone());
                }
                states
            }
        };
        // The row is evaluated where the conditions see it: after `hist`.
        let view = super::views::HistView {
            part,
            head: row,
            hist,
            number,
            grown: None,
        };
        self.work.grown += 1;
        for (g, a) in states.iter_mut().zip(&running.aggs) {
            g.add(a, &view, vars, row);
        }
        states
    }

    /// Keeps `states` as those after `step` (unless it has some: a step shared by threads
    /// that extended one history alike).
    pub(crate) fn keep(&mut self, step: &Arc<Step>, states: Box<[Grown]>) {
        let key = Arc::as_ptr(step) as usize;
        self.map.entry(key).or_insert_with(|| Entry {
            step: Arc::downgrade(step),
            states,
        });
        if self.map.len() > 2 * self.swept + 1024 {
            self.map.retain(|_, e| e.step.strong_count() > 0);
            self.swept = self.map.len();
        }
    }
}

/// Lets a view's evaluation find the states of its aggregates.
pub(crate) fn find<'a>(grown: Option<(&'a Running, &'a [Grown])>, a: &Agg) -> Option<&'a Grown> {
    let (running, states) = grown?;
    states.get(running.slot(a)?)
}
