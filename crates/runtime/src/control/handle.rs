//! [`Control`]: the handle of one running query that the control plane (the HTTP API, `anduin
//! ctl`) acts through. A change is validated first (by the checker the caller gives, which
//! knows the query's language), then carried by a barrier injected at every source — by the
//! checkpoint coordinator when the query takes checkpoints (the change then rides on a
//! checkpoint's barrier), directly otherwise — and applied by every instance of the operator
//! when the barrier has arrived on all its inputs. `set` returns when every instance has
//! switched (or ended before the barrier reached it).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anduin_types::{ControlUpdate, Epoch};
use crossbeam_channel::Sender;

use super::history::{History, HISTORY_KEPT};
use super::types::{
    ChangeRecord, ChangeRequest, CheckpointRecord, ControlFailure, OperatorInfo, ParamInfo,
    QueryInfo, QueryState, TaskInfo, TopologyInfo,
};
use crate::protocol::{Command, Event};
use crate::stats::{CheckpointCounters, Counters};

mod autoscale;
mod engine;
mod figures;
mod growth;

pub use growth::{BarrierSent, Onto, Prepare, Room};
mod pipelining;

#[cfg(test)]
pub(crate) use growth::window_control;
pub(crate) use growth::{Growing, MOST_INSTANCES};

pub use pipelining::TaskSplit;

/// How long `set` waits for a change to reach every instance, by default.
pub const DEFAULT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Checks a change before it is applied: the param must be adjustable and the value valid
/// for it (an expression that type-checks against the operator's input, a duration, …),
/// given the values that the changes sent before it gave the operator's params (param → its
/// last new value; params of one operator may depend on each other, as a pattern's `define`
/// on its `pattern`).
pub type Validator = Box<
    dyn Fn(&ChangeRequest, &BTreeMap<String, String>) -> Result<(), ControlFailure> + Send + Sync,
>;

/// Keeps each change durable once every instance has switched to it (a cluster's coordinator
/// writes it to its catalog): called with the change before it enters the history and
/// before `set` answers, outside the handle's locks.
pub type Recorder = dyn Fn(&ChangeRecord) + Send + Sync;

/// How barriers carrying changes reach the sources.
pub(crate) enum Injector {
    /// Through the checkpoint coordinator, which puts them on its next checkpoint's barrier.
    Coordinator(Sender<Event>),
    /// Straight to every source instance (a run without checkpoints), each barrier with the
    /// next epoch of the run's own count.
    Direct {
        sources: Vec<Sender<Command>>,
        next_epoch: u64,
    },
}

/// A change on its way through the query.
struct Pending {
    record: ChangeRecord,
    /// The instances that have not switched yet.
    waiting: BTreeSet<usize>,
    /// Set by the first instance that switched.
    epoch: Option<u64>,
}

/// What changes while the query runs.
impl Inner {
    /// The run ended failed and its coordinator has not said yet whether a new run recovers
    /// the query (with `recovered_on_failure`).
    fn awaiting_recovery(&self) -> bool {
        self.recovered_on_failure && self.state == QueryState::Failed && self.recovering.is_none()
    }

    /// Its state as the API shows it: a failed attempt that the next one recovers (or will,
    /// once its coordinator says so) is recovering, not failed (probe45: for the whole wait
    /// before the next attempt the API said "failed").
    fn shown_state(&self) -> QueryState {
        if self.state == QueryState::Failed
            && (self.recovering.is_some() || self.awaiting_recovery())
        {
            QueryState::Recovering
        } else {
            self.state
        }
    }
}

struct Inner {
    state: QueryState,
    injector: Option<Injector>,
    operators: Vec<OperatorInfo>,
    tasks: Vec<TaskInfo>,
    /// Where the instances run and how the tasks feed each other.
    topology: TopologyInfo,
    checkpointing: bool,
    /// Per adjustable operator, its params' current values.
    params: BTreeMap<String, Vec<ParamInfo>>,
    next_seq: u64,
    history: History,
    pending: BTreeMap<u64, Pending>,
    /// Changes every instance has switched to, handed to the [`Recorder`] and not in the
    /// history yet (`set` answers once they are).
    recording: BTreeMap<u64, ChangeRecord>,
    /// Changes whose barrier reached no instance (each had ended its input first): they
    /// changed nothing, and `set` says so.
    missed: BTreeMap<u64, ChangeRecord>,
    /// Operator instances whose input has ended: no barrier reaches them any more.
    ended: BTreeSet<(String, usize)>,
    /// The last checkpoint begun (0: none yet).
    last_started: u64,
    /// How recent checkpoints ended: completed, or failed and why.
    checkpoints_ended: BTreeMap<u64, Result<(), String>>,
    /// The recent checkpoints, for their timeline (the last `RECENT_CHECKPOINTS`).
    timeline: std::collections::VecDeque<CheckpointRecord>,
    /// Where the live figures come from.
    probe: Option<Probe>,
    /// Per operator and param, the value of the last change sent (applied or on its way).
    requested: BTreeMap<(String, String), String>,
    /// Why the run ended while its query goes on, recovered by a new run (a cluster's
    /// attempt that lost a worker): what a change still on its way is answered.
    recovering: Option<String>,
    /// A failure of the run is recovered by a new run (a cluster's attempts, until the
    /// coordinator decides otherwise): between the run's end and that decision, requests
    /// are answered as of a query that recovers.
    recovered_on_failure: bool,
    /// The query as written, when rules reshaped it (see [`QueryInfo::written`]).
    written: Vec<crate::control::WrittenOperator>,
}

/// Where the live figures of a run come from.
pub(crate) struct Probe {
    /// The operator instances' figures and the dead letters.
    pub instances: InstanceFigures,
    /// The checkpoints' counters, when the run takes checkpoints.
    pub checkpoints: Option<Arc<CheckpointCounters>>,
    /// The checkpoint directory, when the run takes checkpoints.
    pub checkpoint_dir: Option<std::path::PathBuf>,
}

/// Where the figures of a run's operator instances and its dead letters are.
pub(crate) enum InstanceFigures {
    /// In this process: the instances run here.
    Here {
        /// Every operator instance's counters: operator, instance, whether it is a source
        /// (whose busy time is not measured: it waits for input inside its poll), counters.
        counters: Vec<(String, usize, bool, Arc<Counters>)>,
        /// The dead letters.
        dead_letter: Arc<anduin_operator_api::DeadLetter>,
    },
    /// In other processes, and not gathered here: why, in words, for
    /// [`crate::control::QueryMetrics::not_gathered`].
    Elsewhere(String),
    /// In other processes, which send theirs here (a cluster's executors to its
    /// coordinator): the last figures of each, merged when asked.
    Gathered(crate::control::Gather),
}

/// What stops a query whose sources run elsewhere (see [`Control::stop_with`]): `Err` holds
/// the query's state in words, as it sees it, and why it cannot stop now.
pub type Stopper = Arc<dyn Fn() -> Result<(), (String, String)> + Send + Sync>;

/// The control plane's handle of one running query (see the module's documentation).
pub struct Control {
    name: String,
    /// Called once each, in order, when the query starts running.
    on_running: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    file: Option<String>,
    started_ms: i64,
    validate: Validator,
    /// Held while a change is validated and sent, so that changes are validated in the
    /// order they are applied, each after the ones before it.
    sending: Mutex<()>,
    stop: Mutex<Option<Arc<AtomicBool>>>,
    inner: Mutex<Inner>,
    changed: Condvar,
    /// How long `set` waits for a change to reach every instance before it answers that
    /// the change is still on its way.
    deadline: std::time::Duration,
    /// In a cluster's executor: where the instances' reports (a change applied, an input
    /// ended) also go, for the control plane at the coordinator.
    forward: Mutex<Option<crossbeam_channel::Sender<crate::protocol::Event>>>,
    /// What stops the query where its sources are not this process's (a cluster's: the
    /// coordinator tells the executors); `Err` says why it cannot stop now.
    stopper: Mutex<Option<Stopper>>,
    /// What its autoscaler did, when it runs one.
    autoscale: Mutex<Option<crate::autoscaler::AutoscaleReport>>,
    /// Why a live `pipeline` change is refused, where the run cannot split its tasks.
    pipelining_refused: Mutex<Option<String>>,
    /// Operators whose live `pipeline` change is refused, and why.
    pipelining_refused_for: Mutex<BTreeMap<String, String>>,
    /// Per rescalable operator, whether it can get instances beyond those that run it.
    growth: Mutex<BTreeMap<String, growth::Growing>>,
    /// Where instances added while running need room (a cluster's slots): see
    /// [`Control::grow_within`].
    room: Mutex<Option<growth::Room>>,
    /// What makes workers that run nothing of the query ready to take instances (see
    /// [`Control::prepare_growth_with`]).
    prepare: Mutex<Option<growth::Prepare>>,
    /// Told every barrier sent (see [`Control::tell_barriers_to`]).
    barriers_told: Mutex<Option<growth::BarrierSent>>,
    /// A cluster's executor: how its run hears the barriers the coordinator tells it.
    telling: Mutex<growth::Telling>,
    /// Where each applied change is kept durable, if anywhere.
    recorder: Mutex<Option<Arc<Recorder>>>,
    /// Where each change every instance switched to is published (the run's engine events).
    published: Mutex<Option<crate::Events>>,
    /// Given each rescale and live split before its barrier is sent (see
    /// [`Control::record_intents_with`]).
    intent: Mutex<Option<Arc<Recorder>>>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").field("name", &self.name).finish()
    }
}

impl Control {
    /// The handle of query `name` (read from `file`), whose adjustable params start at
    /// `params` (per operator), checked by `validate`.
    pub fn new(
        name: impl Into<String>,
        file: Option<String>,
        params: BTreeMap<String, Vec<ParamInfo>>,
        validate: Validator,
    ) -> Self {
        Self {
            name: name.into(),
            on_running: Mutex::new(Vec::new()),
            file,
            started_ms: now_ms(),
            validate,
            sending: Mutex::new(()),
            stop: Mutex::new(None),
            inner: Mutex::new(Inner {
                state: QueryState::Starting,
                injector: None,
                operators: Vec::new(),
                tasks: Vec::new(),
                topology: TopologyInfo::default(),
                checkpointing: false,
                params,
                next_seq: 1,
                history: History::new(HISTORY_KEPT),
                pending: BTreeMap::new(),
                recording: BTreeMap::new(),
                missed: BTreeMap::new(),
                ended: BTreeSet::new(),
                last_started: 0,
                checkpoints_ended: BTreeMap::new(),
                timeline: std::collections::VecDeque::new(),
                probe: None,
                requested: BTreeMap::new(),
                recovering: None,
                recovered_on_failure: false,
                written: Vec::new(),
            }),
            changed: Condvar::new(),
            deadline: DEFAULT_DEADLINE,
            forward: Mutex::new(None),
            stopper: Mutex::new(None),
            autoscale: Mutex::new(None),
            pipelining_refused: Mutex::new(None),
            pipelining_refused_for: Mutex::new(BTreeMap::new()),
            growth: Mutex::new(BTreeMap::new()),
            room: Mutex::new(None),
            prepare: Mutex::new(None),
            barriers_told: Mutex::new(None),
            telling: Mutex::default(),
            recorder: Mutex::new(None),
            published: Mutex::new(None),
            intent: Mutex::new(None),
        }
    }

    /// Hands each change that moves key groups or splits a chain (`parallelism`, `pipeline`)
    /// to `intent` before the barrier that carries it is sent: a cluster's coordinator
    /// records it in its catalog, so that a coordinator that takes the query over after a
    /// kill knows of it even when the one before died after the executors carried it out
    /// and before it recorded them doing so (it then rolls the query back, as for any
    /// rescale no checkpoint covers).
    pub fn record_intents_with(&self, intent: Arc<Recorder>) {
        *self
            .intent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(intent);
    }

    /// Publishes each change every instance has switched to on `events`
    /// ([`crate::EngineEvent::ParamChanged`]: the events file, the API's event stream).
    pub fn publish_changes_to(&self, events: crate::Events) {
        *self
            .published
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(events);
    }

    /// Hands each change every instance has switched to to `recorder` before the history
    /// takes it and `set` answers: a cluster's coordinator records it in its catalog, so that
    /// an acknowledged change survives the coordinator and a rollback.
    pub fn record_changes_with(&self, recorder: Arc<Recorder>) {
        *self
            .recorder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(recorder);
    }

    /// `stop` asks `stopper` to stop the query (a cluster's coordinator tells its executors
    /// to stop their sources), rather than the run's own flag; its `Err` is the reason the
    /// answer gives.
    pub fn stop_with(&self, stopper: Stopper) {
        *self
            .stopper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(stopper);
    }

    /// Also sends the instances' reports (a change applied at a barrier, an operator's input
    /// ended) on `to`: an executor's part of a cluster's query tells the control plane at the
    /// coordinator through its checkpoint events.
    pub fn forward_reports(&self, to: crossbeam_channel::Sender<crate::protocol::Event>) {
        *self
            .forward
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(to);
    }

    fn report(&self, event: crate::protocol::Event) {
        let forward = self
            .forward
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(tx) = forward.as_ref() {
            let _ = tx.send(event);
        }
    }

    /// Calls `f` once, when the query starts running (every operator built and restored),
    /// after those given before: `anduin run` announces its API then, so that a query that
    /// cannot start says only why. `f` must not wait for the query (it runs on the thread
    /// that starts it).
    pub fn when_running(&self, f: impl FnOnce() + Send + 'static) {
        self.on_running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Box::new(f));
    }

    /// This handle, with `set` waiting at most `deadline` for a change to be applied.
    pub fn with_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The query's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the query is and where it stands.
    pub fn info(&self) -> QueryInfo {
        let inner = self.lock();
        QueryInfo {
            name: self.name.clone(),
            file: self.file.clone(),
            started_ms: self.started_ms,
            state: inner.shown_state(),
            checkpointing: inner.checkpointing,
            operators: inner.operators.clone(),
            tasks: inner.tasks.clone(),
            written: inner.written.clone(),
        }
    }

    /// The query as written, when rules reshaped it before it ran: the API and the web UI
    /// show it beside the query as it runs.
    pub fn as_written(&self, operators: Vec<crate::control::WrittenOperator>) {
        self.lock().written = operators;
    }

    /// Where the query's instances run and how its tasks feed each other (empty until it
    /// runs).
    pub fn topology(&self) -> TopologyInfo {
        self.lock().topology.clone()
    }

    /// The instances `moved` gives a worker for (by their number in the run) run there now
    /// (a cluster restored their part on it).
    pub fn instances_moved(&self, moved: impl Fn(usize) -> Option<u32>) {
        let mut inner = self.lock();
        let topology = &mut inner.topology;
        for i in topology
            .tasks
            .iter_mut()
            .flat_map(|t| t.instances.iter_mut())
        {
            if let Some(w) = moved(i.id) {
                i.worker = w;
            }
        }
        let mut workers: Vec<u32> = topology
            .tasks
            .iter()
            .flat_map(|t| t.instances.iter().map(|i| i.worker))
            .collect();
        workers.sort_unstable();
        workers.dedup();
        topology.workers = workers;
    }

    /// The adjustable params of `operator` with their current values.
    pub fn params(&self, operator: &str) -> Result<Vec<ParamInfo>, ControlFailure> {
        let inner = self.lock();
        if let Some(p) = inner.params.get(operator) {
            return Ok(p.clone());
        }
        if inner.operators.iter().any(|o| o.name == operator) {
            return Ok(Vec::new());
        }
        Err(self.unknown_operator(&inner, operator))
    }

    /// The changes applied so far (restored ones included), oldest first: the last
    /// thousand; a resumed run's history starts with the latest change of each param that its
    /// checkpoint recorded.
    pub fn history(&self) -> Vec<ChangeRecord> {
        self.lock().history.recent().to_vec()
    }

    /// Keeps every change of `param` of `operator` in manifests (a writer's paths: a resumed
    /// run must still know every output the writer had), not only the latest.
    pub fn keep_every_change(&self, operator: &str, param: &str) {
        self.lock().history.keep_every_change(operator, param);
    }

    /// How many changes were applied in this run or restored.
    pub fn changes(&self) -> u64 {
        self.lock().history.total()
    }

    /// Asks the query to stop (as Ctrl-C does): with checkpoints, a last one is taken so that
    /// it resumes there.
    pub fn stop(&self) -> Result<(), ControlFailure> {
        let state = {
            let inner = self.lock();
            if inner.state.ended() {
                return Err(self.not_running_now(&inner, "it cannot be stopped"));
            }
            inner.state
        };
        let stopper = self
            .stopper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(stopper) = stopper {
            stopper().map_err(|(state, what)| ControlFailure::NotRunning {
                query: self.name.clone(),
                state,
                what,
            })?;
            self.lock().state = QueryState::Stopping;
            return Ok(());
        }
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match stop.as_ref() {
            Some(flag) => {
                flag.store(true, Ordering::SeqCst);
                self.lock().state = QueryState::Stopping;
                Ok(())
            }
            None => Err(self.not_running(state, "it cannot be stopped yet")),
        }
    }

    /// Validates `request` and applies it at a consistent point; returns the change as the
    /// history records it once every instance of the operator has switched.
    pub fn set(&self, request: ChangeRequest) -> Result<ChangeRecord, ControlFailure> {
        {
            let inner = self.lock();
            if !inner.operators.iter().any(|o| o.name == request.operator) {
                return Err(self.unknown_operator(&inner, &request.operator));
            }
        }
        let seq = {
            let _sending = self
                .sending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let earlier = self.requested_of(&request.operator);
            let mut onto = Onto::default();
            if request.param == crate::rescale::PARALLELISM {
                onto = self.check_rescale(&request, &earlier)?;
            } else if request.param == crate::pipelining::PIPELINE {
                self.check_pipeline(&request, &earlier)?;
            } else {
                (self.validate)(&request, &earlier).map_err(|e| self.with_own_params(e))?;
                self.check_not_current(&request, &earlier)?;
            }
            // Workers that run nothing of the query yet, where the instances it adds go.
            let onto = self
                .prepare_onto(&onto)
                .map_err(|why| ControlFailure::Invalid {
                    operator: request.operator.clone(),
                    param: request.param.clone(),
                    message: format!(
                        "{:?} is more than the instances that run \"{}\" and the workers that run it or read its output have room for, and no other worker could be made ready to take the rest: {why}",
                        request.value, request.operator
                    ),
                })?;
            self.inject(&request, onto)?
        };
        let until = std::time::Instant::now() + self.deadline;
        let mut inner = self.lock();
        loop {
            if let Some(record) = inner.history.find(seq) {
                return Ok(record.clone());
            }
            if inner.missed.remove(&seq).is_some() {
                return Err(self.not_running(
                    QueryState::Running,
                    &format!(
                        "every instance of operator \"{}\" ended its input before the change reached it; nothing changed",
                        request.operator
                    ),
                ));
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(ControlFailure::NotYetApplied {
                    query: self.name.clone(),
                    seq,
                    operator: request.operator.clone(),
                    waited_s: self.deadline.as_secs_f64(),
                });
            }
            // Ended, and not waiting for the coordinator to say why (soon).
            if inner.state.ended()
                && !inner.recording.contains_key(&seq)
                && !inner.awaiting_recovery()
            {
                let state = inner.state;
                inner.pending.remove(&seq);
                if let Some(why) = inner.recovering.clone() {
                    return Err(self.cut_short(&request, &why));
                }
                return Err(self.not_running(
                    state,
                    "it ended before the change reached every instance of the operator",
                ));
            }
            inner = self
                .changed
                .wait_timeout(inner, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// A refusal of a param that cannot change, whose list of those that can also names the
    /// params the control plane changes itself (`parallelism`, of an operator rescaled while
    /// it runs): the validator knows only those of the operator's type.
    fn with_own_params(&self, failure: ControlFailure) -> ControlFailure {
        let ControlFailure::NotAdjustable {
            operator,
            param,
            mut can,
            exists,
            ..
        } = failure
        else {
            return failure;
        };
        let listed: Vec<String> = self
            .lock()
            .params
            .get(&operator)
            .map(|ps| ps.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default();
        for name in listed {
            if !can.contains(&name) {
                can.push(name);
            }
        }
        ControlFailure::not_adjustable(&operator, &param, can, exists)
    }

    /// Checks a rescale: the operator can be rescaled while it runs, to between 1 and the
    /// instances that run it, and to another number than it has (`earlier`: the values asked
    /// for so far); `Ok`: the workers that run nothing of the query the instances it adds
    /// need (see [`Room`]).
    fn check_rescale(
        &self,
        request: &ChangeRequest,
        earlier: &BTreeMap<String, String>,
    ) -> Result<Onto, ControlFailure> {
        let (max, rescalable, now) = {
            let inner = self.lock();
            let now = earlier
                .get(&request.param)
                .cloned()
                .unwrap_or_else(|| current_value(&inner.params, &request.operator, &request.param));
            let max = inner
                .operators
                .iter()
                .find(|o| o.name == request.operator)
                .and_then(|o| o.max_parallelism);
            let rescalable: Vec<String> = inner
                .operators
                .iter()
                .filter(|o| o.max_parallelism.is_some())
                .map(|o| o.name.clone())
                .collect();
            (max, rescalable, now)
        };
        let invalid = |message: String| ControlFailure::Invalid {
            operator: request.operator.clone(),
            param: request.param.clone(),
            message,
        };
        let Some(max) = max else {
            if !rescalable.is_empty() {
                // The query runs spare instances: this operator is not one that splits by key.
                return Err(invalid(format!(
                    "operator \"{}\" cannot be rescaled while it runs: it does not split its \
                     input by key (a window or GROUP BY without keys, a pattern without \
                     partition_by, an operator without keyed state, a pattern that spreads its \
                     partial matches over copies); the operators of this query that can be: {}",
                    request.operator,
                    rescalable.join(", ")
                )));
            }
            return Err(invalid(format!(
                "operator \"{}\" cannot be rescaled while it runs: only an operator that splits \
                 its input by key (a keyed window, a join, a pattern with partition_by, a GROUP \
                 BY) can, and only when the query runs spare instances of it (started with \
                 --max-parallelism N); a pattern that spreads its partial matches over copies \
                 (overflow_instances) is never rescaled while it runs (instance i of each copy \
                 hands to instance i of the next): change its `parallelism` and resume from a \
                 checkpoint",
                request.operator
            )));
        };
        let parsed = request
            .value
            .parse::<usize>()
            .ok()
            // Written plainly (`3`, not `03`, `+3` or ` 3`): the history keeps it as written.
            .filter(|n| n.to_string() == request.value);
        if let Some(n) = parsed.filter(|n| *n > growth::MOST_INSTANCES) {
            return Err(invalid(format!(
                "{n} is more instances than \"{}\" can have: at most {} (one key group each)",
                request.operator,
                growth::MOST_INSTANCES
            )));
        }
        // A rescale beyond them while another is on its way waits for it, whatever room there
        // is (the room of the one on its way is not counted yet).
        let beyond = parsed.is_some_and(|n| n > max) && self.grows_at_all(&request.operator);
        if let Some(why) = self.rescale_on_its_way(&request.operator, beyond) {
            return Err(invalid(why));
        }
        // Beyond the instances that run it: new instances start at the barrier (`crate::grow`).
        let grows = parsed
            .filter(|n| *n > max)
            .and_then(|n| self.may_grow(&request.operator, n));
        if let Some(Err(why)) = &grows {
            return Err(invalid(format!(
                "{:?} is more than the {max} instances that run \"{}\", and it cannot get \
                 more instances while it runs: {why}",
                request.value, request.operator
            )));
        }
        match parsed {
            Some(n) if (n >= 1 && (n <= max || grows.is_some())) => {
                if request.value == now {
                    // Nothing would move: no barrier, no history entry, no checkpoint.
                    return Err(invalid(format!(
                        "operator \"{}\" has {now} instance(s) owning its key groups already \
                         (or they were asked for last); nothing to change",
                        request.operator
                    )));
                }
                Ok(match grows {
                    Some(Ok(onto)) => onto,
                    _ => Onto::default(),
                })
            }
            _ if self.grows_at_all(&request.operator) => Err(invalid(format!(
                "{:?} is not a number of instances between 1 and {} (one key group each; \
                 instances beyond the {max} that run \"{}\" start while it runs)",
                request.value,
                growth::MOST_INSTANCES,
                request.operator
            ))),
            _ => Err(invalid(format!(
                "{:?} is not a number of instances between 1 and {max} (the query runs {max} \
                 instances of \"{}\"; start it with a larger --max-parallelism to go beyond)",
                request.value, request.operator
            ))),
        }
    }

    /// A change to the value the param has already (or was asked for last) is refused: it
    /// would move nothing, yet take a barrier, a history entry and an event.
    fn check_not_current(
        &self,
        request: &ChangeRequest,
        earlier: &BTreeMap<String, String>,
    ) -> Result<(), ControlFailure> {
        let now = earlier.get(&request.param).cloned().unwrap_or_else(|| {
            current_value(&self.lock().params, &request.operator, &request.param)
        });
        if request.value != now {
            return Ok(());
        }
        Err(ControlFailure::Invalid {
            operator: request.operator.clone(),
            param: request.param.clone(),
            message: format!(
                "{}.{} is {now:?} already (or was asked for last); nothing to change",
                request.operator, request.param
            ),
        })
    }

    /// Why a rescale of `operator` (one beyond its instances: `grows`) must wait, if it must:
    /// a rescale beyond a task's instances builds the new instances from the routes its
    /// neighbours have before its barrier, so it never rides on one barrier with another
    /// rescale.
    fn rescale_on_its_way(&self, operator: &str, grows: bool) -> Option<String> {
        let inner = self.lock();
        let max_of = |op: &str| {
            inner
                .operators
                .iter()
                .find(|o| o.name == op)
                .and_then(|o| o.max_parallelism)
        };
        let on_its_way = inner.pending.values().map(|p| &p.record).find(|r| {
            let growth = r
                .new
                .parse::<usize>()
                .ok()
                .zip(max_of(&r.operator))
                .is_some_and(|(n, max)| n > max);
            r.param == crate::rescale::PARALLELISM && (grows || growth)
        })?;
        Some(format!(
            "change #{} (`{}` of \"{}\" to {}) is on its way, and a rescale beyond the \
             instances that run an operator goes alone: ask for this rescale of \"{operator}\" \
             again once that one is applied",
            on_its_way.seq, on_its_way.param, on_its_way.operator, on_its_way.new
        ))
    }

    /// The values that the changes sent so far (in this run, or recorded by the checkpoint it
    /// resumed from) gave the params of `operator`: param → the last one (a live split's
    /// `pipeline` too, which is not among the operator's params).
    pub fn requested_of(&self, operator: &str) -> BTreeMap<String, String> {
        let inner = self.lock();
        inner
            .requested
            .iter()
            .filter(|((o, _), _)| o == operator)
            .map(|((_, p), v)| (p.clone(), v.clone()))
            .collect()
    }

    /// Registers `request` as pending and sends it towards the sources.
    fn inject(&self, request: &ChangeRequest, onto: Vec<u32>) -> Result<u64, ControlFailure> {
        let mut inner = self.lock();
        if inner.state != QueryState::Running {
            return Err(self.not_running_now(&inner, "its params cannot be changed now"));
        }
        let parallelism = inner
            .operators
            .iter()
            .find(|o| o.name == request.operator)
            .map_or(1, |o| o.parallelism);
        let waiting: BTreeSet<usize> = (0..parallelism)
            .filter(|i| !inner.ended.contains(&(request.operator.clone(), *i)))
            .collect();
        if waiting.is_empty() {
            return Err(self.not_running(
                QueryState::Running,
                &format!(
                    "every instance of operator \"{}\" has ended its input; nothing is left to change",
                    request.operator
                ),
            ));
        }
        let seq = inner.next_seq;
        // Changes of one param are applied in the order they are sent: this one's old value
        // is the last one asked for.
        let key = (request.operator.clone(), request.param.clone());
        let old = inner
            .requested
            .get(&key)
            .cloned()
            .unwrap_or_else(|| current_value(&inner.params, &request.operator, &request.param));
        let update = ControlUpdate {
            seq,
            operator: request.operator.clone(),
            param: request.param.clone(),
            value: request.value.clone(),
            onto,
        };
        let record = ChangeRecord {
            seq,
            time_ms: 0,
            epoch: 0,
            operator: request.operator.clone(),
            param: request.param.clone(),
            old,
            new: request.value.clone(),
            from: request.from.clone(),
        };
        // A change that moves key groups or splits a chain is recorded before its barrier is
        // sent (a cluster's catalog): a coordinator killed after the executors carried it out
        // and before it recorded them doing so must not be succeeded by one that knows
        // nothing of it (its checkpoints would record the plan from before).
        let structural = request.param == crate::rescale::PARALLELISM
            || request.param == crate::pipelining::PIPELINE;
        let intent = structural
            .then(|| {
                self.intent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            })
            .flatten();
        let reserved = intent.is_some();
        if let Some(intent) = intent {
            // The number is kept for this change while the lock is let go.
            inner.next_seq += 1;
            drop(inner);
            intent(&record);
            inner = self.lock();
            if inner.state != QueryState::Running {
                let state = inner.state;
                return Err(self.not_running(state, "its params cannot be changed now"));
            }
        }
        let sent = match inner.injector.as_mut() {
            Some(Injector::Coordinator(events)) => {
                events.send(Event::Control(vec![update])).is_ok()
            }
            Some(Injector::Direct {
                sources,
                next_epoch,
            }) => {
                let epoch = Epoch(*next_epoch);
                *next_epoch += 1;
                let mut any = false;
                for s in sources.iter() {
                    let cmd = Command::Control {
                        epoch,
                        control: vec![update.clone()],
                    };
                    any |= s.send(cmd).is_ok();
                }
                any
            }
            None => false,
        };
        if !sent {
            return Err(self.not_running(
                QueryState::Running,
                "its sources have ended; nothing is left to change",
            ));
        }
        if !reserved {
            inner.next_seq += 1;
        }
        inner.requested.insert(key, request.value.clone());
        inner.pending.insert(
            seq,
            Pending {
                record,
                waiting,
                epoch: None,
            },
        );
        Ok(seq)
    }

    fn unknown_operator(&self, inner: &Inner, operator: &str) -> ControlFailure {
        let names: Vec<&str> = inner.operators.iter().map(|o| o.name.as_str()).collect();
        if names.is_empty() {
            // Its operators are listed once it runs (a run restoring its checkpoint has none
            // yet).
            return ControlFailure::UnknownOperator {
                query: self.name.clone(),
                operator: operator.to_string(),
                hint: " yet: the query is still starting (its operators are known once it \
                       runs); try again in a moment"
                    .to_string(),
            };
        }
        let suggestion = anduin_types::did_you_mean(operator, names.iter().copied());
        ControlFailure::UnknownOperator {
            query: self.name.clone(),
            operator: operator.to_string(),
            hint: format!("{suggestion}; its operators are {}", names.join(", ")),
        }
    }

    /// `request` was cut short by `why`, which ended the run, and the query is being
    /// recovered without it.
    fn cut_short(&self, request: &ChangeRequest, why: &str) -> ControlFailure {
        let change = if request.param == crate::rescale::PARALLELISM {
            format!("the rescale of operator \"{}\"", request.operator)
        } else {
            format!("the change of {}.{}", request.operator, request.param)
        };
        ControlFailure::NotRunning {
            query: self.name.clone(),
            state: "recovering".to_string(),
            what: format!(
                "{change} was cut short before it reached every instance of the operator \
                 ({why}); the query is being recovered from its last checkpoint without it: ask \
                 again once the query runs"
            ),
        }
    }

    /// Why a request finds the query not running (`inner`: its state): an attempt that failed
    /// and is being recovered by another (a cluster's rollback) says so, not that it failed.
    fn not_running_now(&self, inner: &Inner, what: &str) -> ControlFailure {
        let why = inner
            .recovering
            .as_deref()
            .or(inner.awaiting_recovery().then_some("its attempt failed"));
        match why {
            Some(why) if inner.state.ended() => ControlFailure::NotRunning {
                query: self.name.clone(),
                state: "recovering".to_string(),
                what: format!(
                    "{why}; the query is being recovered from its last checkpoint: ask again \
                     once it runs ({what})"
                ),
            },
            _ => self.not_running(inner.state, what),
        }
    }

    fn not_running(&self, state: QueryState, what: &str) -> ControlFailure {
        ControlFailure::NotRunning {
            query: self.name.clone(),
            state: state_words(state).to_string(),
            what: what.to_string(),
        }
    }
}

fn current_value(params: &BTreeMap<String, Vec<ParamInfo>>, operator: &str, param: &str) -> String {
    params
        .get(operator)
        .and_then(|ps| ps.iter().find(|p| p.name == param))
        .map(|p| p.value.clone())
        .unwrap_or_default()
}

fn set_current(
    params: &mut BTreeMap<String, Vec<ParamInfo>>,
    operator: &str,
    param: &str,
    value: &str,
) {
    if let Some(p) = params
        .get_mut(operator)
        .and_then(|ps| ps.iter_mut().find(|p| p.name == param))
    {
        p.value = value.to_string();
    }
}

fn state_words(state: QueryState) -> &'static str {
    match state {
        QueryState::Starting => "starting",
        QueryState::Running => "running",
        QueryState::Stopping => "stopping",
        QueryState::Finished => "finished",
        QueryState::Failed => "failed",
        QueryState::Recovering => "recovering",
        QueryState::Cancelled => "cancelled",
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
