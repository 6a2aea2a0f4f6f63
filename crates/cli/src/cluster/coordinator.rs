//! The coordinator process (the paper's query scheduler): workers register with it and
//! heartbeat; clients submit, inspect and cancel queries; each query is driven through its
//! attempts by a driver thread of its own ([`super::driver`]). One thread per connection.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::driver::{self, Attempt};
use super::proto::{self, QueryStatus, Reply, Submission, ToCoordinator, ToWorker};
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
    /// Where every query's checkpoints go: a directory every worker reaches at the same path
    /// (a shared file system), or `file:///path`.
    #[arg(long, value_name = "DIR")]
    pub checkpoint_store: String,
    /// A worker not heard from for this long is dead: its queries recover on the others.
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub heartbeat_timeout: Duration,
    /// Write the address the coordinator listens on to this file once it listens (for
    /// scripts and `anduin cluster`, with `--listen 127.0.0.1:0`).
    #[arg(long, value_name = "FILE")]
    pub address_file: Option<PathBuf>,
}

/// A registered worker.
pub struct WorkerEntry {
    pub name: String,
    pub slots: u32,
    pub to: proto::Sender,
    pub last_seen: Instant,
    pub alive: bool,
}

/// A query the coordinator knows.
pub struct QueryEntry {
    pub submission: Submission,
    pub status: QueryStatus,
    pub cancel: bool,
    /// The current attempt's state, while one runs.
    pub attempt: Option<Attempt>,
}

/// Everything the coordinator knows, behind one lock; `changed` wakes the drivers.
pub struct Cluster {
    pub addr: SocketAddr,
    pub state_dir: PathBuf,
    pub checkpoints: PathBuf,
    pub heartbeat_timeout: Duration,
    state: Mutex<State>,
    pub changed: Condvar,
}

#[derive(Default)]
pub struct State {
    pub workers: BTreeMap<u32, WorkerEntry>,
    pub queries: BTreeMap<String, QueryEntry>,
    next_worker: u32,
}

impl Cluster {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on `changed` for at most `timeout`.
    pub fn wait<'a>(&self, guard: MutexGuard<'a, State>, timeout: Duration) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(guard, timeout)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    }
}

pub fn coordinator(args: CoordinatorArgs) -> Result<ExitCode> {
    if !args.listen.ip().is_loopback() {
        bail!(
            "not supported yet: a coordinator listening beyond loopback ({}) needs a cluster secret, which anduin does not have yet; listen on 127.0.0.1",
            args.listen
        );
    }
    let checkpoints = PathBuf::from(
        args.checkpoint_store
            .strip_prefix("file://")
            .unwrap_or(&args.checkpoint_store),
    );
    if args.checkpoint_store.contains("://") && !args.checkpoint_store.starts_with("file://") {
        bail!(
            "not supported yet: checkpoint store `{}`: give a directory or file:///path",
            args.checkpoint_store
        );
    }
    for dir in [&args.state_dir, &checkpoints] {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let socket = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = socket.local_addr()?;
    let cluster = Arc::new(Cluster {
        addr,
        state_dir: args.state_dir.clone(),
        checkpoints,
        heartbeat_timeout: args.heartbeat_timeout,
        state: Mutex::default(),
        changed: Condvar::new(),
    });
    if let Some(f) = &args.address_file {
        let tmp = f.with_extension("tmp");
        std::fs::write(&tmp, addr.to_string())?;
        std::fs::rename(&tmp, f)?;
    }
    eprintln!("anduin: coordinator listening on {addr}");
    {
        let cluster = Arc::clone(&cluster);
        std::thread::Builder::new()
            .name("anduin-liveness".into())
            .spawn(move || watch_liveness(&cluster))?;
    }
    for conn in socket.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                continue;
            }
        };
        let cluster = Arc::clone(&cluster);
        std::thread::Builder::new()
            .name("anduin-conn".into())
            .spawn(move || {
                if let Err(e) = serve(stream, &cluster) {
                    tracing::warn!(error = %format!("{e:#}"), "a connection failed");
                }
            })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Declares dead the workers not heard from within the timeout.
fn watch_liveness(cluster: &Cluster) {
    loop {
        std::thread::sleep(cluster.heartbeat_timeout / 5);
        let mut state = cluster.lock();
        let mut died = false;
        for (id, w) in state.workers.iter_mut() {
            if w.alive && w.last_seen.elapsed() > cluster.heartbeat_timeout {
                eprintln!(
                    "anduin: worker {} (id {id}) missed its heartbeats for {:?}: declared dead",
                    w.name, cluster.heartbeat_timeout
                );
                w.alive = false;
                w.to.close();
                died = true;
            }
        }
        if died {
            cluster.changed.notify_all();
        }
    }
}

/// One connection: what its first message says it is.
fn serve(stream: TcpStream, cluster: &Arc<Cluster>) -> Result<()> {
    let (to, mut from) = proto::split(stream)?;
    let Some(first) = from.recv::<ToCoordinator>()? else {
        return Ok(());
    };
    match first {
        ToCoordinator::Worker { name, slots } => serve_worker(cluster, name, slots, to, from),
        ToCoordinator::Executor {
            query,
            attempt,
            worker,
            data,
        } => driver::serve_executor(cluster, &query, attempt, worker, data, to, from),
        ToCoordinator::Submit(s) => {
            let reply = submit(cluster, s);
            to.send(&reply)
        }
        ToCoordinator::Status { query } => {
            let state = cluster.lock();
            let list = state
                .queries
                .iter()
                .filter(|(n, _)| query.as_ref().is_none_or(|q| q == *n))
                .map(|(_, q)| q.status.clone())
                .collect::<Vec<_>>();
            let workers = state
                .workers
                .iter()
                .map(|(id, w)| proto::WorkerStatus {
                    id: *id,
                    name: w.name.clone(),
                    slots: w.slots,
                    alive: w.alive,
                })
                .collect();
            drop(state);
            match (&query, list.is_empty()) {
                (Some(q), true) => to.send(&Reply::Refused(format!("no query named \"{q}\""))),
                _ => to.send(&Reply::Status {
                    workers,
                    queries: list,
                }),
            }
        }
        ToCoordinator::Cancel { query } => {
            let mut state = cluster.lock();
            let reply = match state.queries.get_mut(&query) {
                Some(q) if q.status.is_over() => {
                    Reply::Refused(format!("query \"{query}\" is already {}", q.status.state))
                }
                Some(q) => {
                    q.cancel = true;
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
    to: proto::Sender,
    mut from: proto::Receiver,
) -> Result<()> {
    let id = {
        let mut state = cluster.lock();
        let id = state.next_worker;
        state.next_worker += 1;
        state.workers.insert(
            id,
            WorkerEntry {
                name: name.clone(),
                slots,
                to: to.clone(),
                last_seen: Instant::now(),
                alive: true,
            },
        );
        id
    };
    to.send(&ToWorker::Welcome { worker: id })?;
    eprintln!("anduin: worker {name} (id {id}) joined with {slots} slots");
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
                error,
            })) => {
                if let Some(a) = state
                    .queries
                    .get_mut(&query)
                    .and_then(|q| q.attempt.as_mut())
                    .filter(|a| a.number == attempt)
                {
                    a.ended.insert(id, error);
                }
                cluster.changed.notify_all();
            }
            Ok(Some(other)) => tracing::warn!(?other, worker = id, "unexpected from a worker"),
            Ok(None) | Err(_) => {
                if let Some(w) = state.workers.get_mut(&id) {
                    if w.alive {
                        eprintln!("anduin: worker {name} (id {id}) closed its connection: declared dead");
                    }
                    w.alive = false;
                }
                cluster.changed.notify_all();
                return Ok(());
            }
        }
    }
}

/// Accepts a submission: checks it compiles, keeps its file, starts its driver.
fn submit(cluster: &Arc<Cluster>, s: Submission) -> Reply {
    if anduin_api::usable_name(&s.name).as_deref() != Some(s.name.as_str()) {
        return Reply::Refused(format!(
            "\"{}\" is not a usable query name: letters, digits, `-` and `_`",
            s.name
        ));
    }
    let dir = cluster.state_dir.join("queries").join(&s.name);
    let prepared = driver::prepare(&dir, &s);
    let mut state = cluster.lock();
    if let Some(q) = state.queries.get(&s.name) {
        if !q.status.is_over() {
            return Reply::Refused(format!(
                "a query named \"{}\" is already {}: cancel it or choose another name (--name)",
                s.name, q.status.state
            ));
        }
    }
    let compiled = match prepared {
        Ok(c) => c,
        Err(e) => return Reply::Refused(format!("{e:#}")),
    };
    let name = s.name.clone();
    state.queries.insert(
        name.clone(),
        QueryEntry {
            submission: s,
            status: QueryStatus {
                name: name.clone(),
                state: "submitted".into(),
                attempt: 0,
                placement: BTreeMap::new(),
                last_checkpoint: None,
                error: None,
            },
            cancel: false,
            attempt: None,
        },
    );
    drop(state);
    let cluster2 = Arc::clone(cluster);
    let query = name.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("anduin-driver-{name}"))
        .spawn(move || driver::drive(&cluster2, &query, compiled));
    match spawned {
        Ok(_) => Reply::Submitted { query: name },
        Err(e) => Reply::Refused(format!("cannot start the query's driver: {e}")),
    }
}
