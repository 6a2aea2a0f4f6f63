//! The worker slots a rewriting rule gave operators (`@{g.p1}` in a rule's right side, carried
//! as `param placement = "g.p1"`: `anduin_graph::run_spec`), as placement constraints: within
//! one group, operators with distinct slots run on distinct workers. Operators with the same
//! slot may share a worker (they are not forced to). Two operators of one group with distinct
//! slots fused into one task cannot be apart: the query is refused, saying what to do.

use std::collections::BTreeMap;

use anduin_coordinator::{Constraint, TaskRef};
use anduin_graph::LogicalGraph;
use anduin_runtime::Topology;

/// `(group, slot)` of a `placement` value: `g.p1`, or `p1` in the empty group.
fn slot_of(value: &str) -> (&str, &str) {
    value.rsplit_once('.').unwrap_or(("", value))
}

/// The slots of the operators of each task, by group: `task → group → slot → operator`.
fn slots_by_task<B>(
    topo: &Topology,
    graph: &LogicalGraph<B>,
) -> Vec<BTreeMap<String, BTreeMap<String, String>>> {
    topo.tasks
        .iter()
        .map(|t| {
            let mut groups: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for n in t.nodes() {
                let node = graph.node(n);
                if let Some(p) = node.def.param("placement") {
                    let value = p.value.as_text();
                    let (group, slot) = slot_of(value.as_str());
                    groups
                        .entry(group.to_string())
                        .or_default()
                        .entry(slot.to_string())
                        .or_insert_with(|| node.name().to_string());
                }
            }
            groups
        })
        .collect()
}

/// Refuses a plan that fuses operators of one group with distinct slots into one task.
pub(super) fn check<B>(topo: &Topology, graph: &LogicalGraph<B>) -> Result<(), String> {
    for (t, groups) in topo.tasks.iter().zip(slots_by_task(topo, graph)) {
        for (group, slots) in groups {
            let mut ops = slots.iter();
            if let (Some((s1, a)), Some((s2, b))) = (ops.next(), ops.next()) {
                let at = |s: &str| {
                    if group.is_empty() {
                        s.to_string()
                    } else {
                        format!("{group}.{s}")
                    }
                };
                return Err(format!(
                    "operators \"{a}\" (@{{{}}}) and \"{b}\" (@{{{}}}) must run on distinct workers, but the plan fuses them into one task ({}): add `param pipeline = \"split\"` to \"{b}\", or submit with --no-chaining",
                    at(s1),
                    at(s2),
                    t.name
                ));
            }
        }
    }
    Ok(())
}

/// The constraints: every instance of a task holding an operator at slot `s` of a group runs
/// on another worker than every instance of a task holding one at another slot of that group.
pub(super) fn constraints<B>(topo: &Topology, graph: &LogicalGraph<B>) -> Vec<Constraint> {
    let by_task = slots_by_task(topo, graph);
    let mut out = Vec::new();
    for (a, ga) in by_task.iter().enumerate() {
        for (b, gb) in by_task.iter().enumerate().skip(a + 1) {
            let apart = ga.iter().any(|(group, sa)| {
                gb.get(group)
                    .is_some_and(|sb| sa.keys().any(|s| sb.keys().any(|t| s != t)))
            });
            let (Some(ta), Some(tb)) = (topo.tasks.get(a), topo.tasks.get(b)) else {
                continue;
            };
            if !apart {
                continue;
            }
            for ia in &ta.instances {
                for ib in &tb.instances {
                    let r = |i: &anduin_runtime::TaskInstance| TaskRef {
                        task: u32::try_from(i.at.task).unwrap_or(u32::MAX),
                        instance: u32::try_from(i.at.instance).unwrap_or(u32::MAX),
                    };
                    out.push(Constraint::distinct(
                        "the slots a rule placed apart",
                        [r(ia), r(ib)],
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_read_with_or_without_its_group() {
        assert_eq!(slot_of("low.p1"), ("low", "p1"));
        assert_eq!(slot_of("p2"), ("", "p2"));
        assert_eq!(slot_of("a.b.p3"), ("a.b", "p3"));
    }
}
