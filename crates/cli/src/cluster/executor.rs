//! An executor: one worker's part of one attempt of a query, in a process of its own (the
//! paper's executors on Mesos slaves). Its worker starts it as `anduin run FILE … --cluster-part
//! DEPLOYMENT` and cancels it by killing it; it ends at once when its worker goes away (its
//! stdin closes), so that a killed worker leaves no half of a query running.
//!
//! It runs only the task instances placed on its worker; channels to instances on other
//! workers cross the network; its tasks' checkpoint events go to the coordinator and the
//! coordinator's commands come back, over one connection. When the coordinator goes away the
//! tasks keep running (checkpoints wait); the executor reports again to the coordinator that
//! comes back, and tells it once more which of its sources have ended.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anduin_runtime::{
    Checkpointing, Command, Event, NetworkSettings, Peers, Placement, RemoteCoordinator, Resumption,
};
use anduin_types::Epoch;
use anyhow::{bail, Context, Result};
use crossbeam_channel::{Receiver, Sender};

use super::coordinators::Coordinators;
use super::proto::{self, Deployment, ToCoordinator, ToExecutor};
use crate::cmd::run::RunArgs;
use crate::embedded::{execute, prepare_outputs, Execution};
use crate::load::{load_to_run, LoadError, Loaded};

/// Exit code of an executor whose worker went away.
const ORPHANED: u8 = 3;
/// Exit code of an executor whose attempt the coordinator gave up.
const STALE: u8 = 4;
/// Bytes of output an edge keeps for a consumer that may be restored (beyond, the loss of
/// that consumer rolls the query back as a whole).
const BACKUP_LIMIT: usize = 256 << 20;
/// Bytes of output every edge of an executor keeps together (beyond, as past an edge's own
/// limit).
const BACKUP_BUDGET: usize = 1 << 30;
/// How long an edge waits for a lost peer to be restored elsewhere.
const PEER_WAIT: Duration = Duration::from_secs(120);
/// How often the executor sends its instances' live figures to the coordinator.
const FIGURES_EVERY: Duration = Duration::from_secs(1);

/// Runs the part of the query `deployment` describes.
pub fn run_part(args: &RunArgs, deployment: &Path) -> Result<ExitCode> {
    let d: Deployment = serde_json::from_slice(
        &std::fs::read(deployment)
            .with_context(|| format!("cannot read the deployment `{}`", deployment.display()))?,
    )
    .context("a malformed deployment")?;
    exit_with_worker();
    let span =
        tracing::info_span!("executor", query = %d.query, attempt = d.attempt, worker = d.worker);
    let _entered = span.enter();
    // As the coordinator loaded it: rewritten (the copies of a hot standby) for a cluster.
    let rules = d
        .submission
        .rules
        .as_ref()
        .map(|r| (r.name.as_str(), r.text.as_str()));
    crate::udfs::register_modules(&args.udfs)?;
    let loaded = match load_to_run(&args.file, &args.vars, &args.engine.defaults(), rules) {
        Ok(l) => l,
        // As an error, so that the worker tells the coordinator why (it does not see this
        // process's stderr).
        Err(LoadError::Diagnostics(diags)) => {
            let file = d.submission.shown_file();
            anyhow::bail!(
                "this executor cannot load the query: {}",
                diags.render(file).trim_end()
            )
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    same_plan(&d, &loaded, args)?;

    let secret = super::secret::load(None)?;
    let host: std::net::IpAddr = std::env::var(super::worker::DATA_HOST_ENV)
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
    super::secret::check_listen("an executor listening", host, &secret)?;
    let listener = anduin_runtime::EdgeListener::bind(SocketAddr::new(host, 0), 16, secret.clone())
        .with_context(|| format!("cannot listen for channels on {host}"))?;
    let channels = Arc::clone(&listener);
    // An object store this executor cannot use fails the part now, naming the store.
    let share = super::store::Share::open(&d, deployment)?;
    // The newest leader's term followed (0: none): an older coordinator is refused.
    let followed = Arc::new(AtomicU64::new(d.term.unwrap_or(0)));
    // `anduin ctl stop` (`ToExecutor::Drain`): the sources stop.
    let stop = Arc::new(AtomicBool::new(false));
    let (to_coordinator, from_coordinator, addresses, early) = await_start(
        &d,
        (listener.local_addr(), &stop),
        secret.as_deref(),
        &followed,
    )?;

    let (events_tx, events_rx) = crossbeam_channel::unbounded::<Event>();
    let events_rx = share.upload_before_acks(events_rx)?;
    let (register_tx, register_rx) = crossbeam_channel::unbounded();
    // Edges outlive the loss of a peer: the coordinator restores a dead worker's instances
    // elsewhere and says where (per-task recovery).
    let resumption = Resumption {
        completed: Arc::new(AtomicU64::new(d.restore.unwrap_or(0))),
        backup_limit: BACKUP_LIMIT,
        backup_budget: anduin_runtime::BackupBudget::new(BACKUP_BUDGET),
        wait: PEER_WAIT,
        peers: Peers::new(addresses.iter().map(|(w, a)| (*w, *a))),
        reports: events_tx.clone(),
        incarnation: d.incarnation,
    };
    let link = Arc::new(Link {
        coordinator: coordinators_of(&d),
        hello: hello(&d, listener.local_addr(), true),
        to: Mutex::new(Some(to_coordinator)),
        facts: Mutex::default(),
        done: AtomicBool::new(false),
        confirming: AtomicBool::new(true),
        secret,
        completed: Arc::clone(&resumption.completed),
        peers: Arc::clone(&resumption.peers),
        connection: AtomicU64::new(1),
        end: Mutex::default(),
        end_changed: Condvar::new(),
        silent_after: d.silent_after_ms.map(Duration::from_millis),
        followed,
        stop: Arc::clone(&stop),
        told: Mutex::default(),
    });
    let forwarder = {
        let link = Arc::clone(&link);
        std::thread::Builder::new()
            .name("anduin-events-out".into())
            .spawn(move || link.forward_events(&events_rx))?
    };
    {
        let link = Arc::clone(&link);
        std::thread::Builder::new()
            .name("anduin-commands-in".into())
            .spawn(move || link.keep(from_coordinator, &register_rx, early))?;
    }
    // Every second from now on, whatever the tasks do: the instances' live figures once they
    // run, `Alive` before (while a checkpoint is fetched and restored). The coordinator takes
    // an executor silent for --executor-timeout as stuck.
    let figures_of: Arc<std::sync::OnceLock<Arc<anduin_runtime::control::Control>>> =
        Arc::default();
    {
        let (link, figures_of) = (Arc::clone(&link), Arc::clone(&figures_of));
        std::thread::Builder::new()
            .name("anduin-figures-out".into())
            .spawn(move || {
                while !link.done.load(Ordering::SeqCst) {
                    match figures_of.get() {
                        Some(control) => link.send_figures(control),
                        None => link.send_alive(),
                    }
                    std::thread::sleep(FIGURES_EVERY);
                }
            })?;
    }
    let restore = match d.restore {
        None => None,
        Some(epoch) => {
            let mut v = share
                .store()
                .validate(Epoch(epoch))
                .with_context(|| format!("cannot restore checkpoint {epoch}"))?;
            // The changes the coordinator recorded after it (a whole rollback), applied
            // after the state as the manifest's own at its epoch.
            v.manifest.controls.extend(d.controls.iter().cloned());
            Some(v)
        }
    };
    let checkpointing = Checkpointing {
        settings: share.settings(args),
        restore,
        commit_only: d.commit_only,
        faults: anduin_runtime::Faults::default(),
        remote: Some(RemoteCoordinator {
            events: events_tx,
            register: register_tx,
        }),
    };
    // Each worker's malformed records in a file of its own.
    let dead_letter = match prepare_outputs(&loaded.spec, args.dead_letter.as_deref())? {
        anduin_operator_api::DeadLetterTarget::File(p) => {
            anduin_operator_api::DeadLetterTarget::File(p.with_file_name(format!(
                "{}.worker-{}",
                p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
                d.worker
            )))
        }
        other => other,
    };
    // The instances report the changes they apply (and the ends of their inputs) to the
    // control plane at the coordinator, through the checkpoint events.
    // The places in errors name the query file as the user gave it, not this copy.
    let shown = d.submission.shown_file().to_string();
    let control = crate::control::control_of(
        &d.query,
        Some(shown.clone()),
        Arc::clone(&loaded.graph),
        crate::control::RunPlaces {
            checkpointing: true,
            checkpoint_dir: Some(share.dir().to_path_buf()),
            query_file: Some(args.file.clone()),
            restored: checkpointing
                .restore
                .as_ref()
                .map(|v| v.manifest.controls.clone())
                .unwrap_or_default(),
            ..crate::control::RunPlaces::default()
        },
    )?;
    if let Some(remote) = &checkpointing.remote {
        control.forward_reports(remote.events.clone());
    }
    let control = Arc::new(control);
    link.told_to(&control);
    // The coordinator's control plane shows them (its API, metrics and web UI).
    let _ = figures_of.set(Arc::clone(&control));
    let executed = execute(
        &loaded,
        &args.engine,
        Execution {
            dead_letter,
            checkpointing: Some(checkpointing),
            stop,
            query_file: Some(shown),
            events: anduin_runtime::Events::logged().with(Arc::new(EndAtFailure {
                failure_file: super::worker::failure_file(deployment),
            })),
            control: Some(Arc::clone(&control)),
            end_gate: Some(Arc::clone(&link) as Arc<dyn anduin_runtime::EndGate>),
            lineage: d.lineage.clone(),
            query_digest: d.query_digest.clone(),
            name: None,
            network: Some(NetworkSettings {
                query: d.query.clone(),
                placement: Placement::Assigned {
                    workers: d.placement.clone(),
                    here: d.worker,
                    addresses,
                    listener: Arc::clone(&channels),
                },
                window: 16,
                attempt: d.attempt,
                resumption: Some(resumption),
            }),
        },
    );
    // The figures at the end, before the part reports its end.
    link.send_figures(&control);
    // The channel ends kept for producers that might connect again hold the event sender.
    channels.shutdown();
    // Every event sent before the process reports its end. Not for a failed part, whose
    // events are not worth keeping: a channel a producer opened to it before it failed may
    // hold the event sender for as long as that producer lives (probe44: the executor waited
    // for it for ever, its failure never reported, its attempt stuck "checkpointing").
    if executed.is_ok() {
        let _ = forwarder.join();
    }
    let executed = executed?;
    link.await_heard(HEARD_WITHIN);
    tracing::info!(
        elapsed_ms = executed.summary.elapsed.as_millis() as u64,
        "part finished"
    );
    Ok(ExitCode::SUCCESS)
}

/// Ends the executor as soon as one of its tasks fails for a reason of its own, or one of its
/// channels to other processes fails for a reason other than its peer's loss (the edge's
/// failure stops only the sources here), leaving the failure for its worker to tell: its
/// coordinator then restores the part (or rolls the query back) at once. Waiting for the part's other tasks to end would leave it stuck while they
/// run on, fed by producers on other workers — for ever, on an endless input — and every
/// producer of the failed task waiting for it to come back. Nothing of the part is worth
/// keeping: its instances are restored together from the last complete checkpoint, as after
/// a kill.
struct EndAtFailure {
    failure_file: std::path::PathBuf,
}

impl anduin_runtime::Subscriber for EndAtFailure {
    fn event(&self, event: &anduin_runtime::EngineEvent) {
        let Some(failure) = part_failure(event) else {
            return;
        };
        tracing::error!(
            %failure,
            "this executor ends its part now, for its coordinator to restore"
        );
        let _ = std::fs::write(&self.failure_file, &failure);
        std::process::exit(1);
    }
}

/// The failure that ends the part at `event`, if it is one: a task's own, or a channel's
/// that is not its peer's loss.
fn part_failure(event: &anduin_runtime::EngineEvent) -> Option<String> {
    use anduin_runtime::EngineEvent;
    match event {
        EngineEvent::TaskFailed {
            name,
            error,
            own: true,
            ..
        } => {
            tracing::error!(task = %name, "a task failed");
            Some(error.clone())
        }
        EngineEvent::EdgeFailed { edge, error } => Some(format!("{edge}: {error}")),
        _ => None,
    }
}

/// Refuses to run a part of a plan other than the coordinator's: every task instance must be
/// where the coordinator placed it, under the same name (a deployment of an older
/// coordinator names none).
fn same_plan(d: &Deployment, loaded: &Loaded, args: &RunArgs) -> Result<()> {
    if d.instances.is_empty() {
        return Ok(());
    }
    let ours: Vec<String> = super::driver::topology(loaded, args)?
        .instances()
        .map(|i| i.name.clone())
        .collect();
    if ours != d.instances {
        bail!(
            "this executor plans query {} as task instances {ours:?}, its coordinator as {:?}: \
             they must be the same (a coordinator and workers of different anduin versions?)",
            d.query,
            d.instances
        );
    }
    Ok(())
}

/// Where the executor of `d` reaches its coordinator: any of its worker's, or the one that
/// deployed it.
fn coordinators_of(d: &Deployment) -> Coordinators {
    let coordinators = d
        .coordinators
        .clone()
        .unwrap_or_else(|| Coordinators::one(d.coordinator));
    if let Some(ms) = d.silent_after_ms {
        coordinators.answer_within(Duration::from_millis(ms));
    }
    coordinators
}

/// What the executor of `d`, listening at `data`, says when it reports.
fn hello(d: &Deployment, data: SocketAddr, started: bool) -> ToCoordinator {
    ToCoordinator::Executor {
        query: d.query.clone(),
        attempt: d.attempt,
        worker: d.worker,
        data,
        incarnation: d.incarnation,
        started,
    }
}

/// Commands for the executor's tasks that came before its `Start`, in order.
type Early = Vec<(usize, Command)>;

/// Reports to the coordinator and waits for its `Start`, which says where every executor of
/// the attempt listens. A connection lost before (the coordinator was restarted) is made
/// again, and the executor reports again as not started: the coordinator that takes the
/// attempt over starts it. Commands for its tasks that come first (the checkpoint
/// coordinator sends a part's commands as soon as its executor has reported) are kept for
/// the tasks. A refusal (the attempt is over) ends the executor.
fn await_start(
    d: &Deployment,
    (data, stop): (SocketAddr, &AtomicBool),
    secret: Option<&[u8]>,
    followed: &AtomicU64,
) -> Result<(
    proto::Sender,
    proto::Receiver,
    BTreeMap<u32, SocketAddr>,
    Early,
)> {
    let mut pause = Duration::from_millis(50);
    let mut early = Early::new();
    let coordinators = coordinators_of(d);
    let silent_after = d.silent_after_ms.map(Duration::from_millis);
    loop {
        match coordinators.connect(secret) {
            Ok((to, mut from)) if to.send(&hello(d, data, false)).is_ok() => loop {
                match from.recv_until::<ToExecutor>(silent_after) {
                    Ok(Some(ToExecutor::Start { addresses })) => {
                        return Ok((to, from, addresses, early))
                    }
                    Ok(Some(ToExecutor::Command { task, command })) => {
                        early.push((task, command));
                    }
                    Ok(Some(ToExecutor::Leader { term })) => {
                        if !follow(followed, term) {
                            refuse_superseded(&to, &mut from, followed, term);
                            coordinators.pass_over();
                            break;
                        }
                    }
                    // `Start` holds every executor's latest address.
                    Ok(Some(ToExecutor::Redirect { .. } | ToExecutor::Ping)) => {}
                    Ok(Some(ToExecutor::Drain)) => stop.store(true, Ordering::SeqCst),
                    Ok(Some(other)) => {
                        bail!("the coordinator sent {other:?} before starting the executor")
                    }
                    Err(e) if e.to_string().starts_with(proto::REFUSED) => return Err(e),
                    Ok(None) | Err(_) => {
                        tracing::warn!(
                            "the coordinator's connection closed or fell silent before the start: reporting again"
                        );
                        if silent_after.is_some() {
                            coordinators.pass_over();
                        }
                        break;
                    }
                }
            },
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %format!("{e:#}"), "the coordinator is away before the start")
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// The first pause before reporting again to a coordinator.
const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// The pause before reporting again after a connection that lasted `lasted`, the last pause
/// having been `pause`: from the first again after a connection that held (5 s or more),
/// otherwise on from where it was. A coordinator that takes the executor's report and closes
/// at once (an attempt winding down, a stale part) is not asked twenty times a second.
fn pause_after(pause: Duration, lasted: Duration) -> Duration {
    if lasted >= Duration::from_secs(5) {
        FIRST_PAUSE
    } else {
        pause
    }
}

/// Ends the executor whose coordinator refused it, saying `why`: the coordinator gave its
/// attempt up (its worker was declared dead, or it was cancelled) or restored its part
/// elsewhere: nothing of it may go on, nor commit anything.
fn stop_stale(why: &str) -> ! {
    eprintln!("anduin: executor stopping: {why}");
    std::process::exit(i32::from(STALE));
}

/// Ends the process when its stdin closes: the worker that started it has gone.
fn exit_with_worker() {
    let spawned = std::thread::Builder::new()
        .name("anduin-worker-watch".into())
        .spawn(|| {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            eprintln!("anduin: the worker of this executor has gone: stopping at once");
            std::process::exit(i32::from(ORPHANED));
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot watch the worker");
    }
}

/// The executor's connection to the coordinator, kept up while the part runs.
struct Link {
    coordinator: Coordinators,
    /// What the executor says when it (re)connects.
    hello: ToCoordinator,
    /// The connection, while there is one.
    to: Mutex<Option<proto::Sender>>,
    /// The sources that have ended and the acknowledgements of checkpoints not complete yet:
    /// told again to a coordinator that comes back ([`keep_fact`]).
    facts: Mutex<Vec<Event>>,
    /// The part has ended: no more reconnecting (unless `confirming`).
    done: AtomicBool,
    /// Until the part has ended and a coordinator confirmed it heard its last
    /// acknowledgements, or none needed it ([`Link::await_heard`]): an ended part reconnects
    /// meanwhile.
    confirming: AtomicBool,
    /// The cluster's secret.
    secret: Option<Arc<[u8]>>,
    /// The newest complete checkpoint (the edges' backups keep what follows it).
    completed: Arc<AtomicU64>,
    /// Where the other workers' instances are reached.
    peers: Arc<Peers>,
    /// The number of the connection to the coordinator (one more at each reconnection).
    connection: AtomicU64,
    /// The coordinator's leave for the tasks to end their input.
    end: Mutex<EndLeave>,
    end_changed: Condvar,
    /// How long the coordinator may be silent before it is left (one elected by a lease).
    silent_after: Option<Duration>,
    /// The newest leader's term the executor followed (0: none): a coordinator of an older
    /// one is refused ([`follow`]).
    followed: Arc<AtomicU64>,
    /// Set by `ToExecutor::Drain` (`anduin ctl stop`): the run's sources stop.
    stop: Arc<AtomicBool>,
    /// The barriers the coordinator told ([`ToExecutor::Barriers`]), for the run's control
    /// plane once there is one.
    told: Mutex<Told>,
}

/// Barriers told before the run's control plane was made, and that plane once it is.
#[derive(Default)]
struct Told {
    control: Option<Arc<anduin_runtime::control::Control>>,
    early: Vec<(Vec<anduin_types::Barrier>, bool)>,
}

/// Whether the executor, which has followed the leader of term `followed` (0: none yet),
/// follows a coordinator that says it leads at `term`: not if that term is older (a
/// superseded leader that still runs); if it is the same or later, it is followed from now on.
fn follow(followed: &AtomicU64, term: u64) -> bool {
    followed.fetch_max(term, Ordering::SeqCst) <= term
}

/// Refuses a coordinator of `term`, older than the one `followed`, as superseded: it steps
/// down as it reads the refusal.
fn refuse_superseded(
    to: &proto::Sender,
    from: &mut proto::Receiver,
    followed: &AtomicU64,
    term: u64,
) {
    let why = format!(
        "this executor follows the leader of term {}; this coordinator's term {term} is older",
        followed.load(Ordering::SeqCst)
    );
    eprintln!("anduin: executor refused a superseded coordinator: {why}");
    proto::refuse_superseded(to, from, &why);
}

/// What a new connection to a coordinator came to.
enum Reconnected {
    /// The coordinator leads (or no term was ever followed): the commands that come next on
    /// it are this executor's.
    Leading(proto::Receiver),
    /// The coordinator refused this executor at once: its attempt is over, or its part was
    /// restored elsewhere (why).
    Stale(String),
}

/// Where the executor is in asking for leave to end its tasks' input.
#[derive(Debug, Default)]
struct EndLeave {
    /// Given: this executor runs its part, which is no longer restored elsewhere.
    given: bool,
    /// The connection it was last asked on (0: none).
    asked_on: u64,
}

/// How long an executor whose part ended waits, before it ends, for a coordinator to confirm
/// that the checkpoint of its last acknowledgements is settled ([`Link::await_heard`]).
const HEARD_WITHIN: Duration = Duration::from_secs(60);

/// The newest checkpoint after `complete` that `facts` hold an acknowledgement of: one a
/// coordinator may still have to hear of to complete it (`None`: there is none).
fn unheard(facts: &[Event], complete: u64) -> Option<u64> {
    facts
        .iter()
        .filter_map(|f| match f {
            Event::Ack { epoch, .. } if epoch.0 > complete => Some(epoch.0),
            _ => None,
        })
        .max()
}

/// Keeps event `e` among the facts told again to a coordinator that comes back (one that
/// takes the query over knows nothing of what the tasks told the one before): the end of a
/// source's input, or its end at the last barrier in its place (so that a coordinator never
/// hears of a source's end without hearing where it ended), and the tasks'
/// acknowledgements, until their checkpoint is complete ([`forget_completed`]): the last
/// checkpoint the coordinator before began is completed from them.
fn keep_fact(facts: &mut Vec<Event>, e: &Event) {
    match e {
        Event::SourceExhausted { .. } | Event::Ack { .. } => facts.push(e.clone()),
        Event::SourceFinished { task, .. } => {
            facts.retain(|f| !matches!(f, Event::SourceExhausted { task: t, .. } if t == task));
            facts.push(e.clone());
        }
        _ => {}
    }
}

/// Forgets the acknowledgements of checkpoints up to `complete`, which is complete.
fn forget_completed(facts: &mut Vec<Event>, complete: u64) {
    facts.retain(|f| !matches!(f, Event::Ack { epoch, .. } if epoch.0 <= complete));
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("coordinator", &self.coordinator)
            .finish_non_exhaustive()
    }
}

/// A task ends its input (and its sinks commit) only with the coordinator's leave: an
/// executor whose part was restored elsewhere while it was paused or cut off, or whose
/// attempt is over, is refused (the connection closes, the executor learns it is stale and
/// stops) rather than commit what the restored part commits too. While no coordinator is
/// there, the tasks wait for one.
impl anduin_runtime::EndGate for Link {
    fn may_end(&self, task: &str) -> Result<(), String> {
        let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if end.given {
                return Ok(());
            }
            let connection = self.connection.load(Ordering::SeqCst);
            if end.asked_on != connection {
                let to = self.to.lock().unwrap_or_else(|p| p.into_inner());
                if to
                    .as_ref()
                    .is_some_and(|s| s.send(&ToCoordinator::MayEnd).is_ok())
                {
                    end.asked_on = connection;
                    tracing::debug!(task, "asked the coordinator for leave to end the input");
                }
            }
            end = self
                .end_changed
                .wait_timeout(end, Duration::from_millis(500))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

impl Link {
    /// Once the part has ended, if it sent acknowledgements of a checkpoint not known
    /// complete: keeps them (and where its sources ended) until that checkpoint is settled,
    /// before the process ends. The coordinator they went to may die before it completes the
    /// checkpoint — the last one, which the next coordinator completes from them — and what
    /// it read or was written to its connection is lost with it. So the executor asks for
    /// leave to end ([`ToCoordinator::MayExit`]) and waits for the answer: a coordinator
    /// answers once that checkpoint has completed (its manifest written) or was given up, and
    /// one that comes back is told the facts again first. At most `within`: without a
    /// coordinator, the part ends anyway.
    fn await_heard(&self, within: Duration) {
        let deadline = Instant::now() + within;
        let pending = unheard(
            &self.facts.lock().unwrap_or_else(|p| p.into_inner()),
            self.completed.load(Ordering::SeqCst),
        );
        let Some(acked) = pending else {
            self.confirming.store(false, Ordering::SeqCst);
            return;
        };
        let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
        *end = EndLeave::default();
        loop {
            // Its commit came (the checkpoint is complete): nothing is left to tell.
            if end.given || self.completed.load(Ordering::SeqCst) >= acked {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    "no coordinator confirmed the end of this part: its last acknowledgements may be lost"
                );
                break;
            }
            let connection = self.connection.load(Ordering::SeqCst);
            if end.asked_on != connection {
                let to = self.to.lock().unwrap_or_else(|p| p.into_inner());
                if to
                    .as_ref()
                    .is_some_and(|s| s.send(&ToCoordinator::MayExit { acked }).is_ok())
                {
                    end.asked_on = connection;
                }
            }
            end = self
                .end_changed
                .wait_timeout(end, Duration::from_millis(200))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        self.confirming.store(false, Ordering::SeqCst);
    }

    /// Sends `e` on the connection if there is one; a broken connection is dropped.
    fn send(&self, e: &Event) {
        let mut to = self.to.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = to.as_ref() {
            if s.send(&ToCoordinator::Event(e.clone())).is_err() {
                // The tasks keep running; checkpoints wait for a coordinator.
                tracing::warn!("cannot reach the coordinator");
                *to = None;
            }
        }
    }

    /// Says the executor is alive, if connected (before its instances have figures).
    fn send_alive(&self) {
        let to = self.to.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = to.as_ref() {
            let _ = s.send(&ToCoordinator::Alive);
        }
    }

    /// Sends the live figures of the executor's instances, if connected (a coordinator that
    /// is away misses them: the next ones replace them).
    fn send_figures(&self, control: &anduin_runtime::control::Control) {
        let figures = ToCoordinator::Figures(Box::new(control.metrics()));
        let to = self.to.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = to.as_ref() {
            let _ = s.send(&figures);
        }
    }

    /// Sends the tasks' checkpoint events to the coordinator until every task has ended.
    fn forward_events(&self, events: &Receiver<Event>) {
        for e in events {
            keep_fact(
                &mut self.facts.lock().unwrap_or_else(|p| p.into_inner()),
                &e,
            );
            self.send(&e);
        }
        self.done.store(true, Ordering::SeqCst);
    }

    /// Delivers the coordinator's commands; when the connection ends, reconnects (until the
    /// part is over) and reports again.
    fn keep(
        &self,
        mut from: proto::Receiver,
        registered: &Receiver<(usize, Sender<Command>)>,
        early: Early,
    ) {
        let mut tasks: HashMap<usize, Sender<Command>> = HashMap::new();
        for (task, command) in early {
            self.deliver(task, command, registered, &mut tasks);
        }
        let mut pause = FIRST_PAUSE;
        let mut connected = Instant::now();
        loop {
            if let Some(why) = self.dispatch_commands(&mut from, registered, &mut tasks) {
                stop_stale(&why);
            }
            *self.to.lock().unwrap_or_else(|p| p.into_inner()) = None;
            pause = pause_after(pause, connected.elapsed());
            from = loop {
                // An ended part reconnects only to tell what a coordinator may not have heard.
                if self.done.load(Ordering::SeqCst) && !self.confirming.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
                match self.reconnect() {
                    Ok(Reconnected::Leading(r)) => {
                        connected = Instant::now();
                        break r;
                    }
                    Ok(Reconnected::Stale(why)) => stop_stale(&why),
                    Err(e) => {
                        tracing::debug!(error = %format!("{e:#}"), "the coordinator is still away")
                    }
                }
            };
            eprintln!("anduin: executor reported again to the coordinator");
        }
    }

    /// A new connection to the coordinator, on which the executor has reported again and told
    /// which of its sources have ended. Once it has followed a leader's term, it tells nothing
    /// before the coordinator has said its own, and refuses one of an older term (a
    /// superseded leader could complete a checkpoint from the acknowledgements told again).
    fn reconnect(&self) -> Result<Reconnected> {
        let (to, mut from) = self.coordinator.connect(self.secret.as_deref())?;
        to.send(&self.hello)?;
        if self.followed.load(Ordering::SeqCst) > 0 {
            let within = self.silent_after.unwrap_or(proto::ANSWER_WITHIN);
            match from.recv_within::<ToExecutor>(within) {
                Ok(Some(ToExecutor::Leader { term })) if follow(&self.followed, term) => {}
                Ok(Some(ToExecutor::Leader { term })) => {
                    refuse_superseded(&to, &mut from, &self.followed, term);
                    self.coordinator.pass_over();
                    bail!("a superseded coordinator (term {term}) was refused");
                }
                Err(e) if e.to_string().starts_with(proto::REFUSED) => {
                    return Ok(Reconnected::Stale(e.to_string()))
                }
                Ok(other) => {
                    self.coordinator.pass_over();
                    bail!("a coordinator that did not say its term first ({other:?}) was left");
                }
                Err(e) => {
                    self.coordinator.pass_over();
                    return Err(e.context("a coordinator did not say its term"));
                }
            }
        }
        // Held while the facts are told, so that an event forwarded meanwhile is either
        // among them or sent after them on this connection, never lost between.
        let mut slot = self.to.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
            forget_completed(&mut facts, self.completed.load(Ordering::SeqCst));
            for fact in facts.iter() {
                to.send(&ToCoordinator::Event(fact.clone()))?;
            }
        }
        *slot = Some(to);
        drop(slot);
        self.connection.fetch_add(1, Ordering::SeqCst);
        self.end_changed.notify_all();
        Ok(Reconnected::Leading(from))
    }

    /// Delivers the coordinator's commands to the task instances they are for, until the
    /// connection ends; why, when the coordinator refused this executor.
    fn dispatch_commands(
        &self,
        from: &mut proto::Receiver,
        registered: &Receiver<(usize, Sender<Command>)>,
        tasks: &mut HashMap<usize, Sender<Command>>,
    ) -> Option<String> {
        let peers = &self.peers;
        loop {
            let (task, command) = match from.recv_until::<ToExecutor>(self.silent_after) {
                Ok(Some(ToExecutor::Command { task, command })) => (task, command),
                Ok(Some(ToExecutor::Start { .. } | ToExecutor::Ping)) => continue,
                Ok(Some(ToExecutor::Redirect { worker, address })) => {
                    tracing::info!(worker, %address, "a worker's instances were restored elsewhere");
                    peers.redirect(worker, address);
                    continue;
                }
                Ok(Some(ToExecutor::Barriers { barriers, last })) => {
                    self.tell(barriers, last);
                    continue;
                }
                Ok(Some(ToExecutor::EndAllowed)) => {
                    self.end.lock().unwrap_or_else(|p| p.into_inner()).given = true;
                    self.end_changed.notify_all();
                    continue;
                }
                Ok(Some(ToExecutor::Drain)) => {
                    tracing::info!("stopping the sources (anduin ctl stop)");
                    self.stop.store(true, Ordering::SeqCst);
                    // No rescale comes after a stop: a part that runs only instances added
                    // while running ends with them (or at once, without).
                    self.tell(Vec::new(), true);
                    continue;
                }
                Ok(Some(ToExecutor::Leader { term })) => {
                    if follow(&self.followed, term) {
                        continue;
                    }
                    // A superseded leader (the first connection's, at a start that came from
                    // it before a later leader was followed): none of its commands is taken.
                    let to = self.to.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(to) = to {
                        refuse_superseded(&to, from, &self.followed, term);
                    }
                    self.coordinator.pass_over();
                    return None;
                }
                Err(e) if e.to_string().starts_with(proto::REFUSED) => return Some(e.to_string()),
                Err(e) if self.silent_after.is_some() && proto::timed_out(&e) => {
                    // Paused, or cut off: the next coordinator of the list may lead by now.
                    super::say(&format!(
                        "anduin: executor: the coordinator has been silent for {:?}: leaving it",
                        self.silent_after.unwrap_or_default()
                    ));
                    self.coordinator.pass_over();
                    return None;
                }
                Ok(None) | Err(_) => {
                    tracing::warn!("the coordinator's connection closed: checkpoints wait");
                    // The next report begins with the next coordinator of the list (one that
                    // closes at once, a superseded leader still running, would be tried first
                    // again and again).
                    self.coordinator.pass_over();
                    return None;
                }
            };
            self.deliver(task, command, registered, tasks);
        }
    }

    /// The coordinator told `barriers` (see [`ToExecutor::Barriers`]): the run hears them.
    fn tell(&self, barriers: Vec<(u64, Vec<anduin_types::ControlUpdate>)>, last: bool) {
        let barriers: Vec<anduin_types::Barrier> = barriers
            .into_iter()
            .map(|(epoch, control)| anduin_types::Barrier {
                control,
                ..anduin_types::Barrier::checkpoint(Epoch(epoch), false)
            })
            .collect();
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        match told.control.clone() {
            Some(control) => control.told_barriers(barriers, last),
            None => told.early.push((barriers, last)),
        }
    }

    /// The run's control plane is made: it hears the barriers told so far, and those told
    /// from now on.
    fn told_to(&self, control: &Arc<anduin_runtime::control::Control>) {
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        for (barriers, last) in std::mem::take(&mut told.early) {
            control.told_barriers(barriers, last);
        }
        told.control = Some(Arc::clone(control));
    }

    /// Delivers `command` to task instance `task`, once the run has registered it.
    fn deliver(
        &self,
        task: usize,
        command: Command,
        registered: &Receiver<(usize, Sender<Command>)>,
        tasks: &mut HashMap<usize, Sender<Command>>,
    ) {
        if let Command::Commit(epoch) = &command {
            self.completed.fetch_max(epoch.0, Ordering::SeqCst);
            forget_completed(
                &mut self.facts.lock().unwrap_or_else(|p| p.into_inner()),
                epoch.0,
            );
        }
        tasks.extend(registered.try_iter());
        while !tasks.contains_key(&task) {
            // The run registers its tasks before they start: wait for this one.
            match registered.recv() {
                Ok((t, tx)) => {
                    tasks.insert(t, tx);
                }
                Err(_) => break,
            }
        }
        if let Some(tx) = tasks.get(&task) {
            let _ = tx.send(command);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::Epoch;

    #[test]
    fn a_task_s_own_failure_and_a_channel_s_end_the_part_a_consequence_does_not() {
        use anduin_runtime::EngineEvent;
        let task = |own| EngineEvent::TaskFailed {
            task: 1,
            name: "m".into(),
            error: "Divide by zero".into(),
            own,
        };
        assert_eq!(part_failure(&task(true)).as_deref(), Some("Divide by zero"));
        assert_eq!(part_failure(&task(false)), None);
        let edge = EngineEvent::EdgeFailed {
            edge: "channel 2 (gen -> w #1, port 0)".into(),
            error: "the consumer refused the edge: enough".into(),
        };
        assert_eq!(
            part_failure(&edge).as_deref(),
            Some("channel 2 (gen -> w #1, port 0): the consumer refused the edge: enough")
        );
    }

    fn ack(epoch: u64, task: usize) -> Event {
        Event::Ack {
            epoch: Epoch(epoch),
            task,
            states: Vec::new(),
            files: Vec::new(),
        }
    }

    fn told(facts: &[Event]) -> Vec<String> {
        facts
            .iter()
            .map(|f| match f {
                Event::SourceExhausted { task, .. } => format!("exhausted {task}"),
                Event::SourceFinished { task, epoch, .. } => {
                    format!("finished {task} at {}", epoch.0)
                }
                Event::Ack { task, epoch, .. } => format!("ack {task} of {}", epoch.0),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_connection_closed_at_once_does_not_make_the_next_report_come_sooner() {
        let grown = Duration::from_millis(800);
        assert_eq!(pause_after(grown, Duration::from_millis(20)), grown);
        assert_eq!(pause_after(grown, Duration::from_secs(30)), FIRST_PAUSE);
    }

    #[test]
    fn an_executor_follows_the_same_or_a_later_term_and_refuses_an_older() {
        let followed = AtomicU64::new(0);
        // None followed yet: any term is.
        assert!(follow(&followed, 2));
        assert!(follow(&followed, 2));
        assert!(follow(&followed, 5));
        assert_eq!(followed.load(Ordering::SeqCst), 5);
        // A leader superseded since: refused, and the term followed stays.
        assert!(!follow(&followed, 3));
        assert_eq!(followed.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn an_ended_part_waits_on_the_newest_checkpoint_it_acknowledged_that_is_not_complete() {
        let facts = [
            ack(2, 0),
            ack(3, 1),
            Event::SourceFinished {
                task: 0,
                epoch: Epoch(3),
                stopped: false,
            },
            ack(3, 0),
        ];
        assert_eq!(unheard(&facts, 1), Some(3));
        assert_eq!(unheard(&facts, 2), Some(3));
        // Its commit came: nothing is left for a coordinator to hear.
        assert_eq!(unheard(&facts, 3), None);
        assert_eq!(unheard(&[], 0), None);
    }

    #[test]
    fn a_coordinator_that_comes_back_hears_where_each_source_ended_and_the_acks_not_complete() {
        let mut facts = Vec::new();
        for e in [
            ack(2, 0),
            Event::SourceExhausted {
                task: 0,
                stopped: false,
            },
            Event::WantCheckpoint,
            Event::SourceExhausted {
                task: 1,
                stopped: false,
            },
            ack(2, 1),
            ack(3, 0),
            Event::SourceFinished {
                task: 0,
                epoch: Epoch(3),
                stopped: false,
            },
        ] {
            keep_fact(&mut facts, &e);
        }
        // Checkpoint 2 completed: its acknowledgements go.
        forget_completed(&mut facts, 2);
        assert_eq!(
            told(&facts),
            ["exhausted 1", "ack 0 of 3", "finished 0 at 3"]
        );
    }
}
