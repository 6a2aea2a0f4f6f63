//! Applying a rule set until no rule matches.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::RewriteError;
use crate::facts::Facts;
use crate::matched::{Bound, Match};
use crate::matcher::Matcher;
use crate::model::{Graph, OpId};
use crate::rewriter::{apply_in_place, cycle};
use crate::rule::{Rule, RuleSet};

/// The iteration limit [`rewrite`] callers use unless they have a reason to choose another.
pub const DEFAULT_LIMIT: usize = 1000;

/// One rule application, for `explain --rewritten`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Application {
    /// The rule.
    pub rule: String,
    /// The name of the operator the match was rooted at.
    pub root: String,
    /// Each left-side name the rule wrote (unnamed pattern nodes left out) and the names of
    /// the operators bound to it, before the rewrite.
    pub bound: BTreeMap<String, Vec<String>>,
}

/// The result of [`rewrite`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Rewritten {
    /// The graph at the fixed point.
    pub graph: Graph,
    /// The applications, in order.
    pub applications: Vec<Application>,
}

/// Applies the rules to a fixed point: repeatedly, the first rule (in the set's order) that
/// has a match is applied to its first match ([`find_matches`](crate::find_matches) order), until no rule matches.
/// At most `limit` applications: one more is [`RewriteError::IterationLimit`], naming the
/// rules applied in the second half of the run (the ones that keep firing), in the set's order.
///
/// Deterministic: the same graph, rules and facts give the same result.
///
/// # Examples
///
/// ```
/// use anduin_rewrite::{parse_graph, parse_rules, print_graph, rewrite, TableFacts, DEFAULT_LIMIT};
/// let g = parse_graph("g", r#"w := writer(f := filter{fault_tolerance = "standby"}(r := reader))"#)?;
/// let rules = parse_rules("r", r#"
///     rule standby: f := any[param(f, "fault_tolerance") = "standby" and stateless(f)] => f@{p}
/// "#)?;
/// let out = rewrite(&g, &rules, &TableFacts::stateless(["filter"]), DEFAULT_LIMIT)?;
/// assert_eq!(
///     print_graph(&out.graph),
///     r#"w := writer(f := filter{fault_tolerance = "standby"}@{p}(r := reader))"#
/// );
/// assert_eq!(out.applications.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn rewrite(
    graph: &Graph,
    rules: &RuleSet,
    facts: &dyn Facts,
    limit: usize,
) -> Result<Rewritten, RewriteError> {
    // Rules that keep adding operators stop here long before the iteration limit would
    // (each application looks at the whole graph).
    let max_size = graph.len().saturating_mul(16).max(1024);
    rewrite_within(graph, rules, facts, limit, max_size)
}

/// [`rewrite`], with the graph allowed to grow to `max_size` operators (one more is
/// [`RewriteError::Growth`]) instead of [`rewrite`]'s bound: for a caller that knows how
/// large the rules it applies make the graph (each copy an operator).
pub fn rewrite_within(
    graph: &Graph,
    rules: &RuleSet,
    facts: &dyn Facts,
    limit: usize,
    max_size: usize,
) -> Result<Rewritten, RewriteError> {
    graph.check()?;
    let mut g = graph.clone();
    let mut applications: Vec<Application> = Vec::new();
    let mut known = Known::new(rules.rules.len(), &g);
    // Every rule of a round tries its roots in this order (made again after each
    // application, which also finds a cycle the application made).
    let mut order = g.consumers_first()?;
    'fixpoint: loop {
        let position = positions(&order);
        for (index, rule) in rules.rules.iter().enumerate() {
            let Some(m) = known.first_match(index, rule, &g, &position, facts) else {
                continue;
            };
            if applications.len() >= limit {
                return Err(RewriteError::IterationLimit {
                    limit,
                    rules: cycling(&applications, rules),
                });
            }
            applications.push(describe(&m, &g));
            #[cfg(test)]
            let before = tests::snapshot(&g);
            let touched = apply_in_place(rule, &m, &mut g)?;
            #[cfg(test)]
            tests::only_touched_changed(before.as_ref(), &g, &touched);
            order = g.consumers_first().map_err(|source| cycle(rule, source))?;
            known.touched(&touched, &g);
            if g.len() > max_size {
                return Err(RewriteError::Growth {
                    size: g.len(),
                    limit: max_size,
                    rules: cycling(&applications, rules),
                });
            }
            continue 'fixpoint;
        }
        return Ok(Rewritten {
            graph: g,
            applications,
        });
    }
}

/// What the fixed-point loop knows from earlier rounds: where each rule has no match.
///
/// A rule's answer at a root depends only on the operators the matcher read there
/// ([`Matcher::first_at`]); an application changes only the operators it touched
/// ([`apply_touching`]). So a root where a rule found no match is not tried again until one
/// of the operators read there is touched: a round tries only the roots that may have
/// changed, and finds the same first match as trying every root would.
struct Known {
    /// For each rule (by index), the roots not known to have no match, in no order.
    open: Vec<BTreeSet<OpId>>,
    /// For each operator, the (rule, root) answers "no match" that read it.
    readers: HashMap<OpId, Vec<(usize, OpId)>>,
}

impl Known {
    /// Nothing known yet: every root of every rule is open.
    fn new(rules: usize, g: &Graph) -> Self {
        let all: BTreeSet<OpId> = g.ids().into_iter().collect();
        Self {
            open: vec![all; rules],
            readers: HashMap::new(),
        }
    }

    /// The rule's first match ([`crate::find_matches`] order, `position` being each root's
    /// place in it), trying only its open roots; those without a match are closed.
    fn first_match(
        &mut self,
        index: usize,
        rule: &Rule,
        g: &Graph,
        position: &[usize],
        facts: &dyn Facts,
    ) -> Option<Match> {
        let open = self.open.get_mut(index)?;
        let mut roots: Vec<(usize, OpId)> = open
            .iter()
            .filter_map(|id| {
                let slot = usize::try_from(id.0).expect("a u32 id fits in usize");
                position
                    .get(slot)
                    .filter(|p| **p != usize::MAX)
                    .map(|p| (*p, *id))
            })
            .collect();
        if roots.is_empty() {
            return None;
        }
        roots.sort_unstable();
        let matcher = Matcher::new(rule, g, facts);
        for (_, root) in roots {
            let (found, read) = matcher.first_at(root);
            if found.is_some() {
                return found;
            }
            open.remove(&root);
            for id in read {
                self.readers.entry(id).or_default().push((index, root));
            }
        }
        None
    }

    /// After an application: the touched operators that are left are open roots of every
    /// rule, the removed ones are no root, and the answers that read any of them are open.
    fn touched(&mut self, touched: &BTreeSet<OpId>, g: &Graph) {
        for id in touched {
            for (index, root) in self.readers.remove(id).unwrap_or_default() {
                if let Some(open) = self.open.get_mut(index) {
                    open.insert(root);
                }
            }
            let exists = g.get(*id).is_some();
            for open in &mut self.open {
                if exists {
                    open.insert(*id);
                } else {
                    open.remove(id);
                }
            }
        }
    }
}

/// Each operator's place in `order`, indexed by id.
fn positions(order: &[OpId]) -> Vec<usize> {
    let slot = |id: &OpId| usize::try_from(id.0).expect("a u32 id fits in usize");
    let mut out = vec![usize::MAX; order.iter().map(slot).max().map_or(0, |m| m + 1)];
    for (i, id) in order.iter().enumerate() {
        if let Some(p) = out.get_mut(slot(id)) {
            *p = i;
        }
    }
    out
}

/// The rules applied in the second half of the run, in the rule set's order.
fn cycling(applications: &[Application], rules: &RuleSet) -> Vec<String> {
    let late = applications
        .get(applications.len() / 2..)
        .unwrap_or_default();
    rules
        .rules
        .iter()
        .filter(|r| late.iter().any(|a| a.rule == r.name))
        .map(|r| r.name.clone())
        .collect()
}

fn describe(m: &Match, g: &Graph) -> Application {
    let name = |id| g.get(id).map(|o| o.name.clone()).unwrap_or_default();
    Application {
        rule: m.rule.clone(),
        root: name(m.root),
        bound: m
            .bindings
            .iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .map(|(k, b)| {
                let names = match b {
                    Bound::Op(id) | Bound::Stream(id) => vec![name(*id)],
                    Bound::Chain { ops, .. } => ops.iter().map(|id| name(*id)).collect(),
                };
                (k.clone(), names)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing;
