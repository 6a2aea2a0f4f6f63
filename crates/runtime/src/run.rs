//! Starting a query: instantiate every operator (restoring state when resuming), connect the
//! tasks, start the checkpoint coordinator if any, run the tasks on threads, wait.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anduin_checkpoint::plan::{compare, Compatibility};
use anduin_checkpoint::schedule::Scheduler;
use anduin_checkpoint::{CheckpointDir, Store, Validated};
use anduin_graph::{LogicalGraph, NodeId, Partitioning, PhysicalPlan, PlanOptions};
use anduin_operators::{Bound, BuildContext, OperatorError, RestoreIn};

use anduin_types::{Epoch, Watermark};
use crossbeam_channel::{Receiver, Sender};
use tracing::info;

use crate::chain::{Chain, Link};
use crate::channel::{channel, HashRoute, Route};
use crate::committer::run_committer;
use crate::config::{Checkpointing, RunConfig};
use crate::coordinator::{schedule_settings, Coordinator};
use crate::error::{RuntimeError, TaskError, TaskFailure};
use crate::events::EngineEvent;
use crate::fingerprint::fingerprint;
use crate::protocol::{Command, Event, WriteJob};
use crate::source_task::{SourceCheckpointing, SourceTask};
use crate::stats::{CheckpointCounters, Counters, OperatorStats, RunSummary};
use crate::task::{Inlet, OperatorTask, TaskCheckpointing};
use crate::topology::InstanceRef;

enum Task {
    Source(SourceTask),
    Operator(OperatorTask),
}

/// The channels of checkpointing, while tasks are being built.
struct CheckpointWiring {
    dir: CheckpointDir,
    restore: Option<Validated>,
    events: Sender<Event>,
    jobs: Sender<WriteJob>,
    commands: BTreeMap<usize, Sender<Command>>,
    every_rows: Option<u64>,
}

impl CheckpointWiring {
    fn commands_for(&mut self, task: usize) -> Receiver<Command> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.commands.insert(task, tx);
        rx
    }
}

/// Runs `graph` to completion (every source exhausted and every sink flushed), or until
/// `config.stop` is set, or until an operator fails.
///
/// Every operator instance is created before any runs, so that a missing input file or an
/// unwritable output stops the query before it starts. With checkpoints, a checkpoint to
/// restore is checked against the query first, and every operator resumes from it.
pub fn run(
    graph: &LogicalGraph<Bound>,
    config: &RunConfig,
    ctx: &BuildContext,
) -> Result<RunSummary, RuntimeError> {
    let started = Instant::now();
    let options = PlanOptions {
        chaining: config.chaining,
        default_parallelism: config.parallelism,
    };
    let plan = PhysicalPlan::plan(graph, options);
    info!(
        tasks = plan.tasks.len(),
        channels = plan.channels.len(),
        "starting query"
    );
    let counters: Vec<Arc<Counters>> = graph
        .nodes
        .iter()
        .map(|_| Arc::new(Counters::default()))
        .collect();
    let plan_print = fingerprint(graph, options);
    if let Some(r) = config
        .checkpointing
        .as_ref()
        .and_then(|c| c.restore.as_ref())
    {
        check_compatible(r, &plan_print)?;
    }

    // Instances: every task runs `parallelism` instances, each with an id of its own.
    let mut instance_ids: Vec<Vec<usize>> = Vec::new();
    let mut next_id = 0;
    for t in &plan.tasks {
        instance_ids.push((next_id..next_id + t.parallelism).collect());
        next_id += t.parallelism;
    }

    // Channels: per producer instance, a route for each output of each node (one channel, or
    // one per consumer instance when rows go by key); receivers to the consuming instances.
    let mut routes: Vec<Vec<Vec<Vec<Route>>>> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let p = plan.tasks[task_of(&plan, NodeId(i))].parallelism;
            (0..p)
                .map(|_| n.outputs.iter().map(|_| Vec::new()).collect())
                .collect()
        })
        .collect();
    let mut inlets: Vec<Vec<Vec<Inlet>>> = plan
        .tasks
        .iter()
        .map(|t| (0..t.parallelism).map(|_| Vec::new()).collect())
        .collect();
    for c in &plan.channels {
        let (node, port) = c.from;
        let consumers = &mut inlets[c.to_task];
        for producer in routes[node.0].iter_mut() {
            let route = match &c.partitioning {
                Partitioning::Gather => {
                    let (tx, rx) = channel(config.channel_capacity);
                    if let Some(first) = consumers.first_mut() {
                        first.push(inlet(rx, c.to_input));
                    }
                    Route::One(tx)
                }
                Partitioning::Hash(keys) => {
                    let mut txs = Vec::with_capacity(consumers.len());
                    for consumer in consumers.iter_mut() {
                        let (tx, rx) = channel(config.channel_capacity);
                        consumer.push(inlet(rx, c.to_input));
                        txs.push(tx);
                    }
                    Route::Hashed(HashRoute::new(keys.clone(), txs))
                }
            };
            producer[port].push(route);
        }
    }

    let stop = Arc::clone(&config.stop);
    let abort = Arc::new(AtomicBool::new(false));
    let (event_tx, event_rx) = crossbeam_channel::unbounded();
    let (job_tx, job_rx) = crossbeam_channel::unbounded();
    let mut wiring = config.checkpointing.as_ref().map(|c| CheckpointWiring {
        dir: CheckpointDir::new(&c.settings.dir),
        restore: c.restore.clone(),
        events: event_tx.clone(),
        jobs: job_tx.clone(),
        commands: BTreeMap::new(),
        every_rows: c.settings.every_rows,
    });
    drop(event_tx);
    drop(job_tx);

    // Sources first: a missing input fails before any writer creates (and truncates) a file.
    // A source task runs as many source instances as the task has, each restored from its own
    // position; an operator task has none.
    let mut sources: Vec<Vec<Option<Box<dyn anduin_operators::Source>>>> = Vec::new();
    for t in &plan.tasks {
        let head = graph.node(t.chain[0]);
        let Bound::Source(factory) = &head.bound else {
            sources.push(Vec::new());
            continue;
        };
        let mut instances = Vec::with_capacity(t.parallelism);
        for instance in 0..t.parallelism {
            let mut source =
                factory(&ctx.for_instance(instance, t.parallelism)).map_err(RuntimeError::Start)?;
            if let Some(w) = &wiring {
                source
                    .can_resume()
                    .map_err(|why| RuntimeError::NotCheckpointable {
                        operator: head.name().to_string(),
                        why,
                    })?;
                let key = anduin_checkpoint::instance_key(head.name(), instance, t.parallelism);
                if let Some(state) = restore_in(w, &key)? {
                    source
                        .restore(state)
                        .map_err(|cause| restore_error(w, cause))?;
                }
            }
            instances.push(Some(source));
        }
        sources.push(instances);
    }

    let mut tasks = Vec::new();
    let mut source_tasks = BTreeSet::new();
    for ((t, mut task_inlets), mut task_sources) in plan.tasks.iter().zip(inlets).zip(sources) {
        let chain_name = t
            .chain
            .iter()
            .map(|n| graph.node(*n).name())
            .collect::<Vec<_>>()
            .join(" -> ");
        let is_source = !task_sources.is_empty();
        let operators: &[NodeId] = if is_source { &t.chain[1..] } else { &t.chain };
        for instance in 0..t.parallelism {
            let id = instance_ids[t.id][instance];
            let task_name = if t.parallelism > 1 {
                format!("{chain_name} #{instance}")
            } else {
                chain_name.clone()
            };
            let mut links = Vec::new();
            for &n in operators {
                let node = graph.node(n);
                let Bound::Operator(factory) = &node.bound else {
                    return Err(unreachable_source(node.name()));
                };
                let mut op = factory(&ctx.for_instance(instance, t.parallelism))
                    .map_err(RuntimeError::Start)?;
                if let Some(w) = &wiring {
                    let key = anduin_checkpoint::instance_key(node.name(), instance, t.parallelism);
                    if let Some(state) = restore_in(w, &key)? {
                        op.restore(state).map_err(|cause| restore_error(w, cause))?;
                    }
                }
                links.push(Link {
                    index: n.0,
                    instance,
                    parallelism: t.parallelism,
                    name: node.name().to_string(),
                    op,
                    outlets: std::mem::take(&mut routes[n.0][instance]),
                    counters: Arc::clone(&counters[n.0]),
                    origins_after: false,
                });
            }
            let chain = Chain::new(links);
            let head_id = t.chain[0];
            let task = match task_sources.get_mut(instance).and_then(Option::take) {
                Some(source) => {
                    source_tasks.insert(id);
                    let origins = chain.wants_origins();
                    Task::Source(SourceTask {
                        origins,
                        clock: Arc::clone(&config.clock),
                        name: graph.node(head_id).name().to_string(),
                        source,
                        counters: Arc::clone(&counters[head_id.0]),
                        outlets: std::mem::take(&mut routes[head_id.0][instance])
                            .into_iter()
                            .flatten()
                            .collect(),
                        chain,
                        batch_size: config.batch_size.max(1),
                        linger: config.linger,
                        stop: Arc::clone(&stop),
                        abort: Arc::clone(&abort),
                        watermark: None,
                        idle: false,
                        checkpointing: wiring.as_mut().map(|w| SourceCheckpointing {
                            task: id,
                            index: head_id.0,
                            instance,
                            parallelism: t.parallelism,
                            dir: w.dir.clone(),
                            commands: w.commands_for(id),
                            events: w.events.clone(),
                            jobs: w.jobs.clone(),
                            every_rows: w.every_rows,
                        }),
                    })
                }
                None => Task::Operator(OperatorTask {
                    name: task_name.clone(),
                    inlets: std::mem::take(&mut task_inlets[instance]),
                    chain,
                    checkpointing: wiring.as_mut().map(|w| TaskCheckpointing {
                        task: id,
                        dir: w.dir.clone(),
                        commands: w.commands_for(id),
                        jobs: w.jobs.clone(),
                    }),
                }),
            };
            let at = InstanceRef {
                task: t.id,
                instance,
            };
            tasks.push((id, at, task_name, task));
        }
    }

    // The checkpoint coordinator and the committer.
    let checkpoint_counters = Arc::new(CheckpointCounters::default());
    let mut helpers = Vec::new();
    if let (Some(w), Some(c)) = (wiring, &config.checkpointing) {
        let store = Store::open(&c.settings.dir).map_err(RuntimeError::Checkpoint)?;
        let coordinator = coordinator(
            store,
            c,
            w.commands,
            source_tasks,
            plan_print,
            &checkpoint_counters,
            config,
        );
        let events = w.events;
        let faults = c.faults.clone();
        let dead_letter = Arc::clone(&ctx.dead_letter);
        helpers.push(spawn("anduin-committer", move || {
            run_committer(job_rx, events, faults, dead_letter)
        })?);
        helpers.push(spawn("anduin-coordinator", move || {
            coordinator.run(event_rx)
        })?);
    } else {
        drop(job_rx);
        drop(event_rx);
    }

    // Run every task on its own thread.
    let mut handles = Vec::new();
    for (id, at, name, task) in tasks {
        let abort = Arc::clone(&abort);
        let events = config.events.clone();
        let task_name = name.clone();
        let thread_name = format!("anduin-task-{id}");
        let handle = std::thread::Builder::new()
            .name(thread_name)
            .stack_size(TASK_STACK)
            .spawn(move || {
                events.publish(EngineEvent::TaskStarted {
                    task: id,
                    name: task_name.clone(),
                });
                let result = match task {
                    Task::Source(s) => s.run(),
                    Task::Operator(o) => o.run().map(|()| false),
                };
                let result = result.map_err(|cause| {
                    if !cause.is_secondary() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    TaskError::new(id, at, task_name.clone(), cause)
                });
                match &result {
                    Err(e) => {
                        events.publish(EngineEvent::TaskFailed {
                            task: id,
                            name: task_name,
                            error: e.to_string(),
                        });
                    }
                    Ok(_) => events.publish(EngineEvent::TaskFinished {
                        task: id,
                        name: task_name,
                    }),
                }
                (result, Instant::now())
            })
            .map_err(|cause| RuntimeError::Spawn { task: id, cause })?;
        handles.push((id, at, name, handle));
    }

    let outcome = join_tasks(handles);
    // With every task gone, the committer drains its last jobs and the coordinator its last
    // acknowledgements (completing the last checkpoint), then both stop.
    for h in helpers {
        let _ = h.join();
    }
    let stopped = outcome?;
    let operators = graph
        .topo
        .iter()
        .map(|n| {
            let node = graph.node(*n);
            let c = &counters[n.0];
            OperatorStats {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                rows_in: c.rows_in.load(Ordering::Relaxed),
                rows_out: c.rows_out.load(Ordering::Relaxed),
                metrics: c.metrics(),
            }
        })
        .collect();
    Ok(RunSummary {
        elapsed: started.elapsed(),
        operators,
        stopped,
        checkpoints: config
            .checkpointing
            .as_ref()
            .map(|_| checkpoint_counters.summary()),
    })
}

fn coordinator(
    store: Store,
    c: &Checkpointing,
    tasks: BTreeMap<usize, Sender<Command>>,
    sources: BTreeSet<usize>,
    plan: anduin_checkpoint::plan::PlanFingerprint,
    counters: &Arc<CheckpointCounters>,
    config: &RunConfig,
) -> Coordinator {
    let restored = c.restore.as_ref().map(|v| v.manifest.clone());
    let scheduler = Scheduler::new(
        schedule_settings(&c.settings),
        tasks.keys().copied(),
        sources,
        restored.as_ref().map_or(1, |m| m.epoch + 1),
    );
    Coordinator {
        store,
        settings: c.settings.clone(),
        plan,
        tasks,
        scheduler,
        last: restored,
        counters: Arc::clone(counters),
        faults: c.faults.clone(),
        clock: Arc::clone(&config.clock),
        events: config.events.clone(),
    }
}

/// The stack of a task's thread: room for expressions a few hundred levels deep to evaluate in
/// place (deeper ones get a larger stack for the call: `anduin_spec::nesting::with_stack`).
/// Reserved, not used: the pages a thread does not touch cost no memory.
const TASK_STACK: usize = 16 << 20;

fn spawn(
    name: &'static str,
    f: impl FnOnce() + Send + 'static,
) -> Result<std::thread::JoinHandle<()>, RuntimeError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|cause| RuntimeError::SpawnHelper {
            thread: name,
            cause,
        })
}

/// A running task: its id, its operators, and its thread, which returns whether the run was
/// stopped (or the task's error) and when the task ended.
type TaskHandle = (
    usize,
    InstanceRef,
    String,
    std::thread::JoinHandle<(Result<bool, TaskError>, Instant)>,
);

/// Waits for every task; returns whether the run was stopped, or its first real error.
fn join_tasks(handles: Vec<TaskHandle>) -> Result<bool, RuntimeError> {
    let mut first_error: Option<(Instant, TaskError)> = None;
    let mut secondary: Option<TaskError> = None;
    let mut panicked = None;
    let mut stopped = false;
    for (id, at, name, h) in handles {
        match h.join() {
            Ok((Ok(s), _)) => stopped |= s,
            Ok((Err(e), _)) if e.is_secondary() => {
                secondary.get_or_insert(e);
            }
            Ok((Err(e), at)) => {
                if first_error.as_ref().is_none_or(|(t, _)| at < *t) {
                    first_error = Some((at, e));
                }
            }
            Err(p) => {
                let message = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                let cause = TaskFailure::Panicked { message };
                panicked.get_or_insert(TaskError::new(id, at, name, cause));
            }
        }
    }
    if let Some(e) = panicked.or(first_error.map(|(_, e)| e)).or(secondary) {
        return Err(RuntimeError::Task(Box::new(e)));
    }
    Ok(stopped)
}

/// Refuses a checkpoint of a query that changed where state is kept.
fn check_compatible(
    restore: &Validated,
    current: &anduin_checkpoint::plan::PlanFingerprint,
) -> Result<(), RuntimeError> {
    match compare(&restore.manifest.plan, current) {
        Compatibility::Identical => Ok(()),
        Compatibility::Compatible { changes } => {
            for change in changes {
                info!(
                    epoch = restore.manifest.epoch,
                    change, "the query changed since the checkpoint (no state affected)"
                );
            }
            Ok(())
        }
        Compatibility::Incompatible { operator, what } => {
            Err(RuntimeError::IncompatibleCheckpoint {
                epoch: restore.manifest.epoch,
                operator,
                what,
            })
        }
    }
}

/// What operator `name` restores from, if the run resumes and the checkpoint has its state.
fn restore_in(w: &CheckpointWiring, name: &str) -> Result<Option<RestoreIn>, RuntimeError> {
    let Some(v) = &w.restore else {
        return Ok(None);
    };
    let Some(state) = v.manifest.operators.get(name) else {
        return Ok(None);
    };
    let mut files: Vec<Box<dyn std::io::Read + Send>> = Vec::new();
    for f in &state.files {
        let path = w.dir.file(Epoch(f.epoch), &f.file);
        let file = std::fs::File::open(&path).map_err(|cause| {
            RuntimeError::Checkpoint(anduin_checkpoint::CheckpointError::Io {
                path: path.clone(),
                cause,
            })
        })?;
        files.push(Box::new(std::io::BufReader::new(file)));
    }
    Ok(Some(RestoreIn {
        epoch: Epoch(v.manifest.epoch),
        inline: state.inline.clone(),
        files,
    }))
}

fn restore_error(w: &CheckpointWiring, cause: OperatorError) -> RuntimeError {
    RuntimeError::Restore {
        epoch: w.restore.as_ref().map_or(0, |v| v.manifest.epoch),
        cause,
    }
}

/// The task that runs node `n`.
fn task_of(plan: &PhysicalPlan, n: NodeId) -> usize {
    plan.tasks
        .iter()
        .position(|t| t.chain.contains(&n))
        .expect("the plan places every node")
}

fn inlet(rx: Receiver<crate::channel::Envelope>, port: usize) -> Inlet {
    Inlet {
        rx,
        port,
        last_seq: 0,
        watermark: Watermark::MIN,
        idle: false,
        ended: false,
    }
}

/// A source can only head a task: the planner never fuses one behind another operator.
fn unreachable_source(name: &str) -> RuntimeError {
    RuntimeError::Start(OperatorError::internal(
        name,
        "the planner put a source inside a chain",
    ))
}
