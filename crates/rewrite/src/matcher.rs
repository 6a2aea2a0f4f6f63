//! Finding every match of a rule's left side in a graph.
//!
//! Order (deterministic): match roots are tried consumers first
//! ([`Graph::consumers_first`]: an operator before its inputs, smaller ids first among the
//! ready); at one root, inputs are matched in order and a chain `any*(…)` yields every length,
//! longest first. So the first match of a chain pattern is the longest chain starting at the
//! topmost operator that starts one.
//!
//! A match is kept when:
//! - no operator is matched by two nodes of the pattern (a stream, `any*` without inputs, may
//!   be any operator outside the matched ones, even one bound to another stream);
//! - at least one operator is matched (an empty chain alone matches nothing);
//! - no matched operator carries a mark of this rule for the same role, nor a mark saying
//!   this rule created it (see the crate docs, "Termination");
//! - the constraints hold ([`crate::constraint`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::constraint::holds;
use crate::error::GraphError;
use crate::facts::Facts;
use crate::matched::{Bound, Match};
use crate::model::{Graph, Mark, OpId};
use crate::rule::{Pattern, PatternKind, Rule};

/// Every match of the rule's left side in the graph, in the order described in the module
/// docs. Fails only if the graph has a cycle.
///
/// # Examples
///
/// ```
/// use anduin_rewrite::{find_matches, parse_graph, parse_rules, TableFacts};
/// let g = parse_graph("g", "sink := writer(f := filter(g := filter(src := reader)))")?;
/// let rules = parse_rules("r", "a := any(f := filter(s := any*))[stateless(f)] => a")?;
/// let facts = TableFacts::stateless(["filter"]);
/// let found = find_matches(&rules.rules[0], &g, &facts)?;
/// // (sink, f) and (f, g): two overlapping matches, the consumer's first.
/// assert_eq!(found.len(), 2);
/// assert_eq!(found.first().map(|m| m.root), g.find("sink"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn find_matches(
    rule: &Rule,
    graph: &Graph,
    facts: &dyn Facts,
) -> Result<Vec<Match>, GraphError> {
    let mut out = Vec::new();
    for root in graph.consumers_first()? {
        for bindings in match_at(&rule.left, root, graph, facts) {
            let m = Match {
                rule: rule.name.clone(),
                root,
                bindings,
            };
            if acceptable(rule, &m, graph, facts) {
                out.push(m);
            }
        }
    }
    Ok(out)
}

type Bindings = BTreeMap<String, Bound>;

fn acceptable(rule: &Rule, m: &Match, graph: &Graph, facts: &dyn Facts) -> bool {
    let region = m.region();
    if region.is_empty() {
        return false;
    }
    let ids: BTreeSet<OpId> = region.iter().map(|(id, _)| *id).collect();
    if ids.len() < region.len() {
        return false;
    }
    let streams_outside = m.bindings.values().all(|b| match b {
        Bound::Stream(id) => !ids.contains(id),
        _ => true,
    });
    if !streams_outside {
        return false;
    }
    let created = Mark {
        rule: rule.name.clone(),
        role: None,
    };
    let blocked = region.iter().any(|(id, role)| {
        graph.get(*id).is_some_and(|op| {
            op.marks.contains(&created)
                || op.marks.contains(&Mark {
                    rule: rule.name.clone(),
                    role: Some(role.to_string()),
                })
        })
    });
    !blocked
        && rule
            .constraint
            .as_ref()
            .is_none_or(|c| holds(c, m, graph, facts))
}

/// Every way `p` matches with its root at `id`.
fn match_at(p: &Pattern, id: OpId, graph: &Graph, facts: &dyn Facts) -> Vec<Bindings> {
    let Some(op) = graph.get(id) else {
        return Vec::new();
    };
    match (&p.kind, &p.inputs) {
        (PatternKind::Star, None) => vec![Bindings::from([(p.name.clone(), Bound::Stream(id))])],
        (PatternKind::Star, Some(inputs)) => {
            let Some(below) = inputs.first() else {
                return Vec::new();
            };
            // The longest chain of single-input operators from `id` down.
            let mut chain = vec![];
            let mut at = id;
            while let Some(next) = graph.get(at).and_then(|o| match o.inputs.as_slice() {
                [only] if !chain.contains(&at) => Some(*only),
                _ => None,
            }) {
                chain.push(at);
                at = next;
            }
            let mut out = Vec::new();
            for k in (0..=chain.len()).rev() {
                let ops: Vec<OpId> = chain.iter().take(k).copied().collect();
                let start = match k {
                    0 => id,
                    _ => chain
                        .get(k - 1)
                        .and_then(|bottom| graph.get(*bottom))
                        .and_then(|o| o.inputs.first().copied())
                        .unwrap_or(id),
                };
                for mut b in match_at(below, start, graph, facts) {
                    b.insert(
                        p.name.clone(),
                        Bound::Chain {
                            ops: ops.clone(),
                            below: start,
                        },
                    );
                    out.push(b);
                }
            }
            out
        }
        (kind, inputs) => {
            if let PatternKind::Type(t) = kind {
                if facts.kind(op) != t {
                    return Vec::new();
                }
            }
            let mut partial = vec![Bindings::from([(p.name.clone(), Bound::Op(id))])];
            let Some(inputs) = inputs else {
                return partial;
            };
            if inputs.len() != op.inputs.len() {
                return Vec::new();
            }
            for (q, input) in inputs.iter().zip(&op.inputs) {
                let options = match_at(q, *input, graph, facts);
                partial = partial
                    .iter()
                    .flat_map(|b| {
                        options.iter().map(move |o| {
                            let mut merged = b.clone();
                            merged.extend(o.iter().map(|(k, v)| (k.clone(), v.clone())));
                            merged
                        })
                    })
                    .collect();
            }
            partial
        }
    }
}

#[cfg(test)]
mod tests;
