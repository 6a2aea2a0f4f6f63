//! The topology of a run: every instance of every task, the channels between instances, and
//! where each instance runs. A pure function of the physical plan (and the logical graph it
//! was made from): no thread, file or channel is created here, so that the topology can be
//! inspected, tested and, in later issues, cut across processes before anything runs.
//!
//! The physical plan says which operators are fused into a task, how many instances run it,
//! and which task feeds which (a [`ChannelPlan`](anduin_graph::ChannelPlan) per stream
//! between two tasks). The topology expands that to instances: a producer instance sends on
//! one [`Channel`] to a consumer that runs as one instance ([`Exchange::Gather`]), or on one
//! channel per consumer instance, each row to the instance that owns its key
//! ([`Exchange::Hash`]). Each channel is an [`Outbound`] route of its producer instance and an
//! [`Inbound`] inlet of its consumer instance; barrier alignment waits on every inlet.
//!
//! # Example
//!
//! Two single-instance sources joined by a join of parallelism 2 give each source instance one
//! hashed route of two channels (one per join instance), and each join instance two inlets,
//! one per input port:
//!
//! ```text
//! alerts#0 ──hash(sensor)──> join#0 (port 0), join#1 (port 0)
//! readings#0 ─hash(sensor)─> join#0 (port 1), join#1 (port 1)
//! join#0, join#1 ──gather──> sink#0 (port 0, two senders)
//! ```

use anduin_graph::{LogicalGraph, Node, NodeId, Partitioning, PhysicalPlan};

pub(crate) mod grow;

pub use grow::least_loaded;

pub(crate) use grow::Grown;

/// The worker an instance runs on. In an embedded run every instance runs in this process
/// ([`WorkerId::LOCAL`]); a topology spread over workers gives each instance its own, and a
/// channel between two workers crosses the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub u32);

impl WorkerId {
    /// This process.
    pub const LOCAL: WorkerId = WorkerId(0);
}

/// One instance of one task: the task's index in the plan, and the instance's among the
/// task's instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceRef {
    /// The task's index in [`Topology::tasks`] (and in the physical plan).
    pub task: usize,
    /// The instance, `0..parallelism`.
    pub instance: usize,
}

/// Index of a channel in [`Topology::channels`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelId(pub usize);

/// Every instance of every task of a run, and the channels between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The tasks, in the plan's order (sources' tasks first).
    pub tasks: Vec<TaskTopology>,
    /// Every channel between two instances, in the order the plan's channels, their producer
    /// instances and then their consumer instances come.
    pub channels: Vec<Channel>,
    /// How many instances were added while the query runs so far, those retired since
    /// included: the next one added is numbered after them (a number is never used twice).
    pub grown: usize,
}

/// One task of the plan and its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskTopology {
    /// The task's index in the plan.
    pub task: usize,
    /// Its operators, upstream first, joined by ` -> `.
    pub name: String,
    /// The source at its head, if it has one: the source is polled by the task, not fed.
    pub source: Option<NodeId>,
    /// The operators chained in it, upstream first, after the source if it has one. Port 0
    /// of each feeds input 0 of the next by function call.
    pub operators: Vec<NodeId>,
    /// How many instances run it.
    pub parallelism: usize,
    /// How many of them own key groups (the first ones; see
    /// [`anduin_graph::TaskPlan::active`]).
    pub active: usize,
    /// Its instances, `instances[i].at.instance == i`.
    pub instances: Vec<TaskInstance>,
}

impl TaskTopology {
    /// The operator at its head when it can be rescaled while the query runs: it splits its
    /// input by key ([`anduin_graph::rescalable`]) and runs as several instances.
    pub fn rescalable_head<B>(&self, graph: &LogicalGraph<B>) -> Option<NodeId> {
        let head = *self.operators.first()?;
        (self.source.is_none()
            && self.parallelism > 1
            && anduin_graph::rescalable(graph.node(head)))
        .then_some(head)
    }

    /// The task's nodes, upstream first: the source if any, then the operators.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.source.iter().chain(&self.operators).copied()
    }
}

/// One instance of a task: one thread, one event loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInstance {
    /// Which task and which of its instances.
    pub at: InstanceRef,
    /// The instance's number in the whole run (`0..` over every instance of every task, in
    /// task order): names its thread, its events and its share of each checkpoint.
    pub id: usize,
    /// The task's name, with ` #i` when the task runs as several instances.
    pub name: String,
    /// Where it runs.
    pub worker: WorkerId,
    /// Where its operators' outputs go outside the task, in the plan's channel order.
    pub routes: Vec<Outbound>,
    /// The channels into its head, in the order of [`Topology::channels`].
    pub inlets: Vec<Inbound>,
}

impl TaskInstance {
    /// How many channels feed input `port` of the head: the upstream senders whose barriers
    /// alignment waits for on that port.
    pub fn senders(&self, port: usize) -> usize {
        self.inlets.iter().filter(|i| i.port == port).count()
    }
}

/// How the rows of one output reach the instances of the consuming task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// The consumer runs as one instance: everything goes to it.
    Gather,
    /// Each row goes to the consumer instance that owns its key group, computed from these
    /// columns (no column: every row to instance 0). Watermarks, barriers and the end go to
    /// every instance.
    Hash {
        /// The key columns, by index in the stream's schema.
        keys: Vec<usize>,
    },
    /// Everything to every instance of the consumer (a control stream).
    Broadcast,
    /// Everything to the consumer instance of the producer's own number (a chain split while
    /// the query ran: each instance feeds its own).
    Forward,
    /// Batches dealt to the consumer's instances in turn, from the first again after every
    /// barrier; watermarks, barriers and the end to every instance.
    RoundRobin,
    /// Each row to the consumer instance whose range holds its value of a column;
    /// watermarks, barriers and the end to every instance.
    Range(anduin_graph::ranges::Ranges),
}

/// One output of one operator of a task instance, to one input of another task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    /// The producing operator (in this instance's task) and its output port.
    pub from: (NodeId, usize),
    /// The consuming task.
    pub to_task: usize,
    /// The input port of the consuming task's head.
    pub to_input: usize,
    /// How rows are spread over the consumer's instances.
    pub exchange: Exchange,
    /// The channels, one per consumer instance in instance order ([`Exchange::Hash`]) or the
    /// one to instance 0 ([`Exchange::Gather`]).
    pub channels: Vec<ChannelId>,
}

/// One channel into a task instance's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inbound {
    /// The channel.
    pub channel: ChannelId,
    /// The input port of the head it feeds.
    pub port: usize,
    /// The instance that sends on it.
    pub from: InstanceRef,
}

/// A channel from one task instance to another: a bounded queue, when both run here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Its index in [`Topology::channels`].
    pub id: ChannelId,
    /// The plan's channel (task to task) it is an instance of.
    pub plan_channel: usize,
    /// The producing instance.
    pub from: InstanceRef,
    /// The consuming instance.
    pub to: InstanceRef,
    /// The numbers in the run of the producing and the consuming instance
    /// ([`TaskInstance::id`]): a channel's handshake names an instance added while running
    /// by it, since its index is taken again by an instance added after it retired.
    pub ids: (usize, usize),
    /// The input port of the consumer's head.
    pub to_input: usize,
}

impl Topology {
    /// The topology of `plan`, made from `graph`; `is_source` tells a source node (which heads
    /// its task and is polled) from an operator.
    pub fn new<B>(
        graph: &LogicalGraph<B>,
        plan: &PhysicalPlan,
        is_source: impl Fn(&Node<B>) -> bool,
    ) -> Self {
        let mut next_id = 0;
        let mut tasks: Vec<TaskTopology> = plan
            .tasks
            .iter()
            .map(|t| {
                let task = task_topology(graph, t, &is_source, next_id);
                next_id += t.parallelism;
                task
            })
            .collect();
        let mut channels = Vec::new();
        for c in &plan.channels {
            let consumers = tasks[c.to_task].parallelism;
            let exchange = match &c.partitioning {
                Partitioning::Gather => Exchange::Gather,
                Partitioning::Hash(keys) => Exchange::Hash { keys: keys.clone() },
                Partitioning::Broadcast => Exchange::Broadcast,
                Partitioning::Forward => Exchange::Forward,
                Partitioning::RoundRobin => Exchange::RoundRobin,
                Partitioning::Range(r) => Exchange::Range(r.clone()),
            };
            for producer in 0..tasks[c.from_task].parallelism {
                let receivers = match exchange {
                    Exchange::Gather => 0..consumers.min(1),
                    Exchange::Forward => producer..(producer + 1).min(consumers),
                    Exchange::Hash { .. }
                    | Exchange::Broadcast
                    | Exchange::RoundRobin
                    | Exchange::Range(_) => 0..consumers,
                };
                let from = InstanceRef {
                    task: c.from_task,
                    instance: producer,
                };
                let mut route = Outbound {
                    from: c.from,
                    to_task: c.to_task,
                    to_input: c.to_input,
                    exchange: exchange.clone(),
                    channels: Vec::with_capacity(receivers.len()),
                };
                for consumer in receivers {
                    let to = InstanceRef {
                        task: c.to_task,
                        instance: consumer,
                    };
                    let id = ChannelId(channels.len());
                    channels.push(Channel {
                        id,
                        plan_channel: c.id,
                        from,
                        to,
                        ids: (
                            tasks[c.from_task].instances[producer].id,
                            tasks[c.to_task].instances[consumer].id,
                        ),
                        to_input: c.to_input,
                    });
                    route.channels.push(id);
                    tasks[c.to_task].instances[consumer].inlets.push(Inbound {
                        channel: id,
                        port: c.to_input,
                        from,
                    });
                }
                tasks[c.from_task].instances[producer].routes.push(route);
            }
        }
        Topology {
            tasks,
            channels,
            grown: 0,
        }
    }

    /// Every task instance, task by task.
    pub fn instances(&self) -> impl Iterator<Item = &TaskInstance> {
        self.tasks.iter().flat_map(|t| &t.instances)
    }

    /// Per task, whether it is a *replica*: every output of it goes to a task whose head
    /// goes on when an input is lost (`survives(head)`: a stream selector), so that the run
    /// goes on when an instance of it fails. A source's task never is.
    pub fn replica_tasks(&self, survives: impl Fn(NodeId) -> bool) -> Vec<bool> {
        let head = |t: usize| {
            self.tasks
                .get(t)
                .filter(|t| t.source.is_none())
                .and_then(|t| t.operators.first().copied())
        };
        self.tasks
            .iter()
            .map(|t| {
                let mut routes = t.instances.iter().flat_map(|i| &i.routes).peekable();
                t.source.is_none()
                    && routes.peek().is_some()
                    && routes.all(|r| head(r.to_task).is_some_and(&survives))
            })
            .collect()
    }

    /// The replicas of each hot standby, in groups: the instances feeding one instance of a
    /// task whose head goes on when an input is lost (`survives(head)`: a stream selector).
    /// A cluster places each group on distinct workers.
    pub fn replica_groups(&self, survives: impl Fn(NodeId) -> bool) -> Vec<Vec<InstanceRef>> {
        let mut groups = Vec::new();
        for t in &self.tasks {
            let head = t.operators.first().copied();
            if t.source.is_some() || !head.is_some_and(&survives) {
                continue;
            }
            for i in &t.instances {
                let mut group: Vec<InstanceRef> = self
                    .channels
                    .iter()
                    .filter(|c| c.to == i.at)
                    .map(|c| c.from)
                    .collect();
                group.sort_by_key(|r| (r.task, r.instance));
                group.dedup();
                if group.len() > 1 {
                    groups.push(group);
                }
            }
        }
        groups
    }

    /// The task instance `at`, if the topology has it.
    pub fn instance(&self, at: InstanceRef) -> Option<&TaskInstance> {
        self.tasks.get(at.task)?.instances.get(at.instance)
    }

    /// Spreads the instances over `workers` workers, round-robin by their number in the run.
    pub fn spread(&mut self, workers: u32) {
        let workers = workers.max(1);
        for t in &mut self.tasks {
            for i in &mut t.instances {
                i.worker = WorkerId(u32::try_from(i.id).unwrap_or(u32::MAX) % workers);
            }
        }
    }

    /// Places every instance on the worker `worker_of` gives for its number in the run.
    pub fn assign(&mut self, worker_of: impl Fn(usize) -> WorkerId) {
        for t in &mut self.tasks {
            for i in &mut t.instances {
                i.worker = worker_of(i.id);
            }
        }
    }

    /// The worker of instance `at` ([`WorkerId::LOCAL`] for an instance the topology lacks).
    pub fn worker_of(&self, at: InstanceRef) -> WorkerId {
        self.instance(at).map_or(WorkerId::LOCAL, |i| i.worker)
    }

    /// Whether channel `c`'s producer and consumer run on different workers.
    pub fn crosses(&self, c: &Channel) -> bool {
        self.worker_of(c.from) != self.worker_of(c.to)
    }
}

/// Task `t` with its instances (numbered from `first_id`), without routes or inlets yet.
fn task_topology<B>(
    graph: &LogicalGraph<B>,
    t: &anduin_graph::TaskPlan,
    is_source: &impl Fn(&Node<B>) -> bool,
    first_id: usize,
) -> TaskTopology {
    let name = t
        .chain
        .iter()
        .map(|n| graph.node(*n).name())
        .collect::<Vec<_>>()
        .join(" -> ");
    let (source, operators) = match t.chain.split_first() {
        Some((head, rest)) if is_source(graph.node(*head)) => (Some(*head), rest.to_vec()),
        _ => (None, t.chain.clone()),
    };
    let instances = (0..t.parallelism)
        .map(|instance| TaskInstance {
            at: InstanceRef {
                task: t.id,
                instance,
            },
            id: first_id + instance,
            name: if t.parallelism > 1 {
                format!("{name} #{instance}")
            } else {
                name.clone()
            },
            worker: WorkerId::LOCAL,
            routes: Vec::new(),
            inlets: Vec::new(),
        })
        .collect();
    TaskTopology {
        task: t.id,
        name,
        source,
        operators,
        parallelism: t.parallelism,
        active: t.active,
        instances,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_graph::PlanOptions;
    use anduin_operator_api::Bound;
    use anduin_registry::BuiltinCatalog;

    /// Alerts joined with the readings of their sensor, shaped by a map, written out.
    const JOIN: &str = r#"
type name = "Alert" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "level", type = "string"
}
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "alertFile", type = "reader" {
  param parallelism = 1
  param path = "alerts.csv"
  param event_time = "ts"
  param watermark = "1s"
  output name = "alerts", type = "Alert"
}
operator name = "readingFile", type = "reader" {
  param parallelism = 1
  param path = "readings.csv"
  param event_time = "ts"
  param watermark = "1s"
  output name = "readings", type = "Reading"
}
operator name = "before", type = "join" {
  input name = "alerts"
  input name = "readings"
  param kind = "interval"
  param on = "alerts.sensor = readings.sensor"
  param left_time = "ts"
  param right_time = "ts"
  param lower = "-2s"
  param upper = "0s"
  output name = "pairs"
}
operator name = "shape", type = "map" {
  input name = "pairs"
  param columns = "ts, sensor, level, value"
  output name = "shaped"
}
operator name = "sink", type = "writer" {
  input name = "shaped"
  param path = "out.csv"
}
"#;

    /// Generated rows, filtered and mapped, discarded.
    const LINE: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low", type = "Event"
}
operator name = "doubled", type = "map" {
  input name = "low"
  param columns = "ts, sensor, value * 2 AS value"
  output name = "doubled"
}
operator name = "drop", type = "discard" {
  input name = "doubled"
}
"#;

    /// The topology of `query` planned with `options`, and its graph (to name nodes).
    fn topology(query: &str, options: PlanOptions) -> (Topology, LogicalGraph<Bound>) {
        let spec = anduin_spec::parse_flow(query).expect("the query parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
        let plan = PhysicalPlan::plan(&graph, options).expect("the graph plans");
        let topology = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
        (topology, graph)
    }

    fn names(graph: &LogicalGraph<Bound>, nodes: impl IntoIterator<Item = NodeId>) -> Vec<&str> {
        nodes.into_iter().map(|n| graph.node(n).name()).collect()
    }

    /// The task whose nodes begin with `first`.
    fn task<'a>(t: &'a Topology, graph: &LogicalGraph<Bound>, first: &str) -> &'a TaskTopology {
        t.tasks
            .iter()
            .find(|task| task.nodes().next().map(|n| graph.node(n).name()) == Some(first))
            .unwrap_or_else(|| panic!("a task begins with {first}"))
    }

    /// Two copies of a filter behind a stream selector (what hot standby rewrites into).
    const COPIES: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low1", type = "Event"
}
operator name = "low_copy", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low2", type = "Event"
}
operator name = "pick", type = "stream-selector" {
  input name = "low1"
  input name = "low2"
  output name = "low", type = "Event"
}
operator name = "drop", type = "discard" {
  input name = "low"
}
"#;

    #[test]
    fn the_copies_feeding_a_stream_selector_are_one_group_and_its_replicas() {
        let (t, graph) = topology(COPIES, PlanOptions::default());
        let survives = |n: NodeId| graph.node(n).survives_input_loss;
        let groups = t.replica_groups(survives);
        let [group] = groups.as_slice() else {
            panic!("one group: {groups:?}");
        };
        let group_names: Vec<&str> = group
            .iter()
            .map(|r| t.instance(*r).expect("an instance").name.as_str())
            .collect();
        assert_eq!(group_names, ["low", "low_copy"]);
        let replicas = t.replica_tasks(survives);
        for r in group {
            assert!(replicas[r.task], "a copy is a replica task");
        }
        assert_eq!(replicas.iter().filter(|r| **r).count(), 2);
        // Without a selector, no group.
        let (line, graph) = topology(LINE, PlanOptions::default());
        assert!(line
            .replica_groups(|n| graph.node(n).survives_input_loss)
            .is_empty());
    }

    #[test]
    fn chaining_puts_the_filter_and_the_map_in_the_sources_task() {
        let (t, graph) = topology(LINE, PlanOptions::default());
        assert_eq!(t.tasks.len(), 1);
        let task = &t.tasks[0];
        assert_eq!(task.source.map(|n| graph.node(n).name()), Some("events"));
        assert_eq!(
            names(&graph, task.operators.clone()),
            ["low", "doubled", "drop"]
        );
        assert_eq!(task.name, "events -> low -> doubled -> drop");
        assert_eq!(task.parallelism, 1);
        let [instance] = task.instances.as_slice() else {
            panic!("one instance: {task:?}");
        };
        assert_eq!(instance.name, task.name);
        assert_eq!(instance.worker, WorkerId::LOCAL);
        assert!(instance.routes.is_empty() && instance.inlets.is_empty());
        assert!(t.channels.is_empty());
    }

    #[test]
    fn without_chaining_each_operator_is_a_task_fed_by_one_gathering_channel() {
        let options = PlanOptions {
            chaining: false,
            default_parallelism: 1,
            max_parallelism: None,
        };
        let (t, graph) = topology(LINE, options);
        assert_eq!(t.tasks.len(), 4);
        assert_eq!(t.channels.len(), 3);
        for (i, task) in t.tasks.iter().enumerate() {
            assert_eq!(task.instances[0].id, i, "ids follow the tasks");
        }
        let low = task(&t, &graph, "low");
        assert_eq!(low.source, None);
        let inlets = &low.instances[0].inlets;
        assert_eq!(inlets.len(), 1);
        assert_eq!(inlets[0].port, 0);
        assert_eq!(
            t.tasks[inlets[0].from.task].source,
            task(&t, &graph, "events").source
        );
        let events = &task(&t, &graph, "events").instances[0];
        assert_eq!(events.routes.len(), 1);
        assert_eq!(events.routes[0].exchange, Exchange::Gather);
        assert_eq!(events.routes[0].to_task, low.task);
        assert_eq!(events.routes[0].channels, vec![inlets[0].channel]);
    }

    #[test]
    fn two_sources_joined_at_parallelism_two_hash_into_both_join_instances() {
        let options = PlanOptions {
            chaining: true,
            default_parallelism: 2,
            max_parallelism: None,
        };
        let (t, graph) = topology(JOIN, options);
        let join = task(&t, &graph, "before");
        assert_eq!(names(&graph, join.operators.clone()), ["before"]);
        assert_eq!(join.parallelism, 2);
        assert_eq!(join.instances[1].name, "before #1");
        for (source, port) in [("alertFile", 0), ("readingFile", 1)] {
            let task = task(&t, &graph, source);
            assert_eq!(task.parallelism, 1);
            let [route] = task.instances[0].routes.as_slice() else {
                panic!("one route out of {source}: {task:?}");
            };
            // `sensor` is column 1 of both inputs.
            assert_eq!(route.exchange, Exchange::Hash { keys: vec![1] });
            assert_eq!((route.to_task, route.to_input), (join.task, port));
            assert_eq!(route.channels.len(), 2, "one channel per join instance");
            for (instance, c) in route.channels.iter().enumerate() {
                let channel = &t.channels[c.0];
                assert_eq!(channel.id, *c);
                assert_eq!(channel.to.instance, instance);
                assert_eq!(channel.to_input, port);
            }
        }
        // The map runs as one instance: it ends the join's chain, fused with the sink.
        let shape = task(&t, &graph, "shape");
        assert_eq!(names(&graph, shape.operators.clone()), ["shape", "sink"]);
        for instance in &join.instances {
            assert_eq!(instance.inlets.len(), 2);
            assert_eq!((instance.senders(0), instance.senders(1)), (1, 1));
            let [route] = instance.routes.as_slice() else {
                panic!("one route out of {}", instance.name);
            };
            assert_eq!(graph.node(route.from.0).name(), "before");
            assert_eq!(
                (route.to_task, &route.exchange),
                (shape.task, &Exchange::Gather)
            );
            assert_eq!(route.channels.len(), 1);
        }
        let sink = &shape.instances[0];
        assert_eq!(
            sink.senders(0),
            2,
            "the map gathers from both join instances"
        );
        let mut senders: Vec<usize> = sink.inlets.iter().map(|i| i.from.instance).collect();
        senders.sort_unstable();
        assert_eq!(senders, [0, 1]);
        assert_eq!(
            t.instances().map(|i| i.id).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4],
            "two sources, two join instances, one map"
        );
        assert!(t.instances().all(|i| i.worker == WorkerId::LOCAL));
        for c in &t.channels {
            let consumer = t.instance(c.to).expect("the consumer exists");
            assert!(consumer
                .inlets
                .iter()
                .any(|i| i.channel == c.id && i.from == c.from));
        }
    }
}
