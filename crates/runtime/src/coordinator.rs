//! The checkpoint coordinator of an embedded run: triggers checkpoints (on a period, or when
//! a source has emitted N rows), tracks the tasks' acknowledgements, writes the manifest that
//! completes a checkpoint, tells the sinks to commit, applies retention, and warns when the
//! last complete checkpoint gets old. One checkpoint is in flight at a time.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::schedule::{Action, Fact, ScheduleSettings, Scheduler};
use anduin_checkpoint::{FileEntry, Manifest, OperatorState, StateFileRef, Store, MANIFEST_FORMAT};
use anduin_types::{elapsed_ms, ControlUpdate, Epoch, SharedClock, SnapshotKind};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use tracing::warn;

use crate::config::CheckpointSettings;
use crate::control::Control;
use crate::events::{EngineEvent, Events};
use crate::faults::Faults;
use crate::protocol::{Command, Event, OpState};
use crate::stats::CheckpointCounters;

/// What a checkpoint in flight has gathered for its manifest.
struct InFlight {
    epoch: Epoch,
    /// When its barrier was injected.
    started: std::time::Instant,
    /// Every source ended because its input did (not because of a stop request).
    finished: bool,
    operators: BTreeMap<String, OperatorState>,
    files: Vec<FileEntry>,
    /// The tasks whose acknowledgement it has (an executor that reconnects sends its
    /// acknowledgements again: their files count once).
    acked: BTreeSet<usize>,
}

impl InFlight {
    fn new(epoch: Epoch, started: std::time::Instant, finished: bool) -> Self {
        Self {
            epoch,
            started,
            finished,
            operators: BTreeMap::new(),
            files: Vec::new(),
            acked: BTreeSet::new(),
        }
    }
}

/// A task's acknowledgement of a checkpoint not in flight, kept by a coordinator that took
/// the query over: it may be of the last checkpoint the coordinator before began, which the
/// scheduler adopts once a source says it ended there ([`Action::Adopt`]).
pub(crate) struct EarlyAck {
    task: usize,
    states: Vec<OpState>,
    files: Vec<FileEntry>,
}

/// The coordinator's state: what it needs to carry out the scheduler's decisions.
pub(crate) struct Coordinator {
    pub store: Store,
    pub settings: CheckpointSettings,
    pub plan: PlanFingerprint,
    /// Every task's command channel, by task id.
    pub tasks: BTreeMap<usize, Sender<Command>>,
    /// When to take, complete and abandon checkpoints.
    pub scheduler: Scheduler,
    /// The manifest of the last complete checkpoint (restored or taken in this run).
    pub last: Option<Manifest>,
    pub counters: Arc<CheckpointCounters>,
    pub faults: Faults,
    /// Where the time comes from.
    pub clock: SharedClock,
    /// Who hears of checkpoints.
    pub events: Events,
    /// The query's control plane, whose changes the manifests record.
    pub control: Option<Arc<Control>>,
    /// Param changes waiting for the next checkpoint's barrier.
    pub pending_controls: Vec<ControlUpdate>,
    /// The instance keys of the replicas of each hot standby (see [`fill_from_twins`]).
    pub twins: Vec<Vec<String>>,
    /// Live rescales sent on a barrier: its epoch, the operator, how many instances own its
    /// key groups after it. The checkpoints after that epoch record it in their plan (the
    /// one at it holds the state from before the move); and the instances left, when it
    /// retired instances added while running.
    pub rescales: Vec<(Epoch, String, usize, Option<usize>)>,
    /// The numbers of instances added while the query runs (an embedded run whose tasks can
    /// grow, `crate::grow`): a rescale beyond a task's instances adds them to every later
    /// checkpoint as its barrier goes out.
    pub growth: Option<Arc<crate::grow::Numbers>>,
    /// This coordinator took the query over from another: acknowledgements of checkpoints
    /// not in flight are kept in `early`, for the last checkpoint the other may have begun.
    pub taking_over: bool,
    /// Acknowledgements of checkpoints not in flight (kept only when `taking_over`), by
    /// checkpoint; those at or before a completed checkpoint go.
    pub early: BTreeMap<Epoch, Vec<EarlyAck>>,
}

/// Gives each replica of a hot standby that has no state in a checkpoint (it was lost, and
/// the checkpoint did not wait for it) the state of a twin that has: replicas of a
/// deterministic operator fed the same rows hold the same state at the same barrier. So a
/// run resumed from the checkpoint starts every replica again, the lost one too. `twins` are
/// groups of instance keys.
pub(crate) fn fill_from_twins(
    operators: &mut BTreeMap<String, OperatorState>,
    twins: &[Vec<String>],
) {
    for group in twins {
        let Some(state) = group.iter().find_map(|k| operators.get(k)).cloned() else {
            continue;
        };
        for key in group {
            operators
                .entry(key.clone())
                .or_insert_with(|| state.clone());
        }
    }
}

/// The scheduler's settings from a run's checkpoint settings.
pub(crate) fn schedule_settings(s: &CheckpointSettings) -> ScheduleSettings {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    ScheduleSettings {
        interval_ms: s.interval.map(ms),
        full_every: s.full_every,
        warn_after_ms: ms(s.warn_after),
        timeout_ms: s.timeout.map(ms),
    }
}

impl Coordinator {
    /// Runs until every task, and the committer, have dropped their event senders: each
    /// event becomes a fact for the scheduler, and the coordinator does what it decides.
    pub(crate) fn run(mut self, events: Receiver<Event>) {
        let clock = Arc::clone(&self.clock);
        let started = clock.now();
        let now_ms = || elapsed_ms(clock.as_ref(), started);
        let mut in_flight: Option<InFlight> = None;
        loop {
            let wait = self
                .scheduler
                .next_wake_ms()
                .map_or(1000, |t| t.saturating_sub(now_ms()))
                .min(1000);
            let fact = match events.recv_timeout(Duration::from_millis(wait)) {
                Ok(Event::Ack {
                    epoch,
                    task,
                    states,
                    files,
                }) => {
                    match in_flight.as_mut().filter(|f| f.epoch == epoch) {
                        Some(f) => self.gather(f, task, states, files),
                        None if self.taking_over
                            && self.last.as_ref().is_none_or(|m| m.epoch < epoch.0) =>
                        {
                            self.early.entry(epoch).or_default().push(EarlyAck {
                                task,
                                states,
                                files,
                            });
                        }
                        None => {}
                    }
                    Fact::Acked { epoch, task }
                }
                Ok(Event::Failed {
                    epoch,
                    task,
                    reason,
                }) => Fact::TaskFailed {
                    epoch,
                    task,
                    reason,
                },
                Ok(Event::SourceExhausted { task, stopped }) => Fact::SourceEnded { task, stopped },
                Ok(Event::SourceFinished {
                    task,
                    epoch,
                    stopped,
                }) => Fact::SourceFinished {
                    task,
                    epoch,
                    stopped,
                },
                Ok(Event::WantCheckpoint) => Fact::Wanted,
                Ok(Event::TasksLost { task, reason }) => {
                    // No checkpoint begins until the lost tasks run again (a barrier injected
                    // at a lost source meanwhile would be lost with it), and the one in
                    // flight is given up: nothing completes after the checkpoint named here,
                    // which the lost tasks restore from.
                    let mut actions: VecDeque<Action> =
                        self.scheduler.on(Fact::Lost, now_ms()).into();
                    if let Some(epoch) = in_flight.as_ref().map(|f| f.epoch) {
                        let fact = Fact::TaskFailed {
                            epoch,
                            task,
                            reason,
                        };
                        actions.extend(self.scheduler.on(fact, now_ms()));
                    }
                    while let Some(action) = actions.pop_front() {
                        for outcome in self.act(action, &mut in_flight) {
                            actions.extend(self.scheduler.on(outcome, now_ms()));
                        }
                    }
                    self.events.publish(EngineEvent::TasksLost {
                        last_complete: self.last.as_ref().map(|m| m.epoch),
                    });
                    Fact::Tick
                }
                Ok(Event::TasksRestored) => Fact::Restored,
                Ok(Event::ReplicaLost { task }) => Fact::ReplicaLost { task },
                Ok(Event::TaskAdded { task }) => {
                    // Its commits come through the task it split from.
                    self.scheduler.add_task(task);
                    Fact::Tick
                }
                // An executor's instance split (a cluster): its control plane shows it.
                Ok(Event::TaskSplit(split)) => {
                    if let Some(c) = &self.control {
                        c.task_split(&split);
                    }
                    Fact::Tick
                }
                Ok(Event::Control(updates)) => {
                    self.pending_controls.extend(updates);
                    Fact::Wanted
                }
                // An executor's instances report to the control plane here (a cluster).
                Ok(Event::Applied {
                    seq,
                    instance,
                    epoch,
                }) => {
                    if let Some(c) = &self.control {
                        c.applied(seq, instance, epoch);
                    }
                    Fact::Tick
                }
                Ok(Event::InputEnded { operator, instance }) => {
                    if let Some(c) = &self.control {
                        c.ended(&operator, instance);
                    }
                    Fact::Tick
                }
                Err(RecvTimeoutError::Timeout) => Fact::Tick,
                Err(RecvTimeoutError::Disconnected) => {
                    if let Some(f) = in_flight.take() {
                        self.ended_unfinished(&f);
                    }
                    return;
                }
            };
            let mut actions: VecDeque<Action> = self.scheduler.on(fact, now_ms()).into();
            while let Some(action) = actions.pop_front() {
                for outcome in self.act(action, &mut in_flight) {
                    actions.extend(self.scheduler.on(outcome, now_ms()));
                }
            }
        }
    }

    /// Adds task `task`'s acknowledgement to the checkpoint in flight `f` (once).
    fn gather(&self, f: &mut InFlight, task: usize, states: Vec<OpState>, files: Vec<FileEntry>) {
        if !f.acked.insert(task) {
            return;
        }
        f.files.extend(files);
        for s in states {
            let (name, state) = self.operator_state(s, f.epoch);
            f.operators.insert(name, state);
        }
    }

    /// Carries out `action`; returns its outcomes that the scheduler must know.
    fn act(&mut self, action: Action, in_flight: &mut Option<InFlight>) -> Vec<Fact> {
        match action {
            Action::Adopt { epoch, finished } => self.adopt(epoch, finished, in_flight),
            other => self.act_once(other, in_flight).into_iter().collect(),
        }
    }

    /// Takes the last checkpoint `epoch`, which the coordinator before this one began, as in
    /// flight (its barrier is not injected again: the sources took it and ended): the
    /// acknowledgements kept for it are the scheduler's facts.
    fn adopt(
        &mut self,
        epoch: Epoch,
        finished: bool,
        in_flight: &mut Option<InFlight>,
    ) -> Vec<Fact> {
        tracing::info!(
            epoch = epoch.0,
            finished,
            "completes the last checkpoint the coordinator before began"
        );
        if let Some(c) = &self.control {
            c.checkpoint_started(epoch);
        }
        self.counters.started();
        self.events.publish(EngineEvent::CheckpointStarted {
            epoch: epoch.0,
            full: true,
            last: true,
        });
        let mut f = InFlight::new(epoch, self.clock.now(), finished);
        let early = self.early.remove(&epoch).unwrap_or_default();
        let mut facts = Vec::new();
        for a in early {
            facts.push(Fact::Acked {
                epoch,
                task: a.task,
            });
            self.gather(&mut f, a.task, a.states, a.files);
        }
        *in_flight = Some(f);
        facts
    }

    /// Carries out `action` but [`Action::Adopt`]; returns its outcome when the scheduler
    /// must know it.
    fn act_once(&mut self, action: Action, in_flight: &mut Option<InFlight>) -> Option<Fact> {
        match action {
            // Carried out by `act`.
            Action::Adopt { .. } => None,
            Action::Trigger {
                epoch,
                full,
                last,
                finished,
            } => match self.trigger(epoch, full, last) {
                Ok(()) => {
                    *in_flight = Some(InFlight::new(epoch, self.clock.now(), finished));
                    None
                }
                Err(reason) => Some(Fact::TriggerFailed { epoch, reason }),
            },
            Action::Complete { epoch } => {
                let f = in_flight
                    .take()
                    .filter(|f| f.epoch == epoch)
                    .expect("the scheduler completes only the checkpoint in flight");
                Some(match self.complete(f) {
                    Ok(()) => Fact::Completed { epoch },
                    Err(reason) => Fact::CompleteFailed { epoch, reason },
                })
            }
            Action::Abandon { epoch, reason } => {
                if in_flight.as_ref().is_some_and(|f| f.epoch == epoch) {
                    *in_flight = None;
                }
                self.failed(epoch, &reason);
                None
            }
            Action::Expired { epoch, waiting } => {
                self.events.publish(EngineEvent::CheckpointExpired {
                    epoch: epoch.0,
                    waiting,
                });
                None
            }
            Action::WarnStale { age_ms } => {
                self.counters.stale();
                self.events.publish(EngineEvent::CheckpointStale { age_ms });
                None
            }
            Action::LastFailed { epoch } => {
                // The tasks waiting for the last commit would otherwise wait for ever: this
                // coordinator lives as long as they do.
                for tx in self.tasks.values() {
                    let _ = tx.send(Command::LastFailed(epoch));
                }
                None
            }
        }
    }

    /// The manifest entry of one operator's contribution: its file appended to its chain.
    fn operator_state(&self, s: OpState, epoch: Epoch) -> (String, OperatorState) {
        let files = match s.file {
            None => Vec::new(),
            Some((kind, file)) => {
                let mut chain = match kind {
                    SnapshotKind::Full => Vec::new(),
                    SnapshotKind::Changes => self
                        .last
                        .as_ref()
                        .and_then(|m| m.operators.get(&s.name))
                        .map(|o| o.files.clone())
                        .unwrap_or_default(),
                };
                chain.push(StateFileRef {
                    epoch: epoch.0,
                    file,
                });
                chain
            }
        };
        (
            s.name,
            OperatorState {
                inline: s.inline,
                files,
            },
        )
    }

    /// Starts checkpoint `epoch`: creates its directory and injects its barrier at every
    /// source. The last barrier goes out even when the checkpoint cannot begin (its store
    /// refuses it): the sources end their input with it, and the run ends as a run without
    /// checkpoints does (every sink commits what it holds at the end of its input) rather
    /// than waiting for ever for a store that may never take a checkpoint again.
    fn trigger(&mut self, epoch: Epoch, full: bool, last: bool) -> Result<(), String> {
        let begun = self
            .faults
            .checkpoint_begin(epoch)
            .and_then(|()| self.store.begin(epoch).map_err(std::io::Error::other))
            .map_err(|e| e.to_string());
        if let Err(why) = begun {
            if last {
                tracing::warn!(epoch = epoch.0, error = %why, "the last checkpoint cannot begin: the sources end their input with its barrier all the same");
                self.inject(epoch, full, true);
            }
            return Err(why);
        }
        self.counters.started();
        if let Some(c) = &self.control {
            c.checkpoint_started(epoch);
        }
        let control = self.inject(epoch, full, last);
        if let Some(c) = &self.control {
            // Processes that align no barrier hear of it (a cluster's parts that run only
            // instances added while running, or none yet).
            c.barrier_sent(epoch, &control, last);
        }
        for u in control
            .iter()
            .filter(|u| u.param == crate::rescale::PARALLELISM)
        {
            if let Ok(owners) = u.value.trim().parse() {
                // Instances added at this barrier take part in every later checkpoint.
                let Some(g) = &self.growth else {
                    self.rescales
                        .push((epoch, u.operator.clone(), owners, None));
                    continue;
                };
                let added = g.reserve_onto(u.seq, &u.operator, owners, &u.onto);
                for &(_, id) in &added {
                    self.scheduler.add_task(id);
                }
                // Instances a scale-down retires take part in this checkpoint, not in later ones.
                let retired = g.retired(u.seq);
                for &(_, id) in &retired {
                    self.scheduler.remove_task(id);
                }
                // A cluster's listings (and the slots its coordinator counts) lose them.
                if let (Some(c), Some((task, operators))) = (
                    &self.control,
                    g.task_of(&u.operator).filter(|_| !retired.is_empty()),
                ) {
                    c.task_retired(task, &retired, &operators);
                }
                let left = g
                    .task_of(&u.operator)
                    .filter(|_| !retired.is_empty())
                    .and_then(|(task, _)| g.instances_of(task));
                self.rescales
                    .push((epoch, u.operator.clone(), owners, left));
                // A cluster's instances run on the workers: the listings say where.
                let grown = g.task_of(&u.operator).filter(|_| !added.is_empty());
                if let (Some(c), Some((task, operators))) = (&self.control, grown) {
                    for (j, id) in added {
                        if let Some(worker) = g.worker_of(id) {
                            c.task_grown(task, (j, id, worker), &operators, Vec::new());
                        }
                    }
                }
            }
        }
        self.events.publish(EngineEvent::CheckpointStarted {
            epoch: epoch.0,
            full,
            last,
        });
        Ok(())
    }

    /// Injects the barrier of checkpoint `epoch` (the last: `Finish`) at every source, with
    /// the changes pending, which it returns.
    fn inject(&mut self, epoch: Epoch, full: bool, last: bool) -> Vec<ControlUpdate> {
        let control = std::mem::take(&mut self.pending_controls);
        for t in self.scheduler.sources() {
            if let Some(tx) = self.tasks.get(&t) {
                let control = control.clone();
                let cmd = if last {
                    Command::Finish {
                        epoch,
                        full,
                        control,
                    }
                } else {
                    Command::Inject {
                        epoch,
                        full,
                        control,
                    }
                };
                // A source that has stopped (the query is failing) no longer listens.
                let _ = tx.send(cmd);
            }
        }
        control
    }

    /// Every task acknowledged: writes the manifest, commits the sinks, applies retention.
    fn complete(&mut self, f: InFlight) -> Result<(), String> {
        // The rescales whose barrier came before this checkpoint's: its state is cut so.
        let (done, later) = std::mem::take(&mut self.rescales)
            .into_iter()
            .partition(|(epoch, _, _, _)| *epoch < f.epoch);
        self.rescales = later;
        for (_, operator, owners, left) in done {
            // Instances added beyond those planned (`crate::grow`) count too, until retired.
            let count = |o: &anduin_checkpoint::plan::OperatorFingerprint| {
                left.unwrap_or_else(|| o.instance_count().max(owners))
            };
            if let Some(o) = self.plan.operators.iter_mut().find(|o| o.name == operator) {
                let instances = count(o);
                o.parallelism = owners;
                o.instances = Some(instances).filter(|&n| n != owners);
            }
            // The operators after it in its task run as many instances.
            let chain = self
                .growth
                .as_ref()
                .map_or_else(Vec::new, |g| g.chain_of(&operator));
            for o in self
                .plan
                .operators
                .iter_mut()
                .filter(|o| o.name != operator && chain.contains(&o.name))
            {
                let instances = count(o);
                o.instances = Some(instances).filter(|&n| n != o.parallelism);
            }
        }
        self.faults
            .checkpoint_write(f.epoch)
            .map_err(|e| format!("writing the manifest: {e}"))?;
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            epoch: f.epoch.0,
            created_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            finished: f.finished,
            plan: self.plan.clone(),
            files: f.files,
            operators: {
                let mut operators = f.operators;
                fill_from_twins(&mut operators, &self.twins);
                operators
            },
            controls: self
                .control
                .as_ref()
                .map(|c| c.records_through(f.epoch))
                .unwrap_or_default(),
        };
        self.store.complete(&manifest).map_err(|e| e.to_string())?;
        let duration = self.clock.now().saturating_duration_since(f.started);
        let size = manifest.files.iter().map(|e| e.size).sum();
        self.counters.completed(
            f.epoch,
            u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            size,
        );
        if let Some(c) = &self.control {
            c.checkpoint_ended(f.epoch, Ok(()));
        }
        self.events.publish(EngineEvent::CheckpointCompleted {
            epoch: f.epoch.0,
            finished: f.finished,
        });
        for tx in self.tasks.values() {
            let _ = tx.send(Command::Commit(f.epoch));
        }
        self.early = self.early.split_off(&Epoch(f.epoch.0 + 1));
        self.last = Some(manifest);
        if let Err(e) = self.store.retain(self.settings.keep) {
            warn!(error = %e, "cannot delete old checkpoints");
        }
        Ok(())
    }

    /// The run ended with checkpoint `f` in flight (a stopped run whose operators gave up the
    /// end of their input cannot take its last checkpoint): it failed, and says so as a failed
    /// checkpoint does (probe40 L8: `--events` left it begun with no outcome). Its files stay
    /// for the next run's start to clear, as a killed run's do.
    fn ended_unfinished(&mut self, f: &InFlight) {
        let reason = format!(
            "the run ended before every task acknowledged it ({} did); a run resumed from these checkpoints starts from the one before",
            f.acked.len()
        );
        self.counters.failed();
        if let Some(c) = &self.control {
            c.checkpoint_ended(f.epoch, Err(reason.clone()));
        }
        self.events.publish(EngineEvent::CheckpointFailed {
            epoch: f.epoch.0,
            reason,
        });
    }

    fn failed(&mut self, epoch: Epoch, reason: &str) {
        self.counters.failed();
        if let Some(c) = &self.control {
            c.checkpoint_ended(epoch, Err(reason.to_string()));
        }
        self.events.publish(EngineEvent::CheckpointFailed {
            epoch: epoch.0,
            reason: reason.to_string(),
        });
        if let Err(e) = self.store.delete(epoch) {
            warn!(epoch = epoch.0, error = %e, "cannot remove the failed checkpoint's files");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(epoch: u64, file: &str) -> OperatorState {
        OperatorState {
            inline: None,
            files: vec![StateFileRef {
                epoch,
                file: file.into(),
            }],
        }
    }

    #[test]
    fn a_lost_replica_takes_its_twins_state_and_nothing_else_changes() {
        let twins = vec![
            vec!["w".to_string(), "w_replica_1".to_string()],
            vec!["f".to_string(), "f_replica_1".to_string()],
        ];
        let mut operators = BTreeMap::from([
            ("w_replica_1".to_string(), state(4, "004-w_replica_1.full")),
            ("sink".to_string(), state(4, "004-sink.full")),
        ]);
        fill_from_twins(&mut operators, &twins);
        assert_eq!(operators["w"], state(4, "004-w_replica_1.full"));
        assert_eq!(operators["w_replica_1"], state(4, "004-w_replica_1.full"));
        assert_eq!(operators["sink"], state(4, "004-sink.full"));
        // Replicas without state (a stateless operator) get none.
        assert!(!operators.contains_key("f") && !operators.contains_key("f_replica_1"));
        // A replica's own state is never replaced by its twin's.
        let mut both = BTreeMap::from([
            ("w".to_string(), state(4, "004-w.full")),
            ("w_replica_1".to_string(), state(4, "004-w_replica_1.full")),
        ]);
        fill_from_twins(&mut both, &twins);
        assert_eq!(both["w"], state(4, "004-w.full"));
    }
}
