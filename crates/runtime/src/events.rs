//! What happens in a run, as typed values published to subscribers: the checkpoint a run
//! resumes from, checkpoints started, completed, failed or getting old, tasks started,
//! finished and failed, rows dropped as late or rejected. The log is one
//! subscriber ([`LogEvents`]); `anduin run --events FILE` writes them as JSON lines; tests
//! subscribe instead of reading log lines (and an HTTP API will be another subscriber).

use std::sync::Arc;

use serde::Serialize;

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EngineEvent {
    /// Checkpoint `epoch` began: its barrier is on its way from every source.
    CheckpointStarted {
        /// The checkpoint.
        epoch: u64,
        /// Full snapshots, or changes since the previous checkpoint.
        full: bool,
        /// The sources end after it.
        last: bool,
    },
    /// Checkpoint `epoch` is complete (its manifest is written): a restart resumes from it.
    CheckpointCompleted {
        /// The checkpoint.
        epoch: u64,
        /// The query's input had ended everywhere.
        finished: bool,
    },
    /// Checkpoint `epoch` failed; the query goes on and the previous one stays intact.
    CheckpointFailed {
        /// The checkpoint.
        epoch: u64,
        /// Why.
        reason: String,
    },
    /// Tasks were lost and are restored while the others run on: the checkpoint in flight was
    /// given up, and `last_complete` is the checkpoint they restore from (no checkpoint
    /// completes between this event and their restore).
    TasksLost {
        /// The newest complete checkpoint (`None`: none yet).
        last_complete: Option<u64>,
    },
    /// Checkpoint `epoch` did not complete within `--checkpoint-timeout`: the tasks in
    /// `waiting` had not acknowledged it (stuck, or far behind). A `CheckpointFailed` follows.
    CheckpointExpired {
        /// The checkpoint.
        epoch: u64,
        /// The task instances it waited for, by their number in the run.
        waiting: Vec<usize>,
    },
    /// The last complete checkpoint is older than the threshold.
    CheckpointStale {
        /// Its age in milliseconds (or the run's, before the first).
        age_ms: u64,
    },
    /// The run resumes from checkpoint `epoch` (published before any operator is restored).
    RestoreChosen {
        /// The checkpoint.
        epoch: u64,
        /// How many operator instances' states it holds (sources' positions included).
        states: usize,
    },
    /// Task `task` (operators `name`) started.
    TaskStarted {
        /// The task.
        task: usize,
        /// Its operators.
        name: String,
    },
    /// Task `task` finished: its input ended, or the run was stopped.
    TaskFinished {
        /// The task.
        task: usize,
        /// Its operators.
        name: String,
    },
    /// Task `task` failed.
    TaskFailed {
        /// The task.
        task: usize,
        /// Its operators.
        name: String,
        /// The error.
        error: String,
        /// Whether it failed for a reason of its own (its data, its operator, a disk), not
        /// because a channel or another task did, nor as a hot standby's copy (whose stream
        /// selector goes on with another): the run fails with it.
        own: bool,
    },
    /// A channel between processes failed for a reason other than its peer's loss or
    /// another failure (a refusal, damaged bytes, a consumer not back in time): the run fails
    /// with it, and its sources stop.
    EdgeFailed {
        /// The channel (`channel 4 (m -> out, port 0)`).
        edge: String,
        /// The failure.
        error: String,
    },
    /// A change of a param every instance of `operator` switched to, at the barrier of
    /// `epoch` (`anduin ctl set` or `scale`, the autoscaler, a rule applied at run time):
    /// a live rescale when `param` is `parallelism`, a live split when it is `pipeline`.
    ParamChanged {
        /// The operator.
        operator: String,
        /// The param.
        param: String,
        /// Its value before.
        old: String,
        /// Its value now.
        new: String,
        /// The checkpoint whose barrier carried it.
        epoch: u64,
        /// Who asked (`ctl`, `autoscaler`, `rule:NAME`, …).
        from: String,
    },
    /// A change the query's own coordinator asked for could not be applied (an operator
    /// grown beyond `--max-parallelism` that cannot be grown again after a rollback, for
    /// lack of room): the query runs on without it.
    ChangeRefused {
        /// The operator.
        operator: String,
        /// The param.
        param: String,
        /// The value asked for.
        value: String,
        /// Who asked (`coordinator: grown again after a rollback`).
        from: String,
        /// Why it was refused, and what the query does instead.
        why: String,
    },
    /// Operator `operator` dropped `rows` rows that came after the watermark had passed
    /// their time, over the whole run (published once, when the run ends; none when it
    /// dropped none).
    LateRows {
        /// The operator.
        operator: String,
        /// The rows, over every instance.
        rows: u64,
    },
    /// Malformed records and rows an operator could not process went to the dead letters
    /// (published once, when the run ends; none when nothing was rejected).
    Rejected {
        /// Input records that could not be read.
        records: u64,
        /// Rows an expression failed on.
        rows: u64,
    },
}

/// Receives the events of a run, on the thread that publishes them: it must not block.
pub trait Subscriber: Send + Sync {
    /// `event` happened.
    fn event(&self, event: &EngineEvent);
}

/// The subscribers of a run.
#[derive(Clone, Default)]
pub struct Events {
    subscribers: Vec<Arc<dyn Subscriber>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Events({} subscribers)", self.subscribers.len())
    }
}

impl Events {
    /// Events that go to the log, as a run's do by default.
    pub fn logged() -> Self {
        Self::default().with(Arc::new(LogEvents))
    }

    /// These subscribers and `subscriber`.
    pub fn with(mut self, subscriber: Arc<dyn Subscriber>) -> Self {
        self.subscribers.push(subscriber);
        self
    }

    /// Tells every subscriber.
    pub fn publish(&self, event: EngineEvent) {
        for s in &self.subscribers {
            s.event(&event);
        }
    }
}

/// Writes events to the log (`tracing`), with structured fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogEvents;

impl Subscriber for LogEvents {
    fn event(&self, event: &EngineEvent) {
        use tracing::{debug, info, warn};
        match event {
            EngineEvent::CheckpointStarted { epoch, full, last } => {
                info!(epoch, full, last, "checkpoint started");
            }
            EngineEvent::CheckpointCompleted { epoch, finished } => {
                info!(epoch, finished, "checkpoint complete");
            }
            EngineEvent::CheckpointFailed { epoch, reason } => warn!(
                epoch,
                reason, "checkpoint failed; the previous checkpoint stays intact"
            ),
            EngineEvent::TasksLost { last_complete } => {
                info!(last_complete, "tasks lost: they restore from the last complete checkpoint");
            }
            EngineEvent::CheckpointExpired { epoch, waiting } => warn!(
                epoch,
                ?waiting,
                "checkpoint timed out: these tasks had not acknowledged it"
            ),
            EngineEvent::CheckpointStale { age_ms } => warn!(
                age_s = age_ms / 1000,
                "the last complete checkpoint is older than the threshold: a failure now would replay that much input"
            ),
            EngineEvent::RestoreChosen { epoch, states } => {
                debug!(epoch, states, "resuming from a checkpoint");
            }
            EngineEvent::TaskStarted { task, name } => debug!(task, name, "task started"),
            EngineEvent::TaskFinished { task, name } => debug!(task, name, "task finished"),
            EngineEvent::TaskFailed {
                task,
                name,
                error,
                own,
            } => {
                debug!(task, name, error, own, "task failed");
            }
            EngineEvent::EdgeFailed { edge, error } => debug!(edge, error, "network edge failed"),
            EngineEvent::ParamChanged {
                operator,
                param,
                new,
                epoch,
                ..
            } => debug!(operator, param, new, epoch, "param changed"),
            EngineEvent::ChangeRefused {
                operator,
                param,
                value,
                why,
                ..
            } => debug!(operator, param, value, why, "a change was refused"),
            EngineEvent::LateRows { operator, rows } => {
                debug!(operator, rows, "rows dropped as late");
            }
            EngineEvent::Rejected { records, rows } => {
                debug!(records, rows, "records and rows went to the dead letters");
            }
        }
    }
}

/// Collects events in memory (for tests and tools).
#[derive(Debug, Default)]
pub struct Recorded(std::sync::Mutex<Vec<EngineEvent>>);

impl Recorded {
    /// Every event so far.
    pub fn events(&self) -> Vec<EngineEvent> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Subscriber for Recorded {
    fn event(&self, event: &EngineEvent) {
        if let Ok(mut e) = self.0.lock() {
            e.push(event.clone());
        }
    }
}
