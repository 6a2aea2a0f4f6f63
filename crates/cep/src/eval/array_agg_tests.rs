//! `array_agg` in a measure (issue 18) against a brute-force reference on seeded random
//! matches: at every prefix of a match (RUNNING: the rows so far), the values of the
//! aggregated rows (a variable's, or every row's), NULLs kept, `FILTER` keeping the rows
//! where its condition is true, `DISTINCT` keeping each value (NULL too) at its first row,
//! stably sorted by `ORDER BY` keys; NULL for no row. And where it is refused: in DEFINE,
//! inside an expression.

use std::sync::Arc;

use anduin_types::ColumnType;

use super::super::expr::{compile_defines, compile_measures, Scope, E};
use super::super::value::Value;
use super::{eval, View};

/// A match: rows of (`x` int, `s` string), each mapped to a variable (0: A, 1: B, 2: C),
/// oldest first. `U` is the SUBSET (A, C).
struct Match(Vec<(usize, [Value; 2])>);

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

fn columns() -> Vec<(String, ColumnType)> {
    vec![
        ("x".into(), ColumnType::Int),
        ("s".into(), ColumnType::String),
    ]
}

fn names() -> Vec<String> {
    vec!["A".to_string(), "B".to_string(), "C".to_string()]
}

/// The measure `text` compiled, with its type.
fn compiled(text: &str) -> Result<(E, Option<ColumnType>), String> {
    let (columns, names) = (columns(), names());
    let subsets = [("U".to_string(), 0b101u64)];
    let scope = Scope {
        subsets: &subsets,
        ..Scope::new(&columns, &names)
    };
    let mut m = compile_measures(&format!("{text} AS m"), &scope).map_err(|e| e.message)?;
    let (_, t, _) = m.remove(0);
    Ok((t.e, t.ty))
}

use crate::test_rng::Rng;

fn random_match(rng: &mut Rng) -> Match {
    let n = rng.below(9) as usize;
    Match(
        (0..n)
            .map(|_| {
                let x = match rng.below(5) {
                    0 => Value::Null,
                    k => Value::Int(k as i64 - 2),
                };
                let s = match rng.below(4) {
                    0 => Value::Null,
                    k => Value::Str(["p", "q", "r"][k as usize - 1].into()),
                };
                (rng.below(3) as usize, [x, s])
            })
            .collect(),
    )
}

/// One measure and how the reference computes it: which rows (by variable), the value at a
/// row, whether the row is kept (FILTER), DISTINCT, and a sort key (ascending, NULLs last).
struct Case {
    text: &'static str,
    rows: fn(usize) -> bool,
    value: fn(&[Value; 2]) -> Value,
    keep: fn(&[Value; 2]) -> bool,
    distinct: bool,
    key: Option<SortKey>,
}

/// A sort key of a row's cells (`None`: NULL).
type SortKey = fn(&[Value; 2]) -> Option<i64>;

/// The brute-force answer over `rows`, oldest first.
fn reference(c: &Case, rows: &[(usize, [Value; 2])]) -> Value {
    let mut kept: Vec<(Value, Option<i64>)> = Vec::new();
    for (var, cells) in rows {
        if !(c.rows)(*var) || !(c.keep)(cells) {
            continue;
        }
        let v = (c.value)(cells);
        if c.distinct && kept.iter().any(|(k, _)| *k == v) {
            continue;
        }
        kept.push((v, c.key.and_then(|k| k(cells))));
    }
    if c.key.is_some() {
        // Stable: equal keys keep their order; NULL keys last.
        kept.sort_by_key(|(_, k)| (k.is_none(), *k));
    }
    if kept.is_empty() {
        Value::Null
    } else {
        Value::List(kept.into_iter().map(|(v, _)| v).collect())
    }
}

fn cases() -> Vec<Case> {
    let x = |c: &[Value; 2]| c[0].clone();
    let all = |_: &[Value; 2]| true;
    vec![
        Case {
            text: "array_agg(A.x)",
            rows: |v| v == 0,
            value: x,
            keep: all,
            distinct: false,
            key: None,
        },
        Case {
            text: "RUNNING array_agg(x * 10 + 1)",
            rows: |_| true,
            value: |c| match c[0] {
                Value::Int(i) => Value::Int(i * 10 + 1),
                _ => Value::Null,
            },
            keep: all,
            distinct: false,
            key: None,
        },
        Case {
            text: "array_agg(U.s || CLASSIFIER())",
            rows: |v| v != 1,
            value: |c| match &c[1] {
                Value::Str(s) => Value::Str(format!("{s}?").into()),
                _ => Value::Null,
            },
            keep: all,
            distinct: false,
            key: None,
        },
        Case {
            text: "array_agg(DISTINCT B.s)",
            rows: |v| v == 1,
            value: |c| c[1].clone(),
            keep: all,
            distinct: true,
            key: None,
        },
        Case {
            text: "array_agg(x) FILTER (WHERE x > -1)",
            rows: |_| true,
            value: x,
            keep: |c| matches!(c[0], Value::Int(v) if v > -1),
            distinct: false,
            key: None,
        },
        Case {
            text: "array_agg(s ORDER BY x)",
            rows: |_| true,
            value: |c| c[1].clone(),
            keep: all,
            distinct: false,
            key: Some(|c| match c[0] {
                Value::Int(i) => Some(i),
                _ => None,
            }),
        },
    ]
}

#[test]
fn array_agg_equals_the_brute_force_reference_at_every_row() {
    let cases = cases();
    let vars = [Arc::from("A"), Arc::from("B"), Arc::from("C")];
    for c in &cases {
        let (e, _) = compiled(c.text).unwrap_or_else(|e| panic!("{}: {e}", c.text));
        assert!(e.is_list(), "{}", c.text);
    }
    for seed in 0..400u64 {
        let mut rng = Rng(seed);
        let m = random_match(&mut rng);
        for end in 0..=m.0.len() {
            let prefix = Match(m.0[..end].to_vec());
            for c in &cases {
                // CLASSIFIER() is the row's own variable: A or C.
                let (e, _) = compiled(c.text).expect("compiles");
                let mut got = eval(&e, &prefix, &vars).unwrap_or_else(|err| panic!("{err:?}"));
                if let Value::List(items) = &got {
                    got = Value::List(
                        items
                            .iter()
                            .map(|v| match v {
                                Value::Str(s) if s.ends_with('A') || s.ends_with('C') => {
                                    Value::Str(format!("{}?", &s[..s.len() - 1]).into())
                                }
                                other => other.clone(),
                            })
                            .collect(),
                    );
                }
                assert_eq!(
                    got,
                    reference(c, &prefix.0),
                    "seed {seed}, {} over the first {end} rows of {:?}",
                    c.text,
                    m.0
                );
            }
        }
    }
}

#[test]
fn the_list_has_the_type_of_its_values_and_final_keeps_it_a_list() {
    assert_eq!(
        compiled("array_agg(A.x)").expect("compiles").1,
        Some(ColumnType::Int)
    );
    assert_eq!(
        compiled("array_agg(CLASSIFIER())").expect("compiles").1,
        Some(ColumnType::String)
    );
    let (e, ty) = compiled("FINAL array_agg(CAST(A.x AS DOUBLE))").expect("compiles");
    assert!(matches!(e, E::Final(_)) && e.is_list());
    assert_eq!(ty, Some(ColumnType::Double));
    assert!(!compiled("COUNT(A.x)").expect("compiles").0.is_list());
}

#[test]
fn array_agg_inside_an_expression_or_a_define_is_refused_naming_it() {
    for text in [
        "lower(array_agg(A.s))",
        "array_agg(A.x) IS NULL",
        "coalesce(FINAL array_agg(x), NULL)",
        "COUNT(A.x) + array_agg(A.x)",
    ] {
        let e = compiled(text).expect_err(text);
        assert!(
            e.contains("array_agg must be a measure of its own"),
            "{text}: {e}"
        );
    }
    let (columns, names) = (columns(), names());
    let scope = Scope::new(&columns, &names);
    let e = compile_defines("A AS array_agg(A.x) IS NOT NULL", &scope).expect_err("refused");
    assert!(e.message.contains("array_agg in DEFINE"), "{}", e.message);
}
