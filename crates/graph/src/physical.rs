//! The physical plan: operators fused into tasks, tasks connected by channels, each task run
//! as one or more parallel instances.
//!
//! A chain of operators runs in one task when each link is a one-to-one edge: the downstream
//! operator has a single input, the stream has a single consumer, the upstream operator has
//! a single output and ends its chain, and both run with the same parallelism. Anything else
//! is a channel between tasks. A channel into a parallel task is partitioned by the keys its
//! head operator splits its input by (rows with equal keys reach the same instance); a
//! channel into a single instance gathers from every instance of its producer.
//!
//! How many instances each operator runs as is not decided here: it is what the partitioning
//! rules make of the query ([`crate::partitioning`], the paper's pattern 4). Nor is which
//! operators ask to be a task of their own (`pipeline = "split"`): those are the stages the
//! pipelining rules place ([`crate::pipelining`], pattern 5), never fused with their
//! neighbours.

use crate::logical::{LogicalGraph, NodeId, StreamId};
use crate::partitioning::{self, PartitioningError};
use crate::pipelining::{self, PipeliningError};

/// Why a query could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Its instances: what the partitioning rules make of it.
    #[error(transparent)]
    Partitioning(#[from] PartitioningError),
    /// Its task boundaries: what the pipelining rules make of it.
    #[error(transparent)]
    Pipelining(#[from] PipeliningError),
    /// A pattern that spreads its partial matches over copies reads its input from several
    /// instances: each copy would read the input in an order of its own, and the copies hand
    /// partial matches over at points of one common order.
    #[error("operator \"{pattern}\" spreads its partial matches over copies (overflow_instances), which must all read its input in one order, but the input comes from {instances} instances of \"{producer}\": give \"{producer}\" `parallelism = 1` (or read the pattern's input through a `map` with `columns = \"*\"` and `parallelism = 1`)")]
    SpreadInput {
        /// The pattern (or one of its copies).
        pattern: String,
        /// The operator whose instances feed it.
        producer: String,
        /// How many instances of it run.
        instances: usize,
    },
    /// A sink that numbers its rows in their order of arrival (a NATS sink with exactly-once
    /// delivery: [`anduin_spec::OperatorDef::needs_one_ordered_input`]) reads an input whose
    /// interleaving changes from run to run: a run started again would give rows the numbers
    /// (the message ids) of others, dropping some as duplicates and writing others twice.
    #[error("operator \"{sink}\" (a NATS sink, exactly once) gives each row a message id from its place in the order the rows reach it, and a run started again must give them in the same order, but its input interleaves {why}, whose order changes from run to run: a restarted run would lose some rows as duplicates of others and write others twice. {fix}, or give it `param delivery = \"at-least-once\"` (a resumed run may then write rows twice)")]
    InterleavedInput {
        /// The sink.
        sink: String,
        /// What interleaves, as the query names it: `3 instances of "in"`, `the inputs of
        /// union "u"`, the copies a pattern spreads its partial matches over.
        why: String,
        /// What would not interleave.
        fix: String,
    },
    /// A sink that must read its rows in one order on every run fed by an operator whose
    /// rows depend on when rows arrive rather than on the rows: a run started again makes
    /// other rows, which would get the ids of those the interrupted run wrote and be dropped.
    #[error("operator \"{sink}\" (a NATS sink, exactly once) gives each row a message id from its place in the order the rows reach it, and a run started again must make the same rows, but {why}: a restarted run would make other rows under the ids of those written before, and the stream would drop them as duplicates. {fix}, or give the sink `param delivery = \"at-least-once\"` (a resumed run may then write rows twice)")]
    TimingDependentInput {
        /// The sink.
        sink: String,
        /// What depends on timing.
        why: String,
        /// What would not.
        fix: String,
    },
    /// An upsert sink reads, through operators that keep its rows as they are, a regular
    /// join run as several instances whose key is not determined by the row keys of its
    /// inputs: a row whose join key changes is retracted by the instance of its old key and
    /// added by that of its new one, which reach the sink in either order, and a `-U` the
    /// sink meets after its `+U` deletes the key.
    #[error("operator \"{sink}\" writes upserts by key, but its rows come from {instances} instances of the regular join \"{join}\", whose key ({}) is not one of the columns that identify the rows of its input \"{}\" (a value of an aggregate or any column that can change for a row): a row whose {} changes is retracted by one instance and added again by another, the two reach the sink in either order, and a retraction after the addition would delete the key. Write with mode = 'changelog' (a changelog folds right as a multiset whatever the order), or run the join as one instance (`--parallelism 1`, or `param parallelism = 1` on \"{join}\" in .flow)", .moving.key, .moving.input, .moving.column)]
    UpsertAfterMovingJoin {
        /// The upsert sink.
        sink: String,
        /// The join.
        join: String,
        /// Its instances.
        instances: usize,
        /// Its key and the input it moves rows of (boxed: the error stays small).
        moving: Box<MovingKey>,
    },
}

/// The key of a regular join that moves the rows of an updating input between its instances
/// ([`PlanError::UpsertAfterMovingJoin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovingKey {
    /// The join's key, as its `on` param writes it (unquoted).
    pub key: String,
    /// The input whose row key does not hold the join key.
    pub input: String,
    /// The first of its join key columns outside its row key.
    pub column: String,
}

impl PlanError {
    /// The operator the refusal is about, when it is one operator's (to point at it in the
    /// query file).
    pub fn operator(&self) -> Option<&str> {
        match self {
            PlanError::Partitioning(PartitioningError::TooMany { operator, .. })
            | PlanError::Pipelining(PipeliningError::NotPlaced { operator, .. })
            | PlanError::SpreadInput {
                pattern: operator, ..
            }
            | PlanError::InterleavedInput { sink: operator, .. }
            | PlanError::TimingDependentInput { sink: operator, .. }
            | PlanError::UpsertAfterMovingJoin { sink: operator, .. } => Some(operator),
            PlanError::Partitioning(PartitioningError::Rule(_))
            | PlanError::Pipelining(PipeliningError::Rule(_)) => None,
        }
    }
}

/// One task: a chain of operators run by one event loop per instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskPlan {
    /// Index in [`PhysicalPlan::tasks`].
    pub id: usize,
    /// The fused operators, upstream first. Only the head may have several inputs.
    pub chain: Vec<NodeId>,
    /// The channels into the head, in no particular order.
    pub inputs: Vec<usize>,
    /// How many instances run the task.
    pub parallelism: usize,
    /// How many of them own key groups (the first `active`): all of them, except for a keyed
    /// task given spare instances by [`PlanOptions::max_parallelism`], whose others wait idle
    /// for a live rescale to hand them key groups.
    pub active: usize,
}

/// How a channel's rows are spread over the consumer's instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partitioning {
    /// Every producer instance sends everything to the consumer's single instance.
    Gather,
    /// Each producer instance sends each row to the consumer instance that owns the row's key
    /// (these columns) by its key group.
    Hash(Vec<usize>),
    /// Each producer instance sends everything to every consumer instance (a control stream:
    /// every instance of the operator it drives sees every change).
    Broadcast,
    /// Each producer instance sends everything to the consumer instance of its own number (the
    /// two run as many instances): a chain split while the query ran
    /// ([`PhysicalPlan::split_live`]), each instance feeding its own.
    Forward,
    /// Each producer instance deals its batches to the consumer's instances in turn, starting
    /// again at the first after every barrier (a stateless consumer without keys: a filter or
    /// a map with `parallelism`, the splitter `by = "round-robin"` of the partitioning rule).
    RoundRobin,
    /// Each producer instance sends each row to the consumer instance whose range holds the
    /// row's value of a column (a stateless consumer with `ranges`, the splitter `by = "range"`
    /// of the partitioning rule).
    Range(crate::ranges::Ranges),
}

/// A channel: carries one stream from one task to one input of another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelPlan {
    /// Index in [`PhysicalPlan::channels`].
    pub id: usize,
    /// The stream it carries.
    pub stream: StreamId,
    /// The producing task.
    pub from_task: usize,
    /// The producing node and its output port.
    pub from: (NodeId, usize),
    /// The consuming task.
    pub to_task: usize,
    /// The input port of the consuming task's head.
    pub to_input: usize,
    /// How rows reach the consumer's instances.
    pub partitioning: Partitioning,
}

/// Tasks and channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalPlan {
    /// Tasks, sources' tasks first (topological order of their heads).
    pub tasks: Vec<TaskPlan>,
    /// Channels between tasks.
    pub channels: Vec<ChannelPlan>,
}

/// How the plan is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Fuse one-to-one chains into one task.
    pub chaining: bool,
    /// The parallelism of operators that can run in parallel and do not set their own.
    pub default_parallelism: usize,
    /// How many instances an operator that splits its input by key may be rescaled to while
    /// the query runs: it runs that many, the ones beyond its parallelism idle (owning no key
    /// group) until a rescale hands them some. `None` (or less than its parallelism): its
    /// parallelism.
    pub max_parallelism: Option<usize>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            chaining: true,
            default_parallelism: 1,
            max_parallelism: None,
        }
    }
}

impl PhysicalPlan {
    /// Plans `graph`, fusing chains when `chaining` is on, with every operator at its own
    /// parallelism or 1.
    pub fn from_graph<B>(graph: &LogicalGraph<B>, chaining: bool) -> Result<Self, PlanError> {
        Self::plan(
            graph,
            PlanOptions {
                chaining,
                ..PlanOptions::default()
            },
        )
    }

    /// The instances of every node of `graph` (by [`NodeId`]) under `options`: what the
    /// partitioning rules make of each operator's `parallelism`, or of the default for those
    /// that can run in parallel and set none.
    pub fn instances<B>(
        graph: &LogicalGraph<B>,
        options: PlanOptions,
    ) -> Result<Vec<usize>, PartitioningError> {
        partitioning::instances(graph, options.default_parallelism)
    }

    /// Plans `graph` under `options`.
    pub fn plan<B>(graph: &LogicalGraph<B>, options: PlanOptions) -> Result<Self, PlanError> {
        Self::plan_split(graph, options, &[])
    }

    /// Plans `graph` under `options`, with a task boundary right before each node of
    /// `split_before` that would be fused with the operator before it: what a split made
    /// while the query ran (`anduin ctl set Q OP pipeline split`) left, planned from the start
    /// when a run resumes from a checkpoint taken after it. Unlike `param pipeline = "split"`,
    /// the operator still fuses with the operators after it.
    pub fn plan_split<B>(
        graph: &LogicalGraph<B>,
        options: PlanOptions,
        split_before: &[NodeId],
    ) -> Result<Self, PlanError> {
        let active = Self::instances(graph, options)?;
        let stage: Vec<bool> = pipelining::stages(graph)?
            .iter()
            .map(Option::is_some)
            .collect();
        // A keyed operator runs its spare instances too: fused only with what runs as many.
        let parallelism: Vec<usize> = active
            .iter()
            .zip(&graph.nodes)
            .map(|(&p, node)| match options.max_parallelism {
                Some(max) if rescalable(node) => p.max(max),
                _ => p,
            })
            .collect();
        let mut task_of: Vec<Option<usize>> = vec![None; graph.nodes.len()];
        let mut tasks: Vec<TaskPlan> = Vec::new();
        for &id in &graph.topo {
            let fuse_into = if options.chaining && !split_before.contains(&id) {
                fusable_predecessor(graph, id, &task_of, &tasks, &parallelism, &stage)
            } else {
                None
            };
            match fuse_into {
                Some(t) => {
                    tasks[t].chain.push(id);
                    task_of[id.0] = Some(t);
                }
                None => {
                    let t = tasks.len();
                    tasks.push(TaskPlan {
                        id: t,
                        chain: vec![id],
                        inputs: Vec::new(),
                        parallelism: parallelism[id.0],
                        active: active[id.0],
                    });
                    task_of[id.0] = Some(t);
                }
            }
        }
        let task = |n: NodeId| task_of[n.0].expect("every node is placed in topological order");
        let mut channels = Vec::new();
        for (sid, stream) in graph.streams.iter().enumerate() {
            for &(consumer, port) in &stream.consumers {
                let (from_task, to_task) = (task(stream.producer.0), task(consumer));
                if from_task == to_task {
                    continue;
                }
                let instances = tasks[from_task].parallelism;
                if graph.node(consumer).def.spread_copies().is_some() && instances > 1 {
                    return Err(PlanError::SpreadInput {
                        pattern: graph.node(consumer).name().to_string(),
                        producer: graph.node(stream.producer.0).name().to_string(),
                        instances,
                    });
                }
                let control = graph.node(consumer).control.as_ref();
                let partitioning = if control.is_some_and(|c| c.port == port) {
                    Partitioning::Broadcast
                } else if tasks[to_task].parallelism == 1 {
                    Partitioning::Gather
                } else if let Some(r) = by_range(graph.node(consumer), port) {
                    Partitioning::Range(r)
                } else if in_turn(graph.node(consumer), port) {
                    Partitioning::RoundRobin
                } else {
                    let keys = graph
                        .node(consumer)
                        .partition_by
                        .get(port)
                        .cloned()
                        .flatten()
                        .unwrap_or_default();
                    Partitioning::Hash(keys)
                };
                let id = channels.len();
                channels.push(ChannelPlan {
                    id,
                    stream: StreamId(sid),
                    from_task,
                    from: stream.producer,
                    to_task,
                    to_input: port,
                    partitioning,
                });
                tasks[to_task].inputs.push(id);
            }
        }
        let plan = PhysicalPlan { tasks, channels };
        plan.check_ordered_inputs(graph)?;
        plan.check_upserts_after_joins(graph)?;
        Ok(plan)
    }

    /// Refuses an upsert sink ([`PlanError::UpsertAfterMovingJoin`]) that reads, through
    /// stateless operators and regular joins, a regular join run as more than one instance whose key columns
    /// are not all in the row key of each of its updating inputs (a column of a GROUP BY's
    /// keys is; an aggregate's value, which changes for a row, is not).
    fn check_upserts_after_joins<B>(&self, graph: &LogicalGraph<B>) -> Result<(), PlanError> {
        let upserts = graph.nodes.iter().enumerate().filter(|(_, n)| {
            n.outputs.is_empty()
                && n.def
                    .param("mode")
                    .is_some_and(|m| m.value.as_text().as_str() == "upsert")
        });
        for (sink, node) in upserts {
            // The operators whose rows reach the sink as they are, up to a stateful one.
            let mut todo: Vec<NodeId> = node
                .inputs
                .iter()
                .map(|s| graph.streams[s.0].producer.0)
                .collect();
            let mut seen: Vec<NodeId> = Vec::new();
            while let Some(id) = todo.pop() {
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                let n = graph.node(id);
                if n.def.kind.as_str() == "regular_join" {
                    self.check_join_key(graph, id, graph.node(NodeId(sink)).name())?;
                    // A join passes on the changes of its inputs' rows in the order they
                    // reach it: those of a join before it, out of order, stay so.
                    todo.extend(n.inputs.iter().map(|s| graph.streams[s.0].producer.0));
                } else if !n.stateful {
                    todo.extend(n.inputs.iter().map(|s| graph.streams[s.0].producer.0));
                }
            }
        }
        Ok(())
    }

    /// [`Self::check_upserts_after_joins`] of the regular join `id`, read by `sink`.
    fn check_join_key<B>(
        &self,
        graph: &LogicalGraph<B>,
        id: NodeId,
        sink: &str,
    ) -> Result<(), PlanError> {
        let instances = self
            .tasks
            .iter()
            .find(|t| t.chain.contains(&id))
            .map_or(1, |t| t.active);
        if instances < 2 {
            return Ok(());
        }
        let join = graph.node(id);
        for (port, stream) in join.inputs.iter().enumerate() {
            let stream = &graph.streams[stream.0];
            // An append-only input's rows never change, nor does their join key.
            if !anduin_types::is_updating(&stream.schema) {
                continue;
            }
            let keys = join.partition_by.get(port).cloned().flatten();
            let row_key = anduin_types::row_key(&stream.schema).unwrap_or_default();
            let outside = keys
                .unwrap_or_default()
                .into_iter()
                .find(|k| !row_key.contains(k));
            if let Some(k) = outside {
                return Err(PlanError::UpsertAfterMovingJoin {
                    sink: sink.to_string(),
                    join: join.name().to_string(),
                    instances,
                    moving: Box::new(MovingKey {
                        key: join.def.param("on").map_or_else(String::new, |p| {
                            p.value.as_text().as_str().replace('"', "")
                        }),
                        input: stream.name.clone(),
                        column: stream.schema.field(k).name().clone(),
                    }),
                });
            }
        }
        Ok(())
    }

    /// Refuses a sink that must read its rows in one order on every run
    /// ([`anduin_spec::OperatorDef::needs_one_ordered_input`]) fed by an interleaving of
    /// several inputs.
    fn check_ordered_inputs<B>(&self, graph: &LogicalGraph<B>) -> Result<(), PlanError> {
        if !graph.nodes.iter().any(|n| n.def.needs_one_ordered_input()) {
            return Ok(());
        }
        // Why each task's output interleaves several inputs, if it does, and what would not;
        // tasks are numbered in topological order, so a producer's is known before its
        // consumers'.
        let mut interleaves: Vec<Option<(String, String)>> = Vec::with_capacity(self.tasks.len());
        let spreads = crate::rewriting::spread_chains(graph);
        let one_chain = || {
            "Feed it through one ordered chain from one source instance (`parallelism = 1` on the operators before it, no union or shuffle)".to_string()
        };
        // Why each task's output depends on when rows arrive, if it does (and what would not).
        let mut timing: Vec<Option<Timed>> = Vec::with_capacity(self.tasks.len());
        for task in &self.tasks {
            let head = graph.node(task.chain[0]);
            let data: Vec<&ChannelPlan> = task
                .inputs
                .iter()
                .map(|c| &self.channels[*c])
                .filter(|c| !matches!(c.partitioning, Partitioning::Broadcast))
                .collect();
            let mut timed = data
                .iter()
                .map(|c| timing.get(c.from_task).cloned().flatten())
                .fold(None, Timed::rather);
            for n in task.chain.iter().map(|n| graph.node(*n)) {
                if let Some(sink) = n.def.needs_one_ordered_input().then_some(n) {
                    if let Some(t) = &timed {
                        return Err(PlanError::TimingDependentInput {
                            sink: sink.name().to_string(),
                            why: t.why.clone(),
                            fix: t.fix.clone(),
                        });
                    }
                }
                timed = Timed::rather(timed, timing_dependent(graph, n));
            }
            timing.push(timed);
            let why = if data.len() > 1 {
                // The union that the copies of a pattern spreading its partial matches feed
                // (`overflow_instances`) is the planner's, not the query's: named by the
                // pattern and its param.
                let producers: Vec<&str> =
                    data.iter().map(|c| graph.node(c.from.0).name()).collect();
                let spread = spreads
                    .iter()
                    .find(|chain| producers.iter().all(|p| chain.iter().any(|c| c == p)));
                Some(match spread.and_then(|chain| chain.first()) {
                    Some(pattern) => (
                        format!(
                            "the matches of the {} copies pattern \"{pattern}\" spreads its partial matches over (`overflow_instances`)",
                            spread.map_or(0, Vec::len)
                        ),
                        format!("Leave `overflow_instances` out of pattern \"{pattern}\" (one instance then finds its matches in one order)"),
                    ),
                    None => (
                        format!("the inputs of {} \"{}\"", head.kind(), head.name()),
                        one_chain(),
                    ),
                })
            } else if let Some(c) = data.first() {
                let producer = graph.node(c.from.0).name();
                let instances = self.tasks[c.from_task].parallelism;
                if instances > 1 {
                    Some((
                        format!("{instances} instances of \"{producer}\""),
                        one_chain(),
                    ))
                } else if !matches!(c.partitioning, Partitioning::Gather | Partitioning::Hash(_)) {
                    Some((
                        format!(
                            "the batches of \"{producer}\" spread in turn over {} instances of \"{}\"",
                            task.parallelism,
                            head.name()
                        ),
                        one_chain(),
                    ))
                } else {
                    interleaves[c.from_task].clone()
                }
            } else {
                None
            };
            if let Some((why, fix)) = &why {
                if let Some(sink) = task
                    .chain
                    .iter()
                    .map(|n| graph.node(*n))
                    .find(|n| n.def.needs_one_ordered_input())
                {
                    return Err(PlanError::InterleavedInput {
                        sink: sink.name().to_string(),
                        why: why.clone(),
                        fix: fix.clone(),
                    });
                }
            }
            interleaves.push(why);
        }
        Ok(())
    }

    /// How many instances run node `n`: its task's (1 for a node the plan does not hold).
    pub fn instances_of(&self, n: NodeId) -> usize {
        self.tasks
            .iter()
            .find(|t| t.chain.contains(&n))
            .map_or(1, |t| t.parallelism)
    }

    /// How many instances of node `n` own key groups: its task's `active` (1 for a node the
    /// plan does not hold).
    pub fn owners_of(&self, n: NodeId) -> usize {
        self.tasks
            .iter()
            .find(|t| t.chain.contains(&n))
            .map_or(1, |t| t.active)
    }

    /// The channels that leave `task`.
    pub fn outputs_of(&self, task: usize) -> impl Iterator<Item = &ChannelPlan> {
        self.channels.iter().filter(move |c| c.from_task == task)
    }
}

/// Why rows depend on when they arrive or are computed rather than on the input, and what
/// would not ([`PlanError::TimingDependentInput`]).
#[derive(Clone, Debug)]
struct Timed {
    why: String,
    fix: String,
    /// Said by the operator that makes the rows depend on it (a window over processing time),
    /// rather than by one that only calls a function whose value changes from call to call
    /// (`PROCTIME()` before such a window): said first.
    decisive: bool,
}

impl Timed {
    /// `a`, unless `b` is decisive and `a` is not.
    fn rather(a: Option<Timed>, b: Option<Timed>) -> Option<Timed> {
        match (a, b) {
            (Some(a), Some(b)) if !a.decisive && b.decisive => Some(b),
            (a, b) => a.or(b),
        }
    }
}

/// Why the rows of `node` (in `graph`) depend on when rows arrive, or on when they are
/// computed, rather than on the rows, if they do, and what would not: windows over processing
/// time, changes from a control stream applied as they arrive (without `time`, or with a
/// source that goes idle: its watermark then no longer holds the rows back), functions whose
/// value changes from call to call.
fn timing_dependent<B>(graph: &LogicalGraph<B>, node: &crate::logical::Node<B>) -> Option<Timed> {
    if let Some(c) = node.control.as_ref() {
        if c.time.is_none() {
            return Some(Timed {
                why: format!(
                    "{} \"{}\" applies the changes of control stream \"{}\" as they arrive (it has no `time`), to whichever rows come then",
                    node.kind(),
                    node.name(),
                    c.stream
                ),
                fix: "Give the control input a `time` column (the changes then apply by event time)".to_string(),
                decisive: true,
            });
        }
        if let Some(source) = node
            .inputs
            .get(c.port)
            .and_then(|s| idle_source_upstream(graph, *s))
        {
            return Some(Timed {
                why: format!(
                    "{} \"{}\" applies the changes of control stream \"{}\" by event time, and its source \"{}\" has `idle_timeout`: once the control stream is silent that long (wall-clock time), its watermark no longer holds the rows back, so whether a change applies to a row depends on when each arrives",
                    node.kind(),
                    node.name(),
                    c.stream,
                    source.name()
                ),
                fix: format!(
                    "Leave `idle_timeout` out of source \"{}\" (a control stream's watermark then holds the rows back until its changes are in)",
                    source.name()
                ),
                decisive: true,
            });
        }
    }
    let ttl = node
        .def
        .param("state_ttl")
        .map(|p| p.value.as_text().to_string());
    if let Some(ttl) = ttl.filter(|t| anduin_types::duration_ms(t).is_ok_and(|ms| ms > 0)) {
        return Some(Timed {
            why: format!(
                "{} \"{}\" forgets a key's state `state_ttl` ({ttl}) of processing time after its last change (`--state-ttl` or the param): whether a row meets its key's state depends on the clock when it arrives",
                node.kind(),
                node.name()
            ),
            fix: format!(
                "Leave the state time-to-live out of \"{}\" (no `state_ttl`, no `--state-ttl`)",
                node.name()
            ),
            decisive: true,
        });
    }
    if node.def.kind.as_str() == "pattern" && node.def.param("within").is_some() {
        return Some(Timed {
            why: format!(
                "pattern \"{}\" ends its partial matches at their time bound (`within`, WITHIN in SQL) when a watermark passes it, and what it reports then comes before or after the matches of the rows read meanwhile as the watermarks fall, which changes from run to run",
                node.name()
            ),
            fix: "Drop the time bound".to_string(),
            decisive: true,
        });
    }
    let processing = node
        .def
        .param("time_kind")
        .is_some_and(|p| p.value.as_text().as_str() == "processing");
    if processing {
        return Some(Timed {
            why: format!(
                "{} \"{}\" groups rows by processing time (`time_kind = \"processing\"`, PROCTIME() in SQL): by the clock when they arrive",
                node.kind(),
                node.name()
            ),
            fix: "Window by event time".to_string(),
            decisive: true,
        });
    }
    node.volatile.as_ref().map(|v| Timed {
            why: format!(
                "{} \"{}\" calls `{}()` (at {}:{}), whose value changes from call to call, so a run started again computes other values (and other rows, where they are filtered or matched on)",
                node.kind(),
                node.name(),
                v.function,
                v.pos.line,
                v.pos.col
            ),
            fix: format!(
                "Take the value from the input instead of calling `{}()` in the query",
                v.function
            ),
            decisive: false,
    })
}

/// The first source (an operator without inputs) feeding stream `stream`, directly or through
/// other operators, that goes idle after `idle_timeout`.
fn idle_source_upstream<B>(
    graph: &LogicalGraph<B>,
    stream: StreamId,
) -> Option<&crate::logical::Node<B>> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut next = vec![graph.stream(stream).producer.0];
    while let Some(id) = next.pop() {
        if std::mem::replace(&mut seen[id.0], true) {
            continue;
        }
        let n = graph.node(id);
        if n.inputs.is_empty() {
            if n.def
                .param("idle_timeout")
                .is_some_and(|p| !p.value.as_text().as_str().trim().is_empty())
            {
                return Some(n);
            }
            continue;
        }
        next.extend(n.inputs.iter().map(|s| graph.stream(*s).producer.0));
    }
    None
}

/// Whether `node` can be rescaled while it runs: it splits its input by key (its state is
/// kept by key group) and can run in parallel, and does not spread its partial matches over
/// copies (each runs as one instance).
pub fn rescalable<B>(node: &crate::logical::Node<B>) -> bool {
    node.parallelizable
        && node.partition_by.iter().any(Option::is_some)
        && node.def.spread_copies().is_none()
}

/// The task `id` can join: its single input's producer ends that task's chain, has one
/// output, runs at the same parallelism, and nobody else reads the stream.
fn fusable_predecessor<B>(
    graph: &LogicalGraph<B>,
    id: NodeId,
    task_of: &[Option<usize>],
    tasks: &[TaskPlan],
    parallelism: &[usize],
    stage: &[bool],
) -> Option<usize> {
    let node = graph.node(id);
    let [input] = node.inputs.as_slice() else {
        return None;
    };
    let stream = graph.stream(*input);
    let (producer, _) = stream.producer;
    if stream.consumers.len() != 1 || graph.node(producer).outputs.len() != 1 {
        return None;
    }
    if parallelism[producer.0] != parallelism[id.0] {
        return None;
    }
    // A parallel operator that splits its input by key must be fed by a partitioned channel.
    if parallelism[id.0] > 1 && node.partition_by.first().is_some_and(Option::is_some) {
        return None;
    }
    // Pipelining (pattern 5): a stage the rules placed is a task of its own.
    if stage[id.0] || stage[producer.0] {
        return None;
    }
    let t = task_of[producer.0]?;
    (tasks[t].chain.last() == Some(&producer)).then_some(t)
}

/// Whether the query asks operator `n` to run as a task of its own, apart from the operators
/// before and after it (`param pipeline = "split"`, the paper's pattern 5); on a cluster, two
/// such operators one after the other run on distinct workers. The planner does not read it:
/// it cuts the stages the pipelining rules place ([`crate::pipelining`]), which are these
/// operators (one the rules cannot place is refused when planned).
pub fn splits<B>(graph: &LogicalGraph<B>, n: NodeId) -> bool {
    graph
        .node(n)
        .def
        .param("pipeline")
        .is_some_and(|p| p.value.as_text().as_str() == "split")
}

/// Whether the instances of `node` take the rows of input `port` in turn: it keeps no state
/// and splits that input by no key.
fn in_turn<B>(node: &crate::logical::Node<B>, port: usize) -> bool {
    !node.stateful && matches!(node.partition_by.get(port), Some(None))
}

/// The ranges the instances of `node` take the rows of input `port` by: it keeps no state,
/// splits that input by no key, and asks for `ranges`.
fn by_range<B>(node: &crate::logical::Node<B>, port: usize) -> Option<crate::ranges::Ranges> {
    if !in_turn(node, port) {
        return None;
    }
    crate::ranges::Ranges::asked_by(&node.def)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::logical::{Node, Stream};
    use anduin_spec::{OperatorDef, Text};
    use anduin_types::Pos;
    use arrow::datatypes::Schema;
    use std::sync::Arc;

    /// A graph from edges `(producer, consumer)`, one stream per producer.
    pub(crate) fn graph(n: usize, edges: &[(usize, usize)]) -> LogicalGraph<()> {
        let streams: Vec<Stream> = (0..n)
            .map(|p| Stream {
                name: format!("s{p}"),
                type_name: None,
                schema: Arc::new(Schema::empty()),
                producer: (NodeId(p), 0),
                consumers: Vec::new(),
                updating_from: None,
            })
            .collect();
        let mut g = LogicalGraph {
            nodes: (0..n)
                .map(|i| Node {
                    def: OperatorDef {
                        name: Text::unplaced(format!("n{i}")),
                        kind: Text::unplaced("x"),
                        params: vec![],
                        inputs: vec![],
                        outputs: vec![],
                        control: None,
                        pos: Pos::default(),
                    },
                    inputs: vec![],
                    outputs: vec![StreamId(i)],
                    bound: (),
                    partition_by: vec![],
                    parallelism: None,
                    parallelizable: false,
                    stateful: false,
                    survives_input_loss: false,
                    control: None,
                    volatile: None,
                })
                .collect(),
            streams,
            topo: (0..n).map(NodeId).collect(),
        };
        for &(p, c) in edges {
            let port = g.nodes[c].inputs.len();
            g.nodes[c].inputs.push(StreamId(p));
            g.streams[p].consumers.push((NodeId(c), port));
        }
        g
    }

    #[test]
    fn what_makes_rows_depend_on_timing_is_said_before_a_function_that_only_feeds_it() {
        // Issue 19 (H5): `PROCTIME()` in a map before a window over processing time; the
        // window is what to change.
        let timed = |why: &str, decisive| Timed {
            why: why.into(),
            fix: String::new(),
            decisive,
        };
        let why = |t: Option<Timed>| t.map(|t| t.why);
        let (stamp, window) = (timed("stamp", false), timed("window", true));
        assert_eq!(
            why(Timed::rather(Some(stamp.clone()), Some(window.clone()))).as_deref(),
            Some("window")
        );
        assert_eq!(
            why(Timed::rather(Some(window.clone()), Some(stamp.clone()))).as_deref(),
            Some("window")
        );
        assert_eq!(
            why(Timed::rather(Some(window), Some(timed("later", true)))).as_deref(),
            Some("window"),
            "the first decisive one"
        );
        assert_eq!(
            why(Timed::rather(None, Some(stamp))).as_deref(),
            Some("stamp")
        );
        assert_eq!(why(Timed::rather(None, None)), None);
    }

    #[test]
    fn a_straight_line_fuses_into_one_task() {
        let plan =
            PhysicalPlan::from_graph(&graph(3, &[(0, 1), (1, 2)]), true).expect("the graph plans");
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].chain, vec![NodeId(0), NodeId(1), NodeId(2)]);
        assert!(plan.channels.is_empty());
    }

    #[test]
    fn without_chaining_every_operator_is_a_task() {
        let plan =
            PhysicalPlan::from_graph(&graph(3, &[(0, 1), (1, 2)]), false).expect("the graph plans");
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.channels.len(), 2);
    }

    #[test]
    fn a_union_starts_a_task_and_its_successor_joins_it() {
        // 0 and 1 are sources, 2 unions them, 3 reads the union.
        let plan = PhysicalPlan::from_graph(&graph(4, &[(0, 2), (1, 2), (2, 3)]), true)
            .expect("the graph plans");
        let chains: Vec<Vec<usize>> = plan
            .tasks
            .iter()
            .map(|t| t.chain.iter().map(|n| n.0).collect())
            .collect();
        assert_eq!(chains, vec![vec![0], vec![1], vec![2, 3]]);
        assert_eq!(plan.tasks[2].inputs.len(), 2);
        assert_eq!(plan.channels[1].to_input, 1);
    }

    #[test]
    fn a_parallel_keyed_operator_gets_its_own_task_and_a_hashed_channel() {
        // 0 source, 1 keyed at parallelism 4, 2 after it at 1.
        let mut g = graph(3, &[(0, 1), (1, 2)]);
        g.nodes[1].parallelism = Some(4);
        g.nodes[1].partition_by = vec![Some(vec![1])];
        let plan = PhysicalPlan::plan(&g, PlanOptions::default()).expect("the graph plans");
        let shape: Vec<(Vec<usize>, usize)> = plan
            .tasks
            .iter()
            .map(|t| (t.chain.iter().map(|n| n.0).collect(), t.parallelism))
            .collect();
        assert_eq!(shape, vec![(vec![0], 1), (vec![1], 4), (vec![2], 1)]);
        assert_eq!(plan.channels[0].partitioning, Partitioning::Hash(vec![1]));
        assert_eq!(plan.channels[1].partitioning, Partitioning::Gather);
    }

    #[test]
    fn the_default_parallelism_applies_to_operators_that_can_run_in_parallel() {
        let mut g = graph(2, &[(0, 1)]);
        g.nodes[1].parallelizable = true;
        g.nodes[1].partition_by = vec![Some(vec![0])];
        let plan = PhysicalPlan::plan(
            &g,
            PlanOptions {
                chaining: true,
                default_parallelism: 2,
                max_parallelism: None,
            },
        )
        .expect("the graph plans");
        assert_eq!(
            plan.tasks.iter().map(|t| t.parallelism).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn a_keyed_operator_runs_spare_instances_up_to_the_max_parallelism_and_others_do_not() {
        // 0 source; 1 keyed; 2 unkeyed but parallel (a source-like share), 3 a sink.
        let mut g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        g.nodes[1].parallelizable = true;
        g.nodes[1].partition_by = vec![Some(vec![0])];
        g.nodes[2].parallelizable = true;
        for (p, max) in [(1, Some(4)), (2, Some(4)), (2, None), (3, Some(2))] {
            let plan = PhysicalPlan::plan(
                &g,
                PlanOptions {
                    chaining: true,
                    default_parallelism: p,
                    max_parallelism: max,
                },
            )
            .expect("the graph plans");
            let keyed = plan.tasks.iter().find(|t| t.chain.contains(&NodeId(1)));
            let keyed = keyed.expect("the keyed operator has a task");
            assert_eq!(keyed.active, p, "p {p}, max {max:?}");
            assert_eq!(
                keyed.parallelism,
                max.map_or(p, |m| m.max(p)),
                "p {p}, max {max:?}"
            );
            for t in plan.tasks.iter().filter(|t| !t.chain.contains(&NodeId(1))) {
                assert_eq!(
                    t.active, t.parallelism,
                    "only the keyed operator has spares"
                );
            }
            // Spares need a partitioned channel: the keyed operator is never fused with its
            // single-instance producer then.
            if keyed.parallelism > 1 {
                assert_eq!(keyed.chain.first(), Some(&NodeId(1)));
            }
        }
    }

    /// `g` with node `n` made a NATS sink (`delivery`, when given).
    fn nats_sink(mut g: LogicalGraph<()>, n: usize, delivery: Option<&str>) -> LogicalGraph<()> {
        let def = &mut g.nodes[n].def;
        def.kind = Text::unplaced("nats");
        def.inputs = vec![Text::unplaced("in")];
        if let Some(d) = delivery {
            def.params.push(anduin_spec::Param {
                name: Text::unplaced("delivery"),
                value: anduin_spec::Value::String(Text::unplaced(d)),
            });
        }
        g
    }

    fn plan_at(g: &LogicalGraph<()>, parallelism: usize) -> Result<PhysicalPlan, PlanError> {
        PhysicalPlan::plan(
            g,
            PlanOptions {
                chaining: true,
                default_parallelism: parallelism,
                max_parallelism: None,
            },
        )
    }

    #[test]
    fn an_exactly_once_nats_sink_after_one_ordered_chain_plans() {
        // 0 source, 1 map, 2 sink: one chain; then without chaining, one instance each.
        let g = nats_sink(graph(3, &[(0, 1), (1, 2)]), 2, None);
        plan_at(&g, 3).expect("one chain plans");
        PhysicalPlan::from_graph(&g, false).expect("one instance each plans");
        // A keyed operator at one instance between them: still one order.
        let mut g = g;
        g.nodes[1].partition_by = vec![Some(vec![0])];
        g.nodes[1].parallelizable = true;
        plan_at(&g, 1).expect("a hash into one instance plans");
    }

    #[test]
    fn an_exactly_once_nats_sink_after_state_with_a_time_to_live_is_refused() {
        // 0 source, 1 aggregate, 2 sink.
        let mut g = nats_sink(graph(3, &[(0, 1), (1, 2)]), 2, None);
        let ttl = |v: &str| anduin_spec::Param {
            name: Text::unplaced("state_ttl"),
            value: anduin_spec::Value::String(Text::unplaced(v)),
        };
        g.nodes[1].def.params.push(ttl("0"));
        plan_at(&g, 1).expect("no time-to-live plans");
        g.nodes[1].def.params = vec![ttl("3600000ms")];
        let e = plan_at(&g, 1).expect_err("state forgotten by the clock");
        assert!(
            matches!(&e, PlanError::TimingDependentInput { why, .. } if why.contains("state_ttl")),
            "{e}"
        );
    }

    #[test]
    fn an_exactly_once_nats_sink_after_a_pattern_with_a_time_bound_is_refused() {
        // 0 source, 1 pattern, 2 sink.
        let mut g = nats_sink(graph(3, &[(0, 1), (1, 2)]), 2, None);
        g.nodes[1].def.kind = Text::unplaced("pattern");
        plan_at(&g, 1).expect("a pattern without a time bound plans");
        g.nodes[1].def.params.push(anduin_spec::Param {
            name: Text::unplaced("within"),
            value: anduin_spec::Value::String(Text::unplaced("5s")),
        });
        let e = plan_at(&g, 1).expect_err("a time bound ends matches at watermarks");
        assert!(
            matches!(&e, PlanError::TimingDependentInput { sink, why, .. } if sink == "n2" && why.contains("`within`")),
            "{e}"
        );
        let g = nats_sink(g, 2, Some("at-least-once"));
        plan_at(&g, 1).expect("at least once plans");
    }

    #[test]
    fn an_exactly_once_nats_sink_reading_several_instances_or_a_union_is_refused() {
        // A source read by 3 instances, gathered into the sink.
        let mut g = nats_sink(graph(2, &[(0, 1)]), 1, None);
        g.nodes[0].parallelizable = true;
        let e = plan_at(&g, 3).expect_err("3 instances into one sink");
        assert!(
            matches!(&e, PlanError::InterleavedInput { sink, why, .. } if sink == "n1" && why == "3 instances of \"n0\""),
            "{e}"
        );
        assert_eq!(e.operator(), Some("n1"));
        assert!(
            e.to_string().contains("delivery = \"at-least-once\""),
            "{e}"
        );
        // The same, a map between them at one instance: the interleaving goes on.
        let mut g = nats_sink(graph(3, &[(0, 1), (1, 2)]), 2, None);
        g.nodes[0].parallelizable = true;
        g.nodes[1].parallelism = Some(1);
        let e = plan_at(&g, 3).expect_err("3 instances through a map into one sink");
        assert!(e.to_string().contains("3 instances of \"n0\""), "{e}");
        // A union of two sources.
        let g = nats_sink(graph(4, &[(0, 2), (1, 2), (2, 3)]), 3, None);
        let e = plan_at(&g, 1).expect_err("a union into one sink");
        assert!(e.to_string().contains("the inputs of x \"n2\""), "{e}");
        // At least once: no order needed.
        let mut g = nats_sink(graph(2, &[(0, 1)]), 1, Some("at-least-once"));
        g.nodes[0].parallelizable = true;
        plan_at(&g, 3).expect("at least once plans");
    }

    /// The chains of `plan` with their parallelism.
    fn shape(plan: &PhysicalPlan) -> Vec<(Vec<usize>, usize)> {
        plan.tasks
            .iter()
            .map(|t| (t.chain.iter().map(|n| n.0).collect(), t.parallelism))
            .collect()
    }

    #[test]
    fn a_parallel_source_gathers_into_a_single_instance_and_hashes_into_a_keyed_one() {
        // 0 a source that can run in parallel; 1 keyed (parallel too); 2 a single instance.
        let mut g = graph(3, &[(0, 1), (1, 2)]);
        g.nodes[0].parallelizable = true;
        g.nodes[1].parallelizable = true;
        g.nodes[1].partition_by = vec![Some(vec![0])];
        let options = PlanOptions {
            chaining: true,
            default_parallelism: 3,
            max_parallelism: None,
        };
        let plan = PhysicalPlan::plan(&g, options).expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0], 3), (vec![1], 3), (vec![2], 1)]);
        assert_eq!(plan.channels[0].partitioning, Partitioning::Hash(vec![0]));
        assert_eq!(plan.channels[1].partitioning, Partitioning::Gather);

        // Straight into a single instance: every source instance feeds it.
        let mut g = graph(2, &[(0, 1)]);
        g.nodes[0].parallelizable = true;
        let plan = PhysicalPlan::plan(&g, options).expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0], 3), (vec![1], 1)]);
        assert_eq!(plan.channels[0].partitioning, Partitioning::Gather);
    }

    #[test]
    fn a_parallel_source_fuses_with_an_unkeyed_operator_of_its_parallelism() {
        let mut g = graph(3, &[(0, 1), (1, 2)]);
        g.nodes[0].parallelism = Some(2);
        g.nodes[1].parallelism = Some(2);
        let plan = PhysicalPlan::plan(&g, PlanOptions::default()).expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0, 1], 2), (vec![2], 1)]);
        assert_eq!(plan.channels.len(), 1);
    }

    #[test]
    fn a_split_before_an_operator_cuts_its_chain_there_and_the_rest_stays_fused() {
        let g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        let plan = PhysicalPlan::plan_split(&g, PlanOptions::default(), &[NodeId(2)])
            .expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0, 1], 1), (vec![2, 3], 1)]);
        assert_eq!(plan.channels.len(), 1);
        assert_eq!(plan.channels[0].from, (NodeId(1), 0));
        assert_eq!(plan.channels[0].partitioning, Partitioning::Gather);
        // Before the head of a task already: nothing changes.
        let plan = PhysicalPlan::plan_split(&g, PlanOptions::default(), &[NodeId(0)])
            .expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0, 1, 2, 3], 1)]);
    }

    #[test]
    fn the_stages_the_pipelining_rules_place_are_tasks_of_their_own() {
        use crate::pipelining::tests::split;
        // A chain of two split operators (1, 2), one alone (4), between unsplit ones.
        let g = split(
            graph(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]),
            &[1, 2, 4],
        );
        let plan = PhysicalPlan::plan(&g, PlanOptions::default()).expect("the graph plans");
        let chains: Vec<Vec<usize>> = shape(&plan).into_iter().map(|(c, _)| c).collect();
        assert_eq!(
            chains,
            vec![vec![0], vec![1], vec![2], vec![3], vec![4], vec![5]]
        );
        // A split source: what follows it is a task apart.
        let g = split(graph(3, &[(0, 1), (1, 2)]), &[0]);
        let plan = PhysicalPlan::plan(&g, PlanOptions::default()).expect("the graph plans");
        assert_eq!(shape(&plan), vec![(vec![0], 1), (vec![1, 2], 1)]);
        // A split operator no rule places is refused, not fused as if it had not asked.
        let g = split(graph(5, &[(0, 3), (1, 3), (2, 3), (3, 4)]), &[3]);
        let err = PhysicalPlan::plan(&g, PlanOptions::default()).expect_err("refused");
        assert!(matches!(err, PlanError::Pipelining(_)), "{err}");
    }

    #[test]
    fn a_stream_read_twice_is_not_fused() {
        let plan =
            PhysicalPlan::from_graph(&graph(3, &[(0, 1), (0, 2)]), true).expect("the graph plans");
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.outputs_of(0).count(), 2);
    }
}
