//! When to take, complete and abandon checkpoints, as a pure state machine: the coordinator
//! feeds it what happened ([`Fact`]) with the time, and does what it answers ([`Action`]).
//! No I/O, no clock, no threads: time is milliseconds since the run started, so that every
//! decision is tested by feeding facts.
//!
//! The rules: one checkpoint in flight at a time; one is due every `interval` and when a
//! source asks (it has emitted N rows since the last barrier); when every source has ended,
//! the last one is taken (its barrier ends the sources), and nothing after it. The first
//! checkpoint of a run, and the one after a failure, is full; in between, one in `full_every`.
//! A last checkpoint that fails is asked for again while a source still waits for a last
//! barrier; once every source has taken one and ended, no checkpoint can complete any more,
//! and the scheduler says so ([`Action::LastFailed`]) for the tasks waiting for a last commit.
//!
//! A coordinator that takes over a running query may find that the one before it had begun
//! the last checkpoint: a source reports that it ended at that checkpoint's barrier
//! ([`Fact::SourceFinished`]). No later checkpoint can be taken (the sources are gone), so
//! the scheduler adopts that one ([`Action::Adopt`]) and completes it from the tasks'
//! acknowledgements, which their executors send again.

use std::collections::BTreeSet;

use anduin_types::{Epoch, SnapshotKind};

use crate::decide::{is_stale, snapshot_kind, AckOutcome, AckTracker};

/// How checkpoints are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleSettings {
    /// A checkpoint is due this often (ms), if set.
    pub interval_ms: Option<u64>,
    /// A full snapshot every this many checkpoints (0 or 1: always).
    pub full_every: u64,
    /// Warn when the last complete checkpoint is older than this (ms).
    pub warn_after_ms: u64,
    /// A checkpoint not complete this long after it was triggered (ms) is abandoned, naming
    /// the tasks that have not acknowledged it; `None`: it may take forever.
    pub timeout_ms: Option<u64>,
}

/// What happened, as the coordinator learned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// Time passed (the coordinator woke up).
    Tick,
    /// Task `task` made its share of `epoch` durable.
    Acked {
        /// The checkpoint.
        epoch: Epoch,
        /// The task.
        task: usize,
    },
    /// Task `task` could not take or store its share of `epoch`.
    TaskFailed {
        /// The checkpoint.
        epoch: Epoch,
        /// The task.
        task: usize,
        /// Why.
        reason: String,
    },
    /// A source task has no more input (`stopped`: because a stop was asked for).
    SourceEnded {
        /// The source's task.
        task: usize,
        /// It stopped on request rather than at the end of its input.
        stopped: bool,
    },
    /// A source task took the last barrier, of checkpoint `epoch`, and ended (it had ended
    /// its input before: this says [`Fact::SourceEnded`] too). Told again to a coordinator
    /// that takes the query over, so that it completes a last checkpoint the coordinator
    /// before it began.
    SourceFinished {
        /// The source's task.
        task: usize,
        /// The last checkpoint.
        epoch: Epoch,
        /// It had stopped on request rather than at the end of its input.
        stopped: bool,
    },
    /// A source asked for a checkpoint (N rows since the last barrier).
    Wanted,
    /// [`Action::Trigger`] could not start the checkpoint (its directory).
    TriggerFailed {
        /// The checkpoint.
        epoch: Epoch,
        /// Why.
        reason: String,
    },
    /// [`Action::Complete`] wrote the manifest: the checkpoint is complete.
    Completed {
        /// The checkpoint.
        epoch: Epoch,
    },
    /// [`Action::Complete`] could not write the manifest.
    CompleteFailed {
        /// The checkpoint.
        epoch: Epoch,
        /// Why.
        reason: String,
    },
    /// Some task instances were lost and are being restored from the last complete
    /// checkpoint while the others run on: no checkpoint begins until [`Fact::Restored`] (a
    /// barrier injected meanwhile at a lost source would be lost with it, and its checkpoint
    /// could never complete).
    Lost,
    /// The lost task instances run again: checkpoints begin again.
    Restored,
    /// Task `task`, a replica of a hot standby, failed while the query goes on with its
    /// twins: neither the checkpoint in flight nor any later one waits for it (its state is
    /// its twins', which they acknowledge).
    ReplicaLost {
        /// The replica's task.
        task: usize,
    },
}

/// What the coordinator does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Action {
    /// Start checkpoint `epoch`: make its directory, inject its barrier at every source (the
    /// last barrier, after which they end, if `last`).
    Trigger {
        /// The checkpoint.
        epoch: Epoch,
        /// Full snapshots, or changes since the previous checkpoint.
        full: bool,
        /// The sources end after this barrier.
        last: bool,
        /// Every source ended at the end of its input (not on a stop request): the manifest
        /// says the query finished.
        finished: bool,
    },
    /// The last checkpoint `epoch` was begun by a coordinator before this one, and a source
    /// ended at its barrier: no other can be taken. It is in flight now, without a barrier
    /// injected again: the tasks' acknowledgements (sent again by their executors, or late)
    /// complete it.
    Adopt {
        /// The checkpoint.
        epoch: Epoch,
        /// Every source that ended at it ended at the end of its input (not on a stop
        /// request): the manifest says the query finished.
        finished: bool,
    },
    /// Every task acknowledged `epoch`: write its manifest, then tell the sinks to commit.
    Complete {
        /// The checkpoint.
        epoch: Epoch,
    },
    /// Checkpoint `epoch` failed: remove its files; the query goes on.
    Abandon {
        /// The checkpoint.
        epoch: Epoch,
        /// Why.
        reason: String,
    },
    /// Checkpoint `epoch` did not complete within its timeout: `waiting` are the tasks that
    /// had not acknowledged it (followed by its [`Action::Abandon`]).
    Expired {
        /// The checkpoint.
        epoch: Epoch,
        /// The tasks it waited for.
        waiting: Vec<usize>,
    },
    /// The last complete checkpoint is older than the threshold.
    WarnStale {
        /// Its age (or the run's, before the first one), ms.
        age_ms: u64,
    },
    /// The last checkpoint, `epoch`, failed (after its [`Action::Abandon`]) and every source
    /// has ended at a last barrier: no checkpoint can complete any more. The tasks waiting
    /// for the last commit (a sink that commits only with checkpoints) end without it; a run
    /// resumed from the checkpoints does again what came after the last complete one.
    /// Given once.
    LastFailed {
        /// The last checkpoint.
        epoch: Epoch,
    },
}

/// A checkpoint in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InFlight {
    epoch: Epoch,
    last: bool,
    /// When it was triggered.
    started_ms: u64,
}

/// The scheduler of one run.
#[derive(Debug)]
pub struct Scheduler {
    settings: ScheduleSettings,
    /// Every task, each of which acknowledges every checkpoint.
    tasks: Vec<usize>,
    /// The tasks headed by a source.
    sources: BTreeSet<usize>,
    acks: AckTracker,
    next_epoch: u64,
    in_flight: Option<InFlight>,
    ended: BTreeSet<usize>,
    any_stopped: bool,
    /// The last checkpoint has been triggered: no other follows.
    finishing: bool,
    wanted: bool,
    force_full: bool,
    since_full: u64,
    next_tick: Option<u64>,
    last_complete: Option<u64>,
    last_warning: Option<u64>,
    /// Lost task instances are being restored ([`Fact::Lost`]).
    restoring: bool,
    /// Checkpoints failed in a row since the last complete one (a task's share, the store, a
    /// deadline).
    failures: u32,
    /// No checkpoint is triggered before this time after such failures ([`pause_after`]).
    not_before: Option<u64>,
    /// The first checkpoint this scheduler triggered: one before it that a source ended at
    /// was begun by a coordinator before this one.
    first_own: Option<Epoch>,
    /// The source tasks that took a last barrier and ended: none of them takes a barrier
    /// again, so no later checkpoint can complete.
    finished: BTreeSet<usize>,
    /// The last checkpoint that failed, while no [`Action::LastFailed`] has said so.
    last_failed: Option<Epoch>,
    /// [`Action::LastFailed`] was given.
    over: bool,
}

/// How long no checkpoint is triggered after `failures` failed in a row: none after one
/// (tried again at once), then 1 s, doubled each time, at most a minute — a store that
/// refuses every checkpoint or every task's upload (another run took it over, it is
/// unreachable, it denies writes) is not asked again at every tick.
pub fn pause_after(failures: u32) -> u64 {
    match failures {
        0 | 1 => 0,
        n => (1000u64 << (n - 2).min(6)).min(60_000),
    }
}

impl Scheduler {
    /// A scheduler for `tasks` (of which `sources` head a source), whose first checkpoint is
    /// `next_epoch`; the run starts at time 0.
    pub fn new(
        settings: ScheduleSettings,
        tasks: impl IntoIterator<Item = usize>,
        sources: impl IntoIterator<Item = usize>,
        next_epoch: u64,
    ) -> Self {
        Self {
            settings,
            tasks: tasks.into_iter().collect(),
            sources: sources.into_iter().collect(),
            acks: AckTracker::default(),
            next_epoch,
            in_flight: None,
            ended: BTreeSet::new(),
            any_stopped: false,
            finishing: false,
            wanted: false,
            force_full: true,
            since_full: 0,
            next_tick: settings.interval_ms,
            last_complete: None,
            last_warning: None,
            restoring: false,
            failures: 0,
            not_before: None,
            first_own: None,
            finished: BTreeSet::new(),
            last_failed: None,
            over: false,
        }
    }

    /// Task `task` joined the run (a chain split while the query runs): every checkpoint
    /// begun from now on waits for its acknowledgement too; the one in flight does not (the
    /// task it split from acknowledges it with every operator it held at its barrier).
    pub fn add_task(&mut self, task: usize) {
        if !self.tasks.contains(&task) {
            self.tasks.push(task);
        }
    }

    /// Task `task` leaves the run (an instance added while running, retired by a scale-down):
    /// no checkpoint begun from now on waits for it; the one in flight still does (its
    /// barrier reached the task before its input ended).
    pub fn remove_task(&mut self, task: usize) {
        self.tasks.retain(|t| *t != task);
    }

    /// The next checkpoint is `epoch` or later (a coordinator taking over from another skips
    /// the epochs that one may have begun); it is full.
    pub fn skip_to(&mut self, epoch: u64) {
        self.next_epoch = self.next_epoch.max(epoch);
        self.force_full = true;
    }

    /// What to do after `fact`, at time `now_ms`.
    pub fn on(&mut self, fact: Fact, now_ms: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        match fact {
            Fact::Tick => {}
            Fact::Acked { epoch, task } => {
                if let AckOutcome::Complete(epoch) = self.acks.ack(epoch, task) {
                    actions.push(Action::Complete { epoch });
                }
            }
            Fact::TaskFailed {
                epoch,
                task,
                reason,
            } => {
                if let AckOutcome::Failed { epoch, reason } = self.acks.fail(epoch, reason) {
                    self.ended_badly(epoch, now_ms);
                    actions.push(Action::Abandon {
                        epoch,
                        reason: format!("task {task}: {reason}"),
                    });
                }
            }
            Fact::SourceEnded { task, stopped } => {
                self.ended.insert(task);
                self.any_stopped |= stopped;
            }
            Fact::SourceFinished {
                task,
                epoch,
                stopped,
            } => {
                self.ended.insert(task);
                self.any_stopped |= stopped;
                self.finished.insert(task);
                self.adopt(epoch, task, now_ms, &mut actions);
                self.beyond_a_finished_source(epoch, task, now_ms, &mut actions);
            }
            Fact::Wanted => self.wanted = true,
            Fact::ReplicaLost { task } => {
                self.tasks.retain(|t| *t != task);
                for epoch in self.acks.forget(task) {
                    actions.push(Action::Complete { epoch });
                }
            }
            Fact::Lost => self.restoring = true,
            Fact::Restored => self.restoring = false,
            Fact::TriggerFailed { epoch, reason } | Fact::CompleteFailed { epoch, reason } => {
                self.ended_badly(epoch, now_ms);
                actions.push(Action::Abandon { epoch, reason });
            }
            Fact::Completed { epoch } => {
                if self.in_flight.is_some_and(|f| f.epoch == epoch) {
                    self.in_flight = None;
                }
                self.last_complete = Some(now_ms);
                self.last_failed = None;
                self.force_full = false;
                self.failures = 0;
                self.not_before = None;
            }
        }
        self.expire(now_ms, &mut actions);
        self.due(now_ms, &mut actions);
        self.stale(now_ms, &mut actions);
        self.nothing_left(&mut actions);
        actions
    }

    /// Source `task` ended at the last barrier, of checkpoint `epoch`, of this scheduler's:
    /// a later checkpoint in flight (a last one asked for again after `epoch` failed, the
    /// source's end not heard yet) never gets its barrier from it, and is abandoned.
    fn beyond_a_finished_source(
        &mut self,
        epoch: Epoch,
        task: usize,
        now_ms: u64,
        actions: &mut Vec<Action>,
    ) {
        let Some(f) = self.in_flight.filter(|f| f.epoch > epoch) else {
            return;
        };
        let reason = format!(
            "source task {task} ended at the last barrier, of checkpoint {}, and takes no later one",
            epoch.0
        );
        if let AckOutcome::Failed { epoch, reason } = self.acks.fail(f.epoch, reason) {
            self.ended_badly(epoch, now_ms);
            actions.push(Action::Abandon { epoch, reason });
        }
    }

    /// Says [`Action::LastFailed`], once, when the last checkpoint failed and no source is
    /// left to take the barrier of another.
    fn nothing_left(&mut self, actions: &mut Vec<Action>) {
        if self.over || self.in_flight.is_some() || !self.all_finished() {
            return;
        }
        if let Some(epoch) = self.last_failed.take() {
            self.over = true;
            actions.push(Action::LastFailed { epoch });
        }
    }

    /// Every source took a last barrier and ended: none takes a barrier again.
    fn all_finished(&self) -> bool {
        !self.sources.is_empty() && self.sources.iter().all(|t| self.finished.contains(t))
    }

    /// Source `task` ended at the last barrier of `epoch`: unless that is this scheduler's
    /// own checkpoint, a coordinator before it began it, and it is the one to complete. A
    /// checkpoint of this scheduler's in flight cannot complete (the source is gone): it is
    /// abandoned.
    fn adopt(&mut self, epoch: Epoch, task: usize, now_ms: u64, actions: &mut Vec<Action>) {
        let own = self.first_own.is_some_and(|first| epoch >= first);
        if own || self.in_flight.is_some_and(|f| f.epoch == epoch) {
            return;
        }
        if let Some(f) = self.in_flight {
            let reason = format!(
                "source task {task} ended at the last barrier, of checkpoint {}, which the coordinator before this one began: this one cannot complete",
                epoch.0
            );
            if let AckOutcome::Failed { epoch, reason } = self.acks.fail(f.epoch, reason) {
                self.in_flight = None;
                actions.push(Action::Abandon { epoch, reason });
            }
        }
        self.acks.begin(epoch, self.tasks.iter().copied());
        self.in_flight = Some(InFlight {
            epoch,
            last: true,
            started_ms: now_ms,
        });
        self.next_epoch = self.next_epoch.max(epoch.0 + 1);
        self.finishing = true;
        self.wanted = false;
        actions.push(Action::Adopt {
            epoch,
            finished: !self.any_stopped,
        });
    }

    /// When the scheduler next has something to do without a fact: the next interval tick,
    /// or the deadline of the checkpoint in flight.
    pub fn next_wake_ms(&self) -> Option<u64> {
        let deadline = self
            .in_flight
            .zip(self.settings.timeout_ms)
            .map(|(f, t)| f.started_ms.saturating_add(t));
        [self.next_tick, deadline, self.not_before]
            .into_iter()
            .flatten()
            .min()
    }

    /// Abandons the checkpoint in flight when it is past its deadline, naming the tasks that
    /// have not acknowledged it (they are stuck, or far behind).
    fn expire(&mut self, now_ms: u64, actions: &mut Vec<Action>) {
        let (Some(f), Some(timeout)) = (self.in_flight, self.settings.timeout_ms) else {
            return;
        };
        if now_ms.saturating_sub(f.started_ms) < timeout {
            return;
        }
        let missing = self.acks.waiting(f.epoch);
        let reason = format!(
            "it did not complete within {timeout} ms: task(s) {missing:?} have not acknowledged it (stuck, or far behind: see --checkpoint-timeout)"
        );
        if let AckOutcome::Failed { epoch, reason } = self.acks.fail(f.epoch, reason) {
            self.ended_badly(epoch, now_ms);
            actions.push(Action::Expired {
                epoch,
                waiting: missing,
            });
            actions.push(Action::Abandon { epoch, reason });
        }
    }

    /// The tasks headed by a source, where barriers are injected.
    pub fn sources(&self) -> impl Iterator<Item = usize> + '_ {
        self.sources.iter().copied()
    }

    /// Checkpoint `epoch` did not complete: the next one is full. (A last checkpoint that
    /// fails is not taken again: the sources have ended.)
    fn ended_badly(&mut self, epoch: Epoch, now_ms: u64) {
        self.failures += 1;
        self.not_before = Some(now_ms.saturating_add(pause_after(self.failures)));
        if let Some(f) = self.in_flight.filter(|f| f.epoch == epoch) {
            self.in_flight = None;
            // The last checkpoint is asked for again (the sources that took its barrier
            // have ended; those that refused it still wait for one), unless every source
            // has ended (see `due`): then none can complete, and `nothing_left` says so.
            self.finishing &= !f.last;
            if f.last {
                self.last_failed = Some(epoch);
            }
        }
        self.force_full = true;
    }

    /// Triggers a checkpoint if one is due and none is in flight.
    fn due(&mut self, now_ms: u64, actions: &mut Vec<Action>) {
        if let (Some(t), Some(i)) = (self.next_tick, self.settings.interval_ms) {
            if now_ms >= t {
                self.wanted = true;
                self.next_tick = Some(now_ms + i.max(1));
            }
        }
        // No source is left to inject a barrier (every one took a last barrier and ended).
        if self.in_flight.is_some() || self.finishing || self.restoring || self.all_finished() {
            return;
        }
        if self.not_before.is_some_and(|t| now_ms < t) {
            return;
        }
        let last = !self.sources.is_empty() && self.ended == self.sources;
        if !(self.wanted || last) {
            return;
        }
        let full = self.force_full
            || snapshot_kind(self.since_full, self.settings.full_every) == SnapshotKind::Full;
        self.since_full = if full { 1 } else { self.since_full + 1 };
        let epoch = Epoch(self.next_epoch);
        self.next_epoch += 1;
        self.first_own.get_or_insert(epoch);
        self.acks.begin(epoch, self.tasks.iter().copied());
        self.in_flight = Some(InFlight {
            epoch,
            last,
            started_ms: now_ms,
        });
        self.wanted = false;
        self.finishing = last;
        actions.push(Action::Trigger {
            epoch,
            full,
            last,
            finished: last && !self.any_stopped,
        });
    }

    fn stale(&mut self, now_ms: u64, actions: &mut Vec<Action>) {
        let threshold = self.settings.warn_after_ms;
        if is_stale(now_ms, self.last_complete, 0, threshold)
            && self
                .last_warning
                .is_none_or(|w| now_ms.saturating_sub(w) >= threshold)
        {
            actions.push(Action::WarnStale {
                age_ms: now_ms.saturating_sub(self.last_complete.unwrap_or(0)),
            });
            self.last_warning = Some(now_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(interval_ms: Option<u64>) -> ScheduleSettings {
        ScheduleSettings {
            interval_ms,
            full_every: 3,
            warn_after_ms: 60_000,
            timeout_ms: None,
        }
    }

    /// Tasks 0 and 1 are sources, 2 is not.
    fn scheduler(interval_ms: Option<u64>) -> Scheduler {
        Scheduler::new(settings(interval_ms), [0, 1, 2], [0, 1], 1)
    }

    fn trigger(epoch: u64, full: bool, last: bool, finished: bool) -> Action {
        Action::Trigger {
            epoch: Epoch(epoch),
            full,
            last,
            finished,
        }
    }

    fn ack_all(s: &mut Scheduler, epoch: u64, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        for task in [0, 1, 2] {
            out.extend(s.on(
                Fact::Acked {
                    epoch: Epoch(epoch),
                    task,
                },
                now,
            ));
        }
        out
    }

    #[test]
    fn a_checkpoint_is_due_every_interval_one_at_a_time() {
        let mut s = scheduler(Some(1000));
        assert_eq!(s.on(Fact::Tick, 999), vec![]);
        assert_eq!(s.on(Fact::Tick, 1000), vec![trigger(1, true, false, false)]);
        // The next interval passes while 1 is in flight: 2 waits for 1 to end.
        assert_eq!(s.on(Fact::Tick, 2100), vec![]);
        assert_eq!(
            ack_all(&mut s, 1, 2200),
            vec![Action::Complete { epoch: Epoch(1) }]
        );
        assert_eq!(
            s.on(Fact::Completed { epoch: Epoch(1) }, 2200),
            vec![trigger(2, false, false, false)]
        );
        assert_eq!(s.next_wake_ms(), Some(3100));
    }

    #[test]
    fn a_lost_replica_holds_up_neither_the_checkpoint_in_flight_nor_the_next() {
        let mut s = scheduler(Some(1000));
        assert_eq!(s.on(Fact::Tick, 1000), vec![trigger(1, true, false, false)]);
        for task in [0, 1] {
            let acked = Fact::Acked {
                epoch: Epoch(1),
                task,
            };
            assert_eq!(s.on(acked, 1100), vec![]);
        }
        // Task 2 fails before acknowledging: checkpoint 1 is complete without it.
        assert_eq!(
            s.on(Fact::ReplicaLost { task: 2 }, 1200),
            vec![Action::Complete { epoch: Epoch(1) }]
        );
        assert_eq!(s.on(Fact::Completed { epoch: Epoch(1) }, 1200), vec![]);
        assert_eq!(
            s.on(Fact::Tick, 2000),
            vec![trigger(2, false, false, false)]
        );
        let mut out = Vec::new();
        for task in [0, 1] {
            let acked = Fact::Acked {
                epoch: Epoch(2),
                task,
            };
            out.extend(s.on(acked, 2100));
        }
        assert_eq!(out, vec![Action::Complete { epoch: Epoch(2) }]);
        // Lost again (a second report) or before any checkpoint: nothing to complete.
        assert_eq!(s.on(Fact::ReplicaLost { task: 2 }, 2200), vec![]);
    }

    #[test]
    fn a_checkpoint_past_its_deadline_is_abandoned_naming_the_tasks_that_did_not_acknowledge() {
        let mut s = Scheduler::new(
            ScheduleSettings {
                timeout_ms: Some(500),
                ..settings(Some(1000))
            },
            [0, 1, 2],
            [0, 1],
            1,
        );
        assert_eq!(s.on(Fact::Tick, 1000), vec![trigger(1, true, false, false)]);
        assert_eq!(s.next_wake_ms(), Some(1500), "woken at the deadline");
        let acked = Fact::Acked {
            epoch: Epoch(1),
            task: 1,
        };
        assert_eq!(s.on(acked, 1200), vec![]);
        assert_eq!(s.on(Fact::Tick, 1499), vec![]);
        let a = s.on(Fact::Tick, 1500);
        match a.as_slice() {
            [Action::Expired { waiting, .. }, Action::Abandon { epoch, reason }] => {
                assert_eq!(waiting, &vec![0, 2]);
                assert_eq!(*epoch, Epoch(1));
                assert!(reason.contains("[0, 2]"), "{reason}");
                assert!(reason.contains("500 ms"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // A late acknowledgement changes nothing; the next checkpoint is full.
        assert_eq!(ack_all(&mut s, 1, 1600), vec![]);
        assert_eq!(s.on(Fact::Tick, 2000), vec![trigger(2, true, false, false)]);
        assert_eq!(
            ack_all(&mut s, 2, 2100),
            vec![Action::Complete { epoch: Epoch(2) }]
        );
    }

    #[test]
    fn full_snapshots_come_first_after_a_failure_and_every_m() {
        let mut s = scheduler(None);
        let mut kinds = Vec::new();
        for epoch in 1..=8u64 {
            let a = s.on(Fact::Wanted, epoch * 10);
            let Some(Action::Trigger { full, .. }) = a.first() else {
                panic!("{a:?}");
            };
            kinds.push(*full);
            if epoch == 4 {
                let a = s.on(
                    Fact::TaskFailed {
                        epoch: Epoch(epoch),
                        task: 2,
                        reason: "disk full".into(),
                    },
                    epoch * 10,
                );
                assert_eq!(
                    a,
                    vec![Action::Abandon {
                        epoch: Epoch(4),
                        reason: "task 2: disk full".into()
                    }]
                );
                continue;
            }
            let _ = ack_all(&mut s, epoch, epoch * 10);
            let _ = s.on(
                Fact::Completed {
                    epoch: Epoch(epoch),
                },
                epoch * 10,
            );
        }
        // 1 full, 2 3 changes, 4 full (fails), 5 full again, 6 7 changes, 8 full.
        assert_eq!(
            kinds,
            vec![true, false, false, true, true, false, false, true]
        );
    }

    #[test]
    fn the_last_checkpoint_follows_the_end_of_every_source_and_nothing_after_it() {
        let mut s = scheduler(Some(1000));
        assert_eq!(
            s.on(
                Fact::SourceEnded {
                    task: 0,
                    stopped: false
                },
                10
            ),
            vec![]
        );
        assert_eq!(
            s.on(
                Fact::SourceEnded {
                    task: 1,
                    stopped: false
                },
                20
            ),
            vec![trigger(1, true, true, true)]
        );
        assert_eq!(s.on(Fact::Wanted, 30), vec![]);
        let _ = ack_all(&mut s, 1, 40);
        assert_eq!(s.on(Fact::Completed { epoch: Epoch(1) }, 40), vec![]);
        assert_eq!(s.on(Fact::Tick, 5000), vec![]);
    }

    #[test]
    fn a_stop_request_makes_the_last_checkpoint_unfinished() {
        let mut s = scheduler(None);
        let _ = s.on(
            Fact::SourceEnded {
                task: 0,
                stopped: true,
            },
            1,
        );
        let a = s.on(
            Fact::SourceEnded {
                task: 1,
                stopped: false,
            },
            2,
        );
        assert_eq!(a, vec![trigger(1, true, true, false)]);
    }

    fn finished(task: usize, epoch: u64) -> Fact {
        Fact::SourceFinished {
            task,
            epoch: Epoch(epoch),
            stopped: false,
        }
    }

    /// A scheduler of a coordinator that took over after checkpoint 3 may have been begun.
    fn taking_over() -> Scheduler {
        let mut s = scheduler(Some(1000));
        s.skip_to(4);
        s
    }

    #[test]
    fn a_last_checkpoint_the_coordinator_before_began_is_adopted_and_completed() {
        // The coordinator before began the last checkpoint, 3, and died: the sources took
        // its barrier and ended. Their executors tell the new one.
        let mut s = taking_over();
        assert_eq!(
            s.on(finished(0, 3), 10),
            vec![Action::Adopt {
                epoch: Epoch(3),
                finished: true
            }]
        );
        assert_eq!(s.on(finished(1, 3), 20), vec![]);
        // Nothing else begins, on a tick or a request; the acknowledgements complete it.
        assert_eq!(s.on(Fact::Wanted, 5000), vec![]);
        assert_eq!(
            ack_all(&mut s, 3, 5100),
            vec![Action::Complete { epoch: Epoch(3) }]
        );
        assert_eq!(s.on(Fact::Completed { epoch: Epoch(3) }, 5200), vec![]);
        assert_eq!(s.on(Fact::Tick, 9000), vec![]);
    }

    #[test]
    fn a_last_checkpoint_of_its_own_the_sources_cannot_take_gives_way_to_the_one_they_took() {
        // Both sources' ends came first: the new coordinator begins a last checkpoint of its
        // own, which the sources, gone at the barrier of 3, never take.
        let mut s = taking_over();
        let ended = |task| Fact::SourceEnded {
            task,
            stopped: false,
        };
        assert_eq!(s.on(ended(0), 10), vec![]);
        assert_eq!(s.on(ended(1), 20), vec![trigger(4, true, true, true)]);
        let a = s.on(finished(1, 3), 30);
        match a.as_slice() {
            [Action::Abandon { epoch, reason }, Action::Adopt {
                epoch: adopted,
                finished: true,
            }] => {
                assert_eq!(*epoch, Epoch(4));
                assert_eq!(*adopted, Epoch(3));
                assert!(reason.contains("checkpoint 3"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ack_all(&mut s, 3, 100),
            vec![Action::Complete { epoch: Epoch(3) }]
        );
    }

    #[test]
    fn a_source_that_ends_at_the_schedulers_own_last_checkpoint_changes_nothing() {
        let mut s = scheduler(None);
        let ended = |task| Fact::SourceEnded {
            task,
            stopped: false,
        };
        let _ = s.on(ended(0), 10);
        assert_eq!(s.on(ended(1), 20), vec![trigger(1, true, true, true)]);
        assert_eq!(s.on(finished(0, 1), 30), vec![]);
        assert_eq!(s.on(finished(1, 1), 30), vec![]);
        assert_eq!(
            ack_all(&mut s, 1, 40),
            vec![Action::Complete { epoch: Epoch(1) }]
        );
        assert_eq!(s.on(Fact::Completed { epoch: Epoch(1) }, 50), vec![]);
        assert_eq!(s.on(Fact::Tick, 5000), vec![]);
    }

    /// Both sources ended at the end of their input: the last checkpoint, 1, is in flight.
    fn finishing() -> Scheduler {
        let mut s = scheduler(Some(1000));
        let ended = |task| Fact::SourceEnded {
            task,
            stopped: false,
        };
        let _ = s.on(ended(0), 10);
        assert_eq!(s.on(ended(1), 20), vec![trigger(1, true, true, true)]);
        s
    }

    /// Task 2 (a pattern that gave up at a stop) fails checkpoint `epoch`.
    fn gave_up(epoch: u64) -> Fact {
        Fact::TaskFailed {
            epoch: Epoch(epoch),
            task: 2,
            reason: "gave up".into(),
        }
    }

    #[test]
    fn a_last_checkpoint_failed_after_every_source_took_it_is_not_asked_for_again_and_says_so() {
        // Issue 19 (probe41 H2): another last checkpoint began, which no source could take,
        // and a sink waited for ever for the commit of a last one.
        let mut s = finishing();
        assert_eq!(s.on(finished(0, 1), 30), vec![]);
        assert_eq!(s.on(finished(1, 1), 30), vec![]);
        assert_eq!(
            s.on(gave_up(1), 40),
            vec![
                Action::Abandon {
                    epoch: Epoch(1),
                    reason: "task 2: gave up".into()
                },
                Action::LastFailed { epoch: Epoch(1) }
            ]
        );
        // Nothing begins after it, on a tick or a request, and it is said once.
        assert_eq!(s.on(Fact::Wanted, 50), vec![]);
        assert_eq!(s.on(Fact::Tick, 5000), vec![]);
    }

    #[test]
    fn a_last_checkpoint_asked_for_again_before_every_source_s_end_was_heard_is_abandoned_at_it() {
        let mut s = finishing();
        assert_eq!(s.on(finished(0, 1), 30), vec![]);
        // Source 1's end at checkpoint 1 is not heard yet: it may wait for a last barrier.
        let a = s.on(gave_up(1), 40);
        assert_eq!(a.get(1), Some(&trigger(2, true, true, true)), "{a:?}");
        // It ended at 1: checkpoint 2 never gets its barrier, and nothing can complete.
        let a = s.on(finished(1, 1), 50);
        match a.as_slice() {
            [Action::Abandon { epoch, reason }, Action::LastFailed { epoch: last }] => {
                assert_eq!(*epoch, Epoch(2));
                assert!(reason.contains("source task 1"), "{reason}");
                assert_eq!(*last, Epoch(2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.on(Fact::Tick, 5000), vec![]);
    }

    #[test]
    fn no_checkpoint_begins_while_lost_tasks_are_restored() {
        let mut s = scheduler(Some(100));
        let _ = s.on(Fact::Lost, 1);
        assert_eq!(s.on(Fact::Wanted, 2), vec![]);
        assert_eq!(s.on(Fact::Tick, 250), vec![]);
        assert_eq!(
            s.on(Fact::Restored, 260),
            vec![trigger(1, true, false, false)]
        );
        // Lost while a checkpoint is in flight, a source having asked for the next: the one
        // in flight is given up, and the next waits for the restore.
        let _ = s.on(Fact::Wanted, 270);
        let _ = s.on(Fact::Lost, 280);
        let failed = s.on(
            Fact::TaskFailed {
                epoch: Epoch(1),
                task: 0,
                reason: "lost".into(),
            },
            281,
        );
        assert!(
            failed.iter().all(|a| matches!(a, Action::Abandon { .. })),
            "{failed:?}"
        );
        assert_eq!(s.on(Fact::Tick, 500), vec![]);
        assert_eq!(
            s.on(Fact::Restored, 510),
            vec![trigger(2, true, false, false)]
        );
    }

    #[test]
    fn a_task_removed_in_flight_is_waited_for_by_that_checkpoint_only() {
        let mut s = scheduler(Some(100));
        assert_eq!(s.on(Fact::Tick, 100), vec![trigger(1, true, false, false)]);
        // Task 2 retires at checkpoint 1's barrier.
        s.remove_task(2);
        let acked = |s: &mut Scheduler, epoch: u64, task: usize| {
            s.on(
                Fact::Acked {
                    epoch: Epoch(epoch),
                    task,
                },
                150,
            )
        };
        assert_eq!(acked(&mut s, 1, 0), vec![]);
        assert_eq!(
            acked(&mut s, 1, 1),
            vec![],
            "task 2 took part in checkpoint 1"
        );
        assert_eq!(
            acked(&mut s, 1, 2),
            vec![Action::Complete { epoch: Epoch(1) }]
        );
        let _ = s.on(Fact::Completed { epoch: Epoch(1) }, 160);
        assert_eq!(s.on(Fact::Tick, 200), vec![trigger(2, false, false, false)]);
        assert_eq!(acked(&mut s, 2, 0), vec![]);
        assert_eq!(
            acked(&mut s, 2, 1),
            vec![Action::Complete { epoch: Epoch(2) }],
            "checkpoint 2 began after task 2 retired"
        );
    }

    #[test]
    fn a_task_added_in_flight_is_waited_for_from_the_next_checkpoint_on() {
        let mut s = scheduler(Some(100));
        assert_eq!(s.on(Fact::Tick, 100), vec![trigger(1, true, false, false)]);
        // Task 2 split at checkpoint 1's barrier: task 3 runs the operators it handed over.
        s.add_task(3);
        s.add_task(3);
        assert_eq!(
            ack_all(&mut s, 1, 110),
            vec![Action::Complete { epoch: Epoch(1) }],
            "checkpoint 1 began before the split: it waits for tasks 0 to 2 only"
        );
        let _ = s.on(Fact::Completed { epoch: Epoch(1) }, 111);
        assert_eq!(s.on(Fact::Tick, 200), vec![trigger(2, false, false, false)]);
        assert_eq!(
            ack_all(&mut s, 2, 210),
            vec![],
            "task 3 has not acknowledged"
        );
        let done = s.on(
            Fact::Acked {
                epoch: Epoch(2),
                task: 3,
            },
            211,
        );
        assert_eq!(done, vec![Action::Complete { epoch: Epoch(2) }]);
    }

    #[test]
    fn a_scheduler_taking_over_skips_the_epochs_begun_before_and_starts_full() {
        let mut s = Scheduler::new(settings(Some(100)), [1, 2], [1], 4);
        s.skip_to(7);
        let a = s.on(Fact::Tick, 100);
        assert_eq!(a, vec![trigger(7, true, false, false)]);
        // Skipping back changes nothing.
        s.skip_to(2);
        assert_eq!(s.next_epoch, 8);
    }

    #[test]
    fn a_last_checkpoint_a_source_refused_is_asked_for_again() {
        let mut s = scheduler(None);
        let _ = s.on(
            Fact::SourceEnded {
                task: 0,
                stopped: false,
            },
            1,
        );
        let a = s.on(
            Fact::SourceEnded {
                task: 1,
                stopped: false,
            },
            2,
        );
        assert_eq!(a, vec![trigger(1, true, true, true)]);
        // A source had injected that epoch already (a coordinator before this one began it).
        let a = s.on(
            Fact::TaskFailed {
                epoch: Epoch(1),
                task: 1,
                reason: "already injected".into(),
            },
            3,
        );
        assert_eq!(
            a,
            vec![
                Action::Abandon {
                    epoch: Epoch(1),
                    reason: "task 1: already injected".into()
                },
                trigger(2, true, true, true)
            ]
        );
    }

    #[test]
    fn a_failed_trigger_or_manifest_makes_the_next_checkpoint_full() {
        let mut s = scheduler(None);
        let _ = s.on(Fact::Wanted, 1);
        let _ = ack_all(&mut s, 1, 2);
        let _ = s.on(Fact::Completed { epoch: Epoch(1) }, 2);
        let a = s.on(Fact::Wanted, 3);
        assert_eq!(a, vec![trigger(2, false, false, false)]);
        let failed = |epoch: u64| Action::Abandon {
            epoch: Epoch(epoch),
            reason: "disk full".into(),
        };
        assert_eq!(
            s.on(
                Fact::TriggerFailed {
                    epoch: Epoch(2),
                    reason: "disk full".into()
                },
                4
            ),
            vec![failed(2)],
            "and not again until asked"
        );
        assert_eq!(s.on(Fact::Wanted, 5), vec![trigger(3, true, false, false)]);
        let _ = ack_all(&mut s, 3, 6);
        assert_eq!(
            s.on(
                Fact::CompleteFailed {
                    epoch: Epoch(3),
                    reason: "disk full".into()
                },
                6
            ),
            vec![failed(3)]
        );
        // Twice in a row: the store is not asked again for a second.
        assert_eq!(s.on(Fact::Wanted, 7), vec![]);
        assert_eq!(s.next_wake_ms(), Some(1006));
        assert_eq!(s.on(Fact::Tick, 1006), vec![trigger(4, true, false, false)]);
        let _ = ack_all(&mut s, 4, 1007);
        let _ = s.on(
            Fact::CompleteFailed {
                epoch: Epoch(4),
                reason: "disk full".into(),
            },
            1007,
        );
        assert_eq!(s.on(Fact::Wanted, 2007), vec![], "then for two");
        assert_eq!(s.on(Fact::Tick, 3007), vec![trigger(5, true, false, false)]);
        let _ = ack_all(&mut s, 5, 3008);
        let _ = s.on(Fact::Completed { epoch: Epoch(5) }, 3008);
        assert_eq!(
            s.on(Fact::Wanted, 3009),
            vec![trigger(6, false, false, false)],
            "a complete one ends the pauses"
        );
        assert_eq!(pause_after(30), 60_000);
    }

    #[test]
    fn an_old_last_checkpoint_is_warned_about_once_per_threshold() {
        let mut s = scheduler(None);
        assert_eq!(s.on(Fact::Tick, 60_000), vec![]);
        assert_eq!(
            s.on(Fact::Tick, 60_001),
            vec![Action::WarnStale { age_ms: 60_001 }]
        );
        assert_eq!(s.on(Fact::Tick, 100_000), vec![]);
        assert_eq!(
            s.on(Fact::Tick, 120_001),
            vec![Action::WarnStale { age_ms: 120_001 }]
        );
    }

    #[test]
    fn an_ack_for_a_checkpoint_not_in_flight_is_ignored() {
        let mut s = scheduler(None);
        assert_eq!(
            s.on(
                Fact::Acked {
                    epoch: Epoch(9),
                    task: 0
                },
                1
            ),
            vec![]
        );
    }
}
