//! What the runtime tells the handle of its query: that it runs (and how changes reach its
//! sources), the changes each instance applied, the instances whose input ended, the
//! checkpoints begun and ended, and the end of the run.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_types::Epoch;

use super::{now_ms, set_current, Control, Injector, Inner, Probe};
use crate::control::types::{
    ChangeRecord, CheckpointOutcome, CheckpointRecord, OperatorInfo, ParamInfo, QueryState,
    TaskInfo, TopologyInfo, RECENT_CHECKPOINTS,
};

/// What the runtime tells the handle.
impl Control {
    /// The run is about to start: its graph, how changes reach its sources, and the flag that
    /// stops it.
    pub(crate) fn attach(
        &self,
        operators: Vec<OperatorInfo>,
        tasks: Vec<TaskInfo>,
        topology: TopologyInfo,
        injector: Injector,
        checkpointing: bool,
        stop: Arc<AtomicBool>,
    ) {
        *self
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(stop);
        let mut inner = self.lock();
        let mut operators = operators;
        for o in &mut operators {
            if let (Some(max), Some(owners)) = (o.max_parallelism, o.owners) {
                // A resumed run with fewer instances than the last rescale its checkpoint
                // recorded runs at its parallelism instead: the next rescale starts from
                // what runs, not from what was recorded.
                let key = (o.name.clone(), crate::rescale::PARALLELISM.to_string());
                let kept = inner
                    .requested
                    .get(&key)
                    .and_then(|v| v.parse::<usize>().ok())
                    .is_none_or(|n| (1..=max).contains(&n));
                if !kept {
                    inner.requested.insert(key, owners.to_string());
                }
                // Rescaled while running (`ctl scale`): a param of the control plane's own.
                inner
                    .params
                    .entry(o.name.clone())
                    .or_default()
                    .push(ParamInfo {
                        name: crate::rescale::PARALLELISM.into(),
                        kind: "number".into(),
                        value: owners.to_string(),
                        doc: super::growth::parallelism_doc(self.grows_at_all(&o.name), max),
                    });
            }
            if let Some(params) = inner.params.get(&o.name) {
                o.adjustable = params.iter().map(|p| p.name.clone()).collect();
            }
        }
        inner.operators = operators;
        inner.tasks = tasks;
        inner.topology = topology;
        inner.injector = Some(injector);
        inner.checkpointing = checkpointing;
        if checkpointing {
            inner.history.checkpointed();
        }
        inner.state = QueryState::Running;
        drop(inner);
        let announce = std::mem::take(
            &mut *self
                .on_running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for f in announce {
            f();
        }
    }

    /// Where the run's live figures come from.
    pub(crate) fn probe(&self, probe: Probe) {
        self.lock().probe = Some(probe);
    }

    /// Checkpoint `epoch` began.
    pub(crate) fn checkpoint_started(&self, epoch: Epoch) {
        let mut inner = self.lock();
        inner.last_started = inner.last_started.max(epoch.0);
        if inner.timeline.len() == RECENT_CHECKPOINTS {
            inner.timeline.pop_front();
        }
        inner.timeline.push_back(CheckpointRecord {
            epoch: epoch.0,
            started_ms: now_ms(),
            outcome: None,
        });
    }

    /// Checkpoint `epoch` completed, or failed. (A complete one's duration and size are
    /// those the checkpoint counters hold for it: they are counted before this is called.)
    pub(crate) fn checkpoint_ended(&self, epoch: Epoch, outcome: Result<(), String>) {
        let mut inner = self.lock();
        let counted = inner
            .probe
            .as_ref()
            .and_then(|p| p.checkpoints.as_ref())
            .map(|c| c.live())
            .filter(|c| c.last_epoch == Some(epoch.0));
        if let Some(record) = inner.timeline.iter_mut().rev().find(|r| r.epoch == epoch.0) {
            let took = u64::try_from(now_ms().saturating_sub(record.started_ms)).unwrap_or(0);
            record.outcome = Some(match &outcome {
                Ok(()) => CheckpointOutcome::Complete {
                    duration_ms: counted
                        .as_ref()
                        .and_then(|c| c.last_duration_ms)
                        .unwrap_or(took),
                    size_bytes: counted.and_then(|c| c.last_size_bytes).unwrap_or(0),
                },
                Err(reason) => CheckpointOutcome::Failed {
                    duration_ms: took,
                    reason: reason.clone(),
                },
            });
        }
        inner.checkpoints_ended.insert(epoch.0, outcome);
        // Only the recent ones matter: a request waits for one begun after it.
        while inner.checkpoints_ended.len() > 64 {
            inner.checkpoints_ended.pop_first();
        }
        drop(inner);
        self.changed.notify_all();
    }

    /// The run resumes from the checkpoint of `epoch`, which recorded `records` (and a
    /// cluster's coordinator the changes its catalog holds after it): they are the history,
    /// and the params' current values.
    pub fn restored(&self, epoch: u64, records: &[ChangeRecord]) {
        let mut inner = self.lock();
        for r in records {
            set_current(&mut inner.params, &r.operator, &r.param, &r.new);
            inner
                .requested
                .insert((r.operator.clone(), r.param.clone()), r.new.clone());
        }
        inner.next_seq = records.iter().map(|r| r.seq).max().unwrap_or(0) + 1;
        inner.history.restore(epoch, records);
    }

    /// Instance `instance` of the changed operator applied change `seq` at the barrier of
    /// `epoch`.
    pub(crate) fn applied(&self, seq: u64, instance: usize, epoch: Epoch) {
        self.report(crate::protocol::Event::Applied {
            seq,
            instance,
            epoch,
        });
        let mut inner = self.lock();
        if let Some(p) = inner.pending.get_mut(&seq) {
            p.epoch.get_or_insert(epoch.0);
            p.waiting.remove(&instance);
        }
        let settled = self.settle(&mut inner);
        drop(inner);
        self.record(settled);
    }

    /// Instance `instance` of `operator` has ended its input: no change reaches it any more.
    pub(crate) fn ended(&self, operator: &str, instance: usize) {
        self.report(crate::protocol::Event::InputEnded {
            operator: operator.to_string(),
            instance,
        });
        let mut inner = self.lock();
        inner.ended.insert((operator.to_string(), instance));
        for p in inner.pending.values_mut() {
            if p.record.operator == operator {
                p.waiting.remove(&instance);
            }
        }
        let settled = self.settle(&mut inner);
        drop(inner);
        self.record(settled);
        // A change it settled may have reached no instance: `set` says so.
        self.changed.notify_all();
    }

    /// The run has ended (`failed` or not): no change is applied any more, and the control
    /// plane lets go of its way to the run's coordinator.
    pub fn detach(&self, failed: bool) {
        *self
            .forward
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let mut inner = self.lock();
        inner.injector = None;
        inner.state = if failed {
            QueryState::Failed
        } else {
            QueryState::Finished
        };
        drop(inner);
        self.changed.notify_all();
    }

    /// A failure of the run will be recovered by a new run (a cluster's attempt): until
    /// [`Control::detach_recovering`] says why, or [`Control::detach_failed`] that it will
    /// not be, a failed run answers as a query that recovers, not as a failed one.
    pub fn recovered_on_failure(&self) {
        self.lock().recovered_on_failure = true;
    }

    /// The run failed, and its query is not recovered (no attempt left): it is failed.
    pub fn detach_failed(&self) {
        self.detach(true);
        {
            let mut inner = self.lock();
            inner.recovering = None;
            inner.recovered_on_failure = false;
        }
        self.changed.notify_all();
    }

    /// Says that `request`, asked by the query's own coordinator, was refused for `why`
    /// ([`crate::EngineEvent::ChangeRefused`]: the events file, the API's event stream).
    pub fn publish_refusal(&self, request: &crate::control::types::ChangeRequest, why: &str) {
        if let Some(events) = self
            .published
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
        {
            events.publish(crate::EngineEvent::ChangeRefused {
                operator: request.operator.clone(),
                param: request.param.clone(),
                value: request.value.clone(),
                from: request.from.clone(),
                why: why.to_string(),
            });
        }
    }

    /// The run was cancelled (a cluster's `anduin cancel`): it ended at once.
    pub fn detach_cancelled(&self) {
        self.detach(true);
        {
            let mut inner = self.lock();
            inner.state = QueryState::Cancelled;
            inner.recovering = None;
            inner.recovered_on_failure = false;
        }
        self.changed.notify_all();
    }

    /// The run has failed and its query is being recovered by another (a cluster's attempt
    /// that lost a worker, rolled back to its last checkpoint as a new attempt with a control
    /// plane of its own), `why`: a change still on its way is answered as cut short by it
    /// and the query as being recovered, not as failed.
    pub fn detach_recovering(&self, why: impl Into<String>) {
        self.lock().recovering = Some(why.into());
        self.detach(true);
    }

    /// A live rescale (`ctl scale`) that instances may have carried out after the barrier of
    /// checkpoint `epoch`: one applied at a later barrier, or one still on its way to every
    /// instance. `None`: none. Instances restored alone from that checkpoint would route rows
    /// and hold key groups as before the rescale, while those that kept running do as after
    /// it: a cluster's per-task recovery must not restore them alone (the query rolls back as
    /// a whole instead, to the assignment the checkpoint recorded).
    ///
    /// A rescale at the checkpoint's own barrier is no obstacle: every instance reports the
    /// change before it acknowledges the checkpoint, on the same ordered way, so the
    /// checkpoint's manifest records the rescale (with the state from before the move), and
    /// instances restored from it re-cut that state to the owners the running ones have.
    pub fn rescaled_since(&self, epoch: u64) -> Option<String> {
        let inner = self.lock();
        let is_rescale = |r: &ChangeRecord| r.param == crate::rescale::PARALLELISM;
        if let Some(r) = inner
            .pending
            .values()
            .map(|p| &p.record)
            .chain(inner.recording.values())
            .find(|r| is_rescale(r))
        {
            return Some(format!(
                "operator \"{}\" is being rescaled to {} instances",
                r.operator, r.new
            ));
        }
        inner
            .history
            .recent()
            .iter()
            .rev()
            .find(|r| is_rescale(r) && r.epoch > epoch)
            .map(|r| {
                format!(
                    "operator \"{}\" was rescaled to {} instances at epoch {}, after checkpoint {epoch}",
                    r.operator, r.new, r.epoch
                )
            })
    }

    /// A change of a param of one of `operators` that rode on a barrier after checkpoint
    /// `epoch` (applied, being applied or being recorded), said for the log: instances of
    /// theirs restored from that checkpoint together with a source would not have it where
    /// the running ones did (a restored source injects no barrier of before).
    pub fn changed_since(
        &self,
        epoch: u64,
        operators: &std::collections::BTreeSet<String>,
    ) -> Option<String> {
        let inner = self.lock();
        let pending = inner
            .pending
            .values()
            .filter(|p| p.epoch.is_some_and(|e| e > epoch))
            .map(|p| &p.record);
        let applied = inner
            .recording
            .values()
            .chain(inner.history.recent().iter())
            .filter(|r| r.epoch > epoch);
        pending
            .chain(applied)
            .find(|r| operators.contains(&r.operator))
            .map(|r| {
                format!(
                    "the param `{}` of operator \"{}\" was changed to {:?} after checkpoint {epoch}",
                    r.param, r.operator, r.new
                )
            })
    }

    /// Per operator and param, the latest change applied at a barrier up to `epoch`, for its
    /// checkpoint's manifest.
    pub(crate) fn records_through(&self, epoch: Epoch) -> Vec<ChangeRecord> {
        self.lock().history.through(epoch.0)
    }

    /// Moves every change that no instance waits for any more into the history, or, when
    /// they are recorded ([`Control::record_changes_with`]), among those being recorded:
    /// returned, for [`Control::record`] once the lock is let go.
    fn settle(&self, inner: &mut Inner) -> Vec<ChangeRecord> {
        let done: Vec<u64> = inner
            .pending
            .iter()
            .filter(|(_, p)| p.waiting.is_empty())
            .map(|(seq, _)| *seq)
            .collect();
        if done.is_empty() {
            return Vec::new();
        }
        let recorded = self
            .recorder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some();
        let mut to_record = Vec::new();
        for seq in done {
            let Some(p) = inner.pending.remove(&seq) else {
                continue;
            };
            let mut record = p.record;
            record.time_ms = now_ms();
            // Every instance ended before the barrier reached it: the change took effect
            // nowhere. It is not a change of the query (no history entry, no record); the
            // value asked for before it is the one asked for last again.
            let Some(epoch) = p.epoch else {
                let key = (record.operator.clone(), record.param.clone());
                if inner.requested.get(&key) == Some(&record.new) {
                    inner.requested.insert(key, record.old.clone());
                }
                inner.missed.insert(record.seq, record);
                continue;
            };
            record.epoch = epoch;
            tracing::info!(
                query = %self.name,
                seq = record.seq,
                epoch = record.epoch,
                operator = %record.operator,
                param = %record.param,
                new = %record.new,
                "param changed"
            );
            if let Some(events) = self
                .published
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
            {
                events.publish(crate::EngineEvent::ParamChanged {
                    operator: record.operator.clone(),
                    param: record.param.clone(),
                    old: record.old.clone(),
                    new: record.new.clone(),
                    epoch: record.epoch,
                    from: record.from.clone(),
                });
            }
            // The params show a change when the history has it: once recorded, if it is.
            if recorded {
                inner.recording.insert(record.seq, record.clone());
                to_record.push(record);
            } else {
                set_current(
                    &mut inner.params,
                    &record.operator,
                    &record.param,
                    &record.new,
                );
                inner.history.push(record);
            }
        }
        self.changed.notify_all();
        to_record
    }

    /// Hands `settled` to the recorder (without the handle's locks: it may take its own),
    /// then to the history, and wakes the `set`s waiting for them.
    fn record(&self, settled: Vec<ChangeRecord>) {
        if settled.is_empty() {
            return;
        }
        let recorder = self
            .recorder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(recorder) = recorder {
            for r in &settled {
                recorder(r);
            }
        }
        let mut inner = self.lock();
        for r in settled {
            inner.recording.remove(&r.seq);
            set_current(&mut inner.params, &r.operator, &r.param, &r.new);
            inner.history.push(r);
        }
        drop(inner);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use anduin_operator_api::{DeadLetter, DeadLetterTarget};
    use anduin_types::Epoch;

    use super::super::{Control, InstanceFigures, Probe};
    use crate::control::types::{ChangeRecord, CheckpointOutcome, RECENT_CHECKPOINTS};
    use crate::stats::CheckpointCounters;

    /// The control plane of a query whose filter `low` has the condition `value > 0`.
    fn filter_control() -> Control {
        let params = BTreeMap::from([(
            "low".to_string(),
            vec![crate::control::types::ParamInfo {
                name: "condition".into(),
                kind: "expression".into(),
                value: "value > 0".into(),
                doc: String::new(),
            }],
        )]);
        Control::new("q", None, params, Box::new(|_, _| Ok(())))
    }

    /// Attaches `control` to a run of `parallelism` instances of `low`: where its changes go.
    fn attach_filter(
        control: &Control,
        parallelism: usize,
    ) -> crossbeam_channel::Receiver<crate::protocol::Event> {
        use crate::control::types::{OperatorInfo, TopologyInfo};
        let (tx, rx) = crossbeam_channel::unbounded();
        control.attach(
            vec![OperatorInfo {
                name: "low".into(),
                kind: "filter".into(),
                inputs: Vec::new(),
                outputs: Vec::new(),
                parallelism,
                task: 0,
                stateful: false,
                adjustable: vec!["condition".into()],
                max_parallelism: None,
                owners: None,
            }],
            Vec::new(),
            TopologyInfo::default(),
            super::super::Injector::Coordinator(tx),
            true,
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
        );
        rx
    }

    #[test]
    fn a_recorded_change_is_recorded_before_the_history_and_its_set_have_it() {
        use crate::control::types::ChangeRequest;
        use std::sync::Mutex;

        let control = Arc::new(filter_control());
        // What the history held, and the param's value, when the recorder was called, for
        // each change recorded.
        type Seen = Vec<(u64, usize, Option<String>)>;
        let seen: Arc<Mutex<Seen>> = Arc::default();
        {
            let (seen, handle) = (Arc::clone(&seen), Arc::downgrade(&control));
            control.record_changes_with(Arc::new(move |r: &ChangeRecord| {
                let held = handle.upgrade().map_or(0, |c| c.history().len());
                let shown = handle.upgrade().and_then(|c| condition(&c));
                seen.lock()
                    .expect("not poisoned")
                    .push((r.seq, held, shown));
            }));
        }
        let rx = attach_filter(&control, 2);
        let setter = {
            let control = Arc::clone(&control);
            std::thread::spawn(move || {
                control.set(ChangeRequest {
                    operator: "low".into(),
                    param: "condition".into(),
                    value: "value > 1".into(),
                    from: "test".into(),
                })
            })
        };
        // The change goes towards the sources; both instances switch at epoch 3.
        let sent = rx.recv().expect("the change is sent");
        assert!(matches!(sent, crate::protocol::Event::Control(_)));
        control.applied(1, 0, Epoch(3));
        assert!(seen.lock().expect("not poisoned").is_empty());
        control.applied(1, 1, Epoch(3));
        let record = setter.join().expect("no panic").expect("applied");
        assert_eq!((record.seq, record.epoch), (1, 3));
        // Neither the history nor the params showed it while it was being recorded (the
        // params showed a value the history lacked, and a client that saw one did not see
        // the other).
        assert_eq!(
            *seen.lock().expect("not poisoned"),
            vec![(1, 0, Some("value > 0".to_string()))]
        );
        assert_eq!(control.history().len(), 1);
        assert_eq!(condition(&control).as_deref(), Some("value > 1"));
    }

    #[test]
    fn a_change_whose_every_instance_ended_before_its_barrier_is_refused_and_changes_nothing() {
        use crate::control::types::ChangeRequest;

        let control = Arc::new(filter_control());
        let rx = attach_filter(&control, 2);
        let change = |value: &str| ChangeRequest {
            operator: "low".into(),
            param: "condition".into(),
            value: value.into(),
            from: "test".into(),
        };
        let setter = {
            let control = Arc::clone(&control);
            let request = change("value > 1");
            std::thread::spawn(move || control.set(request))
        };
        rx.recv().expect("the change is sent");
        // Both instances end their input before the barrier reaches them.
        control.ended("low", 0);
        control.ended("low", 1);
        let e = setter
            .join()
            .expect("no panic")
            .expect_err("no instance applied it")
            .to_string();
        assert!(
            e.contains("ended its input before the change reached it; nothing changed"),
            "{e}"
        );
        assert!(control.history().is_empty(), "{:?}", control.history());
        assert_eq!(condition(&control).as_deref(), Some("value > 0"));
    }

    /// The value the params of `low` show for `condition`, if any.
    fn condition(control: &Control) -> Option<String> {
        control
            .params("low")
            .ok()?
            .into_iter()
            .find(|p| p.name == "condition")
            .map(|p| p.value)
            .filter(|v| !v.is_empty())
    }

    #[test]
    fn only_a_rescale_after_the_checkpoint_keeps_its_instances_from_being_restored_alone() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        let record = |seq: u64, epoch: u64, param: &str, new: &str| ChangeRecord {
            seq,
            time_ms: 0,
            epoch,
            operator: "w".into(),
            param: param.into(),
            old: "2".into(),
            new: new.into(),
            from: "test".into(),
        };
        control.restored(
            6,
            &[
                record(1, 5, crate::rescale::PARALLELISM, "4"),
                record(2, 6, "lateness", "1s"),
            ],
        );
        // At the checkpoint's own barrier, or before: its manifest records it.
        assert_eq!(control.rescaled_since(5), None);
        assert_eq!(control.rescaled_since(6), None);
        let why = control
            .rescaled_since(4)
            .expect("rescaled after checkpoint 4");
        assert!(why.contains("rescaled to 4 instances at epoch 5"), "{why}");
    }

    #[test]
    fn a_param_set_to_the_value_it_has_is_refused_without_a_barrier() {
        use crate::control::types::ChangeRequest;
        let control = filter_control();
        let rx = attach_filter(&control, 1);
        let why = control
            .set(ChangeRequest {
                operator: "low".into(),
                param: "condition".into(),
                value: "value > 0".into(),
                from: "test".into(),
            })
            .expect_err("nothing to change")
            .to_string();
        assert!(why.contains("nothing to change"), "{why}");
        assert!(rx.try_recv().is_err(), "no barrier carries it");
        assert!(control.history().is_empty());
    }

    #[test]
    fn a_run_whose_failure_is_recovered_answers_as_recovering_until_told_it_is_failed() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        control.recovered_on_failure();
        // The run ends failed before its coordinator has decided to recover it.
        control.detach(true);
        let why = control.stop().expect_err("ended").to_string();
        assert!(why.contains("is recovering"), "{why}");
        control.detach_failed();
        let why = control.stop().expect_err("ended").to_string();
        assert!(why.contains("is failed"), "{why}");
    }

    #[test]
    fn a_stop_asked_while_another_attempt_recovers_the_query_says_it_recovers_not_that_it_failed() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        control.detach_recovering("worker w1 died");
        let why = control
            .stop()
            .expect_err("a rolled-back attempt takes no stop")
            .to_string();
        assert!(
            why.contains("is recovering") && why.contains("worker w1 died"),
            "{why}"
        );
        assert!(!why.contains("failed"), "{why}");
    }

    #[test]
    fn figures_kept_elsewhere_are_said_to_be_missing_and_the_checkpoints_are_still_here() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        let counters = Arc::new(CheckpointCounters::default());
        control.probe(Probe {
            instances: InstanceFigures::Elsewhere("on the workers".into()),
            checkpoints: Some(Arc::clone(&counters)),
            checkpoint_dir: None,
        });
        control.checkpoint_started(Epoch(1));
        counters.completed(Epoch(1), 25, 4096);
        control.checkpoint_ended(Epoch(1), Ok(()));
        let m = control.metrics();
        assert_eq!(m.not_gathered.as_deref(), Some("on the workers"));
        assert!(m.instances.is_empty() && m.recent_rejects.is_empty());
        let c = m.checkpoints.expect("the checkpoints are counted here");
        assert_eq!((c.completed, c.recent.len()), (1, 1));
    }

    #[test]
    fn the_checkpoint_timeline_keeps_how_each_recent_checkpoint_ended() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        let counters = Arc::new(CheckpointCounters::default());
        control.probe(Probe {
            instances: InstanceFigures::Here {
                counters: Vec::new(),
                dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)),
            },
            checkpoints: Some(Arc::clone(&counters)),
            checkpoint_dir: None,
        });
        control.checkpoint_started(Epoch(1));
        counters.completed(Epoch(1), 25, 4096);
        control.checkpoint_ended(Epoch(1), Ok(()));
        control.checkpoint_started(Epoch(2));
        control.checkpoint_ended(Epoch(2), Err("disk full".into()));
        control.checkpoint_started(Epoch(3));
        let recent = control
            .metrics()
            .checkpoints
            .expect("the run takes checkpoints")
            .recent;
        let epochs: Vec<u64> = recent.iter().map(|r| r.epoch).collect();
        assert_eq!(epochs, [1, 2, 3]);
        assert_eq!(
            recent[0].outcome,
            Some(CheckpointOutcome::Complete {
                duration_ms: 25,
                size_bytes: 4096
            })
        );
        assert!(
            matches!(&recent[1].outcome, Some(CheckpointOutcome::Failed { reason, .. }) if reason == "disk full"),
            "{:?}",
            recent[1]
        );
        assert_eq!(recent[2].outcome, None, "on its way");
        for epoch in 4..(RECENT_CHECKPOINTS as u64 + 10) {
            control.checkpoint_started(Epoch(epoch));
        }
        let recent = control.metrics().checkpoints.expect("taken").recent;
        assert_eq!(recent.len(), RECENT_CHECKPOINTS);
        assert_eq!(recent[0].epoch, 10, "the oldest are dropped");
    }
}
