//! A query's fingerprint for checkpoints: what a restore compares to decide whether the
//! checkpoint still fits the query.

use anduin_checkpoint::plan::{OperatorFingerprint, PlanFingerprint};
use anduin_graph::{describe_schema, LogicalGraph, PhysicalPlan};
use anduin_operator_api::Bound;

/// The fingerprint of `graph` planned as `plan`.
pub fn fingerprint(graph: &LogicalGraph<Bound>, plan: &PhysicalPlan) -> PlanFingerprint {
    let operators = graph
        .topo
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            let schemas = |ids: &[anduin_graph::StreamId]| -> Vec<String> {
                ids.iter()
                    .map(|s| describe_schema(&graph.stream(*s).schema))
                    .collect()
            };
            OperatorFingerprint {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                stateful: node.stateful,
                params: node
                    .def
                    .params
                    .iter()
                    // What a bad row does may change between runs (`--on-error fail` to find
                    // one): it changes no state. A `parallelism` of its own is compared as
                    // `--parallelism` is, by the instances planned (below): the restore
                    // re-cuts the state of an operator that can be, and refuses the others.
                    .filter(|p| !matches!(p.name.as_str(), "on_error" | "parallelism"))
                    .map(|p| (p.name.to_string(), p.value.as_text().to_string()))
                    .collect(),
                inputs: schemas(&node.inputs),
                outputs: schemas(&node.outputs),
                parallelism: plan.owners_of(*id),
                instances: Some(plan.instances_of(*id)).filter(|&n| n != plan.owners_of(*id)),
            }
        })
        .collect();
    PlanFingerprint { operators }
}
