//! The query as the control plane shows it: its operators (the logical graph) and its tasks
//! (the physical one), from the checked graph and its topology.

use anduin_graph::LogicalGraph;

use super::types::{OperatorInfo, TaskInfo};
use crate::topology::Topology;

/// Every operator of `graph`, in topological order, with the task it runs in.
pub(crate) fn operators<B>(graph: &LogicalGraph<B>, topology: &Topology) -> Vec<OperatorInfo> {
    let stream_names = |ids: &[anduin_graph::StreamId]| -> Vec<String> {
        ids.iter()
            .filter_map(|s| graph.streams.get(s.0).map(|s| s.name.clone()))
            .collect()
    };
    graph
        .topo
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            let task = topology.tasks.iter().find(|t| t.nodes().any(|n| n == *id));
            OperatorInfo {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                inputs: stream_names(&node.inputs),
                outputs: stream_names(&node.outputs),
                parallelism: task.map_or(1, |t| t.parallelism),
                task: task.map_or(0, |t| t.task),
                stateful: node.stateful,
                adjustable: Vec::new(),
            }
        })
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
