//! Summaries against the aggregate itself: equal summaries give equal values after any later
//! rows; where they must differ, they do.

use super::super::super::expr::{compile_defines, Agg, Scope, E};
use super::super::super::value::Eval;
use super::super::eval;
use super::*;
use anduin_types::ColumnType;

/// A partial match: rows of (`x` int, `f` float, `s` string), each mapped to a variable
/// (0: A, 1: B), oldest first.
struct Match(Vec<(usize, [Value; 3])>);

impl View for Match {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        (0..self.0.len()).rev().map(|r| (r as u64, self.0[r].0))
    }
    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.0.get(row as usize)?.1.get(col)
    }
    fn match_number(&self) -> i64 {
        1
    }
}

fn vars() -> Vec<Arc<str>> {
    vec![Arc::from("A"), Arc::from("B")]
}

/// The aggregate of C's condition `C AS <text> IS NOT NULL`.
fn agg(text: &str) -> Agg {
    let columns: Vec<(String, ColumnType)> = vec![
        ("x".into(), ColumnType::Int),
        ("f".into(), ColumnType::Double),
        ("s".into(), ColumnType::String),
    ];
    let names = vec!["A".to_string(), "B".to_string(), "C".to_string()];
    let scope = Scope::new(&columns, &names);
    let d = compile_defines(&format!("C AS {text} IS NOT NULL"), &scope).expect("compiles");
    let mut found = None;
    d[0].1.e.walk(&mut |e| {
        if let E::Agg(a) = e {
            found = Some((**a).clone());
        }
    });
    found.expect("an aggregate")
}

fn summary(a: &Agg, m: &Match) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    match summarize(a, m, &vars(), &mut out) {
        Ok(true) => Some(out),
        Ok(false) => None,
        Err(e) => panic!("{e:?}"),
    }
}

/// The aggregate's value over `m` after `later` rows (newer than `m`'s).
fn value_after(a: &Agg, m: &Match, later: &[(usize, [Value; 3])]) -> Eval {
    let mut all = m.0.clone();
    all.extend(later.iter().cloned());
    eval(&E::Agg(Box::new(a.clone())), &Match(all), &vars())
}

fn r(var: usize, x: i64, f: f64, s: &str) -> (usize, [Value; 3]) {
    (var, [Value::Int(x), Value::Float(f), Value::Str(s.into())])
}

/// Whether `a` has equal summaries over `m1` and `m2` exactly when it has equal values after
/// each of `laters` (checked where the summaries are equal; where they differ, that some
/// later rows tell them apart is what `differ` says).
fn check(a: &Agg, m1: &Match, m2: &Match, laters: &[Vec<(usize, [Value; 3])>], differ: bool) {
    let (s1, s2) = (summary(a, m1), summary(a, m2));
    if !differ {
        assert_eq!(s1, s2, "{a:?}");
        assert!(s1.is_some(), "{a:?} has a summary");
    } else {
        assert_ne!(s1, s2, "{a:?}");
    }
    for later in laters {
        let (v1, v2) = (value_after(a, m1, later), value_after(a, m2, later));
        if !differ {
            assert_eq!(v1, v2, "{a:?} after {later:?}");
        }
    }
}

#[test]
fn counts_integer_totals_and_extremes_summarize_rows_mapped_otherwise() {
    // Rows 0-3 mapped in two ways: A has x = 1, 2 in one, 2, 1 (other rows) in the other.
    let m1 = Match(vec![
        r(0, 1, 0.0, "p"),
        r(1, 5, 0.0, "q"),
        r(0, 2, 0.0, "q"),
        r(1, 1, 0.0, "p"),
    ]);
    let m2 = Match(vec![
        r(1, 1, 0.0, "p"),
        r(0, 2, 0.0, "q"),
        r(1, 2, 0.0, "q"),
        r(0, 1, 0.0, "p"),
    ]);
    let laters = [
        vec![],
        vec![r(0, 7, 0.0, "z")],
        vec![r(1, -3, 0.0, "a"), r(0, 1, 0.0, "a")],
        vec![r(0, i64::MAX, 0.0, "")],
    ];
    for text in [
        "COUNT(A.*)",
        "COUNT(A.x)",
        "SUM(A.x)",
        "AVG(A.x)",
        "MIN(A.x)",
        "MAX(A.x)",
        "MAX(A.s)",
        "BOOL_OR(A.x > 1)",
        "BOOL_AND(A.x > 1)",
        "COUNT(CASE WHEN CLASSIFIER() = 'A' THEN 1 END)",
    ] {
        check(&agg(text), &m1, &m2, &laters, false);
    }
    // A total of as many rows or not: one summary.
    let m3 = Match(vec![r(0, 3, 0.0, "p"), r(1, 0, 0.0, "q")]);
    check(&agg("SUM(A.x)"), &m1, &m3, &laters, false);
    check(&agg("AVG(A.x)"), &m1, &m3, &laters, true);
    // What differs: the oldest A value, the order of the A rows for MAX_BY's ties, B's rows.
    for text in ["ANY_VALUE(A.x)", "SUM(B.x)", "MAX(B.x)"] {
        check(&agg(text), &m1, &m2, &laters, true);
    }
}

#[test]
fn max_by_keeps_the_oldest_extreme_key_and_its_value() {
    let a = agg("MAX_BY(A.s, A.x)");
    // The largest x is 3 in both, at a row whose s is `k`; the other rows differ.
    let m1 = Match(vec![
        r(0, 3, 0.0, "k"),
        r(0, 1, 0.0, "m"),
        r(0, 3, 0.0, "n"),
    ]);
    let m2 = Match(vec![
        r(1, 9, 0.0, "z"),
        r(0, 3, 0.0, "k"),
        r(0, 2, 0.0, "y"),
    ]);
    let laters = [
        vec![],
        vec![r(0, 3, 0.0, "later")],
        vec![r(0, 4, 0.0, "later")],
    ];
    check(&a, &m1, &m2, &laters, false);
    let m3 = Match(vec![r(0, 3, 0.0, "n"), r(0, 3, 0.0, "k")]);
    check(&a, &m1, &m3, &laters, true);
}

// A float total rounds after each addition, and the rows are added newest first: the later
// rows' values before these. Two histories with the same total (2^53, rounded the same) give
// other totals once a later 1.0 is added first; their summaries are their values, in order.
#[test]
fn float_totals_are_summarized_by_their_values_in_order() {
    let big = 9_007_199_254_740_992.0; // 2^53
    let a = agg("SUM(A.f)");
    let m1 = Match(vec![r(0, 0, big, ""), r(0, 0, 1.0, "")]);
    let m2 = Match(vec![r(0, 0, 1.0, ""), r(0, 0, big, "")]);
    assert_eq!(
        value_after(&a, &m1, &[]),
        value_after(&a, &m2, &[]),
        "the same total so far"
    );
    let later = [r(0, 0, 1.0, "")];
    assert_ne!(
        value_after(&a, &m1, &later),
        value_after(&a, &m2, &later),
        "not after a later row"
    );
    check(&a, &m1, &m2, &[], true);
    // The same values in the same order at other rows: one summary.
    let m3 = Match(vec![r(1, 0, 5.0, ""), r(0, 0, big, ""), r(0, 0, 1.0, "")]);
    check(&a, &m1, &m3, &[later.to_vec()], false);
}

// AVG of integers is exact, as SUM is: the order of the rows does not change it. (With a
// float total it did: 1 + 2^53 rounds to 2^53, 2^53 + 2 does not.)
#[test]
fn an_integer_average_does_not_depend_on_the_order_of_the_rows() {
    let a = agg("AVG(A.x)");
    let big = 1i64 << 53;
    let m1 = Match(vec![r(0, 1, 0.0, ""), r(0, 1, 0.0, ""), r(0, big, 0.0, "")]);
    let m2 = Match(vec![r(0, big, 0.0, ""), r(0, 1, 0.0, ""), r(0, 1, 0.0, "")]);
    assert_eq!(value_after(&a, &m1, &[]), value_after(&a, &m2, &[]));
    assert_eq!(
        value_after(&a, &m1, &[]),
        Ok(Value::Float((big as f64 + 2.0) / 3.0))
    );
    check(&a, &m1, &m2, &[vec![r(0, 1, 0.0, "")]], false);
}

// STRING_AGG is summarized by the strings joined: A's rows `p`, `q` and one row `p,q` give
// every later row the same string; `q`, `p` do not.
#[test]
fn joined_strings_summarize_string_agg_and_distinct_values_approx_distinct() {
    let a = agg("STRING_AGG(A.s, ',')");
    let m1 = Match(vec![
        r(0, 0, 0.0, "p"),
        r(1, 0, 0.0, "z"),
        r(0, 0, 0.0, "q"),
    ]);
    let m2 = Match(vec![r(1, 0, 0.0, "y"), r(0, 0, 0.0, "p,q")]);
    let laters = [vec![], vec![r(0, 0, 0.0, "r")], vec![r(1, 0, 0.0, "r")]];
    check(&a, &m1, &m2, &laters, false);
    assert_eq!(
        value_after(&a, &m1, &laters[1]),
        Ok(Value::Str("p,q,r".into()))
    );
    let m3 = Match(vec![r(0, 0, 0.0, "q"), r(0, 0, 0.0, "p")]);
    check(&a, &m1, &m3, &laters, true);
    // No A row: NULL, not the empty string of an A row `` (a later `r` gives `r`, `,r`).
    let none = Match(vec![r(1, 0, 0.0, "z")]);
    let empty = Match(vec![r(0, 0, 0.0, "")]);
    check(&a, &none, &empty, &laters, true);
    assert_eq!(value_after(&a, &none, &[]), Ok(Value::Null));
    assert_eq!(
        value_after(&a, &empty, &laters[1]),
        Ok(Value::Str(",r".into()))
    );

    // APPROX_DISTINCT by the set of values: 1, 2, 1 and 2, 1 alike; 1, 3 (also two) not.
    let a = agg("APPROX_DISTINCT(A.x)");
    let m1 = Match(vec![r(0, 1, 0.0, ""), r(0, 2, 0.0, ""), r(0, 1, 0.0, "")]);
    let m2 = Match(vec![r(0, 2, 0.0, ""), r(1, 7, 0.0, ""), r(0, 1, 0.0, "")]);
    let laters = [vec![], vec![r(0, 1, 0.0, "")], vec![r(0, 3, 0.0, "")]];
    check(&a, &m1, &m2, &laters, false);
    assert_eq!(value_after(&a, &m1, &laters[2]), Ok(Value::Int(3)));
    let m3 = Match(vec![r(0, 1, 0.0, ""), r(0, 3, 0.0, "")]);
    check(&a, &m1, &m3, &laters, true);
    assert_eq!(
        value_after(&a, &m3, &laters[2]),
        Ok(Value::Int(2)),
        "3 is one of them"
    );
}

// STRING_AGG … WITHIN GROUP (ORDER BY …) has no summary: A's rows `p` (x 1) and `q` (x 4) and
// A's rows `p` (x 1) and `q` (x 2) join to the same `p,q`, but a later `r` (x 3) goes between
// `p` and `q` in one and after `q` in the other.
#[test]
fn ordered_string_agg_has_no_summary_since_a_later_string_may_go_between() {
    let a = agg("STRING_AGG(A.s, ',') WITHIN GROUP (ORDER BY A.x)");
    let m1 = Match(vec![r(0, 1, 0.0, "p"), r(0, 4, 0.0, "q")]);
    let m2 = Match(vec![r(0, 1, 0.0, "p"), r(0, 2, 0.0, "q")]);
    assert_eq!(value_after(&a, &m1, &[]), value_after(&a, &m2, &[]));
    let later = [r(0, 3, 0.0, "r")];
    assert_eq!(value_after(&a, &m1, &later), Ok(Value::Str("p,r,q".into())));
    assert_eq!(value_after(&a, &m2, &later), Ok(Value::Str("p,q,r".into())));
    assert_eq!(summary(&a, &m1), None, "the rows tell");
    assert_eq!(summary(&a, &m2), None, "the rows tell");
}
