//! Applying a rule set until no rule matches.

use std::collections::BTreeMap;

use crate::error::RewriteError;
use crate::facts::Facts;
use crate::matched::{Bound, Match};
use crate::matcher::find_matches;
use crate::model::Graph;
use crate::rewriter::apply;
use crate::rule::RuleSet;

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
/// has a match is applied to its first match ([`find_matches`] order), until no rule matches.
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
    'fixpoint: loop {
        for rule in &rules.rules {
            let Some(m) = find_matches(rule, &g, facts)?.into_iter().next() else {
                continue;
            };
            if applications.len() >= limit {
                return Err(RewriteError::IterationLimit {
                    limit,
                    rules: cycling(&applications, rules),
                });
            }
            applications.push(describe(&m, &g));
            g = apply(rule, &m, &g)?;
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
