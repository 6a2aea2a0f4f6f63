//! Instantiating a topology: every source and operator instance is built by its factory and
//! restored when the run resumes, every channel of the topology becomes a bounded queue, and
//! each task instance is assembled (its chain, its outlets, its inlets, its part in
//! checkpoints), ready to run on a thread. Nothing runs yet.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_checkpoint::CheckpointDir;
use anduin_graph::{LogicalGraph, NodeId};
use anduin_types::Watermark;
use crossbeam_channel::{Receiver, Sender};

// Operator types, in one group.
use anduin_operator_api::{Bound, BuildContext, OperatorError, Source};

use crate::chain::{Chain, Link};
use crate::channel::{
    channel, Envelope, HashRoute, InTurnRoute, Notice, Outlet, RangeRoute, Route,
};
use crate::config::RunConfig;
use crate::control::Control;
use crate::error::RuntimeError;
use crate::net::{edge_name, NetWiring, StandbyEnd};
use crate::protocol::{Command, Event, WriteJob};
use crate::rescale::{Handoff, Mate, Rescaler};
use crate::restore::{Layout, Resume};
use crate::source_task::{SourceCheckpointing, SourceTask};
use crate::stats::NodeCounters;
use crate::task::{Inlet, OperatorTask, TaskCheckpointing};
use crate::topology::{Channel, Exchange, InstanceRef, TaskInstance, TaskTopology, Topology};

/// A task instance's event loop.
pub(crate) enum Task {
    /// Headed by a source: polls it.
    Source(SourceTask),
    /// Headed by an operator: waits on its inlets.
    Operator(OperatorTask),
}

/// A task instance, built and restored, ready to run on a thread of its own.
pub(crate) struct ReadyTask {
    /// The instance's number in the run.
    pub id: usize,
    /// Which task and instance.
    pub at: InstanceRef,
    /// The task's operators (and ` #i`).
    pub name: String,
    /// A replica behind a stream selector: its failure does not stop the run (see
    /// `Topology::replica_tasks`).
    pub replica: bool,
    /// For a replica in a run with checkpoints: where to say that it failed, so that no
    /// checkpoint waits for it ([`Event::ReplicaLost`]).
    pub lost: Option<Sender<Event>>,
    pub task: Task,
}

/// What every task instance of a run shares.
pub(crate) struct Shared<'a> {
    pub config: &'a RunConfig,
    pub ctx: &'a BuildContext,
    /// Per node of the graph, the counters of each of its instances.
    pub counters: &'a [NodeCounters],
    /// Set when a task fails: the sources stop without finishing.
    pub abort: &'a Arc<AtomicBool>,
    /// The query's control plane, if it has one.
    pub control: Option<&'a Arc<Control>>,
    /// How tasks split while the query runs, where the run can split (embedded).
    pub pipelining: Option<&'a Arc<crate::pipelining::Pipelining>>,
    /// How tasks get instances beyond those planned while the query runs (embedded).
    pub growth: Option<&'a Arc<crate::grow::Growth>>,
}

impl Shared<'_> {
    /// The part in live splits of `instance` of a task of `parallelism` instances.
    fn stage(
        &self,
        instance: &TaskInstance,
        parallelism: usize,
    ) -> Option<crate::pipelining::Stage> {
        self.pipelining.map(|ctx| crate::pipelining::Stage {
            ctx: Arc::clone(ctx),
            at: instance.at,
            parallelism,
            downstream: Vec::new(),
        })
    }
}

/// The channels of checkpointing, while tasks are being built.
pub(crate) struct CheckpointWiring {
    pub dir: CheckpointDir,
    pub restore: Option<anduin_checkpoint::Validated>,
    /// To the coordinator.
    pub events: Sender<Event>,
    /// To the committer.
    pub jobs: Sender<WriteJob>,
    /// From the coordinator to each task instance, by its number in the run.
    pub commands: BTreeMap<usize, Sender<Command>>,
    pub every_rows: Option<u64>,
}

impl CheckpointWiring {
    fn commands_for(&mut self, id: usize) -> Receiver<Command> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.commands.insert(id, tx);
        rx
    }

    /// The checkpoint to resume from, if any.
    pub(crate) fn resume(&self) -> Option<Resume<'_>> {
        self.restore.as_ref().map(|from| Resume {
            dir: &self.dir,
            from,
        })
    }
}

/// The task instances of a run, ready to start.
pub(crate) struct Instantiated {
    pub tasks: Vec<ReadyTask>,
    /// In a run with a control plane and without checkpoints, the command channel of every
    /// source instance (with checkpoints the coordinator holds them).
    pub source_commands: Vec<Sender<Command>>,
}

/// Builds every task instance of `topology`: the sources first (a missing input fails before
/// any writer creates, and truncates, a file), then the operators, each restored when the
/// run resumes.
pub(crate) fn instantiate(
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
    shared: &Shared<'_>,
    mut wiring: Option<&mut CheckpointWiring>,
    mut net: Option<&mut NetWiring>,
) -> Result<Instantiated, RuntimeError> {
    let here = net.as_deref().and_then(|n| n.here);
    // A cluster's part restores a failed task with the rest of its part (its edges resume):
    // there a replica fails its part as any task does.
    let resumable = net.as_deref().is_some_and(|n| n.resumption.is_some());
    let runs_here = |i: &TaskInstance| here.is_none_or(|h| h == i.worker);
    let commit_only = shared
        .config
        .checkpointing
        .as_ref()
        .is_some_and(|c| c.commit_only);
    // Only restored, not run: the sources' input may be gone since the query finished.
    let mut sources = if commit_only {
        HashMap::new()
    } else {
        build_sources(graph, topology, shared.ctx, wiring.as_deref(), &runs_here)?
    };
    let schema_of = |c: &Channel| {
        let (node, port) = topology
            .instance(c.from)?
            .routes
            .iter()
            .find(|r| r.channels.contains(&c.id))?
            .from;
        let stream = *graph.node(node).outputs.get(port)?;
        Some(Arc::clone(&graph.stream(stream).schema))
    };
    // Per task: its head goes on without an input (a stream selector over copies).
    let survivors: Vec<bool> = topology
        .tasks
        .iter()
        .map(|t| {
            t.source.is_none()
                && t.operators
                    .first()
                    .is_some_and(|n| graph.node(*n).survives_input_loss)
        })
        .collect();
    let mut replicas = topology.replica_tasks(|n| graph.node(n).survives_input_loss);
    let mut wires = Wires::new(
        topology,
        shared.config.channel_capacity,
        net.as_deref_mut(),
        &schema_of,
        (&survivors, &replicas),
    )?;
    one_producer_per_replica(topology, &replicas)?;
    // Tasks running copies of a hot standby (a row all copies reject is a dead letter once).
    let copy_tasks = replicas.clone();
    if resumable {
        replicas.iter_mut().for_each(|r| *r = false);
    }
    // The copies of patterns that spread partial matches, chained by in-process channels
    // (over the data plane to a copy in another process): they hand over at checkpoint
    // barriers and between them (`crate::spread`).
    let task_of = |name: &str| {
        let node = graph.nodes.iter().position(|g| g.name() == name)?;
        topology
            .tasks
            .iter()
            .find(|t| t.operators.contains(&NodeId(node)))
    };
    let instances = |name: &str| task_of(name).map_or(1, |t| t.parallelism);
    let mut spreaders = crate::spread::spreaders(graph, &instances, shared.abort);
    if let Some(n) = net.as_deref() {
        let patience = n.resumption.as_ref().map(|r| r.wait);
        for ((name, i), s) in spreaders.iter_mut() {
            // Where instance i of a copy runs.
            let worker_of = |name: &str| {
                task_of(name)
                    .and_then(|t| t.instances.get(*i))
                    .map(|i| i.worker)
            };
            if worker_of(name).is_some_and(|w| n.runs(w)) {
                s.across(n, &worker_of, patience);
            }
        }
    }
    let mut tasks = Vec::new();
    let mut source_commands = Vec::new();
    // The instances of the tasks split while an earlier run ran, planned from the start: as
    // a live split's, their commits come through the instance they split from.
    let split_from = |at: InstanceRef| {
        let restored = shared.pipelining.map_or(&[][..], |p| p.restored());
        restored
            .iter()
            .find(|s| s.task == at.task)
            .map(|s| InstanceRef {
                task: s.from_task,
                instance: at.instance,
            })
    };
    let mut via_parent: Vec<(InstanceRef, String, Sender<Command>)> = Vec::new();
    for task in &topology.tasks {
        // The inboxes through which the instances of a rescalable head hand key groups over.
        let head = task
            .rescalable_head(graph)
            .map(|n| graph.node(n).name().to_string());
        let (senders, mut inboxes) = if head.is_some() {
            let (senders, inboxes) = crate::rescale::inboxes(task.parallelism);
            if let (Some(g), Some(h)) = (shared.growth.filter(|g| g.grows(task.task)), &head) {
                g.planned_inboxes(h, &senders);
            }
            (senders, inboxes.into_iter().map(Some).collect())
        } else {
            (Vec::new(), Vec::new())
        };
        for instance in task.instances.iter().filter(|i| runs_here(i)) {
            let handoffs = match (&head, inboxes.get_mut(instance.at.instance)) {
                (Some(op), Some(inbox)) => inbox.take().map(|inbox| {
                    let mates = mates(task, instance, op, &senders, net.as_deref());
                    (mates, inbox)
                }),
                _ => None,
            };
            let mut outlets =
                wires.outlets(graph, topology, (task, instance), &replicas, shared.growth);
            let copy = copy_tasks.get(task.task).copied().unwrap_or(false);
            // Instances in other processes wait this long for a handoff from here.
            let patience = net
                .as_deref()
                .and_then(|n| n.resumption.as_ref())
                .map(|r| r.wait);
            let links = build_links(
                graph,
                task,
                instance,
                &mut outlets,
                shared,
                &wiring,
                (copy, handoffs, patience, &mut spreaders),
            )?;
            let chain = Chain::new(links, shared.control.cloned())
                .with_end_gate(shared.config.end_gate.clone(), instance.name.clone())
                .with_injected_failure(&shared.config.fail_after);
            let inlets = wires.inlets(instance);
            let built = match (task.source, sources.remove(&instance.at)) {
                (Some(head), Some(source)) => {
                    let outlets = outlets.remove(&head).unwrap_or_default();
                    let parts = SourceParts {
                        head,
                        parallelism: task.parallelism,
                        source,
                        outlets,
                        chain,
                    };
                    let commands = match wiring.as_deref_mut() {
                        Some(w) => Some(w.commands_for(instance.id)),
                        None if shared.control.is_some() => {
                            let (tx, rx) = crossbeam_channel::unbounded();
                            source_commands.push(tx);
                            Some(rx)
                        }
                        None => None,
                    };
                    let mut built = source_task(graph, instance, parts, shared, &mut wiring);
                    built.commands = commands;
                    Task::Source(built)
                }
                _ => Task::Operator(OperatorTask {
                    name: instance.name.clone(),
                    inlets,
                    chain,
                    checkpointing: wiring.as_deref_mut().map(|w| TaskCheckpointing {
                        task: instance.id,
                        dir: w.dir.clone(),
                        commands: match split_from(instance.at) {
                            Some(parent) => {
                                let (tx, rx) = crossbeam_channel::unbounded();
                                via_parent.push((parent, instance.name.clone(), tx));
                                rx
                            }
                            None => w.commands_for(instance.id),
                        },
                        jobs: w.jobs.clone(),
                        events: w.events.clone(),
                    }),
                    idle: false,
                    stage: shared.stage(instance, task.parallelism),
                    last_checkpoint: None,
                    growth: shared.growth.map(|g| crate::grow::GrowPart {
                        ctx: Arc::clone(g),
                        at: instance.at,
                        start: None,
                        watermark: Watermark::MIN,
                    }),
                }),
            };
            let replica = replicas.get(task.task).copied().unwrap_or(false);
            tasks.push(ReadyTask {
                id: instance.id,
                at: instance.at,
                name: instance.name.clone(),
                replica,
                lost: wiring
                    .as_deref()
                    .filter(|_| replica)
                    .map(|w| w.events.clone()),
                task: built,
            });
        }
    }
    for (parent, name, tx) in via_parent {
        let stage = tasks
            .iter_mut()
            .find(|t| t.at == parent)
            .and_then(|t| match &mut t.task {
                Task::Source(s) => s.stage.as_mut(),
                Task::Operator(o) => o.stage.as_mut(),
            });
        let Some(stage) = stage else {
            return Err(RuntimeError::Start(OperatorError::internal(
                &name,
                "the task it split from while an earlier run ran does not run here (this is a bug: a split task runs where the task it split from does)",
            )));
        };
        stage.downstream.push(tx);
    }
    Ok(Instantiated {
        tasks,
        source_commands,
    })
}

/// Every source instance, built and restored, by instance.
fn build_sources(
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
    ctx: &BuildContext,
    wiring: Option<&CheckpointWiring>,
    runs_here: &dyn Fn(&TaskInstance) -> bool,
) -> Result<HashMap<InstanceRef, Box<dyn Source>>, RuntimeError> {
    let mut sources = HashMap::new();
    for task in &topology.tasks {
        let Some(head) = task.source else {
            continue;
        };
        let node = graph.node(head);
        let Bound::Source(factory) = &node.bound else {
            return Err(not_a_source(node.name()));
        };
        for instance in task.instances.iter().filter(|i| runs_here(i)) {
            let at = instance.at;
            let mut source = factory(&ctx.for_instance(at.instance, task.parallelism))
                .map_err(RuntimeError::Start)?;
            if let Some(w) = wiring {
                source
                    .can_resume()
                    .map_err(|why| RuntimeError::NotCheckpointable {
                        operator: node.name().to_string(),
                        why,
                    })?;
                if let Some(resume) = w.resume() {
                    // At another parallelism, the source says how its instances' positions
                    // combine (a file reader deals its splits again); most refuse.
                    let parallelism = task.parallelism;
                    let recut = |parts: &[Option<serde_json::Value>], i: usize| {
                        source.rescale_inline(parts, i, parallelism)
                    };
                    let now = Layout {
                        instances: task.parallelism,
                        owners: task.active,
                    };
                    let i = at.instance;
                    if let Some(state) = resume.state_of(node.name(), i, now, &recut)? {
                        resume.restore(node.name(), || source.restore(state))?;
                    }
                    resume.reapply_all(node.name(), |p, v| source.set_param(p, v))?;
                }
            }
            sources.insert(at, source);
        }
    }
    Ok(sources)
}

/// The chained operators of one task instance, built and restored, with their outlets.
fn build_links(
    graph: &LogicalGraph<Bound>,
    task: &TaskTopology,
    instance: &TaskInstance,
    outlets: &mut BTreeMap<NodeId, Vec<Vec<Route>>>,
    shared: &Shared<'_>,
    wiring: &Option<&mut CheckpointWiring>,
    (copy, mut handoffs, patience, spreaders): (
        bool,
        Option<Handoffs>,
        Option<std::time::Duration>,
        &mut crate::spread::Spreaders,
    ),
) -> Result<Vec<Link>, RuntimeError> {
    let (i, parallelism) = (instance.at.instance, task.parallelism);
    let mut ctx = shared.ctx.for_instance(i, parallelism);
    if copy {
        // A row every copy rejects is written once, as the operator's.
        ctx.dead_letter = ctx.dead_letter.for_copy(i, parallelism);
    }
    let resume = wiring.as_deref().and_then(CheckpointWiring::resume);
    let mut links = Vec::with_capacity(task.operators.len());
    for &n in &task.operators {
        let node = graph.node(n);
        let Bound::Operator(factory) = &node.bound else {
            return Err(unreachable_source(node.name()));
        };
        let mut op = factory(&ctx).map_err(RuntimeError::Start)?;
        // A copy of a pattern that spreads partial matches: its role, before its restore.
        let spreader = spreaders.remove(&(node.name().to_string(), i));
        if let Some(s) = &spreader {
            op.set_spread_role(s.role()).map_err(RuntimeError::Start)?;
        }
        let mut applied = BTreeMap::new();
        if let Some(resume) = &resume {
            applied = resume.latest_params(node.name());
            // The changes applied before the checkpoint's snapshot, then its state, then
            // the changes its own barrier carried (applied after the snapshot).
            resume.reapply_before_restore(node.name(), |changes| op.set_params(changes))?;
            let rescale = |parts: &[Option<serde_json::Value>], new: usize| {
                op.rescale_inline(
                    parts,
                    anduin_operator_api::Combine::Resume { instance: new },
                )
            };
            let now = Layout {
                instances: parallelism,
                owners: task.active,
            };
            if let Some(state) = resume.state_of(node.name(), i, now, &rescale)? {
                resume.restore(node.name(), || op.restore(state))?;
            }
            resume.reapply_after_restore(node.name(), |changes| op.set_params(changes))?;
        }
        // The head of a rescalable task hands key groups over at a live rescale.
        let head = links.is_empty();
        let rescaler = handoffs.take().filter(|_| head).map(|(mates, inbox)| {
            let (factory, ctx) = (Arc::clone(factory), ctx.clone());
            Rescaler {
                instance: i,
                slots: parallelism,
                active: task.active,
                mates,
                inbox,
                patience,
                early: Vec::new(),
                rebuild: Box::new(move || factory(&ctx)),
                applied: applied.clone(),
                full_next: false,
                abort: Arc::clone(shared.abort),
                grows: shared.growth.filter(|g| g.grows(task.task)).cloned(),
            }
        });
        links.push(Link {
            index: n.0,
            instance: i,
            parallelism,
            name: node.name().to_string(),
            op,
            outlets: outlets.remove(&n).unwrap_or_default(),
            counters: shared.counters[n.0].instance(i),
            origins_after: false,
            live_at: None,
            rescaler,
            spreader,
            params: applied,
        });
    }
    Ok(links)
}

/// Where every instance of a rescalable head takes handoffs, and this instance's own inbox.
type Handoffs = (Vec<Mate>, Receiver<Handoff>);

/// Where `instance` of rescalable `task` (headed by `operator`) hands key groups to each
/// instance of it: the inbox in `senders` of one in this process, the network to one in
/// another (which takes them into its own inbox there). This instance's own inbox takes
/// handoffs from other processes when some instance runs elsewhere.
fn mates(
    task: &TaskTopology,
    instance: &TaskInstance,
    operator: &str,
    senders: &[Sender<Handoff>],
    net: Option<&NetWiring>,
) -> Vec<Mate> {
    let i = instance.at.instance;
    let elsewhere = |t: &TaskInstance| net.filter(|n| !n.runs(t.worker));
    if let (Some(n), Some(own)) = (task.instances.iter().find_map(elsewhere), senders.get(i)) {
        n.expect_handoffs(operator, i, own.clone());
    }
    senders
        .iter()
        .enumerate()
        .map(|(j, tx)| {
            let mate = task.instances.iter().find(|t| t.at.instance == j);
            match mate.and_then(|t| elsewhere(t).map(|n| (n, t.worker))) {
                Some((n, worker)) => Mate::Elsewhere(n.handoff_to(operator, i, j, worker)),
                None => Mate::Here(tx.clone()),
            }
        })
        .collect()
}

/// What a source task is made of.
struct SourceParts {
    head: NodeId,
    /// The task's parallelism.
    parallelism: usize,
    source: Box<dyn Source>,
    /// The source's own outlets (when it is not fused with what reads it), every port's.
    outlets: Vec<Vec<Route>>,
    chain: Chain,
}

fn source_task(
    graph: &LogicalGraph<Bound>,
    instance: &TaskInstance,
    parts: SourceParts,
    shared: &Shared<'_>,
    wiring: &mut Option<&mut CheckpointWiring>,
) -> SourceTask {
    let SourceParts {
        head,
        parallelism,
        source,
        outlets,
        chain,
    } = parts;
    let config = shared.config;
    let counters = shared.counters[head.0].instance(instance.at.instance);
    let mut outlets: Vec<Route> = outlets.into_iter().flatten().collect();
    for r in &mut outlets {
        r.charge_to(&counters);
    }
    SourceTask {
        origins: chain.wants_origins(),
        clock: Arc::clone(&config.clock),
        name: graph.node(head).name().to_string(),
        source,
        counters,
        outlets,
        chain,
        batch_size: config.batch_size.max(1),
        linger: config.linger,
        stop: Arc::clone(&config.stop),
        read_to_end: false,
        abort: Arc::clone(shared.abort),
        watermark: None,
        idle: false,
        last_injected: None,
        stage: shared.stage(instance, parallelism),
        commands: None,
        instance: instance.at.instance,
        control: shared.control.cloned(),
        checkpointing: wiring.as_deref_mut().map(|w| SourceCheckpointing {
            task: instance.id,
            index: head.0,
            instance: instance.at.instance,
            parallelism,
            dir: w.dir.clone(),
            events: w.events.clone(),
            jobs: w.jobs.clone(),
            every_rows: w.every_rows,
        }),
    }
}

/// Both ends of every channel of a topology, until handed to the instances at them.
struct Wires {
    senders: Vec<Option<Outlet>>,
    receivers: Vec<Option<Receiver<Envelope>>>,
    /// Per channel: what its network end tells the consumer of its producer (see
    /// [`Notice`]), for a consumer that goes on without an input.
    notices: Vec<Option<Receiver<Notice>>>,
}

impl Wires {
    /// A bounded queue of `capacity` messages for every channel of `topology`; for a channel
    /// between two workers, one at each end with the network between them. Per task:
    /// `survivors`, its head goes on without an input (a stream selector); `copies`, it is a
    /// copy of a hot standby (its producers are not held up while it is lost, and losing it
    /// ends its channels as lost rather than failing the run).
    fn new(
        topology: &Topology,
        capacity: usize,
        mut net: Option<&mut NetWiring>,
        schema_of: &dyn Fn(&Channel) -> Option<arrow::datatypes::SchemaRef>,
        (survivors, copies): (&[bool], &[bool]),
    ) -> Result<Self, RuntimeError> {
        let mut senders = Vec::with_capacity(topology.channels.len());
        let mut receivers = Vec::with_capacity(topology.channels.len());
        let mut notices = Vec::with_capacity(topology.channels.len());
        for c in &topology.channels {
            let Some(net) = net.as_deref_mut().filter(|_| topology.crosses(c)) else {
                let (tx, rx) = channel(capacity);
                senders.push(Some(tx));
                receivers.push(Some(rx));
                notices.push(None);
                continue;
            };
            let name = edge_name(
                c,
                topology.instance(c.from).map_or("?", |i| &i.name),
                topology.instance(c.to).map_or("?", |i| &i.name),
            );
            let (from, to) = (topology.worker_of(c.from), topology.worker_of(c.to));
            if net.runs(from) {
                let (outlet, to_network) = channel(capacity);
                let to_copy = copies.get(c.to.task) == Some(&true);
                net.producer_end(c, to, to_network, name.clone(), to_copy)?;
                senders.push(Some(outlet));
            } else {
                senders.push(None);
            }
            if net.runs(to) {
                let (from_network, inlet) = crossbeam_channel::bounded(capacity.max(1));
                let task = topology.instance(c.to).map_or(usize::MAX, |i| i.id);
                let (tell, told) = if survivors.get(c.to.task) == Some(&true) {
                    let (tx, rx) = crossbeam_channel::unbounded();
                    (Some(tx), Some(rx))
                } else {
                    (None, None)
                };
                let standby = StandbyEnd {
                    notices: tell,
                    from_copy: copies.get(c.from.task) == Some(&true),
                };
                net.consumer_end(c, (task, from_network), name, schema_of(c), standby);
                receivers.push(Some(inlet));
                notices.push(told);
            } else {
                receivers.push(None);
                notices.push(None);
            }
        }
        Ok(Self {
            senders,
            receivers,
            notices,
        })
    }

    /// The routes of `instance`, per node of its task and output port.
    fn outlets(
        &mut self,
        graph: &LogicalGraph<Bound>,
        topology: &Topology,
        (task, instance): (&TaskTopology, &TaskInstance),
        replicas: &[bool],
        growth: Option<&Arc<crate::grow::Growth>>,
    ) -> BTreeMap<NodeId, Vec<Vec<Route>>> {
        let mut outlets: BTreeMap<NodeId, Vec<Vec<Route>>> = task
            .nodes()
            .map(|n| {
                (
                    n,
                    graph.node(n).outputs.iter().map(|_| Vec::new()).collect(),
                )
            })
            .collect();
        for (k, route) in instance.routes.iter().enumerate() {
            let replica = replicas.get(route.to_task).copied().unwrap_or(false);
            let mut senders = route.channels.iter().map(|c| {
                let mut outlet = self.senders[c.0]
                    .take()
                    .expect("a channel has one producer instance");
                if replica {
                    outlet.may_vanish();
                }
                outlet
            });
            let built = match &route.exchange {
                Exchange::Gather => Route::One(senders.next().expect("a gather has a channel")),
                Exchange::Forward => {
                    Route::One(senders.next().expect("a forward channel has a consumer"))
                }
                Exchange::Broadcast => Route::All(senders.collect()),
                Exchange::RoundRobin => Route::InTurn(InTurnRoute::new(senders.collect())),
                Exchange::Range(r) => Route::Ranged(RangeRoute::new(r.clone(), senders.collect())),
                Exchange::Hash { keys } => {
                    let consumer = &topology.tasks[route.to_task];
                    let head = consumer
                        .nodes()
                        .next()
                        .map(|n| graph.node(n).name().to_string());
                    let hook =
                        growth
                            .filter(|g| g.grows(route.to_task))
                            .map(|g| crate::grow::GrowHook {
                                growth: Arc::clone(g),
                                to_task: route.to_task,
                                to_input: route.to_input,
                                from: instance.at,
                                route: k,
                            });
                    Route::Hashed(
                        HashRoute::new(
                            keys.clone(),
                            senders.collect(),
                            consumer.active,
                            head.unwrap_or_default(),
                        )
                        .growing(hook),
                    )
                }
            };
            let (node, port) = route.from;
            if let Some(ports) = outlets.get_mut(&node).and_then(|p| p.get_mut(port)) {
                ports.push(built);
            }
        }
        outlets
    }

    /// The inlets of `instance`, in the topology's order.
    fn inlets(&mut self, instance: &TaskInstance) -> Vec<Inlet> {
        instance
            .inlets
            .iter()
            .map(|i| {
                let rx = self.receivers[i.channel.0]
                    .take()
                    .expect("a channel has one consumer instance");
                Inlet {
                    notices: self.notices.get_mut(i.channel.0).and_then(Option::take),
                    ..Inlet::new(rx, i.port)
                }
            })
            .collect()
    }
}

/// Refuses a replica fed by several producer instances on one input: their rows interleave
/// in another order in each copy, so the copies would not emit the same rows in the same
/// order, which the stream selector counts on.
fn one_producer_per_replica(topology: &Topology, replicas: &[bool]) -> Result<(), RuntimeError> {
    for task in topology
        .tasks
        .iter()
        .filter(|t| replicas.get(t.task) == Some(&true))
    {
        for instance in &task.instances {
            let ports = instance.inlets.iter().map(|i| i.port);
            if let Some(port) = ports.clone().find(|p| instance.senders(*p) > 1) {
                return Err(RuntimeError::Start(OperatorError::Config {
                    operator: instance.name.clone(),
                    message: format!(
                        "a copy of a hot standby is fed by {} instances on input {port}, whose rows interleave in another order in each copy: run the operator before it as one instance (remove its `parallelism` or `ranges`)",
                        instance.senders(port)
                    ),
                }));
            }
        }
    }
    Ok(())
}

/// The planner put a node that is not a source at the head of a source's task.
fn not_a_source(name: &str) -> RuntimeError {
    RuntimeError::Start(OperatorError::internal(
        name,
        "the topology took an operator for a source",
    ))
}

/// A source can only head a task: the planner never fuses one behind another operator.
fn unreachable_source(name: &str) -> RuntimeError {
    RuntimeError::Start(OperatorError::internal(
        name,
        "the planner put a source inside a chain",
    ))
}
