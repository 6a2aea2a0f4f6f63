//! The coordinator process (the paper's query scheduler): workers register with it and
//! heartbeat; clients submit, inspect and cancel queries; each query is driven through its
//! attempts by a driver thread of its own ([`super::driver`]). One thread per connection.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use anduin_api::{ApiConfig, ApiServer, Registry};
use anduin_coordinator::catalog::{
    Catalog, CatalogFence, CatalogOptions, Edit, Fenced, QuerySettings, QuerySource,
};
use anduin_coordinator::life::{step, Action, Input, LifeEvent, QueryLife, QueryState};
use anduin_coordinator::{QueryId, WorkerId};

use super::driver::{self, Attempt};
use super::life_events::LifeEvents;
use super::proto::{self, QueryStatus, Reply, Submission, ToCoordinator, ToWorker};
use super::restarts::{RestartPolicy, Restarts};
use super::scheduler::{self, Processes, Scheduler, Static};
use super::secret::{check_listen, SecretArgs};
use super::silence::{silent_parts, PartFacts, Stuck};
use super::store::ClusterStore;
use crate::embedded::parse_duration;

/// Arguments of `anduin coordinator`.
#[derive(Args, Debug)]
pub struct CoordinatorArgs {
    /// Where workers, executors and clients reach the coordinator (port 0: one the system
    /// chooses).
    #[arg(long, default_value = "127.0.0.1:7400", value_name = "HOST:PORT")]
    pub listen: SocketAddr,
    /// Where the coordinator keeps the queries submitted to it.
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Where every query's checkpoints go (query Q's under `Q`): a directory every worker
    /// reaches at the same path (a shared file system), `file:///path`, or
    /// `s3://bucket/prefix`, any S3-compatible store, reached with AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_REGION and, for another store than AWS's,
    /// AWS_ENDPOINT_URL — by the coordinator and by every worker's executors, each from its
    /// own environment.
    #[arg(long, value_name = "DIR|URL")]
    pub checkpoint_store: String,
    /// A worker not heard from for this long is dead: its queries recover on the others.
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub heartbeat_timeout: Duration,
    /// An executor none of whose live figures (sent every second) came for this long, while
    /// its worker heartbeats on, is stuck (stopped, wedged): its worker kills it and its part
    /// is restored alone (or the query rolls back). At least 3s.
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub executor_timeout: Duration,
    /// Write the address the coordinator listens on to this file once it listens (for
    /// scripts and `anduin cluster`, with `--listen 127.0.0.1:0`).
    #[arg(long, value_name = "FILE")]
    pub address_file: Option<PathBuf>,
    /// Serve the HTTP API of the coordinator's queries (`anduin ctl --api URL …`: params,
    /// changes, history, checkpoint now) on this address; port 0: a free one. Its URL is
    /// printed and written to `STATE_DIR/api.url`. Beyond loopback it needs a token.
    #[arg(long, default_value = "127.0.0.1:0", value_parser = crate::api::parse_listen, value_name = "ADDR")]
    pub api: SocketAddr,
    /// Require this bearer token (the file's first line) on every API request (or
    /// ANDUIN_API_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Roll the whole query back to its last checkpoint on every failure (Flink's full
    /// restart). By default a dead worker's task instances, or a failed executor's, are
    /// restored alone on other workers while the rest of the query runs on (their producers
    /// replay from their upstream backups), and the whole query rolls back only when that
    /// cannot apply.
    #[arg(long)]
    pub no_per_task_recovery: bool,
    /// Per-task recovery, the default (kept for the scripts that asked for it).
    #[arg(long, hide = true, conflicts_with = "no_per_task_recovery")]
    pub per_task_recovery: bool,
    /// A query whose attempts fail this many times in a row, none of them completing a
    /// checkpoint, is failed (an attempt that completed one starts the count again).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub restart_attempts: u32,
    /// The wait before a failed query's next attempt, doubled after each further failure in
    /// a row (Flink's exponential-delay restart strategy); 0s: none.
    #[arg(long, default_value = "500ms", value_parser = parse_duration, value_name = "DURATION")]
    pub restart_backoff: Duration,
    /// The longest wait between two attempts (never shorter than --restart-backoff).
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub restart_max_backoff: Duration,
    /// Where workers come from: `static`, workers started elsewhere register themselves
    /// (`anduin worker --coordinator …`); `process`, the coordinator starts --workers worker
    /// processes on this machine and starts a worker again once it is declared dead;
    /// `kubernetes`, it keeps --workers worker pods (the --kube-* flags) and replaces a pod
    /// that ended or whose worker it declared dead.
    #[arg(long, value_enum, default_value = "static", value_name = "KIND")]
    pub scheduler: SchedulerKind,
    /// With `--scheduler process` or `kubernetes`: how many workers (processes, pods).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// With `--scheduler process` or `kubernetes`: the slots of each worker (default 4).
    #[arg(long, value_name = "N")]
    pub slots: Option<u32>,
    /// With `--scheduler process` or `kubernetes`: how many workers (processes, pods) it may
    /// start in all (default: --workers) when instances added to a running query (`anduin
    /// ctl scale` beyond its --max-parallelism) find no free slot on the workers there are;
    /// those it starts so are given back (the last first) once a scale-down retired what
    /// ran there and no query runs a part on them, or when the coordinator stops.
    #[arg(long, value_name = "N")]
    pub max_workers: Option<u32>,
    /// With `--scheduler process`: the workers end with the coordinator however it ends (for
    /// `anduin cluster`, whose coordinator is its own).
    #[arg(long, hide = true)]
    pub workers_die_with_coordinator: bool,
    /// Testing: a leader elected by a lease never steps down by its clock or a lost lease
    /// (only a fence stops it: the catalog in the object store, the checkpoint commit's check).
    #[arg(long, hide = true)]
    pub inject_no_step_down: bool,
    /// Testing: exit at once, as a SIGKILL would leave things, right after this step.
    #[arg(long, hide = true, value_enum, value_name = "STEP")]
    pub inject_exit_after: Option<ExitPoint>,
    /// Testing: the catalog's write of this edit fails (as on a full disk).
    #[arg(long, hide = true, value_enum, value_name = "EDIT")]
    pub inject_catalog_failure_at: Option<FailingEdit>,
    /// Testing: the catalog's write of the first completed checkpoint takes this long (as a
    /// slow object store tried again), the coordinator's state held meanwhile.
    #[arg(long, hide = true, value_parser = parse_duration, value_name = "DURATION")]
    pub inject_catalog_stall: Option<Duration>,
    /// Testing: per-task recovery, once it has chosen to restore lost parts alone and the
    /// checkpoint coordinator has named the checkpoint they restore from, holds (at most a
    /// minute) until a source of the attempt reports the end of its input: the window in
    /// which a lost part that was only slow or paused reports its end before it is restored.
    #[arg(long, hide = true)]
    pub inject_hold_restore: bool,
    /// Several coordinators, one leading: `etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`, the
    /// one that holds the election key under a lease of etcd leads (coordinators on several
    /// machines); `redlock://HOST:PORT,HOST:PORT,HOST:PORT[/PREFIX]`, the one that holds the
    /// lock on a majority of these independent Redis servers;
    /// `kubernetes://[NAMESPACE/]NAME`, the one that holds this Kubernetes Lease (the API
    /// reached as with --kube-api, --kube-token-file, --kube-ca-file, in a pod its service
    /// account's); `file:///PATH`, the one that holds the lock on PATH (coordinators on one
    /// machine, or on a file system whose locks all see). The others stand by, refusing
    /// connections, and one takes over when the leader's lease or process ends. Every
    /// coordinator of the cluster gets the same --checkpoint-store and election, and the
    /// same --state-dir unless its catalog is in an object store (elected by a lease, with
    /// s3://); workers and clients get all their addresses (`--coordinator a:7400,b:7400`).
    #[arg(long, value_parser = super::leadership::parse_election, value_name = "URL")]
    pub leader_election: Option<super::leadership::Election>,
    /// The leader's lease with etcd or a Kubernetes Lease (whole seconds) or its Redlock
    /// lock's expiry: a standby
    /// takes over within about this long after the leader died; a leader that cannot renew
    /// it steps down (exits with status 75) before it ends.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_lease: Duration,
    #[command(flatten)]
    pub kube: super::kubernetes::KubeArgs,
    #[command(flatten)]
    pub secret: SecretArgs,
}

/// `--scheduler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchedulerKind {
    /// Workers register themselves.
    Static,
    /// The coordinator starts and keeps local worker processes.
    Process,
    /// The coordinator keeps worker pods through the Kubernetes API.
    Kubernetes,
}

/// Where a coordinator under test exits by itself (`--inject-exit-after`): the steps between
/// which a kill lands too rarely for a test to aim at by timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExitPoint {
    /// Per-task recovery recorded where a lost part goes, and sent nothing yet.
    PartRestored,
    /// A worker's report that a part ended read, and nothing done with it: as a kill that
    /// lands after the worker wrote the report and before the coordinator read it.
    PartEndRead,
    /// A worker's report that a part ended noted (recorded in the catalog) and answered
    /// with `EndNoted`, so that the worker forgets it.
    PartEndNoted,
    /// A checkpoint given up (and recorded so in the catalog), its files removed, and
    /// nothing begun after it.
    CheckpointGivenUp,
    /// A param change applied by every instance and recorded in the catalog, before `ctl
    /// set` is answered and before the checkpoint whose barrier carried it completes.
    ParameterRecorded,
    /// A param change every instance has switched to, before the catalog records it so: as
    /// a kill that lands after the executors carried out a change (a rescale: its key groups
    /// moved) and before the coordinator recorded them doing so.
    ChangeSettled,
    /// A cancel recorded in the catalog and answered, before anything acts on it.
    CancelAnswered,
    /// A submission recorded in the catalog, before it is answered or started.
    SubmissionRecorded,
    /// Every source reported that it took the last checkpoint's barrier (and ends), before
    /// that checkpoint completed: as a kill that lands while the last checkpoint is in
    /// flight, which the next coordinator must complete.
    LastBarrierTaken,
    /// Every acknowledgement of the last checkpoint read and every part's executor, its part
    /// ended, waiting for leave to end, before that checkpoint's manifest is written: as a
    /// kill that lands between reading the last acknowledgements and completing the last
    /// checkpoint, which the next coordinator must complete from the executors' facts.
    LastCheckpointAwaited,
    /// A checkpoint's manifest written, before the catalog records it complete: as a kill
    /// that lands between the two, after which the store is newer than the catalog.
    CheckpointWritten,
}

/// The lock file a coordinator holds in its checkpoint directory.
const STORE_LOCK: &str = "COORDINATOR.LOCK";

/// Which edit's write fails under `--inject-catalog-failure-at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailingEdit {
    /// The first part end a worker reports.
    PartEnded,
    /// The first completed checkpoint.
    CheckpointCompleted,
}

impl FailingEdit {
    fn is(self, edit: &Edit) -> bool {
        matches!(
            (self, edit),
            (FailingEdit::PartEnded, Edit::PartEnded { .. })
                | (
                    FailingEdit::CheckpointCompleted,
                    Edit::CheckpointCompleted { .. }
                )
        )
    }
}

/// What the coordinator does when its catalog did not take an edit.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterFailedEdit {
    /// The edit did not apply and nothing was written: the catalog and the coordinator's
    /// memory still agree. Logged; the coordinator goes on.
    GoOn,
    /// A write failed (or the catalog is poisoned by an earlier one): what a restarted
    /// coordinator would read is not what this one knows, and acting on it (telling a worker
    /// a part's end is noted, deploying, restoring) could make a restart run a part twice.
    /// The coordinator stops, as a kill would; started again, it reads the truth from its
    /// files and takes its queries over.
    Stop,
    /// A later leader took the catalog over (in an object store, where the edit's place was
    /// taken): this coordinator no longer leads, and steps down.
    StepDown,
}

/// The decision for a failed catalog edit.
pub fn after_failed_edit(e: &anduin_coordinator::catalog::CatalogError) -> AfterFailedEdit {
    use anduin_coordinator::catalog::{CatalogError, EditRefused};
    match e {
        CatalogError::Superseded { .. }
        | CatalogError::Refused(EditRefused::TermNotAfter { .. }) => AfterFailedEdit::StepDown,
        CatalogError::Refused(_) => AfterFailedEdit::GoOn,
        _ => AfterFailedEdit::Stop,
    }
}

/// The shortest `--executor-timeout`.
pub const MIN_EXECUTOR_TIMEOUT: Duration = Duration::from_secs(3);

/// The shortest `--heartbeat-timeout`.
pub const MIN_HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(100);

/// The exit code of a coordinator stopped by a catalog it cannot write (EX_IOERR).
pub const CATALOG_FAILED_EXIT: i32 = 74;

/// A registered worker.
pub struct WorkerEntry {
    pub name: String,
    pub slots: u32,
    /// Its connection, while it has one.
    pub to: Option<proto::Sender>,
    pub last_seen: Instant,
    pub link: Link,
}

/// Whether a worker is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Connected and heartbeating.
    Alive,
    /// Known from the catalog of a coordinator that restarted: it may reconnect (its parts
    /// keep running meanwhile) until the heartbeat timeout passes.
    Awaited,
    /// Gone: its parts are lost.
    Dead,
}

impl WorkerEntry {
    pub fn alive(&self) -> bool {
        self.link == Link::Alive
    }

    /// Sends `msg` if connected.
    pub fn send<T: serde::Serialize>(&self, msg: &T) {
        if let Some(to) = &self.to {
            let _ = to.send(msg);
        }
    }
}

/// A query the coordinator knows.
pub struct QueryEntry {
    pub submission: Submission,
    /// Where it is in its life: the pure state machine every fact about it goes through.
    pub life: QueryLife,
    pub status: QueryStatus,
    pub cancel: bool,
    /// A clean stop (`ctl stop`) was accepted: an attempt that rolls back as a whole before
    /// it ends stops again as soon as the next one runs.
    pub stop_asked: bool,
    /// The current attempt's state, while one runs.
    pub attempt: Option<Attempt>,
    /// Its failures since its last progress.
    pub restarts: Restarts,
    /// When its next attempt starts, while it waits for it after a failure.
    pub next_attempt: Option<Instant>,
}

/// Everything the coordinator knows, behind one lock; `changed` wakes the drivers.
pub struct Cluster {
    pub addr: SocketAddr,
    pub state_dir: PathBuf,
    /// Where the queries' checkpoints go.
    pub store: ClusterStore,
    /// With the catalog in the object store: asked before each checkpoint is completed.
    pub fence: Option<CatalogFence>,
    /// The queries' life events and the acts a fence refused (also the state's).
    pub events: Arc<LifeEvents>,
    pub heartbeat_timeout: Duration,
    /// `--executor-timeout`.
    pub executor_timeout: Duration,
    state: Mutex<State>,
    pub changed: Condvar,
    /// When this coordinator started: workers known from its catalog may reconnect until
    /// a heartbeat timeout after it.
    pub started: Instant,
    /// The cluster's secret, which every peer proves it knows.
    pub secret: Option<Arc<[u8]>>,
    /// The queries the HTTP API serves (each attempt's control plane).
    pub api: Registry,
    /// A dead worker's instances are restored alone (unless `--no-per-task-recovery`).
    pub per_task_recovery: bool,
    /// When a failed query is attempted again (`--restart-*`).
    pub restart: RestartPolicy,
    /// Held by the submission being accepted.
    pub submitting: Mutex<()>,
    /// Testing: the step after which the coordinator exits by itself.
    pub exit_after: Option<ExitPoint>,
    /// Testing: per-task recovery holds before it restores until a source reports its end
    /// (`--inject-hold-restore`).
    pub hold_restore: bool,
    /// Which workers there are.
    pub scheduler: Mutex<Box<dyn Scheduler>>,
    /// How many growths are preparing parts (starting workers, deploying): a worker the
    /// scheduler added is not given back meanwhile (it may be on its way to one).
    pub growing: std::sync::atomic::AtomicUsize,
    /// The leader's term (`--leader-election`), which workers hold against an older one.
    pub term: Option<u64>,
    /// Elected by a lease: how long workers and executors wait for a word before they leave
    /// this coordinator (it pings four times as often).
    pub silent_after: Option<Duration>,
}

/// How long the workers and executors of a coordinator elected with leases of `lease` wait
/// for a word from it: half the lease (at least a second), so that they have left a paused
/// or cut-off leader before its lease can expire and another lead.
pub fn silent_after(lease: Duration) -> Duration {
    (lease / 2).max(Duration::from_secs(1))
}

/// Pings every worker and executor four times per `silent_after`, for ever. Whom it pings is
/// read from the state when the state is free, and the last list kept while another holds it:
/// a catalog request tried again holds it for seconds, and the workers must not leave a
/// leader that holds its lease for that (a paused leader's pings stop with the process).
fn ping(cluster: &Cluster, silent_after: Duration) {
    let mut workers: Vec<proto::Sender> = Vec::new();
    let mut executors: Vec<proto::Sender> = Vec::new();
    loop {
        std::thread::sleep(silent_after / 4);
        let state = match cluster.state.try_lock() {
            Ok(state) => Some(state),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(state) = state {
            workers = state
                .workers
                .values()
                .filter_map(|w| w.to.clone())
                .collect();
            executors = state
                .queries
                .values()
                .filter_map(|q| q.attempt.as_ref())
                .flat_map(|a| a.executors.values().map(|(to, _)| to.clone()))
                .collect();
        }
        for w in &workers {
            let _ = w.send(&ToWorker::Ping);
        }
        for e in &executors {
            let _ = e.send(&proto::ToExecutor::Ping);
        }
    }
}

pub struct State {
    pub workers: BTreeMap<u32, WorkerEntry>,
    pub queries: BTreeMap<String, QueryEntry>,
    next_worker: u32,
    /// The durable catalog: what a restarted coordinator starts from (also the ends of the
    /// parts its queries' attempts had when it took them over).
    pub catalog: Catalog,
    /// Testing: the edit whose write fails.
    fail_at: Option<FailingEdit>,
    /// Testing: the first completed checkpoint's edit stalls this long.
    stall: Option<Duration>,
    /// Where the queries' life events are appended (`STATE_DIR/events.jsonl`).
    pub life_events: Arc<LifeEvents>,
    /// The workers (by name, and the worker whose name they wait for) refused a held name
    /// so far: said once each, not at every one of their tries.
    held_said: BTreeSet<(String, u32)>,
}

impl State {
    /// Tells query `name`'s life of `input`: its state moves (and the catalog records the new
    /// one), its events are logged; the actions it answers are returned for the driver. An
    /// input the life refuses changes nothing and is logged.
    pub fn feed(&mut self, name: &str, input: &Input) -> Vec<Action> {
        self.try_feed(name, input).unwrap_or_default()
    }

    /// [`State::feed`], saying why when the life refuses `input` (also logged): for a driver
    /// that must not go on as if it had been taken.
    pub fn try_feed(
        &mut self,
        name: &str,
        input: &Input,
    ) -> Result<Vec<Action>, anduin_coordinator::life::Refused> {
        let Some(q) = self.queries.get_mut(name) else {
            return Ok(Vec::new());
        };
        let next = match step(&q.life, input) {
            Ok(next) => next,
            Err(refused) => {
                tracing::warn!(query = name, %refused, "the query's life refused an input");
                return Err(refused);
            }
        };
        // A checkpoint begun or ended is no state to recover: the catalog keeps `running`.
        let running =
            |s: &QueryState| matches!(s, QueryState::Running | QueryState::Checkpointing { .. });
        let moved = next.life.state() != q.life.state()
            && !(running(next.life.state()) && running(q.life.state()));
        q.life = next.life;
        q.status.state = state_name(q.life.state()).into();
        for e in &next.events {
            tracing::info!(query = name, event = ?e, "query life");
            self.life_events.append(name, e);
            if let LifeEvent::WholeQueryRollback { to, why } = e {
                let to =
                    to.map_or_else(|| "the beginning".into(), |e| format!("checkpoint {}", e.0));
                eprintln!("anduin: query {name}: the whole query rolls back to {to} ({why})");
            }
        }
        if moved {
            let state = q.life.state().clone();
            self.record(Edit::StateChanged {
                query: QueryId(name.to_string()),
                state,
            });
        }
        Ok(next.actions)
    }

    /// Appends `edit` to the catalog (fsynced before this returns). An edit the catalog
    /// refuses is logged and the coordinator goes on; a failed write stops the coordinator
    /// ([`after_failed_edit`]) before anything acts on the edit.
    pub fn record(&mut self, edit: Edit) {
        // A leader paused past its lease writes nothing once it runs again.
        super::leadership::act_or_step_down();
        if matches!(edit, Edit::CheckpointCompleted { .. }) {
            if let Some(stall) = self.stall.take() {
                std::thread::sleep(stall);
            }
        }
        if self.fail_at.is_some_and(|f| f.is(&edit)) {
            self.catalog
                .poison("a write failure injected by --inject-catalog-failure-at");
        }
        if let Err(e) = self.catalog.append(edit, Instant::now()) {
            tracing::error!(error = %e, "the coordinator's catalog did not take an edit");
            if after_failed_edit(&e) == AfterFailedEdit::StepDown {
                let term = self.catalog.state().leader_term;
                self.life_events
                    .refused("catalog edit", term, &e.to_string());
                super::leadership::superseded(&e);
            }
            if after_failed_edit(&e) == AfterFailedEdit::Stop {
                let place = self.catalog.location();
                let once = if place.contains("://") {
                    format!("the object store of its catalog, {place}, answers")
                } else {
                    "its --state-dir can be written (space, permissions)".to_string()
                };
                eprintln!(
                    "anduin: the coordinator stops: its catalog did not take an edit ({e}). \
                     Its workers and their executors run on; start the coordinator again once \
                     {once}: it reads its catalog back and takes its queries over."
                );
                std::process::exit(CATALOG_FAILED_EXIT);
            }
            eprintln!("anduin: the coordinator's catalog did not take an edit: {e}");
        }
        if let Err(e) = self.catalog.snapshot_if_due(Instant::now()) {
            tracing::warn!(error = %e, "cannot snapshot the catalog");
        }
    }
}

impl Cluster {
    /// Locks query `name`'s checkpoint directory in a local store as `anduin run` locks its
    /// own (`LOCK` and the directory's `flock`), for as long as this coordinator runs the
    /// query: an `anduin run --checkpoint-dir STORE/NAME` is then refused while it does, and
    /// it runs no attempt while such a run holds the directory (probe48 H2: both ran, and
    /// every row reached a Kafka topic twice). `None` where no such lock applies: an object
    /// store, or a leader elected by a lease (the leader before it, paused, may still hold
    /// the lock; the catalog's fence keeps the two apart).
    pub fn lock_query_dir(
        &self,
        name: &str,
    ) -> Result<Option<anduin_checkpoint::OwnerLock>, anduin_checkpoint::LockError> {
        match &self.store {
            ClusterStore::Shared(_) if self.silent_after.is_none() => {
                anduin_checkpoint::OwnerLock::checkpoint_dir(&self.store.dir(name)).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Query `name`'s checkpoints as this leader begins, deletes and completes them: never by
    /// a leader whose lease may have run out, nor by one a later leader superseded (the
    /// catalog's fence: its objects' leader marks, or the shared state directory's `CURRENT`
    /// pointer) — it would clear or delete a checkpoint the later one committed. A refused
    /// act is written as a typed event, and the leader steps down.
    pub fn committing_store(&self, name: &str) -> Result<anduin_checkpoint::Store> {
        Ok(self
            .store
            .store(name)?
            .with_commit_guard(self.commit_guard()))
    }

    /// The guard of [`Cluster::committing_store`]'s acts.
    pub fn commit_guard(&self) -> anduin_checkpoint::CommitGuard {
        let (fence, events, term) = (self.fence.clone(), Arc::clone(&self.events), self.term);
        Arc::new(move |act: &str| {
            super::leadership::act_or_step_down();
            match fence.as_ref().map_or(Ok(()), CatalogFence::check) {
                Ok(()) => Ok(()),
                Err(Fenced::Superseded(why)) => {
                    events.refused(act, term, &why);
                    eprintln!("anduin: {act} refused: {why}");
                    super::leadership::superseded(&why)
                }
                // The store failed: not this act now (it is tried again); the lease counts.
                Err(unknown @ Fenced::Unknown(_)) => {
                    tracing::warn!(act, why = %unknown, "not done now");
                    Err(unknown.to_string())
                }
            }
        })
    }

    /// Before `act`, which only the leader may do: steps down if its lease may have run out,
    /// or if a later leader took the catalog over (the fence where the catalog is kept: its
    /// objects' leader marks, or the shared state directory's `CURRENT` pointer), writing the
    /// refusal as a typed event first.
    pub fn still_leading(&self, act: &str) {
        super::leadership::act_or_step_down();
        match self.fence.as_ref().map(CatalogFence::check) {
            Some(Err(Fenced::Superseded(why))) => {
                self.events.refused(act, self.term, &why);
                super::leadership::superseded(&why);
            }
            // The store failed, not the lease, which was checked just above: the leader acts
            // on (a short outage of the store must not leave the cluster without a leader).
            Some(Err(unknown @ Fenced::Unknown(_))) => {
                tracing::warn!(act, why = %unknown, "acting on the lease alone");
            }
            None | Some(Ok(())) => {}
        }
    }

    /// Steps down, `peer` (a worker or an executor) having refused this coordinator for
    /// `why`: it follows a later leader ([`proto::SUPERSEDED`]). The refusal is written as a
    /// typed event first (`refused_by_fence`, with this leader's term).
    pub fn refused_by_peer(&self, peer: &str, why: &str) -> ! {
        self.events
            .refused(&format!("{peer} connection"), self.term, why);
        super::leadership::superseded(&format!("{peer} refused it: {why}"))
    }

    /// Exits the process, as a SIGKILL would, when the tests asked for it after `step`.
    pub fn exit_point(&self, step: ExitPoint) {
        if self.exit_after == Some(step) {
            eprintln!("anduin: coordinator exiting after {step:?}, as --inject-exit-after asked");
            std::process::exit(137);
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on `changed` for at most `timeout`.
    pub fn wait<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        timeout: Duration,
    ) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(guard, timeout)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    }
}

pub fn coordinator(mut args: CoordinatorArgs) -> Result<ExitCode> {
    match (args.scheduler, args.workers) {
        (SchedulerKind::Process, None | Some(0)) => {
            bail!("--scheduler process starts --workers N worker processes: give N (at least 1)")
        }
        (SchedulerKind::Process, Some(n)) if n > scheduler::MAX_LOCAL_WORKERS => bail!(
            "--workers {n}: the process scheduler starts at most {} workers on this machine; give each more --slots instead",
            scheduler::MAX_LOCAL_WORKERS
        ),
        (SchedulerKind::Kubernetes, None | Some(0)) => {
            bail!("--scheduler kubernetes keeps --workers N worker pods: give N (at least 1)")
        }
        (SchedulerKind::Kubernetes, Some(n)) if n > super::kubernetes::MAX_PODS => bail!(
            "--workers {n}: the kubernetes scheduler keeps at most {} pods; give each more --slots instead",
            super::kubernetes::MAX_PODS
        ),
        (SchedulerKind::Static, Some(_)) => bail!(
            "--workers is for --scheduler process or kubernetes; with the static scheduler, start each worker with `anduin worker --coordinator ADDR`"
        ),
        _ => {}
    }
    match (args.scheduler, args.max_workers, args.workers) {
        (SchedulerKind::Process, Some(m), Some(n)) if m < n || m > scheduler::MAX_LOCAL_WORKERS => bail!(
            "--max-workers {m}: give at least --workers ({n}) and at most {}",
            scheduler::MAX_LOCAL_WORKERS
        ),
        // Checked with its other flags (`Settings::at_most`).
        (SchedulerKind::Process | SchedulerKind::Kubernetes, _, _) | (_, None, _) => {}
        (SchedulerKind::Static, Some(_), _) => bail!(
            "--max-workers is for --scheduler process or kubernetes; with the static scheduler, start more workers with `anduin worker --coordinator ADDR`"
        ),
    }
    let by_kube_lease = matches!(
        args.leader_election,
        Some(super::leadership::Election::Kubernetes(_))
    );
    if args.scheduler != SchedulerKind::Kubernetes
        && args.kube.any()
        && !(by_kube_lease && args.kube.only_endpoint())
    {
        bail!(
            "the --kube-* flags are for --scheduler kubernetes (--kube-api, --kube-namespace, \
             --kube-token-file and --kube-ca-file also for --leader-election kubernetes://)"
        );
    }
    if let Some(super::leadership::Election::Kubernetes(lease)) = &mut args.leader_election {
        lease.reach(&args.kube)?;
    }
    if args.executor_timeout < MIN_EXECUTOR_TIMEOUT {
        bail!(
            "--executor-timeout {:?} is too short: executors send their figures every second, \
             and a loaded machine delays some; give at least {MIN_EXECUTOR_TIMEOUT:?} (default 30s)",
            args.executor_timeout
        );
    }
    if args.heartbeat_timeout < MIN_HEARTBEAT_TIMEOUT {
        bail!(
            "--heartbeat-timeout {:?} is too short: the coordinator would declare live workers \
             dead between their heartbeats; give at least {MIN_HEARTBEAT_TIMEOUT:?} (the default \
             is 5s, and each worker's --heartbeat-interval must stay below half of it)",
            args.heartbeat_timeout
        );
    }
    match (args.scheduler, args.slots) {
        (SchedulerKind::Static, Some(_)) => bail!(
            "--slots is for --scheduler process or kubernetes; with the static scheduler, each worker says its own (`anduin worker --slots N`)"
        ),
        (_, Some(0)) => bail!("--slots must be at least 1"),
        _ => {}
    }
    if args.leader_election.is_some() && args.scheduler == SchedulerKind::Process {
        bail!(
            "--leader-election works with the static scheduler only for now: the workers of \
             --scheduler process are the leader's children; start workers with `anduin worker \
             --coordinator A,B` instead"
        );
    }
    let secret = args.secret.load()?;
    check_listen("a coordinator listening", args.listen.ip(), &secret)?;
    if let (SchedulerKind::Kubernetes, Some(n)) = (args.scheduler, args.workers) {
        // Its flags refused before anything starts (the address again once listening).
        if secret.is_none() {
            bail!(
                "--scheduler kubernetes: the coordinator needs the cluster secret \
                 (--cluster-secret-file or {}): its workers listen beyond loopback",
                super::secret::ENV
            );
        }
        args.kube
            .settings(args.listen, n, args.slots.unwrap_or(4))?
            .at_most(args.max_workers.unwrap_or(n))?;
    }
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create `{}`", args.state_dir.display()))?;
    if args.inject_no_step_down {
        super::leadership::never_step_down_for_tests();
    }
    if args.leader_election.is_none() {
        // Its coordinators elect a leader: one that does not would lead beside the elected
        // one, with no term the workers could hold against it.
        super::leadership::check_unelected(&args.state_dir, &args.checkpoint_store)?;
    }
    let lease_bounds = Duration::from_secs(1)..=Duration::from_secs(3600);
    if args.leader_election.as_ref().is_some_and(|e| e.by_lease())
        && !lease_bounds.contains(&args.leader_lease)
    {
        bail!(
            "--leader-lease {:?}: give between 1s and 1h (a standby takes over about one \
             lease after the leader died; a leader renews every third of it)",
            args.leader_lease
        );
    }
    // A standby that could not take over is refused before it says where it listens.
    let election = match &args.leader_election {
        Some(election) => {
            let shared = super::leadership::Shared::of(
                &args.state_dir,
                &args.checkpoint_store,
                election.by_lease(),
            )?;
            super::leadership::check(election, &shared)?;
            Some((election, shared))
        }
        None => None,
    };
    let socket = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = socket.local_addr()?;
    let serving: Serving = Arc::default();
    let leadership = match &election {
        None => None,
        Some((election, shared)) => {
            // Listening (and saying so) from now on, refusing connections until it leads.
            let acceptor = {
                let (socket, serving) = (socket.try_clone()?, Arc::clone(&serving));
                std::thread::Builder::new()
                    .name("anduin-accept".into())
                    .spawn(move || accept(&socket, &serving))?
            };
            write_address(args.address_file.as_deref(), addr)?;
            let me = format!("{addr} (pid {})", std::process::id());
            let leadership =
                super::leadership::lead(election, shared, args.leader_lease, &me, |holder| {
                    let who = holder.unwrap_or_else(|| "another".to_string());
                    eprintln!(
                        "anduin: coordinator on {addr} standing by: the coordinator at {who} leads"
                    );
                })?;
            eprintln!(
                "anduin: coordinator on {addr} leads (term {})",
                leadership.term
            );
            Some((leadership, acceptor))
        }
    };
    // An object store that cannot be used stops the coordinator now, naming it.
    let store = ClusterStore::new(&args.checkpoint_store, &args.state_dir)?;
    // Elected by a lease, the leader before may be paused past it and still hold the
    // catalog: it is taken over by term, without waiting for that leader (what it writes
    // when it runs again is never read).
    let by_lease = leadership
        .as_ref()
        .filter(|_| args.leader_election.as_ref().is_some_and(|e| e.by_lease()))
        .map(|(l, _)| l.term);
    let life_events = Arc::new(LifeEvents::open(&args.state_dir));
    let catalog_dir = args.state_dir.join("catalog");
    let catalog_objects = election
        .as_ref()
        .and_then(|(_, s)| s.catalog_objects.clone());
    let catalog = match by_lease {
        // No shared file system needed: the catalog is in the object store, fenced there.
        Some(term) if let Some(objects) = catalog_objects => Catalog::take_over_objects(
            objects,
            term,
            &args
                .leader_election
                .as_ref()
                .map(super::leadership::Election::identity)
                .unwrap_or_default(),
            CatalogOptions::in_object_store(),
            Instant::now(),
            &super::leadership::act_or_step_down,
        ),
        Some(term) => Catalog::take_over(
            &catalog_dir,
            term,
            CatalogOptions::default(),
            Instant::now(),
            &super::leadership::act_or_step_down,
        ),
        None => Catalog::open(&catalog_dir, CatalogOptions::default(), Instant::now()),
    }
    .or_else(|e| match after_failed_edit(&e) {
        // A later leader took it over while this one was taking it over.
        AfterFailedEdit::StepDown => {
            life_events.refused("catalog take-over", by_lease, &e.to_string());
            super::leadership::superseded(&e)
        }
        _ => Err(e),
    })
    .context("cannot open the coordinator's catalog")?;
    // One coordinator per checkpoint directory: a second, with a catalog of its own, would
    // take the first's queries' checkpoints for leftovers of its own and remove them. (A
    // leader elected by a lease is the only one of its term: the one before, paused, may
    // hold the lock still.) The directory itself is locked too: a `COORDINATOR.LOCK` removed
    // while this one runs (a cleanup script, a user) lets no second coordinator in.
    let _store_lock = match &store {
        ClusterStore::Shared(dir) if by_lease.is_none() => {
            Some(anduin_checkpoint::OwnerLock::directory(
                dir,
                STORE_LOCK,
                &format!(
                    "the checkpoint store `{}` (another coordinator uses it: give each coordinator a store of its own)",
                    dir.display()
                ),
            )?)
        }
        _ => None,
    };
    let scheduler: Box<dyn Scheduler> = match (args.scheduler, args.workers) {
        (SchedulerKind::Process, Some(n)) => Box::new(
            Processes::new(
                addr,
                n,
                args.slots.unwrap_or(4),
                args.state_dir.join("workers"),
                args.secret.cluster_secret_file.clone(),
                args.workers_die_with_coordinator,
            )
            .context("cannot find the anduin executable to start workers with")?
            .at_most(args.max_workers.unwrap_or(n)),
        ),
        (SchedulerKind::Kubernetes, Some(n)) => {
            let settings = args
                .kube
                .settings(addr, n, args.slots.unwrap_or(4))?
                .at_most(args.max_workers.unwrap_or(n))?;
            Box::new(super::kubernetes::Background::start(
                super::kubernetes::Kubernetes::connect(settings)?,
            )?)
        }
        _ => Box::new(Static),
    };
    let fence = catalog.fence();
    let (mut state, resumed, ended) = from_catalog(catalog, Arc::clone(&life_events));
    state.fail_at = args.inject_catalog_failure_at;
    state.stall = args.inject_catalog_stall;
    let registry = Registry::new();
    let api = ApiServer::start(
        ApiConfig {
            listen: args.api,
            token: crate::api::read_token(args.api_token_file.as_deref())?,
            ..ApiConfig::loopback()
        },
        registry.clone(),
    )?;
    std::fs::write(args.state_dir.join("api.url"), api.url())
        .context("cannot write the API's URL into the state directory")?;
    eprintln!("anduin: coordinator api: {}", api.url());
    let cluster = Arc::new(Cluster {
        addr,
        state_dir: args.state_dir.clone(),
        store,
        heartbeat_timeout: args.heartbeat_timeout,
        executor_timeout: args.executor_timeout,
        fence,
        events: life_events,
        state: Mutex::new(state),
        changed: Condvar::new(),
        started: Instant::now(),
        secret,
        api: registry,
        per_task_recovery: !args.no_per_task_recovery,
        restart: RestartPolicy {
            attempts: args.restart_attempts,
            backoff: args.restart_backoff,
            max_backoff: args.restart_max_backoff,
        },
        submitting: Mutex::new(()),
        exit_after: args.inject_exit_after,
        hold_restore: args.inject_hold_restore,
        scheduler: Mutex::new(scheduler),
        growing: std::sync::atomic::AtomicUsize::new(0),
        term: leadership.as_ref().map(|(l, _)| l.term),
        silent_after: by_lease.map(|_| silent_after(args.leader_lease)),
    });
    if let Some(every) = cluster.silent_after {
        let cluster = Arc::clone(&cluster);
        std::thread::Builder::new()
            .name("anduin-pings".into())
            .spawn(move || ping(&cluster, every))?;
    }
    stop_on_signals(&cluster);
    serve_ended(&cluster, ended);
    for (name, submission) in resumed {
        start_driver(&cluster, &name, &submission, true)?;
    }
    if leadership.is_none() {
        write_address(args.address_file.as_deref(), addr)?;
    }
    eprintln!("anduin: coordinator listening on {addr}");
    tend_workers(&cluster);
    {
        let cluster = Arc::clone(&cluster);
        std::thread::Builder::new()
            .name("anduin-liveness".into())
            .spawn(move || watch_liveness(&cluster))?;
    }
    // Served as long as the coordinator runs.
    let _api = api;
    let _ = serving.set(cluster);
    match leadership {
        // Held until the process ends.
        Some((_leadership, acceptor)) => {
            let _ = acceptor.join();
        }
        None => accept(&socket, &serving),
    }
    Ok(ExitCode::SUCCESS)
}

/// The coordinator's state once it serves (a standby's stays empty until it leads).
type Serving = Arc<std::sync::OnceLock<Arc<Cluster>>>;

/// Serves every connection on `socket`, each on a thread of its own; before the coordinator
/// serves, refuses it as a standby does (the peer tries the next coordinator it knows).
fn accept(socket: &TcpListener, serving: &Serving) {
    for conn in socket.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                continue;
            }
        };
        let serving = Arc::clone(serving);
        let spawned = std::thread::Builder::new()
            .name("anduin-conn".into())
            .spawn(move || match serving.get() {
                Some(cluster) => {
                    if let Err(e) = serve(stream, cluster) {
                        tracing::warn!(error = %format!("{e:#}"), "a connection failed");
                    }
                }
                None => {
                    if let Ok((to, _)) = proto::split(stream) {
                        to.refuse(&format!(
                            "{}: this coordinator does not lead (yet): try another",
                            super::coordinators::STANDING_BY
                        ));
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a connection's thread");
        }
    }
}

/// Writes `addr` to `--address-file`, if given, at once (never half written).
fn write_address(file: Option<&std::path::Path>, addr: SocketAddr) -> Result<()> {
    if let Some(f) = file {
        let tmp = f.with_extension("tmp");
        std::fs::write(&tmp, addr.to_string())?;
        std::fs::rename(&tmp, f)?;
    }
    Ok(())
}

/// What the catalog of a restarted coordinator says: its workers (awaited until they
/// reconnect) and the queries it was running, to re-attach to.
/// A query that had ended before this coordinator started: its name, file and final state.
type Ended = (String, String, anduin_coordinator::life::StateKind);

fn from_catalog(
    catalog: Catalog,
    life_events: Arc<LifeEvents>,
) -> (State, Vec<(String, Submission)>, Vec<Ended>) {
    let c = catalog.state();
    let now = Instant::now();
    let workers: BTreeMap<u32, WorkerEntry> = c
        .workers
        .iter()
        .map(|(id, w)| {
            (
                id.0,
                WorkerEntry {
                    name: w.address.clone(),
                    slots: w.slots,
                    to: None,
                    last_seen: now,
                    link: Link::Awaited,
                },
            )
        })
        .collect();
    let next_worker = c.highest_worker.map_or(1, |w| w.0 + 1);
    let mut queries = BTreeMap::new();
    let mut resumed = Vec::new();
    let mut ended = Vec::new();
    for (id, q) in &c.queries {
        let submission = Submission {
            name: id.0.clone(),
            file_name: q.source.file.clone(),
            given_file: q.source.given.clone(),
            source: q.source.text.clone(),
            modules: q.source.modules.clone(),
            args: q.settings.run_args.clone(),
            cwd: q
                .settings
                .cwd
                .clone()
                .map(PathBuf::from)
                .unwrap_or_default(),
            rules: q.settings.rules.as_ref().map(|r| proto::RuleFile {
                name: r.file.clone(),
                text: r.text.clone(),
                interval: q.settings.rules_interval.clone(),
            }),
            // Its checkpoints are where it left them: a query taken over resumes from them.
            resume: false,
        };
        let over = q.state.is_terminal();
        // A catalog written before attempts were recorded: the most any task had.
        let attempt = match q.attempt {
            0 => q.attempts.values().copied().max().unwrap_or(0),
            n => n,
        };
        let life = QueryLife::reattached(
            id.clone(),
            q.tasks.iter().copied(),
            q.placement.clone(),
            q.last_checkpoint.as_ref().map(|p| p.epoch),
        );
        // The life's state: a coordinator that went during a per-task recovery left
        // `recovering` in the catalog, which the query is not once its executors all report
        // again. One that went while the query waited for its next attempt left the failure,
        // which its driver acts on ([`driver::drive`]).
        let failed = q.failed_now().filter(|_| !over);
        let shown = match failed {
            Some(_) => "recovering",
            None => state_name(if over { &q.state } else { life.state() }),
        };
        // The failures in a row go on from those recorded.
        let restarts = q.last_failure.as_ref().map_or_else(Restarts::default, |f| {
            Restarts::resumed(f.failures, f.checkpoint.map(|e| e.0))
        });
        queries.insert(
            id.0.clone(),
            QueryEntry {
                submission: submission.clone(),
                life,
                status: QueryStatus {
                    name: id.0.clone(),
                    state: shown.into(),
                    attempt,
                    placement: BTreeMap::new(),
                    instances: BTreeMap::new(),
                    last_checkpoint: q.last_checkpoint.as_ref().map(|p| p.epoch.0),
                    error: failed.map(|f| f.error.clone()),
                    operators: Vec::new(),
                    ..QueryStatus::default()
                },
                // A cancel answered before the coordinator went is carried out by this one.
                cancel: q.cancel_requested,
                stop_asked: false,
                attempt: None,
                restarts,
                next_attempt: None,
            },
        );
        if over {
            ended.push((id.0.clone(), q.source.file.clone(), q.state.kind()));
        } else {
            resumed.push((id.0.clone(), submission));
        }
    }
    if !resumed.is_empty() || !workers.is_empty() {
        eprintln!(
            "anduin: the catalog holds {} workers and {} running queries: waiting for them to reconnect",
            c.workers.len(),
            resumed.len()
        );
    }
    let state = State {
        workers,
        queries,
        next_worker,
        catalog,
        fail_at: None,
        stall: None,
        life_events,
        held_said: BTreeSet::new(),
    };
    (state, resumed, ended)
}

/// Serves through the API the queries that had ended before this coordinator started, with
/// their final state (`GET /api/v1/queries`, the web UI), as the coordinator that ran them
/// did: no operators, figures or history (those went with it).
fn serve_ended(cluster: &Cluster, ended: Vec<Ended>) {
    use anduin_coordinator::life::StateKind;
    for (name, file, kind) in ended {
        serve_idle(cluster, &name, Some(file), |control| match kind {
            StateKind::Cancelled => control.detach_cancelled(),
            StateKind::Failed => control.detach(true),
            _ => control.detach(false),
        });
    }
}

/// Serves through the API, in place of any other, a control plane of query `name` (its file
/// `file`) that runs no attempt — one that ended before this coordinator started, or one
/// waiting for its next attempt — in the state `settle` gives it first.
pub(super) fn serve_idle(
    cluster: &Cluster,
    name: &str,
    file: Option<String>,
    settle: impl FnOnce(&anduin_runtime::control::Control),
) -> Arc<anduin_runtime::control::Control> {
    let control = Arc::new(anduin_runtime::control::Control::new(
        name,
        file,
        BTreeMap::new(),
        Box::new(|_, _| Ok(())),
    ));
    settle(&control);
    cluster.api.remove(name);
    if let Err(e) = cluster
        .api
        .add(Arc::clone(&control) as Arc<dyn anduin_api::QueryControl>)
    {
        tracing::warn!(query = %name, error = %e, "a query running no attempt is not served by the API");
    }
    control
}

/// The name `anduin status` gives a state of the catalog.
pub fn state_name(s: &QueryState) -> &'static str {
    match s {
        QueryState::Submitted => "submitted",
        QueryState::Scheduling => "scheduling",
        QueryState::Running => "running",
        QueryState::Checkpointing { .. } => "checkpointing",
        QueryState::Recovering { .. } => "recovering",
        QueryState::Stopping => "stopping",
        QueryState::Finished => "finished",
        QueryState::Failed { .. } => "failed",
        QueryState::Cancelled => "cancelled",
        _ => "unknown",
    }
}

/// How often a leader checks the catalog's fence while it has nothing else to do.
const LEADERSHIP_CHECK: Duration = Duration::from_secs(1);

/// Declares dead the workers not heard from within the timeout, and those a restarted
/// coordinator awaited that did not come back within it.
fn watch_liveness(cluster: &Cluster) {
    let tick = cluster.heartbeat_timeout / 5;
    let mut woke = Instant::now();
    let mut checked = Instant::now();
    loop {
        std::thread::sleep(tick);
        let slept = std::mem::replace(&mut woke, Instant::now()).elapsed();
        // A leader a later one superseded steps down even with nothing to do (it would
        // answer clients with what it last knew, and take submissions nobody runs): at once
        // when it wakes from a pause, and every second.
        if slept > tick + cluster.heartbeat_timeout / 2 || checked.elapsed() >= LEADERSHIP_CHECK {
            cluster.still_leading("leadership check");
            checked = Instant::now();
        }
        let mut state = cluster.lock();
        if slept > tick + cluster.heartbeat_timeout / 2 {
            // The coordinator itself did not run (paused, its host starved): the workers'
            // heartbeats of that time wait unread in its sockets. Their silence is its own:
            // each gets a whole timeout again rather than be declared dead.
            tracing::warn!(
                slept_ms = slept.as_millis() as u64,
                "the coordinator did not run for a while: the workers get a whole heartbeat timeout again"
            );
            let now = Instant::now();
            for w in state.workers.values_mut() {
                w.last_seen = now;
            }
            // So do the executors' figures.
            for a in state
                .queries
                .values_mut()
                .filter_map(|q| q.attempt.as_mut())
            {
                for (_, at) in a.heard.values_mut() {
                    *at = now;
                }
            }
            continue;
        }
        let mut died = Vec::new();
        for (id, w) in state.workers.iter_mut() {
            let late = match w.link {
                Link::Alive => w.last_seen.elapsed() > cluster.heartbeat_timeout,
                Link::Awaited => cluster.started.elapsed() > cluster.heartbeat_timeout,
                Link::Dead => false,
            };
            if late {
                eprintln!(
                    "anduin: worker {} (id {id}) not heard from for {:?}: declared dead",
                    w.name, cluster.heartbeat_timeout
                );
                w.link = Link::Dead;
                if let Some(to) = w.to.take() {
                    to.close();
                }
                died.push(*id);
            }
        }
        for id in &died {
            state.record(Edit::WorkerLeft {
                worker: WorkerId(*id),
            });
        }
        let silent = find_silent_executors(&mut state, cluster.executor_timeout);
        if !died.is_empty() || silent {
            cluster.changed.notify_all();
        }
        drop(state);
        tend_workers(cluster);
    }
}

/// Takes as stuck the executors of running attempts that went silent past `timeout`
/// ([`silence`](super::silence)); whether any did.
fn find_silent_executors(state: &mut State, timeout: Duration) -> bool {
    let now = Instant::now();
    let State {
        workers, queries, ..
    } = state;
    let mut any = false;
    for (name, q) in queries.iter_mut() {
        let Some(a) = q.attempt.as_mut() else {
            continue;
        };
        let facts: Vec<PartFacts> = a
            .workers
            .iter()
            .map(|&part| PartFacts {
                part,
                running: a.executors.contains_key(&part),
                settled: a.ended.contains_key(&part)
                    || a.ending.contains(&part)
                    || a.stuck.contains_key(&part),
                host_alive: workers.get(&a.host(part)).is_some_and(WorkerEntry::alive),
                heard: a
                    .heard
                    .get(&part)
                    .filter(|(incarnation, _)| *incarnation == a.incarnation(part))
                    .map(|(_, at)| *at),
            })
            .collect();
        for (part, quiet) in silent_parts(facts, now, timeout) {
            let stuck = Stuck::Silent(quiet);
            eprintln!("anduin: query {name}, part {part}: {stuck}");
            tracing::warn!(query = %name, part, quiet_ms = quiet.as_millis() as u64, "an executor went silent");
            a.stuck.insert(part, stuck);
            any = true;
        }
    }
    any
}

/// Lets the scheduler bring the workers to what it wants, from what is known of each name
/// (a live worker of a name wins over a dead one).
fn tend_workers(cluster: &Cluster) {
    let known: BTreeMap<String, Link> = {
        let state = cluster.lock();
        let mut known = BTreeMap::new();
        for w in state.workers.values() {
            let rank = |l: &Link| match l {
                Link::Alive => 2,
                Link::Awaited => 1,
                Link::Dead => 0,
            };
            let best = known.entry(w.name.clone()).or_insert(w.link);
            if rank(&w.link) > rank(best) {
                *best = w.link;
            }
        }
        known
    };
    // Busy starting workers for a rescale (the kubernetes scheduler waits for the API):
    // tended on a later tick, so that this one declares the dead in time.
    let mut scheduler = match cluster.scheduler.try_lock() {
        Ok(s) => s,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    scheduler.tend(&known);
    super::growth::give_back(cluster, &mut **scheduler);
}

/// SIGINT and SIGTERM stop the coordinator, and the workers its scheduler started with it
/// (the queries' checkpoints stay; a coordinator started again on the same state resumes
/// them). A SIGKILL leaves its workers running, as any worker runs on without a coordinator.
fn stop_on_signals(cluster: &Arc<Cluster>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut incoming = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch for Ctrl-C and SIGTERM: the coordinator's own workers would outlive it");
            return;
        }
    };
    let cluster = Arc::clone(cluster);
    let watcher = std::thread::Builder::new()
        .name("anduin-signals".into())
        .spawn(move || {
            if let Some(signal) = incoming.forever().next() {
                let mut scheduler = cluster.scheduler.lock().unwrap_or_else(|p| p.into_inner());
                match scheduler.kind() {
                    "static" => eprintln!("anduin: coordinator stopping on signal {signal}"),
                    kind => eprintln!(
                        "anduin: coordinator stopping on signal {signal}, and the workers its {kind} scheduler keeps"
                    ),
                }
                scheduler.stop();
                // A standby leads at once rather than when the lease would have expired.
                super::leadership::let_go();
                std::process::exit(128 + signal);
            }
        });
    if let Err(e) = watcher {
        tracing::warn!(error = %e, "cannot watch for Ctrl-C and SIGTERM");
    }
}

/// One connection: what its first message says it is.
fn serve(stream: TcpStream, cluster: &Arc<Cluster>) -> Result<()> {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    // A peer's first word is never longer in coming than this (a silent one holds a thread).
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let (to, mut from) = proto::split(stream.try_clone()?)?;
    if let proto::Verdict::Refuse(why) =
        proto::challenge(&to, &mut from, cluster.secret.as_deref())?
    {
        eprintln!("anduin: refused a connection from {peer}: {why}");
        to.refuse(&why);
        return Ok(());
    }
    let Some(first) = from.recv::<ToCoordinator>()? else {
        return Ok(());
    };
    stream.set_read_timeout(None)?;
    match first {
        ToCoordinator::Worker {
            name,
            slots,
            previous,
        } => serve_worker(cluster, name, slots, previous, to, from),
        ToCoordinator::Executor {
            query,
            attempt,
            worker,
            data,
            incarnation,
            started,
        } => driver::serve_executor(
            cluster,
            &driver::Reporting {
                query,
                attempt,
                part: worker,
                incarnation,
                data,
                started,
            },
            to,
            from,
        ),
        ToCoordinator::Submit(s) => {
            // Recorded where a later leader would read it, or not taken.
            cluster.still_leading("submission");
            let reply = submit(cluster, s);
            to.send(&reply)
        }
        ToCoordinator::Status { query } => {
            // Not what a leader paused past its lease last knew: it steps down instead.
            super::leadership::act_or_step_down();
            let state = cluster.lock();
            let list = state
                .queries
                .iter()
                .filter(|(n, _)| query.as_ref().is_none_or(|q| q == *n))
                .map(|(_, q)| {
                    let mut status = q.status.clone();
                    status.failures_in_a_row = q.restarts.failures(status.last_checkpoint);
                    status.restart_attempts = cluster.restart.attempts;
                    if !status.is_over() {
                        status.next_attempt_in_ms = q.next_attempt.map(|at| {
                            at.saturating_duration_since(Instant::now()).as_millis() as u64
                        });
                    }
                    if let Some(a) = q.attempt.as_ref().filter(|_| !status.is_over()) {
                        let figures = a.figures.lock().unwrap_or_else(|p| p.into_inner());
                        status.operators = super::figures::by_operator(figures.values());
                        drop(figures);
                        super::driver::count_unplanned(&state, a, &mut status);
                    }
                    status
                })
                .collect::<Vec<_>>();
            let workers = state
                .workers
                .iter()
                .map(|(id, w)| proto::WorkerStatus {
                    id: *id,
                    name: w.name.clone(),
                    slots: w.slots,
                    alive: w.alive(),
                })
                .collect();
            drop(state);
            match (&query, list.is_empty()) {
                (Some(q), true) => to.send(&Reply::Refused(format!("no query named \"{q}\""))),
                _ => to.send(&Reply::Status {
                    workers,
                    queries: list,
                    term: cluster.term,
                }),
            }
        }
        ToCoordinator::Cancel { query } => {
            cluster.still_leading("cancellation");
            let mut state = cluster.lock();
            let reply = match state.queries.get_mut(&query) {
                Some(q) if q.status.is_over() => {
                    Reply::Refused(format!("query \"{query}\" is already {}", q.status.state))
                }
                Some(_) => {
                    // Durable before it is answered: a coordinator that takes over after this
                    // one died cancels it too.
                    state.record(Edit::CancelRequested {
                        query: QueryId(query.clone()),
                    });
                    if cluster.exit_after == Some(ExitPoint::CancelAnswered) {
                        // As a kill that lands once the cancel is answered, before anything
                        // acts on it.
                        let _ = to.send(&Reply::Cancelling);
                        cluster.exit_point(ExitPoint::CancelAnswered);
                    }
                    if let Some(q) = state.queries.get_mut(&query) {
                        q.cancel = true;
                    }
                    cluster.changed.notify_all();
                    Reply::Cancelling
                }
                None => Reply::Refused(format!("no query named \"{query}\"")),
            };
            drop(state);
            to.send(&reply)
        }
        other => bail!("a connection opened with {other:?}"),
    }
}

fn serve_worker(
    cluster: &Arc<Cluster>,
    name: String,
    slots: u32,
    previous: Option<u32>,
    to: proto::Sender,
    mut from: proto::Receiver,
) -> Result<()> {
    let id = {
        let mut state = cluster.lock();
        // Names tell workers apart in `status`, in logs and to the `process` scheduler: one
        // live worker per name. A worker the catalog of a restarted coordinator knows keeps
        // its name until it is back or declared dead: a newcomer taking it first would make
        // the coordinator refuse the returning worker, whose executors run its parts.
        if let Some((other, e)) = state
            .workers
            .iter()
            .find(|(w, e)| e.name == name && e.link != Link::Dead && Some(**w) != previous)
        {
            let (why, held) = if e.alive() {
                (format!("a live worker named {name} (id {other}) is registered already: give this one another --name, or wait until that one is declared dead"), false)
            } else {
                (format!("{} a worker named {name} (id {other}) ran parts before the coordinator restarted and may come back until it is declared dead (--heartbeat-timeout {:?} after the restart); this one is tried again until then: give it another --name if it is another worker", proto::NAME_HELD, cluster.heartbeat_timeout), true)
            };
            // A worker waiting for a held name tries again every second: said once.
            let holder = *other;
            let again = held && !state.held_said.insert((name.to_string(), holder));
            if again {
                tracing::debug!(worker = %name, holder, "refused a held name again");
            } else {
                eprintln!("anduin: refused worker {name}: {why}");
            }
            to.refuse(&why);
            return Ok(());
        }
        // A worker the catalog knows, not declared dead, gets its number back.
        let id =
            match previous.filter(|p| state.workers.get(p).is_some_and(|w| w.link != Link::Dead)) {
                Some(p) => p,
                None => {
                    let id = state.next_worker;
                    state.next_worker += 1;
                    id
                }
            };
        state.workers.insert(
            id,
            WorkerEntry {
                name: name.clone(),
                slots,
                to: Some(to.clone()),
                last_seen: Instant::now(),
                link: Link::Alive,
            },
        );
        state.record(Edit::WorkerRegistered {
            worker: WorkerId(id),
            address: name.clone(),
            slots,
        });
        // Welcomed before the lock goes: once it is, a growth may deploy a part on it, and
        // a worker takes anything before its welcome as a refusal.
        to.send(&ToWorker::Welcome {
            worker: id,
            heartbeat_timeout_ms: u64::try_from(cluster.heartbeat_timeout.as_millis()).ok(),
            term: cluster.term,
            silent_after_ms: cluster
                .silent_after
                .and_then(|s| u64::try_from(s.as_millis()).ok()),
        })?;
        id
    };
    let again = if previous == Some(id) { " again" } else { "" };
    eprintln!("anduin: worker {name} (id {id}) joined{again} with {slots} slots");
    cluster.changed.notify_all();
    loop {
        let msg = from.recv::<ToCoordinator>();
        let mut state = cluster.lock();
        match msg {
            Ok(Some(ToCoordinator::Heartbeat)) => {
                if let Some(w) = state.workers.get_mut(&id) {
                    w.last_seen = Instant::now();
                }
            }
            Ok(Some(ToCoordinator::PartEnded {
                query,
                attempt,
                part,
                incarnation,
                error,
            })) => {
                cluster.exit_point(ExitPoint::PartEndRead);
                let part = part.unwrap_or(id);
                let noted = ToWorker::EndNoted {
                    query: query.clone(),
                    attempt,
                    part,
                    incarnation,
                };
                let end = Edit::PartEnded {
                    query: QueryId(query.clone()),
                    attempt,
                    part: WorkerId(part),
                    host: WorkerId(id),
                    incarnation,
                    error: error.clone(),
                };
                // The end of a part of the query's current attempt, as it runs now (an older
                // attempt's or incarnation's is stale): recorded in the catalog before the
                // worker is told it may forget it, so that a coordinator that takes the attempt
                // over after this one died knows it too (also when this one had not taken the
                // attempt over yet).
                if state.catalog.state().check(&end).is_ok() {
                    state.record(end);
                }
                if let Some(a) = state
                    .queries
                    .get_mut(&query)
                    .and_then(|q| q.attempt.as_mut())
                    .filter(|a| {
                        a.number == attempt
                            && a.host(part) == id
                            && a.incarnation(part) == incarnation
                    })
                {
                    if error.is_none() && a.alone.contains(&part) && !a.last_sent {
                        eprintln!("anduin: query {query}: the part on worker {name} ran only instances added while the query runs, and a scale-down retired them all: it ended, and the worker is free for another");
                    }
                    a.ended.insert(part, error);
                }
                cluster.changed.notify_all();
                drop(state);
                // Read and recorded (or stale): the worker may forget it.
                let _ = to.send(&noted);
                cluster.exit_point(ExitPoint::PartEndNoted);
            }
            Ok(Some(other)) => tracing::warn!(?other, worker = id, "unexpected from a worker"),
            Err(e) if let Some(why) = proto::refused_as_superseded(&e) => {
                drop(state);
                cluster.refused_by_peer(&format!("worker {name}"), &why)
            }
            Ok(None) | Err(_) => {
                let mut left = false;
                if let Some(w) = state.workers.get_mut(&id) {
                    if w.alive() {
                        eprintln!(
                            "anduin: worker {name} (id {id}) closed its connection: declared dead"
                        );
                        w.link = Link::Dead;
                        w.to = None;
                        left = true;
                    }
                }
                if left {
                    state.record(Edit::WorkerLeft {
                        worker: WorkerId(id),
                    });
                }
                cluster.changed.notify_all();
                return Ok(());
            }
        }
    }
}

/// Whether `name` may name a query of the cluster: ASCII letters, digits, `-` and `_`, not
/// starting with `-` (it names directories in the checkpoint store and on every worker, and
/// is an argument of `anduin cancel`, `ctl`…).
fn cluster_query_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= anduin_api::MAX_NAME_LEN
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The refusal of a submission named `name` while a query of that name is not over.
fn name_in_use(state: &State, name: &str) -> Option<Reply> {
    let q = state.queries.get(name).filter(|q| !q.status.is_over())?;
    Some(Reply::Refused(if q.cancel {
        format!(
            "the query named \"{name}\" is being cancelled: submit again once `anduin status` says it is cancelled"
        )
    } else {
        format!(
            "a query named \"{name}\" is already {}: cancel it or choose another name (--name)",
            q.status.state
        )
    }))
}

/// Accepts a submission: checks it compiles, records it in the catalog, starts its driver.
fn submit(cluster: &Arc<Cluster>, s: Submission) -> Reply {
    if !cluster_query_name(&s.name) {
        return Reply::Refused(format!(
            "\"{}\" is not a usable query name: letters, digits, `-` and `_`, not starting with `-`, at most {} (give another with --name)",
            s.name,
            anduin_api::MAX_NAME_LEN
        ));
    }
    // One submission at a time: the checkpoints cleared below are no running query's, and
    // the query's folder, which `prepare` writes and reads back, is no other submission's.
    let _one_at_a_time = cluster.submitting.lock().unwrap_or_else(|p| p.into_inner());
    // Before anything is written there: the folder of a query of that name that runs is its.
    if let Some(refused) = name_in_use(&cluster.lock(), &s.name) {
        return refused;
    }
    // Before its old checkpoints are cleared or resumed from: an `anduin run` may use them.
    let dir_lock = match cluster.lock_query_dir(&s.name) {
        Ok(lock) => lock,
        Err(e) => return Reply::Refused(format!("query \"{}\": {e}", s.name)),
    };
    let dir = cluster.state_dir.join("queries").join(&s.name);
    let compiled = match driver::prepare(&dir, &s) {
        Ok(c) => c,
        Err(e) => return Reply::Refused(format!("{e:#}")),
    };
    let state = cluster.lock();
    // A query of that name that is over: forgotten once this one is accepted.
    let taken = state.queries.contains_key(&s.name);
    if let Some(refused) = name_in_use(&state, &s.name) {
        return refused;
    }
    // Not held while the store is asked: an object store may be slow to answer, and
    // heartbeats must not wait for it.
    drop(state);
    // A new submission starts from the beginning: checkpoints left under its name (by a
    // query of that name that is over, or by another coordinator) are not its own — unless it
    // asks to resume from them (`--resume`), as Flink's `run -s` does from a savepoint.
    let old = match &cluster.store {
        ClusterStore::Shared(_) => cluster.store.dir(&s.name).exists(),
        ClusterStore::Objects { .. } => true,
    };
    if s.resume {
        let location = cluster.store.location(&s.name);
        let found = if old {
            cluster
                .store
                .store(&s.name)
                .and_then(|st| driver::recovery(&st))
        } else {
            Ok(driver::Recovery::From(None))
        };
        match found {
            Ok(driver::Recovery::From(Some(v)) | driver::Recovery::Finished(Some(v))) => {
                let plan = anduin_runtime::fingerprint(&compiled.loaded.graph, &compiled.plan);
                if let anduin_checkpoint::plan::Compatibility::Incompatible { operator, what } =
                    anduin_checkpoint::plan::compare(&v.manifest.plan, &plan)
                {
                    return Reply::Refused(format!(
                        "--resume: checkpoint {} of query \"{}\" cannot be restored into this query: operator \"{operator}\": {what} (resume the query that took it, or submit without --resume to start from the beginning)",
                        v.manifest.epoch, s.name
                    ));
                }
                // A query that had finished is restored from its last checkpoint, so that its
                // sinks commit what they had not (a failure may have come in between), and
                // nothing runs (see `driver::attempt`).
                let finished = if v.manifest.finished {
                    ", which says every input ended: its sinks commit what it holds, and nothing runs"
                } else {
                    ""
                };
                eprintln!(
                    "anduin: query {} resumes from checkpoint {} in {location}{finished}",
                    s.name, v.manifest.epoch
                );
            }
            Ok(driver::Recovery::From(None) | driver::Recovery::Finished(None)) => {
                return Reply::Refused(format!(
                    "--resume: there is no complete checkpoint of a query named \"{}\" in {location}: submit without --resume to start from the beginning",
                    s.name
                ))
            }
            Err(e) => return Reply::Refused(format!("--resume: {e:#}")),
        }
    } else if old {
        let cleared = cluster
            .store
            .store(&s.name)
            .and_then(|st| st.clear().map_err(anyhow::Error::from));
        if let Err(e) = cleared {
            return Reply::Refused(format!(
                "cannot remove the old checkpoints in {}: {e:#}",
                cluster.store.location(&s.name)
            ));
        }
    }
    let mut state = cluster.lock();
    if taken {
        // Its name is free again: the catalog forgets the old one.
        state.record(Edit::QueryForgotten {
            query: QueryId(s.name.clone()),
        });
    }
    let edit = Edit::QuerySubmitted {
        query: QueryId(s.name.clone()),
        source: QuerySource {
            file: s.file_name.clone(),
            given: s.given_file.clone().filter(|g| *g != s.file_name),
            text: s.source.clone(),
            modules: s.modules.clone(),
        },
        settings: QuerySettings {
            run_args: s.args.clone(),
            cwd: Some(s.cwd.display().to_string()),
            rules: s.rules.as_ref().map(|r| QuerySource {
                file: r.name.clone(),
                text: r.text.clone(),
                ..QuerySource::default()
            }),
            rules_interval: s.rules.as_ref().and_then(|r| r.interval.clone()),
            ..QuerySettings::default()
        },
        at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    };
    if let Err(e) = state.catalog.append(edit, Instant::now()) {
        return Reply::Refused(format!("the coordinator cannot record the query: {e}"));
    }
    cluster.exit_point(ExitPoint::SubmissionRecorded);
    let name = s.name.clone();
    state.queries.insert(
        name.clone(),
        QueryEntry {
            submission: s.clone(),
            life: QueryLife::new(QueryId(name.clone()), compiled.tasks.iter().copied()),
            status: QueryStatus {
                name: name.clone(),
                state: "submitted".into(),
                ..QueryStatus::default()
            },
            cancel: false,
            stop_asked: false,
            attempt: None,
            restarts: Restarts::default(),
            next_attempt: None,
        },
    );
    state.feed(&name, &Input::Submitted);
    drop(state);
    match spawn_driver(cluster, &name, compiled, false, dir_lock) {
        Ok(()) => Reply::Submitted { query: name },
        Err(e) => Reply::Refused(format!("cannot start the query: {e:#}")),
    }
}

/// Compiles the query and starts its driver; `reattach`: its parts may still run, started by
/// a coordinator before this one.
fn start_driver(cluster: &Arc<Cluster>, name: &str, s: &Submission, reattach: bool) -> Result<()> {
    let dir = cluster.state_dir.join("queries").join(name);
    let compiled = driver::prepare(&dir, s)?;
    spawn_driver(cluster, name, compiled, reattach, None)
}

/// Starts the driver of query `name`; `dir_lock`: its checkpoint directory's lock, when the
/// submission took it ([`Cluster::lock_query_dir`]; the driver takes it otherwise).
fn spawn_driver(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: driver::Compiled,
    reattach: bool,
    dir_lock: Option<anduin_checkpoint::OwnerLock>,
) -> Result<()> {
    let cluster2 = Arc::clone(cluster);
    let query = name.to_string();
    std::thread::Builder::new()
        .name(format!("anduin-driver-{name}"))
        .spawn(move || driver::drive(&cluster2, &query, compiled, reattach, dir_lock))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_coordinator::catalog::{CatalogError, EditRefused};

    #[test]
    fn a_query_name_is_letters_digits_dashes_and_underscores() {
        for ok in ["q", "q2", "nexmark_q5", "a-b", "Q_9-x"] {
            assert!(cluster_query_name(ok), "{ok}");
        }
        let long = "x".repeat(anduin_api::MAX_NAME_LEN + 1);
        for bad in [
            "", "x y", "x;y", "x*", "é", "-rf", "a/b", "..", ".q", "a.b", "a\tb", &long,
        ] {
            assert!(!cluster_query_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_failed_write_stops_the_coordinator_and_a_refused_edit_does_not() {
        let refused = CatalogError::Refused(EditRefused::UnknownQuery(QueryId("q".into())));
        assert_eq!(after_failed_edit(&refused), AfterFailedEdit::GoOn);
        let io = CatalogError::Io {
            doing: "append to",
            path: "catalog/edits-1".into(),
            cause: std::io::Error::other("no space left on device"),
        };
        assert_eq!(after_failed_edit(&io), AfterFailedEdit::Stop);
        let poisoned = CatalogError::Poisoned {
            dir: "catalog".into(),
            cause: "an earlier write failed".into(),
        };
        assert_eq!(after_failed_edit(&poisoned), AfterFailedEdit::Stop);
        let superseded = CatalogError::Superseded {
            url: "s3://b/p/.catalog".into(),
            txid: anduin_coordinator::Txid(7),
        };
        assert_eq!(after_failed_edit(&superseded), AfterFailedEdit::StepDown);
        let older = CatalogError::Refused(EditRefused::TermNotAfter { current: 4, got: 3 });
        assert_eq!(after_failed_edit(&older), AfterFailedEdit::StepDown);
    }
}
