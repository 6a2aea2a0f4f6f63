//! Evaluating a rule's constraints on a match.
//!
//! - A comparison is numeric when both sides read as numbers (`param(f, "parallelism") >= 2`
//!   compares the text `"4"` as 4), else textual; `<`, `>` on text compare lexically.
//! - A comparison with a missing value (a param the operator lacks and no default, a figure
//!   not measured) is false, whatever the operator (`!=` too); `not` then makes it true.
//! - A name bound to a chain stands for every operator of the chain: the atom holds when it
//!   holds for each of them (so for an empty chain). `length(c)` is the chain's length.

use crate::facts::Facts;
use crate::matched::{Bound, Match};
use crate::model::{Graph, OpId};
use crate::rule::{CmpOp, Constraint, Value};

/// Whether the constraint holds for the match.
pub(crate) fn holds(c: &Constraint, m: &Match, graph: &Graph, facts: &dyn Facts) -> bool {
    match c {
        Constraint::And(a, b) => holds(a, m, graph, facts) && holds(b, m, graph, facts),
        Constraint::Or(a, b) => holds(a, m, graph, facts) || holds(b, m, graph, facts),
        Constraint::Not(a) => !holds(a, m, graph, facts),
        Constraint::Stateless(x) => m.ops(x).iter().all(|id| stateless(*id, graph, facts)),
        Constraint::Stateful(x) => m.ops(x).iter().all(|id| !stateless(*id, graph, facts)),
        Constraint::Compare(l, op, r) => {
            // Every combination of the operators the two sides name must satisfy it.
            let ls = candidates(l, m);
            let rs = candidates(r, m);
            ls.iter().all(|lid| {
                rs.iter().all(|rid| {
                    match (
                        value(l, *lid, Some(m), graph, facts),
                        value(r, *rid, Some(m), graph, facts),
                    ) {
                        (Some(a), Some(b)) => compare(&a, *op, &b),
                        _ => false,
                    }
                })
            })
        }
    }
}

/// The conjuncts of `c` (its top-level `and`s) that test each operator bound to `name` on its
/// own, whatever else the match binds: `stateless(x)`, `stateful(x)`, and comparisons of one
/// of `x`'s values (type, param, figure) with a literal, or, when `x` is one operator
/// (`single`), with another of its values. A match where one of them fails for one of `x`'s
/// operators fails the whole constraint, so the matcher checks them on each candidate
/// operator before it builds a match ([`holds_on`]).
pub(crate) fn per_operator<'c>(c: &'c Constraint, name: &str, single: bool) -> Vec<&'c Constraint> {
    match c {
        Constraint::And(a, b) => {
            let mut out = per_operator(a, name, single);
            out.extend(per_operator(b, name, single));
            out
        }
        Constraint::Stateless(x) | Constraint::Stateful(x) if x == name => vec![c],
        Constraint::Compare(l, _, r) => {
            let (l, r) = (names(l), names(r));
            let on_x = |n: &Option<Option<&str>>| *n == Some(Some(name));
            let literal = |n: &Option<Option<&str>>| *n == Some(None);
            let ok = (on_x(&l) && literal(&r))
                || (literal(&l) && on_x(&r))
                || (single && on_x(&l) && on_x(&r));
            if ok {
                vec![c]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// The name a value reads an operator of: `Some(None)` for a literal, `Some(Some(x))` for a
/// value of `x`, `None` for a value of the match as a whole (`length`).
fn names(v: &Value) -> Option<Option<&str>> {
    match v {
        Value::Str(_) | Value::Num(_) => Some(None),
        Value::Type(x) | Value::Figure { name: x, .. } => Some(Some(x)),
        Value::Param(p) => Some(Some(&p.name)),
        Value::Length(_) => None,
    }
}

/// Whether a conjunct [`per_operator`] returned holds for operator `id` bound to its name.
pub(crate) fn holds_on(c: &Constraint, id: OpId, graph: &Graph, facts: &dyn Facts) -> bool {
    match c {
        Constraint::Stateless(_) => stateless(id, graph, facts),
        Constraint::Stateful(_) => !stateless(id, graph, facts),
        Constraint::Compare(l, op, r) => {
            let at = |v: &Value| match names(v) {
                Some(Some(_)) => Some(id),
                _ => None,
            };
            match (
                value(l, at(l), None, graph, facts),
                value(r, at(r), None, graph, facts),
            ) {
                (Some(a), Some(b)) => compare(&a, *op, &b),
                _ => false,
            }
        }
        Constraint::And(a, b) => holds_on(a, id, graph, facts) && holds_on(b, id, graph, facts),
        Constraint::Or(a, b) => holds_on(a, id, graph, facts) || holds_on(b, id, graph, facts),
        Constraint::Not(a) => !holds_on(a, id, graph, facts),
    }
}

fn stateless(id: OpId, graph: &Graph, facts: &dyn Facts) -> bool {
    graph.get(id).is_some_and(|op| facts.is_stateless(op))
}

/// The operators a value ranges over: one `None` for a value that names no operator (or
/// names it as a whole, `length`), else each operator bound to the name.
fn candidates(v: &Value, m: &Match) -> Vec<Option<OpId>> {
    let name = match v {
        Value::Type(x) | Value::Figure { name: x, .. } => x,
        Value::Param(p) => &p.name,
        Value::Str(_) | Value::Num(_) | Value::Length(_) => return vec![None],
    };
    m.ops(name).into_iter().map(Some).collect()
}

/// A value found.
#[derive(Debug, PartialEq)]
enum Found {
    Text(String),
    Num(f64),
}

fn value(
    v: &Value,
    id: Option<OpId>,
    m: Option<&Match>,
    graph: &Graph,
    facts: &dyn Facts,
) -> Option<Found> {
    let op = id.and_then(|id| graph.get(id));
    match v {
        Value::Str(s) => Some(Found::Text(s.clone())),
        Value::Num(n) => Some(Found::Num(*n)),
        Value::Length(x) => Some(Found::Num(match m.and_then(|m| m.bindings.get(x)) {
            Some(Bound::Chain { ops, .. }) => ops.len() as f64,
            Some(Bound::Op(_)) => 1.0,
            Some(Bound::Stream(_)) | None => 0.0,
        })),
        Value::Type(_) => op.map(|op| Found::Text(facts.kind(op).to_string())),
        Value::Param(p) => op.and_then(|op| {
            facts
                .param(op, &p.key)
                .map(str::to_string)
                .or_else(|| p.default.clone())
                .map(Found::Text)
        }),
        Value::Figure { figure, .. } => op.and_then(|op| facts.figure(op, figure).map(Found::Num)),
    }
}

fn number(f: &Found) -> Option<f64> {
    match f {
        Found::Num(n) => Some(*n),
        Found::Text(t) => t.trim().parse::<f64>().ok(),
    }
}

fn compare(a: &Found, op: CmpOp, b: &Found) -> bool {
    let ord = match (number(a), number(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y),
        _ => {
            let text = |f: &Found| match f {
                Found::Text(t) => t.clone(),
                Found::Num(n) => n.to_string(),
            };
            Some(text(a).cmp(&text(b)))
        }
    };
    let Some(ord) = ord else {
        return false;
    };
    match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}
