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

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::constraint::{holds, holds_on, per_operator};
use crate::error::GraphError;
use crate::facts::Facts;
use crate::matched::{Bound, Match};
use crate::model::{Graph, Mark, OpId};
use crate::rule::{BindingKind, Constraint, Pattern, PatternKind, Rule};

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
    let matcher = Matcher::new(rule, graph, facts);
    Ok(graph
        .consumers_first()?
        .into_iter()
        .flat_map(|root| matcher.matches_at(root))
        .collect())
}

type Bindings = BTreeMap<String, Bound>;

/// The matcher's work, counted in tests: operators examined (as a pattern node's candidate or
/// a chain's next operator) and candidate matches checked. Tests bound it, not the time.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local! {
        static EXAMINED: Cell<u64> = const { Cell::new(0) };
    }

    /// Counts `n` more steps.
    pub(crate) fn add(n: u64) {
        EXAMINED.with(|c| c.set(c.get().saturating_add(n)));
    }

    /// The steps counted on this thread since the last call, and starts again from zero.
    pub(crate) fn take() -> u64 {
        EXAMINED.with(|c| c.replace(0))
    }
}

#[cfg(not(test))]
mod work {
    /// Counts nothing outside tests.
    #[inline(always)]
    pub(crate) fn add(_: u64) {}
}

/// One rule's left side, ready to be matched in one graph.
///
/// Before it builds a candidate match, the matcher checks each operator it would bind to an
/// operator or chain node on its own: what [`acceptable`] would refuse for that operator alone
/// (a mark of this rule, a conjunct of the constraint about this node alone that fails) it
/// refuses at once. So a chain is walked only as far as its operators can be part of a match,
/// and only the chains of those are enumerated: the matches are the same, found without
/// building the candidates every one of which would be refused.
pub(crate) struct Matcher<'a> {
    rule: &'a Rule,
    graph: &'a Graph,
    facts: &'a dyn Facts,
    /// The mark of an operator this rule created.
    created: Mark,
    /// For each operator and chain node of the pattern, by name: the mark of an operator this
    /// rule matched in that role, and the conjuncts of the constraint about that node alone.
    nodes: BTreeMap<&'a str, (Mark, Vec<&'a Constraint>)>,
    /// The operators read since [`Matcher::first_at`] last started: what its answer depends on.
    read: RefCell<Vec<OpId>>,
}

impl<'a> Matcher<'a> {
    pub(crate) fn new(rule: &'a Rule, graph: &'a Graph, facts: &'a dyn Facts) -> Self {
        let nodes = rule
            .left
            .nodes()
            .into_iter()
            .filter_map(|p| {
                let single = match p.binding_kind() {
                    BindingKind::Op => true,
                    BindingKind::Chain => false,
                    BindingKind::Stream => return None,
                };
                let mark = Mark {
                    rule: rule.name.clone(),
                    role: Some(p.name.clone()),
                };
                let own = rule
                    .constraint
                    .as_ref()
                    .map(|c| per_operator(c, &p.name, single))
                    .unwrap_or_default();
                Some((p.name.as_str(), (mark, own)))
            })
            .collect();
        Self {
            rule,
            graph,
            facts,
            created: Mark {
                rule: rule.name.clone(),
                role: None,
            },
            nodes,
            read: RefCell::new(Vec::new()),
        }
    }

    /// The first match rooted at `root`, and every operator the matcher read to find it (or
    /// to find there is none): while none of them changes, neither does the answer (the
    /// matcher reads nothing else of the graph, and the facts answer from the operator alone).
    pub(crate) fn first_at(&self, root: OpId) -> (Option<Match>, Vec<OpId>) {
        self.read.borrow_mut().clear();
        let found = self
            .at(&self.rule.left, root)
            .into_iter()
            .map(|bindings| Match {
                rule: self.rule.name.clone(),
                root,
                bindings,
            })
            .find(|m| self.acceptable(m));
        (found, self.read.take())
    }

    /// Notes that the answer depends on operator `id`.
    fn reads(&self, id: OpId) {
        work::add(1);
        self.read.borrow_mut().push(id);
    }

    /// The matches rooted at `root`, in order.
    fn matches_at(&self, root: OpId) -> Vec<Match> {
        self.at(&self.rule.left, root)
            .into_iter()
            .map(|bindings| Match {
                rule: self.rule.name.clone(),
                root,
                bindings,
            })
            .filter(|m| self.acceptable(m))
            .collect()
    }

    /// Whether operator `id` may be bound to the operator or chain node `name`: this rule did
    /// not create it nor match it in that role, and the conjuncts about `name` alone hold.
    fn may_bind(&self, name: &str, id: OpId) -> bool {
        self.reads(id);
        let Some(op) = self.graph.get(id) else {
            return false;
        };
        if op.marks.contains(&self.created) {
            return false;
        }
        let Some((mark, own)) = self.nodes.get(name) else {
            return true;
        };
        !op.marks.contains(mark) && own.iter().all(|c| holds_on(c, id, self.graph, self.facts))
    }

    fn acceptable(&self, m: &Match) -> bool {
        work::add(1);
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
        let blocked = region.iter().any(|(id, role)| {
            self.graph.get(*id).is_some_and(|op| {
                op.marks.contains(&self.created)
                    || self.nodes.get(role).map_or_else(
                        || {
                            op.marks.contains(&Mark {
                                rule: self.rule.name.clone(),
                                role: Some(role.to_string()),
                            })
                        },
                        |(mark, _)| op.marks.contains(mark),
                    )
            })
        });
        !blocked
            && self
                .rule
                .constraint
                .as_ref()
                .is_none_or(|c| holds(c, m, self.graph, self.facts))
    }

    /// Every way `p` matches with its root at `id`.
    fn at(&self, p: &Pattern, id: OpId) -> Vec<Bindings> {
        self.reads(id);
        let Some(op) = self.graph.get(id) else {
            return Vec::new();
        };
        match (&p.kind, &p.inputs) {
            (PatternKind::Star, None) => {
                vec![Bindings::from([(p.name.clone(), Bound::Stream(id))])]
            }
            (PatternKind::Star, Some(inputs)) => {
                let Some(below) = inputs.first() else {
                    return Vec::new();
                };
                // The longest chain of single-input operators from `id` down that may be
                // bound to this node (a longer one would hold an operator that may not).
                let mut chain = vec![];
                let mut on_chain = BTreeSet::new();
                let mut at = id;
                while let Some(next) = self.graph.get(at).and_then(|o| {
                    self.reads(at);
                    match o.inputs.as_slice() {
                        [only] if !on_chain.contains(&at) && self.may_bind(&p.name, at) => {
                            Some(*only)
                        }
                        _ => None,
                    }
                }) {
                    chain.push(at);
                    on_chain.insert(at);
                    at = next;
                }
                let mut out = Vec::new();
                for k in (0..=chain.len()).rev() {
                    let start = match k {
                        0 => id,
                        _ => chain
                            .get(k - 1)
                            .and_then(|bottom| self.graph.get(*bottom))
                            .and_then(|o| o.inputs.first().copied())
                            .unwrap_or(id),
                    };
                    let options = self.at(below, start);
                    if options.is_empty() {
                        continue;
                    }
                    let ops: Vec<OpId> = chain.iter().take(k).copied().collect();
                    for mut b in options {
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
                    if self.facts.kind(op) != t {
                        return Vec::new();
                    }
                }
                if inputs.as_ref().is_some_and(|i| i.len() != op.inputs.len()) {
                    return Vec::new();
                }
                if !self.may_bind(&p.name, id) {
                    return Vec::new();
                }
                let mut partial = vec![Bindings::from([(p.name.clone(), Bound::Op(id))])];
                let Some(inputs) = inputs else {
                    return partial;
                };
                for (q, input) in inputs.iter().zip(&op.inputs) {
                    let options = self.at(q, *input);
                    if options.is_empty() {
                        return Vec::new();
                    }
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
}

#[cfg(test)]
mod tests;
