//! The physical plan: operators fused into tasks, tasks connected by channels.
//!
//! A chain of operators runs in one task when each link is a one-to-one edge: the downstream
//! operator has a single input, the stream has a single consumer, and the upstream operator
//! has a single output and ends its chain. Anything else is a channel between tasks.

use crate::logical::{LogicalGraph, NodeId, StreamId};

/// One task: a chain of operators run by one event loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskPlan {
    /// Index in [`PhysicalPlan::tasks`].
    pub id: usize,
    /// The fused operators, upstream first. Only the head may have several inputs.
    pub chain: Vec<NodeId>,
    /// The channels into the head, in no particular order.
    pub inputs: Vec<usize>,
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
}

/// Tasks and channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalPlan {
    /// Tasks, sources' tasks first (topological order of their heads).
    pub tasks: Vec<TaskPlan>,
    /// Channels between tasks.
    pub channels: Vec<ChannelPlan>,
}

impl PhysicalPlan {
    /// Plans `graph`, fusing chains when `chaining` is on.
    pub fn from_graph<B>(graph: &LogicalGraph<B>, chaining: bool) -> Self {
        let mut task_of: Vec<Option<usize>> = vec![None; graph.nodes.len()];
        let mut tasks: Vec<TaskPlan> = Vec::new();
        for &id in &graph.topo {
            let fuse_into = if chaining {
                fusable_predecessor(graph, id, &task_of, &tasks)
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
                let id = channels.len();
                channels.push(ChannelPlan {
                    id,
                    stream: StreamId(sid),
                    from_task,
                    from: stream.producer,
                    to_task,
                    to_input: port,
                });
                tasks[to_task].inputs.push(id);
            }
        }
        PhysicalPlan { tasks, channels }
    }

    /// The channels that leave `task`.
    pub fn outputs_of(&self, task: usize) -> impl Iterator<Item = &ChannelPlan> {
        self.channels.iter().filter(move |c| c.from_task == task)
    }
}

/// The task `id` can join: its single input's producer ends that task's chain, has one
/// output, and nobody else reads the stream.
fn fusable_predecessor<B>(
    graph: &LogicalGraph<B>,
    id: NodeId,
    task_of: &[Option<usize>],
    tasks: &[TaskPlan],
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
    let t = task_of[producer.0]?;
    (tasks[t].chain.last() == Some(&producer)).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logical::{Node, Stream};
    use anduin_spec::{OperatorDef, Text};
    use anduin_types::Pos;
    use arrow::datatypes::Schema;
    use std::sync::Arc;

    /// A graph from edges `(producer, consumer)`, one stream per producer.
    fn graph(n: usize, edges: &[(usize, usize)]) -> LogicalGraph<()> {
        let streams: Vec<Stream> = (0..n)
            .map(|p| Stream {
                name: format!("s{p}"),
                type_name: None,
                schema: Arc::new(Schema::empty()),
                producer: (NodeId(p), 0),
                consumers: Vec::new(),
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
                        pos: Pos::default(),
                    },
                    inputs: vec![],
                    outputs: vec![StreamId(i)],
                    bound: (),
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
    fn a_straight_line_fuses_into_one_task() {
        let plan = PhysicalPlan::from_graph(&graph(3, &[(0, 1), (1, 2)]), true);
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].chain, vec![NodeId(0), NodeId(1), NodeId(2)]);
        assert!(plan.channels.is_empty());
    }

    #[test]
    fn without_chaining_every_operator_is_a_task() {
        let plan = PhysicalPlan::from_graph(&graph(3, &[(0, 1), (1, 2)]), false);
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.channels.len(), 2);
    }

    #[test]
    fn a_union_starts_a_task_and_its_successor_joins_it() {
        // 0 and 1 are sources, 2 unions them, 3 reads the union.
        let plan = PhysicalPlan::from_graph(&graph(4, &[(0, 2), (1, 2), (2, 3)]), true);
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
    fn a_stream_read_twice_is_not_fused() {
        let plan = PhysicalPlan::from_graph(&graph(3, &[(0, 1), (0, 2)]), true);
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.outputs_of(0).count(), 2);
    }
}
