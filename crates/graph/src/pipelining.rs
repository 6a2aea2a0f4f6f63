//! Which operators run as a task of their own: what the built-in pipelining rules (the paper's
//! pattern 5, `anduin-rewrite`'s `pipelining`, `pipelining_source` and `pipelining_2`) make of
//! the query. The physical planner takes its task boundaries from here, so that `param
//! pipeline = "split"` is applied by the rules, as `explain --rewritten` shows them, and
//! nowhere else.
//!
//! The query's graph (every input, a control stream's producer last, as `explain --rewritten`
//! sees it) becomes a rule graph; the pipelining rules are applied; then every operator a
//! pipelining rule placed is a *stage*: a task of its own, fused with neither the operator
//! before it nor the one after. The rule places a chain of split operators on distinct slots
//! of one group (`@{top.p1}`, `@{top.p2}`, …: distinct workers on a cluster), a single split
//! operator, a split source and a split operator of two inputs each on a slot of its own.
//!
//! An operator that asks for `pipeline = "split"` and that no rule placed (a union of three
//! inputs) is refused, naming it, rather than planned fused as if it had not asked.

use std::collections::HashMap;

use anduin_rewrite::{rewrite, Placement};

use crate::logical::LogicalGraph;
use crate::partitioning::NoFacts;

/// The rules applied here: the built-in ones whose name starts with this.
const RULES: &str = "pipelining";

/// The param that asks for pipelining, and the value that does.
const PARAM: (&str, &str) = ("pipeline", "split");

/// Where a pipelining rule placed an operator: a task of its own, at this slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The rule's group (the name of the chain's top operator): stages of one group with
    /// distinct slots run on distinct workers.
    pub group: String,
    /// The slot in the group (`p1` for the chain's top, `p2` below it, …).
    pub slot: String,
}

/// Why the task boundaries of a query could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PipeliningError {
    /// An operator asks for `pipeline = "split"` but no pipelining rule applies to it.
    #[error("operator \"{operator}\" asks for pipeline = \"split\", but no pipelining rule splits an operator of {inputs} inputs (they split a source, an operator of one input or of two): remove the param (an operator of several inputs heads its task already), or put it on the operator after it")]
    NotPlaced {
        /// The operator.
        operator: String,
        /// How many inputs it has (its control stream counted).
        inputs: usize,
    },
    /// The pipelining rules could not be applied to the query (a bug: they only place).
    #[error("the pipelining rule cannot split the query: {0}")]
    Rule(String),
}

/// For each node of `graph`, by [`NodeId`](crate::NodeId), where the pipelining rules placed it:
/// `Some` for a stage (a task of its own), `None` for an operator they left to be fused.
pub fn stages<B>(graph: &LogicalGraph<B>) -> Result<Vec<Option<Stage>>, PipeliningError> {
    let asks = |n: &crate::logical::Node<B>| {
        n.def
            .param(PARAM.0)
            .is_some_and(|p| p.value.as_text().as_str() == PARAM.1)
    };
    if !graph.nodes.iter().any(asks) {
        return Ok(vec![None; graph.nodes.len()]);
    }
    let before = crate::rewriting::logical_rule_graph(graph, true, |_| None);
    let rules = crate::rewriting::builtin_family(RULES);
    // Each operator is placed at most once: as many applications as operators.
    let limit = graph.nodes.len().max(1);
    let after = rewrite(&before, &rules, &NoFacts, limit)
        .map_err(|e| PipeliningError::Rule(e.to_string()))?;
    let mut placed: HashMap<&str, Stage> = HashMap::new();
    for (_, op) in after.graph.iter() {
        let by_rule = op
            .marks
            .iter()
            .any(|m| m.rule.starts_with(RULES) && m.role.is_some());
        if let (true, Placement::Slot { group, slot }) = (by_rule, &op.placement) {
            let stage = Stage {
                group: group.clone(),
                slot: slot.clone(),
            };
            placed.insert(op.name.as_str(), stage);
        }
    }
    graph
        .nodes
        .iter()
        .map(|n| match placed.get(n.name()) {
            Some(stage) => Ok(Some(stage.clone())),
            None if asks(n) => Err(PipeliningError::NotPlaced {
                operator: n.name().to_string(),
                inputs: n.inputs.len(),
            }),
            None => Ok(None),
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::physical::tests::graph;
    use anduin_spec::Text;

    /// `graph` with `pipeline = "split"` on the nodes `split`.
    pub(crate) fn split(mut g: LogicalGraph<()>, split: &[usize]) -> LogicalGraph<()> {
        for &n in split {
            let def = &g.nodes[n].def;
            g.nodes[n].def = def.with_param(PARAM.0, Text::unplaced(PARAM.1));
        }
        g
    }

    /// The stages of `g` as (node, group, slot).
    fn placed(g: &LogicalGraph<()>) -> Vec<(usize, String, String)> {
        stages(g)
            .expect("the graph plans")
            .into_iter()
            .enumerate()
            .filter_map(|(n, s)| s.map(|s| (n, s.group, s.slot)))
            .collect()
    }

    fn at(n: usize, group: &str, slot: &str) -> (usize, String, String) {
        (n, group.to_string(), slot.to_string())
    }

    #[test]
    fn without_the_param_nothing_is_a_stage() {
        assert_eq!(placed(&graph(3, &[(0, 1), (1, 2)])), vec![]);
    }

    #[test]
    fn a_chain_of_split_operators_takes_one_slot_each_of_one_group() {
        // 0 source, 1 → 2 → 3 split, 4 sink: the chain's top (3) is p1.
        let g = split(graph(5, &[(0, 1), (1, 2), (2, 3), (3, 4)]), &[1, 2, 3]);
        assert_eq!(
            placed(&g),
            vec![at(1, "n3", "p3"), at(2, "n3", "p2"), at(3, "n3", "p1")]
        );
    }

    #[test]
    fn a_single_split_operator_is_a_stage_of_its_own() {
        let g = split(graph(3, &[(0, 1), (1, 2)]), &[1]);
        assert_eq!(placed(&g), vec![at(1, "n1", "p1")]);
    }

    #[test]
    fn a_split_source_and_a_split_join_are_stages_too() {
        // 0 and 1 sources (0 split), 2 a split join of both, 3 a sink.
        let g = split(graph(4, &[(0, 2), (1, 2), (2, 3)]), &[0, 2]);
        assert_eq!(placed(&g), vec![at(0, "n0", "p1"), at(2, "n2", "p1")]);
    }

    #[test]
    fn split_operators_apart_are_two_groups() {
        // 1 and 3 split, 2 between them not: two chains of one.
        let g = split(graph(5, &[(0, 1), (1, 2), (2, 3), (3, 4)]), &[1, 3]);
        assert_eq!(placed(&g), vec![at(1, "n1", "p1"), at(3, "n3", "p1")]);
    }

    #[test]
    fn a_split_operator_of_three_inputs_is_refused_naming_it() {
        let g = split(graph(4, &[(0, 3), (1, 3), (2, 3)]), &[3]);
        let err = stages(&g).expect_err("no rule places it").to_string();
        assert!(
            err.contains("operator \"n3\" asks for pipeline = \"split\"")
                && err.contains("3 inputs"),
            "{err}"
        );
    }
}
