//! Which worker slot each task instance takes: a pure decision over facts ([`place`]).
//!
//! A task instance is the unit: the operators chained in a task run in it, so what a chain
//! needs co-located always is; an instance takes one slot. Instances are spread over the live
//! workers, each to the least loaded worker with a free slot (by the share of its slots in use,
//! then by worker number), which deals them round-robin over equal workers. A "distinct
//! workers" [`Constraint`] (a task and its standby, the rewriting issue's `@{p1}`) keeps the
//! instances it names on pairwise different workers: honoured, or the placement is refused.
//! An instance that already has a slot on a live worker keeps it: after a worker dies, only
//! that worker's instances move.
//!
//! # Example
//!
//! ```
//! use anduin_coordinator::{place, Constraint, TaskNeed, TaskRef, WorkerFacts, WorkerId};
//!
//! let (a, b, c) = (TaskRef::new(0, 0), TaskRef::new(0, 1), TaskRef::new(1, 0));
//! let workers = [WorkerFacts::new(WorkerId(1), 2, 0), WorkerFacts::new(WorkerId(2), 2, 0)];
//! let tasks = [TaskNeed::new(a), TaskNeed::new(b), TaskNeed::new(c)];
//! let distinct = [Constraint::distinct("a and its standby b", [a, b])];
//! let placement = place(&tasks, &workers, &distinct).expect("4 slots for 3 tasks");
//! assert_ne!(placement.assignment[&a], placement.assignment[&b]);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::ids::{TaskRef, WorkerId};

/// A task instance to place: it may already have a slot (on `now_on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskNeed {
    /// The instance.
    pub task: TaskRef,
    /// Where it runs now, if anywhere: it keeps that slot while the worker is live (listed in
    /// the workers given to [`place`]), and is placed anew otherwise.
    pub now_on: Option<WorkerId>,
}

impl TaskNeed {
    /// An instance with no slot yet.
    pub fn new(task: TaskRef) -> Self {
        TaskNeed { task, now_on: None }
    }

    /// An instance running on `worker`.
    pub fn on(task: TaskRef, worker: WorkerId) -> Self {
        TaskNeed {
            task,
            now_on: Some(worker),
        }
    }
}

/// A live worker, as placement sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerFacts {
    /// The worker.
    pub worker: WorkerId,
    /// Its slots (`anduin worker --slots`).
    pub slots: u32,
    /// Slots in use, by any query, counting the instances given to [`place`] that run on it.
    pub used: u32,
}

impl WorkerFacts {
    /// A worker with `slots` slots of which `used` are taken.
    pub fn new(worker: WorkerId, slots: u32, used: u32) -> Self {
        WorkerFacts {
            worker,
            slots,
            used,
        }
    }

    fn free(&self) -> u32 {
        self.slots.saturating_sub(self.used)
    }
}

/// A rule the placement must honour.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Constraint {
    /// These instances on pairwise different workers.
    DistinctWorkers {
        /// What the rule is, for messages (`the standby of filter#0`).
        label: String,
        /// The instances.
        tasks: BTreeSet<TaskRef>,
    },
}

impl Constraint {
    /// The instances `tasks` on pairwise different workers; `label` names the rule in errors.
    pub fn distinct(label: impl Into<String>, tasks: impl IntoIterator<Item = TaskRef>) -> Self {
        Constraint::DistinctWorkers {
            label: label.into(),
            tasks: tasks.into_iter().collect(),
        }
    }

    fn label(&self) -> &str {
        match self {
            Constraint::DistinctWorkers { label, .. } => label,
        }
    }

    fn tasks(&self) -> &BTreeSet<TaskRef> {
        match self {
            Constraint::DistinctWorkers { tasks, .. } => tasks,
        }
    }
}

/// Where every instance goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Every instance given to [`place`], with its worker.
    pub assignment: BTreeMap<TaskRef, WorkerId>,
    /// The instances given a new slot (the others kept theirs).
    pub placed: BTreeSet<TaskRef>,
}

impl Placement {
    /// The newly placed instances with their workers: what [`Input::Placed`] carries.
    ///
    /// [`Input::Placed`]: crate::life::Input::Placed
    pub fn newly_placed(&self) -> BTreeMap<TaskRef, WorkerId> {
        self.placed
            .iter()
            .filter_map(|t| self.assignment.get(t).map(|w| (*t, *w)))
            .collect()
    }
}

/// Why no placement was made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Fewer free slots than instances to place.
    #[error("{needed} task instances need a slot but the live workers have {free} free: start more workers (or workers with more --slots), or lower the parallelism")]
    NotEnoughSlots {
        /// Instances to place.
        needed: u32,
        /// Free slots on live workers.
        free: u32,
    },
    /// A distinct-workers rule names more instances than there are live workers.
    #[error("{label}: {tasks} task instances must run on distinct workers, but only {workers} workers are live: start more workers")]
    TooFewWorkers {
        /// The rule.
        label: String,
        /// Its instances.
        tasks: u32,
        /// Live workers.
        workers: u32,
    },
    /// The rules cannot all be honoured with the free slots.
    #[error("{label}: no live worker has a free slot for task {task} away from the instances it must not share a worker with ({needed} instances to place, {free} free slots): start more workers")]
    Unsatisfiable {
        /// A rule that could not be honoured.
        label: String,
        /// The instance left without a slot.
        task: TaskRef,
        /// Instances to place.
        needed: u32,
        /// Free slots on live workers.
        free: u32,
    },
    /// Two instances that keep their slots already share a worker against a rule.
    #[error("{label}: task instances {a} and {b} both run on {worker}, against the rule; move one of them")]
    KeptBreakRule {
        /// The rule.
        label: String,
        /// One instance.
        a: TaskRef,
        /// The other.
        b: TaskRef,
        /// Their worker.
        worker: WorkerId,
    },
    /// An instance given twice.
    #[error("task instance {task} is given twice to placement (a bug in anduin)")]
    DuplicateTask {
        /// The instance.
        task: TaskRef,
    },
    /// A worker given twice.
    #[error("{worker} is given twice to placement (a bug in anduin)")]
    DuplicateWorker {
        /// The worker.
        worker: WorkerId,
    },
    /// A rule names an instance not given to placement.
    #[error("{label}: the rule names task instance {task}, which is not among the instances to place (a bug in anduin)")]
    UnknownTask {
        /// The rule.
        label: String,
        /// The instance.
        task: TaskRef,
    },
}

impl PlacementError {
    /// The slots needed and free, where the error knows them (`(0, 0)` otherwise).
    pub fn slots(&self) -> (u32, u32) {
        match self {
            PlacementError::NotEnoughSlots { needed, free }
            | PlacementError::Unsatisfiable { needed, free, .. } => (*needed, *free),
            _ => (0, 0),
        }
    }
}

/// How many search steps the constrained instances get before the placement gives up.
const SEARCH_STEPS: u32 = 100_000;

/// Places `tasks` on `workers` (the live ones), honouring `constraints`. Instances running on a
/// listed worker keep their slot; the others go, one at a time, to the least loaded worker with
/// a free slot that no rule forbids. Instances under a rule are placed first, by a bounded
/// search that tries the least loaded workers first, so that a rule is refused only when no
/// assignment honours it (or the search ran out of steps, for rules far larger than any plan).
pub fn place(
    tasks: &[TaskNeed],
    workers: &[WorkerFacts],
    constraints: &[Constraint],
) -> Result<Placement, PlacementError> {
    let mut load: BTreeMap<WorkerId, WorkerFacts> = BTreeMap::new();
    for w in workers {
        if load.insert(w.worker, *w).is_some() {
            return Err(PlacementError::DuplicateWorker { worker: w.worker });
        }
    }
    let mut assignment = BTreeMap::new();
    let mut to_place = Vec::new();
    for need in tasks {
        if assignment.contains_key(&need.task) || to_place.contains(&need.task) {
            return Err(PlacementError::DuplicateTask { task: need.task });
        }
        match need.now_on.filter(|w| load.contains_key(w)) {
            Some(worker) => {
                assignment.insert(need.task, worker);
            }
            None => to_place.push(need.task),
        }
    }
    // Each instance's peers: the instances it must not share a worker with.
    let mut peers: BTreeMap<TaskRef, BTreeSet<(TaskRef, usize)>> = BTreeMap::new();
    for (i, rule) in constraints.iter().enumerate() {
        for task in rule.tasks() {
            if !assignment.contains_key(task) && !to_place.contains(task) {
                return Err(PlacementError::UnknownTask {
                    label: rule.label().to_string(),
                    task: *task,
                });
            }
            for other in rule.tasks().iter().filter(|o| *o != task) {
                peers.entry(*task).or_default().insert((*other, i));
            }
        }
        let live = u32::try_from(load.len()).unwrap_or(u32::MAX);
        let size = u32::try_from(rule.tasks().len()).unwrap_or(u32::MAX);
        if size > live {
            return Err(PlacementError::TooFewWorkers {
                label: rule.label().to_string(),
                tasks: size,
                workers: live,
            });
        }
    }
    for (task, others) in &peers {
        for (other, rule) in others {
            if let (Some(w), Some(v)) = (assignment.get(task), assignment.get(other)) {
                if w == v && task < other {
                    return Err(PlacementError::KeptBreakRule {
                        label: constraints
                            .get(*rule)
                            .map(|r| r.label().to_string())
                            .unwrap_or_default(),
                        a: *task,
                        b: *other,
                        worker: *w,
                    });
                }
            }
        }
    }
    let needed = u32::try_from(to_place.len()).unwrap_or(u32::MAX);
    let free: u32 = load.values().map(|w| w.free()).fold(0, u32::saturating_add);
    if needed > free {
        return Err(PlacementError::NotEnoughSlots { needed, free });
    }
    // The most constrained first, by search; then the others, greedily (they always fit, since
    // there are enough slots).
    let (mut ruled, free_ones): (Vec<TaskRef>, Vec<TaskRef>) =
        to_place.iter().partition(|t| peers.contains_key(t));
    ruled.sort_by_key(|t| (std::cmp::Reverse(peers.get(t).map_or(0, BTreeSet::len)), *t));
    let mut search = Search {
        peers: &peers,
        load: &mut load,
        assignment: &mut assignment,
        steps: 0,
    };
    if let Err(stuck) = search.place_all(&ruled) {
        let label = peers
            .get(&stuck)
            .and_then(|p| p.iter().next())
            .and_then(|(_, rule)| constraints.get(*rule))
            .map(|r| r.label().to_string())
            .unwrap_or_default();
        return Err(PlacementError::Unsatisfiable {
            label,
            task: stuck,
            needed,
            free,
        });
    }
    for task in free_ones {
        let worker = least_loaded(&load, |_| true)
            .expect("there are at least as many free slots as instances to place");
        take(&mut load, worker);
        assignment.insert(task, worker);
    }
    Ok(Placement {
        assignment,
        placed: to_place.into_iter().collect(),
    })
}

/// The depth-first search for the instances under rules.
struct Search<'a> {
    peers: &'a BTreeMap<TaskRef, BTreeSet<(TaskRef, usize)>>,
    load: &'a mut BTreeMap<WorkerId, WorkerFacts>,
    assignment: &'a mut BTreeMap<TaskRef, WorkerId>,
    steps: u32,
}

impl Search<'_> {
    /// Places every instance of `tasks`, or names one that found no worker.
    fn place_all(&mut self, tasks: &[TaskRef]) -> Result<(), TaskRef> {
        let Some((task, rest)) = tasks.split_first() else {
            return Ok(());
        };
        let mut candidates: Vec<WorkerFacts> = self
            .load
            .values()
            .filter(|w| w.free() > 0 && !self.forbidden(*task, w.worker))
            .copied()
            .collect();
        candidates.sort_by(by_load);
        for w in candidates {
            self.steps += 1;
            if self.steps > SEARCH_STEPS {
                return Err(*task);
            }
            take(self.load, w.worker);
            self.assignment.insert(*task, w.worker);
            match self.place_all(rest) {
                Ok(()) => return Ok(()),
                Err(_) if self.steps <= SEARCH_STEPS => {
                    self.assignment.remove(task);
                    if let Some(f) = self.load.get_mut(&w.worker) {
                        f.used -= 1;
                    }
                }
                Err(stuck) => return Err(stuck),
            }
        }
        Err(*task)
    }

    fn forbidden(&self, task: TaskRef, worker: WorkerId) -> bool {
        self.peers.get(&task).is_some_and(|others| {
            others
                .iter()
                .any(|(o, _)| self.assignment.get(o) == Some(&worker))
        })
    }
}

/// The least loaded worker with a free slot among those `allowed`.
fn least_loaded(
    load: &BTreeMap<WorkerId, WorkerFacts>,
    allowed: impl Fn(WorkerId) -> bool,
) -> Option<WorkerId> {
    load.values()
        .filter(|w| w.free() > 0 && allowed(w.worker))
        .min_by(|a, b| by_load(a, b))
        .map(|w| w.worker)
}

/// Less loaded first: a smaller share of slots in use, then more free slots, then the lower
/// worker number.
fn by_load(a: &WorkerFacts, b: &WorkerFacts) -> std::cmp::Ordering {
    let share_a = u64::from(a.used) * u64::from(b.slots);
    let share_b = u64::from(b.used) * u64::from(a.slots);
    share_a
        .cmp(&share_b)
        .then(b.free().cmp(&a.free()))
        .then(a.worker.cmp(&b.worker))
}

fn take(load: &mut BTreeMap<WorkerId, WorkerFacts>, worker: WorkerId) {
    if let Some(w) = load.get_mut(&worker) {
        w.used += 1;
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (t, w)) in self.assignment.iter().enumerate() {
            write!(f, "{}{t} on {w}", if i == 0 { "" } else { ", " })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(task: u32, instance: u32) -> TaskRef {
        TaskRef::new(task, instance)
    }

    fn on(p: &Placement, task: TaskRef) -> u32 {
        p.assignment[&task].0
    }

    #[test]
    fn instances_are_dealt_round_robin_over_equal_workers() {
        let workers: Vec<_> = (1..=3)
            .map(|w| WorkerFacts::new(WorkerId(w), 4, 0))
            .collect();
        let tasks: Vec<_> = (0..6).map(|i| TaskNeed::new(t(0, i))).collect();
        let p = place(&tasks, &workers, &[]).expect("12 slots for 6");
        let order: Vec<u32> = (0..6).map(|i| on(&p, t(0, i))).collect();
        assert_eq!(order, vec![1, 2, 3, 1, 2, 3]);
        assert_eq!(p.placed.len(), 6);
    }

    #[test]
    fn the_least_loaded_worker_by_share_of_its_slots_comes_first() {
        // Worker 1 has 2 of 8 in use (25 %), worker 2 has 1 of 2 (50 %).
        let workers = [
            WorkerFacts::new(WorkerId(2), 2, 1),
            WorkerFacts::new(WorkerId(1), 8, 2),
        ];
        let p = place(&[TaskNeed::new(t(0, 0))], &workers, &[]).expect("room");
        assert_eq!(on(&p, t(0, 0)), 1);
    }

    #[test]
    fn too_few_slots_is_refused_naming_needed_and_free() {
        let workers = [
            WorkerFacts::new(WorkerId(1), 2, 1),
            WorkerFacts::new(WorkerId(2), 1, 0),
        ];
        let tasks: Vec<_> = (0..3).map(|i| TaskNeed::new(t(0, i))).collect();
        let err = place(&tasks, &workers, &[]).expect_err("3 > 2");
        assert_eq!(err, PlacementError::NotEnoughSlots { needed: 3, free: 2 });
        assert_eq!(err.slots(), (3, 2));
        let text = err.to_string();
        assert!(
            text.contains("3 task instances") && text.contains("2 free"),
            "{text}"
        );
    }

    #[test]
    fn after_a_worker_dies_only_its_instances_move() {
        // Worker 2 is dead (not listed): its two instances move; the others stay.
        let workers = [
            WorkerFacts::new(WorkerId(1), 4, 2),
            WorkerFacts::new(WorkerId(3), 4, 2),
        ];
        let tasks = [
            TaskNeed::on(t(0, 0), WorkerId(1)),
            TaskNeed::on(t(0, 1), WorkerId(2)),
            TaskNeed::on(t(0, 2), WorkerId(3)),
            TaskNeed::on(t(1, 0), WorkerId(1)),
            TaskNeed::on(t(1, 1), WorkerId(2)),
            TaskNeed::on(t(1, 2), WorkerId(3)),
        ];
        let p = place(&tasks, &workers, &[]).expect("4 free for 2");
        assert_eq!(p.placed, [t(0, 1), t(1, 1)].into());
        for kept in [t(0, 0), t(1, 0)] {
            assert_eq!(on(&p, kept), 1);
        }
        for kept in [t(0, 2), t(1, 2)] {
            assert_eq!(on(&p, kept), 3);
        }
        assert_ne!(on(&p, t(0, 1)), on(&p, t(1, 1)), "spread over 1 and 3");
        assert_eq!(p.newly_placed().len(), 2);
    }

    #[test]
    fn a_distinct_rule_is_honoured_even_when_greedy_order_would_break_it() {
        // Worker 1 is the least loaded and has two free slots, but a and b must be apart.
        let workers = [
            WorkerFacts::new(WorkerId(1), 10, 0),
            WorkerFacts::new(WorkerId(2), 10, 5),
        ];
        let (a, b) = (t(0, 0), t(5, 0));
        let rule = Constraint::distinct("a and its standby", [a, b]);
        let p = place(&[TaskNeed::new(a), TaskNeed::new(b)], &workers, &[rule]).expect("apart");
        assert_ne!(on(&p, a), on(&p, b));
    }

    #[test]
    fn a_rule_that_needs_a_full_worker_is_found_by_search() {
        // Only worker 1 has room for two; a/b and b/c apart. The search puts b alone.
        let workers = [
            WorkerFacts::new(WorkerId(1), 2, 0),
            WorkerFacts::new(WorkerId(2), 1, 0),
        ];
        let (a, b, c) = (t(0, 0), t(1, 0), t(2, 0));
        let rules = [
            Constraint::distinct("a/b", [a, b]),
            Constraint::distinct("b/c", [b, c]),
        ];
        let tasks = [TaskNeed::new(a), TaskNeed::new(b), TaskNeed::new(c)];
        let p = place(&tasks, &workers, &rules).expect("a, c on 1; b on 2");
        assert_eq!((on(&p, a), on(&p, b), on(&p, c)), (1, 2, 1));
    }

    #[test]
    fn rules_that_cannot_be_honoured_are_refused_with_their_label() {
        let workers = [
            WorkerFacts::new(WorkerId(1), 3, 0),
            WorkerFacts::new(WorkerId(2), 3, 3),
        ];
        let (a, b) = (t(0, 0), t(0, 1));
        let err = place(
            &[TaskNeed::new(a), TaskNeed::new(b)],
            &workers,
            &[Constraint::distinct("the pair", [a, b])],
        )
        .expect_err("worker 2 is full");
        assert!(
            matches!(err, PlacementError::Unsatisfiable { ref label, .. } if label == "the pair"),
            "{err:?}"
        );
        let err = place(
            &[TaskNeed::new(a), TaskNeed::new(b)],
            &workers[..1],
            &[Constraint::distinct("the pair", [a, b])],
        )
        .expect_err("one worker");
        assert_eq!(
            err,
            PlacementError::TooFewWorkers {
                label: "the pair".into(),
                tasks: 2,
                workers: 1
            }
        );
    }

    #[test]
    fn bad_facts_are_refused_not_trusted() {
        let w = [WorkerFacts::new(WorkerId(1), 3, 0)];
        let a = t(0, 0);
        assert!(matches!(
            place(&[TaskNeed::new(a), TaskNeed::new(a)], &w, &[]),
            Err(PlacementError::DuplicateTask { .. })
        ));
        assert!(matches!(
            place(&[TaskNeed::new(a)], &[w[0], w[0]], &[]),
            Err(PlacementError::DuplicateWorker { .. })
        ));
        assert!(matches!(
            place(
                &[TaskNeed::new(a)],
                &w,
                &[Constraint::distinct("x", [a, t(9, 9)])]
            ),
            Err(PlacementError::UnknownTask { .. })
        ));
        let two = [w[0], WorkerFacts::new(WorkerId(2), 3, 0)];
        assert!(matches!(
            place(
                &[
                    TaskNeed::on(a, WorkerId(1)),
                    TaskNeed::on(t(0, 1), WorkerId(1))
                ],
                &two,
                &[Constraint::distinct("x", [a, t(0, 1)])]
            ),
            Err(PlacementError::KeptBreakRule { .. })
        ));
    }

    /// Whether any assignment of `to_place` to `workers` honours the rules (brute force).
    fn exists(
        to_place: &[TaskRef],
        fixed: &BTreeMap<TaskRef, WorkerId>,
        free: &mut BTreeMap<WorkerId, u32>,
        rules: &[BTreeSet<TaskRef>],
    ) -> bool {
        let Some((task, rest)) = to_place.split_first() else {
            return true;
        };
        let workers: Vec<WorkerId> = free.keys().copied().collect();
        for w in workers {
            if free[&w] == 0 {
                continue;
            }
            let clash = rules.iter().any(|r| {
                r.contains(task) && r.iter().any(|o| o != task && fixed.get(o) == Some(&w))
            });
            if clash {
                continue;
            }
            *free.get_mut(&w).expect("listed") -= 1;
            let mut f = fixed.clone();
            f.insert(*task, w);
            let ok = exists(rest, &f, free, rules);
            *free.get_mut(&w).expect("listed") += 1;
            if ok {
                return true;
            }
        }
        false
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn placement_never_overfills_keeps_live_slots_and_honours_rules_or_refuses_only_when_impossible(
            slots in proptest::collection::vec((0u32..4, 0u32..3), 1..5),
            tasks in proptest::collection::vec(proptest::option::of(1u32..7), 0..9),
            rules in proptest::collection::vec(proptest::collection::btree_set(0usize..9, 2..4), 0..3),
        ) {
            let workers: Vec<WorkerFacts> = slots
                .iter()
                .enumerate()
                .map(|(i, (s, u))| WorkerFacts::new(WorkerId(i as u32 + 1), *s, (*u).min(*s)))
                .collect();
            let needs: Vec<TaskNeed> = tasks
                .iter()
                .enumerate()
                .map(|(i, on)| TaskNeed { task: t(0, i as u32), now_on: on.map(WorkerId) })
                .collect();
            let rules: Vec<Constraint> = rules
                .iter()
                .map(|r| Constraint::distinct("rule", r.iter().filter(|i| **i < needs.len()).map(|i| t(0, *i as u32))))
                .filter(|c| c.tasks().len() >= 2)
                .collect();
            let live: BTreeSet<WorkerId> = workers.iter().map(|w| w.worker).collect();
            match place(&needs, &workers, &rules) {
                Ok(p) => {
                    prop_assert_eq!(p.assignment.len(), needs.len());
                    for need in &needs {
                        let w = p.assignment[&need.task];
                        prop_assert!(live.contains(&w));
                        match need.now_on.filter(|w| live.contains(w)) {
                            Some(kept) => {
                                prop_assert_eq!(w, kept);
                                prop_assert!(!p.placed.contains(&need.task));
                            }
                            None => prop_assert!(p.placed.contains(&need.task)),
                        }
                    }
                    for wf in &workers {
                        let added = p.placed.iter().filter(|t| p.assignment[t] == wf.worker).count() as u32;
                        prop_assert!(added <= wf.free(), "{} got {} with {} free", wf.worker, added, wf.free());
                    }
                    for rule in &rules {
                        let on: BTreeSet<WorkerId> = rule.tasks().iter().map(|t| p.assignment[t]).collect();
                        prop_assert_eq!(on.len(), rule.tasks().len());
                    }
                }
                Err(PlacementError::NotEnoughSlots { needed, free }) => {
                    let to_place = needs.iter().filter(|n| n.now_on.filter(|w| live.contains(w)).is_none()).count() as u32;
                    prop_assert_eq!(needed, to_place);
                    prop_assert_eq!(free, workers.iter().map(|w| w.free()).sum::<u32>());
                    prop_assert!(needed > free);
                }
                Err(PlacementError::TooFewWorkers { tasks, workers: n, .. }) => {
                    prop_assert!(tasks > n);
                }
                Err(PlacementError::KeptBreakRule { a, b, .. }) => {
                    let w = |t: TaskRef| needs.iter().find(|n| n.task == t).and_then(|n| n.now_on);
                    prop_assert_eq!(w(a), w(b));
                }
                Err(PlacementError::Unsatisfiable { .. }) => {
                    // No assignment exists: checked by brute force.
                    let mut fixed = BTreeMap::new();
                    let mut to_place = Vec::new();
                    for n in &needs {
                        match n.now_on.filter(|w| live.contains(w)) {
                            Some(w) => { fixed.insert(n.task, w); }
                            None => to_place.push(n.task),
                        }
                    }
                    let mut free: BTreeMap<WorkerId, u32> = workers.iter().map(|w| (w.worker, w.free())).collect();
                    let sets: Vec<BTreeSet<TaskRef>> = rules.iter().map(|r| r.tasks().clone()).collect();
                    prop_assert!(!exists(&to_place, &fixed, &mut free, &sets));
                }
                Err(other) => prop_assert!(false, "unexpected {other:?}"),
            }
        }
    }
}
