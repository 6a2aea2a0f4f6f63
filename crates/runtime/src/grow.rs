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
//! On a cluster ([`GrowNet`]) every process grows its copy of the run's topology alike
//! ([`Topology::grow`]: numbers, workers and channels from the rescale alone, in barrier
//! order): the coordinator as it injects the barrier, each executor at the first of its
//! tasks the barrier reaches that feeds, runs or reads a task that grows. A new instance runs
//! on a worker that runs the task or a task it feeds ([`Topology::grow`]), built by the
//! task's lowest instance there, or on a worker without one by the first instance of a task
//! it feeds to align the barrier (after every instance of the task has passed it on). Such a
//! builder has no chain of the task to copy: every process keeps what a new instance copies
//! from the barriers that reach it ([`Numbers::apply`]: each operator's params as changed so
//! far, how many instances of each consumer own key groups), and shapes it from that and the
//! topology ([`Placed::template`]); where the task's own instance builds, the two must agree.
//! Such an instance starts at the lowest event time: the state it takes carries the givers'
//! event time, and its producers send their last watermark on its channels before any row.
//! A channel between two workers gets its network ends (the producer's bridge starts at once,
//! the listener holds a connection that comes before its consumer is built), and key groups
//! go to an instance on another worker over the network, as between planned ones (into an
//! inbox opened as they come when the instance is not built yet: [`Growth::inbox_for`]).
//!
//! A scale-down below the instances added ([`Numbers::retired`]) retires those beyond its
//! owners and the instances the run started with: each producer sends them its barrier, then
//! ends their channels ([`Growth::kept`]); each hands its key groups away at that barrier as
//! any instance that loses them does, passes it on, and ends with its input
//! ([`Growth::retires`]); the checkpoint coordinator stops counting them after that barrier,
//! and their inboxes go, so that a later rescale beyond starts new instances in their places.
//! On a cluster every process retires them from its topology alike ([`Topology::retire`]):
//! a later instance takes a retired one's index, never its number, which names its channels
//! in their handshakes; a part that ran only instances added ends once they all retired
//! ([`Growth::told`]), and its worker is free for another.
//!
//! Not here: a task whose chain holds a sink or a second stateful operator, that is fed other than by key, that
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

use crate::chain::{Chain, Link, LinkTemplate, Template};
use crate::channel::{channel, Outlet, Route, RouteShape};
use crate::control::{Control, Growing};
use crate::error::TaskFailure;
use crate::events::Events;
use crate::instantiate::{ReadyTask, Task};
use crate::net::{edge_name, NetReach, StandbyEnd};
use crate::protocol::{Command, Event, WriteJob};
use crate::rescale::{rescaled_to, Handoff, Mate, Rescaler, PARALLELISM};
use crate::spawn::{spawn_one, Running};
use crate::stats::{Counters, NodeCounters};
use crate::task::{Inlet, OperatorTask, TaskCheckpointing};
use crate::topology::{
    Channel, ChannelId, Exchange, Grown, InstanceRef, Outbound, Topology, WorkerId,
};

/// Why no task grows once a task of the run was split while it runs: a rollback would
/// restart it split, and could not grow it again ([`AFTER_A_SPLIT`]).
pub(crate) const SPLIT_WHILE_RUNNING: &str = "a task of the query was split while it runs (`pipeline = \"split\"`); growing beyond --max-parallelism after a split is not supported yet (a run that resumes split could not grow it again): start it with a larger --max-parallelism";

/// Why a run resumed after a live split does not grow its tasks.
pub(crate) const AFTER_A_SPLIT: &str = "the run it resumes split a task while running (`pipeline = \"split\"`); growing a task after a split is not supported yet (start it with a larger --max-parallelism)";

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
    /// Per operator (as `nodes`), how many outputs it has.
    pub ports: Vec<usize>,
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
    /// A cluster executor's: the instances run elsewhere too.
    pub net: Option<GrowNet>,
}

/// A cluster executor's part in growth: where it runs, how it reaches the other processes,
/// and the run's topology as placed, which every process grows alike
/// ([`Topology::grow`]): the coordinator as it injects a rescale, each executor as the
/// rescale's barrier reaches its first task that feeds, runs or reads a task that grows.
pub(crate) struct GrowNet {
    pub reach: NetReach,
    pub here: WorkerId,
    pub topology: Topology,
    /// Per plan channel, the type of its rows (checked as they arrive from the network).
    pub schemas: HashMap<usize, arrow::datatypes::SchemaRef>,
    /// Per task of the topology, the name of its first operator (a route to it switches the
    /// instances it sends to when a barrier rescales that operator).
    pub heads: Vec<String>,
    /// The params of the growable tasks' operators that the checkpoint the run restored
    /// from had changed, by operator.
    pub params: BTreeMap<String, BTreeMap<String, String>>,
}

/// What every task of an embedded run shares to start instances beyond those planned.
pub(crate) struct Growth {
    setup: GrowthSetup,
    events: Events,
    abort: Arc<AtomicBool>,
    control: Option<Arc<Control>>,
    numbers: Arc<Numbers>,
    inner: Mutex<Registry>,
    /// A cluster's: the rescales whose instances this process has built, held while one is
    /// built (the first reader to align a barrier builds; the others wait and find it done).
    built: Mutex<std::collections::BTreeSet<u64>>,
    /// A cluster's part that runs none of the planned instances: the run lasts until the
    /// coordinator has told it the query's last barrier ([`Growth::told`]).
    awaiting: Mutex<bool>,
    more: std::sync::Condvar,
}

/// The numbers of the instances added: what the checkpoint coordinator shares with the tasks
/// (it holds nothing that keeps the run's channels open).
pub(crate) struct Numbers {
    /// Per growable task, its head and its operators (head first).
    tasks: BTreeMap<usize, (String, Vec<String>)>,
    /// Per growable task, the instances the run started with: those never retire.
    planned: BTreeMap<usize, usize>,
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
    /// The number of each instance added that runs, by task and instance.
    ids: BTreeMap<(usize, usize), usize>,
    /// Per scale-down (the change's number) that retires instances added while running:
    /// those instances and their numbers.
    retired: BTreeMap<u64, Vec<(usize, usize)>>,
    /// A cluster's: the run's topology as placed, grown by every rescale as it is reserved.
    placed: Option<Placed>,
}

/// A cluster's topology, grown by the rescales reserved so far, and what the barriers that
/// reached this process changed.
struct Placed {
    topology: Topology,
    /// Per rescale (the change's number) that added instances: what it added.
    grown: BTreeMap<u64, Grown>,
    /// Per task, the name of its first operator.
    heads: Vec<String>,
    /// Per task, the change that last rescaled it (its `active` in `topology` is that one's).
    rescaled: BTreeMap<usize, u64>,
    /// The params of the growable tasks' operators as changed so far, with the change that
    /// set each (0: the checkpoint restored), by operator and param.
    params: BTreeMap<String, BTreeMap<String, (u64, String)>>,
}

impl Placed {
    /// The instances rescale `seq` adds on `here` where nothing aligns its barrier, with
    /// their numbers (see [`Grown::alone_on`]).
    fn alone(&self, seq: u64, here: WorkerId) -> Vec<(usize, usize)> {
        let Some(grown) = self.grown.get(&seq) else {
            return Vec::new();
        };
        grown
            .alone_on(&self.topology, here)
            .into_iter()
            .filter_map(|a| self.topology.instance(a))
            .map(|i| (i.at.instance, i.id))
            .collect()
    }

    /// The instances rescale `seq` adds that instance `at` builds on `here`, with their
    /// numbers (see [`Grown::to_build`]).
    fn to_build(&self, seq: u64, at: InstanceRef, here: WorkerId) -> Vec<(usize, usize)> {
        let Some(grown) = self.grown.get(&seq) else {
            return Vec::new();
        };
        grown
            .to_build(&self.topology, at, here)
            .into_iter()
            .filter_map(|a| self.topology.instance(a))
            .map(|i| (i.at.instance, i.id))
            .collect()
    }

    /// Notes what `u` changes: the instances of the tasks it rescales that own key groups,
    /// or a param of an operator of a growable task (`operators`). Once per change, in any
    /// order: a change older than the last applied is not applied again.
    fn note(&mut self, u: &anduin_types::ControlUpdate, operators: &[&String]) {
        if u.param == PARALLELISM {
            let Ok(to) = u.value.trim().parse::<usize>() else {
                return;
            };
            for (task, head) in self.heads.iter().enumerate() {
                if *head != u.operator || self.rescaled.get(&task).is_some_and(|s| *s >= u.seq) {
                    continue;
                }
                self.rescaled.insert(task, u.seq);
                if let Some(t) = self.topology.tasks.get_mut(task) {
                    t.active = to.clamp(1, t.instances.len().max(1));
                }
            }
        } else if u.param != crate::pipelining::PIPELINE && operators.contains(&&u.operator) {
            let param = self
                .params
                .entry(u.operator.clone())
                .or_default()
                .entry(u.param.clone())
                .or_insert((0, u.value.clone()));
            if param.0 <= u.seq {
                *param = (u.seq, u.value.clone());
            }
        }
    }

    /// What an instance of `g` (task `task`) added by rescale `seq` copies, from the
    /// topology (its instance 0's routes, its consumers' instances that own key groups) and
    /// the params changed so far: what the chain of one of its instances would give
    /// ([`Chain::growth_template`]).
    fn template(&self, seq: u64, task: usize, g: &Growable) -> Result<Template, String> {
        let grown = self
            .grown
            .get(&seq)
            .ok_or("the topology has no growth for the rescale")?;
        let zero = self
            .topology
            .tasks
            .get(task)
            .and_then(|t| t.instances.first())
            .ok_or("the task has no instance 0")?;
        let mut links: Vec<LinkTemplate> = g
            .nodes
            .iter()
            .zip(&g.ports)
            .map(|((_, name, _), ports)| LinkTemplate {
                params: self
                    .params
                    .get(name)
                    .map(|ps| {
                        ps.iter()
                            .map(|(p, (_, v))| (p.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
                routes: vec![Vec::new(); *ports],
            })
            .collect();
        for r in &zero.routes {
            let link = g
                .nodes
                .iter()
                .position(|(n, _, _)| *n == r.from.0)
                .and_then(|l| links.get_mut(l))
                .ok_or("a route from outside the task's chain")?;
            let n = r.channels.len();
            let shape = match &r.exchange {
                Exchange::Gather | Exchange::Forward => RouteShape::One,
                Exchange::Broadcast => RouteShape::All(n),
                Exchange::RoundRobin => RouteShape::InTurn(n),
                Exchange::Range(ranges) => RouteShape::Ranged(ranges.clone(), n),
                Exchange::Hash { keys } => RouteShape::Hashed {
                    keys: keys.clone(),
                    consumers: n,
                    active: self
                        .topology
                        .tasks
                        .get(r.to_task)
                        .map_or(1, |t| t.active)
                        .clamp(1, n.max(1)),
                    consumer: self.heads.get(r.to_task).cloned().unwrap_or_default(),
                },
            };
            if link.routes.len() <= r.from.1 {
                link.routes.resize_with(r.from.1 + 1, Vec::new);
            }
            link.routes[r.from.1].push(shape);
        }
        Ok(Template {
            links,
            owners: grown.owners_before,
        })
    }

    /// Channel `id`, the workers of its two ends, and its name.
    fn channel(&self, id: ChannelId) -> Option<(Channel, (WorkerId, WorkerId), String)> {
        let c = *self.topology.channels.get(id.0)?;
        let name = |at| self.topology.instance(at).map_or("?", |i| i.name.as_str());
        let workers = (
            self.topology.worker_of(c.from),
            self.topology.worker_of(c.to),
        );
        let edge = edge_name(&c, name(c.from), name(c.to));
        Some((c, workers, edge))
    }
}

impl Numbers {
    /// The numbers of a run whose tasks `tasks` can grow; `placed`: a cluster's topology as
    /// placed (grown alike), with the name of each task's first operator and the params
    /// changed before the run started ([`GrowNet`]'s).
    pub(crate) fn new(tasks: &BTreeMap<usize, Growable>, placed: Option<Placing>) -> Self {
        Self {
            tasks: tasks
                .iter()
                .map(|(t, g)| {
                    let ops = g.nodes.iter().map(|(_, n, _)| n.clone()).collect();
                    (*t, (g.head.clone(), ops))
                })
                .collect(),
            planned: tasks.iter().map(|(t, g)| (*t, g.instances)).collect(),
            inner: Mutex::new(Reserved {
                instances: tasks.iter().map(|(t, g)| (*t, g.instances)).collect(),
                placed: placed.map(|(topology, heads, params)| Placed {
                    topology,
                    grown: BTreeMap::new(),
                    heads,
                    rescaled: BTreeMap::new(),
                    params: params
                        .into_iter()
                        .map(|(op, ps)| (op, ps.into_iter().map(|(p, v)| (p, (0, v))).collect()))
                        .collect(),
                }),
                ..Reserved::default()
            }),
        }
    }

    /// The numbers of a run whose only growable task is `task`, headed by `head`, with
    /// `instances` at the start.
    #[cfg(test)]
    pub(crate) fn for_tests(task: usize, head: &str, instances: usize) -> Self {
        Self {
            tasks: BTreeMap::from([(task, (head.to_string(), vec![head.to_string()]))]),
            planned: BTreeMap::from([(task, instances)]),
            inner: Mutex::new(Reserved {
                instances: BTreeMap::from([(task, instances)]),
                ..Reserved::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reserved> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves what every rescale `barrier` carries adds (see [`Numbers::reserve`]), and on
    /// a cluster notes every change it carries that a new instance copies: what each task
    /// that meets a barrier with changes does, in barrier order, so that the rescales number
    /// and place in the same order everywhere.
    pub(crate) fn apply(&self, barrier: &Barrier) {
        if barrier.control.is_empty() {
            return;
        }
        for u in barrier.control.iter().filter(|u| u.param == PARALLELISM) {
            if let Ok(to) = u.value.trim().parse() {
                self.reserve_onto(u.seq, &u.operator, to, &u.onto);
            }
        }
        let operators: Vec<&String> = self.tasks.values().flat_map(|(_, ops)| ops).collect();
        if let Some(placed) = self.lock().placed.as_mut() {
            for u in &barrier.control {
                placed.note(u, &operators);
            }
        }
    }

    /// The instances added while running that scale-down `seq` retires (instance, number):
    /// a scale-down below the instances added ends those beyond its owners (and beyond the
    /// instances the run started with) at its barrier — their producers end the channels to
    /// them after it, the checkpoints begun after it do not wait for them, and a later
    /// rescale beyond adds new ones, with new numbers.
    pub(crate) fn retired(&self, seq: u64) -> Vec<(usize, usize)> {
        self.lock().retired.get(&seq).cloned().unwrap_or_default()
    }

    /// Whether the instance added with number `id` runs (it has not retired).
    pub(crate) fn runs(&self, id: usize) -> bool {
        self.lock().ids.values().any(|i| *i == id)
    }

    /// How many instances task `task` runs now (those reserved included), if it can grow.
    pub(crate) fn instances_of(&self, task: usize) -> Option<usize> {
        self.lock().instances.get(&task).copied()
    }

    /// What the cluster's topology as grown so far says, when the run has one.
    fn placed<R>(&self, f: impl FnOnce(&Placed) -> R) -> Option<R> {
        self.lock().placed.as_ref().map(f)
    }

    /// The task headed by `head`, if it can grow, and its operators.
    pub(crate) fn task_of(&self, head: &str) -> Option<(usize, Vec<String>)> {
        self.tasks
            .iter()
            .find(|(_, (h, _))| h == head)
            .map(|(t, (_, ops))| (*t, ops.clone()))
    }

    /// The worker of the instance added with number `id` (a cluster's).
    pub(crate) fn worker_of(&self, id: usize) -> Option<WorkerId> {
        self.placed(|p| {
            p.topology
                .instances()
                .find(|i| i.id == id)
                .map(|i| i.worker)
        })
        .flatten()
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
    #[cfg(test)]
    pub(crate) fn reserve(&self, seq: u64, operator: &str, to: usize) -> Vec<(usize, usize)> {
        self.reserve_onto(seq, operator, to, &[])
    }

    /// [`Numbers::reserve`] of a rescale that may place on `onto` too, workers that ran
    /// nothing of the query ([`Topology::grow_onto`]).
    pub(crate) fn reserve_onto(
        &self,
        seq: u64,
        operator: &str,
        to: usize,
        onto: &[u32],
    ) -> Vec<(usize, usize)> {
        let Some((&task, _)) = self.tasks.iter().find(|(_, (h, _))| h == operator) else {
            return Vec::new();
        };
        let mut inner = self.lock();
        if let Some(done) = inner.by_change.get(&seq) {
            return done.clone();
        }
        let now = inner.instances.get(&task).copied().unwrap_or(0);
        // A scale-down retires the instances added beyond its owners (see
        // [`Numbers::retired`]).
        let keep = to.max(self.planned.get(&task).copied().unwrap_or(0));
        if keep < now {
            let retired: Vec<(usize, usize)> = (keep..now)
                .filter_map(|j| inner.ids.remove(&(task, j)).map(|id| (j, id)))
                .collect();
            inner.instances.insert(task, keep);
            inner.retired.insert(seq, retired);
            inner.by_change.insert(seq, Vec::new());
            if let Some(placed) = inner.placed.as_mut() {
                placed.topology.retire(task, keep);
            }
            return Vec::new();
        }
        let added: Vec<(usize, usize)> = (now..to.max(now))
            .map(|j| {
                let id = GROWN_IDS + inner.next_id;
                inner.next_id += 1;
                (j, id)
            })
            .collect();
        inner.instances.insert(task, now.max(to));
        inner.by_change.insert(seq, added.clone());
        for &(j, id) in &added {
            inner.ids.insert((task, j), id);
        }
        if let Some(placed) = inner.placed.as_mut() {
            match placed.topology.grow_onto(task, now.max(to), onto) {
                Ok(Some(grown)) => {
                    // Its instances that own key groups are this change's.
                    let last = placed.rescaled.entry(task).or_insert(seq);
                    *last = (*last).max(seq);
                    let ids: Vec<usize> = grown
                        .added
                        .iter()
                        .filter_map(|a| placed.topology.instance(*a).map(|i| i.id))
                        .collect();
                    if ids != added.iter().map(|(_, id)| *id).collect::<Vec<_>>() {
                        tracing::error!(operator, seq, ?ids, ?added, "the topology numbered the instances a rescale adds otherwise than the reservation (a bug)");
                    }
                    placed.grown.insert(seq, grown);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(operator, seq, error = %e, "the topology cannot add the instances a rescale adds");
                }
            }
        }
        added
    }
}

/// Per barrier of `barriers`, per growable task (`tasks`: its head and the instances the run
/// started with), the fewest instances a later one of them keeps: a scale-down retires those
/// beyond both its owners and the instances started with (see [`Growth::kept`]).
fn fewest_kept_after(
    barriers: &[Barrier],
    tasks: &BTreeMap<usize, (&str, usize)>,
) -> Vec<BTreeMap<usize, usize>> {
    let mut keeps = vec![BTreeMap::new(); barriers.len()];
    let mut fewest: BTreeMap<usize, usize> = BTreeMap::new();
    for (k, barrier) in barriers.iter().enumerate().rev() {
        keeps[k] = fewest.clone();
        for (&task, &(head, planned)) in tasks {
            if let Some(to) = rescaled_to(barrier, head) {
                let keep = to.max(planned);
                let f = fewest.entry(task).or_insert(keep);
                *f = (*f).min(keep);
            }
        }
    }
    keeps
}

/// A cluster's topology as placed, the name of each task's first operator, and the params
/// changed before the run started (see [`Numbers::new`]).
pub(crate) type Placing = (
    Topology,
    Vec<String>,
    BTreeMap<String, BTreeMap<String, String>>,
);

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
    /// The command channels of instances built alone ([`Growth::told`]): no instance here
    /// passes them its commits, and they must not see their coordinator gone.
    kept: Vec<Sender<Command>>,
    /// The numbers of the instances built alone here ([`Growth::told`]).
    built_alone: std::collections::BTreeSet<usize>,
    /// A part that ran only instances added has seen them all retire: it builds nothing
    /// more, and ends once they have (a later growth there starts another part).
    over: bool,
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
    /// The producer instance, and the index of the route among its routes in the topology
    /// (where a cluster's grown topology has the new channels).
    pub from: InstanceRef,
    pub route: usize,
}

impl GrowHook {
    /// Opens a channel from the producer to each of `instances` of its consumer, leaving the
    /// receiving ends of those in this process for them at barrier `epoch` (a cluster's
    /// consumer elsewhere gets the channel's network end, whose stream starts after `epoch`);
    /// the sending ends, in instance order.
    pub(crate) fn open(
        &self,
        instances: Range<usize>,
        epoch: Epoch,
    ) -> Result<Vec<Outlet>, String> {
        let capacity = self.growth.setup.capacity;
        let Some(net) = &self.growth.setup.net else {
            return Ok(instances
                .map(|j| {
                    let (outlet, rx) = channel(capacity);
                    let at = InstanceRef {
                        task: self.to_task,
                        instance: j,
                    };
                    self.growth
                        .deposit(at, epoch, Inlet::new(rx, self.to_input));
                    outlet
                })
                .collect());
        };
        let channels = self
            .growth
            .numbers
            .placed(|p| {
                let route = p
                    .topology
                    .instance(self.from)
                    .and_then(|i| i.routes.get(self.route))
                    .ok_or("the producer's route is not in the topology")?;
                instances
                    .clone()
                    .map(|j| {
                        route
                            .channels
                            .get(j)
                            .and_then(|c| p.channel(*c))
                            .ok_or("the grown topology lacks a channel to an instance added")
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .ok_or("the run has no topology to grow")?
            .map_err(str::to_string)?;
        let mut outlets = Vec::with_capacity(channels.len());
        for (c, (_, to), name) in channels {
            let (outlet, rx) = channel(capacity);
            if to == net.here {
                self.growth.deposit(c.to, epoch, Inlet::new(rx, c.to_input));
            } else {
                net.reach
                    .producer_end_now(&c, to, rx, (name, epoch.0))
                    .map_err(|e| e.to_string())?;
            }
            outlets.push(outlet);
        }
        Ok(outlets)
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
        let placed = setup
            .net
            .as_ref()
            .map(|n| (n.topology.clone(), n.heads.clone(), n.params.clone()));
        let numbers = Numbers::new(&setup.tasks, placed);
        Self {
            setup,
            events,
            abort,
            control,
            numbers: Arc::new(numbers),
            inner: Mutex::new(Registry::default()),
            built: Mutex::new(std::collections::BTreeSet::new()),
            awaiting: Mutex::new(false),
            more: std::sync::Condvar::new(),
        }
    }

    /// A cluster's part that runs none of the planned instances: it runs until told the
    /// query's last barrier, building the instances rescales place on it meanwhile.
    pub(crate) fn await_barriers(&self) {
        *self
            .awaiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    }

    /// The coordinator tells this process `barriers` it sent (every barrier with changes
    /// since the last told, in order; `last`: the query's last is among them): what they
    /// add is numbered and placed as everywhere, and the instances placed here where
    /// nothing aligns the barrier ([`crate::topology::Builder::Alone`]) are built and
    /// started, at the lowest event time (as where a reader builds them).
    ///
    /// A part that runs none of the planned instances ends once every instance it built has
    /// retired (a scale-down below them): it builds nothing after that, its threads end with
    /// their input, and a later growth onto its worker starts another part there.
    pub(crate) fn told(
        self: &Arc<Self>,
        barriers: &[Barrier],
        last: bool,
    ) -> Result<(), TaskFailure> {
        let result = self.build_told(barriers);
        let mut awaiting = self
            .awaiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let over = *awaiting && self.all_built_alone_retired();
        if over {
            tracing::info!("every instance this part ran was retired by a scale-down: the part ends once they have");
        }
        if last || result.is_err() || over {
            *awaiting = false;
        }
        drop(awaiting);
        self.more.notify_all();
        result
    }

    /// Whether this part built instances alone and every one of them has retired since
    /// (then it builds nothing more).
    fn all_built_alone_retired(&self) -> bool {
        let mut inner = self.lock();
        let all = !inner.built_alone.is_empty()
            && inner.built_alone.iter().all(|id| !self.numbers.runs(*id));
        inner.over |= all;
        inner.over
    }

    /// [`Growth::told`], whose failure fails the run (as the failure of the first instance it
    /// would have built).
    pub(crate) fn hear(self: &Arc<Self>, barriers: &[Barrier], last: bool) {
        let Err(cause) = self.told(barriers, last) else {
            return;
        };
        tracing::error!(error = %cause, "cannot build the instances a rescale placed on this part");
        let at = InstanceRef {
            task: self.setup.tasks.keys().next().copied().unwrap_or(0),
            instance: 0,
        };
        let who = (GROWN_IDS, at, "an instance added while running".to_string());
        match crate::spawn::failed(who, cause, &self.events, &self.abort) {
            Ok(running) => self.lock().running.push(running),
            Err(e) => tracing::error!(error = %e, "cannot start a thread to report it"),
        }
        self.more.notify_all();
    }

    fn build_told(self: &Arc<Self>, barriers: &[Barrier]) -> Result<(), TaskFailure> {
        let Some(net) = &self.setup.net else {
            return Ok(());
        };
        if self.lock().over {
            return Ok(());
        }
        // A part told the barriers sent so far at once (started for a later growth) builds
        // none of the instances a later one of them retires again.
        let heads: BTreeMap<usize, (&str, usize)> = self
            .setup
            .tasks
            .iter()
            .map(|(t, g)| (*t, (g.head.as_str(), g.instances)))
            .collect();
        let keeps = fewest_kept_after(barriers, &heads);
        for (k, barrier) in barriers.iter().enumerate() {
            self.apply(barrier);
            for (&task, g) in &self.setup.tasks {
                let Some(u) = barrier
                    .control
                    .iter()
                    .rev()
                    .find(|u| u.operator == g.head && u.param == PARALLELISM)
                else {
                    continue;
                };
                let Ok(to) = u.value.trim().parse::<usize>() else {
                    continue;
                };
                let mut built = self
                    .built
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if built.contains(&u.seq) {
                    continue;
                }
                let keep = keeps.get(k).and_then(|m| m.get(&task)).copied();
                let (added, template) = self
                    .numbers
                    .placed(|p| {
                        let mut added = p.alone(u.seq, net.here);
                        added.retain(|(j, _)| keep.is_none_or(|keep| *j < keep));
                        let template = (!added.is_empty()).then(|| p.template(u.seq, task, g));
                        (added, template)
                    })
                    .unwrap_or_default();
                let Some(template) = template else {
                    continue;
                };
                built.insert(u.seq);
                let template = template.map_err(|why| {
                    internal(
                        &g.head,
                        &format!("cannot shape the instances added while running: {why}"),
                    )
                })?;
                let start = (to, barrier.epoch, Watermark::MIN);
                let ids: Vec<usize> = added.iter().map(|(_, id)| *id).collect();
                let commands = self.start_all((task, g), added, start, &template)?;
                let mut inner = self.lock();
                inner.kept.extend(commands);
                inner.built_alone.extend(ids);
            }
        }
        Ok(())
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

    /// Numbers and places what the rescales `barrier` carries add (see [`Numbers::apply`]);
    /// the inboxes of the instances its scale-downs retire go (a later rescale adds new
    /// instances in their place, with inboxes of their own).
    pub(crate) fn apply(&self, barrier: &Barrier) {
        self.numbers.apply(barrier);
        for u in barrier.control.iter().filter(|u| u.param == PARALLELISM) {
            let retired = self.numbers.retired(u.seq);
            if retired.is_empty() {
                continue;
            }
            {
                let mut inner = self.lock();
                for (j, _) in &retired {
                    inner.added.remove(&(u.operator.clone(), *j));
                }
            }
            if let Some(net) = &self.setup.net {
                for (j, _) in &retired {
                    net.reach.close_handoffs(&u.operator, *j);
                }
            }
            if let (Some(control), Some((task, operators))) =
                (&self.control, self.numbers.task_of(&u.operator))
            {
                control.task_retired(task, &retired, &operators);
            }
        }
    }

    /// How many instances of task `task` are left once a scale-down to `to` owners has
    /// passed: the instances added beyond both retire (see [`Numbers::retired`]); `None`
    /// for a task that does not grow.
    pub(crate) fn kept(&self, task: usize, to: usize) -> Option<usize> {
        let planned = self.numbers.planned.get(&task).copied()?;
        Some(to.max(planned))
    }

    /// Whether instance `at` retires at `barrier` (a scale-down below it, see
    /// [`Growth::kept`]): it ends once its producers have ended their channels to it.
    pub(crate) fn retires(&self, at: InstanceRef, barrier: &Barrier) -> bool {
        let Some(head) = self.setup.tasks.get(&at.task).map(|g| &g.head) else {
            return false;
        };
        rescaled_to(barrier, head)
            .and_then(|to| self.kept(at.task, to))
            .is_some_and(|keep| at.instance >= keep)
    }

    /// Leaves the receiving end of a channel opened at barrier `epoch` for instance `at`.
    fn deposit(&self, at: InstanceRef, epoch: Epoch, inlet: Inlet) {
        self.lock()
            .inlets
            .entry((at, epoch))
            .or_default()
            .push(inlet);
    }

    /// The channels left for instance `at` at barrier `epoch`, and on a cluster, the network
    /// ends of those into it from instances that rescales `seqs` (that barrier's) added on
    /// other workers.
    pub(crate) fn take_inlets(&self, at: InstanceRef, epoch: Epoch, seqs: &[u64]) -> Vec<Inlet> {
        let mut inlets = self.lock().inlets.remove(&(at, epoch)).unwrap_or_default();
        if self.setup.net.is_some() {
            let channels = self
                .numbers
                .placed(|p| {
                    seqs.iter()
                        .filter_map(|s| p.grown.get(s))
                        .flat_map(|g| g.channels.iter().copied())
                        .filter(|c| p.topology.channels.get(c.0).is_some_and(|c| c.to == at))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            inlets.extend(self.network_inlets(at, epoch, &channels));
        }
        inlets
    }

    /// The network ends, into instance `at`, of those of `channels` whose producer runs on
    /// another worker, their streams starting after the barrier of `epoch`.
    fn network_inlets(&self, at: InstanceRef, epoch: Epoch, channels: &[ChannelId]) -> Vec<Inlet> {
        let Some(net) = &self.setup.net else {
            return Vec::new();
        };
        let found = self.numbers.placed(|p| {
            let id = p.topology.instance(at).map_or(usize::MAX, |i| i.id);
            let crossing: Vec<_> = channels
                .iter()
                .filter_map(|c| p.channel(*c))
                .filter(|(_, (from, _), _)| *from != net.here)
                .collect();
            (id, crossing)
        });
        let Some((id, crossing)) = found else {
            return Vec::new();
        };
        crossing
            .into_iter()
            .map(|(c, _, name)| {
                let (tx, rx) = crossbeam_channel::bounded(self.setup.capacity.max(1));
                let schema = net.schemas.get(&c.plan_channel).cloned();
                let standby = StandbyEnd {
                    notices: None,
                    from_copy: false,
                };
                net.reach
                    .consumer_end(&c, (id, tx), (name, schema), standby, epoch.0);
                Inlet::new(rx, c.to_input)
            })
            .collect()
    }

    /// Where instance `j` of `head` takes handoffs, for its instance `i` that hands it key
    /// groups: on a cluster, through the network when `j` runs on another worker.
    pub(crate) fn mate(&self, head: &str, i: usize, j: usize) -> Mate {
        if let Some(net) = &self.setup.net {
            let task = self
                .setup
                .tasks
                .iter()
                .find(|(_, g)| g.head == head)
                .map(|(t, _)| *t);
            let worker = task.and_then(|task| {
                self.numbers
                    .placed(|p| {
                        p.topology
                            .instance(InstanceRef { task, instance: j })
                            .map(|i| i.worker)
                    })
                    .flatten()
            });
            if let Some(w) = worker.filter(|w| *w != net.here) {
                return Mate::Elsewhere(net.reach.handoff_to(head, i, j, w));
            }
        }
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

    /// A cluster's: key groups for an instance added to this process while running that come
    /// before it is built wait in its inbox (the instances of its task elsewhere hand them
    /// as they align the barrier, maybe before any instance here does).
    pub(crate) fn open_inboxes_as_they_come(self: &Arc<Self>) {
        let Some(net) = &self.setup.net else {
            return;
        };
        let growth = Arc::downgrade(self);
        net.reach
            .open_inboxes_as_they_come(Arc::new(move |head: &str, j: usize| {
                growth.upgrade()?.inbox_for(head, j)
            }));
    }

    /// Where key groups for instance `j` of `head` go, when it is an instance added while
    /// running (built or to be built).
    fn inbox_for(&self, head: &str, j: usize) -> Option<Sender<Handoff>> {
        let g = self.setup.tasks.values().find(|g| g.head == head)?;
        if j < g.instances || j >= crate::control::MOST_INSTANCES {
            return None;
        }
        let mut inner = self.lock();
        let (tx, _) = inner.added.entry((head.to_string(), j)).or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            (tx, Some(rx))
        });
        Some(tx.clone())
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

    /// The threads of instances added since the last call, running or ended, to join; a
    /// part that awaits its barriers ([`Growth::await_barriers`]) waits for some, until told
    /// the last barrier or the run is aborted.
    pub(crate) fn take_running(&self) -> Vec<Running> {
        let mut awaiting = self
            .awaiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let running = std::mem::take(&mut self.lock().running);
            if !running.is_empty()
                || !*awaiting
                || self.abort.load(std::sync::atomic::Ordering::Relaxed)
            {
                return running;
            }
            // The abort flag is not notified: looked at now and then.
            awaiting = self
                .more
                .wait_timeout(awaiting, std::time::Duration::from_millis(200))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Instance `at` of its task has aligned `barrier`: when it is instance 0 of a growable
    /// task (on a cluster: the task's lowest instance on this worker, or where none runs,
    /// the first instance of a task it feeds) and the barrier rescales the task beyond its
    /// instances, it builds and starts the new ones (those placed here, on a cluster; see
    /// the module's doc). Returns the command channels of the new instances with
    /// checkpoints (their commits come through the instance that built them).
    pub(crate) fn grow(
        self: &Arc<Self>,
        (at, watermark): (InstanceRef, Watermark),
        barrier: &Barrier,
        chain: &Chain,
    ) -> Result<Vec<Sender<Command>>, TaskFailure> {
        let mut commands = Vec::new();
        for (&task, g) in &self.setup.tasks {
            let Some(to) = rescaled_to(barrier, &g.head) else {
                continue;
            };
            let (seq, onto) = barrier
                .control
                .iter()
                .rev()
                .find(|u| u.operator == g.head && u.param == PARALLELISM)
                .map_or((0, &[][..]), |u| (u.seq, &u.onto[..]));
            let Some(net) = &self.setup.net else {
                if at.task == task && at.instance == 0 {
                    let added = self.numbers.reserve_onto(seq, &g.head, to, onto);
                    if !added.is_empty() {
                        let template = chain.growth_template(barrier)?;
                        let start = (to, barrier.epoch, watermark);
                        commands.extend(self.start_all((task, g), added, start, &template)?);
                    }
                }
                continue;
            };
            self.numbers.reserve_onto(seq, &g.head, to, onto);
            // Held while they are built: another reader aligning the barrier here waits,
            // then finds them built (and the channels from them left for it).
            let mut built = self
                .built
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if built.contains(&seq) {
                continue;
            }
            let (added, template) = self
                .numbers
                .placed(|p| {
                    let added = p.to_build(seq, at, net.here);
                    let template = (!added.is_empty()).then(|| p.template(seq, task, g));
                    (added, template)
                })
                .unwrap_or_default();
            let Some(template) = template else {
                continue;
            };
            built.insert(seq);
            let template = template.map_err(|why| {
                internal(
                    &g.head,
                    &format!("cannot shape the instances added while running: {why}"),
                )
            })?;
            // Its own instance builds them: what its chain has is what the barriers said.
            let watermark = if at.task == task {
                let own = chain.growth_template(barrier)?;
                if own != template {
                    return Err(internal(&g.head, &format!("the instances added while running would be shaped otherwise than the task's own (a bug): {own:?} against {template:?}")).into());
                }
                watermark
            } else {
                Watermark::MIN
            };
            let start = (to, barrier.epoch, watermark);
            commands.extend(self.start_all((task, g), added, start, &template)?);
        }
        Ok(commands)
    }

    /// Builds and starts instances `added` (instance, number) of task `task` (`g`), added at
    /// barrier `epoch` that rescales it to `to`, at event time `watermark`, shaped as
    /// `template`; their command channels.
    fn start_all(
        self: &Arc<Self>,
        (task, g): (usize, &Growable),
        added: Vec<(usize, usize)>,
        (to, epoch, watermark): (usize, Epoch, Watermark),
        template: &Template,
    ) -> Result<Vec<Sender<Command>>, TaskFailure> {
        let mut commands = Vec::new();
        for (j, id) in added {
            let (built, tx, counters) =
                self.build(g, (task, j, id), (to, epoch, watermark), template)?;
            commands.extend(tx);
            let name = built.name.clone();
            let ready = ReadyTask {
                id,
                at: InstanceRef { task, instance: j },
                name: name.clone(),
                replica: false,
                lost: None,
                task: Task::Operator(built),
            };
            tracing::info!(operator = %g.head, epoch = epoch.0, instance = j, task = id, name = %name, "started an instance beyond those the query started with");
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
                let worker = self.setup.net.as_ref().map_or(WorkerId::LOCAL, |n| n.here);
                control.task_grown(task, (j, id, worker), &operators, counters);
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
        template: &Template,
    ) -> Result<Built, TaskFailure> {
        let at = InstanceRef { task, instance: j };
        let mut inlets = self.take_inlets(at, epoch, &[]);
        if self.setup.net.is_some() {
            // Every channel into it is new: those from other workers come through the network.
            let into: Vec<ChannelId> = self
                .numbers
                .placed(|p| {
                    p.topology
                        .instance(at)
                        .map(|i| i.inlets.iter().map(|i| i.channel).collect())
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            inlets.extend(self.network_inlets(at, epoch, &into));
        }
        let mut outlets: BTreeMap<NodeId, Vec<Vec<Route>>> = BTreeMap::new();
        // The k-th route of a node's port is the k-th outbound route from it, in plan order.
        let mut seen: BTreeMap<(NodeId, usize), usize> = BTreeMap::new();
        for (route, ob) in g.routes.iter().enumerate() {
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
            let hook = GrowHook {
                growth: Arc::clone(self),
                to_task: ob.to_task,
                to_input: ob.to_input,
                from: at,
                route,
            };
            let sent: Vec<Outlet> = hook.open(consumers, epoch).map_err(|why| {
                internal(
                    &g.head,
                    &format!(
                        "cannot open the channels of instance {j}, added while running: {why}"
                    ),
                )
            })?;
            let hook = self.grows(ob.to_task).then_some(hook);
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
                if let (Some(net), Mate::Here(tx)) = (&self.setup.net, self.mate(name, j, j)) {
                    // Instances on other workers hand it key groups through the network.
                    net.reach.expect_handoffs(name, j, tx);
                }
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

/// Per task of `topology`, the name of its first node (what a route to it calls its
/// consumer, [`crate::channel::HashRoute`]).
pub(crate) fn task_heads(graph: &LogicalGraph<Bound>, topology: &Topology) -> Vec<String> {
    topology
        .tasks
        .iter()
        .map(|t| {
            t.nodes()
                .next()
                .map(|n| graph.node(n).name().to_string())
                .unwrap_or_default()
        })
        .collect()
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
        let ports = nodes
            .iter()
            .map(|(n, _, _)| graph.node(*n).outputs.len())
            .collect();
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
                ports,
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

    /// The window's counts doubled by a map (a task of its own: a rescalable task fuses
    /// nothing after it), written.
    const MAPPED: &str = r#"
operator name = "m", type = "map" {
  input name = "counts"
  param columns = "sensor, n * 2 AS twice"
  output name = "twice"
}
operator name = "out", type = "writer" {
  input name = "twice"
  param path = "out.csv"
}"#;

    #[test]
    fn a_keyed_window_grows_embedded_and_not_on_a_cluster() {
        let map = MAPPED;
        // The map runs as a task of its own (a rescalable task fuses nothing after it).
        assert_eq!(window_grows(map), Ok(vec!["w".to_string()]));
        // Nothing grows where the run cannot (a cluster's).
        let (topology, graph) = topology(&query(map));
        let (tasks, said) = growable_tasks(&graph, &topology, Some("on a cluster"));
        assert!(tasks.is_empty());
        assert_eq!(said.get("w"), Some(&Growing::No("on a cluster".into())));
    }

    /// A barrier of `epoch` carrying `changes` (change number, operator, param, value).
    fn carrying(epoch: u64, changes: &[(u64, &str, &str, &str)]) -> Barrier {
        Barrier {
            epoch: Epoch(epoch),
            kind: anduin_types::BarrierKind::Control,
            control: changes
                .iter()
                .map(
                    |(seq, operator, param, value)| anduin_types::ControlUpdate {
                        seq: *seq,
                        operator: operator.to_string(),
                        param: param.to_string(),
                        value: value.to_string(),
                        onto: Vec::new(),
                    },
                )
                .collect(),
        }
    }

    #[test]
    fn a_process_shapes_an_instance_added_from_the_changes_its_barriers_brought_in_any_order() {
        let map = MAPPED;
        let (mut placed, graph) = topology(&query(map));
        placed.spread(2);
        let (tasks, _) = growable_tasks(&graph, &placed, None);
        let (&w, g) = tasks.iter().next().expect("the window's task grows");
        let restored = BTreeMap::from([(
            "w".to_string(),
            BTreeMap::from([("allowed_lateness".to_string(), "5s".to_string())]),
        )]);
        let heads = task_heads(&graph, &placed);
        let numbers = Numbers::new(&tasks, Some((placed, heads, restored)));
        // Change 2 (a later barrier) reaches this process before change 1 does, from
        // another task: the later value stays. A param of an operator that does not grow,
        // and a split, are not noted.
        numbers.apply(&carrying(
            5,
            &[(2, "w", "allowed_lateness", "1s"), (2, "gen", "rate", "10")],
        ));
        numbers.apply(&carrying(4, &[(1, "w", "allowed_lateness", "3s")]));
        numbers.apply(&carrying(5, &[(2, "w", "allowed_lateness", "1s")]));
        numbers.apply(&carrying(6, &[(3, "w", "pipeline", "split")]));
        // Down to 1 (change 4), then up to 4 (change 5) adds two instances.
        numbers.apply(&carrying(7, &[(4, "w", PARALLELISM, "1")]));
        numbers.apply(&carrying(8, &[(5, "w", PARALLELISM, "4")]));
        let template = numbers
            .placed(|p| p.template(5, w, g))
            .expect("a cluster's")
            .expect("shaped");
        assert_eq!(template.owners, 1, "the owners before the growth");
        let params: Vec<&BTreeMap<String, String>> =
            template.links.iter().map(|l| &l.params).collect();
        let want = BTreeMap::from([("allowed_lateness".to_string(), "1s".to_string())]);
        assert_eq!(params, [&want]);
        // Its route to the map reaches the map's instances, as instance 0's does.
        let readers = numbers
            .placed(|p| {
                let m = p.topology.readers_of(w).into_iter().next();
                m.and_then(|m| p.topology.tasks.get(m))
                    .map(|t| t.parallelism)
            })
            .flatten()
            .expect("the window feeds the map");
        let routes = &template.links[0].routes;
        assert_eq!(routes.len(), 1, "the window has one output");
        let consumers: Vec<usize> = routes[0].iter().map(RouteShape::consumers).collect();
        assert_eq!(consumers, [readers]);
        // No template for a change that added nothing.
        assert!(numbers
            .placed(|p| p.template(4, w, g))
            .expect("a cluster's")
            .is_err());
    }

    #[test]
    fn a_part_told_every_barrier_at_once_builds_only_the_instances_no_later_one_retires() {
        // Task 1 (`w`) started with 2: up to 4 (epoch 3), down to 1 (epoch 4: keeps 2), up
        // to 5 (epoch 5), down to 4 (epoch 6).
        let told = [
            carrying(3, &[(1, "w", PARALLELISM, "4")]),
            carrying(4, &[(2, "w", PARALLELISM, "1")]),
            carrying(5, &[(3, "w", PARALLELISM, "5"), (4, "m", "x", "1")]),
            carrying(6, &[(5, "w", PARALLELISM, "4")]),
            carrying(7, &[(6, "m", "x", "2")]),
        ];
        let tasks = BTreeMap::from([(1, ("w", 2))]);
        let keeps = fewest_kept_after(&told, &tasks);
        let of = |k: usize| keeps[k].get(&1).copied();
        // Epoch 3's instances 2 and 3 retire at epoch 4; epoch 5's instance 4 at epoch 6.
        assert_eq!(
            [of(0), of(1), of(2), of(3), of(4)],
            [Some(2), Some(4), Some(4), None, None]
        );
    }

    #[test]
    fn the_instances_a_rescale_adds_are_numbered_once_whoever_asks_first() {
        // `w`'s task (task 1) starts with 2 instances.
        let numbers = Numbers::for_tests(1, "w", 2);
        // The coordinator injects change 3 (w to 4); instance 0 of w's task asks again.
        let added = numbers.reserve(3, "w", 4);
        assert_eq!(added, [(2, GROWN_IDS), (3, GROWN_IDS + 1)]);
        assert_eq!(numbers.reserve(3, "w", 4), added);
        assert_eq!(numbers.instances_of(1), Some(4));
        // Down to 3: the last one added retires, the others run on.
        assert!(numbers.reserve(4, "w", 3).is_empty());
        assert_eq!(numbers.retired(4), [(3, GROWN_IDS + 1)]);
        assert!(numbers.reserve(4, "w", 3).is_empty(), "once");
        assert_eq!(numbers.instances_of(1), Some(3));
        // Down to 1: the planned instances stay, the rest retires.
        assert!(numbers.reserve(5, "w", 1).is_empty());
        assert_eq!(numbers.retired(5), [(2, GROWN_IDS)]);
        assert_eq!(numbers.instances_of(1), Some(2));
        // Beyond them again: new instances in their places, numbered after every number given
        // so far.
        assert_eq!(
            numbers.reserve(6, "w", 4),
            [(2, GROWN_IDS + 2), (3, GROWN_IDS + 3)]
        );
        assert!(numbers.retired(6).is_empty());
        // An operator that does not head a task that grows adds nothing.
        assert!(numbers.reserve(7, "gen", 9).is_empty());
        assert_eq!(numbers.chain_of("w"), ["w"]);
    }
}
