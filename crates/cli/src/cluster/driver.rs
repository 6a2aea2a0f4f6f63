//! A query's driver in the coordinator: places the query's task instances on live workers'
//! slots, deploys one part per worker, waits for every part's executor, starts them and runs
//! the query's checkpoint coordinator; when a part fails or a worker dies, it cancels the
//! attempt everywhere and starts a new one from the last complete checkpoint (the
//! whole-query rollback; per-task recovery with upstream backup is not there yet).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_checkpoint::lineage::{LineageDecision, LineageStart};
use anduin_checkpoint::recovery::RecoveryPlan;
use anduin_checkpoint::{Store, Validated};
use anduin_graph::{PhysicalPlan, PlanOptions};
use anduin_operator_api::Bound;
use anduin_runtime::control::Control;
use anduin_runtime::{
    CheckpointSettings, Checkpointing, EngineEvent, Event, RunConfig, Subscriber, Topology,
};
use anyhow::{bail, Context, Result};
use clap::Parser;

use anduin_coordinator::catalog::{AttemptFailure, CheckpointPointer, Edit};
use anduin_coordinator::controls::Resumed;
use anduin_coordinator::life::{Input, QueryState};
use anduin_coordinator::{
    newest_begun, take_over as decide_take_over, Constraint, Host, NumberingFacts, PartFacts,
    QueryId, TakeOver, TaskNeed, TaskRef, WorkerFacts, WorkerId,
};

use super::controls;
use super::coordinator::{Cluster, ExitPoint, Link, State};
use super::figures::Sample;
use super::proto::{self, Deployment, Submission, ToExecutor, ToWorker};
use super::restarts::Restart;
use super::silence::Stuck;
use crate::cmd::run::{checkpoint_settings, RunArgs};
use crate::load::{load_to_run, LoadError, Loaded};

/// How long the executors of an attempt have to start and report where they listen.
const EXECUTORS_WITHIN: Duration = Duration::from_secs(60);
/// How long the parts of a cancelled attempt have to end.
const CANCEL_WITHIN: Duration = Duration::from_secs(30);

/// The flags of a submission, parsed as `anduin run` parses them.
#[derive(Parser)]
#[command(name = "anduin submit")]
struct AsRun {
    #[command(flatten)]
    run: RunArgs,
}

/// A submitted query, compiled.
pub struct Compiled {
    /// The query's file, as kept in the coordinator's state directory.
    pub file: std::path::PathBuf,
    /// The query's file as the user gave it to `anduin submit`, for the places in errors.
    pub shown_file: String,
    pub args: RunArgs,
    pub loaded: Loaded,
    /// Each task instance of its plan as the catalog names it, by its number in the run.
    pub tasks: Vec<TaskRef>,
    /// Each task instance's name (its operators, and ` #i`), by its number in the run.
    pub instance_names: Vec<String>,
    /// Its physical plan (the instances are what the partitioning rules made of it).
    pub plan: PhysicalPlan,
    /// Its own functions (the coordinator loads several queries: each declares its own).
    pub functions: Arc<anduin_expr::UserFunctions>,
}

impl Compiled {
    /// Every instance of every task of its plan, unplaced.
    pub fn topology(&self) -> Topology {
        topology_of(&self.loaded, &self.plan)
    }
}

/// The state of one attempt of a query.
pub struct Attempt {
    pub number: u64,
    /// The worker of every task instance, by its number in the run.
    pub placement: Vec<u32>,
    /// The workers given a part.
    pub workers: BTreeSet<u32>,
    /// The executors that have reported, by worker: how to reach them and where they listen.
    pub executors: Executors,
    /// The parts that have ended, by worker: `None` when they finished.
    pub ended: BTreeMap<u32, Option<String>>,
    /// Where executors' events go (each executor's connection takes a sender, also when it
    /// reports again after losing the coordinator); dropped by the driver when the attempt
    /// ends, so that its checkpoint coordinator ends once the executors' connections have.
    pub events: Option<crossbeam_channel::Sender<Event>>,
    /// The checkpoint coordinator's end of `events`.
    pub events_rx: crossbeam_channel::Receiver<Event>,
    /// The attempt's control plane (served by the coordinator's API), once it runs.
    pub control: Option<Arc<Control>>,
    /// Where each worker's part runs when not on that worker: its instances were restored on
    /// another after it died (per-task recovery).
    pub hosts: BTreeMap<u32, u32>,
    /// The source instances that have reported the end of their input.
    pub exhausted: BTreeSet<usize>,
    /// The source instances that have reported taking the last barrier (a subset of
    /// `exhausted`).
    pub finished_sources: BTreeSet<usize>,
    /// The checkpoint coordinator has given up its checkpoint in flight for lost tasks: the
    /// checkpoint they restore from (`Some(None)`: none yet).
    pub lost_noted: Option<Option<u64>>,
    /// How many times each part was restored on another worker (absent: never): an
    /// executor of an older incarnation is stale.
    pub incarnations: BTreeMap<u32, u64>,
    /// How many times each part was restored because its executor failed (its worker living
    /// on).
    pub part_failures: BTreeMap<u32, u32>,
    /// The parts whose executor was given leave to end its input (its sinks commit what they
    /// hold): such a part is not restored alone any more.
    pub ending: BTreeSet<u32>,
    /// Parts whose executor is stuck while their worker lives (it held a checkpoint back past
    /// `--checkpoint-timeout`, or went silent past `--executor-timeout`): they are failed.
    pub stuck: BTreeMap<u32, Stuck>,
    /// Parts restored since the last checkpoint completed that have not yet had a checkpoint
    /// expire on them: the first is forgiven (see [`super::silence::judge_held_back`]).
    pub fresh: BTreeSet<u32>,
    /// When each part's executor last sent its figures or said it is alive (one or the other
    /// every second once it is started), with the incarnation it runs: an older incarnation's
    /// time says nothing of the new one.
    pub heard: BTreeMap<u32, (u64, Instant)>,
    /// Parts whose executor reported without having been told to start (a coordinator
    /// before this one deployed it and went away before its `Start`).
    pub unstarted: BTreeSet<u32>,
    /// The last live figures of each part's executor, which the attempt's control plane
    /// merges (behind a lock of its own: the control plane reads it under its own lock).
    pub figures: Arc<Mutex<BTreeMap<u32, Sample>>>,
    /// The newest checkpoint that completed (its manifest written) or was given up, or that
    /// the attempt restored from or found complete: the executors that acknowledged nothing
    /// later may end ([`super::exiting`]).
    pub settled: u64,
    /// The executors whose part ended that wait to end until a checkpoint is settled, by part:
    /// the newest checkpoint they acknowledged ([`super::exiting`]).
    pub exiting: BTreeMap<u32, u64>,
    /// A stop was asked (`anduin ctl stop`): its executors were told to stop their sources.
    pub stopping: bool,
    /// What each part was deployed with (its worker aside): a part started while the query
    /// runs, for instances a rescale adds ([`super::growth`]), is deployed alike.
    pub template: Option<Deployment>,
    /// The parts started while the query runs that run only instances added (none planned).
    pub alone: BTreeSet<u32>,
    /// Those of them that were started (and hear the barriers sent).
    pub alone_started: BTreeSet<u32>,
    /// Every barrier with changes the checkpoint coordinator sent, in order: its epoch and
    /// its changes (told to the parts of `alone`).
    pub barriers_sent: Vec<(u64, Vec<anduin_types::ControlUpdate>)>,
    /// The query's last barrier was sent.
    pub last_sent: bool,
}

impl Attempt {
    /// Attempt `number`, its instances placed by `placement` (each on its part); `hosts` and
    /// `incarnations` of the parts restored elsewhere.
    fn new(
        number: u64,
        placement: Vec<u32>,
        hosts: BTreeMap<u32, u32>,
        incarnations: BTreeMap<u32, u64>,
    ) -> Self {
        let (events, events_rx) = crossbeam_channel::unbounded();
        Attempt {
            number,
            workers: placement.iter().copied().collect(),
            placement,
            executors: BTreeMap::new(),
            ended: BTreeMap::new(),
            events: Some(events),
            events_rx,
            control: None,
            hosts,
            exhausted: BTreeSet::new(),
            finished_sources: BTreeSet::new(),
            lost_noted: None,
            incarnations,
            part_failures: BTreeMap::new(),
            ending: BTreeSet::new(),
            stuck: BTreeMap::new(),
            fresh: BTreeSet::new(),
            heard: BTreeMap::new(),
            unstarted: BTreeSet::new(),
            figures: Arc::default(),
            settled: 0,
            exiting: BTreeMap::new(),
            stopping: false,
            template: None,
            alone: BTreeSet::new(),
            alone_started: BTreeSet::new(),
            barriers_sent: Vec::new(),
            last_sent: false,
        }
    }

    /// The worker that runs `part`'s instances now.
    pub fn host(&self, part: u32) -> u32 {
        self.hosts.get(&part).copied().unwrap_or(part)
    }

    /// `part`'s incarnation now.
    pub fn incarnation(&self, part: u32) -> u64 {
        self.incarnations.get(&part).copied().unwrap_or(0)
    }
}

/// Keeps a submission's file in `dir` and compiles it as its workers will.
pub fn prepare(dir: &Path, s: &Submission) -> Result<Compiled> {
    for refused in [
        "--checkpoint-dir",
        "--checkpoint-store",
        "--checkpoint-cache",
        "--from-scratch",
        "--loopback-workers",
        "--cluster-part",
        "--events",
        "--api",
        "--api-token-file",
        "--no-api",
        "--name",
    ] {
        if s.args
            .iter()
            .any(|a| a == refused || a.starts_with(&format!("{refused}=")))
        {
            bail!("`anduin submit` does not take {refused}: the coordinator chooses it");
        }
    }
    // A file name, not a path (`anduin submit` sends the file's name): nothing is written
    // outside the query's folder.
    let mut parts = Path::new(&s.file_name).components();
    if !matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) {
        bail!(
            "the query file's name `{}` is not a file name (this anduin submit sends one)",
            s.file_name
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let file = dir.join(&s.file_name);
    std::fs::write(&file, &s.source)
        .with_context(|| format!("cannot write `{}`", file.display()))?;
    // Its modules beside it, where its `CREATE FUNCTION`s and `--udf` flags find them.
    let run_args = super::modules::materialize(dir, &s.file_name, &s.modules, &s.args)?;
    // The rule file is kept beside the query's, and read from there.
    let mut rules_args = Vec::new();
    if let Some(r) = &s.rules {
        let kept = dir.join("rules");
        std::fs::write(&kept, &r.text)
            .with_context(|| format!("cannot write `{}`", kept.display()))?;
        rules_args = vec!["--rules".to_string(), kept.display().to_string()];
        if let Some(every) = &r.interval {
            rules_args.extend(["--rules-interval".to_string(), every.clone()]);
        }
    }
    let argv = std::iter::once("anduin submit".to_string())
        .chain(std::iter::once(file.display().to_string()))
        .chain(run_args)
        .chain(rules_args);
    let args = AsRun::try_parse_from(argv)
        .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim_end()))?
        .run;
    crate::embedded::check_max_parallelism(&args.engine)?;
    let rules = s.rules.as_ref().map(|r| (r.name.as_str(), r.text.as_str()));
    // The query's functions are its own: another query of this coordinator may declare the
    // same names otherwise.
    let functions = Arc::new(anduin_expr::UserFunctions::default());
    let loaded = match anduin_expr::FunctionProvider::scoped(&functions, || {
        crate::udfs::register_modules(&args.udfs).map_err(LoadError::Other)?;
        load_to_run(&file, &args.vars, &args.engine.defaults(), rules)
    }) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            let lines: Vec<String> =
                d.0.iter()
                    .map(|x| format!("{}:{x}", s.shown_file()))
                    .collect();
            bail!("the query has problems:\n{}", lines.join("\n"))
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    // Only the modules sent with it: never one an earlier query of that name left here.
    super::modules::all_sent(&loaded.spec, &s.modules)?;
    // Refused at submit when its settings cannot work.
    let _autoscale = crate::autoscale::settings(&args.autoscale, &args.engine, &loaded)?;
    let _rules = anduin_expr::FunctionProvider::scoped(&functions, || rules_of(s, &args, &loaded))?;
    let plan = PhysicalPlan::plan(&loaded.graph, plan_options(&args))?;
    let topo = topology_of(&loaded, &plan);
    super::slots::check(&topo, &loaded.graph).map_err(anyhow::Error::msg)?;
    let tasks = topo
        .instances()
        .map(|i| TaskRef {
            task: u32::try_from(i.at.task).unwrap_or(u32::MAX),
            instance: u32::try_from(i.at.instance).unwrap_or(u32::MAX),
        })
        .collect();
    let instance_names = topo.instances().map(|i| i.name.clone()).collect();
    Ok(Compiled {
        file,
        shown_file: s.shown_file().to_string(),
        args,
        loaded,
        tasks,
        instance_names,
        plan,
        functions,
    })
}

/// The rules a submission applies while its query runs (`--rules`), read and checked, named
/// in their messages as the user named the file.
fn rules_of(
    s: &Submission,
    args: &RunArgs,
    loaded: &Loaded,
) -> Result<Option<crate::run_rules::RunRules>> {
    match (&s.rules, &args.rules.rules) {
        (Some(r), _) => {
            crate::run_rules::load_text(&r.name, &r.text, &loaded.spec)
        }
        (None, Some(path)) => bail!(
            "`--rules {}` reached the coordinator without its file: submit it with `anduin submit … --rules FILE`",
            path.display()
        ),
        _ => Ok(None),
    }
}

/// The topology of `loaded` planned as `args` ask.
pub(super) fn topology(loaded: &Loaded, args: &RunArgs) -> Result<Topology> {
    let plan = PhysicalPlan::plan(&loaded.graph, plan_options(args))?;
    Ok(topology_of(loaded, &plan))
}

fn topology_of(loaded: &Loaded, plan: &PhysicalPlan) -> Topology {
    Topology::new(&loaded.graph, plan, |n| matches!(n.bound, Bound::Source(_)))
}

fn plan_options(args: &RunArgs) -> PlanOptions {
    PlanOptions {
        chaining: !args.engine.no_chaining,
        default_parallelism: args.engine.parallelism,
        max_parallelism: args.engine.max_parallelism,
    }
}

/// Why an attempt ended.
pub(super) enum Outcome {
    Finished,
    Cancelled,
    /// Why, and the worker it happened on (and whether that worker died): the worker the
    /// part ran on then, not the one it was first placed on (a part restored elsewhere runs
    /// on another; the query's life places its tasks on the host).
    Failed {
        why: String,
        worker: Option<(u32, bool)>,
        /// Why per-task recovery did not apply, when it was tried.
        fallback: Option<String>,
    },
}

impl Outcome {
    pub(super) fn failed(why: impl Into<String>) -> Self {
        Outcome::Failed {
            why: why.into(),
            worker: None,
            fallback: None,
        }
    }
}

/// Drives query `name` until it finishes, fails or is cancelled; `reattach`: its parts may
/// still run, started by a coordinator before this one, and are taken over if they all
/// report again.
pub fn drive(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: Compiled,
    reattach: bool,
    dir_lock: Option<anduin_checkpoint::OwnerLock>,
) {
    let dir = cluster.store.dir(name);
    // Held until the query is over (this function returns).
    let mut dir_lock = dir_lock;
    let mut number = cluster
        .lock()
        .queries
        .get(name)
        .map_or(0, |q| q.status.attempt);
    // The control plane of the last attempt that had one: left `recovering` by a failure
    // that the next attempt was to recover, it says how the query ended if none did.
    let mut last_control: Option<Arc<Control>> = None;
    // The wait before the next attempt, after a failure.
    let mut backoff = None;
    // Its current attempt had failed before this coordinator started (also one that failed
    // before it was deployed, the catalog's attempt 0: probe47): nothing of it is taken over;
    // the next one starts when it was due (probe45).
    let failed = if reattach {
        failed_before(cluster, name, &mut number)
    } else {
        None
    };
    let mut reattach = reattach && number > 0 && failed.is_none();
    if let Some((restart, control)) = failed {
        match restart {
            Restart::After(wait) => backoff = Some(wait),
            Restart::GiveUp { .. } => {
                control.detach_failed();
                return;
            }
        }
        last_control = Some(control);
    } else if !reattach {
        let mut state = cluster.lock();
        state.record(Edit::PlanFixed {
            query: QueryId(name.to_string()),
            fingerprint: serde_json::to_string(&anduin_runtime::fingerprint(
                &compiled.loaded.graph,
                &compiled.plan,
            ))
            .unwrap_or_default(),
            tasks: compiled.tasks.iter().copied().collect(),
        });
    }
    loop {
        if let Some(wait) = backoff.take() {
            if !back_off(cluster, name, wait) {
                eprintln!("anduin: query {name} cancelled (while it waited for its next attempt)");
                cluster.lock().feed(name, &Input::CancelRequested);
                break;
            }
        }
        if let Some(q) = cluster.lock().queries.get_mut(name) {
            q.next_attempt = None;
            // An attempt taken over counts from the failure recorded before it (a checkpoint
            // it completed under the coordinator before this one is progress).
            if !reattach {
                q.restarts.begin(q.status.last_checkpoint);
            }
        }
        let outcome = if reattach {
            reattach = false;
            match hold_query_dir(cluster, name, &mut dir_lock)
                .and_then(|()| take_over(cluster, name, &compiled, &dir, number))
            {
                Ok(o) => o,
                Err(e) => Outcome::failed(format!("{e:#}")),
            }
        } else {
            number += 1;
            match hold_query_dir(cluster, name, &mut dir_lock)
                .and_then(|()| attempt(cluster, name, &compiled, &dir, number))
            {
                Ok(o) => o,
                Err(e) => Outcome::failed(format!("{e:#}")),
            }
        };
        let mut state = cluster.lock();
        // What the attempt ran beyond its placement stays in the status once it is over.
        let mut ended = state.queries.get(name).map(|q| q.status.clone());
        if let (Some(status), Some(a)) = (
            ended.as_mut(),
            state.queries.get(name).and_then(|q| q.attempt.as_ref()),
        ) {
            count_unplanned(&state, a, status);
        }
        let Some(q) = state.queries.get_mut(name) else {
            return;
        };
        if let Some(status) = ended {
            q.status = status;
        }
        if let Some(c) = q.attempt.as_ref().and_then(|a| a.control.clone()) {
            last_control = Some(c);
        }
        q.attempt = None;
        let cancelled = q.cancel;
        let over = match outcome {
            Outcome::Finished => {
                eprintln!("anduin: query {name} finished");
                let recovering = state.queries.get_mut(name).is_some_and(|q| {
                    q.status.error = None;
                    matches!(q.life.state(), QueryState::Recovering { .. })
                });
                if recovering {
                    // A part failed after the last checkpoint had completed: nothing is left
                    // to run.
                    state.feed(name, &Input::RecoveryDone);
                }
                state.feed(name, &Input::AllTasksFinished);
                true
            }
            Outcome::Cancelled => {
                eprintln!("anduin: query {name} cancelled");
                state.feed(name, &Input::CancelRequested);
                true
            }
            Outcome::Failed { why, .. } if cancelled => {
                eprintln!("anduin: query {name} cancelled ({why})");
                state.feed(name, &Input::CancelRequested);
                true
            }
            Outcome::Failed {
                why,
                worker,
                fallback,
            } => {
                if let Some(q) = state.queries.get_mut(name) {
                    q.status.error = Some(why.clone());
                }
                for input in lost(&state, name, &why, worker) {
                    state.feed(name, &input);
                }
                let restart =
                    state
                        .queries
                        .get_mut(name)
                        .map_or(Restart::GiveUp { failures: 0 }, |q| {
                            q.restarts
                                .failed(&cluster.restart, q.status.last_checkpoint)
                        });
                if let Restart::GiveUp { failures } = restart {
                    // Its last checkpoint may say every input ended, its sinks' commit of it
                    // undone: then it is only waiting for that commit (probe44).
                    let pending = match cluster.committing_store(name).and_then(|s| recovery(&s)) {
                        Ok(Recovery::Finished(_)) => "; every input had ended, but its sinks may not have committed its last checkpoint: `anduin submit --resume` commits what it holds, and runs nothing",
                        _ => "",
                    };
                    eprintln!("{}{pending}", given_up(name, number, failures, &why));
                    state.feed(name, &Input::RecoveryFailed { why });
                    true
                } else {
                    backoff = match restart {
                        Restart::After(wait) if !wait.is_zero() => Some(wait),
                        _ => None,
                    };
                    record_failure(&mut state, name, number, &why, backoff);
                    let after = backoff.map(|w| format!(" in {w:?}")).unwrap_or_default();
                    // Why per-task recovery did not apply, said here too: the query's life
                    // refuses the fallback when it did not take the failure as a loss (a
                    // part restored elsewhere before, whose tasks it places on their host).
                    let per_task = fallback
                        .as_ref()
                        .map(|f| format!(" (per-task recovery does not apply: {f})"))
                        .unwrap_or_default();
                    eprintln!("anduin: query {name}, attempt {number} failed: {why}; recovering from the last checkpoint{after}{per_task}");
                    let why = fallback.unwrap_or_else(|| match worker {
                        Some(_) if !cluster.per_task_recovery => "per-task recovery is off (`anduin coordinator --no-per-task-recovery`)".into(),
                        Some(_) => "the loss came before the attempt ran (while its executors started, or while a restarted coordinator waited for them to report again): per-task recovery applies to a running attempt".into(),
                        None => "the failure is not one worker's loss".into(),
                    });
                    state.feed(name, &Input::PerTaskRecoveryImpossible { why });
                    false
                }
            }
        };
        cluster.changed.notify_all();
        if over {
            break;
        }
    }
    // Cancelled or given up while it waited for its next attempt (or before that attempt had
    // a control plane): the API, which still serves the last one, said `recovering` for good
    // (probe46).
    if let Some(c) =
        last_control.filter(|c| c.info().state == anduin_runtime::control::QueryState::Recovering)
    {
        let cancelled = cluster.lock().queries.get(name).is_some_and(|q| q.cancel);
        if cancelled {
            c.detach_cancelled();
        } else {
            c.detach_failed();
        }
    }
    cluster.changed.notify_all();
}

/// Records in the catalog that attempt `number` of query `name` failed (`why`) and that the
/// next follows after `wait`, with the failures in a row counted so far: a coordinator that
/// takes over meanwhile goes on from there ([`failed_before`]).
fn record_failure(state: &mut State, name: &str, number: u64, why: &str, wait: Option<Duration>) {
    let wait = wait.unwrap_or_default();
    let Some(q) = state.queries.get_mut(name) else {
        return;
    };
    q.next_attempt = Some(Instant::now() + wait);
    let failure = AttemptFailure {
        attempt: number,
        failures: q.restarts.failures(q.status.last_checkpoint),
        checkpoint: q.status.last_checkpoint.map(anduin_types::Epoch),
        error: why.to_string(),
        next_at_ms: now_ms().saturating_add(wait.as_millis() as u64),
    };
    state.record(Edit::AttemptFailed {
        query: QueryId(name.to_string()),
        failure,
    });
}

/// What the coordinator says of query `name` given up after attempt `number`, the last
/// `failures` in a row with no checkpoint completed, the last failing for `why`.
fn given_up(name: &str, number: u64, failures: u32, why: &str) -> String {
    format!(
        "anduin: query {name} failed after {number} attempt{}, the last {failures} in a row with no checkpoint completed (`anduin coordinator --restart-attempts`): {why}",
        if number == 1 { "" } else { "s" }
    )
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// When query `name`'s current attempt had failed before this coordinator started (its
/// catalog records the failure, and no later attempt): what follows it under this
/// coordinator's restart flags — the wait left, or the query given up (then failed here).
/// Its life and status say it is recovering from that failure, and so does the control plane
/// the API serves until the next attempt has one (returned); `number` becomes the failed
/// attempt's (one not deployed is numbered after the last deployed). `None`: it had not.
fn failed_before(
    cluster: &Cluster,
    name: &str,
    number: &mut u64,
) -> Option<(Restart, Arc<Control>)> {
    let (failure, file) = {
        let state = cluster.lock();
        let failure = state
            .catalog
            .state()
            .queries
            .get(&QueryId(name.to_string()))
            .and_then(|q| q.failed_now())
            .cloned()?;
        let file = state
            .queries
            .get(name)
            .map(|q| q.submission.file_name.clone());
        (failure, file)
    };
    // Served before anything says it waits.
    let control = super::coordinator::serve_idle(cluster, name, file, |c| {
        c.detach_recovering(failure.error.clone())
    });
    let mut state = cluster.lock();
    *number = (*number).max(failure.attempt);
    let restart = cluster
        .restart
        .resumed(failure.failures, failure.next_at_ms, now_ms());
    let why = failure.error;
    for input in lost(&state, name, &why, None) {
        state.feed(name, &input);
    }
    if let Some(q) = state.queries.get_mut(name) {
        q.status.error = Some(why.clone());
    }
    match restart {
        Restart::After(wait) => {
            eprintln!("anduin: query {name}, attempt {number} had failed before this coordinator started: {why}; recovering from the last checkpoint in {wait:?}, not taking that attempt over", number = *number);
            if let Some(q) = state.queries.get_mut(name) {
                q.next_attempt = Some(Instant::now() + wait);
            }
            state.feed(
                name,
                &Input::PerTaskRecoveryImpossible {
                    why: "the attempt had failed before this coordinator started".into(),
                },
            );
        }
        Restart::GiveUp { failures } => {
            eprintln!("{}", given_up(name, *number, failures, &why));
            state.feed(name, &Input::RecoveryFailed { why });
        }
    }
    drop(state);
    cluster.changed.notify_all();
    Some((restart, control))
}

/// Waits `wait` before the next attempt of query `name`; false if it was cancelled (or is
/// gone) meanwhile.
/// Takes query `name`'s checkpoint directory lock unless `held` has it: an attempt fails
/// (and is tried again as a failure is) while an `anduin run` holds the directory.
fn hold_query_dir(
    cluster: &Cluster,
    name: &str,
    held: &mut Option<anduin_checkpoint::OwnerLock>,
) -> Result<()> {
    if held.is_none() {
        *held = cluster.lock_query_dir(name)?;
    }
    Ok(())
}

fn back_off(cluster: &Cluster, name: &str, wait: Duration) -> bool {
    // At most a year (`RestartPolicy`): the clock can add it.
    let until = Instant::now() + wait;
    let mut state = cluster.lock();
    loop {
        if state.queries.get(name).is_none_or(|q| q.cancel) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        state = cluster.wait(state, until - now);
    }
}

/// Whether query `name` is attempted again if its current attempt fails now (as `drive`
/// then decides).
fn recovers_if_failed(cluster: &Cluster, state: &State, name: &str) -> bool {
    state.queries.get(name).is_some_and(|q| {
        matches!(
            q.restarts
                .if_failed(&cluster.restart, q.status.last_checkpoint),
            Restart::After(_)
        )
    })
}

/// What the query's life is told of a failure: the worker that died, the task that failed
/// (the first of those on the worker its part failed on), or — a failure of no one worker,
/// or of a worker that runs none of the planned tasks (a part started for instances added
/// while running) — every placed task.
fn lost(state: &State, name: &str, why: &str, worker: Option<(u32, bool)>) -> Vec<Input> {
    let Some(q) = state.queries.get(name) else {
        return Vec::new();
    };
    let placement = q.life.placement();
    let planned_on = |w: u32| placement.values().any(|on| on.0 == w);
    let worker = worker.filter(|(w, _)| planned_on(*w));
    match worker {
        Some((w, true)) => vec![Input::WorkerDead {
            worker: WorkerId(w),
        }],
        Some((w, false)) => placement
            .iter()
            .find(|(_, on)| on.0 == w)
            .map(|(t, on)| Input::TaskFailed {
                task: *t,
                worker: *on,
                cause: why.to_string(),
            })
            .into_iter()
            .collect(),
        None => placement
            .iter()
            .map(|(t, on)| Input::TaskFailed {
                task: *t,
                worker: *on,
                cause: why.to_string(),
            })
            .collect(),
    }
}

/// The workers the life has tasks on that `placement` (the worker of each of `tasks`, in
/// order) moves them away from: workers that died since the life placed them (a task on a
/// live worker keeps it).
fn moved_from(
    life: &BTreeMap<TaskRef, WorkerId>,
    tasks: &[TaskRef],
    placement: &[u32],
) -> BTreeSet<WorkerId> {
    tasks
        .iter()
        .zip(placement)
        .filter_map(|(t, w)| life.get(t).filter(|on| on.0 != *w).copied())
        .collect()
}

/// One attempt: place, deploy, start, run, and wind down.
fn attempt(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    number: u64,
) -> Result<Outcome> {
    let Some(placement) = place(cluster, name, compiled)? else {
        return Ok(Outcome::Cancelled);
    };
    {
        // The life places what awaits a slot: every task at first, the lost ones after a
        // failure (the others keep the workers they had, if alive).
        let mut state = cluster.lock();
        // A task the life has on a worker that died since (unnamed by the failure it heard
        // of: another worker's, or one whose restore host died too) is placed anew: the
        // life hears that worker's death first, so that it places what runs, not a task on
        // a dead worker.
        let moved_from = state
            .queries
            .get(name)
            .map(|q| moved_from(q.life.placement(), &compiled.tasks, &placement))
            .unwrap_or_default();
        for worker in moved_from {
            state.feed(name, &Input::WorkerDead { worker });
        }
        let awaiting: BTreeSet<TaskRef> = state
            .queries
            .get(name)
            .map(|q| match q.life.state() {
                QueryState::Scheduling => q.life.tasks().clone(),
                _ => q.life.awaiting().clone(),
            })
            .unwrap_or_default();
        let placed = compiled
            .tasks
            .iter()
            .zip(&placement)
            .filter(|(t, _)| awaiting.contains(t))
            .map(|(t, w)| (*t, WorkerId(*w)))
            .collect();
        state.feed(name, &Input::Placed { placement: placed });
    }
    // A part failed or was lost after the last checkpoint, which says every input ended,
    // had completed: its sinks may not have committed it (the cluster form of probe41 H1:
    // the query was said finished with an exactly-once Kafka sink's last rows never
    // committed). Every instance is restored from it, so that the sinks commit what it
    // holds, and nothing runs.
    let (restore, commit_only) = match recovery(&cluster.committing_store(name)?)? {
        Recovery::Finished(v) => {
            eprintln!("anduin: query {name}: its last checkpoint says every input ended: its instances are restored from it so that its sinks commit what it holds; nothing runs");
            (v, true)
        }
        Recovery::From(v) => (v, false),
    };
    let restore_epoch = restore.as_ref().map(|v| v.manifest.epoch);
    // Kept in the store before any executor runs: every attempt of the query finds it again,
    // unless it starts from nothing as another query than the one it was drawn for.
    let store = cluster.committing_store(name)?;
    // The query and the code it calls, as an embedded run's (`cmd/run.rs`).
    let code =
        crate::udfs::lineage_code(&compiled.file, &compiled.args.udfs, &compiled.loaded.spec)?;
    let digest = anduin_runtime::fingerprint(&compiled.loaded.graph, &compiled.plan)
        .lineage_digest_with(&code);
    let taken = store
        .lineage(
            if restore.is_some() {
                LineageStart::Resume
            } else {
                LineageStart::Fresh
            },
            &digest,
            anduin_checkpoint::draw_lineage,
        )
        .context("cannot keep the lineage of the query's checkpoints")?;
    if let LineageDecision::Draw(why) = taken.decision {
        if let Some(notice) = why.notice() {
            eprintln!("anduin: query {name}: {notice} in {}", store.location());
        }
    }
    let lineage = taken.lineage;
    // The changes made after that checkpoint: restored with it, or sent again when there
    // is none.
    let reapply = controls::after_checkpoint(cluster, name, restore.as_ref(), Resumed::Rollback);
    let (carried, again) = if restore.is_some() {
        (reapply.changes, Vec::new())
    } else {
        (Vec::new(), reapply.changes)
    };
    let workers: BTreeSet<u32> = placement.iter().copied().collect();
    // Executors open their sinks, which bring the output back to the restored checkpoint's
    // (or empty it): never on the word of a leader a later one superseded.
    cluster.still_leading("deployment of an attempt");
    {
        let mut state = cluster.lock();
        let names = placement_names(&state, &placement);
        let instances = instance_workers(&state, &compiled.instance_names, &placement);
        let q = state.queries.get_mut(name).context("the query is gone")?;
        q.status.attempt = number;
        q.status.placement = names;
        q.status.instances = instances;
        let mut a = Attempt::new(number, placement.clone(), BTreeMap::new(), BTreeMap::new());
        // The checkpoint restored from is complete.
        a.settled = restore_epoch.unwrap_or(0);
        q.attempt = Some(a);
        let submission = q.submission.clone();
        // Every task instance placed again: one more attempt of each.
        state.record(Edit::AttemptDeployed {
            query: QueryId(name.to_string()),
            attempt: number,
            placement: compiled
                .tasks
                .iter()
                .zip(&placement)
                .map(|(t, w)| (*t, WorkerId(*w)))
                .collect(),
        });

        for w in &workers {
            let d = Deployment {
                query: name.to_string(),
                attempt: number,
                worker: *w,
                submission: submission.clone(),
                placement: placement.clone(),
                instances: compiled.instance_names.clone(),
                checkpoint_dir: dir.to_path_buf(),
                checkpoint_store: cluster.store.for_executors(name),
                restore: restore_epoch,
                commit_only,
                lineage: Some(lineage.clone()),
                query_digest: Some(digest.clone()),
                controls: carried.clone(),
                coordinator: cluster.addr,
                coordinators: None,
                silent_after_ms: None,
                incarnation: 0,
                term: cluster.term,
                alone: false,
            };
            if let Some(a) = state.queries.get_mut(name).and_then(|q| q.attempt.as_mut()) {
                a.template.get_or_insert_with(|| d.clone());
            }
            if let Some(entry) = state.workers.get(w) {
                entry.send(&ToWorker::Deploy(Box::new(d)));
            }
        }
    }
    // Every executor reports where it listens; then all start.
    let late =
        format!("the executors of attempt {number} did not all start within {EXECUTORS_WITHIN:?}");
    let executors = match await_executors(cluster, name, number, EXECUTORS_WITHIN, late)? {
        Ok(e) => e,
        Err(outcome) => return Ok(outcome),
    };
    let addresses: BTreeMap<u32, SocketAddr> =
        executors.iter().map(|(w, (_, addr))| (*w, *addr)).collect();
    // Numbered after every checkpoint an earlier attempt began: an epoch is never used twice
    // (a new attempt's barrier numbered as one a stale task had would be taken for a replay,
    // and files of a given-up checkpoint could mix with the new one's).
    let after = numbered_so_far(
        cluster,
        name,
        &cluster.committing_store(name)?,
        restore.as_ref(),
    )?;
    let checkpointer = match start_checkpointer(
        cluster,
        name,
        compiled,
        dir,
        &placement,
        restore,
        carried,
        Numbering::After(after),
        number,
    ) {
        Ok(c) => c,
        Err(e) => {
            return Ok(wind_down(
                cluster,
                name,
                number,
                Outcome::failed(format!("{e:#}")),
            ))
        }
    };
    for (to, _) in executors.values() {
        let _ = to.send(&ToExecutor::Start {
            addresses: addresses.clone(),
        });
    }
    eprintln!(
        "anduin: query {name}, attempt {number}: running on {} workers",
        workers.len()
    );
    if !again.is_empty() {
        let control = current(&cluster.lock(), name, number).and_then(|a| a.control.clone());
        if let Some(control) = control {
            controls::send_again(name, control, again);
        }
    }
    run_to_end(cluster, name, compiled, dir, number, checkpointer)
}

/// How an attempt's checkpoint coordinator numbers its first checkpoint.
#[derive(Debug, Clone, Copy)]
enum Numbering {
    /// A new attempt: after this epoch, the newest any attempt before it began.
    After(anduin_types::Epoch),
    /// An attempt taken over: the checkpoint of this epoch may have been begun by the
    /// coordinator before (its barrier is asked of the sources again); the next comes after.
    TakingOver(anduin_types::Epoch),
}

/// The newest checkpoint of query `name` any coordinator or attempt may have begun: the last
/// complete one, the newest with files in `store`, the newest the catalog records as given
/// up, the newest this coordinator's life of the query saw start.
fn numbered_so_far(
    cluster: &Arc<Cluster>,
    name: &str,
    store: &Store,
    restore: Option<&Validated>,
) -> Result<anduin_types::Epoch> {
    let (newest_given_up, started) = {
        let state = cluster.lock();
        (
            state
                .catalog
                .state()
                .queries
                .get(&QueryId(name.to_string()))
                .and_then(|q| q.newest_given_up),
            state.queries.get(name).and_then(|q| q.life.last_epoch()),
        )
    };
    let begun = newest_begun(&NumberingFacts {
        last_complete: restore.map(|v| anduin_types::Epoch(v.manifest.epoch)),
        newest_in_store: store.epochs()?.into_iter().max(),
        newest_given_up,
    });
    Ok(begun.max(started.unwrap_or(begun)))
}

/// How `anduin ctl stop` (the API's stop, the web UI's button) stops attempt `number` of
/// query `name`: the query's life takes the request (refused while it recovers, say), and
/// every executor of the attempt stops its sources, which take a last checkpoint (not the
/// end of the input: `anduin submit --resume` goes on from it) and end; the parts then
/// finish what they hold and end, and the query finishes.
fn stopper(cluster: &Arc<Cluster>, name: &str, number: u64) -> anduin_runtime::control::Stopper {
    let (cluster, name) = (Arc::clone(cluster), name.to_string());
    Arc::new(move || {
        let mut state = cluster.lock();
        let now = state
            .queries
            .get(&name)
            .map_or("gone", |q| super::coordinator::state_name(q.life.state()));
        state
            .try_feed(&name, &Input::StopRequested)
            .map_err(|refused| (now.to_string(), refused.to_string()))?;
        let q = state
            .queries
            .get_mut(&name)
            .filter(|q| q.attempt.as_ref().is_some_and(|a| a.number == number))
            .ok_or_else(|| (now.to_string(), format!("attempt {number} is over")))?;
        q.stop_asked = true;
        let a = q.attempt.as_mut().expect("the attempt was just found");
        a.stopping = true;
        for (to, _) in a.executors.values() {
            let _ = to.send(&ToExecutor::Drain);
        }
        eprintln!("anduin: query {name}, attempt {number}: stopping: its sources stop and take a last checkpoint, then it ends (`anduin submit --resume` goes on from that checkpoint)");
        Ok(())
    })
}

/// Stops attempt `number` of query `name` (its control plane `control`) as soon as it runs:
/// the attempt before it was asked to stop, and rolled back as a whole before it had.
fn stop_again(cluster: &Arc<Cluster>, name: &str, number: u64, control: &Arc<Control>) {
    let (name, weak) = (name.to_string(), Arc::downgrade(control));
    let cluster = Arc::downgrade(cluster);
    control.when_running(move || {
        let (Some(control), Some(cluster)) = (weak.upgrade(), cluster.upgrade()) else {
            return;
        };
        // Not on the thread that starts the attempt: the stop takes the cluster's lock, and
        // waits for the query's life to end its recovery (a recovering query takes no stop).
        let spawned = std::thread::Builder::new()
            .name("anduin-stop-again".into())
            .spawn({
                let name = name.clone();
                move || {
                    let mut state = cluster.lock();
                    loop {
                        if current(&state, &name, number).is_none() {
                            return;
                        }
                        let recovering = state.queries.get(&name).is_some_and(|q| {
                            matches!(q.life.state(), QueryState::Recovering { .. })
                        });
                        if !recovering {
                            break;
                        }
                        state = cluster.wait(state, Duration::from_millis(200));
                    }
                    drop(state);
                    stopped_again(&name, number, control.stop());
                }
            });
        if let Err(e) = spawned {
            eprintln!("anduin: query {name}: cannot stop again after the rollback: {e}; ask again with `anduin ctl stop`");
        }
    });
}

/// What the coordinator says of the stop it asked again of attempt `number` of query `name`.
fn stopped_again(
    name: &str,
    number: u64,
    result: Result<(), anduin_runtime::control::ControlFailure>,
) {
    match result {
                    Ok(()) => eprintln!("anduin: query {name}, attempt {number}: stopping again: the stop asked of the attempt before it was interrupted by its rollback"),
                    Err(e) => eprintln!("anduin: query {name}, attempt {number}: the stop asked before the rollback could not be carried out: {e}; ask again with `anduin ctl stop`"),
    }
}

/// Starts the checkpoint coordinator of an attempt whose executors have reported (all, or all
/// but those of parts lost while no coordinator ran): each task instance's commands go to the
/// executor that runs its part. `carried`: the param changes the catalog recorded after
/// `restore` that the attempt has (taken over) or is given with the restore (rolled back);
/// its control plane starts from them too, and records every change it applies.
#[allow(clippy::too_many_arguments)]
fn start_checkpointer(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    placement: &[u32],
    mut restore: Option<Validated>,
    carried: Vec<anduin_checkpoint::ChangeRecord>,
    numbering: Numbering,
    number: u64,
) -> Result<std::thread::JoinHandle<()>> {
    let (taking_over, numbered_after) = match numbering {
        Numbering::After(e) => (None, Some(e)),
        Numbering::TakingOver(e) => (Some(e), Some(e)),
    };
    let carried_alone = match restore.as_mut() {
        Some(v) => {
            v.manifest.controls.extend(carried);
            Vec::new()
        }
        None => carried,
    };
    let (events_rx, control_events, figures) = {
        let state = cluster.lock();
        let a = state
            .queries
            .get(name)
            .and_then(|q| q.attempt.as_ref())
            .context("the attempt is gone")?;
        (
            a.events_rx.clone(),
            a.events.clone(),
            Arc::clone(&a.figures),
        )
    };
    // The attempt's control plane, served by the coordinator's API: its changes go on the
    // barriers this coordinator injects.
    let control = Arc::new(crate::control::control_of(
        name,
        Some(compiled.shown_file.clone()),
        Arc::clone(&compiled.loaded.graph),
        crate::control::RunPlaces {
            checkpointing: true,
            checkpoint_dir: Some(dir.to_path_buf()),
            query_file: Some(compiled.file.clone()),
            restored: restore
                .as_ref()
                .map(|v| v.manifest.controls.clone())
                .unwrap_or_default(),
            functions: Some(Arc::clone(&compiled.functions)),
            ..crate::control::RunPlaces::default()
        },
    )?);
    control.stop_with(stopper(cluster, name, number));
    if recovers_if_failed(cluster, &cluster.lock(), name) {
        // A failure rolls the query back as a new attempt (`drive`), unless cancelled.
        control.recovered_on_failure();
    }
    control.grow_within(super::growth::growth_room(cluster, (name, number)));
    control.prepare_growth_with(super::growth::prepare_parts(cluster, name, number));
    control.tell_barriers_to(super::growth::barriers_told(cluster, name, number));
    if let (Numbering::After(_), Some(v)) = (numbering, restore.as_ref()) {
        // A rollback starts at the planned instances: those a growth added come again.
        controls::grow_again(name, &control, &v.manifest.controls);
    }
    let stop_asked = cluster
        .lock()
        .queries
        .get(name)
        .is_some_and(|q| q.stop_asked);
    if stop_asked && matches!(numbering, Numbering::After(_)) {
        stop_again(cluster, name, number, &control);
    }
    if let Some(written) = compiled.loaded.reshaped() {
        control.as_written(written);
    }
    if !carried_alone.is_empty() {
        // Taken over before any checkpoint completed: the changes are all it knows.
        control.restored(0, &carried_alone);
    }
    control.record_changes_with(controls::recorder(cluster, name));
    control.record_intents_with(controls::intent_recorder(cluster, name));
    cluster.api.remove(name);
    cluster
        .api
        .add(Arc::clone(&control) as Arc<dyn anduin_api::QueryControl>)?;
    let mut state = cluster.lock();
    let query = state.queries.get_mut(name);
    let q_submission = query.as_ref().map(|q| q.submission.clone());
    if let (Some(a), Some(q_submission)) = (query.and_then(|q| q.attempt.as_mut()), q_submission) {
        a.control = Some(Arc::clone(&control));
        // Its rounds read the figures the executors send; its rescales go through this
        // control plane, as `anduin ctl scale` does.
        let settings = crate::autoscale::settings(
            &compiled.args.autoscale,
            &compiled.args.engine,
            &compiled.loaded,
        )?;
        // It ends by itself once the attempt's control plane is detached (the attempt ended).
        if let Some(s) = settings {
            anduin_runtime::autoscaler::start(Arc::clone(&control), s)
                .context("cannot start the autoscaler")?
                .detach();
        }
        // So do the rules applied at run time, whose changes go through it too.
        let rules = anduin_expr::FunctionProvider::scoped(&compiled.functions, || {
            rules_of(&q_submission, &compiled.args, &compiled.loaded)
        })?;
        if let Some(rules) = rules {
            crate::run_rules::start(
                Arc::clone(&control),
                rules,
                compiled.args.rules.rules_interval,
            )
            .context("cannot start the rules applied at run time")?
            .detach();
        }
    }
    drop(state);
    let mut tasks = BTreeMap::new();
    // A part whose executor has not reported (lost while no coordinator ran, restored alone
    // once the attempt runs) gets its commands once its new executor has.
    for (instance, worker) in placement.iter().enumerate() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tasks.insert(instance, tx);
        // Each command goes to the executor that runs the instance's part now (another
        // one after the part was restored elsewhere).
        let (cluster, query, part) = (Arc::clone(cluster), name.to_string(), *worker);
        std::thread::Builder::new()
            .name("anduin-commands-out".into())
            .spawn(move || {
                for command in rx {
                    // A part being restored elsewhere gets its commands once its new
                    // executor has reported; an attempt that is over gets none.
                    let mut state = cluster.lock();
                    let to = loop {
                        match current(&state, &query, number) {
                            None => break None,
                            Some(a) => {
                                if let Some((s, _)) = a.executors.get(&part) {
                                    break Some(s.clone());
                                }
                            }
                        }
                        state = cluster.wait(state, Duration::from_millis(200));
                    };
                    drop(state);
                    if let Some(to) = to {
                        // Not from a leader paused past its lease (checkpoint commits).
                        super::leadership::act_or_step_down();
                        let _ = to.send(&ToExecutor::Command {
                            task: instance,
                            command,
                        });
                    }
                }
            })?;
    }
    let config = RunConfig {
        chaining: !compiled.args.engine.no_chaining,
        parallelism: compiled.args.engine.parallelism,
        max_parallelism: compiled.args.engine.max_parallelism,
        checkpointing: Some(Checkpointing {
            settings: CheckpointSettings {
                store: Some(checkpoint_store(cluster, name, number)?),
                ..checkpoint_settings(&compiled.args, dir)
            },
            restore,
            commit_only: false,
            // `--inject-checkpoint-failure` (testing): the manifest of that checkpoint cannot
            // be written, as on a full disk, and the checkpoint is given up.
            faults: anduin_runtime::Faults {
                fail_checkpoint: compiled
                    .args
                    .inject_checkpoint_failure
                    .map(anduin_types::Epoch),
                deny_checkpoints_from: compiled
                    .args
                    .inject_checkpoints_denied_from
                    .map(anduin_types::Epoch),
            },
            remote: None,
        }),
        events: anduin_runtime::Events::logged()
            .with(Arc::new(LastCheckpoint {
                cluster: Arc::clone(cluster),
                query: name.to_string(),
                producers: producers(&compiled.topology()),
            }))
            .with(Arc::new(cluster.api.event_feed(name))),
        control: Some(control),
        ..RunConfig::default()
    };
    let remote = anduin_runtime::Coordinated {
        tasks,
        events: events_rx,
        control_events,
        taking_over,
        numbered_after,
        placement: placement.to_vec(),
        figures: Some(Arc::new(move || {
            figures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .map(|s| s.metrics.clone())
                .collect()
        })),
    };
    anduin_runtime::coordinate(&compiled.loaded.graph, &config, remote)
        .context("cannot start the checkpoint coordinator")
}

/// The store attempt `number` of query `name` completes its checkpoints in; with
/// `--inject-exit-after last-checkpoint-awaited` (testing), the coordinator exits before the
/// last manifest is written, once every executor waits to end.
fn checkpoint_store(cluster: &Arc<Cluster>, name: &str, number: u64) -> Result<Store> {
    let store = cluster.committing_store(name)?;
    if cluster.exit_after != Some(ExitPoint::LastCheckpointAwaited) {
        return Ok(store);
    }
    let (guard, cluster, query) = (
        cluster.commit_guard(),
        Arc::clone(cluster),
        name.to_string(),
    );
    Ok(store.with_commit_guard(Arc::new(move |act: &str| {
        if act == "checkpoint commit" {
            super::exiting::exit_once_every_part_awaits(&cluster, &query, number);
        }
        guard(act)
    })))
}

/// Why attempt `number` of query `name` fails now and whose loss it is, if one worker's;
/// otherwise `why` and `lost`, as found before.
fn trouble_now(
    cluster: &Cluster,
    name: &str,
    number: u64,
    why: String,
    lost: (u32, bool),
) -> (String, (u32, bool)) {
    match trouble(&cluster.lock(), name, number) {
        Some(Outcome::Failed {
            why,
            worker: Some(lost),
            ..
        }) => (why, lost),
        _ => (why, lost),
    }
}

/// Runs an attempt whose executors have started until it ends, and winds it down.
fn run_to_end(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    number: u64,
    checkpointer: std::thread::JoinHandle<()>,
) -> Result<Outcome> {
    {
        let mut state = cluster.lock();
        let recovering = state
            .queries
            .get(name)
            .is_some_and(|q| matches!(q.life.state(), QueryState::Recovering { .. }));
        if recovering {
            state.feed(name, &Input::RecoveryDone);
        }
    }
    let outcome = {
        let mut state = cluster.lock();
        loop {
            match trouble(&state, name, number) {
                // A dead worker, or a part that failed while its worker lives.
                Some(Outcome::Failed {
                    why,
                    worker: Some(lost),
                    ..
                }) if cluster.per_task_recovery => {
                    // No growth beside parts restored alone (the restore refuses one that
                    // came before).
                    if let Some(c) = current(&state, name, number).and_then(|a| a.control.as_ref())
                    {
                        c.stop_growing("a worker of the query was lost while it ran, and its part is restored alone: instances beyond those started are not added in this attempt (not supported yet)");
                    }
                    drop(state);
                    match super::restore::restore_part(cluster, name, compiled, dir, number) {
                        Ok(None) => {
                            state = cluster.lock();
                            continue;
                        }
                        // The trouble as it is now: the restore may have failed because another
                        // worker died meanwhile (its host), which is then the one to name.
                        Ok(Some(fallback)) => {
                            let (why, lost) = trouble_now(cluster, name, number, why, lost);
                            break Outcome::Failed {
                                why,
                                worker: Some(lost),
                                fallback: Some(fallback),
                            };
                        }
                        Err(e) => {
                            let (why, lost) = trouble_now(cluster, name, number, why, lost);
                            break Outcome::Failed {
                                why,
                                worker: Some(lost),
                                fallback: Some(format!("restoring its part failed: {e:#}")),
                            };
                        }
                    }
                }
                Some(outcome) => break outcome,
                None => {}
            }
            let a = current(&state, name, number).context("the attempt is gone")?;
            if a.workers
                .iter()
                .all(|w| matches!(a.ended.get(w), Some(None)))
            {
                break Outcome::Finished;
            }
            state = cluster.wait(state, Duration::from_millis(500));
        }
    };
    // Stopped (by this coordinator, or by one before it that this one took over from).
    let stopped = {
        let state = cluster.lock();
        current(&state, name, number).is_some_and(|a| a.stopping)
            || state
                .queries
                .get(name)
                .is_some_and(|q| matches!(q.life.state(), QueryState::Stopping))
    };
    let outcome = match outcome {
        Outcome::Finished => {
            end_events(cluster, name, number, false);
            outcome
        }
        other => wind_down(cluster, name, number, other),
    };
    // Its event senders are gone with the attempt: it has completed what it could.
    let _ = checkpointer.join();
    if matches!(outcome, Outcome::Finished) && stopped {
        // Stopped (`anduin ctl stop`): its sources took a last checkpoint that is not the end
        // of their input.
        let last = cluster.committing_store(name).and_then(|s| {
            Ok(s.choose_restore()?
                .1
                .map(|v| (v.manifest.epoch, v.manifest.finished)))
        });
        match last {
            // The stop came as every input ended: nothing is left to resume.
            Ok(Some((epoch, true))) => eprintln!("anduin: query {name} finished at checkpoint {epoch} as it stopped: its input had ended, its output is complete"),
            Ok(Some((epoch, false))) => eprintln!("anduin: query {name} stopped at checkpoint {epoch}: `anduin submit --resume` goes on from it"),
            _ => eprintln!("anduin: query {name} stopped, but its last checkpoint failed (see the log): `anduin submit --resume` goes on from the one before, if any"),
        }
    } else if matches!(outcome, Outcome::Finished) {
        // Every part ended well: each sink committed what it had at the end of its input,
        // as in `anduin run`, even when the last checkpoint could not be written.
        let store = cluster.committing_store(name);
        if !matches!(store.and_then(|s| recovery(&s)), Ok(Recovery::Finished(_))) {
            eprintln!("anduin: query {name} finished, but its last checkpoint failed (see the log): its output is complete; a new submission starts from the beginning");
        }
    }
    Ok(outcome)
}

/// Takes over the attempt a coordinator before this one started: waits for each of its
/// executors to report again (they keep running meanwhile), then coordinates its checkpoints
/// from the last complete one, without restarting anything. An executor that does not come
/// back (its worker went while no coordinator ran) makes it a failed attempt: the query then
/// recovers as from any failure.
fn take_over(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    number: u64,
) -> Result<Outcome> {
    // Each instance's part (the worker it was deployed on); parts restored elsewhere by
    // per-task recovery run on their hosts, at their incarnations.
    let (placement, hosts, incarnations): (Vec<u32>, BTreeMap<u32, u32>, BTreeMap<u32, u64>) = {
        let state = cluster.lock();
        let q = state
            .catalog
            .state()
            .queries
            .get(&QueryId(name.to_string()))
            .context("the catalog lost the query")?;
        let placement = compiled
            .tasks
            .iter()
            .map(|t| {
                q.parts
                    .get(t)
                    .or_else(|| q.placement.get(t))
                    .map_or(u32::MAX, |w| w.0)
            })
            .collect();
        let hosts = q
            .moved_parts()
            .into_iter()
            .map(|(p, h)| (p.0, h.0))
            .collect();
        let incarnations = q.incarnations.iter().map(|(p, n)| (p.0, *n)).collect();
        (placement, hosts, incarnations)
    };
    {
        let mut state = cluster.lock();
        let running_on: Vec<u32> = placement
            .iter()
            .map(|p| hosts.get(p).copied().unwrap_or(*p))
            .collect();
        let names = placement_names(&state, &running_on);
        let instances = instance_workers(&state, &compiled.instance_names, &running_on);
        // The parts whose end a coordinator noted (this one, since it started, or one before
        // it): their workers will not tell it again. Read under the lock the attempt is set
        // up under, so that none reported meanwhile is missed.
        let ended: BTreeMap<u32, Option<String>> = state
            .catalog
            .state()
            .queries
            .get(&QueryId(name.to_string()))
            .filter(|q| q.attempt == number)
            .map(|q| q.ended.iter().map(|(p, e)| (p.0, e.clone())).collect())
            .unwrap_or_default();
        let q = state.queries.get_mut(name).context("the query is gone")?;
        q.status.placement = names;
        q.status.instances = instances;
        let mut a = Attempt::new(number, placement.clone(), hosts, incarnations);
        a.ended = ended;
        q.attempt = Some(a);
    }
    eprintln!("anduin: query {name}, attempt {number}: waiting for its executors to report again");
    let late =
        format!("not every executor of attempt {number} reported to the restarted coordinator");
    let executors = match await_reported(cluster, name, number, late)? {
        Ok(e) => e,
        Err(outcome) => return Ok(outcome),
    };
    start_the_unstarted(cluster, name, number, &executors);
    let store = cluster.committing_store(name)?;
    let (_, restore) = store.choose_restore()?;
    if let Some(v) = &restore {
        // Complete: an executor waiting on it (its commit did not reach it) may end.
        let recorded = {
            let mut state = cluster.lock();
            if let Some(a) = state
                .queries
                .get_mut(name)
                .and_then(|q| q.attempt.as_mut())
                .filter(|a| a.number == number)
            {
                a.settle(v.manifest.epoch);
            }
            state
                .queries
                .get(name)
                .and_then(|q| q.status.last_checkpoint)
        };
        // The coordinator before this one wrote its manifest and went before recording it:
        // the store is right, the catalog is told.
        if recorded < Some(v.manifest.epoch) {
            record_completed(cluster, name, v.manifest.epoch);
        }
    }
    // The executors have the changes made since that checkpoint; the control plane is told
    // of them. A rescale among them cannot be taken over.
    let reapply = controls::after_checkpoint(cluster, name, restore.as_ref(), Resumed::TakeOver);
    let not_taken_over = reapply
        .not_taken_over
        .as_ref()
        .map(|r| controls::not_taken_over(r, restore.as_ref()))
        .or_else(|| controls::grown_not_taken_over(compiled, restore.as_ref()));
    if let Some(why) = not_taken_over {
        eprintln!("anduin: query {name}, attempt {number}: {why}");
        return Ok(wind_down(
            cluster,
            name,
            number,
            Outcome::Failed {
                why: why.clone(),
                worker: None,
                fallback: Some(why),
            },
        ));
    }
    let taking_over = numbered_so_far(cluster, name, &store, restore.as_ref())?;
    let checkpointer = match start_checkpointer(
        cluster,
        name,
        compiled,
        dir,
        &placement,
        restore,
        reapply.changes,
        Numbering::TakingOver(taking_over),
        number,
    ) {
        Ok(c) => c,
        Err(e) => {
            return Ok(wind_down(
                cluster,
                name,
                number,
                Outcome::failed(format!("{e:#}")),
            ))
        }
    };
    eprintln!("anduin: query {name}, attempt {number}: taken over, nothing restarted");
    run_to_end(cluster, name, compiled, dir, number, checkpointer)
}

/// The executors that report again to a restarted coordinator (within twice the heartbeat
/// timeout; `late` says so otherwise), once [`decide_take_over`] says to take the attempt over: every
/// one; or, with per-task recovery, every one but those of parts that failed or whose worker
/// died while no coordinator ran, or whose executor stays silent for a heartbeat timeout on
/// a live worker — the attempt is taken over without them and their instances are restored
/// alone once it runs. Otherwise as [`await_executors`].
fn await_reported(
    cluster: &Cluster,
    name: &str,
    number: u64,
    late: String,
) -> Result<Result<Executors, Outcome>> {
    let silent_after = Instant::now() + cluster.heartbeat_timeout;
    let deadline = Instant::now() + cluster.heartbeat_timeout * 2;
    let mut state = cluster.lock();
    loop {
        let a = current(&state, name, number).context("the attempt is gone")?;
        let parts: BTreeMap<u32, PartFacts> = a
            .workers
            .iter()
            .map(|p| {
                let facts = PartFacts {
                    reported: a.executors.contains_key(p),
                    ended: a.ended.get(p).cloned(),
                    host: match state.workers.get(&a.host(*p)).map(|e| e.link) {
                        Some(Link::Alive) => Host::Alive,
                        Some(Link::Awaited) => Host::Awaited,
                        Some(Link::Dead) | None => Host::Dead,
                    },
                };
                (*p, facts)
            })
            .collect();
        let executors = a.executors.clone();
        match decide_take_over(
            &parts,
            cluster.per_task_recovery,
            Instant::now() > silent_after,
        ) {
            TakeOver::Whole => return Ok(Ok(executors)),
            TakeOver::WithoutLost { lost } => {
                eprintln!("anduin: query {name}, attempt {number}: the part(s) {lost:?} were lost while no coordinator ran; taking the others over, those are restored alone");
                return Ok(Ok(executors));
            }
            TakeOver::WithoutSilent { silent, lost } => {
                // Its worker lives and its executor has not reported: its deployment never
                // left the coordinator before (which went between recording where the part
                // goes and sending it), or its executor died. It is restored alone, as a
                // failed part; an executor of it that does come back is of an older
                // incarnation, turned away.
                let why = format!("its executor did not report to the restarted coordinator within the heartbeat timeout ({:?})", cluster.heartbeat_timeout);
                let a = current(&state, name, number).context("the attempt is gone")?;
                let silent_on: Vec<(u32, u32, u64)> = silent
                    .iter()
                    .map(|p| (*p, a.host(*p), a.incarnation(*p)))
                    .collect();
                for (part, host, incarnation) in &silent_on {
                    if let Some(w) = state.workers.get(host).filter(|e| e.alive()) {
                        w.send(&ToWorker::CancelPart {
                            query: name.to_string(),
                            attempt: number,
                            part: *part,
                            incarnation: *incarnation,
                        });
                    }
                }
                if let Some(a) = state
                    .queries
                    .get_mut(name)
                    .and_then(|q| q.attempt.as_mut())
                    .filter(|a| a.number == number)
                {
                    for part in &silent {
                        a.ended.insert(*part, Some(why.clone()));
                    }
                }
                let missing: BTreeSet<u32> = silent.union(&lost).copied().collect();
                eprintln!("anduin: query {name}, attempt {number}: the part(s) {missing:?} did not report again; taking the others over, those are restored alone");
                return Ok(Ok(executors));
            }
            TakeOver::Wait => {}
        }
        match trouble(&state, name, number) {
            // A part lost while no coordinator ran is restored alone once the others are
            // taken over.
            Some(Outcome::Failed {
                worker: Some(_), ..
            }) if cluster.per_task_recovery => {}
            Some(outcome) => {
                drop(state);
                return Ok(Err(wind_down(cluster, name, number, outcome)));
            }
            None => {}
        }
        if Instant::now() > deadline {
            drop(state);
            return Ok(Err(wind_down(cluster, name, number, Outcome::failed(late))));
        }
        state = cluster.wait(state, Duration::from_millis(200));
    }
}

/// Finishes what the coordinator before this one may have left half done when it went away:
/// the executors it deployed but did not start (a whole attempt's, or a restored part's) are
/// started, and every executor is told where each restored part runs (it may not have been
/// told; an address it knows already changes nothing).
fn start_the_unstarted(cluster: &Cluster, name: &str, number: u64, executors: &Executors) {
    let mut state = cluster.lock();
    let Some(a) = state
        .queries
        .get_mut(name)
        .and_then(|q| q.attempt.as_mut())
        .filter(|a| a.number == number)
    else {
        return;
    };
    let addresses: BTreeMap<u32, SocketAddr> =
        executors.iter().map(|(w, (_, addr))| (*w, *addr)).collect();
    let unstarted = std::mem::take(&mut a.unstarted);
    for (part, (to, _)) in executors {
        if unstarted.contains(part) {
            let _ = to.send(&ToExecutor::Start {
                addresses: addresses.clone(),
            });
            continue;
        }
        for moved in a.hosts.keys().filter(|m| *m != part) {
            if let Some(address) = addresses.get(moved) {
                let _ = to.send(&ToExecutor::Redirect {
                    worker: *moved,
                    address: *address,
                });
            }
        }
    }
    if !unstarted.is_empty() {
        eprintln!(
            "anduin: query {name}, attempt {number}: started the executors of part(s) {unstarted:?}, which the coordinator before had not"
        );
    }
}

/// The executors of every worker of the attempt, once all have reported; or, when something
/// goes wrong first (or they are not all there within `within`: `late` says so), the
/// attempt wound down and its outcome.
pub(super) fn await_executors(
    cluster: &Cluster,
    name: &str,
    number: u64,
    within: Duration,
    late: String,
) -> Result<Result<Executors, Outcome>> {
    let deadline = Instant::now() + within;
    let mut state = cluster.lock();
    loop {
        if let Some(outcome) = trouble(&state, name, number) {
            drop(state);
            return Ok(Err(wind_down(cluster, name, number, outcome)));
        }
        let a = current(&state, name, number).context("the attempt is gone")?;
        if a.executors.len() == a.workers.len() {
            return Ok(Ok(a.executors.clone()));
        }
        if Instant::now() > deadline {
            drop(state);
            return Ok(Err(wind_down(cluster, name, number, Outcome::failed(late))));
        }
        state = cluster.wait(state, Duration::from_millis(200));
    }
}

/// The executors of an attempt, by worker: how to reach each and where it listens.
type Executors = BTreeMap<u32, (proto::Sender, SocketAddr)>;

/// How many task instances each worker (by name) runs.
pub(super) fn placement_names(state: &State, placement: &[u32]) -> BTreeMap<String, usize> {
    placement.iter().fold(BTreeMap::new(), |mut m, w| {
        let n = state
            .workers
            .get(w)
            .map_or_else(|| w.to_string(), |e| e.name.clone());
        *m.entry(n).or_default() += 1;
        m
    })
}

/// The worker (name) of each task instance (by name), `placement` giving each instance's
/// worker by its number in the run.
pub(super) fn instance_workers(
    state: &State,
    names: &[String],
    placement: &[u32],
) -> BTreeMap<String, String> {
    names
        .iter()
        .zip(placement)
        .map(|(n, w)| {
            let worker = state
                .workers
                .get(w)
                .map_or_else(|| w.to_string(), |e| e.name.clone());
            (n.clone(), worker)
        })
        .collect()
}

/// Drops the attempt's own sender of events: its checkpoint coordinator ends once the
/// executors' connections have.
fn end_events(cluster: &Cluster, name: &str, number: u64, failed: bool) {
    if let Some(a) = cluster
        .lock()
        .queries
        .get_mut(name)
        .and_then(|q| q.attempt.as_mut())
        .filter(|a| a.number == number)
    {
        a.events = None;
        // The control plane holds a sender of the events too, until detached.
        if let Some(c) = &a.control {
            c.detach(failed);
        }
    }
}

/// Which task instances of `topo` must run on distinct workers: the copies of each hot standby
/// (the rules' `@{p1}`, `@{p2}`), and two operators one after the other that ask for
/// pipelining (`@{p#}`).
pub(super) fn placement_constraints(
    topo: &Topology,
    graph: &anduin_graph::LogicalGraph<Bound>,
) -> Vec<Constraint> {
    let task_ref = |r: &anduin_runtime::InstanceRef| TaskRef {
        task: u32::try_from(r.task).unwrap_or(u32::MAX),
        instance: u32::try_from(r.instance).unwrap_or(u32::MAX),
    };
    // The copies of each hot standby go to distinct workers (the rules' `@{p1}`, `@{p2}`).
    let mut distinct: Vec<Constraint> = topo
        .replica_groups(|n| graph.node(n).survives_input_loss)
        .into_iter()
        .map(|group| {
            Constraint::distinct("the copies of a hot standby", group.iter().map(task_ref))
        })
        .collect();
    // So do two operators one after the other that ask for pipelining (`@{p#}`).
    let split = |task: usize, last: bool| {
        topo.tasks.get(task).is_some_and(|t| {
            let mut nodes = t.nodes();
            let node = if last { nodes.last() } else { nodes.next() };
            node.is_some_and(|n| anduin_graph::splits(graph, n))
        })
    };
    for c in &topo.channels {
        if split(c.from.task, true) && split(c.to.task, false) {
            distinct.push(Constraint::distinct(
                "the stages of a split pipeline",
                [task_ref(&c.from), task_ref(&c.to)],
            ));
        }
    }
    // And the operators a rule placed at distinct slots of one group (`@{g.p1}`, `@{g.p2}`).
    distinct.extend(super::slots::constraints(topo, graph));
    distinct
}

/// Waits until the live workers have a free slot for every task instance (or the query is
/// cancelled), and places the instances over them, the least used worker first (the pure
/// `anduin_coordinator::place`).
fn place(cluster: &Cluster, name: &str, compiled: &Compiled) -> Result<Option<Vec<u32>>> {
    let tasks = &compiled.tasks;
    let distinct = placement_constraints(&compiled.topology(), &compiled.loaded.graph);
    let mut state = cluster.lock();
    // A task keeps the worker its life has it on (if that worker is live); the others are
    // placed anew.
    let needs: Vec<TaskNeed> = {
        let on = state
            .queries
            .get(name)
            .map(|q| q.life.placement().clone())
            .unwrap_or_default();
        tasks
            .iter()
            .map(|t| TaskNeed {
                task: *t,
                now_on: on.get(t).copied(),
            })
            .collect()
    };
    // What the query's status says it waits for (kept up to date as workers come and go).
    let mut told: Option<String> = None;
    loop {
        if state.queries.get(name).is_none_or(|q| q.cancel) {
            return Ok(None);
        }
        // The instances other queries added while running take slots too.
        drop(state);
        let added = super::growth::added_by_worker(cluster, Some(name));
        state = cluster.lock();
        let mut used: BTreeMap<u32, u32> = added
            .into_iter()
            .map(|(w, n)| (w, u32::try_from(n).unwrap_or(u32::MAX)))
            .collect();
        for (q, entry) in &state.queries {
            if let Some(a) = entry.attempt.as_ref().filter(|_| q != name) {
                for w in &a.placement {
                    *used.entry(*w).or_default() += 1;
                }
            }
        }
        // A worker's slots in use: other queries' instances, and this query's that keep it.
        for n in &needs {
            if let Some(w) = n.now_on {
                *used.entry(w.0).or_default() += 1;
            }
        }
        let workers: Vec<WorkerFacts> = state
            .workers
            .iter()
            .filter(|(_, w)| w.alive())
            .map(|(id, w)| {
                WorkerFacts::new(WorkerId(*id), w.slots, used.get(id).copied().unwrap_or(0))
            })
            .collect();
        match anduin_coordinator::place(&needs, &workers, &distinct) {
            Ok(p) => {
                // What it waited for is no longer the query's error.
                if let (Some(why), Some(q)) = (&told, state.queries.get_mut(name)) {
                    if q.status.error.as_ref() == Some(why) {
                        q.status.error = None;
                    }
                }
                return Ok(Some(
                    tasks
                        .iter()
                        .map(|t| p.assignment.get(t).map_or(u32::MAX, |w| w.0))
                        .collect(),
                ));
            }
            Err(e) => {
                let why = format!("{e}: waiting for workers");
                if told.as_ref() != Some(&why) {
                    eprintln!("anduin: query {name}: {why}");
                    if let Some(q) = state.queries.get_mut(name) {
                        q.status.error = Some(why.clone());
                    }
                    told = Some(why);
                }
            }
        }
        state = cluster.wait(state, Duration::from_secs(1));
    }
}

pub(super) enum Recovery {
    /// The last checkpoint says every input ended (its sinks may have yet to commit it).
    Finished(Option<Validated>),
    From(Option<Validated>),
}

/// Which checkpoint the next attempt resumes from (incomplete ones are removed).
pub(super) fn recovery(store: &Store) -> Result<Recovery> {
    let (plan, validated) = store.recovery(false)?;
    Ok(match plan {
        RecoveryPlan::Fresh { remove, .. } => {
            store.remove(&remove)?;
            Recovery::From(None)
        }
        RecoveryPlan::Finished { remove, .. } => {
            store.remove(&remove)?;
            Recovery::Finished(validated)
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
            bail!(
                "no usable checkpoint in {}: {}",
                store.location(),
                list.join("; ")
            )
        }
    })
}

/// Attempt `number` of query `name`, if `part` runs there at `incarnation` (an executor of an
/// older incarnation is stale).
fn running_now<'a>(
    state: &'a mut State,
    name: &str,
    number: u64,
    part: u32,
    incarnation: u64,
) -> Option<&'a mut Attempt> {
    state
        .queries
        .get_mut(name)?
        .attempt
        .as_mut()
        .filter(|a| a.number == number && a.incarnation(part) == incarnation)
}

pub(super) fn current<'a>(state: &'a State, name: &str, number: u64) -> Option<&'a Attempt> {
    state
        .queries
        .get(name)?
        .attempt
        .as_ref()
        .filter(|a| a.number == number)
}

/// What stops the attempt, if anything: a cancel, a part that failed, a dead worker.
pub(super) fn trouble(state: &State, name: &str, number: u64) -> Option<Outcome> {
    let q = state.queries.get(name)?;
    if q.cancel {
        return Some(Outcome::Cancelled);
    }
    let a = current(state, name, number)?;
    // A part being started for a rescale (not started yet): its loss refuses the rescale,
    // it does not fail the attempt (`super::growth`).
    let starting = |w: &u32| a.alone.contains(w) && !a.alone_started.contains(w);
    // A part whose instances added while running all retired has nothing left to lose.
    let retired = |w: &u32| super::growth::ended_alone(a, *w);
    for w in a.workers.iter().filter(|w| !starting(w) && !retired(w)) {
        let host = a.host(*w);
        let worker = state.workers.get(&host).map_or("?", |e| e.name.as_str());
        if let Some(Some(why)) = a.ended.get(w) {
            return Some(Outcome::Failed {
                why: format!("the part on worker {worker}: {why}"),
                worker: Some((host, false)),
                fallback: None,
            });
        }
        if let Some(stuck) = a.stuck.get(w).filter(|_| !a.ended.contains_key(w)) {
            return Some(Outcome::Failed {
                why: format!("the part on worker {worker}: {stuck}"),
                worker: Some((host, false)),
                fallback: None,
            });
        }
        if state
            .workers
            .get(&host)
            .is_none_or(|e| e.link == Link::Dead)
        {
            return Some(Outcome::Failed {
                why: format!("worker {worker} died"),
                worker: Some((host, true)),
                fallback: None,
            });
        }
    }
    None
}

/// Cancels every part of the attempt still running and waits (bounded) for them to end.
fn wind_down(cluster: &Cluster, name: &str, number: u64, outcome: Outcome) -> Outcome {
    let mut state = cluster.lock();
    if let Some(a) = current(&state, name, number) {
        let hosts: BTreeSet<u32> = a.workers.iter().map(|w| a.host(*w)).collect();
        for w in &hosts {
            if let Some(entry) = state.workers.get(w).filter(|e| e.alive()) {
                entry.send(&ToWorker::Cancel {
                    query: name.to_string(),
                    attempt: number,
                });
            }
        }
    }
    let deadline = Instant::now() + CANCEL_WITHIN;
    while let Some(a) = current(&state, name, number) {
        let done = a.workers.iter().all(|w| {
            a.ended.contains_key(w) || !state.workers.get(&a.host(*w)).is_some_and(|e| e.alive())
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
    // A failure the query recovers from (as `drive` decides next): a change on its way was
    // cut short by it, the query is not failed.
    let cancelled = state.queries.get(name).is_some_and(|q| q.cancel);
    let recovered = match &outcome {
        Outcome::Failed { why, .. } if !cancelled && recovers_if_failed(cluster, &state, name) => {
            Some(why.clone())
        }
        _ => None,
    };
    if let Some(c) = current(&state, name, number).and_then(|a| a.control.as_ref()) {
        match recovered {
            Some(why) => c.detach_recovering(why),
            None if cancelled => c.detach_cancelled(),
            None => c.detach_failed(),
        }
    }
    outcome
}

/// What an executor says when it reports.
pub struct Reporting {
    pub query: String,
    pub attempt: u64,
    /// Whose instances it runs: the worker they were deployed on.
    pub part: u32,
    /// Its part's incarnation (how many times the part had been restored elsewhere when the
    /// executor was deployed).
    pub incarnation: u64,
    /// Where it listens for channels.
    pub data: SocketAddr,
    /// It was told to start ([`proto::ToCoordinator::Executor`]'s `started`).
    pub started: bool,
}

/// An executor's connection: registered with its attempt, then its events go to the
/// attempt's checkpoint coordinator. An executor of an attempt that is over, or of a part
/// restored elsewhere since it was deployed, is turned away; its events stop counting the
/// moment the part is restored elsewhere.
pub fn serve_executor(
    cluster: &Arc<Cluster>,
    r: &Reporting,
    to: proto::Sender,
    mut from: proto::Receiver,
) -> Result<()> {
    let (query, attempt, worker) = (r.query.as_str(), r.attempt, r.part);
    // Said first, before anything else: an executor that follows a later leader refuses this
    // one before it tells it anything (and this one steps down as it reads that, below).
    if let Some(term) = cluster.term {
        to.send(&ToExecutor::Leader { term })?;
    }
    let events = {
        let mut state = cluster.lock();
        // A restarted coordinator's driver may not have set the attempt up yet: wait a little
        // for it rather than turn a running executor away.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline
            && state.queries.get(query).is_some_and(|q| {
                q.attempt.is_none() && !q.life.state().is_terminal() && q.status.attempt <= attempt
            })
        {
            state = cluster.wait(state, Duration::from_millis(100));
        }
        let Some(a) = state
            .queries
            .get_mut(query)
            .and_then(|q| q.attempt.as_mut())
            .filter(|a| a.number == attempt && a.workers.contains(&worker))
        else {
            to.refuse(&format!(
                "attempt {attempt} of query \"{query}\" on worker {worker} is over: its executor must stop"
            ));
            bail!("an executor of query {query}, attempt {attempt} on worker {worker}, which is not running");
        };
        // The part was restored elsewhere since this executor was deployed (it was paused or
        // cut off meanwhile), or another executor runs it already: this one is stale and
        // must stop. The same executor reporting again (after losing the coordinator) has
        // the same incarnation and listens where it did.
        let current = a.incarnation(worker);
        if r.incarnation < current
            || a.executors
                .get(&worker)
                .is_some_and(|(_, at)| *at != r.data)
        {
            to.refuse(&format!(
                "the part of worker {worker} of query \"{query}\", attempt {attempt}, was restored elsewhere (incarnation {current}, this executor's is {}): this one must stop",
                r.incarnation
            ));
            bail!(
                "a stale executor of query {query}, attempt {attempt}, part {worker} (incarnation {} of {current})",
                r.incarnation
            );
        }
        let Some(events) = a.events.clone() else {
            to.close();
            bail!("an executor of query {query}, attempt {attempt} reported too late");
        };
        if r.started {
            a.unstarted.remove(&worker);
        } else {
            a.unstarted.insert(worker);
        }
        if a.stopping {
            // A part restored while the query stops stops its sources too.
            let _ = to.send(&ToExecutor::Drain);
        }
        if let Some((old, _)) = a.executors.insert(worker, (to, r.data)) {
            old.close();
            tracing::info!(query, attempt, worker, "an executor reported again");
        }
        if r.started {
            // A part started for instances added while running hears the barriers again.
            super::growth::tell_again(a, worker);
        }
        cluster.changed.notify_all();
        events
    };
    // Until the executor closes its connection (or it breaks): either way it has sent what
    // it will send on this one. Once its part is restored elsewhere, what it still sends
    // (it may have been paused) is stale: its acknowledgements must not complete a
    // checkpoint the restored instances take part in.
    loop {
        let msg = match from.recv::<proto::ToCoordinator>() {
            Ok(Some(msg)) => msg,
            Ok(None) => break,
            Err(e) => match proto::refused_as_superseded(&e) {
                Some(why) => cluster.refused_by_peer(&format!("executor of worker {worker}"), &why),
                None => break,
            },
        };
        match msg {
            proto::ToCoordinator::Event(e) => {
                let mut state = cluster.lock();
                let Some(a) = state
                    .queries
                    .get_mut(query)
                    .and_then(|q| q.attempt.as_mut())
                    .filter(|a| a.number == attempt)
                else {
                    break;
                };
                if a.incarnation(worker) != r.incarnation {
                    tracing::warn!(
                        query,
                        attempt,
                        worker,
                        incarnation = r.incarnation,
                        "a stale executor's events are ignored: its part was restored elsewhere"
                    );
                    break;
                }
                if let anduin_runtime::Event::SourceExhausted { task, .. }
                | anduin_runtime::Event::SourceFinished { task, .. } = &e
                {
                    a.exhausted.insert(*task);
                }
                if let anduin_runtime::Event::SourceFinished { task, .. } = &e {
                    a.finished_sources.insert(*task);
                    if a.finished_sources == a.exhausted {
                        // The last barrier is sent once every source has ended its input.
                        cluster.exit_point(ExitPoint::LastBarrierTaken);
                    }
                }
                drop(state);
                let _ = events.send(e);
            }
            // Leave to end the input is given only to the executor that runs the part now,
            // and only once its part can no longer be restored elsewhere.
            proto::ToCoordinator::MayEnd => {
                // Its sinks commit what they hold when they end their input: never on the
                // word of a leader a later one superseded.
                cluster.still_leading("leave to end the input");
                let mut state = cluster.lock();
                let Some(a) = running_now(&mut state, query, attempt, worker, r.incarnation) else {
                    tracing::warn!(
                        query,
                        attempt,
                        worker,
                        "a stale executor asked to end its input: refused"
                    );
                    break;
                };
                let Some((to, _)) = a.executors.get(&worker).filter(|(_, at)| *at == r.data) else {
                    break;
                };
                if to.send(&ToExecutor::EndAllowed).is_err() {
                    break;
                }
                a.ending.insert(worker);
            }
            // An ended part's executor ends once the checkpoint it acknowledged last is
            // settled (see `exiting`): until then it keeps what it would tell the next
            // coordinator, should this one die first.
            proto::ToCoordinator::MayExit { acked } => {
                let mut state = cluster.lock();
                let Some(a) = running_now(&mut state, query, attempt, worker, r.incarnation) else {
                    tracing::warn!(
                        query,
                        attempt,
                        worker,
                        "a stale executor asked to end: refused"
                    );
                    break;
                };
                if a.executors.get(&worker).is_none_or(|(_, at)| *at != r.data) {
                    break;
                }
                // Its tasks have ended: it is not restored alone, nor judged silent.
                a.ending.insert(worker);
                a.await_exit(worker, acked);
                drop(state);
                cluster.changed.notify_all();
            }
            proto::ToCoordinator::Figures(m) => {
                let mut state = cluster.lock();
                let Some(a) = running_now(&mut state, query, attempt, worker, r.incarnation) else {
                    break;
                };
                a.heard.insert(worker, (r.incarnation, Instant::now()));
                let figures = Arc::clone(&a.figures);
                drop(state);
                let mut figures = figures.lock().unwrap_or_else(|p| p.into_inner());
                let sample = Sample::new(*m, Instant::now(), figures.get(&worker));
                figures.insert(worker, sample);
            }
            proto::ToCoordinator::Alive => {
                let mut state = cluster.lock();
                let Some(a) = running_now(&mut state, query, attempt, worker, r.incarnation) else {
                    break;
                };
                a.heard.insert(worker, (r.incarnation, Instant::now()));
            }
            other => tracing::warn!(?other, "unexpected from an executor"),
        }
    }
    Ok(())
}

/// The part that runs task instance `instance` of an attempt placed by `placement`: the
/// placement's, or — for an instance of a task split while the query ran, which the placement
/// does not number — the part of the instance it split from (it runs in that instance's
/// executor), as the attempt's control plane lists it (`listed`).
fn part_of(
    placement: &[u32],
    listed: Option<&anduin_runtime::control::TopologyInfo>,
    instance: usize,
) -> Option<u32> {
    placement.get(instance).copied().or_else(|| {
        listed?
            .tasks
            .iter()
            .flat_map(|t| &t.instances)
            .find(|i| i.id == instance)
            .map(|i| i.worker)
    })
}

/// Counts in `status` the instances of tasks split while the query runs, and those added
/// beyond --max-parallelism, which the placement of attempt `a` does not name: where its
/// control plane lists them, on their workers.
pub(super) fn count_unplanned(state: &State, a: &Attempt, status: &mut proto::QueryStatus) {
    let Some(listed) = a.control.as_ref().map(|c| c.topology()) else {
        return;
    };
    let worker_of = |part: u32| {
        let host = a.host(part);
        state
            .workers
            .get(&host)
            .map_or_else(|| host.to_string(), |e| e.name.clone())
    };
    let more = split_instance_workers(&listed, a.placement.len(), worker_of);
    for w in more.values() {
        *status.placement.entry(w.clone()).or_default() += 1;
    }
    status.instances.extend(more);
}

/// The worker (name, by `worker_of` its part) of each instance of a task split while the
/// query ran, by the instance's name (its task's operators, and ` #i` when the task runs as
/// several instances), as the attempt's control plane lists them (`listed`): the instances
/// numbered from `planned` on, which the placement of the plan does not name.
pub(super) fn split_instance_workers(
    listed: &anduin_runtime::control::TopologyInfo,
    planned: usize,
    worker_of: impl Fn(u32) -> String,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in &listed.tasks {
        let name = t.operators.join(" -> ");
        for i in t.instances.iter().filter(|i| i.id >= planned) {
            let named = if t.instances.len() > 1 {
                format!("{name} #{}", i.instance)
            } else {
                name.clone()
            };
            out.insert(named, worker_of(i.worker));
        }
    }
    out
}

/// The instances that send to each instance of `topo`, by number.
fn producers(topo: &Topology) -> BTreeMap<usize, Vec<usize>> {
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for c in &topo.channels {
        if let (Some(from), Some(to)) = (topo.instance(c.from), topo.instance(c.to)) {
            out.entry(to.id).or_default().push(from.id);
        }
    }
    out
}

/// Keeps a query's status up to date with its checkpoints.
struct LastCheckpoint {
    cluster: Arc<Cluster>,
    query: String,
    /// The instances that send to each instance, by number.
    producers: BTreeMap<usize, Vec<usize>>,
}

impl LastCheckpoint {
    /// Tells the query's life of a checkpoint begun (while it runs with none in flight) or
    /// ended (the one in flight): it goes through `checkpointing`. Checkpoints the life does
    /// not follow (begun while it recovers) are left out rather than refused.
    fn feed_life(&self, event: &EngineEvent) {
        let input = match event {
            EngineEvent::CheckpointStarted { epoch, .. } => Input::CheckpointStarted {
                epoch: anduin_types::Epoch(*epoch),
            },
            EngineEvent::CheckpointCompleted { epoch, .. } => Input::CheckpointCompleted {
                epoch: anduin_types::Epoch(*epoch),
            },
            EngineEvent::CheckpointFailed { epoch, reason } => Input::CheckpointFailed {
                epoch: anduin_types::Epoch(*epoch),
                cause: reason.clone(),
            },
            _ => return,
        };
        let mut state = self.cluster.lock();
        let follows =
            state
                .queries
                .get(&self.query)
                .is_some_and(|q| match (q.life.state(), &input) {
                    (QueryState::Running, Input::CheckpointStarted { .. }) => true,
                    (
                        QueryState::Checkpointing { epoch },
                        Input::CheckpointCompleted { epoch: e }
                        | Input::CheckpointFailed { epoch: e, .. },
                    ) => epoch == e,
                    _ => false,
                });
        if follows {
            state.feed(&self.query, &input);
        }
    }
}

impl Subscriber for LastCheckpoint {
    fn event(&self, event: &EngineEvent) {
        if let EngineEvent::TasksLost { last_complete } = event {
            let mut state = self.cluster.lock();
            if let Some(a) = state
                .queries
                .get_mut(&self.query)
                .and_then(|q| q.attempt.as_mut())
            {
                a.lost_noted = Some(*last_complete);
            }
            drop(state);
            self.cluster.changed.notify_all();
        }
        if let EngineEvent::CheckpointExpired { epoch, waiting } = event {
            let waiting: BTreeSet<usize> = waiting.iter().copied().collect();
            let stuck = anduin_coordinator::stuck_instances(&waiting, |i| {
                self.producers.get(&i).cloned().unwrap_or_default()
            });
            let mut state = self.cluster.lock();
            if let Some(a) = state
                .queries
                .get_mut(&self.query)
                .and_then(|q| q.attempt.as_mut())
            {
                let listed = a.control.as_ref().map(|c| c.topology());
                let held: BTreeSet<u32> = stuck
                    .into_iter()
                    .filter_map(|i| part_of(&a.placement, listed.as_ref(), i))
                    .collect();
                let judged = super::silence::judge_held_back(&held, &a.fresh);
                for part in judged.stuck {
                    a.stuck.entry(part).or_insert(Stuck::HeldBack(*epoch));
                }
                for part in judged.spared {
                    a.fresh.remove(&part);
                    eprintln!("anduin: query {}: the part of worker {part}, restored since the last checkpoint, held checkpoint {epoch} back: spared once (it may still be catching up)", self.query);
                }
            }
            drop(state);
            self.cluster.changed.notify_all();
        }
        self.feed_life(event);
        if let EngineEvent::CheckpointFailed { epoch, .. } = event {
            // Recorded before the checkpoint's files are removed (the checkpoint coordinator
            // removes them once its subscribers have heard): a coordinator that takes the
            // attempt over after this one died numbers its checkpoints after it.
            let mut state = self.cluster.lock();
            state.record(Edit::CheckpointGivenUp {
                query: QueryId(self.query.clone()),
                epoch: anduin_types::Epoch(*epoch),
            });
            // Recorded so: the executors waiting on it may end.
            if let Some(a) = state
                .queries
                .get_mut(&self.query)
                .and_then(|q| q.attempt.as_mut())
            {
                a.settle(*epoch);
            }
            drop(state);
            if self.cluster.exit_after == Some(ExitPoint::CheckpointGivenUp) {
                // As the checkpoint coordinator does next: a kill lands after that.
                if let Ok(store) = self.cluster.committing_store(&self.query) {
                    let _ = store.delete(anduin_types::Epoch(*epoch));
                }
                self.cluster.exit_point(ExitPoint::CheckpointGivenUp);
            }
        }
        if let EngineEvent::CheckpointCompleted { epoch, .. } = event {
            // As a kill that lands between the manifest and the catalog's record of it.
            self.cluster.exit_point(ExitPoint::CheckpointWritten);
            record_completed(&self.cluster, &self.query, *epoch);
        }
    }
}

/// Checkpoint `epoch` of query `name` completed (its manifest is written): the status, the
/// query's life and the catalog say so, and the executors waiting on it may end.
fn record_completed(cluster: &Cluster, name: &str, epoch: u64) {
    let mut state = cluster.lock();
    if let Some(q) = state.queries.get_mut(name) {
        q.status.last_checkpoint = Some(epoch);
        q.life.note_completed(anduin_types::Epoch(epoch));
        if let Some(a) = q.attempt.as_mut() {
            a.fresh.clear();
        }
    }
    state.record(Edit::CheckpointCompleted {
        query: QueryId(name.to_string()),
        pointer: CheckpointPointer {
            epoch: anduin_types::Epoch(epoch),
            location: cluster.store.location(name),
        },
    });
    if let Some(a) = state.queries.get_mut(name).and_then(|q| q.attempt.as_mut()) {
        a.settle(epoch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use anduin_registry::BuiltinCatalog;

    /// The placement constraints of `query` (as `anduin submit` plans it, with chaining).
    fn constraints(query: &str) -> Vec<Constraint> {
        let spec = anduin_spec::parse_flow(query).expect("the query parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
        let plan = PhysicalPlan::plan(&graph, PlanOptions::default()).expect("the graph plans");
        let topo = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
        placement_constraints(&topo, &graph)
    }

    const LINE: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  SPLIT_LOW
  output name = "low", type = "Event"
}
operator name = "doubled", type = "map" {
  input name = "low"
  param columns = "ts, sensor, value * 2 AS value"
  SPLIT_DOUBLED
  output name = "doubled"
}
operator name = "drop", type = "discard" {
  input name = "doubled"
}
"#;

    #[test]
    fn an_instance_split_off_while_running_is_held_by_the_part_of_the_instance_it_split_from() {
        use anduin_runtime::control::{InstancePlacement, TaskPlacement, TopologyInfo};
        // Two parts; task 3 split off while running, its instances 4 and 5 listed on the
        // parts of the instances they split from.
        let placement = [0, 1, 0, 1];
        let listed = TopologyInfo {
            tasks: vec![TaskPlacement {
                id: 3,
                operators: vec!["late".into()],
                instances: [(0, 4, 1), (1, 5, 0)]
                    .map(|(instance, id, worker)| InstancePlacement {
                        instance,
                        id,
                        worker,
                    })
                    .to_vec(),
            }],
            ..TopologyInfo::default()
        };
        assert_eq!(part_of(&placement, Some(&listed), 2), Some(0));
        assert_eq!(part_of(&placement, Some(&listed), 4), Some(1));
        assert_eq!(part_of(&placement, Some(&listed), 5), Some(0));
        assert_eq!(part_of(&placement, Some(&listed), 6), None);
        assert_eq!(part_of(&placement, None, 4), None);
        // `anduin status` names them, on their parts' workers.
        let named = split_instance_workers(&listed, placement.len(), |p| format!("w{p}"));
        let expected: BTreeMap<String, String> = [("late #0", "w1"), ("late #1", "w0")]
            .map(|(n, w)| (n.to_string(), w.to_string()))
            .into_iter()
            .collect();
        assert_eq!(named, expected);
    }

    #[test]
    fn a_new_placement_moves_tasks_only_away_from_workers_that_died() {
        let (a, b, c) = (TaskRef::new(0, 0), TaskRef::new(1, 0), TaskRef::new(1, 1));
        // The life has a on 1, b on 2, c on 3 (2 died, unnamed); the attempt keeps a and c
        // where they were and moves b to 3.
        let life = [(a, WorkerId(1)), (b, WorkerId(2)), (c, WorkerId(3))].into();
        assert_eq!(
            moved_from(&life, &[a, b, c], &[1, 3, 3]),
            [WorkerId(2)].into()
        );
        // A task the life awaits a slot for (not placed) moves from nowhere.
        let life = [(a, WorkerId(1))].into();
        assert!(moved_from(&life, &[a, b, c], &[1, 3, 3]).is_empty());
    }

    #[test]
    fn two_split_stages_one_after_the_other_must_run_on_distinct_workers() {
        let split = "param pipeline = \"split\"";
        let both = LINE
            .replace("SPLIT_LOW", split)
            .replace("SPLIT_DOUBLED", split);
        let c = constraints(&both);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(format!("{c:?}").contains("the stages of a split pipeline"));
        // One stage alone is a task of its own, with no constraint.
        let one = LINE
            .replace("SPLIT_LOW", split)
            .replace("SPLIT_DOUBLED", "");
        assert!(constraints(&one).is_empty());
        let none = LINE.replace("SPLIT_LOW", "").replace("SPLIT_DOUBLED", "");
        assert!(constraints(&none).is_empty());
    }

    /// The topology of `query` as `anduin submit` plans it, with chaining.
    fn topology_of_query(query: &str) -> (Topology, anduin_graph::LogicalGraph<Bound>) {
        let spec = anduin_spec::parse_flow(query).expect("the query parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
        let plan = PhysicalPlan::plan(&graph, PlanOptions::default()).expect("the graph plans");
        let topo = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
        (topo, graph)
    }

    #[test]
    fn operators_a_rule_placed_at_distinct_slots_run_apart_and_fused_ones_are_refused() {
        // `gen` (heading its task) and `doubled` (split: a task of its own) at distinct slots:
        // apart.
        let placed = LINE
            .replace(
                "param profile = \"events\"",
                "param profile = \"events\"\n  param placement = \"g.p1\"",
            )
            .replace("SPLIT_LOW", "")
            .replace(
                "SPLIT_DOUBLED",
                "param pipeline = \"split\"\n  param placement = \"g.p2\"",
            );
        let (topo, graph) = topology_of_query(&placed);
        assert_eq!(super::super::slots::check(&topo, &graph), Ok(()));
        let c = constraints(&placed);
        assert_eq!(c.len(), 1, "one instance each: {c:?}");
        assert!(format!("{c:?}").contains("the slots a rule placed apart"));
        // The same slot, or slots of other groups: no constraint.
        let same = placed.replace("g.p2", "g.p1");
        assert!(constraints(&same).is_empty());
        let other = placed.replace("g.p2", "h.p2");
        assert!(constraints(&other).is_empty());
        // `low` and `doubled` fused into one task at distinct slots: refused, saying what to do.
        let fused = LINE
            .replace("SPLIT_LOW", "param placement = \"g.p1\"")
            .replace("SPLIT_DOUBLED", "param placement = \"g.p2\"");
        let (topo, graph) = topology_of_query(&fused);
        let e = super::super::slots::check(&topo, &graph).expect_err("fused");
        assert!(
            e.contains("\"low\" (@{g.p1}) and \"doubled\" (@{g.p2}) must run on distinct workers")
                && e.contains("add `param pipeline = \"split\"` to \"doubled\""),
            "{e}"
        );
    }
}
