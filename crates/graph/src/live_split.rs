//! The numbers of the tasks split while a query runs (`anduin ctl set Q OP pipeline split`,
//! the paper's pattern 5, live), as a pure function of the plan and of the splits asked so
//! far, in the order of the changes that asked them.
//!
//! A cluster's executors each compile the whole query and each split their own instances of
//! a task, at the barrier that carries the change; the checkpoint coordinator, the control
//! plane and a part restored later must all call the new task instances alike. So the new
//! task and its instances are numbered from facts every process has, never from a counter of
//! its own: the plan the run started from, and the ordered list of the live splits. Each
//! split that cuts a chain appends a task, numbered after every task so far (the plan's, then
//! those split before it), whose instances are numbered after every instance so far, in the
//! order of their numbers in the task: the numbers of the plan's own tasks, instances and
//! channels never change, so that a run resumed from a checkpoint taken after a split plans
//! it from the start with the numbers the live split gave (the channels between workers are
//! named by the plan's channel numbers).

use crate::logical::{LogicalGraph, NodeId, StreamId};
use crate::physical::{ChannelPlan, Partitioning, PhysicalPlan, TaskPlan};

/// One task split off while the query ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveSplit {
    /// The task it was cut from (its index in the plan).
    pub from_task: usize,
    /// The new task's index in the plan: after every task before it.
    pub task: usize,
    /// The first operator it took (the one the split was asked of); the operators after it
    /// in the chain came along.
    pub first: NodeId,
    /// The number of its instance 0 in the run; instance `i` is `first_id + i`, and is fed
    /// by instance `i` of `from_task`.
    pub first_id: usize,
    /// How many instances run it: as many as the task it split from.
    pub parallelism: usize,
}

impl PhysicalPlan {
    /// Splits this plan's chains right before each of `before`, in that order (the order of
    /// the changes that asked), as a running query does: a node that heads its task already
    /// (or a source, or a node the plan lacks) is not split. Each split appends a task (see
    /// the module's doc) fed through a new channel, appended too, from the node before the
    /// cut, each instance by the instance of its own number ([`Partitioning::Forward`]); the
    /// channels the moved nodes feed are the new task's from then on. Returns the splits
    /// made, in order.
    pub fn split_live<B>(&mut self, graph: &LogicalGraph<B>, before: &[NodeId]) -> Vec<LiveSplit> {
        self.split_live_with(|n| graph.node(n).outputs.first().copied(), before)
    }

    /// [`PhysicalPlan::split_live`], the stream each node's first output carries given by
    /// `stream_of` (for a caller that keeps no graph).
    pub fn split_live_with(
        &mut self,
        stream_of: impl Fn(NodeId) -> Option<StreamId>,
        before: &[NodeId],
    ) -> Vec<LiveSplit> {
        let mut made = Vec::new();
        for &first in before {
            let Some((from_task, at)) = self
                .tasks
                .iter()
                .find_map(|t| t.chain.iter().position(|n| *n == first).map(|i| (t.id, i)))
            else {
                continue;
            };
            // The head of its task (a source's task has the source at its head).
            let Some(feeder) = at.checked_sub(1) else {
                continue;
            };
            let before_cut = self.tasks[from_task].chain[feeder];
            // A fused node has one output, read by the next node only.
            let Some(stream) = stream_of(before_cut) else {
                continue;
            };
            let task = self.tasks.len();
            let first_id = self.tasks.iter().map(|t| t.parallelism).sum();
            let parent = &mut self.tasks[from_task];
            let moved = parent.chain.split_off(at);
            let (parallelism, active) = (parent.parallelism, parent.active);
            for c in self
                .channels
                .iter_mut()
                .filter(|c| c.from_task == from_task && moved.contains(&c.from.0))
            {
                c.from_task = task;
            }
            let channel = self.channels.len();
            self.channels.push(ChannelPlan {
                id: channel,
                stream,
                from_task,
                from: (before_cut, 0),
                to_task: task,
                to_input: 0,
                partitioning: Partitioning::Forward,
            });
            self.tasks.push(TaskPlan {
                id: task,
                chain: moved,
                inputs: vec![channel],
                parallelism,
                active,
            });
            made.push(LiveSplit {
                from_task,
                task,
                first,
                first_id,
                parallelism,
            });
        }
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physical::tests::graph;
    use crate::physical::PlanOptions;

    /// A source 0 feeding the chain 1 -> 2 -> 3 -> 4 and, apart, a source 5 feeding 6 -> 7,
    /// fused into two tasks of `parallelism` instances.
    fn two_chains(parallelism: usize) -> (LogicalGraph<()>, PhysicalPlan) {
        let mut g = graph(8, &[(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (6, 7)]);
        for n in &mut g.nodes {
            n.parallelizable = true;
        }
        let options = PlanOptions {
            chaining: true,
            default_parallelism: parallelism,
            max_parallelism: None,
        };
        let plan = PhysicalPlan::plan(&g, options).expect("the graph plans");
        assert_eq!(plan.tasks.len(), 2);
        (g, plan)
    }

    fn chains(plan: &PhysicalPlan) -> Vec<Vec<usize>> {
        plan.tasks
            .iter()
            .map(|t| t.chain.iter().map(|n| n.0).collect())
            .collect()
    }

    #[test]
    fn each_split_appends_a_task_numbered_after_every_task_and_instance_so_far() {
        let (g, mut plan) = two_chains(2);
        let made = plan.split_live(&g, &[NodeId(3), NodeId(7), NodeId(2)]);
        assert_eq!(
            made,
            [
                LiveSplit {
                    from_task: 0,
                    task: 2,
                    first: NodeId(3),
                    first_id: 4,
                    parallelism: 2
                },
                LiveSplit {
                    from_task: 1,
                    task: 3,
                    first: NodeId(7),
                    first_id: 6,
                    parallelism: 2
                },
                LiveSplit {
                    from_task: 0,
                    task: 4,
                    first: NodeId(2),
                    first_id: 8,
                    parallelism: 2
                },
            ]
        );
        assert_eq!(
            chains(&plan),
            [vec![0, 1], vec![5, 6], vec![3, 4], vec![7], vec![2]]
        );
        // Each new task is fed forward, instance by instance, by the node before the cut (2,
        // moved on by the third split, feeds the first from task 4); channels keep their
        // numbers.
        let fed: Vec<(usize, usize, usize, usize)> = plan
            .channels
            .iter()
            .map(|c| (c.id, c.from_task, c.from.0 .0, c.to_task))
            .collect();
        assert_eq!(fed, [(0, 4, 2, 2), (1, 1, 6, 3), (2, 0, 1, 4)]);
        assert!(plan
            .channels
            .iter()
            .all(|c| c.partitioning == Partitioning::Forward));
        assert!(plan.tasks.iter().enumerate().all(|(i, t)| t.id == i));
    }

    #[test]
    fn a_later_cut_in_a_split_task_moves_what_it_feeds_and_the_cut_is_numbered_by_its_order() {
        let (g, mut plan) = two_chains(1);
        // Cut before 2, then before 4, which is in the task split off first by then.
        let made = plan.split_live(&g, &[NodeId(2), NodeId(4)]);
        assert_eq!(made[1].from_task, 2);
        assert_eq!((made[1].task, made[1].first_id), (3, 3));
        assert_eq!(
            chains(&plan),
            [vec![0, 1], vec![5, 6, 7], vec![2, 3], vec![4]]
        );
        // In the other order, the same tasks with other numbers: the order is the changes'.
        let (g, mut other) = two_chains(1);
        let made = other.split_live(&g, &[NodeId(4), NodeId(2)]);
        assert_eq!((made[0].from_task, made[1].from_task), (0, 0));
        assert_eq!(
            chains(&other),
            [vec![0, 1], vec![5, 6, 7], vec![4], vec![2, 3]]
        );
        // The channel into 4 comes from the task holding 3 in both.
        let into_4 = other
            .channels
            .iter()
            .find(|c| c.to_task == 2)
            .expect("a channel");
        assert_eq!((into_4.from.0, into_4.from_task), (NodeId(3), 3));
    }

    #[test]
    fn a_head_a_source_a_node_split_twice_and_an_unknown_node_split_nothing() {
        let (g, mut plan) = two_chains(3);
        let made = plan.split_live(
            &g,
            &[NodeId(0), NodeId(5), NodeId(1), NodeId(1), NodeId(99)],
        );
        // 1 is cut from its source once; the second time it heads its task.
        assert_eq!(
            made,
            [LiveSplit {
                from_task: 0,
                task: 2,
                first: NodeId(1),
                first_id: 6,
                parallelism: 3
            }]
        );
        assert_eq!(chains(&plan), [vec![0], vec![5, 6, 7], vec![1, 2, 3, 4]]);
    }

    #[test]
    fn the_same_splits_number_alike_in_every_process_and_on_resume() {
        // Two executors each split their instances; one resumed later plans the first split
        // from the start and splits the second while running: all agree.
        let (g, base) = two_chains(2);
        let mut a = base.clone();
        let all = a.split_live(&g, &[NodeId(3), NodeId(6)]);
        let mut resumed = base.clone();
        let mut again = resumed.split_live(&g, &[NodeId(3)]);
        again.extend(resumed.split_live(&g, &[NodeId(6)]));
        assert_eq!(all, again);
        assert_eq!(a, resumed);
    }
}
