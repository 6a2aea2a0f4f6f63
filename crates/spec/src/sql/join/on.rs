//! The ON condition of a join: equal keys, and either a time interval (`a.ts BETWEEN b.ts -
//! INTERVAL … AND b.ts + INTERVAL …`, or comparisons) or equal window bounds, as the join
//! operator's params.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{BinaryOperator, Expr};

use super::super::insert::{quoted, unnested, unsupported};
use super::super::source_text::pos;
use super::super::window_tvf::signed_interval_ms;
use super::names::{Col, Joined};

/// The join operator's params.
type Params = Vec<(&'static str, String)>;

/// `d = right time - left time` compared with a constant.
#[derive(Debug, Clone, Copy)]
enum Bound {
    AtLeast(i64),
    AtMost(i64),
    Exactly(i64),
}

impl Joined {
    /// `col`, `col + INTERVAL …`, `col - INTERVAL …`: a time column and an offset (ms).
    fn time_term(&self, e: &Expr) -> Result<Option<(Col, i64)>, Diagnostic> {
        if let Some(c) = self.column(e) {
            return Ok(Some((c?, 0)));
        }
        match e {
            Expr::Nested(inner) => self.time_term(inner),
            Expr::BinaryOp { left, op, right } => {
                let (term, iv, sign) = match op {
                    BinaryOperator::Plus => match (self.time_term(left)?, self.time_term(right)?) {
                        (Some(t), None) => (t, right, 1),
                        (None, Some(t)) => (t, left, 1),
                        _ => return Ok(None),
                    },
                    BinaryOperator::Minus => match self.time_term(left)? {
                        Some(t) => (t, right, -1),
                        None => return Ok(None),
                    },
                    _ => return Ok(None),
                };
                if !matches!(unnested(iv), Expr::Interval(_)) {
                    return Ok(None);
                }
                Ok(Some((term.0, term.1 + sign * signed_interval_ms(iv)?)))
            }
            _ => Ok(None),
        }
    }

    /// The join's condition split: equal keys, time bounds or equal window bounds (the
    /// join operator's params), and the conjuncts that are none of these (they filter the
    /// joined rows). Without a time bound or windows it is a regular join.
    pub(super) fn condition<'e>(
        &self,
        conjuncts: &[&'e Expr],
        at: Pos,
    ) -> Result<Condition<'e>, Diagnostic> {
        let mut residual = Vec::new();
        let mut equalities: Vec<(String, String, Pos)> = Vec::new();
        let (mut saw_start, mut saw_end) = (false, false);
        // (left time column, right time column, bound on right - left, position)
        let mut times: Vec<(String, String, Bound, Pos, Option<&'e Expr>)> = Vec::new();
        for &c in conjuncts {
            let c_at = pos(c.span().start);
            let comparisons: Vec<(&Expr, BinaryOperator, &Expr)> = match c {
                Expr::Between {
                    expr,
                    negated: false,
                    low,
                    high,
                } => vec![
                    (expr, BinaryOperator::GtEq, low),
                    (expr, BinaryOperator::LtEq, high),
                ],
                Expr::BinaryOp { left, op, right } => vec![(left, op.clone(), right)],
                _ => {
                    residual.push(c);
                    continue;
                }
            };
            let mut parts = Vec::new();
            for (a, op, b) in comparisons {
                match self.classify(a, &op, b)? {
                    Some(p) => parts.push(p),
                    None => break,
                }
            }
            if parts.len()
                != if matches!(c, Expr::Between { .. }) {
                    2
                } else {
                    1
                }
            {
                residual.push(c);
                continue;
            }
            for p in parts {
                match p {
                    Part::Start => saw_start = true,
                    Part::End => saw_end = true,
                    Part::Key(l, r) => equalities.push((l, r, c_at)),
                    Part::Time(l, r, b) => times.push((l, r, b, c_at, Some(c))),
                }
            }
        }
        let mut params = Vec::new();
        let (left_time, right_time) = if self.windowed {
            if let Some((_, _, _, t_at, _)) = times.first() {
                return Err(unsupported(
                    *t_at,
                    "a time condition in a window join (rows pair up by window)",
                ));
            }
            if !saw_start {
                return Err(Diagnostic::error(
                    at,
                    format!(
                        "a window join pairs rows of the same window: add `AND {a}.window_start = {b}.window_start AND {a}.window_end = {b}.window_end`",
                        a = self.sides[0].alias,
                        b = self.sides[1].alias
                    ),
                ));
            }
            let _ = saw_end;
            let time = |i: usize| {
                self.sides[i]
                    .window
                    .as_ref()
                    .map(|w| w.1.clone())
                    .unwrap_or_default()
            };
            let size = self.sides[0].window.as_ref().map_or(0, |w| w.0);
            params.push(("kind", "window".to_string()));
            params.push(("size", format!("{size}ms")));
            (time(0), time(1))
        } else {
            if times.is_empty() {
                // `a.ts = b.ts` alone: an equality of time columns is the time condition.
                // The sides' event times if they are equal, else any two time columns.
                let is_time =
                    |side: usize, c: &str| self.sides[side].time_columns.iter().any(|t| t == c);
                let is_event_time =
                    |side: usize, c: &str| self.sides[side].event_time.as_deref() == Some(c);
                if let Some(i) = equalities
                    .iter()
                    .position(|(l, r, _)| is_event_time(0, l) && is_event_time(1, r))
                    .or_else(|| {
                        equalities
                            .iter()
                            .position(|(l, r, _)| is_time(0, l) && is_time(1, r))
                    })
                {
                    let (l, r, e_at) = equalities.remove(i);
                    times.push((l, r, Bound::Exactly(0), e_at, None));
                }
            }
            let Some((lt, rt, _, _, _)) = times.first().cloned() else {
                // No time bound: a regular join, every row of both sides kept. Comparisons
                // of time columns that bound nothing filter the joined rows.
                if equalities.is_empty() {
                    if let Some(e) = expression_equality(&residual) {
                        return Err(e);
                    }
                    return Err(unsupported(
                        at,
                        "a join without equal keys and without a time bound (a regular join takes `a.key = b.key`; a time-bounded one `a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts + INTERVAL '5' SECOND`)",
                    ));
                }
                return Ok(Condition {
                    params,
                    keys: equalities.into_iter().map(|(l, r, _)| (l, r)).collect(),
                    residual,
                    regular: true,
                });
            };
            // Comparisons of another pair of time columns filter the joined rows.
            times.retain(|(l, r, _, _, c)| {
                let same = *l == lt && *r == rt;
                if let (false, Some(c)) = (same, c) {
                    if !residual.iter().any(|x| std::ptr::eq(*x, *c)) {
                        residual.push(c);
                    }
                }
                same
            });
            // An equality of the time columns themselves is a bound, not a key.
            let mut bounds: Vec<Bound> = times.iter().map(|t| t.2).collect();
            equalities.retain(|(l, r, _)| {
                let is_time = *l == lt && *r == rt;
                if is_time {
                    bounds.push(Bound::Exactly(0));
                }
                !is_time
            });
            let (mut lower, mut upper) = (None::<i64>, None::<i64>);
            for b in bounds {
                let (lo, hi) = match b {
                    Bound::AtLeast(k) => (Some(k), None),
                    Bound::AtMost(k) => (None, Some(k)),
                    Bound::Exactly(k) => (Some(k), Some(k)),
                };
                lower = lower.max(lo);
                upper = match (upper, hi) {
                    (Some(u), Some(h)) => Some(u.min(h)),
                    (u, h) => u.or(h),
                };
            }
            let (Some(lower), Some(upper)) = (lower, upper) else {
                // Bounded one way only: a regular join (as in Flink) whose time comparisons
                // filter the joined rows.
                if equalities.is_empty() {
                    return Err(unsupported(
                        at,
                        format!("a join without equal keys whose time condition is bounded one way only (a regular join takes `a.key = b.key`; a time-bounded one both bounds, e.g. `{a}.{lt} BETWEEN {b}.{rt} - INTERVAL '5' SECOND AND {b}.{rt} + INTERVAL '5' SECOND`)",
                            a = self.sides[0].alias,
                            b = self.sides[1].alias),
                    ));
                }
                for c in times.iter().filter_map(|t| t.4) {
                    if !residual.iter().any(|x| std::ptr::eq(*x, c)) {
                        residual.push(c);
                    }
                }
                return Ok(Condition {
                    params: Vec::new(),
                    keys: equalities.into_iter().map(|(l, r, _)| (l, r)).collect(),
                    residual,
                    regular: true,
                });
            };
            params.push(("kind", "interval".to_string()));
            params.push(("lower", format!("{lower}ms")));
            params.push(("upper", format!("{upper}ms")));
            (lt, rt)
        };
        if equalities.is_empty() {
            if let Some(e) = expression_equality(&residual) {
                return Err(e);
            }
            return Err(unsupported(
                at,
                "a join without equal keys (add `AND a.key = b.key`)",
            ));
        }
        params.push(("left_time", left_time));
        params.push(("right_time", right_time));
        Ok(Condition {
            params,
            keys: equalities.into_iter().map(|(l, r, _)| (l, r)).collect(),
            residual,
            regular: false,
        })
    }

    /// The join operator's `on`: the equal keys, qualified by the sides' streams.
    pub(super) fn on_text(&self, keys: &[(String, String)]) -> String {
        keys.iter()
            .map(|(l, r)| {
                format!(
                    "{}.{} = {}.{}",
                    quoted(self.side_name(0)),
                    quoted(l),
                    quoted(self.side_name(1)),
                    quoted(r)
                )
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// One comparison `a op b` of the condition, if it is an equal key, a time bound or
    /// equal window bounds.
    fn classify(
        &self,
        a: &Expr,
        op: &BinaryOperator,
        b: &Expr,
    ) -> Result<Option<Part>, Diagnostic> {
        let (Some((ca, oa)), Some((cb, ob))) = (self.time_term(a)?, self.time_term(b)?) else {
            return Ok(None);
        };
        match (&ca, &cb, op) {
            (Col::WindowStart, Col::WindowStart, BinaryOperator::Eq) if oa == ob => {
                return Ok(Some(Part::Start))
            }
            (Col::WindowEnd, Col::WindowEnd, BinaryOperator::Eq) if oa == ob => {
                return Ok(Some(Part::End))
            }
            (Col::Of(sa, x), Col::Of(sb, y), BinaryOperator::Eq)
                if sa != sb && oa == 0 && ob == 0 =>
            {
                let (l, r) = if *sa == 0 { (x, y) } else { (y, x) };
                return Ok(Some(Part::Key(l.clone(), r.clone())));
            }
            _ => {}
        }
        let (Col::Of(sa, x), Col::Of(sb, y)) = (&ca, &cb) else {
            return Ok(None);
        };
        let is_time = |side: usize, c: &str| self.sides[side].time_columns.iter().any(|t| t == c);
        if sa == sb || !is_time(*sa, x) || !is_time(*sb, y) {
            return Ok(None);
        }
        // x + oa  op  y + ob. With l the left time and r the right one:
        // left on the left:  l - r op ob - oa, so  d = r - l  (flipped op)  oa - ob;
        // right on the left: r - l op ob - oa.
        let (l, r, k, flip) = if *sa == 0 {
            (x, y, oa - ob, true)
        } else {
            (y, x, ob - oa, false)
        };
        let op = if flip { flipped(op) } else { Some(op.clone()) };
        let bound = match op {
            Some(BinaryOperator::GtEq) => Bound::AtLeast(k),
            Some(BinaryOperator::Gt) => Bound::AtLeast(k + 1),
            Some(BinaryOperator::LtEq) => Bound::AtMost(k),
            Some(BinaryOperator::Lt) => Bound::AtMost(k - 1),
            Some(BinaryOperator::Eq) => Bound::Exactly(k),
            _ => return Ok(None),
        };
        Ok(Some(Part::Time(l.clone(), r.clone(), bound)))
    }
}

/// A join's condition, split.
pub(super) struct Condition<'e> {
    /// The join operator's params of a time bound or windows (none for a regular join).
    pub(super) params: Params,
    /// The equal keys: a left column and a right column each.
    pub(super) keys: Vec<(String, String)>,
    /// The conjuncts that filter the joined rows.
    pub(super) residual: Vec<&'e Expr>,
    /// Whether it has no time bound and no windows.
    pub(super) regular: bool,
}

/// What one comparison of a join condition is.
enum Part {
    Start,
    End,
    Key(String, String),
    Time(String, String, Bound),
}

fn flipped(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::Eq => BinaryOperator::Eq,
        _ => return None,
    })
}

pub(super) fn flatten_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        Expr::Nested(inner) => flatten_and(inner, out),
        other => out.push(other),
    }
}

/// The error for a join whose only equality compares an expression (`a.k = b.k + 1`): a key is
/// a column of each side, so the expression must become one first.
fn expression_equality(residual: &[&Expr]) -> Option<Diagnostic> {
    residual.iter().find_map(|c| match c {
        Expr::BinaryOp {
            op: BinaryOperator::Eq,
            ..
        } => Some(Diagnostic::error(
            pos(c.span().start),
            format!("`{c}` compares an expression, and a join key is a column of each side (`a.key = b.key`): an expression as a join key is not supported yet; compute it as a column of its side in a subquery, e.g. `(SELECT *, k + 1 AS k1 FROM b) AS b`, and join on that column"),
        )),
        _ => None,
    })
}
