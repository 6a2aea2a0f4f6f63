//! A worker: offers its slots to the coordinator, heartbeats, and runs each part of a query
//! it is given as an executor process of its own (killed when the coordinator cancels the
//! attempt). When the coordinator goes away, the worker's executors keep running while it
//! tries to reach the coordinator again; it then registers under its old number, and reports
//! the parts that ended meanwhile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::coordinators::{standing_by, Coordinators, NO_LEADER};
use super::proto::{self, Deployment, ToCoordinator, ToWorker};
use super::secret::{check_listen, SecretArgs};
use crate::embedded::parse_duration;

/// Arguments of `anduin worker`.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The coordinator's address; several (`a:7400,b:7400`) when coordinators elect a leader
    /// (`anduin coordinator --leader-election`): the worker registers with the one that
    /// leads, and with the next leader when that one goes away.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]")]
    pub coordinator: Coordinators,
    /// How many task instances this worker runs at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub slots: u32,
    /// The worker's name in `anduin status` (default: worker-PID).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the worker keeps the files of the parts it runs (default: a directory in the
    /// system's temporary directory).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// How often the worker tells the coordinator it is alive.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub heartbeat_interval: Duration,
    /// The address this worker's executors listen on for channels from other workers (a
    /// port the system chooses): one the other workers reach.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub data_host: std::net::IpAddr,
    #[command(flatten)]
    pub secret: SecretArgs,
}

/// The environment variable through which a worker tells its executors where to listen.
pub const DATA_HOST_ENV: &str = "ANDUIN_CLUSTER_DATA_HOST";

/// Which executor: its query, attempt, part (whose instances) and the part's incarnation (a
/// part restored here after failing here has an executor of each).
type Key = (String, u64, u32, u64);

/// The executors this worker runs.
type Executors = Arc<Mutex<HashMap<Key, Child>>>;

/// The connection to the coordinator, while there is one, and the reports it has not noted.
#[derive(Default)]
struct Link {
    to: Option<proto::Sender>,
    /// The ends of parts ([`ToCoordinator::PartEnded`]) that no coordinator has noted yet.
    /// A report written to a coordinator is not one it read: killed first, it takes the
    /// report with it, and the next coordinator would wait for the part's executor, which
    /// is gone, until it gave the part (or, every part having ended, the attempt) up. So
    /// each is told again to every coordinator the worker registers with, until one answers
    /// [`ToWorker::EndNoted`].
    unnoted: Vec<ToCoordinator>,
}

type SharedLink = Arc<Mutex<Link>>;

/// Sends the end of a part to the coordinator if it is there, and keeps it until the
/// coordinator notes it.
fn report(link: &SharedLink, msg: ToCoordinator) {
    let mut l = link.lock().unwrap_or_else(|p| p.into_inner());
    if l.to.as_ref().is_some_and(|to| to.send(&msg).is_err()) {
        l.to = None;
    }
    l.unnoted.push(msg);
}

/// Forgets the end of a part the coordinator has noted.
fn noted(link: &SharedLink, query: &str, attempt: u64, part: u32, incarnation: u64) {
    let mut l = link.lock().unwrap_or_else(|p| p.into_inner());
    l.unnoted.retain(|m| {
        !matches!(m, ToCoordinator::PartEnded { query: q, attempt: a, part: p, incarnation: i, .. }
            if q == query && *a == attempt && *p == Some(part) && *i == incarnation)
    });
}

pub fn worker(args: WorkerArgs) -> Result<ExitCode> {
    if args.heartbeat_interval < MIN_HEARTBEAT_INTERVAL {
        bail!(
            "--heartbeat-interval {:?} is too short: give at least {MIN_HEARTBEAT_INTERVAL:?} \
             (the default is 1s; it must stay below half the coordinator's --heartbeat-timeout)",
            args.heartbeat_interval
        );
    }
    let secret = args.secret.load()?;
    check_listen("a worker's executors listening", args.data_host, &secret)?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("worker-{}", std::process::id()));
    let work_dir = args
        .work_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("anduin-{name}")));
    std::fs::create_dir_all(&work_dir)
        .with_context(|| format!("cannot create the work directory `{}`", work_dir.display()))?;
    // One worker per work directory: two would mix their parts' files.
    let _work_dir_lock = anduin_checkpoint::OwnerLock::acquire(
        &work_dir.join("WORKER.LOCK"),
        &format!(
            "the work directory `{}` (another worker uses it: give this one its own --work-dir)",
            work_dir.display()
        ),
    )?;
    let executors: Executors = Arc::default();
    let link: SharedLink = Arc::default();
    {
        let link = Arc::clone(&link);
        let every = args.heartbeat_interval;
        std::thread::Builder::new()
            .name("anduin-heartbeat".into())
            .spawn(move || loop {
                {
                    let mut l = link.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(to) = &l.to {
                        if to.send(&ToCoordinator::Heartbeat).is_err() {
                            l.to = None;
                        }
                    }
                }
                std::thread::sleep(every);
            })?;
    }
    let mut id: Option<u32> = None;
    // The newest leader's term seen: an older leader is not registered with again.
    let mut term: Option<u64> = None;
    let mut pause = Duration::from_millis(50);
    // Failed tries to register again since the coordinator was lost.
    let mut tries = 0u64;
    // The last coordinator of an older term left, as the worker said it.
    let mut refused: Option<String> = None;
    loop {
        let (to, mut from, silent_after) = match register(&args, &name, id, term, secret.as_deref())
        {
            Ok(Some((worker, offered, silent_after, to, from))) => {
                term = offered.or(term);
                if id.is_none() {
                    eprintln!(
                        "anduin: worker {name} (id {worker}) registered with the coordinator at {}",
                        args.coordinator
                    );
                } else {
                    eprintln!("anduin: worker {name} (id {worker}) registered again");
                }
                id = Some(worker);
                if let Some(silent) = silent_after {
                    // A paused coordinator of the list is given up as soon as it would be
                    // left for its silence.
                    args.coordinator.answer_within(silent);
                }
                pause = Duration::from_millis(50);
                tries = 0;
                (to, from, silent_after)
            }
            // The name is held for a worker that may come back (maybe this one, restarted):
            // tried again until it is back (then refused as a live one) or declared dead.
            Err(e) if format!("{e:#}").contains(proto::NAME_HELD) => {
                // The refusal, without what the read that carried it adds.
                let full = format!("{e:#}");
                let why = full[full.find(proto::REFUSED).unwrap_or(0)..].to_string();
                if refused.as_ref() != Some(&why) {
                    eprintln!("anduin: worker {name} waits: {why}");
                    refused = Some(why);
                }
                back_off(&mut pause);
                continue;
            }
            // Refused (a live worker holds this name; the secret changed): trying again
            // would not help. No leader yet: one comes.
            Err(e) if e.to_string().starts_with(proto::REFUSED) && !standing_by(&e) => {
                return Err(e)
            }
            Err(e) if standing_by(&e) || e.to_string().starts_with(NO_LEADER) => {
                // A coordinator of an older term: said once per answer, not at every try.
                let why = e.to_string();
                if why.contains("a coordinator of term") && refused.as_ref() != Some(&why) {
                    eprintln!("anduin: worker {name} left a coordinator: {why}");
                    refused = Some(why);
                }
                back_off(&mut pause);
                continue;
            }
            got @ (Ok(None) | Err(_)) if id.is_some() => {
                // The coordinator is away: the executors go on; try again, and say so now
                // and then (a worker that never comes back is declared dead).
                tries += 1;
                if tries == 5 || tries.is_multiple_of(60) {
                    let why = got
                        .err()
                        .map_or_else(|| "refused".into(), |e| format!("{e:#}"));
                    eprintln!("anduin: worker {name} has not reached a coordinator again in {tries} tries ({why}); trying on");
                }
                back_off(&mut pause);
                continue;
            }
            Ok(None) => anyhow::bail!("the coordinator refused this worker"),
            // Never registered: a misconfigured address fails at once; with several
            // coordinators, the one reached may have stepped down mid-registration (its
            // standby takes over), so the others are tried a while.
            Err(e) => match fresh_failure(args.coordinator.count(), tries) {
                Fresh::GiveUp => return Err(e),
                Fresh::TryAgain => {
                    if tries == 0 {
                        eprintln!("anduin: worker {name} could not register ({e:#}); trying the coordinators again");
                    }
                    tries += 1;
                    back_off(&mut pause);
                    continue;
                }
            },
        };
        {
            let mut l = link.lock().unwrap_or_else(|p| p.into_inner());
            for msg in &l.unnoted {
                let _ = to.send(msg);
            }
            l.to = Some(to.clone());
        }
        let env = Env {
            secret: secret.clone(),
            data_host: args.data_host,
            coordinators: args.coordinator.clone(),
            silent_after,
            term,
        };
        serve(&mut from, &executors, &link, &work_dir, &name, &env);
        link.lock().unwrap_or_else(|p| p.into_inner()).to = None;
        eprintln!("anduin: worker {name} lost the coordinator; its executors keep running while it reconnects");
    }
}

/// Waits `pause` before the next try to register, and doubles it (up to a second).
fn back_off(pause: &mut Duration) {
    std::thread::sleep(*pause);
    *pause = (*pause * 2).min(Duration::from_secs(1));
}

/// What a worker that has never registered does when a try fails without a refusal.
#[derive(Debug, PartialEq, Eq)]
enum Fresh {
    TryAgain,
    GiveUp,
}

/// How many failed tries a fresh worker given several coordinators makes before it gives
/// up (about half a minute at the backoff's second between tries).
const FRESH_TRIES: u64 = 30;

/// A fresh worker's answer to its `tries`-th failed try (0: the first) with `coordinators`
/// coordinators listed: one coordinator, a failure is a misconfiguration (fail fast); several,
/// the one reached may have been stepping down, and the others are tried a while.
fn fresh_failure(coordinators: usize, tries: u64) -> Fresh {
    if coordinators > 1 && tries < FRESH_TRIES {
        Fresh::TryAgain
    } else {
        Fresh::GiveUp
    }
}

/// The shortest `--heartbeat-interval`.
const MIN_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(10);

/// Why heartbeats every `interval` are too rare for a coordinator that declares a worker
/// dead after `timeout` without one (one late heartbeat must not kill a worker), if they are.
fn heartbeats_too_rare(interval: Duration, timeout: Duration) -> Option<String> {
    (interval.saturating_mul(2) > timeout).then(|| {
        format!(
            "--heartbeat-interval {interval:?} is more than half the coordinator's \
             --heartbeat-timeout {timeout:?}: one late heartbeat would get this worker declared \
             dead; give a --heartbeat-interval of at most {:?}",
            timeout / 2
        )
    })
}

/// A worker's number, its coordinator's term, how long it may be silent, and the connection
/// to it.
type Registered = (
    u32,
    Option<u64>,
    Option<Duration>,
    proto::Sender,
    proto::Receiver,
);

/// Registers with the coordinator (under `previous` if it had a number): the worker's number,
/// the coordinator's term and the connection. A coordinator of an older term than `term`
/// (one that led before the last this worker registered with) is left at once.
fn register(
    args: &WorkerArgs,
    name: &str,
    previous: Option<u32>,
    term: Option<u64>,
    secret: Option<&[u8]>,
) -> Result<Option<Registered>> {
    let (to, mut from) = args.coordinator.connect(secret)?;
    to.send(&ToCoordinator::Worker {
        name: name.to_string(),
        slots: args.slots,
        previous,
    })?;
    // A coordinator answers a registration at once; one that does not (stopped, or stuck) is
    // left, and registration tried again.
    // A ping may come before the welcome (the coordinator pings every worker it has, this
    // one from the moment it is noted).
    let answer = loop {
        match from.recv_within::<ToWorker>(proto::ANSWER_WITHIN)? {
            Some(ToWorker::Ping) => {}
            other => break other,
        }
    };
    Ok(match answer {
        Some(ToWorker::Welcome { term: offered, .. })
            if super::leadership::older_term(term, offered) =>
        {
            // Refused as superseded: that coordinator steps down as it reads it.
            proto::refuse_superseded(
                &to,
                &mut from,
                &format!(
                    "this worker follows the leader of term {}; this coordinator's term {} is older",
                    term.unwrap_or_default(),
                    offered.unwrap_or_default()
                ),
            );
            // The next try begins with the next coordinator of the list: this one answers
            // first (it may be a superseded leader that still runs), the leader may be after.
            args.coordinator.pass_over();
            bail!(
                "{NO_LEADER} of term {} or later: a coordinator of term {} answered",
                term.unwrap_or_default(),
                offered.unwrap_or_default()
            )
        }
        Some(ToWorker::Welcome {
            worker,
            heartbeat_timeout_ms,
            term: offered,
            silent_after_ms,
        }) => {
            if let Some(timeout) = heartbeat_timeout_ms.map(Duration::from_millis) {
                if let Some(why) = heartbeats_too_rare(args.heartbeat_interval, timeout) {
                    if previous.is_none() {
                        bail!("{why}");
                    }
                    // Its executors run parts: it stays, and says so.
                    eprintln!("anduin: worker {name}: {why}");
                }
            }
            let silent_after = silent_after_ms.map(Duration::from_millis);
            Some((worker, offered, silent_after, to, from))
        }
        _ => None,
    })
}

/// Carries out the coordinator's requests until the connection ends.
/// What a worker hands its executors.
struct Env {
    secret: Option<Arc<[u8]>>,
    data_host: std::net::IpAddr,
    /// Where its executors reach a coordinator that leads.
    coordinators: Coordinators,
    /// How long the coordinator may be silent before it is left (one elected by a lease).
    silent_after: Option<Duration>,
    /// The newest leader's term the worker registered with: its executors refuse an older.
    term: Option<u64>,
}

fn serve(
    from: &mut proto::Receiver,
    executors: &Executors,
    link: &SharedLink,
    work_dir: &Path,
    name: &str,
    env: &Env,
) {
    loop {
        match from.recv_until::<ToWorker>(env.silent_after) {
            Ok(Some(ToWorker::Deploy(d))) => {
                let key = (d.query.clone(), d.attempt, d.worker, d.incarnation);
                match start_executor(&d, work_dir, env) {
                    Ok(child) => {
                        let pid = child.id();
                        executors
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(key.clone(), child);
                        tracing::info!(query = %d.query, attempt = d.attempt, pid, "executor started");
                        let dir = part_dir(work_dir, &d);
                        watch(key, dir, Arc::clone(executors), Arc::clone(link));
                    }
                    Err(e) => report(
                        link,
                        ToCoordinator::PartEnded {
                            query: d.query.clone(),
                            attempt: d.attempt,
                            part: Some(d.worker),
                            incarnation: d.incarnation,
                            error: Some(format!("worker {name} cannot start an executor: {e:#}")),
                        },
                    ),
                }
            }
            Ok(Some(ToWorker::Cancel { query, attempt })) => {
                let mut running = executors.lock().unwrap_or_else(|p| p.into_inner());
                for ((q, a, _, _), child) in running.iter_mut() {
                    if *q == query && *a == attempt {
                        tracing::info!(%query, attempt, pid = child.id(), "cancelling an executor");
                        let _ = child.kill();
                    }
                }
            }
            Ok(Some(ToWorker::CancelPart {
                query,
                attempt,
                part,
                incarnation,
            })) => {
                let mut running = executors.lock().unwrap_or_else(|p| p.into_inner());
                for ((q, a, p, i), child) in running.iter_mut() {
                    if *q == query && *a == attempt && *p == part && *i <= incarnation {
                        tracing::info!(%query, attempt, part, pid = child.id(), "killing a stuck executor");
                        let _ = child.kill();
                    }
                }
            }
            Ok(Some(ToWorker::EndNoted {
                query,
                attempt,
                part,
                incarnation,
            })) => noted(link, &query, attempt, part, incarnation),
            Ok(Some(ToWorker::Welcome { .. } | ToWorker::Ping)) => {}
            Ok(None) => return,
            Err(e) => {
                if let Some(silent) = env.silent_after.filter(|_| proto::timed_out(&e)) {
                    // Paused, or cut off: the next coordinator of the list may lead by now.
                    super::say(&format!("anduin: worker {name}: the coordinator has been silent for {silent:?}: leaving it"));
                    env.coordinators.pass_over();
                }
                return;
            }
        }
    }
}

/// Starts the executor of `d`: `anduin run` on the query's file with its flags, as a part.
fn start_executor(d: &Deployment, work_dir: &Path, env: &Env) -> Result<Child> {
    let dir = part_dir(work_dir, d);
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(&d.submission.file_name);
    std::fs::write(&file, &d.submission.source)?;
    // Its modules beside it, where its `CREATE FUNCTION`s and `--udf` flags find them.
    let args = super::modules::materialize(
        &dir,
        &d.submission.file_name,
        &d.submission.modules,
        &d.submission.args,
    )?;
    let deployment = dir.join("deployment.json");
    let d = &Deployment {
        coordinators: Some(env.coordinators.clone()),
        silent_after_ms: env.silent_after.map(|s| s.as_millis() as u64),
        term: d.term.max(env.term),
        alone: d.alone,
        ..d.clone()
    };
    std::fs::write(&deployment, serde_json::to_vec_pretty(d)?)?;
    let exe = std::env::current_exe().context("cannot find the anduin executable")?;
    let cwd = if d.submission.cwd.is_dir() {
        d.submission.cwd.clone()
    } else {
        dir.clone()
    };
    let mut command = Command::new(exe);
    command.env(DATA_HOST_ENV, env.data_host.to_string());
    match &env.secret {
        Some(s) => command.env(super::secret::ENV, String::from_utf8_lossy(s).as_ref()),
        None => command.env_remove(super::secret::ENV),
    };
    let child = command
        .arg("run")
        .arg(&file)
        .args(&args)
        .arg("--cluster-part")
        .arg(&deployment)
        .arg("--no-api")
        .args(
            (!d.submission
                .args
                .iter()
                .any(|a| a == "-q" || a == "--quiet"))
            .then_some("--quiet"),
        )
        .current_dir(cwd)
        // Closed when this worker dies: the executor then stops at once.
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the executor")?;
    Ok(child)
}

/// The directory of a deployment's part (`QUERY-ATTEMPT-PART`, with `.INCARNATION` when the
/// part was restored): its query file, its deployment, what its executor leaves there.
fn part_dir(work_dir: &Path, d: &Deployment) -> PathBuf {
    match d.incarnation {
        0 => work_dir.join(format!("{}-{}-{}", d.query, d.attempt, d.worker)),
        n => work_dir.join(format!("{}-{}-{}.{n}", d.query, d.attempt, d.worker)),
    }
}

/// The file in which an executor leaves why it failed, beside its deployment.
const FAILURE_FILE: &str = "failure.txt";

/// Leaves the error of an executor's part (`outcome`), if any, beside its `deployment`, for
/// its worker to tell the coordinator (which does not see the executor's stderr).
pub fn leave_failure(deployment: &Path, outcome: Result<ExitCode>) -> Result<ExitCode> {
    if let Err(e) = &outcome {
        let _ = std::fs::write(failure_file(deployment), format!("{e:#}"));
    }
    outcome
}

/// Where the executor of `deployment` leaves why it failed.
pub fn failure_file(deployment: &Path) -> PathBuf {
    deployment.with_file_name(FAILURE_FILE)
}

/// Reports to the coordinator when the executor of `key` (whose part is in `dir`) ends, with
/// the failure it left, if any.
fn watch(key: Key, dir: PathBuf, executors: Executors, link: SharedLink) {
    let spawned = std::thread::Builder::new()
        .name("anduin-executor-watch".into())
        .spawn(move || loop {
            let status = {
                let mut running = executors.lock().unwrap_or_else(|p| p.into_inner());
                let Some(child) = running.get_mut(&key) else {
                    return;
                };
                match child.try_wait() {
                    Ok(Some(status)) => {
                        running.remove(&key);
                        Some(status)
                    }
                    Ok(None) => None,
                    Err(_) => {
                        running.remove(&key);
                        None
                    }
                }
            };
            if let Some(status) = status {
                let error = (!status.success()).then(|| {
                    match std::fs::read_to_string(dir.join(FAILURE_FILE)) {
                        Ok(why) => format!("its executor ended with {status}: {}", why.trim()),
                        Err(_) => format!("its executor ended with {status}"),
                    }
                });
                report(
                    &link,
                    ToCoordinator::PartEnded {
                        query: key.0.clone(),
                        attempt: key.1,
                        part: Some(key.2),
                        incarnation: key.3,
                        error,
                    },
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot watch an executor");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_worker_fails_fast_with_one_coordinator_and_tries_a_while_with_several() {
        assert_eq!(fresh_failure(1, 0), Fresh::GiveUp);
        assert_eq!(fresh_failure(2, 0), Fresh::TryAgain);
        assert_eq!(fresh_failure(3, FRESH_TRIES - 1), Fresh::TryAgain);
        assert_eq!(fresh_failure(3, FRESH_TRIES), Fresh::GiveUp);
    }

    #[test]
    fn heartbeats_must_come_at_least_twice_per_timeout() {
        let s = Duration::from_secs;
        assert_eq!(heartbeats_too_rare(s(1), s(5)), None);
        assert_eq!(heartbeats_too_rare(Duration::from_millis(2500), s(5)), None);
        let why = heartbeats_too_rare(s(3), s(5)).expect("3s of 5s is too rare");
        assert!(why.contains("at most 2.5s"), "{why}");
        assert!(heartbeats_too_rare(s(5), s(5)).is_some());
    }
}
