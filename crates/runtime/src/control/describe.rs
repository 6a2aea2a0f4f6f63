//! The query as the control plane shows it: its operators (the logical graph) and its tasks
//! (the physical one), from the checked graph and its topology.

use anduin_graph::LogicalGraph;

use std::collections::{BTreeMap, BTreeSet};

use super::types::{
    ExchangeInfo, InstancePlacement, OperatorInfo, TaskInfo, TaskPlacement, TopologyInfo,
    WrittenOperator,
};
use crate::topology::{Exchange, Topology};

/// Every operator of `graph`, in topological order, with the task it runs in.
pub(crate) fn operators<B>(graph: &LogicalGraph<B>, topology: &Topology) -> Vec<OperatorInfo> {
    let stream_names = |ids: &[anduin_graph::StreamId]| stream_names(graph, ids);
    graph
        .topo
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            let task = topology.tasks.iter().find(|t| t.nodes().any(|n| n == *id));
            // The head of a task that can be rescaled while it runs.
            let rescalable = task.filter(|t| t.rescalable_head(graph) == Some(*id));
            OperatorInfo {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                inputs: stream_names(&node.inputs),
                outputs: stream_names(&node.outputs),
                parallelism: task.map_or(1, |t| t.parallelism),
                task: task.map_or(0, |t| t.task),
                stateful: node.stateful,
                adjustable: Vec::new(),
                max_parallelism: rescalable.map(|t| t.parallelism),
                owners: rescalable.map(|t| t.active),
            }
        })
        .collect()
}

/// Every operator of `graph` (the query as written), in topological order.
pub fn written<B>(graph: &LogicalGraph<B>) -> Vec<WrittenOperator> {
    let stream_names = |ids: &[anduin_graph::StreamId]| stream_names(graph, ids);
    graph
        .topo
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            WrittenOperator {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                inputs: stream_names(&node.inputs),
                outputs: stream_names(&node.outputs),
            }
        })
        .collect()
}

/// The names of streams `ids` of `graph`.
fn stream_names<B>(graph: &LogicalGraph<B>, ids: &[anduin_graph::StreamId]) -> Vec<String> {
    ids.iter()
        .filter_map(|s| graph.streams.get(s.0).map(|s| s.name.clone()))
        .collect()
}

/// Every task of `topology`, with its operators head first.
pub(crate) fn tasks<B>(graph: &LogicalGraph<B>, topology: &Topology) -> Vec<TaskInfo> {
    topology
        .tasks
        .iter()
        .map(|t| TaskInfo {
            id: t.task,
            operators: t
                .nodes()
                .map(|n| graph.node(n).name().to_string())
                .collect(),
            instances: t.parallelism,
        })
        .collect()
}

/// Where every instance of `topology` runs, and the exchanges between its tasks (one per
/// plan channel, with how many instance-to-instance channels carry it and how many of those
/// cross workers).
pub(crate) fn topology<B>(graph: &LogicalGraph<B>, topology: &Topology) -> TopologyInfo {
    let name = |id: anduin_graph::NodeId| graph.node(id).name().to_string();
    let tasks = topology
        .tasks
        .iter()
        .map(|t| TaskPlacement {
            id: t.task,
            operators: t.nodes().map(name).collect(),
            instances: t
                .instances
                .iter()
                .map(|i| InstancePlacement {
                    instance: i.at.instance,
                    id: i.id,
                    worker: i.worker.0,
                })
                .collect(),
        })
        .collect();
    let workers: BTreeSet<u32> = topology.instances().map(|i| i.worker.0).collect();
    // Per plan channel: its route (as the first producer instance has it), its channels and
    // how many of them cross workers.
    let mut exchanges: BTreeMap<usize, ExchangeInfo> = BTreeMap::new();
    for instance in topology.instances() {
        for route in &instance.routes {
            let Some(first) = route
                .channels
                .first()
                .and_then(|c| topology.channels.get(c.0))
            else {
                continue;
            };
            let entry = exchanges.entry(first.plan_channel).or_insert_with(|| {
                let (node, port) = route.from;
                let (partitioning, keys) = match &route.exchange {
                    Exchange::Gather => ("gather", Vec::new()),
                    Exchange::Hash { keys } => {
                        let schema = graph
                            .node(node)
                            .outputs
                            .get(port)
                            .map(|s| &graph.stream(*s).schema);
                        let keys = keys
                            .iter()
                            .map(|k| {
                                schema
                                    .and_then(|s| s.fields().get(*k).map(|f| f.name().clone()))
                                    .unwrap_or_else(|| format!("#{k}"))
                            })
                            .collect();
                        ("hash", keys)
                    }
                    Exchange::Broadcast => ("broadcast", Vec::new()),
                    Exchange::Forward => ("forward", Vec::new()),
                    Exchange::RoundRobin => ("round-robin", Vec::new()),
                    Exchange::Range(r) => ("range", vec![r.column.clone()]),
                };
                let to_operator = topology
                    .tasks
                    .get(route.to_task)
                    .and_then(|t| t.nodes().next())
                    .map(name)
                    .unwrap_or_default();
                ExchangeInfo {
                    from_task: instance.at.task,
                    from_operator: name(node),
                    to_task: route.to_task,
                    to_operator,
                    to_input: route.to_input,
                    partitioning: partitioning.to_string(),
                    keys,
                    channels: 0,
                    remote_channels: 0,
                }
            });
            for c in route
                .channels
                .iter()
                .filter_map(|c| topology.channels.get(c.0))
            {
                entry.channels += 1;
                if topology.crosses(c) {
                    entry.remote_channels += 1;
                }
            }
        }
    }
    TopologyInfo {
        workers: workers.into_iter().collect(),
        tasks,
        exchanges: exchanges.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_graph::{PhysicalPlan, PlanOptions};
    use anduin_operator_api::Bound;
    use anduin_registry::BuiltinCatalog;

    /// Alerts joined with the readings of their sensor (at parallelism 2), written out.
    const JOIN: &str = r#"
type name = "Alert" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
}
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "alerts", type = "reader" {
  param parallelism = 1
  param path = "alerts.csv"
  param event_time = "ts"
  output name = "alerts", type = "Alert"
}
operator name = "readings", type = "reader" {
  param parallelism = 1
  param path = "readings.csv"
  param event_time = "ts"
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
operator name = "sink", type = "writer" {
  input name = "pairs"
  param path = "out.csv"
}
"#;

    #[test]
    fn the_topology_names_each_exchange_its_keys_and_the_channels_that_cross_workers() {
        let spec = anduin_spec::parse_flow(JOIN).expect("the query parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
        let plan = PhysicalPlan::plan(
            &graph,
            PlanOptions {
                chaining: true,
                default_parallelism: 2,
                max_parallelism: None,
            },
        )
        .expect("the graph plans");
        let mut t = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
        t.spread(2);
        let info = topology(&graph, &t);
        assert_eq!(info.workers, [0, 1]);
        let placed: Vec<(usize, u32)> = info
            .tasks
            .iter()
            .flat_map(|t| t.instances.iter().map(|i| (i.id, i.worker)))
            .collect();
        assert_eq!(placed, [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]);
        // from -> to:input partitioning(keys), channels (remote ones)
        let exchanges: Vec<String> = info
            .exchanges
            .iter()
            .map(|e| {
                format!(
                    "{} -> {}:{} {}({}), {} ({} remote)",
                    e.from_operator,
                    e.to_operator,
                    e.to_input,
                    e.partitioning,
                    e.keys.join(", "),
                    e.channels,
                    e.remote_channels
                )
            })
            .collect();
        assert_eq!(
            exchanges,
            [
                // alerts#0 (w0) to before#0 (w0) and #1 (w1).
                "alerts -> before:0 hash(sensor), 2 (1 remote)",
                // readings#0 (w1) to before#0 (w0) and #1 (w1).
                "readings -> before:1 hash(sensor), 2 (1 remote)",
                // before#0 (w0) and #1 (w1) to sink#0 (w0).
                "before -> sink:0 gather(), 2 (1 remote)",
            ]
        );
    }
}
