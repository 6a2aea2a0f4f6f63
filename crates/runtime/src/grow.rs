//! Instances beyond `--max-parallelism`, started while the query runs (the paper's pattern 4
//! past the instances planned; an embedded run's). `anduin ctl scale Q OP N` with `N` above
//! the instances that run OP's task starts new instances of the task at the barrier that
//! carries the change, each as a spare instance planned from the start would be: it owns no
//! key group until the rescale on that very barrier hands it its share.
//!
//! How barrier E of a rescale to `N` (more than the task's `n` instances) grows task T:
//! - Each producer instance feeding T by key (a [`crate::channel::HashRoute`]) opens a channel
//!   to each new instance and leaves its receiving end here, sends E on its old channels only,
//!   then sends the last event time it sent on the new ones; the rows after E go by the new
//!   assignment, to the new instances too.
//! - Instance 0 of T, once E is aligned and before it passes E on, builds the new instances
//!   (fresh operators given the params its own chain has, routes shaped as its own with new
//!   channels, whose receiving ends it leaves here for the consumers) and starts their threads.
//!   A new instance first takes its key groups from their old owners (the rescale of E, as
//!   every instance does, `crate::rescale`), then reads the channels its producers opened,
//!   which carry only what came after E.
//! - Each consumer instance of T's output takes, once it has aligned E, the channels left for
//!   it, and aligns the later barriers over them too.
//! - Checkpoints: the coordinator counts the new instances in every checkpoint begun after it
//!   injected E (their numbers are reserved by the change, [`Growth::reserve`], the same for
//!   the coordinator and for instance 0); E's own checkpoint holds the state from before the
//!   move, as with every rescale. A run resumed from a later checkpoint plans the task with as
//!   many instances as its last rescale gave (`run::keep_live_rescales`).
//!
//! Not here: a cluster's run (new instances would need workers from the scheduler); a task
//! whose chain holds a sink or a second stateful operator, that is fed other than by key, that
//! feeds a consumer instance by instance, or whose chain was split while running. The control
//! plane refuses a rescale beyond the instances of those with the reason [`growable`] gives.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anduin_checkpoint::CheckpointDir;
use anduin_graph::{LogicalGraph, NodeId};
use anduin_operator_api::{Bound, BuildContext, OperatorError, OperatorFactory};
use anduin_types::{Barrier, Epoch, Watermark};
use crossbeam_channel::{Receiver, Sender};

use crate::chain::{Chain, Link};
use crate::channel::{channel, Outlet, Route};
use crate::control::{Control, Growing};
use crate::error::TaskFailure;
use crate::events::Events;
use crate::instantiate::{ReadyTask, Task};
use crate::protocol::{Command, Event, WriteJob};
use crate::rescale::{rescaled_to, Handoff, Mate, Rescaler, PARALLELISM};
use crate::spawn::{spawn_one, Running};
use crate::stats::{Counters, NodeCounters};
use crate::task::{Inlet, OperatorTask, TaskCheckpointing};
use crate::topology::{Exchange, InstanceRef, Outbound, Topology};

/// Why a cluster's run does not grow its tasks (yet): its executors would have to open and
/// accept network edges to the new instances, and its coordinator place them on workers.
pub(crate) const NOT_ON_A_CLUSTER: &str = "it runs on a cluster, where instances beyond those started are not supported yet (start it with a larger --max-parallelism)";

/// The numbers in the run of instances added while it runs start here: apart from those the
/// plan and its live splits give (`anduin_graph::PhysicalPlan::split_live`).
pub(crate) const GROWN_IDS: usize = 1 << 24;

/// Whether task `task` of `topology` can get instances beyond those planned while the query
/// runs: `Err` says why not, in words that follow "it cannot get more instances while it
/// runs: ".
pub(crate) fn growable(
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
    task: usize,
) -> Result<(), String> {
    let t = topology
        .tasks
        .get(task)
        .ok_or_else(|| "its task is not in the plan".to_string())?;
    let head = t
        .rescalable_head(graph)
        .ok_or_else(|| "it is not rescaled while it runs".to_string())?;
    for &n in t.operators.iter().filter(|n| **n != head) {
        let node = graph.node(n);
        if node.outputs.is_empty() {
            return Err(format!(
                "its task also runs sink \"{}\" (give the sink a `parallelism` of its own so that it runs as a task of its own)",
                node.name()
            ));
        }
        if node.stateful {
            return Err(format!(
                "its task also runs stateful operator \"{}\", whose state is not moved (not supported yet)",
                node.name()
            ));
        }
    }
    let copies = topology.replica_tasks(|n| graph.node(n).survives_input_loss);
    if copies.get(task) == Some(&true) {
        return Err("it runs as a copy of a hot standby (not supported yet)".into());
    }
    for producer in topology.instances() {
        for r in producer.routes.iter().filter(|r| r.to_task == task) {
            if !matches!(r.exchange, Exchange::Hash { .. }) {
                return Err(format!(
                    "\"{}\" feeds it other than by key (not supported yet)",
                    graph.node(r.from.0).name()
                ));
            }
        }
    }
    if let Some(first) = t.instances.first() {
        if let Some(r) = first
            .routes
            .iter()
            .find(|r| matches!(r.exchange, Exchange::Forward))
        {
            return Err(format!(
                "it feeds task {} instance by instance (not supported yet)",
                r.to_task
            ));
        }
    }
    Ok(())
}

/// A task that can grow: what its new instances are built from.
pub(crate) struct Growable {
    /// The task's name (its operators joined by ` -> `).
    pub name: String,
    /// Its head, the operator rescaled.
    pub head: String,
    /// Its operators, head first: node, name, factory.
    pub nodes: Vec<(NodeId, String, OperatorFactory)>,
    /// The routes of its instance 0, whose shape every new instance's take.
    pub routes: Vec<Outbound>,
    /// How many instances it has at the start.
    pub instances: usize,
}

/// What a run's tasks grow with.
pub(crate) struct GrowthSetup {
    pub tasks: BTreeMap<usize, Growable>,
    pub capacity: usize,
    pub ctx: BuildContext,
    pub counters: Arc<Vec<NodeCounters>>,
    /// With checkpoints: where snapshots are written, the committer, the coordinator.
    pub checkpoint: Option<(CheckpointDir, Sender<WriteJob>, Sender<Event>)>,
}

/// What every task of an embedded run shares to start instances beyond those planned.
pub(crate) struct Growth {
    setup: GrowthSetup,
    events: Events,
    abort: Arc<AtomicBool>,
    control: Option<Arc<Control>>,
    numbers: Arc<Numbers>,
    inner: Mutex<Registry>,
}

/// The numbers of the instances added: what the checkpoint coordinator shares with the tasks
/// (it holds nothing that keeps the run's channels open).
pub(crate) struct Numbers {
    /// Per growable task, its head and its operators (head first).
    tasks: BTreeMap<usize, (String, Vec<String>)>,
    inner: Mutex<Reserved>,
}

#[derive(Default)]
struct Reserved {
    /// Per growable task, its instances now (those reserved included).
    instances: BTreeMap<usize, usize>,
    /// How many numbers were reserved so far.
    next_id: usize,
    /// Per rescale (the change's number): the instances it adds and their numbers.
    by_change: BTreeMap<u64, Vec<(usize, usize)>>,
}

impl Numbers {
    /// The numbers of a run whose only growable task is `task`, headed by `head`, with
    /// `instances` at the start.
    #[cfg(test)]
    pub(crate) fn for_tests(task: usize, head: &str, instances: usize) -> Self {
        Self {
            tasks: BTreeMap::from([(task, (head.to_string(), vec![head.to_string()]))]),
            inner: Mutex::new(Reserved {
                instances: BTreeMap::from([(task, instances)]),
                ..Reserved::default()
            }),
        }
    }

    /// The operators of the task headed by `head`, if it can grow.
    pub(crate) fn chain_of(&self, head: &str) -> Vec<String> {
        self.tasks
            .values()
            .find(|(h, _)| h == head)
            .map(|(_, ops)| ops.clone())
            .unwrap_or_default()
    }

    /// The instances change `seq` (a rescale of `operator` to `to`) adds, with their numbers
    /// in the run: reserved by whoever asks first (the coordinator as it injects the change,
    /// or instance 0 of the task as the barrier reaches it), the same for every later ask.
    pub(crate) fn reserve(&self, seq: u64, operator: &str, to: usize) -> Vec<(usize, usize)> {
        let Some((&task, _)) = self.tasks.iter().find(|(_, (h, _))| h == operator) else {
            return Vec::new();
        };
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(done) = inner.by_change.get(&seq) {
            return done.clone();
        }
        let now = inner.instances.get(&task).copied().unwrap_or(0);
        let added: Vec<(usize, usize)> = (now..to.max(now))
            .map(|j| {
                let id = GROWN_IDS + inner.next_id;
                inner.next_id += 1;
                (j, id)
            })
            .collect();
        inner.instances.insert(task, now.max(to));
        inner.by_change.insert(seq, added.clone());
        added
    }
}

/// An added instance's inbox: its sending end, and its receiving end until it takes it.
type Inbox = (Sender<Handoff>, Option<Receiver<Handoff>>);

/// What changes as tasks grow.
#[derive(Default)]
struct Registry {
    /// The receiving ends of channels opened at barrier E for instance I, until I takes them.
    inlets: HashMap<(InstanceRef, Epoch), Vec<Inlet>>,
    /// Per rescalable head, the inboxes of its planned instances.
    planned: HashMap<String, Vec<Sender<Handoff>>>,
    /// The inboxes of instances added (or about to be), by head and instance.
    added: HashMap<(String, usize), Inbox>,
    /// The threads of instances added, not joined yet.
    running: Vec<Running>,
}

/// An instance added: its task, the command channel to it (with checkpoints), and its
/// operators' counters.
type Built = (
    OperatorTask,
    Option<Sender<Command>>,
    Vec<(String, Arc<Counters>)>,
);

/// A producer's hook to open channels to instances added to its consumer.
#[derive(Clone)]
pub(crate) struct GrowHook {
    pub growth: Arc<Growth>,
    pub to_task: usize,
    pub to_input: usize,
}

impl GrowHook {
    /// Opens a channel from the producer to each of `instances` of its consumer, leaving their
    /// receiving ends for them at barrier `epoch`; the sending ends, in instance order.
    pub(crate) fn open(&self, instances: Range<usize>, epoch: Epoch) -> Vec<Outlet> {
        let mut inner = self.growth.lock();
        instances
            .map(|j| {
                let (outlet, rx) = channel(self.growth.setup.capacity);
                let at = InstanceRef {
                    task: self.to_task,
                    instance: j,
                };
                inner
                    .inlets
                    .entry((at, epoch))
                    .or_default()
                    .push(Inlet::new(rx, self.to_input));
                outlet
            })
            .collect()
    }
}

/// A task instance's part in growth: which instance it is, and for one added while running,
/// the rescale it starts with.
pub(crate) struct GrowPart {
    pub ctx: Arc<Growth>,
    pub at: InstanceRef,
    /// The barrier it was added at, the instances that own key groups after it, and the
    /// event time every instance was at then (the instances giving it key groups are).
    pub start: Option<(Epoch, usize, Watermark)>,
    /// The last watermark the instance passed on (an instance added starts at it).
    pub watermark: Watermark,
}

impl Growth {
    pub(crate) fn new(
        setup: GrowthSetup,
        events: Events,
        abort: Arc<AtomicBool>,
        control: Option<Arc<Control>>,
    ) -> Self {
        let numbers = Numbers {
            tasks: setup
                .tasks
                .iter()
                .map(|(t, g)| {
                    let ops = g.nodes.iter().map(|(_, n, _)| n.clone()).collect();
                    (*t, (g.head.clone(), ops))
                })
                .collect(),
            inner: Mutex::new(Reserved {
                instances: setup.tasks.iter().map(|(t, g)| (*t, g.instances)).collect(),
                ..Reserved::default()
            }),
        };
        Self {
            setup,
            events,
            abort,
            control,
            numbers: Arc::new(numbers),
            inner: Mutex::new(Registry::default()),
        }
    }

    /// The numbers of the instances added, for the checkpoint coordinator.
    pub(crate) fn numbers(&self) -> Arc<Numbers> {
        Arc::clone(&self.numbers)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether task `task` can grow.
    pub(crate) fn grows(&self, task: usize) -> bool {
        self.setup.tasks.contains_key(&task)
    }

    /// Notes the inboxes of the planned instances of rescalable `head`.
    pub(crate) fn planned_inboxes(&self, head: &str, senders: &[Sender<Handoff>]) {
        self.lock()
            .planned
            .insert(head.to_string(), senders.to_vec());
    }

    /// The channels left for instance `at` at barrier `epoch`.
    pub(crate) fn take_inlets(&self, at: InstanceRef, epoch: Epoch) -> Vec<Inlet> {
        self.lock().inlets.remove(&(at, epoch)).unwrap_or_default()
    }

    /// Where instance `j` of `head` takes handoffs, for an instance that hands it key groups.
    pub(crate) fn mate(&self, head: &str, j: usize) -> Mate {
        let mut inner = self.lock();
        if let Some(tx) = inner.planned.get(head).and_then(|p| p.get(j)) {
            return Mate::Here(tx.clone());
        }
        let (tx, _) = inner.added.entry((head.to_string(), j)).or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            (tx, Some(rx))
        });
        Mate::Here(tx.clone())
    }

    /// The inbox of added instance `j` of `head`.
    fn inbox(&self, head: &str, j: usize) -> Receiver<Handoff> {
        let mut inner = self.lock();
        let entry = inner.added.entry((head.to_string(), j)).or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            (tx, Some(rx))
        });
        match entry.1.take() {
            Some(rx) => rx,
            // Taken already: a second instance `j` (cannot be: numbers are reserved once).
            None => crossbeam_channel::never(),
        }
    }

    /// The threads of instances added since the last call, running or ended, to join.
    pub(crate) fn take_running(&self) -> Vec<Running> {
        std::mem::take(&mut self.lock().running)
    }

    /// Instance `at` of its task has aligned `barrier`: when it is instance 0 of a growable
    /// task and the barrier rescales the task beyond its instances, it builds and starts the
    /// new ones (see the module's doc), shaped as `chain`. Returns the command channels of the
    /// new instances with checkpoints (their commits come through instance 0).
    pub(crate) fn grow(
        self: &Arc<Self>,
        (at, watermark): (InstanceRef, Watermark),
        barrier: &Barrier,
        chain: &Chain,
    ) -> Result<Vec<Sender<Command>>, TaskFailure> {
        let Some(g) = self.setup.tasks.get(&at.task).filter(|_| at.instance == 0) else {
            return Ok(Vec::new());
        };
        let Some(to) = rescaled_to(barrier, &g.head) else {
            return Ok(Vec::new());
        };
        let seq = barrier
            .control
            .iter()
            .rev()
            .find(|u| u.operator == g.head && u.param == PARALLELISM)
            .map_or(0, |u| u.seq);
        let added = self.numbers.reserve(seq, &g.head, to);
        if added.is_empty() {
            return Ok(Vec::new());
        }
        let template = chain.growth_template(barrier)?;
        let mut commands = Vec::new();
        for (j, id) in added {
            let (built, tx, counters) = self.build(
                g,
                (at.task, j, id),
                (to, barrier.epoch, watermark),
                &template,
            )?;
            commands.extend(tx);
            let name = built.name.clone();
            let ready = ReadyTask {
                id,
                at: InstanceRef {
                    task: at.task,
                    instance: j,
                },
                name: name.clone(),
                replica: false,
                lost: None,
                task: Task::Operator(built),
            };
            tracing::info!(operator = %g.head, epoch = barrier.epoch.0, instance = j, task = id, name = %name, "started an instance beyond those the query started with");
            let running = spawn_one(ready, &self.events, &self.abort).map_err(|e| {
                OperatorError::Execution {
                    operator: g.head.clone(),
                    message: format!(
                        "cannot start a thread for instance {j}, added while the query runs: {e}"
                    ),
                }
            })?;
            self.lock().running.push(running);
            if let Some(control) = &self.control {
                let operators: Vec<String> = g.nodes.iter().map(|(_, n, _)| n.clone()).collect();
                control.task_grown(at.task, (j, id), &operators, counters);
            }
        }
        Ok(commands)
    }

    /// Instance `j` (number `id`) of task `task`, added at barrier `epoch` that rescales it to
    /// `to`: its task, ready to run, and the command channel to it (with checkpoints).
    fn build(
        self: &Arc<Self>,
        g: &Growable,
        (task, j, id): (usize, usize, usize),
        (to, epoch, watermark): (usize, Epoch, Watermark),
        template: &crate::chain::Template,
    ) -> Result<Built, TaskFailure> {
        let at = InstanceRef { task, instance: j };
        let inlets = self.take_inlets(at, epoch);
        let mut outlets: BTreeMap<NodeId, Vec<Vec<Route>>> = BTreeMap::new();
        // The k-th route of a node's port is the k-th outbound route from it, in plan order.
        let mut seen: BTreeMap<(NodeId, usize), usize> = BTreeMap::new();
        for ob in &g.routes {
            let link = g
                .nodes
                .iter()
                .position(|(n, _, _)| *n == ob.from.0)
                .ok_or_else(|| internal(&g.head, "a route from outside its chain"))?;
            let k = seen.entry(ob.from).or_default();
            let shape = template
                .links
                .get(link)
                .and_then(|l| l.routes.get(ob.from.1))
                .and_then(|r| r.get(*k))
                .ok_or_else(|| internal(&g.head, "instance 0 lacks a route of the plan"))?;
            *k += 1;
            let consumers = match ob.exchange {
                Exchange::Gather => 0..1,
                Exchange::Forward => {
                    return Err(internal(
                        &g.head,
                        "a task feeding instance by instance grew (it is refused)",
                    )
                    .into())
                }
                _ => 0..shape.consumers(),
            };
            let sent: Vec<Outlet> = GrowHook {
                growth: Arc::clone(self),
                to_task: ob.to_task,
                to_input: ob.to_input,
            }
            .open(consumers, epoch);
            let hook = self.grows(ob.to_task).then(|| GrowHook {
                growth: Arc::clone(self),
                to_task: ob.to_task,
                to_input: ob.to_input,
            });
            let route = shape.build(sent, hook);
            let ports = outlets.entry(ob.from.0).or_default();
            if ports.len() <= ob.from.1 {
                ports.resize_with(ob.from.1 + 1, Vec::new);
            }
            ports[ob.from.1].push(route);
        }
        let ctx = self.setup.ctx.for_instance(j, to);
        let mut links = Vec::with_capacity(g.nodes.len());
        let mut counters = Vec::with_capacity(g.nodes.len());
        for (i, (node, name, factory)) in g.nodes.iter().enumerate() {
            let mut op = factory(&ctx).map_err(TaskFailure::from)?;
            let params = template
                .links
                .get(i)
                .map(|l| l.params.clone())
                .unwrap_or_default();
            let changes: Vec<(&str, &str)> = params
                .iter()
                .map(|(p, v)| (p.as_str(), v.as_str()))
                .collect();
            if !changes.is_empty() {
                op.set_params(&changes).map_err(|e| {
                    internal(name, &format!("an instance added while running refused the params the others have: {e}"))
                })?;
            }
            let rescaler = (i == 0).then(|| {
                let (factory, ctx) = (Arc::clone(factory), ctx.clone());
                Rescaler {
                    instance: j,
                    slots: to,
                    active: template.owners,
                    mates: Vec::new(),
                    inbox: self.inbox(name, j),
                    patience: None,
                    early: Vec::new(),
                    rebuild: Box::new(move || factory(&ctx)),
                    applied: params.clone(),
                    full_next: false,
                    abort: Arc::clone(&self.abort),
                    grows: Some(Arc::clone(self)),
                }
            });
            let c = self.setup.counters[node.0].grow(j);
            counters.push((name.clone(), Arc::clone(&c)));
            links.push(Link {
                index: node.0,
                instance: j,
                parallelism: to,
                name: name.clone(),
                op,
                outlets: outlets.remove(node).unwrap_or_default(),
                counters: c,
                origins_after: false,
                live_at: None,
                rescaler,
                spreader: None,
                params,
            });
        }
        let name = format!("{} #{j}", g.name);
        let (checkpointing, commands) = match &self.setup.checkpoint {
            Some((dir, jobs, events)) => {
                let (tx, rx) = crossbeam_channel::unbounded();
                (
                    Some(TaskCheckpointing {
                        task: id,
                        dir: dir.clone(),
                        commands: rx,
                        jobs: jobs.clone(),
                        events: events.clone(),
                    }),
                    Some(tx),
                )
            }
            None => (None, None),
        };
        let task = OperatorTask {
            name,
            inlets,
            chain: Chain::new(links, self.control.clone()),
            checkpointing,
            idle: false,
            stage: None,
            last_checkpoint: None,
            growth: Some(GrowPart {
                ctx: Arc::clone(self),
                at,
                start: Some((epoch, to, watermark)),
                watermark,
            }),
        };
        Ok((task, commands, counters))
    }
}

fn internal(operator: &str, message: &str) -> OperatorError {
    OperatorError::internal(operator, message.to_string())
}

/// The tasks of `topology` that can grow, and for the control plane, per rescalable operator,
/// whether it can. `refused`: why none can in this run (a cluster's, or one that split tasks
/// while an earlier run ran).
pub(crate) fn growable_tasks(
    graph: &LogicalGraph<Bound>,
    topology: &Topology,
    refused: Option<&str>,
) -> (BTreeMap<usize, Growable>, BTreeMap<String, Growing>) {
    let mut tasks = BTreeMap::new();
    let mut said = BTreeMap::new();
    for t in &topology.tasks {
        let Some(head) = t.rescalable_head(graph) else {
            continue;
        };
        let head = graph.node(head).name().to_string();
        let why = match refused {
            Some(why) => Err(why.to_string()),
            None => growable(graph, topology, t.task),
        };
        if let Err(why) = why {
            said.insert(head, Growing::No(why));
            continue;
        }
        let nodes: Vec<(NodeId, String, OperatorFactory)> = t
            .operators
            .iter()
            .filter_map(|n| match &graph.node(*n).bound {
                Bound::Operator(f) => Some((*n, graph.node(*n).name().to_string(), Arc::clone(f))),
                Bound::Source(_) => None,
            })
            .collect();
        let operators = nodes.iter().map(|(_, n, _)| n.clone()).collect();
        said.insert(head.clone(), Growing::Yes { operators });
        tasks.insert(
            t.task,
            Growable {
                name: t.name.clone(),
                head,
                nodes,
                routes: t
                    .instances
                    .first()
                    .map(|i| i.routes.clone())
                    .unwrap_or_default(),
                instances: t.parallelism,
            },
        );
    }
    (tasks, said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_graph::{PhysicalPlan, PlanOptions};
    use anduin_registry::BuiltinCatalog;

    /// Generated events counted per sensor in a keyed window, then `after` (flow operators
    /// reading the window's `counts`).
    fn query(after: &str) -> String {
        format!(
            r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param count = 10
  param event_time = "ts"
  output name = "events", type = "Event"
}}
operator name = "w", type = "window" {{
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}}
{after}
"#
        )
    }

    fn topology(query: &str) -> (Topology, LogicalGraph<Bound>) {
        let spec = anduin_spec::parse_flow(query).expect("the query parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
        let options = PlanOptions {
            chaining: true,
            default_parallelism: 2,
            max_parallelism: Some(2),
        };
        let plan = PhysicalPlan::plan(&graph, options).expect("the graph plans");
        let topology = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
        (topology, graph)
    }

    /// Whether the task headed by the window can grow (with which operators), and why not.
    fn window_grows(after: &str) -> Result<Vec<String>, String> {
        let (topology, graph) = topology(&query(after));
        let (_, said) = growable_tasks(&graph, &topology, None);
        match said.get("w") {
            Some(Growing::Yes { operators }) => Ok(operators.clone()),
            Some(Growing::No(why)) => Err(why.clone()),
            None => Err("not rescalable".into()),
        }
    }

    #[test]
    fn a_keyed_window_grows_embedded_and_not_on_a_cluster() {
        let map = r#"
operator name = "m", type = "map" {
  input name = "counts"
  param columns = "sensor, n * 2 AS twice"
  output name = "twice"
}
operator name = "out", type = "writer" {
  input name = "twice"
  param path = "out.csv"
}"#;
        // The map runs as a task of its own (a rescalable task fuses nothing after it).
        assert_eq!(window_grows(map), Ok(vec!["w".to_string()]));
        // Nothing grows where the run cannot (a cluster's).
        let (topology, graph) = topology(&query(map));
        let (tasks, said) = growable_tasks(&graph, &topology, Some("on a cluster"));
        assert!(tasks.is_empty());
        assert_eq!(said.get("w"), Some(&Growing::No("on a cluster".into())));
    }

    #[test]
    fn the_instances_a_rescale_adds_are_numbered_once_whoever_asks_first() {
        let numbers = Numbers {
            tasks: BTreeMap::from([(1, ("w".to_string(), vec!["w".to_string()]))]),
            inner: Mutex::new(Reserved {
                instances: BTreeMap::from([(1, 2)]),
                ..Reserved::default()
            }),
        };
        // The coordinator injects change 3 (w to 4); instance 0 of w's task asks again.
        let added = numbers.reserve(3, "w", 4);
        assert_eq!(added, [(2, GROWN_IDS), (3, GROWN_IDS + 1)]);
        assert_eq!(numbers.reserve(3, "w", 4), added);
        // Down to 1, then up to 3: the 4 instances run still; nothing is added.
        assert!(numbers.reserve(4, "w", 1).is_empty());
        assert!(numbers.reserve(5, "w", 3).is_empty());
        // Beyond them: numbered after every number given so far.
        assert_eq!(numbers.reserve(6, "w", 5), [(4, GROWN_IDS + 2)]);
        // An operator that does not head a task that grows adds nothing.
        assert!(numbers.reserve(7, "gen", 9).is_empty());
        assert_eq!(numbers.chain_of("w"), ["w"]);
    }
}
