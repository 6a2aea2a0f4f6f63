//! What the runtime tells the handle of its query: that it runs (and how changes reach its
//! sources), the changes each instance applied, the instances whose input ended, the
//! checkpoints begun and ended, and the end of the run.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_types::Epoch;

use super::{now_ms, set_current, Control, Injector, Inner, Probe};
use crate::control::types::{ChangeRecord, OperatorInfo, QueryState, TaskInfo};

/// What the runtime tells the handle.
impl Control {
    /// The run is about to start: its graph, how changes reach its sources, and the flag that
    /// stops it.
    pub(crate) fn attach(
        &self,
        operators: Vec<OperatorInfo>,
        tasks: Vec<TaskInfo>,
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
            if let Some(params) = inner.params.get(&o.name) {
                o.adjustable = params.iter().map(|p| p.name.clone()).collect();
            }
        }
        inner.operators = operators;
        inner.tasks = tasks;
        inner.injector = Some(injector);
        inner.checkpointing = checkpointing;
        if checkpointing {
            inner.history.checkpointed();
        }
        inner.state = QueryState::Running;
        drop(inner);
        let announce = self
            .on_running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(f) = announce {
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
    }

    /// Checkpoint `epoch` completed, or failed.
    pub(crate) fn checkpoint_ended(&self, epoch: Epoch, outcome: Result<(), String>) {
        let mut inner = self.lock();
        inner.checkpoints_ended.insert(epoch.0, outcome);
        // Only the recent ones matter: a request waits for one begun after it.
        while inner.checkpoints_ended.len() > 64 {
            inner.checkpoints_ended.pop_first();
        }
        drop(inner);
        self.changed.notify_all();
    }

    /// The run resumes from a checkpoint that recorded `records`: they are the history, and
    /// the params' current values.
    pub(crate) fn restored(&self, epoch: u64, records: &[ChangeRecord]) {
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
        self.settle(&mut inner);
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
        self.settle(&mut inner);
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

    /// Per operator and param, the latest change applied at a barrier up to `epoch`, for its
    /// checkpoint's manifest.
    pub(crate) fn records_through(&self, epoch: Epoch) -> Vec<ChangeRecord> {
        self.lock().history.through(epoch.0)
    }

    /// Moves every change that no instance waits for any more into the history.
    fn settle(&self, inner: &mut Inner) {
        let done: Vec<u64> = inner
            .pending
            .iter()
            .filter(|(_, p)| p.waiting.is_empty())
            .map(|(seq, _)| *seq)
            .collect();
        if done.is_empty() {
            return;
        }
        for seq in done {
            let Some(p) = inner.pending.remove(&seq) else {
                continue;
            };
            let mut record = p.record;
            record.time_ms = now_ms();
            // Every instance ended before the barrier reached it: the change took effect
            // nowhere, at the end of the input.
            record.epoch = p.epoch.unwrap_or(0);
            set_current(
                &mut inner.params,
                &record.operator,
                &record.param,
                &record.new,
            );
            tracing::info!(
                query = %self.name,
                seq = record.seq,
                epoch = record.epoch,
                operator = %record.operator,
                param = %record.param,
                new = %record.new,
                "param changed"
            );
            inner.history.push(record);
        }
        self.changed.notify_all();
    }
}
