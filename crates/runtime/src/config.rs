//! How a query runs.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anduin_checkpoint::Validated;

use crate::faults::Faults;

/// How a query takes checkpoints.
#[derive(Debug, Clone)]
pub struct CheckpointSettings {
    /// The checkpoint directory: the store, or the local staging and cache directory of
    /// `store` (where the tasks write their files).
    pub dir: PathBuf,
    /// The store the checkpoints go to, already opened (an object store, staged in `dir`);
    /// `None`: the directory `dir` itself.
    pub store: Option<anduin_checkpoint::Store>,
    /// Take a checkpoint this often.
    pub interval: Option<Duration>,
    /// Take a checkpoint when a source has emitted this many rows since the last one.
    pub every_rows: Option<u64>,
    /// Keep this many complete checkpoints.
    pub keep: usize,
    /// A full snapshot every this many checkpoints; changelogs in between.
    pub full_every: u64,
    /// Warn when the last complete checkpoint is older than this.
    pub warn_after: Duration,
    /// Abandon a checkpoint not complete this long after it was triggered (`None`: never).
    pub timeout: Option<Duration>,
}

/// Checkpointing of one run: the settings, and the checkpoint to resume from.
#[derive(Debug, Clone)]
pub struct Checkpointing {
    /// How checkpoints are taken.
    pub settings: CheckpointSettings,
    /// The checkpoint to restore, already validated; `None` to start from the beginning.
    pub restore: Option<Validated>,
    /// Restore every operator from `restore` and end without running: the checkpoint of a
    /// query that finished, whose sinks' commit the run that took it may not have made (it
    /// was killed in between). Their restore commits what the checkpoint holds; nothing is
    /// read, and no checkpoint is taken. No source is built (its input may be gone).
    pub commit_only: bool,
    /// Faults to inject (tests only).
    pub faults: Faults,
    /// When the checkpoint coordinator runs in another process (a cluster's coordinator):
    /// how this run's tasks reach it. `None`: it runs in this run.
    pub remote: Option<RemoteCoordinator>,
}

/// How the tasks of a run reach a checkpoint coordinator in another process: their events go
/// out on `events`, and the run hands each local task instance's command channel to
/// `register`, for the caller to deliver the coordinator's commands on.
#[derive(Debug, Clone)]
pub struct RemoteCoordinator {
    /// Where the tasks' and the committer's events go.
    pub events: crossbeam_channel::Sender<crate::Event>,
    /// Each local task instance's command channel, by its number in the run.
    pub register: crossbeam_channel::Sender<(usize, crossbeam_channel::Sender<crate::Command>)>,
}

/// Channels between workers, when a run's instances are spread over several.
#[derive(Debug, Clone)]
pub struct NetworkSettings {
    /// The query's name in every edge's handshake.
    pub query: String,
    /// Where the instances run.
    pub placement: Placement,
    /// Messages an edge may have in flight beyond the queues at its two ends (its credit
    /// window).
    pub window: u32,
    /// The attempt of the query these channels belong to (a cluster's): in every edge's
    /// handshake, so that a producer of an earlier attempt is refused as stale.
    pub attempt: u64,
    /// Edges that outlive the loss of either end (a cluster's per-task recovery); `None`: an
    /// edge that loses its peer fails the run.
    pub resumption: Option<Resumption>,
}

/// How a cluster's edges outlive the loss of one end: the producer keeps what its consumer
/// has not yet covered by a complete checkpoint (upstream backup) and replays it to a
/// restored consumer; the consumer drops what a restored producer replays of what it had.
#[derive(Debug, Clone)]
pub struct Resumption {
    /// The newest complete checkpoint this process has heard of: upstream backups keep only
    /// what follows its barrier.
    pub completed: Arc<std::sync::atomic::AtomicU64>,
    /// Bytes of upstream backup an edge keeps at most; beyond, its consumer's loss makes the
    /// query recover as a whole.
    pub backup_limit: usize,
    /// Bytes every upstream backup of the process keeps together at most: an edge's backup
    /// also overflows when they are full.
    pub backup_budget: Arc<crate::net::BackupBudget>,
    /// How long an end waits for its lost peer to come back (restored elsewhere) before the
    /// edge fails.
    pub wait: Duration,
    /// Where every worker's channels are reached, changed when a worker's instances are
    /// restored elsewhere.
    pub peers: Arc<crate::net::Peers>,
    /// Where an edge reports a checkpoint it had to give up (its barrier came while a
    /// restored producer replayed what the consumer had already received).
    pub reports: crossbeam_channel::Sender<crate::protocol::Event>,
    /// How many times this process's instances were restored in another process within the
    /// attempt (0: never): said in every handshake of their channels, so that a consumer
    /// turns away an older incarnation once it has heard of a newer one.
    pub incarnation: u64,
}

/// Where a run's instances run.
#[derive(Debug, Clone)]
pub enum Placement {
    /// Every instance in this process, spread round-robin over `workers` workers whose
    /// channels to one another cross loopback TCP: the network data plane, in one process.
    Loopback {
        /// How many workers.
        workers: u32,
    },
    /// This process is worker `here` and runs only the instances placed on it; the others
    /// run in other processes, reached at their workers' addresses.
    Assigned {
        /// The worker of every instance, by its number in the run.
        workers: Vec<u32>,
        /// This process's worker.
        here: u32,
        /// Where each worker listens for channels.
        addresses: std::collections::BTreeMap<u32, std::net::SocketAddr>,
        /// This process's listener (already bound: its address is in `addresses`).
        listener: Arc<crate::EdgeListener>,
    },
}

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Rows per batch that sources aim for.
    pub batch_size: usize,
    /// The longest a source holds a row before sending a partial batch.
    pub linger: Duration,
    /// Messages a channel holds before its producer waits (backpressure).
    pub channel_capacity: usize,
    /// Whether one-to-one chains of operators are fused into one task.
    pub chaining: bool,
    /// The parallelism of operators that can run in parallel and do not set their own.
    pub parallelism: usize,
    /// How many instances an operator that splits its input by key may be rescaled to while
    /// the query runs (see [`anduin_graph::PlanOptions::max_parallelism`]).
    pub max_parallelism: Option<usize>,
    /// Set to stop the query cleanly: sources stop reading, everything in flight is
    /// processed and flushed.
    pub stop: Arc<AtomicBool>,
    /// Checkpoints, if the query takes them.
    pub checkpointing: Option<Checkpointing>,
    /// Where the run reads the time for its decisions (checkpoint intervals, linger, idle
    /// inputs, staleness): the real time, or a test's [`anduin_types::ManualClock`].
    pub clock: anduin_types::SharedClock,
    /// Who hears of checkpoints and tasks (the log, by default).
    pub events: crate::Events,
    /// The control plane's handle of the query, through which its params change while it
    /// runs; `None`: they cannot.
    pub control: Option<Arc<crate::control::Control>>,
    /// Channels between workers over the network; `None`: every channel is in-process.
    pub network: Option<NetworkSettings>,
    /// Asked by every task before it ends its input (which commits what its sinks hold);
    /// `None`: ending needs no one's leave.
    pub end_gate: Option<Arc<dyn EndGate>>,
    /// Test-only fault injection: each operator named, heading its task, fails once it has
    /// been given more than its number of rows (each instance counts its own). Never set in
    /// normal runs.
    pub fail_after: Vec<(String, u64)>,
}

/// Whether this run may still end its tasks' input, which commits what their sinks hold. A
/// cluster's executor asks its coordinator: an executor whose part was restored elsewhere
/// (its worker was paused or cut off meanwhile), or whose attempt is over, must not commit
/// anything, even if it got to the end of its input before learning so.
pub trait EndGate: Send + Sync + std::fmt::Debug {
    /// `Ok` once this run may end the input of task instance `task`; `Err(why)` if it must
    /// not (the task then fails instead). May wait (for the coordinator's answer).
    fn may_end(&self, task: &str) -> Result<(), String>;
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            linger: Duration::from_millis(100),
            channel_capacity: 16,
            chaining: true,
            parallelism: 1,
            max_parallelism: None,
            stop: Arc::new(AtomicBool::new(false)),
            checkpointing: None,
            clock: Arc::new(anduin_types::SystemClock),
            events: crate::Events::logged(),
            control: None,
            network: None,
            end_gate: None,
            fail_after: Vec::new(),
        }
    }
}
