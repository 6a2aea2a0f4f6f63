//! The topology a query's [`QueryInfo`] implies, for a [`crate::QueryControl`] that cannot
//! tell where its instances run.

use anduin_runtime::control::{ExchangeInfo, InstancePlacement, TaskPlacement};

use crate::{QueryInfo, TopologyInfo};

/// What `info` tells of the topology: each task's instances numbered through the run in task
/// order, all on worker 0, and one exchange per stream from an operator of one task to an
/// operator of another, whose partitioning is `unknown` and whose channels are not counted.
pub fn topology_of(info: &QueryInfo) -> TopologyInfo {
    let mut next_id = 0;
    let tasks = info
        .tasks
        .iter()
        .map(|t| {
            let instances = (0..t.instances)
                .map(|instance| InstancePlacement {
                    instance,
                    id: next_id + instance,
                    worker: 0,
                })
                .collect();
            next_id += t.instances;
            TaskPlacement {
                id: t.id,
                operators: t.operators.clone(),
                instances,
            }
        })
        .collect();
    let mut exchanges = Vec::new();
    for consumer in &info.operators {
        for (to_input, stream) in consumer.inputs.iter().enumerate() {
            let producer = info.operators.iter().find(|o| o.outputs.contains(stream));
            if let Some(p) = producer.filter(|p| p.task != consumer.task) {
                exchanges.push(ExchangeInfo {
                    from_task: p.task,
                    from_operator: p.name.clone(),
                    to_task: consumer.task,
                    to_operator: consumer.name.clone(),
                    to_input,
                    partitioning: "unknown".into(),
                    keys: Vec::new(),
                    channels: 0,
                    remote_channels: 0,
                });
            }
        }
    }
    TopologyInfo {
        workers: vec![0],
        tasks,
        exchanges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_runtime::control::{OperatorInfo, QueryState, TaskInfo};

    fn op(name: &str, inputs: &[&str], outputs: &[&str], task: usize) -> OperatorInfo {
        OperatorInfo {
            name: name.into(),
            kind: "filter".into(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            parallelism: 1,
            task,
            stateful: false,
            adjustable: Vec::new(),
            max_parallelism: None,
            owners: None,
        }
    }

    #[test]
    fn instances_are_numbered_in_task_order_and_streams_across_tasks_are_exchanges() {
        let info = QueryInfo {
            name: "q".into(),
            file: None,
            started_ms: 0,
            state: QueryState::Running,
            checkpointing: false,
            operators: vec![
                op("gen", &[], &["raw"], 0),
                op("low", &["raw"], &["low"], 0),
                op("out", &["low"], &[], 1),
            ],
            tasks: vec![
                TaskInfo {
                    id: 0,
                    operators: vec!["gen".into(), "low".into()],
                    instances: 2,
                },
                TaskInfo {
                    id: 1,
                    operators: vec!["out".into()],
                    instances: 1,
                },
            ],
            written: Vec::new(),
        };
        let t = topology_of(&info);
        let ids: Vec<(usize, usize)> = t
            .tasks
            .iter()
            .flat_map(|t| t.instances.iter().map(move |i| (t.id, i.id)))
            .collect();
        assert_eq!(ids, [(0, 0), (0, 1), (1, 2)]);
        assert_eq!(t.exchanges.len(), 1, "gen -> low is fused: no exchange");
        let e = &t.exchanges[0];
        assert_eq!(
            (
                e.from_operator.as_str(),
                e.to_operator.as_str(),
                e.partitioning.as_str()
            ),
            ("low", "out", "unknown")
        );
    }
}
