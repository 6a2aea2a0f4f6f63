//! A query's driver in the coordinator: places the query's task instances on live workers'
//! slots, deploys one part per worker, waits for every part's executor, starts them and runs
//! the query's checkpoint coordinator; when a part fails or a worker dies, it cancels the
//! attempt everywhere and starts a new one from the last complete checkpoint (the
//! whole-query rollback; per-task recovery with upstream backup is not there yet).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_checkpoint::recovery::RecoveryPlan;
use anduin_checkpoint::{Store, Validated};
use anduin_graph::{PhysicalPlan, PlanOptions};
use anduin_operator_api::Bound;
use anduin_runtime::{Checkpointing, EngineEvent, Event, RunConfig, Subscriber, Topology};
use anduin_spec::Missing;
use anyhow::{bail, Context, Result};
use clap::Parser;

use super::coordinator::{Cluster, State};
use super::proto::{self, Deployment, Submission, ToExecutor, ToWorker};
use crate::cmd::run::{checkpoint_settings, RunArgs};
use crate::load::{load_with, LoadError, Loaded};

/// How long the executors of an attempt have to start and report where they listen.
const EXECUTORS_WITHIN: Duration = Duration::from_secs(60);
/// How long the parts of a cancelled attempt have to end.
const CANCEL_WITHIN: Duration = Duration::from_secs(30);
/// Attempts before a query is failed.
const MAX_ATTEMPTS: u64 = 10;

/// The flags of a submission, parsed as `anduin run` parses them.
#[derive(Parser)]
#[command(name = "anduin submit")]
struct AsRun {
    #[command(flatten)]
    run: RunArgs,
}

/// A submitted query, compiled.
pub struct Compiled {
    pub args: RunArgs,
    pub loaded: Loaded,
    /// The task instances of its plan, and which of them a source heads.
    pub instances: usize,
}

/// The state of one attempt of a query.
pub struct Attempt {
    pub number: u64,
    /// The workers given a part.
    pub workers: BTreeSet<u32>,
    /// The executors that have reported, by worker: how to reach them and where they listen.
    pub executors: BTreeMap<u32, (proto::Sender, SocketAddr)>,
    /// The parts that have ended, by worker: `None` when they finished.
    pub ended: BTreeMap<u32, Option<String>>,
    /// Where executors' events go; taken by each executor's connection, dropped by the driver
    /// once every executor has reported.
    pub events: Option<crossbeam_channel::Sender<Event>>,
}

/// Keeps a submission's file in `dir` and compiles it as its workers will.
pub fn prepare(dir: &Path, s: &Submission) -> Result<Compiled> {
    for refused in [
        "--checkpoint-dir",
        "--from-scratch",
        "--loopback-workers",
        "--cluster-part",
        "--events",
        "--api",
    ] {
        if s.args.iter().any(|a| a == refused || a.starts_with(&format!("{refused}="))) {
            bail!("`anduin submit` does not take {refused}: the coordinator chooses it");
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let file = dir.join(&s.file_name);
    std::fs::write(&file, &s.source)
        .with_context(|| format!("cannot write `{}`", file.display()))?;
    let argv = std::iter::once("anduin submit".to_string())
        .chain(std::iter::once(file.display().to_string()))
        .chain(s.args.iter().cloned());
    let args = AsRun::try_parse_from(argv)
        .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim_end()))?
        .run;
    let loaded = match load_with(&file, &args.vars, Missing::Error, &args.engine.defaults()) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            let lines: Vec<String> = d
                .0
                .iter()
                .map(|x| format!("{}:{x}", s.file_name))
                .collect();
            bail!("the query has problems:\n{}", lines.join("\n"))
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    let instances = topology(&loaded, &args).instances().count();
    Ok(Compiled {
        args,
        loaded,
        instances,
    })
}

fn topology(loaded: &Loaded, args: &RunArgs) -> Topology {
    let plan = PhysicalPlan::plan(&loaded.graph, plan_options(args));
    Topology::new(&loaded.graph, &plan, |n| matches!(n.bound, Bound::Source(_)))
}

fn plan_options(args: &RunArgs) -> PlanOptions {
    PlanOptions {
        chaining: !args.engine.no_chaining,
        default_parallelism: args.engine.parallelism,
    }
}

/// Why an attempt ended.
enum Outcome {
    Finished,
    Cancelled,
    Failed(String),
}

/// Drives query `name` until it finishes, fails or is cancelled.
pub fn drive(cluster: &Arc<Cluster>, name: &str, compiled: Compiled) {
    let dir = cluster.checkpoints.join(name);
    let mut number = 0;
    loop {
        number += 1;
        let outcome = match attempt(cluster, name, &compiled, &dir, number) {
            Ok(o) => o,
            Err(e) => Outcome::Failed(format!("{e:#}")),
        };
        let mut state = cluster.lock();
        let Some(q) = state.queries.get_mut(name) else {
            return;
        };
        q.attempt = None;
        match outcome {
            Outcome::Finished => {
                q.status.state = "finished".into();
                eprintln!("anduin: query {name} finished");
                break;
            }
            Outcome::Cancelled => {
                q.status.state = "cancelled".into();
                eprintln!("anduin: query {name} cancelled");
                break;
            }
            Outcome::Failed(why) if number >= MAX_ATTEMPTS || q.cancel => {
                q.status.state = if q.cancel { "cancelled" } else { "failed" }.into();
                eprintln!("anduin: query {name} failed after {number} attempts: {why}");
                q.status.error = Some(why);
                break;
            }
            Outcome::Failed(why) => {
                eprintln!("anduin: query {name}, attempt {number} failed: {why}; recovering from the last checkpoint");
                q.status.state = "recovering".into();
                q.status.error = Some(why);
            }
        }
    }
    cluster.changed.notify_all();
}

/// One attempt: place, deploy, start, run, and wind down.
fn attempt(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    number: u64,
) -> Result<Outcome> {
    let Some(placement) = place(cluster, name, compiled.instances)? else {
        return Ok(Outcome::Cancelled);
    };
    let restore = match recovery(dir)? {
        Recovery::Finished => return Ok(Outcome::Finished),
        Recovery::From(v) => v,
    };
    let restore_epoch = restore.as_ref().map(|v| v.manifest.epoch);
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    let workers: BTreeSet<u32> = placement.iter().copied().collect();
    {
        let mut state = cluster.lock();
        let names: BTreeMap<String, usize> =
            placement.iter().fold(BTreeMap::new(), |mut m, w| {
                let n = state
                    .workers
                    .get(w)
                    .map_or_else(|| w.to_string(), |e| e.name.clone());
                *m.entry(n).or_default() += 1;
                m
            });
        let q = state.queries.get_mut(name).context("the query is gone")?;
        q.status.state = "scheduling".into();
        q.status.attempt = number;
        q.status.placement = names;
        q.attempt = Some(Attempt {
            number,
            workers: workers.clone(),
            executors: BTreeMap::new(),
            ended: BTreeMap::new(),
            events: Some(events_tx),
        });
        let submission = q.submission.clone();
        for w in &workers {
            let d = Deployment {
                query: name.to_string(),
                attempt: number,
                worker: *w,
                submission: submission.clone(),
                placement: placement.clone(),
                checkpoint_dir: dir.to_path_buf(),
                restore: restore_epoch,
                coordinator: cluster.addr,
            };
            if let Some(entry) = state.workers.get(w) {
                let _ = entry.to.send(&ToWorker::Deploy(d));
            }
        }
    }
    // Every executor reports where it listens; then all start.
    let deadline = Instant::now() + EXECUTORS_WITHIN;
    let executors = {
        let mut state = cluster.lock();
        loop {
            if let Some(outcome) = trouble(&state, name, number) {
                drop(state);
                return Ok(wind_down(cluster, name, number, outcome));
            }
            let a = current(&state, name, number).context("the attempt is gone")?;
            if a.executors.len() == a.workers.len() {
                break a.executors.clone();
            }
            if Instant::now() > deadline {
                drop(state);
                let why = format!(
                    "the executors of attempt {number} did not all start within {EXECUTORS_WITHIN:?}"
                );
                return Ok(wind_down(cluster, name, number, Outcome::Failed(why)));
            }
            state = cluster.wait(state, Duration::from_millis(200));
        }
    };
    if let Some(a) = cluster
        .lock()
        .queries
        .get_mut(name)
        .and_then(|q| q.attempt.as_mut())
    {
        a.events = None;
    }
    let addresses: BTreeMap<u32, SocketAddr> =
        executors.iter().map(|(w, (_, addr))| (*w, *addr)).collect();
    let mut tasks = BTreeMap::new();
    for (instance, worker) in placement.iter().enumerate() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tasks.insert(instance, tx);
        let to = executors
            .get(worker)
            .map(|(s, _)| s.clone())
            .context("an executor is missing")?;
        std::thread::Builder::new()
            .name("anduin-commands-out".into())
            .spawn(move || {
                for command in rx {
                    let _ = to.send(&ToExecutor::Command {
                        task: instance,
                        command,
                    });
                }
            })?;
    }
    let config = RunConfig {
        chaining: !compiled.args.engine.no_chaining,
        parallelism: compiled.args.engine.parallelism,
        checkpointing: Some(Checkpointing {
            settings: checkpoint_settings(&compiled.args, dir),
            restore,
            faults: anduin_runtime::Faults::default(),
            remote: None,
        }),
        events: anduin_runtime::Events::logged().with(Arc::new(LastCheckpoint {
            cluster: Arc::clone(cluster),
            query: name.to_string(),
        })),
        ..RunConfig::default()
    };
    let checkpointer = anduin_runtime::coordinate(&compiled.loaded.graph, &config, tasks, events_rx)
        .context("cannot start the checkpoint coordinator")?;
    for (to, _) in executors.values() {
        let _ = to.send(&ToExecutor::Start {
            addresses: addresses.clone(),
        });
    }
    set_state(cluster, name, "running");
    eprintln!("anduin: query {name}, attempt {number}: running on {} workers", workers.len());
    let outcome = {
        let mut state = cluster.lock();
        loop {
            if let Some(outcome) = trouble(&state, name, number) {
                break outcome;
            }
            let a = current(&state, name, number).context("the attempt is gone")?;
            if a.workers.iter().all(|w| matches!(a.ended.get(w), Some(None))) {
                break Outcome::Finished;
            }
            state = cluster.wait(state, Duration::from_millis(500));
        }
    };
    let outcome = match outcome {
        Outcome::Finished => outcome,
        other => wind_down(cluster, name, number, other),
    };
    // Its event senders are gone with the executors' connections: it has completed what it
    // could.
    let _ = checkpointer.join();
    Ok(match outcome {
        // The last checkpoint says whether the query got to its end.
        Outcome::Finished => match recovery(dir)? {
            Recovery::Finished => Outcome::Finished,
            Recovery::From(_) => Outcome::Failed(
                "every part ended, but the last checkpoint does not cover the end of the input".into(),
            ),
        },
        other => other,
    })
}

/// Waits until `instances` slots are free on live workers (or the query is cancelled), and
/// places the instances over the workers, least used first.
fn place(cluster: &Cluster, name: &str, instances: usize) -> Result<Option<Vec<u32>>> {
    let mut state = cluster.lock();
    let mut told = false;
    loop {
        if state.queries.get(name).is_none_or(|q| q.cancel) {
            return Ok(None);
        }
        let mut free: BTreeMap<u32, u32> = state
            .workers
            .iter()
            .filter(|(_, w)| w.alive)
            .map(|(id, w)| (*id, w.slots))
            .collect();
        for (q, entry) in &state.queries {
            if q == name {
                continue;
            }
            if let Some(a) = &entry.attempt {
                for w in &a.workers {
                    if let Some(f) = free.get_mut(w) {
                        *f = f.saturating_sub(1);
                    }
                }
            }
        }
        let total: u64 = free.values().map(|f| u64::from(*f)).sum();
        if total >= instances as u64 {
            let mut placement = Vec::with_capacity(instances);
            let mut used: BTreeMap<u32, u32> = free.keys().map(|w| (*w, 0)).collect();
            for _ in 0..instances {
                let w = *used
                    .iter()
                    .filter(|(w, n)| **n < free[*w])
                    .min_by_key(|(w, n)| (**n, **w))
                    .map(|(w, _)| w)
                    .expect("enough free slots in total");
                *used.get_mut(&w).expect("a live worker") += 1;
                placement.push(w);
            }
            return Ok(Some(placement));
        }
        if !told {
            let why = format!("needs {instances} slots; {total} are free on live workers: waiting for workers");
            eprintln!("anduin: query {name} {why}");
            if let Some(q) = state.queries.get_mut(name) {
                q.status.state = "scheduling".into();
                q.status.error = Some(why);
            }
            told = true;
        }
        state = cluster.wait(state, Duration::from_secs(1));
    }
}

enum Recovery {
    Finished,
    From(Option<Validated>),
}

/// Which checkpoint the next attempt resumes from (incomplete ones are removed).
fn recovery(dir: &Path) -> Result<Recovery> {
    let store = Store::open(dir)
        .with_context(|| format!("cannot use the checkpoint directory `{}`", dir.display()))?;
    let (plan, validated) = store.recovery(false)?;
    Ok(match plan {
        RecoveryPlan::Fresh { remove, .. } => {
            store.remove(&remove)?;
            Recovery::From(None)
        }
        RecoveryPlan::Finished { remove, .. } => {
            store.remove(&remove)?;
            Recovery::Finished
        }
        RecoveryPlan::Restore { remove, .. } => {
            store.remove(&remove)?;
            Recovery::From(validated)
        }
        RecoveryPlan::Unusable { problems } => {
            let list: Vec<String> = problems
                .iter()
                .map(|(e, why)| format!("checkpoint {}: {why}", e.0))
                .collect();
            bail!("no usable checkpoint in {}: {}", dir.display(), list.join("; "))
        }
    })
}

fn current<'a>(state: &'a State, name: &str, number: u64) -> Option<&'a Attempt> {
    state
        .queries
        .get(name)?
        .attempt
        .as_ref()
        .filter(|a| a.number == number)
}

/// What stops the attempt, if anything: a cancel, a part that failed, a dead worker.
fn trouble(state: &State, name: &str, number: u64) -> Option<Outcome> {
    let q = state.queries.get(name)?;
    if q.cancel {
        return Some(Outcome::Cancelled);
    }
    let a = current(state, name, number)?;
    for w in &a.workers {
        if let Some(Some(why)) = a.ended.get(w) {
            let worker = state.workers.get(w).map_or("?", |e| e.name.as_str());
            return Some(Outcome::Failed(format!("the part on worker {worker}: {why}")));
        }
        if !state.workers.get(w).is_some_and(|e| e.alive) {
            let worker = state.workers.get(w).map_or("?", |e| e.name.as_str());
            return Some(Outcome::Failed(format!("worker {worker} died")));
        }
    }
    None
}

/// Cancels every part of the attempt still running and waits (bounded) for them to end.
fn wind_down(cluster: &Cluster, name: &str, number: u64, outcome: Outcome) -> Outcome {
    let mut state = cluster.lock();
    if let Some(a) = current(&state, name, number) {
        for w in &a.workers {
            if let Some(entry) = state.workers.get(w).filter(|e| e.alive) {
                let _ = entry.to.send(&ToWorker::Cancel {
                    query: name.to_string(),
                    attempt: number,
                });
            }
        }
    }
    let deadline = Instant::now() + CANCEL_WITHIN;
    loop {
        let Some(a) = current(&state, name, number) else {
            break;
        };
        let done = a.workers.iter().all(|w| {
            a.ended.contains_key(w) || !state.workers.get(w).is_some_and(|e| e.alive)
        });
        if done || Instant::now() > deadline {
            break;
        }
        state = cluster.wait(state, Duration::from_millis(200));
    }
    if let Some(a) = state
        .queries
        .get_mut(name)
        .and_then(|q| q.attempt.as_mut())
        .filter(|a| a.number == number)
    {
        for (to, _) in a.executors.values() {
            to.close();
        }
        a.events = None;
    }
    outcome
}

fn set_state(cluster: &Cluster, name: &str, to: &str) {
    if let Some(q) = cluster.lock().queries.get_mut(name) {
        q.status.state = to.into();
    }
}

/// An executor's connection: registered with its attempt, then its events go to the
/// attempt's checkpoint coordinator. An executor of an attempt that is over is turned away.
pub fn serve_executor(
    cluster: &Arc<Cluster>,
    query: &str,
    attempt: u64,
    worker: u32,
    data: SocketAddr,
    to: proto::Sender,
    mut from: proto::Receiver,
) -> Result<()> {
    let events = {
        let mut state = cluster.lock();
        let Some(a) = state
            .queries
            .get_mut(query)
            .and_then(|q| q.attempt.as_mut())
            .filter(|a| a.number == attempt && a.workers.contains(&worker))
        else {
            to.close();
            bail!("an executor of query {query}, attempt {attempt} on worker {worker}, which is not running");
        };
        let Some(events) = a.events.clone() else {
            to.close();
            bail!("an executor of query {query}, attempt {attempt} reported too late");
        };
        a.executors.insert(worker, (to, data));
        cluster.changed.notify_all();
        events
    };
    while let Some(msg) = from.recv::<proto::ToCoordinator>()? {
        match msg {
            proto::ToCoordinator::Event(e) => {
                let _ = events.send(e);
            }
            other => tracing::warn!(?other, "unexpected from an executor"),
        }
    }
    Ok(())
}

/// Keeps a query's status up to date with its checkpoints.
struct LastCheckpoint {
    cluster: Arc<Cluster>,
    query: String,
}

impl Subscriber for LastCheckpoint {
    fn event(&self, event: &EngineEvent) {
        if let EngineEvent::CheckpointCompleted { epoch, .. } = event {
            if let Some(q) = self.cluster.lock().queries.get_mut(&self.query) {
                q.status.last_checkpoint = Some(*epoch);
            }
        }
    }
}

