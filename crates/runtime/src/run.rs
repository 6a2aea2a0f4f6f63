//! Starting a query: plan it, lay out its [`Topology`], instantiate every task instance
//! (restoring state when resuming), start the checkpoint coordinator if any, run the
//! instances on threads, wait, and sum up.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::schedule::Scheduler;
use anduin_checkpoint::{instance_key, CheckpointDir, Store};
use anduin_graph::{LogicalGraph, PhysicalPlan, PlanOptions};
use crossbeam_channel::Receiver;
use tracing::info;

// Operator types, in one group.
use anduin_operator_api::{Bound, BuildContext};

use crate::committer::run_committer;
use crate::config::{Checkpointing, NetworkSettings, Placement, RunConfig};
use crate::control::{Control, Injector, InstanceFigures, Probe};
use crate::coordinator::{schedule_settings, Coordinator};
use crate::error::RuntimeError;
use crate::events::EngineEvent;
use crate::fingerprint::fingerprint;
use crate::grow::{growable_tasks, Growth, GrowthSetup};
use crate::instantiate::{instantiate, CheckpointWiring, Instantiated, Shared};
use crate::net::{EdgeListener, Failures, NetWiring};
use crate::pipelining::{Pipelining, PipeliningSetup};
use crate::protocol::{Event, WriteJob};
use crate::restore::check_compatible;
use crate::spawn::{join_tasks, spawn_helper, spawn_tasks};
use crate::stats::{ChannelCount, CheckpointCounters, NodeCounters, OperatorStats, RunSummary};
use crate::topology::{Topology, WorkerId};

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
    // Whatever ends the run below, the control plane lets go of it.
    let detach = DetachAtReturn {
        control: config.control.as_deref(),
    };
    let options = PlanOptions {
        chaining: config.chaining,
        default_parallelism: config.parallelism,
        max_parallelism: config.max_parallelism,
    };
    let restore = config
        .checkpointing
        .as_ref()
        .and_then(|c| c.restore.as_ref());
    let splits = restore.map_or_else(Vec::new, |r| restored_splits(graph, &r.manifest));
    let mut plan = PhysicalPlan::plan(graph, options).map_err(RuntimeError::Plan)?;
    let restored = plan.split_live(graph, &splits);
    if let Some(restore) = restore {
        // Beyond --max-parallelism where the run can start instances beyond those planned;
        // a cluster's coordinator grows them again once the run runs.
        let beyond = match (config.network.is_none(), splits.is_empty()) {
            (true, true) => Beyond::Planned,
            (false, true) => Beyond::GrownLater,
            _ => Beyond::Not,
        };
        keep_live_rescales(graph, &mut plan, &restore.manifest, beyond);
    }
    let mut topology = Topology::new(graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
    let abort = Arc::new(AtomicBool::new(false));
    let mut net = config
        .network
        .as_ref()
        .map(|n| start_network(n, config, &mut topology, &abort))
        .transpose()?;
    inherit_workers(&mut topology, &restored);
    info!(
        tasks = plan.tasks.len(),
        instances = topology.instances().count(),
        channels = topology.channels.len(),
        "starting query"
    );
    let plan_print = fingerprint(graph, &plan);
    choose_restore(config, &plan_print)?;
    let channels = ChannelCount {
        all: topology.channels.len(),
        network: if net.is_some() {
            topology
                .channels
                .iter()
                .filter(|c| topology.crosses(c))
                .count()
        } else {
            0
        },
    };
    let counters = Arc::new(node_counters(graph, &topology));
    let (mut wiring, receivers) = match checkpoint_wiring(config) {
        Some((w, r)) => (Some(w), Some(r)),
        None => (None, None),
    };
    // Every instance reads the run's clock, and sees its stop; with checkpoints, how often
    // they are taken, and operators keep facts beside the lineage in the checkpoint store.
    let ctx = BuildContext {
        checkpoint_interval: config
            .checkpointing
            .as_ref()
            .and_then(|c| c.settings.interval),
        clock: Arc::clone(&config.clock),
        stop: anduin_operator_api::StopRequest::new(Arc::clone(&config.stop)),
        commit_only: config.checkpointing.as_ref().is_some_and(|c| c.commit_only),
        lineage_facts: ctx.lineage_facts.clone().or_else(|| {
            crate::lineage_facts::StoreFacts::of(
                config.checkpointing.as_ref(),
                ctx.lineage.as_deref(),
            )
        }),
        ..ctx.clone()
    };
    // Tasks split while the query runs in an embedded run and in a cluster's executor, each
    // split task staying in the process of the task it split from (the control plane refuses
    // the change with --loopback-workers).
    let refused = live_pipelining_refused(config.network.as_ref());
    let pipelining = refused.is_none().then(|| {
        Arc::new(Pipelining::new(
            PipeliningSetup {
                plan: plan.clone(),
                restored: restored.clone(),
                nodes: graph
                    .nodes
                    .iter()
                    .map(|n| (n.outputs.first().copied(), n.name().to_string()))
                    .collect(),
                capacity: config.channel_capacity,
            },
            config.events.clone(),
            Arc::clone(&abort),
            config.control.clone(),
        ))
    });
    if let Some(control) = &config.control {
        control.refuse_live_pipelining(refused);
        refuse_splitting_copies(control, graph, &topology);
    }
    let growth = growth(
        graph,
        (&topology, net.as_ref()),
        (&restored, wiring.as_ref()),
        config,
        &ctx,
        (&counters, &abort),
    );
    let shared = Shared {
        config,
        ctx: &ctx,
        counters: &counters,
        abort: &abort,
        control: config.control.as_ref(),
        pipelining: pipelining.as_ref(),
        growth: growth.as_ref(),
    };
    // The control plane's changes go through the coordinator, when there is one (which runs
    // until every sender of its events is gone: only the control plane keeps one).
    let control_events = wiring
        .as_ref()
        .filter(|_| config.control.is_some())
        .map(|w| w.events.clone());
    let Instantiated {
        tasks,
        source_commands,
    } = instantiate(graph, &topology, &shared, wiring.as_mut(), net.as_mut())?;
    if config.checkpointing.as_ref().is_some_and(|c| c.commit_only) {
        // Every operator was restored from the finished checkpoint: the sinks committed what
        // it holds. Nothing runs.
        info!(
            instances = tasks.len(),
            "restored from the checkpoint of a finished query, to commit what it holds; nothing runs"
        );
        drop((tasks, source_commands));
        return Ok(RunSummary {
            elapsed: started.elapsed(),
            operators: operator_stats(graph, &counters),
            stopped: false,
            checkpoints: None,
            channels,
        });
    }
    if let Some(net) = &mut net {
        net.connect()?;
    }
    let checkpoint_counters = Arc::new(CheckpointCounters::default());
    let helpers = match (wiring, receivers, &config.checkpointing) {
        (Some(w), Some(r), Some(c)) => {
            let start = CheckpointStart {
                added: split_instances(&topology, &restored),
                wiring: w,
                receivers: r,
                settings: c,
                sources: source_instances(&topology),
                plan: plan_print,
                twins: replica_twins(graph, &plan),
                numbers: growth.as_ref().map(|g| g.numbers()),
            };
            start_checkpointing(start, &checkpoint_counters, config, &ctx)?
        }
        _ => Vec::new(),
    };
    if let Some(control) = &config.control {
        let here = net.as_ref().and_then(|n| n.here);
        let figures = Figures {
            counters: &counters,
            topology: &topology,
            here,
        };
        control.probe(probe(graph, &figures, &checkpoint_counters, config, &ctx));
        attach_control(
            control,
            graph,
            &topology,
            config,
            control_events,
            source_commands,
        );
        hear_told_barriers(growth.as_ref(), net.is_some(), control);
    } else {
        drop(source_commands);
    }
    let mut outcome = join_tasks(spawn_tasks(tasks, &config.events, &abort)?, || {
        let mut more = pipelining
            .as_ref()
            .map_or_else(Vec::new, |p| p.take_running());
        more.extend(growth.as_ref().map_or_else(Vec::new, |g| g.take_running()));
        more
    });
    drop(pipelining);
    // It holds senders to the committer and the coordinator, which end once none is left.
    drop(growth);
    if let Some(net) = &mut net {
        net.join();
        // A task that failed because its channel's connection did is not the cause.
        if let Some(e) = net.failures.take() {
            let secondary =
                |e: &RuntimeError| matches!(e, RuntimeError::Task(t) if t.is_secondary());
            if outcome.as_ref().err().is_none_or(secondary) {
                outcome = Err(e);
            }
        }
    }
    drop(net);
    detach.now(outcome.is_err());
    // With every task gone, the committer drains its last jobs and the coordinator its last
    // acknowledgements (completing the last checkpoint), then both stop.
    for h in helpers {
        let _ = h.join();
    }
    publish_row_counts(graph, &counters, &ctx, config);
    let stopped = outcome?;
    Ok(RunSummary {
        elapsed: started.elapsed(),
        operators: operator_stats(graph, &counters),
        stopped,
        checkpoints: config
            .checkpointing
            .as_ref()
            .map(|_| checkpoint_counters.summary()),
        channels,
    })
}

/// A resumed run keeps the live rescales its checkpoint recorded (`ctl scale`, as it keeps
/// every param change): an operator rescaled while running starts with as many instances
/// owning its key groups as the last rescale said, when it runs at least that many (its
/// state is re-cut when the checkpoint was taken before that rescale moved it); where the
/// run grows its tasks (`crate::grow`), with more instances when the rescale gave more
/// (`beyond`).
fn keep_live_rescales(
    graph: &LogicalGraph<Bound>,
    plan: &mut PhysicalPlan,
    manifest: &anduin_checkpoint::Manifest,
    beyond: Beyond,
) {
    for task in &mut plan.tasks {
        let Some(head) = task.chain.first().map(|n| graph.node(*n).name()) else {
            continue;
        };
        let owners = manifest
            .controls
            .iter()
            .rev()
            .find(|r| r.operator == head && r.param == crate::rescale::PARALLELISM)
            .and_then(|r| r.new.trim().parse::<usize>().ok());
        match owners {
            Some(owners)
                if beyond == Beyond::Planned
                    && owners > task.parallelism
                    && task.parallelism > 1 =>
            {
                info!(
                    operator = head,
                    owners,
                    planned = task.parallelism,
                    "keeps the rescale its checkpoint recorded, beyond the instances planned: \
                     runs as many"
                );
                task.parallelism = owners;
                task.active = owners;
            }
            Some(owners) if (1..=task.parallelism).contains(&owners) => {
                info!(
                    operator = head,
                    owners, "keeps the rescale its checkpoint recorded"
                );
                task.active = owners;
            }
            Some(owners) if beyond == Beyond::GrownLater && task.parallelism > 1 => info!(
                operator = head,
                owners,
                instances = task.parallelism,
                "the last rescale the checkpoint recorded gave more owners than the run starts \
                 instances: it starts at its instances, its state re-cut, and the coordinator \
                 grows it again as soon as it runs"
            ),
            Some(owners) => tracing::warn!(
                operator = head,
                owners,
                instances = task.parallelism,
                parallelism = task.active,
                "the last rescale the checkpoint recorded gave more owners than this run has \
                 instances: it runs at its parallelism, its state re-cut (give a larger \
                 --max-parallelism to keep the rescale)"
            ),
            None => {}
        }
    }
}

/// What a resumed run does with a rescale its checkpoint recorded beyond the instances it
/// plans ([`keep_live_rescales`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beyond {
    /// It plans as many (an embedded run's).
    Planned,
    /// It starts at its instances; the coordinator grows them again once it runs (a
    /// cluster's, `anduin_cli`'s `grow_again`).
    GrownLater,
    /// It runs at its instances (a run that split tasks while an earlier one ran).
    Not,
}

/// The operators a resumed run splits its chains before: those a `pipeline = "split"`
/// change recorded by its checkpoint split while the query ran (`crate::pipelining`), in the
/// order of the changes, planned from the start with the numbers the live splits gave
/// ([`PhysicalPlan::split_live`]).
fn restored_splits(
    graph: &LogicalGraph<Bound>,
    manifest: &anduin_checkpoint::Manifest,
) -> Vec<anduin_graph::NodeId> {
    let mut asked: Vec<&anduin_checkpoint::ChangeRecord> = manifest
        .controls
        .iter()
        .filter(|r| r.param == crate::pipelining::PIPELINE && r.new == crate::pipelining::SPLIT)
        .collect();
    asked.sort_by_key(|r| r.seq);
    let nodes: Vec<_> = asked
        .iter()
        .filter_map(|r| graph.nodes.iter().position(|n| n.name() == r.operator))
        .map(anduin_graph::NodeId)
        .collect();
    if !nodes.is_empty() {
        let operators: Vec<&str> = asked.iter().map(|r| r.operator.as_str()).collect();
        info!(
            ?operators,
            "plans the splits its checkpoint recorded (`pipeline = \"split\"` while it ran)"
        );
    }
    nodes
}

/// The instances of the tasks `splits` made run where the instance they split from runs.
fn inherit_workers(topology: &mut Topology, splits: &[anduin_graph::LiveSplit]) {
    for s in splits {
        for i in 0..s.parallelism {
            let from = topology
                .tasks
                .get(s.from_task)
                .and_then(|t| t.instances.get(i))
                .map(|t| t.worker);
            let to = topology
                .tasks
                .get_mut(s.task)
                .and_then(|t| t.instances.get_mut(i));
            if let (Some(worker), Some(to)) = (from, to) {
                to.worker = worker;
            }
        }
    }
}

/// The numbers of the instances of the tasks `splits` made.
fn split_instances(topology: &Topology, splits: &[anduin_graph::LiveSplit]) -> Vec<usize> {
    splits
        .iter()
        .filter_map(|s| topology.tasks.get(s.task))
        .flat_map(|t| t.instances.iter().map(|i| i.id))
        .collect()
}

/// How the tasks of a run get instances beyond those planned while it runs (`crate::grow`):
/// an embedded run's, one with loopback workers (as an embedded one), a cluster executor's
/// (its instances, with the network to the others). The control plane hears which
/// operators can.
fn growth(
    graph: &LogicalGraph<Bound>,
    (topology, net): (&Topology, Option<&NetWiring>),
    (splits, wiring): (&[anduin_graph::LiveSplit], Option<&CheckpointWiring>),
    config: &RunConfig,
    ctx: &BuildContext,
    (counters, abort): (&Arc<Vec<NodeCounters>>, &Arc<AtomicBool>),
) -> Option<Arc<Growth>> {
    let refused = if !splits.is_empty() {
        Some(crate::grow::AFTER_A_SPLIT)
    } else {
        None
    };
    let (tasks, said) = growable_tasks(graph, topology, refused);
    if let Some(control) = &config.control {
        control.allow_growth(said);
    }
    if refused.is_some() {
        return None;
    }
    // A cluster's part that runs none of the planned instances (started for those a rescale
    // places on it).
    let alone = net
        .and_then(|n| n.here)
        .is_some_and(|here| topology.instances().all(|i| i.worker != here));
    let net = net.and_then(|n| {
        Some(crate::grow::GrowNet {
            reach: n.reach(),
            here: n.here?,
            topology: topology.clone(),
            schemas: channel_schemas(graph, topology),
            heads: crate::grow::task_heads(graph, topology),
            params: restored_params(&tasks, wiring),
        })
    });
    let setup = GrowthSetup {
        tasks,
        capacity: config.channel_capacity,
        ctx: ctx.clone(),
        counters: Arc::clone(counters),
        checkpoint: wiring.map(|w| (w.dir.clone(), w.jobs.clone(), w.events.clone())),
        net,
    };
    let growth = Arc::new(Growth::new(
        setup,
        config.events.clone(),
        Arc::clone(abort),
        config.control.clone(),
    ));
    growth.open_inboxes_as_they_come();
    if alone {
        // It lasts until the query's last barrier (see `hear_told_barriers`).
        growth.await_barriers();
    }
    Some(growth)
}

/// A cluster's executor hears the barriers its coordinator sent (once its control plane
/// lists its instances, so that those it builds are listed too): a part that runs none of
/// the planned instances builds there the instances rescales place on it, and lasts until
/// the query's last barrier.
fn hear_told_barriers(growth: Option<&Arc<Growth>>, net: bool, control: &Arc<Control>) {
    let Some(growth) = growth.filter(|_| net) else {
        return;
    };
    let heard = Arc::downgrade(growth);
    control.hear_barriers_with(Arc::new(move |barriers, last| {
        if let Some(g) = heard.upgrade() {
            g.hear(barriers, last);
        }
    }));
}

/// The params of the operators of `tasks` that the checkpoint the run restores from had
/// changed (what their chains start with), by operator.
fn restored_params(
    tasks: &std::collections::BTreeMap<usize, crate::grow::Growable>,
    wiring: Option<&CheckpointWiring>,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let Some(resume) = wiring.and_then(CheckpointWiring::resume) else {
        return Default::default();
    };
    tasks
        .values()
        .flat_map(|g| g.nodes.iter().map(|(_, name, _)| name))
        .map(|name| (name.clone(), resume.latest_params(name)))
        .filter(|(_, params)| !params.is_empty())
        .collect()
}

/// The type of the rows of each plan channel of `topology`.
fn channel_schemas(
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
) -> std::collections::HashMap<usize, arrow::datatypes::SchemaRef> {
    let mut schemas = std::collections::HashMap::new();
    for route in topology.instances().flat_map(|i| i.routes.iter()) {
        let (node, port) = route.from;
        let Some(stream) = graph.node(node).outputs.get(port) else {
            continue;
        };
        for c in route
            .channels
            .iter()
            .filter_map(|c| topology.channels.get(c.0))
        {
            schemas
                .entry(c.plan_channel)
                .or_insert_with(|| Arc::clone(&graph.stream(*stream).schema));
        }
    }
    schemas
}

/// Refuses a live split of the operators of a copy of a hot standby: the new task, not the
/// copy's, would feed the stream selector, and the loss of the first half would stop the run.
fn refuse_splitting_copies(control: &Control, graph: &LogicalGraph<Bound>, topology: &Topology) {
    let copies = topology.replica_tasks(|n| graph.node(n).survives_input_loss);
    let held: Vec<String> = topology
        .tasks
        .iter()
        .zip(copies)
        .filter(|(_, copy)| *copy)
        .flat_map(|(t, _)| {
            t.operators
                .iter()
                .map(|n| graph.node(*n).name().to_string())
        })
        .collect();
    control.refuse_pipelining_of(
        held,
        "it runs in a copy of a hot standby, which is not split while the query runs (the \
         stream selector fails over between whole copies): give the operator \
         `param pipeline = \"split\"` in the query instead",
    );
}

/// Why the control plane of a run refuses a live `pipeline` change (`None`: it takes it):
/// an embedded run and a cluster's executor split (the split task stays in the process of the
/// task it split from); a run with --loopback-workers does not.
fn live_pipelining_refused(network: Option<&NetworkSettings>) -> Option<String> {
    match network.map(|n| &n.placement) {
        None | Some(Placement::Assigned { .. }) => None,
        Some(Placement::Loopback { .. }) => Some(
            "a live `pipeline` change is not supported with --loopback-workers (its instances \
             are spread over workers): run without it, or give the operator \
             `param pipeline = \"split\"` in the query"
                .to_string(),
        ),
    }
}

/// The counters of a run's operator instances, and which of them run in this process.
struct Figures<'a> {
    counters: &'a [NodeCounters],
    topology: &'a Topology,
    /// The worker this process is of a cluster's (`None`: every instance runs here).
    here: Option<WorkerId>,
}

impl Figures<'_> {
    /// Whether instance `i` of node `n` runs in this process (an executor of a cluster's
    /// has counters of every instance, and runs only its own).
    fn here(&self, n: usize, i: usize) -> bool {
        let Some(here) = self.here else {
            return true;
        };
        self.topology
            .tasks
            .iter()
            .find(|t| t.nodes().any(|id| id.0 == n))
            .and_then(|t| t.instances.get(i))
            .is_some_and(|instance| instance.worker == here)
    }
}

/// Where the control plane reads the run's live figures.
fn probe(
    graph: &LogicalGraph<Bound>,
    figures: &Figures<'_>,
    checkpoints: &Arc<CheckpointCounters>,
    config: &RunConfig,
    ctx: &BuildContext,
) -> Probe {
    Probe {
        instances: InstanceFigures::Here {
            counters: graph
                .topo
                .iter()
                .flat_map(|n| {
                    let node = graph.node(*n);
                    let (name, source) = (node.name(), matches!(node.bound, Bound::Source(_)));
                    figures.counters[n.0]
                        .instances
                        .iter()
                        .enumerate()
                        .filter(move |(i, _)| figures.here(n.0, *i))
                        .map(move |(i, c)| (name.to_string(), i, source, Arc::clone(c)))
                })
                .collect(),
            dead_letter: Arc::clone(&ctx.dead_letter),
        },
        checkpoints: config
            .checkpointing
            .as_ref()
            .map(|_| Arc::clone(checkpoints)),
        checkpoint_dir: config
            .checkpointing
            .as_ref()
            .map(|c| c.settings.dir.clone()),
    }
}

/// Places the instances and starts listening for the channels that cross workers.
fn start_network(
    settings: &NetworkSettings,
    config: &RunConfig,
    topology: &mut Topology,
    abort: &Arc<AtomicBool>,
) -> Result<NetWiring, RuntimeError> {
    // Every stream of a restored run starts after its checkpoint's barrier.
    let restored = config
        .checkpointing
        .as_ref()
        .and_then(|c| c.restore.as_ref())
        .map_or(0, |r| r.manifest.epoch);
    match settings.placement {
        Placement::Loopback { workers } => {
            topology.spread(workers);
            let at = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            let listener = EdgeListener::bind(at, settings.window, None).map_err(|e| {
                RuntimeError::Network {
                    edge: "the channel listener".into(),
                    message: format!("cannot listen on {at}: {e}"),
                }
            })?;
            let addresses = (0..workers.max(1))
                .map(|w| (WorkerId(w), listener.local_addr()))
                .collect();
            info!(workers, listen = %listener.local_addr(), "channels between workers cross loopback TCP");
            Ok(NetWiring::new(
                settings.query.clone(),
                listener,
                addresses,
                Failures::new(Arc::clone(abort), config.events.clone()),
                None,
                settings.attempt,
                restored,
                None,
            ))
        }
        Placement::Assigned {
            ref workers,
            here,
            ref addresses,
            ref listener,
        } => {
            topology.assign(|id| WorkerId(workers.get(id).copied().unwrap_or(u32::MAX)));
            let addresses = addresses.iter().map(|(w, a)| (WorkerId(*w), *a)).collect();
            Ok(NetWiring::new(
                settings.query.clone(),
                Arc::clone(listener),
                addresses,
                Failures::new(Arc::clone(abort), config.events.clone()),
                Some(WorkerId(here)),
                settings.attempt,
                restored,
                settings.resumption.clone(),
            ))
        }
    }
}

/// The control plane's hold on a run, let go of ([`Control::detach`]) when the run returns,
/// however it returns: at its end by [`DetachAtReturn::now`], or as failed when it is dropped
/// first, as a run that fails before its tasks start is (an operator that cannot be built, a
/// channel that cannot connect, a checkpoint coordinator that cannot start). Until then the
/// control plane answers that the query is starting and keeps the sender of reports it was
/// given (`Control::forward_reports`): a cluster's executor, which waits for every such sender
/// to go before it reports its part's end, would wait for ever, and its query with it.
struct DetachAtReturn<'a> {
    control: Option<&'a Control>,
}

impl DetachAtReturn<'_> {
    /// The run has ended (`failed` or not), its tasks gone: the control plane lets go now.
    fn now(mut self, failed: bool) {
        if let Some(control) = self.control.take() {
            control.detach(failed);
        }
    }
}

impl Drop for DetachAtReturn<'_> {
    fn drop(&mut self) {
        if let Some(control) = self.control.take() {
            control.detach(true);
        }
    }
}

/// Tells the control plane what runs and how its changes reach the sources: through the
/// checkpoint coordinator's events when there is one, straight to the sources otherwise.
fn attach_control(
    control: &Control,
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
    config: &RunConfig,
    coordinator: Option<crossbeam_channel::Sender<Event>>,
    sources: Vec<crossbeam_channel::Sender<crate::protocol::Command>>,
) {
    let restored = config
        .checkpointing
        .as_ref()
        .and_then(|c| c.restore.as_ref());
    if let Some(r) = restored {
        control.restored(r.manifest.epoch, &r.manifest.controls);
    }
    let injector = match coordinator {
        Some(events) => Injector::Coordinator(events),
        None => Injector::Direct {
            sources,
            next_epoch: 1,
        },
    };
    control.publish_changes_to(config.events.clone());
    control.attach(
        crate::control::operators(graph, topology),
        crate::control::tasks(graph, topology),
        crate::control::topology(graph, topology),
        injector,
        config.checkpointing.is_some(),
        Arc::clone(&config.stop),
    );
}

/// When the run resumes from a checkpoint: refuses one of a query that changed where state
/// is kept, and tells the subscribers which it resumes from.
fn choose_restore(config: &RunConfig, plan: &PlanFingerprint) -> Result<(), RuntimeError> {
    let Some(restore) = config
        .checkpointing
        .as_ref()
        .and_then(|c| c.restore.as_ref())
    else {
        return Ok(());
    };
    check_compatible(restore, plan)?;
    // A change recorded for an operator the query no longer has cannot be applied: resuming
    // without it would silently run the query with values nobody chose.
    if let Some(r) = restore
        .manifest
        .controls
        .iter()
        .find(|r| !plan.operators.iter().any(|o| o.name == r.operator))
    {
        return Err(RuntimeError::IncompatibleCheckpoint {
            epoch: restore.manifest.epoch,
            operator: r.operator.clone(),
            what: format!(
                "it recorded change #{} (param `{}` = {:?}) to this operator, which the query no longer has",
                r.seq, r.param, r.new
            ),
        });
    }
    config.events.publish(EngineEvent::RestoreChosen {
        epoch: restore.manifest.epoch,
        states: restore.manifest.operators.len(),
    });
    Ok(())
}

/// The ends of the checkpoint channels that the coordinator and the committer keep.
struct CheckpointReceivers {
    /// `None` when the coordinator runs in another process.
    events: Option<Receiver<Event>>,
    jobs: Receiver<WriteJob>,
}

/// The checkpoint channels, when the run takes checkpoints.
fn checkpoint_wiring(config: &RunConfig) -> Option<(CheckpointWiring, CheckpointReceivers)> {
    let c = config.checkpointing.as_ref()?;
    let (event_tx, event_rx) = match &c.remote {
        Some(remote) => (remote.events.clone(), None),
        None => {
            let (tx, rx) = crossbeam_channel::unbounded();
            (tx, Some(rx))
        }
    };
    let (job_tx, job_rx) = crossbeam_channel::unbounded();
    let wiring = CheckpointWiring {
        // Where the store has its tasks write: its directory, or the staging directory of an
        // object store (whose checkpoint directories they make themselves).
        dir: c
            .settings
            .store
            .as_ref()
            .map_or_else(|| CheckpointDir::new(&c.settings.dir), |s| s.dir().clone()),
        restore: c.restore.clone(),
        events: event_tx,
        jobs: job_tx,
        commands: BTreeMap::new(),
        every_rows: c.settings.every_rows,
    };
    let receivers = CheckpointReceivers {
        events: event_rx,
        jobs: job_rx,
    };
    Some((wiring, receivers))
}

/// What the checkpoint coordinator and the committer start from.
struct CheckpointStart<'a> {
    /// The instances of tasks split while an earlier run ran, by their number: their commits
    /// come through the instance they split from, not from the coordinator.
    added: Vec<usize>,
    wiring: CheckpointWiring,
    receivers: CheckpointReceivers,
    settings: &'a Checkpointing,
    /// The instances headed by a source, by their number in the run.
    sources: Vec<usize>,
    plan: PlanFingerprint,
    /// The instance keys of each hot standby's replicas.
    twins: Vec<Vec<String>>,
    /// The numbers of instances added while the query runs, where tasks can grow.
    numbers: Option<Arc<crate::grow::Numbers>>,
}

/// The instance keys of the replicas of each hot standby in `graph`, in groups: the
/// operators feeding a node that survives the loss of an input (a stream selector), instance
/// by instance. Their states at a barrier are the same (see `coordinator::fill_from_twins`).
fn replica_twins(graph: &LogicalGraph<Bound>, plan: &PhysicalPlan) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    for node in graph.nodes.iter().filter(|n| n.survives_input_loss) {
        let producers: Vec<_> = node
            .inputs
            .iter()
            .map(|s| graph.stream(*s).producer.0)
            .collect();
        let Some(first) = producers.first() else {
            continue;
        };
        for instance in 0..plan.instances_of(*first) {
            groups.push(
                producers
                    .iter()
                    .map(|p| {
                        let parallelism = plan.instances_of(*p);
                        instance_key(graph.node(*p).name(), instance, parallelism)
                    })
                    .collect(),
            );
        }
    }
    groups
}

/// Starts the checkpoint coordinator and the committer on threads of their own.
fn start_checkpointing(
    start: CheckpointStart<'_>,
    counters: &Arc<CheckpointCounters>,
    config: &RunConfig,
    ctx: &BuildContext,
) -> Result<Vec<std::thread::JoinHandle<()>>, RuntimeError> {
    let CheckpointStart {
        added,
        wiring,
        receivers,
        settings: c,
        sources,
        plan,
        twins,
        numbers,
    } = start;
    let Some(to_coordinator) = receivers.events else {
        // The coordinator runs in another process: it gets the events and sends the commands
        // through the caller; only the committer runs here.
        if let Some(remote) = &c.remote {
            for (task, tx) in wiring.commands {
                let _ = remote.register.send((task, tx));
            }
        }
        drop(wiring.jobs);
        let (jobs, events, faults) = (receivers.jobs, wiring.events, c.faults.clone());
        let dead_letter = Arc::clone(&ctx.dead_letter);
        let committer = spawn_helper("anduin-committer", move || {
            run_committer(jobs, events, faults, dead_letter);
        })?;
        return Ok(vec![committer]);
    };
    let mut coordinator =
        checkpoint_coordinator(c, wiring.commands, sources, plan, twins, counters, config)?;
    for task in added {
        coordinator.scheduler.add_task(task);
    }
    coordinator.growth = numbers;
    // The tasks hold the only senders of jobs: the committer ends when the last task does.
    drop(wiring.jobs);
    let (jobs, events) = (receivers.jobs, wiring.events);
    let faults = c.faults.clone();
    let dead_letter = Arc::clone(&ctx.dead_letter);
    let committer = spawn_helper("anduin-committer", move || {
        run_committer(jobs, events, faults, dead_letter);
    })?;
    let coordinator = spawn_helper("anduin-coordinator", move || {
        coordinator.run(to_coordinator);
    })?;
    Ok(vec![committer, coordinator])
}

/// The checkpoint coordinator of a run: it sends commands on `tasks` (every task instance's,
/// by its number in the run), injects barriers at the `sources` instances, and completes
/// checkpoints in the run's checkpoint directory.
fn checkpoint_coordinator(
    c: &Checkpointing,
    tasks: BTreeMap<usize, crossbeam_channel::Sender<crate::protocol::Command>>,
    sources: Vec<usize>,
    plan: PlanFingerprint,
    twins: Vec<Vec<String>>,
    counters: &Arc<CheckpointCounters>,
    config: &RunConfig,
) -> Result<Coordinator, RuntimeError> {
    let store = match &c.settings.store {
        Some(s) => s.clone(),
        None => Store::open(&c.settings.dir).map_err(RuntimeError::Checkpoint)?,
    };
    let restored = c.restore.as_ref().map(|v| v.manifest.clone());
    let scheduler = Scheduler::new(
        schedule_settings(&c.settings),
        tasks.keys().copied(),
        sources,
        restored.as_ref().map_or(1, |m| m.epoch + 1),
    );
    Ok(Coordinator {
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
        control: config.control.clone(),
        pending_controls: Vec::new(),
        twins,
        rescales: Vec::new(),
        growth: None,
        taking_over: false,
        early: BTreeMap::new(),
    })
}

/// What the checkpoint coordinator of a run whose tasks run in other processes talks to.
pub struct Coordinated {
    /// Each task instance's commands, by the instance's number in the run: every instance of
    /// the query must be there.
    pub tasks: BTreeMap<usize, crossbeam_channel::Sender<crate::protocol::Command>>,
    /// The tasks' events.
    pub events: Receiver<Event>,
    /// With the run's control plane (`RunConfig::control`): a sender of `events`, through
    /// which its param changes reach the next barrier. The control plane holds it until it is
    /// detached ([`crate::control::Control::detach`]), and the coordinator runs until then.
    pub control_events: Option<crossbeam_channel::Sender<Event>>,
    /// This coordinator takes over tasks that are already running (another coordinator, now
    /// gone, started them), and checkpoint `taking_over` may have been begun by it: its
    /// barrier is asked of every source again (a source that injected it already does not
    /// inject it twice, so that no task waits forever aligning it), it is not completed, and
    /// the next checkpoint comes after it and is full.
    pub taking_over: Option<anduin_types::Epoch>,
    /// The query's checkpoints were numbered up to this one before (by earlier attempts, or
    /// the coordinator taken over): the first checkpoint comes after it, so that no epoch is
    /// used twice. `None`: after the checkpoint restored from.
    pub numbered_after: Option<anduin_types::Epoch>,
    /// The worker each task instance runs on, by the instance's number in the run, for the
    /// control plane's topology (`GET …/topology`, the web UI). Empty: not told (every
    /// instance shows on worker 0).
    pub placement: Vec<u32>,
    /// The live figures of the instances, from where they run; `None`: not gathered (the
    /// control plane says so).
    pub figures: Option<crate::control::Gather>,
}

/// What the control plane of a cluster's query says of the figures it does not have.
const FIGURES_ON_THE_WORKERS: &str = "the operator instances run on the cluster's workers, \
     and the coordinator does not gather their live figures (rows, rates, busy and \
     backpressured time, queues, watermarks) nor their dead letters yet: the graph, the \
     placement, the checkpoints, the params, the history and the events are here";

/// Runs the checkpoint coordinator of a run of `graph` whose tasks run in other processes
/// (a cluster's workers): it sends each task instance's commands and reads the tasks'
/// events (see [`Coordinated`]) until every sender of the events is gone. Checkpoints
/// complete in `config`'s checkpoint directory, which the tasks write into as well; the
/// checkpoint to resume from is `config`'s. Returns the coordinator's thread.
pub fn coordinate(
    graph: &LogicalGraph<Bound>,
    config: &RunConfig,
    remote: Coordinated,
) -> Result<std::thread::JoinHandle<()>, RuntimeError> {
    let Coordinated {
        tasks,
        events,
        control_events,
        taking_over,
        numbered_after,
        placement,
        figures,
    } = remote;
    let Some(c) = &config.checkpointing else {
        return Err(RuntimeError::Network {
            edge: "the checkpoint coordinator".into(),
            message: "a run without checkpoints has no checkpoint coordinator".into(),
        });
    };
    let options = PlanOptions {
        chaining: config.chaining,
        default_parallelism: config.parallelism,
        max_parallelism: config.max_parallelism,
    };
    let splits = c
        .restore
        .as_ref()
        .map_or_else(Vec::new, |r| restored_splits(graph, &r.manifest));
    let mut plan = PhysicalPlan::plan(graph, options).map_err(RuntimeError::Plan)?;
    // As each executor's run does, with the same numbers.
    let restored = plan.split_live(graph, &splits);
    if let Some(restore) = &c.restore {
        // As each executor's run does: the plan its manifests record is the one that runs.
        let beyond = if splits.is_empty() {
            Beyond::GrownLater
        } else {
            Beyond::Not
        };
        keep_live_rescales(graph, &mut plan, &restore.manifest, beyond);
    }
    let mut topology = Topology::new(graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
    if !placement.is_empty() {
        topology.assign(|id| WorkerId(placement.get(id).copied().unwrap_or(u32::MAX)));
        inherit_workers(&mut topology, &restored);
    }
    let plan_print = fingerprint(graph, &plan);
    choose_restore(config, &plan_print)?;
    let counters = Arc::new(CheckpointCounters::default());
    let sources = source_instances(&topology);
    if let Some(epoch) = taking_over {
        for s in &sources {
            if let Some(tx) = tasks.get(s) {
                let _ = tx.send(crate::protocol::Command::Inject {
                    epoch,
                    full: true,
                    control: Vec::new(),
                });
            }
        }
    }
    let twins = replica_twins(graph, &plan);
    let mut coordinator =
        checkpoint_coordinator(c, tasks, sources, plan_print, twins, &counters, config)?;
    // The executors grow the tasks that can (those placed, and no task split while an
    // earlier run ran); every checkpoint after a growth waits for the instances added.
    let refused = if placement.is_empty() {
        Some("the coordinator was not told where the instances run (start it with a larger --max-parallelism)")
    } else if !restored.is_empty() {
        Some(crate::grow::AFTER_A_SPLIT)
    } else {
        None
    };
    let (growable, said) = growable_tasks(graph, &topology, refused);
    if refused.is_none() {
        let heads = crate::grow::task_heads(graph, &topology);
        coordinator.growth = Some(Arc::new(crate::grow::Numbers::new(
            &growable,
            Some((topology.clone(), heads, Default::default())),
        )));
    }
    // The split instances get their commits through the instances they split from.
    for task in split_instances(&topology, &restored) {
        coordinator.scheduler.add_task(task);
    }
    if let Some(epoch) = taking_over.max(numbered_after) {
        coordinator.scheduler.skip_to(epoch.0 + 1);
    }
    coordinator.taking_over = taking_over.is_some();
    if let (Some(control), Some(tx)) = (&config.control, control_events) {
        // Each executor splits its own instances, in its own process.
        refuse_splitting_copies(control, graph, &topology);
        if let Some(r) = &c.restore {
            control.restored(r.manifest.epoch, &r.manifest.controls);
        }
        control.probe(Probe {
            instances: figures.map_or_else(
                || InstanceFigures::Elsewhere(FIGURES_ON_THE_WORKERS.to_string()),
                InstanceFigures::Gathered,
            ),
            checkpoints: Some(Arc::clone(&counters)),
            checkpoint_dir: Some(c.settings.dir.clone()),
        });
        // Before it is attached: the `parallelism` param says how far it goes.
        control.allow_growth(said);
        control.publish_changes_to(config.events.clone());
        control.attach(
            crate::control::operators(graph, &topology),
            crate::control::tasks(graph, &topology),
            crate::control::topology(graph, &topology),
            Injector::Coordinator(tx),
            true,
            Arc::clone(&config.stop),
        );
    }
    spawn_helper("anduin-coordinator", move || coordinator.run(events))
}

/// The instances headed by a source, by their number in the run.
fn source_instances(topology: &Topology) -> Vec<usize> {
    topology
        .tasks
        .iter()
        .filter(|t| t.source.is_some())
        .flat_map(|t| t.instances.iter().map(|i| i.id))
        .collect()
}

/// Tells the subscribers how many rows each operator dropped as late, and how many records
/// and rows went to the dead letters, once the run has ended (counted as the run went, not
/// per row on the way).
fn publish_row_counts(
    graph: &LogicalGraph<Bound>,
    counters: &[NodeCounters],
    ctx: &BuildContext,
    config: &RunConfig,
) {
    for n in &graph.topo {
        let late = counters[n.0]
            .metrics()
            .into_iter()
            .find_map(|(name, v)| (name == "late_rows").then_some(v))
            .unwrap_or(0);
        if late > 0 {
            config.events.publish(EngineEvent::LateRows {
                operator: graph.node(*n).name().to_string(),
                rows: late,
            });
        }
    }
    let (all, rows) = (ctx.dead_letter.count(), ctx.dead_letter.rejected_rows());
    if all > 0 {
        config.events.publish(EngineEvent::Rejected {
            records: all - rows,
            rows,
        });
    }
}

/// The counters of every instance of every node, by node.
fn node_counters(graph: &LogicalGraph<Bound>, topology: &Topology) -> Vec<NodeCounters> {
    (0..graph.nodes.len())
        .map(|n| {
            let parallelism = topology
                .tasks
                .iter()
                .find(|t| t.nodes().any(|id| id.0 == n))
                .map_or(1, |t| t.parallelism);
            NodeCounters::new(parallelism)
        })
        .collect()
}

/// Rows in and out of every operator, in topological order.
fn operator_stats(graph: &LogicalGraph<Bound>, counters: &[NodeCounters]) -> Vec<OperatorStats> {
    graph
        .topo
        .iter()
        .map(|n| {
            let node = graph.node(*n);
            let c = &counters[n.0];
            OperatorStats {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                rows_in: c.rows_in(),
                rows_out: c.rows_out(),
                metrics: c.metrics(),
            }
        })
        .collect()
}
