//! The brute-force matcher of `patterns_agree_with_a_brute_force_matcher.rs`: what a case is
//! (a pattern, its conditions, a skip, a time bound, how rows per match are shown, a SUBSET,
//! extra measures) and, for a case and the rows of one partition, the matches a backtracking
//! search over the pattern in preference order finds, each as output rows.

/// (event time, key, value)
pub(crate) type Row = (i64, i64, i64);

/// An output row: (event time, key, value, MATCH_NUMBER, CLASSIFIER).
pub(crate) type Out = (i64, i64, i64, i64, Option<String>);

pub(crate) const VARS: [&str; 3] = ["A", "B", "C"];

/// Variable number 3 in conditions and skips: the SUBSET union `U` of the case.
pub(crate) const U: usize = 3;

/// The name of variable `w` (or of `U`).
pub(crate) fn name_of(w: usize) -> &'static str {
    ["A", "B", "C", "U"][w]
}

/// Whether the row of variable `v` is one of `w`'s (`U`: one of the union's, `members` a bit
/// per variable).
pub(crate) fn is_of(w: usize, v: usize, members: u8) -> bool {
    if w == U {
        members >> v & 1 == 1
    } else {
        w == v
    }
}

// ---------------------------------------------------------------------------------------------
// What is tested: patterns, conditions, skips.

/// A row pattern over the variables A, B, C (by number).
#[derive(Debug, Clone)]
pub(crate) enum Pat {
    Var(usize),
    Concat(Vec<Pat>),
    Alt(Vec<Pat>),
    Rep {
        inner: Box<Pat>,
        q: Quant,
        greedy: bool,
    },
    /// `PERMUTE(p1, p2, …)`: the parts in every order, the orders tried lexicographically.
    Permute(Vec<Pat>),
    /// `{- p -}`: its rows are in the match but not output.
    Exclude(Box<Pat>),
    /// `^`: the partition's first row is next.
    Start,
    /// `$`: no row is next (the input ended).
    End,
}

/// A quantifier as written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Quant {
    Star,
    Plus,
    Opt,
    Exact(u32),
    AtLeast(u32),
    Range(u32, u32),
}

impl Quant {
    /// (minimum, maximum) iterations.
    pub(crate) fn bounds(self) -> (u32, Option<u32>) {
        match self {
            Quant::Star => (0, None),
            Quant::Plus => (1, None),
            Quant::Opt => (0, Some(1)),
            Quant::Exact(n) => (n, Some(n)),
            Quant::AtLeast(n) => (n, None),
            Quant::Range(n, m) => (n, Some(m)),
        }
    }

    pub(crate) fn text(self) -> String {
        match self {
            Quant::Star => "*".into(),
            Quant::Plus => "+".into(),
            Quant::Opt => "?".into(),
            Quant::Exact(n) => format!("{{{n}}}"),
            Quant::AtLeast(n) => format!("{{{n},}}"),
            Quant::Range(n, m) => format!("{{{n},{m}}}"),
        }
    }
}

impl Pat {
    pub(crate) fn text(&self) -> String {
        match self {
            Pat::Var(v) => VARS[*v].to_string(),
            Pat::Concat(parts) => parts
                .iter()
                .map(|p| match p {
                    Pat::Alt(_) => format!("({})", p.text()),
                    _ => p.text(),
                })
                .collect::<Vec<_>>()
                .join(" "),
            Pat::Alt(alts) => alts.iter().map(Pat::text).collect::<Vec<_>>().join(" | "),
            Pat::Exclude(inner) => format!("{{- {} -}}", inner.text()),
            Pat::Start => "^".into(),
            Pat::End => "$".into(),
            Pat::Permute(parts) => format!(
                "PERMUTE({})",
                parts.iter().map(Pat::text).collect::<Vec<_>>().join(", ")
            ),
            Pat::Rep { inner, q, greedy } => {
                let body = match **inner {
                    Pat::Var(_) => inner.text(),
                    _ => format!("({})", inner.text()),
                };
                format!("{body}{}{}", q.text(), if *greedy { "" } else { "?" })
            }
        }
    }

    pub(crate) fn excludes(&self) -> bool {
        match self {
            Pat::Exclude(_) => true,
            Pat::Concat(ps) | Pat::Alt(ps) | Pat::Permute(ps) => ps.iter().any(Pat::excludes),
            Pat::Rep { inner, .. } => inner.excludes(),
            Pat::Var(_) | Pat::Start | Pat::End => false,
        }
    }

    pub(crate) fn mentions(&self, v: usize) -> bool {
        match self {
            Pat::Var(w) => *w == v,
            Pat::Concat(ps) | Pat::Alt(ps) | Pat::Permute(ps) => ps.iter().any(|p| p.mentions(v)),
            Pat::Start | Pat::End => false,
            Pat::Exclude(inner) => inner.mentions(v),
            Pat::Rep { inner, .. } => inner.mentions(v),
        }
    }
}

/// A DEFINE condition from a fixed table, as text for the operator and as a function of the
/// match so far for the brute-force matcher. `W` is another (or the same) variable.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cond {
    /// No DEFINE: any row.
    Any,
    /// `V.value < c` (the row itself, qualified with its own variable)
    Below(i64),
    /// `value % 2 = 0`
    Even,
    /// `value > PREV(value)`
    Rising,
    /// `PREV(value, 2) IS NOT NULL AND value <> PREV(value, 2)`
    DiffersTwoBack,
    /// `value > LAST(W.value)`
    AboveLast(usize),
    /// `value <= W.value + 1`
    NearQualified(usize),
    /// `LAST(W.value, 1) IS NULL OR value < LAST(W.value, 1)`
    BelowOneBefore(usize),
    /// `COUNT(W.*) <= n`
    CountAtMost(usize, i64),
    /// `SUM(W.value) < c`
    SumBelow(usize, i64),
    /// `AVG(W.value) >= 1.5`
    AvgAtLeast(usize),
    /// `value >= FIRST(W.value)`
    AtLeastFirst(usize),
    /// `FIRST(W.value, 1) IS NULL OR value <> FIRST(W.value, 1)`
    NotSecond(usize),
    /// `MAX(W.value) > value`
    MaxAbove(usize),
    /// `abs(value - 2) <= 1` (a function DataFusion evaluates)
    NearTwo,
    /// `COUNT(CASE WHEN CLASSIFIER() = 'W' THEN 1 END) <= n` (an aggregate over every row
    /// of the match whose argument reads each row's variable)
    ClassCountAtMost(usize, i64),
    /// `SUM(W.value * 2 + 1) < c` (an aggregate over an expression)
    SumExprBelow(usize, i64),
    /// `PREV(CLASSIFIER()) = 'W'` (the variable of the row before, if it is in the match)
    AfterClass(usize),
    /// `MIN(W.value) >= value - 2`
    MinNear(usize),
    /// `FIRST(CLASSIFIER()) = 'W'` (the variable of the match's first row)
    FirstClass(usize),
    /// `LAST(CLASSIFIER(), 2) = 'W'` (the variable of the row two before this one)
    ClassTwoBack(usize),
    /// `PREV(CLASSIFIER(W)) = 'B'` (the variable of the row before W's last row)
    BeforeLastIsB(usize),
    /// `BOOL_OR(W.value > 3)`
    AnyAboveThree(usize),
    /// `ANY_VALUE(W.value) < value` (the oldest value)
    AboveAnyValue(usize),
    /// `MAX_BY(W.value, W.value % 3) >= value` (the oldest row of the largest remainder)
    MaxByRemainder(usize),
    /// `AVG(W.value * 0.1) >= 0.2345` (a float average)
    FloatAvg(usize),
    /// `LAST(W.value, 2) IS NULL OR value <> LAST(W.value, 2)`
    NotThirdLast(usize),
    /// `FIRST(CLASSIFIER(W)) = 'B'` (the variable of W's first row: with a SUBSET, which
    /// member)
    FirstOfIs(usize),
    /// `PREV(W.value, 2) IS NULL OR value <> PREV(W.value, 2) + 1` (the value two rows before
    /// W's last row, which may be before the match)
    NotAfterTwoBefore(usize),
    /// `value = 9 AND PREV(W.value, 2) = 7`
    NineTwoAfterSeven(usize),
    /// `coalesce(LAST(abs(W.value - 3), 1), 0) <= value` (navigation over an expression that
    /// DataFusion evaluates, at W's row before its last)
    AboveDistanceOneBefore(usize),
    /// `PREV(W.value * 2 + 1) IS NULL OR value * 2 < PREV(W.value * 2 + 1)` (the expression at
    /// the row before W's last, which may be before the match)
    NotAboveBeforeLast(usize),
    /// `FIRST(lower(CLASSIFIER(W)) || 'x', 1) IS NULL OR FIRST(lower(CLASSIFIER(W)) || 'x', 1)
    /// <> 'ax'` (W's second row is not an A)
    SecondNotA(usize),
    /// `APPROX_DISTINCT(W.value) <= n` (computed exactly)
    DistinctAtMost(usize, i64),
    /// `coalesce(STRING_AGG(CAST(W.value AS VARCHAR), '') < '23', true)` (W's values joined in
    /// the order of their rows, compared as a string)
    JoinedBelow(usize),
}

impl Cond {
    /// The variable it looks at besides the row itself.
    pub(crate) fn other(self) -> Option<usize> {
        match self {
            Cond::AboveLast(w)
            | Cond::NearQualified(w)
            | Cond::BelowOneBefore(w)
            | Cond::CountAtMost(w, _)
            | Cond::SumBelow(w, _)
            | Cond::AvgAtLeast(w)
            | Cond::AtLeastFirst(w)
            | Cond::NotSecond(w)
            | Cond::MaxAbove(w)
            | Cond::ClassCountAtMost(w, _)
            | Cond::SumExprBelow(w, _)
            | Cond::AfterClass(w)
            | Cond::MinNear(w)
            | Cond::FirstClass(w)
            | Cond::ClassTwoBack(w)
            | Cond::BeforeLastIsB(w)
            | Cond::AnyAboveThree(w)
            | Cond::AboveAnyValue(w)
            | Cond::MaxByRemainder(w)
            | Cond::FloatAvg(w)
            | Cond::NotThirdLast(w)
            | Cond::FirstOfIs(w)
            | Cond::NotAfterTwoBefore(w)
            | Cond::NineTwoAfterSeven(w)
            | Cond::AboveDistanceOneBefore(w)
            | Cond::NotAboveBeforeLast(w)
            | Cond::SecondNotA(w)
            | Cond::DistinctAtMost(w, _)
            | Cond::JoinedBelow(w) => Some(w),
            _ => None,
        }
    }

    /// The same condition looking at `w` instead.
    pub(crate) fn with_other(self, w: usize) -> Cond {
        match self {
            Cond::AboveLast(_) => Cond::AboveLast(w),
            Cond::NearQualified(_) => Cond::NearQualified(w),
            Cond::BelowOneBefore(_) => Cond::BelowOneBefore(w),
            Cond::CountAtMost(_, n) => Cond::CountAtMost(w, n),
            Cond::SumBelow(_, c) => Cond::SumBelow(w, c),
            Cond::AvgAtLeast(_) => Cond::AvgAtLeast(w),
            Cond::AtLeastFirst(_) => Cond::AtLeastFirst(w),
            Cond::NotSecond(_) => Cond::NotSecond(w),
            Cond::MaxAbove(_) => Cond::MaxAbove(w),
            Cond::ClassCountAtMost(_, n) => Cond::ClassCountAtMost(w, n),
            Cond::SumExprBelow(_, c) => Cond::SumExprBelow(w, c),
            Cond::AfterClass(_) => Cond::AfterClass(w),
            Cond::MinNear(_) => Cond::MinNear(w),
            Cond::FirstClass(_) => Cond::FirstClass(w),
            Cond::ClassTwoBack(_) => Cond::ClassTwoBack(w),
            Cond::BeforeLastIsB(_) => Cond::BeforeLastIsB(w),
            Cond::AnyAboveThree(_) => Cond::AnyAboveThree(w),
            Cond::AboveAnyValue(_) => Cond::AboveAnyValue(w),
            Cond::MaxByRemainder(_) => Cond::MaxByRemainder(w),
            Cond::FloatAvg(_) => Cond::FloatAvg(w),
            Cond::NotThirdLast(_) => Cond::NotThirdLast(w),
            Cond::FirstOfIs(_) => Cond::FirstOfIs(w),
            Cond::NotAfterTwoBefore(_) => Cond::NotAfterTwoBefore(w),
            Cond::NineTwoAfterSeven(_) => Cond::NineTwoAfterSeven(w),
            Cond::AboveDistanceOneBefore(_) => Cond::AboveDistanceOneBefore(w),
            Cond::NotAboveBeforeLast(_) => Cond::NotAboveBeforeLast(w),
            Cond::SecondNotA(_) => Cond::SecondNotA(w),
            Cond::DistinctAtMost(_, n) => Cond::DistinctAtMost(w, n),
            Cond::JoinedBelow(_) => Cond::JoinedBelow(w),
            other => other,
        }
    }

    /// The DEFINE of variable `own`, if any.
    pub(crate) fn text(self, own: usize) -> Option<String> {
        let v = VARS[own];
        let name = name_of;
        Some(match self {
            Cond::Any => return None,
            Cond::Below(c) => format!("{v}.value < {c}"),
            Cond::Even => "value % 2 = 0".into(),
            Cond::Rising => "value > PREV(value)".into(),
            Cond::DiffersTwoBack => "PREV(value, 2) IS NOT NULL AND value <> PREV(value, 2)".into(),
            Cond::AboveLast(w) => format!("value > LAST({}.value)", name(w)),
            Cond::NearQualified(w) => format!("value <= {}.value + 1", name(w)),
            Cond::BelowOneBefore(w) => format!(
                "LAST({w}.value, 1) IS NULL OR value < LAST({w}.value, 1)",
                w = name(w)
            ),
            Cond::CountAtMost(w, n) => format!("COUNT({}.*) <= {n}", name(w)),
            Cond::SumBelow(w, c) => format!("SUM({}.value) < {c}", name(w)),
            Cond::AvgAtLeast(w) => format!("AVG({}.value) >= 1.5", name(w)),
            Cond::AtLeastFirst(w) => format!("value >= FIRST({}.value)", name(w)),
            Cond::NotSecond(w) => format!(
                "FIRST({w}.value, 1) IS NULL OR value <> FIRST({w}.value, 1)",
                w = name(w)
            ),
            Cond::MaxAbove(w) => format!("MAX({}.value) > value", name(w)),
            Cond::NearTwo => "abs(value - 2) <= 1".into(),
            Cond::ClassCountAtMost(w, n) => format!(
                "COUNT(CASE WHEN CLASSIFIER() = '{}' THEN 1 END) <= {n}",
                name(w)
            ),
            Cond::SumExprBelow(w, c) => format!("SUM({}.value * 2 + 1) < {c}", name(w)),
            Cond::AfterClass(w) => format!("PREV(CLASSIFIER()) = '{}'", name(w)),
            Cond::MinNear(w) => format!("MIN({}.value) >= value - 2", name(w)),
            Cond::FirstClass(w) => format!("FIRST(CLASSIFIER()) = '{}'", name(w)),
            Cond::ClassTwoBack(w) => format!("LAST(CLASSIFIER(), 2) = '{}'", name(w)),
            Cond::BeforeLastIsB(w) => format!("PREV(CLASSIFIER({})) = 'B'", name(w)),
            Cond::AnyAboveThree(w) => format!("BOOL_OR({}.value > 3)", name(w)),
            Cond::AboveAnyValue(w) => format!("ANY_VALUE({}.value) < value", name(w)),
            Cond::MaxByRemainder(w) => {
                format!("MAX_BY({w}.value, {w}.value % 3) >= value", w = name(w))
            }
            Cond::FloatAvg(w) => format!("AVG({}.value * 0.1) >= 0.2345", name(w)),
            Cond::NotThirdLast(w) => format!(
                "LAST({w}.value, 2) IS NULL OR value <> LAST({w}.value, 2)",
                w = name(w)
            ),
            Cond::FirstOfIs(w) => format!("FIRST(CLASSIFIER({})) = 'B'", name(w)),
            Cond::NotAfterTwoBefore(w) => format!(
                "PREV({w}.value, 2) IS NULL OR value <> PREV({w}.value, 2) + 1",
                w = name(w)
            ),
            Cond::NineTwoAfterSeven(w) => {
                format!("value = 9 AND PREV({}.value, 2) = 7", name(w))
            }
            Cond::AboveDistanceOneBefore(w) => format!(
                "coalesce(LAST(abs({}.value - 3), 1), 0) <= value",
                name(w)
            ),
            Cond::NotAboveBeforeLast(w) => format!(
                "PREV({w}.value * 2 + 1) IS NULL OR value * 2 < PREV({w}.value * 2 + 1)",
                w = name(w)
            ),
            Cond::SecondNotA(w) => format!(
                "FIRST(lower(CLASSIFIER({w})) || 'x', 1) IS NULL OR FIRST(lower(CLASSIFIER({w})) || 'x', 1) <> 'ax'",
                w = name(w)
            ),
            Cond::DistinctAtMost(w, n) => format!("APPROX_DISTINCT({}.value) <= {n}", name(w)),
            Cond::JoinedBelow(w) => format!(
                "coalesce(STRING_AGG(CAST({}.value AS VARCHAR), '') < '23', true)",
                name(w)
            ),
        })
    }

    /// Whether the condition is true for the last row of `mapping` (the row being
    /// classified, already mapped to its variable). NULL is not true.
    pub(crate) fn holds(self, rows: &[Row], mapping: &[(usize, usize)], members: u8) -> bool {
        let &(cur, _) = mapping.last().expect("the current row is mapped");
        let value = rows[cur].2;
        let prev = |n: usize| cur.checked_sub(n).map(|r| rows[r].2);
        let of = |w: usize| {
            mapping
                .iter()
                .filter(move |(_, v)| is_of(w, *v, members))
                .map(|(r, _)| rows[*r].2)
        };
        let last = |w: usize, n: usize| of(w).rev().nth(n);
        let first = |w: usize, n: usize| of(w).nth(n);
        let sum = |w: usize| of(w).reduce(|a, b| a + b);
        match self {
            Cond::Any => true,
            Cond::Below(c) => value < c,
            Cond::Even => value % 2 == 0,
            Cond::Rising => prev(1).is_some_and(|p| value > p),
            Cond::DiffersTwoBack => prev(2).is_some_and(|p| value != p),
            Cond::AboveLast(w) => last(w, 0).is_some_and(|x| value > x),
            Cond::NearQualified(w) => last(w, 0).is_some_and(|x| value <= x + 1),
            Cond::BelowOneBefore(w) => last(w, 1).is_none_or(|x| value < x),
            Cond::CountAtMost(w, n) => (of(w).count() as i64) <= n,
            Cond::SumBelow(w, c) => sum(w).is_some_and(|s| s < c),
            Cond::AvgAtLeast(w) => {
                let n = of(w).count();
                n > 0 && sum(w).unwrap_or(0) as f64 / n as f64 >= 1.5
            }
            Cond::AtLeastFirst(w) => first(w, 0).is_some_and(|f| value >= f),
            Cond::NotSecond(w) => first(w, 1).is_none_or(|f| value != f),
            Cond::MaxAbove(w) => of(w).max().is_some_and(|m| m > value),
            Cond::NearTwo => (value - 2).abs() <= 1,
            Cond::ClassCountAtMost(w, n) => (of(w).count() as i64) <= n,
            Cond::SumExprBelow(w, c) => of(w)
                .map(|v| v * 2 + 1)
                .reduce(|a, b| a + b)
                .is_some_and(|s| s < c),
            // The rows of a match are consecutive: the one before is the previous mapped.
            Cond::AfterClass(w) => mapping
                .len()
                .checked_sub(2)
                .is_some_and(|i| mapping[i].1 == w),
            Cond::MinNear(w) => of(w).min().is_some_and(|m| m >= value - 2),
            Cond::FirstClass(w) => mapping[0].1 == w,
            Cond::ClassTwoBack(w) => mapping
                .len()
                .checked_sub(3)
                .is_some_and(|i| mapping[i].1 == w),
            // The row before W's last one, if it is in the match (its rows are consecutive).
            Cond::BeforeLastIsB(w) => mapping
                .iter()
                .rposition(|(_, v)| is_of(w, *v, members))
                .and_then(|i| i.checked_sub(1))
                .is_some_and(|i| mapping[i].1 == 1),
            Cond::AnyAboveThree(w) => of(w).any(|x| x > 3),
            Cond::AboveAnyValue(w) => first(w, 0).is_some_and(|f| f < value),
            Cond::MaxByRemainder(w) => {
                let mut best: Option<i64> = None;
                for x in of(w) {
                    if best.is_none_or(|b| x % 3 > b % 3) {
                        best = Some(x);
                    }
                }
                best.is_some_and(|b| b >= value)
            }
            Cond::FloatAvg(w) => {
                let n = of(w).count();
                n > 0 && sum(w).unwrap_or(0) as f64 / n as f64 / 10.0 >= 0.2345
            }
            Cond::NotThirdLast(w) => last(w, 2).is_none_or(|x| value != x),
            Cond::FirstOfIs(w) => mapping
                .iter()
                .find(|(_, v)| is_of(w, *v, members))
                .is_some_and(|(_, v)| *v == 1),
            // PREV goes back among the partition's rows, before the match too.
            Cond::NotAfterTwoBefore(w) => mapping
                .iter()
                .rfind(|(_, v)| is_of(w, *v, members))
                .and_then(|(r, _)| r.checked_sub(2))
                .is_none_or(|r| value != rows[r].2 + 1),
            Cond::NineTwoAfterSeven(w) => {
                value == 9
                    && mapping
                        .iter()
                        .rfind(|(_, v)| is_of(w, *v, members))
                        .and_then(|(r, _)| r.checked_sub(2))
                        .is_some_and(|r| rows[r].2 == 7)
            }
            Cond::AboveDistanceOneBefore(w) => last(w, 1).map_or(0, |x| (x - 3).abs()) <= value,
            Cond::NotAboveBeforeLast(w) => mapping
                .iter()
                .rfind(|(_, v)| is_of(w, *v, members))
                .and_then(|(r, _)| r.checked_sub(1))
                .is_none_or(|r| value * 2 < rows[r].2 * 2 + 1),
            Cond::SecondNotA(w) => mapping
                .iter()
                .filter(|(_, v)| is_of(w, *v, members))
                .nth(1)
                .is_none_or(|(_, v)| *v != 0),
            Cond::DistinctAtMost(w, n) => {
                of(w).collect::<std::collections::BTreeSet<_>>().len() as i64 <= n
            }
            Cond::JoinedBelow(w) => {
                let joined: String = of(w).map(|x| x.to_string()).collect();
                joined.is_empty() || joined.as_str() < "23"
            }
        }
    }
}

/// AFTER MATCH SKIP …
#[derive(Debug, Clone, Copy)]
pub(crate) enum Skip {
    PastLastRow,
    ToNextRow,
    ToFirst(usize),
    ToLast(usize),
}

impl Skip {
    pub(crate) fn text(self) -> String {
        match self {
            Skip::PastLastRow => "skip past last row".into(),
            Skip::ToNextRow => "skip to next row".into(),
            Skip::ToFirst(v) => format!("skip to first {}", name_of(v)),
            Skip::ToLast(v) => format!("skip to last {}", name_of(v)),
        }
    }
}

/// ALL ROWS PER MATCH …
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// SHOW EMPTY MATCHES (the default)
    Show,
    /// OMIT EMPTY MATCHES
    Omit,
    /// WITH UNMATCHED ROWS (their MATCH_NUMBER is NULL, shown as 0)
    Unmatched,
}

/// One configuration of the operator.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) pattern: Pat,
    /// The condition of A, B and C.
    pub(crate) defines: [Cond; 3],
    pub(crate) skip: Skip,
    /// Milliseconds.
    pub(crate) within: Option<i64>,
    pub(crate) mode: Mode,
    /// `SUBSET U = (…)`: a bit per member (0: no SUBSET).
    pub(crate) union: u8,
    /// The classifier column also shows `FINAL COUNT(*)`, `NEXT(CLASSIFIER())` and
    /// `PREV(CLASSIFIER())`, and the running `SUM` of A's values and `COUNT` of B's rows
    /// (over every row, by `CLASSIFIER()`), through DataFusion's `||`: `B/5/C/A/7/2` (`-`
    /// past the match's last row, before its first, or for a sum of no rows); then lists
    /// (`array_agg`): of A's values × 2 + 1 so far (a FILTER), of every row's variable
    /// (FINAL) and of U's values so far (with a SUBSET): `…/[1, 5]/[A, B, A]/[0, 2]`.
    pub(crate) rich: bool,
}

impl Case {
    /// Makes every name refer to a variable of the pattern (the operator refuses others):
    /// a condition on a missing variable looks at its own variable instead, a skip to a
    /// missing variable skips to the pattern's first variable.
    pub(crate) fn normalized(mut self) -> Case {
        let mut present: Vec<usize> = (0..3).filter(|v| self.pattern.mentions(*v)).collect();
        // The union holds variables of the pattern only; without any, there is none.
        self.union &= present.iter().map(|v| 1u8 << v).sum::<u8>();
        // The standard forbids showing unmatched rows of a pattern with an exclusion.
        if self.pattern.excludes() && self.mode == Mode::Unmatched {
            self.mode = Mode::Show;
        }
        if self.union != 0 {
            present.push(U);
        }
        for (own, d) in self.defines.iter_mut().enumerate() {
            if let Some(w) = d.other() {
                // CLASSIFIER() is never 'U': a count of U's rows so is the operator's 0.
                let by_name = w == U
                    && matches!(
                        d,
                        Cond::ClassCountAtMost(..)
                            | Cond::AfterClass(_)
                            | Cond::FirstClass(_)
                            | Cond::ClassTwoBack(_)
                    );
                if !present.contains(&w) || by_name {
                    *d = d.with_other(own);
                }
            }
        }
        let fix = |v: usize| if present.contains(&v) { v } else { present[0] };
        self.skip = match self.skip {
            Skip::ToFirst(v) => Skip::ToFirst(fix(v)),
            Skip::ToLast(v) => Skip::ToLast(fix(v)),
            other => other,
        };
        self
    }

    /// The members of `U`, a bit per variable.
    pub(crate) fn members(&self) -> u8 {
        self.union
    }

    pub(crate) fn flow(&self) -> String {
        let mut params = format!(
            "param partition_by = \"k\" param order_by = \"ts\" param pattern = \"{}\"\n",
            self.pattern.text()
        );
        if self.union != 0 {
            let names: Vec<&str> = (0..3)
                .filter(|v| self.union >> v & 1 == 1)
                .map(|v| VARS[v])
                .collect();
            params += &format!("  param subset = \"U = ({})\"\n", names.join(", "));
        }
        for (v, d) in self.defines.iter().enumerate() {
            if !self.pattern.mentions(v) {
                continue;
            }
            if let Some(t) = d.text(v) {
                params += &format!("  param define = \"{} AS {t}\"\n", VARS[v]);
            }
        }
        params += match self.mode {
            Mode::Show => "  param rows_per_match = \"all\"\n",
            Mode::Omit => "  param rows_per_match = \"all omit empty\"\n",
            Mode::Unmatched => "  param rows_per_match = \"all with unmatched\"\n",
        };
        if self.rich {
            // The lists (array_agg) are columns after `cls`: the operator's test collector
            // appends them to it.
            params += "  param measures = \"MATCH_NUMBER() AS m, CLASSIFIER() || '/' || CAST(FINAL COUNT(*) AS VARCHAR) || '/' || coalesce(NEXT(CLASSIFIER()), '-') || '/' || coalesce(PREV(CLASSIFIER()), '-') || '/' || coalesce(CAST(SUM(CASE WHEN CLASSIFIER() = 'A' THEN value END) AS VARCHAR), '-') || '/' || CAST(COUNT(CASE WHEN CLASSIFIER() = 'B' THEN 1 END) AS VARCHAR) || '/' || coalesce(CAST(NEXT(value * 10 + 1) AS VARCHAR), '-') || '/' || coalesce(FIRST(lower(CLASSIFIER()), 1), '-') || '/' || coalesce(CAST(PREV(value - 1) AS VARCHAR), '-') AS cls, array_agg(value * 2 + 1) FILTER (WHERE CLASSIFIER() = 'A') AS a_vals, FINAL array_agg(CLASSIFIER()) AS classes";
            if self.union != 0 {
                params += ", array_agg(U.value) AS u_vals";
            }
            params += "\"\n";
        } else {
            params += "  param measures = \"MATCH_NUMBER() AS m, CLASSIFIER() AS cls\"\n";
        }
        params += &format!("  param after_match = \"{}\"\n", self.skip.text());
        if let Some(w) = self.within {
            params += &format!("  param within = \"{w}ms\"\n");
        }
        format!(
            r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "in"
  {params}  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The brute-force matcher: backtracking over the pattern in preference order.

/// The search gave up: the pattern is too ambiguous for brute force on this input.
#[derive(Debug)]
pub(crate) struct OutOfBudget;

/// What is left to match after the current element.
pub(crate) enum Cont<'a> {
    Done,
    /// The remaining parts of a concatenation, then `next`.
    Rest {
        rest: &'a [Pat],
        next: &'a Cont<'a>,
    },
    /// An exclusion has ended.
    Unexclude {
        next: &'a Cont<'a>,
    },
    /// Iteration `count` of the quantified `rep`, begun at row `began`, has ended.
    Iterated {
        rep: &'a Pat,
        count: u32,
        began: usize,
        next: &'a Cont<'a>,
    },
}

pub(crate) struct Search<'a> {
    rows: &'a [Row],
    case: &'a Case,
    start: usize,
    /// (row, variable) of the match so far.
    mapping: Vec<(usize, usize)>,
    /// Whether each row of `mapping` is inside an exclusion.
    excluded: Vec<bool>,
    /// Exclusions open at the current place.
    excluding: usize,
    /// Rows still to classify before giving up.
    budget: &'a mut u64,
}

impl Search<'_> {
    /// Matches `p` from row `pos`, then `k`; true when a complete match was found (it is in
    /// `mapping`), trying alternatives in preference order.
    pub(crate) fn go(&mut self, p: &Pat, pos: usize, k: &Cont<'_>) -> Result<bool, OutOfBudget> {
        match p {
            Pat::Var(v) => {
                let Some(row) = self.rows.get(pos) else {
                    return Ok(false);
                };
                if self
                    .case
                    .within
                    .is_some_and(|w| row.0 - self.rows[self.start].0 >= w)
                {
                    return Ok(false);
                }
                *self.budget = self.budget.checked_sub(1).ok_or(OutOfBudget)?;
                self.mapping.push((pos, *v));
                self.excluded.push(self.excluding > 0);
                if self.case.defines[*v].holds(self.rows, &self.mapping, self.case.members())
                    && self.cont(k, pos + 1)?
                {
                    return Ok(true);
                }
                self.mapping.pop();
                self.excluded.pop();
                Ok(false)
            }
            Pat::Concat(parts) => self.cont(
                &Cont::Rest {
                    rest: parts,
                    next: k,
                },
                pos,
            ),
            Pat::Alt(alts) => {
                for a in alts {
                    if self.go(a, pos, k)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Pat::Rep { .. } => self.repeat(p, 0, pos, k),
            Pat::Exclude(inner) => {
                self.excluding += 1;
                let found = self.go(inner, pos, &Cont::Unexclude { next: k });
                self.excluding -= 1;
                found
            }
            Pat::Start => Ok(pos == 0 && self.cont(k, pos)?),
            Pat::End => Ok(pos == self.rows.len() && self.cont(k, pos)?),
            Pat::Permute(parts) => {
                // The orders of the parts' positions, smallest first (the standard's
                // preference), each tried as a concatenation.
                let mut order: Vec<usize> = (0..parts.len()).collect();
                loop {
                    let seq: Vec<Pat> = order.iter().map(|i| parts[*i].clone()).collect();
                    if self.go(&Pat::Concat(seq), pos, k)? {
                        return Ok(true);
                    }
                    // The next permutation in lexicographic order.
                    let Some(i) = (1..order.len()).rev().find(|&i| order[i - 1] < order[i]) else {
                        return Ok(false);
                    };
                    let j = (i..order.len())
                        .rev()
                        .find(|&j| order[j] > order[i - 1])
                        .expect("a larger element after i - 1");
                    order.swap(i - 1, j);
                    order[i..].reverse();
                }
            }
        }
    }

    pub(crate) fn cont(&mut self, k: &Cont<'_>, pos: usize) -> Result<bool, OutOfBudget> {
        match k {
            Cont::Done => Ok(true),
            Cont::Unexclude { next } => {
                self.excluding -= 1;
                let found = self.cont(next, pos);
                self.excluding += 1;
                found
            }
            Cont::Rest { rest, next } => match rest.split_first() {
                None => self.cont(next, pos),
                Some((first, rest)) => self.go(first, pos, &Cont::Rest { rest, next }),
            },
            Cont::Iterated {
                rep,
                count,
                began,
                next,
            } => {
                let Pat::Rep { q, .. } = rep else {
                    unreachable!("only a quantified pattern iterates")
                };
                let (min, max) = q.bounds();
                // An iteration of an unbounded loop beyond its minimum must consume a row.
                if max.is_none() && *count > min && pos == *began {
                    return Ok(false);
                }
                self.repeat(rep, *count, pos, next)
            }
        }
    }

    /// `count` iterations of `rep` are done, the next row is `pos`.
    pub(crate) fn repeat(
        &mut self,
        rep: &Pat,
        count: u32,
        pos: usize,
        k: &Cont<'_>,
    ) -> Result<bool, OutOfBudget> {
        let Pat::Rep { inner, q, greedy } = rep else {
            unreachable!("a quantified pattern")
        };
        let (min, max) = q.bounds();
        let more = max.is_none_or(|m| count < m);
        let stop = count >= min;
        for another in if *greedy {
            [true, false]
        } else {
            [false, true]
        } {
            let found = if another {
                more && self.go(
                    inner,
                    pos,
                    &Cont::Iterated {
                        rep,
                        count: count + 1,
                        began: pos,
                        next: k,
                    },
                )?
            } else {
                stop && self.cont(k, pos)?
            };
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Every output row of `case` over `rows` (in arrival order), found by brute force.
pub(crate) fn brute_force(case: &Case, rows: &[Row]) -> Result<Vec<Out>, OutOfBudget> {
    let mut keys: Vec<i64> = rows.iter().map(|r| r.1).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut budget = 400_000u64;
    let mut out = vec![];
    for key in keys {
        let mut part: Vec<Row> = rows.iter().filter(|r| r.1 == key).copied().collect();
        // Event-time order, ties in arrival order (the sort is stable).
        part.sort_by_key(|r| r.0);
        let mut matches = 0;
        let mut i = 0;
        // Rows before this one are in a match (or shown as unmatched).
        let mut covered = 0;
        while i < part.len() {
            let mut s = Search {
                rows: &part,
                case,
                start: i,
                mapping: vec![],
                excluded: vec![],
                excluding: 0,
                budget: &mut budget,
            };
            let cells = |r: usize| (part[r].0, part[r].1, part[r].2);
            if !s.go(&case.pattern, i, &Cont::Done)? {
                if case.mode == Mode::Unmatched && i >= covered {
                    let (t, k, v) = cells(i);
                    out.push((t, k, v, 0, None));
                    covered = i + 1;
                }
                i += 1;
                continue;
            }
            let mapping = s.mapping;
            let excluded = s.excluded;
            matches += 1;
            covered = covered.max(mapping.last().map_or(i, |(r, _)| *r) + 1);
            if mapping.is_empty() && case.mode != Mode::Omit {
                let (t, k, v) = cells(i);
                out.push((t, k, v, matches, None));
            }
            for (j, (&(r, var), _)) in mapping
                .iter()
                .zip(&excluded)
                .enumerate()
                .filter(|(_, (_, x))| !**x)
            {
                let (t, k, v) = cells(r);
                let cls = if case.rich {
                    let next = mapping.get(j + 1).map_or("-", |(_, w)| VARS[*w]);
                    let prev = j.checked_sub(1).map_or("-", |i| VARS[mapping[i].1]);
                    // Running aggregates: over the rows up to this one.
                    let so_far = &mapping[..=j];
                    let sum_a = so_far
                        .iter()
                        .filter(|(_, w)| *w == 0)
                        .map(|(r, _)| part[*r].2)
                        .reduce(|a, b| a + b)
                        .map_or("-".to_string(), |s| s.to_string());
                    let count_b = so_far.iter().filter(|(_, w)| *w == 1).count();
                    // Navigation over expressions: the next row's, the second row's (running),
                    // the partition's row before this one (before the match too).
                    let next_x = mapping
                        .get(j + 1)
                        .map_or("-".to_string(), |(r, _)| (part[*r].2 * 10 + 1).to_string());
                    let second = so_far
                        .get(1)
                        .map_or("-".to_string(), |(_, w)| VARS[*w].to_lowercase());
                    let before = r
                        .checked_sub(1)
                        .map_or("-".to_string(), |p| (part[p].2 - 1).to_string());
                    // The lists (array_agg): A's values × 2 + 1 so far, every row's
                    // variable (FINAL), U's values so far; NULL for no row.
                    let list = |items: Vec<String>| {
                        if items.is_empty() {
                            "NULL".to_string()
                        } else {
                            format!("[{}]", items.join(", "))
                        }
                    };
                    let a_vals = list(
                        so_far
                            .iter()
                            .filter(|(_, w)| *w == 0)
                            .map(|(r, _)| (part[*r].2 * 2 + 1).to_string())
                            .collect(),
                    );
                    let classes = list(mapping.iter().map(|(_, w)| VARS[*w].to_string()).collect());
                    let u_vals = if case.union == 0 {
                        String::new()
                    } else {
                        let u = list(
                            so_far
                                .iter()
                                .filter(|(_, w)| is_of(U, *w, case.union))
                                .map(|(r, _)| part[*r].2.to_string())
                                .collect(),
                        );
                        format!("/{u}")
                    };
                    format!(
                        "{}/{}/{next}/{prev}/{sum_a}/{count_b}/{next_x}/{second}/{before}/{a_vals}/{classes}{u_vals}",
                        VARS[var],
                        mapping.len()
                    )
                } else {
                    VARS[var].to_string()
                };
                out.push((t, k, v, matches, Some(cls)));
            }
            let rows_of = |v: usize| {
                mapping
                    .iter()
                    .filter(move |(_, w)| is_of(v, *w, case.union))
                    .map(|(r, _)| *r)
            };
            let after = |r: Option<usize>| r.filter(|r| *r > i).unwrap_or(i + 1);
            i = match case.skip {
                Skip::PastLastRow => mapping.last().map_or(i + 1, |(r, _)| r + 1),
                Skip::ToNextRow => i + 1,
                Skip::ToFirst(v) => after(rows_of(v).next()),
                Skip::ToLast(v) => after(rows_of(v).next_back()),
            };
        }
    }
    out.sort();
    Ok(out)
}
