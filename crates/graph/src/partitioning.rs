//! How many instances each operator runs as: what the built-in partitioning rules (the paper's
//! pattern 4, `anduin-rewrite`'s `partitioning`, `partitioning_2` and `partitioning_source`)
//! make of the query. The physical planner takes its instance counts from here, so that
//! `param parallelism` and `--parallelism` are applied by the rules, as `explain --rewritten`
//! shows them, and nowhere else.
//!
//! The query's data flow (control inputs left out: a control stream goes to every instance,
//! it is not split) becomes a rule graph; each parallelizable operator without a parallelism of
//! its own is given the query's default (`--parallelism`); the rules are applied; then every
//! `merge` a partitioning rule made is read back: it unites the copies of one operator, its
//! first input being the operator itself, and their number is the operator's instance count.
//! An operator no rule partitioned runs as one instance.

use std::collections::HashMap;

use anduin_rewrite::{rewrite_within, Facts, Operator, MAX_COPIES};

use crate::logical::LogicalGraph;

/// The rules applied here: the built-in ones whose name starts with this.
const RULES: &str = "partitioning";

/// Why the instances of a query could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitioningError {
    /// An operator asks for more instances than a rule may make.
    #[error("operator \"{operator}\" asks for {asked} instances ({how}), more than the {max} the partitioning rule may make: ask for at most {max}")]
    TooMany {
        /// The operator.
        operator: String,
        /// The instances it asks for.
        asked: usize,
        /// Where it asks for them: its own `param parallelism`, or `--parallelism`.
        how: &'static str,
        /// The most a rule makes ([`MAX_COPIES`]).
        max: u64,
    },
    /// The partitioning rules could not be applied to the query (an operator asks for more
    /// instances than a rule may make: `anduin_rewrite::MAX_COPIES`).
    #[error("the partitioning rule cannot split the query: {0}")]
    Rule(String),
}

/// The instances of each node of `graph`, by [`NodeId`], when operators that can run in
/// parallel and set no `parallelism` of their own run `default` instances.
pub fn instances<B>(
    graph: &LogicalGraph<B>,
    default: usize,
) -> Result<Vec<usize>, PartitioningError> {
    for node in &graph.nodes {
        let Some((asked, how)) = asked(node, default) else {
            continue;
        };
        if u64::try_from(asked).map_or(true, |a| a > MAX_COPIES) {
            return Err(PartitioningError::TooMany {
                operator: node.name().to_string(),
                asked,
                how,
                max: MAX_COPIES,
            });
        }
    }
    // Data inputs only: a control stream goes to every instance, it is not split.
    let before = crate::rewriting::logical_rule_graph(graph, false, |node| {
        asked(node, default).map(|(p, _)| ("parallelism", p.to_string()))
    });
    let rules = crate::rewriting::builtin_family(RULES);
    // Each operator is partitioned at most once: as many applications as operators.
    let limit = graph.nodes.len().max(1);
    let grown = crate::rewriting::growth_bound(&before);
    let after = rewrite_within(&before, &rules, &NoFacts, limit, grown)
        .map_err(|e| PartitioningError::Rule(e.to_string()))?;
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, op) in after.graph.iter() {
        let made_by_rule = op
            .marks
            .iter()
            .any(|m| m.rule.starts_with(RULES) && m.role.is_none());
        if op.kind != "merge" || !made_by_rule {
            continue;
        }
        let Some(first) = op.inputs.first().and_then(|i| after.graph.get(*i)) else {
            continue;
        };
        count.insert(first.name.as_str(), op.inputs.len());
    }
    Ok(graph
        .nodes
        .iter()
        .map(|n| count.get(n.name()).copied().unwrap_or(1))
        .collect())
}

/// The instances `node` asks for, and where: its own `parallelism`, or `default` when it can
/// run in parallel, sets none, and the default is at least 2.
fn asked<B>(node: &crate::logical::Node<B>, default: usize) -> Option<(usize, &'static str)> {
    match node.parallelism {
        Some(p) => Some((p, "param parallelism")),
        None if takes_default(node) && default >= 2 => Some((default, "--parallelism")),
        None => None,
    }
}

/// Whether `node` runs the query's default number of instances when it sets none: it can run
/// in parallel and splits its rows between its instances (a source reading its share, an
/// operator splitting an input by keys). A window without keys, a pattern without
/// `partition_by`, would send every row to one instance and leave the others idle: it runs
/// as one (its own `parallelism` is refused when checked). A pattern that spreads its partial
/// matches over copies runs each copy as one instance.
pub(crate) fn takes_default<B>(node: &crate::logical::Node<B>) -> bool {
    node.parallelism.is_none()
        && node.def.spread_copies().is_none()
        && node.parallelizable
        && (node.partition_by.is_empty() || node.partition_by.iter().any(Option::is_some))
}

/// The partitioning and pipelining rules ask nothing of operators beyond their params.
pub(crate) struct NoFacts;

impl Facts for NoFacts {
    fn is_stateless(&self, _op: &Operator) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physical::tests::graph;

    #[test]
    fn an_operator_s_own_parallelism_is_what_the_rule_makes_of_it() {
        // 0 source, 1 keyed at parallelism 4, 2 after it.
        let mut g = graph(3, &[(0, 1), (1, 2)]);
        g.nodes[1].parallelism = Some(4);
        g.nodes[1].parallelizable = true;
        assert_eq!(instances(&g, 1), Ok(vec![1, 4, 1]));
    }

    #[test]
    fn the_default_goes_to_operators_that_can_run_in_parallel_and_set_none() {
        let mut g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        g.nodes[1].parallelizable = true;
        g.nodes[2].parallelizable = true;
        g.nodes[2].parallelism = Some(1);
        assert_eq!(instances(&g, 3), Ok(vec![1, 3, 1, 1]));
        assert_eq!(instances(&g, 1), Ok(vec![1, 1, 1, 1]));
    }

    #[test]
    fn the_default_passes_over_an_operator_without_keys_to_split_by() {
        // 1 keyed, 2 without keys (a global window): every row would go to one instance.
        let mut g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        g.nodes[1].parallelizable = true;
        g.nodes[1].partition_by = vec![Some(vec![0])];
        g.nodes[2].parallelizable = true;
        g.nodes[2].partition_by = vec![None];
        assert_eq!(instances(&g, 3), Ok(vec![1, 3, 1, 1]));
    }

    #[test]
    fn two_parallel_operators_one_after_the_other_are_each_partitioned() {
        let mut g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        for n in [1, 2] {
            g.nodes[n].parallelizable = true;
        }
        g.nodes[2].parallelism = Some(2);
        assert_eq!(instances(&g, 3), Ok(vec![1, 3, 2, 1]));
    }

    #[test]
    fn a_parallel_source_and_a_parallel_join_are_partitioned_too() {
        // 0 and 1 sources, 2 a join of both.
        let mut g = graph(3, &[(0, 2), (1, 2)]);
        for n in [0, 2] {
            g.nodes[n].parallelizable = true;
        }
        g.nodes[0].parallelism = Some(2);
        assert_eq!(instances(&g, 5), Ok(vec![2, 1, 5]));
    }

    #[test]
    fn more_instances_than_a_rule_may_make_is_an_error_not_fewer_instances() {
        let mut g = graph(2, &[(0, 1)]);
        g.nodes[1].parallelizable = true;
        g.nodes[1].parallelism = Some(5000);
        let err = instances(&g, 1).expect_err("too many");
        assert!(err.to_string().contains("5000"), "{err}");
        // Through the default, naming the operator and the flag.
        g.nodes[1].parallelism = None;
        let err = instances(&g, 1025).expect_err("too many").to_string();
        assert!(
            err.contains("operator \"n1\" asks for 1025 instances (--parallelism)"),
            "{err}"
        );
    }

    #[test]
    fn the_instances_of_several_operators_may_add_up_to_more_than_a_rule_may_make() {
        // Two operators one after the other, each under the most a rule makes, together
        // over it: each runs as many instances as it asks for.
        let mut g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        for n in [1, 2] {
            g.nodes[n].parallelizable = true;
        }
        assert_eq!(instances(&g, 600), Ok(vec![1, 600, 600, 1]));
    }
}
