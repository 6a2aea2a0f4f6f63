//! `string_agg` / `listagg` with `WITHIN GROUP (ORDER BY …)` (and PostgreSQL's
//! `string_agg(x, ',' ORDER BY y)`) against a brute-force reference on seeded random matches:
//! at every prefix of a match (RUNNING: the rows so far) and over the whole (FINAL), the
//! values of the aggregated rows, NULLs skipped, DISTINCT keeping a value's first row,
//! stably sorted by the keys (NULLs last ascending and first descending unless `NULLS`
//! says), joined with the separator; NULL for none.

use std::cmp::Ordering;
use std::sync::Arc;

use anduin_types::ColumnType;

use super::super::expr::{compile_measures, Scope, E};
use super::super::value::Value;
use super::{eval, View};

/// A match: rows of (`x` int, `f` float, `s` string), each mapped to a variable (0: A, 1: B),
/// oldest first.
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

fn compiled(text: &str) -> E {
    let columns: Vec<(String, ColumnType)> = vec![
        ("x".into(), ColumnType::Int),
        ("f".into(), ColumnType::Double),
        ("s".into(), ColumnType::String),
    ];
    let names = vec!["A".to_string(), "B".to_string()];
    let scope = Scope::new(&columns, &names);
    let m = compile_measures(&format!("{text} AS m"), &scope)
        .unwrap_or_else(|e| panic!("{text}: {e:?}"));
    m[0].1.e.clone()
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
                let f = match rng.below(4) {
                    0 => Value::Null,
                    1 => Value::Float(-2.0),
                    2 => Value::Float(0.5),
                    _ => Value::Float(1.5),
                };
                let s = match rng.below(6) {
                    0 => Value::Null,
                    1 => Value::Str("".into()),
                    k => Value::Str(["p", "qq", "r", "sss"][k as usize - 2].into()),
                };
                (rng.below(2) as usize, [x, f, s])
            })
            .collect(),
    )
}

/// A key of the reference: computed from a row's cells.
struct Key {
    at: fn(&[Value; 3]) -> Value,
    desc: bool,
    nulls_first: bool,
}

/// One ordered aggregate and how the reference computes it.
struct Case {
    text: &'static str,
    var: Option<usize>,
    keep: fn(&[Value; 3]) -> bool,
    distinct: bool,
    keys: Vec<Key>,
    sep: &'static str,
}

fn plain(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        other => panic!("keys of one kind: {other:?}"),
    }
}

/// The brute-force answer over `rows`, oldest first.
fn reference(c: &Case, rows: &[(usize, [Value; 3])]) -> Value {
    let mut kept: Vec<&[Value; 3]> = Vec::new();
    for (var, cells) in rows {
        if c.var.is_some_and(|v| v != *var) || !(c.keep)(cells) {
            continue;
        }
        if c.distinct && kept.iter().any(|k| k[2] == cells[2]) {
            continue;
        }
        kept.push(cells);
    }
    // Insertion sort: stable by construction.
    let mut sorted: Vec<&[Value; 3]> = Vec::new();
    for cells in kept {
        let before = |other: &[Value; 3]| {
            for k in &c.keys {
                let (x, y) = ((k.at)(cells), (k.at)(other));
                let o = match (x.is_null(), y.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => {
                        if k.nulls_first {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        }
                    }
                    (false, true) => {
                        if k.nulls_first {
                            Ordering::Greater
                        } else {
                            Ordering::Less
                        }
                    }
                    (false, false) if k.desc => plain(&y, &x),
                    (false, false) => plain(&x, &y),
                };
                if o != Ordering::Equal {
                    return o == Ordering::Less;
                }
            }
            false
        };
        let at = sorted
            .iter()
            .position(|o| before(o))
            .unwrap_or(sorted.len());
        sorted.insert(at, cells);
    }
    let strings: Vec<&str> = sorted
        .iter()
        .filter_map(|cells| match &cells[2] {
            Value::Str(s) => Some(&**s),
            _ => None,
        })
        .collect();
    if strings.is_empty() {
        Value::Null
    } else {
        Value::Str(strings.join(c.sep).into())
    }
}

fn cases() -> Vec<Case> {
    let x = |c: &[Value; 3]| c[0].clone();
    let f = |c: &[Value; 3]| c[1].clone();
    let len = |c: &[Value; 3]| match &c[2] {
        Value::Str(s) => Value::Int(s.chars().count() as i64),
        _ => Value::Null,
    };
    let key = |at: fn(&[Value; 3]) -> Value, desc: bool, nulls_first: bool| Key {
        at,
        desc,
        nulls_first,
    };
    let all = |_: &[Value; 3]| true;
    vec![
        Case {
            text: "string_agg(A.s, ',') WITHIN GROUP (ORDER BY A.x)",
            var: Some(0),
            keep: all,
            distinct: false,
            keys: vec![key(x, false, false)],
            sep: ",",
        },
        Case {
            text: "listagg(A.s, '/') WITHIN GROUP (ORDER BY A.x DESC, A.f ASC)",
            var: Some(0),
            keep: all,
            distinct: false,
            keys: vec![key(x, true, true), key(f, false, false)],
            sep: "/",
        },
        Case {
            text: "LISTAGG(s, '') WITHIN GROUP (ORDER BY x NULLS FIRST, f DESC NULLS LAST)",
            var: None,
            keep: all,
            distinct: false,
            keys: vec![key(x, false, true), key(f, true, false)],
            sep: "",
        },
        Case {
            text: "string_agg(DISTINCT B.s, ';') WITHIN GROUP (ORDER BY B.x DESC NULLS LAST)",
            var: Some(1),
            keep: all,
            distinct: true,
            keys: vec![key(x, true, false)],
            sep: ";",
        },
        Case {
            text: "string_agg(A.s, ',' ORDER BY A.f DESC)",
            var: Some(0),
            keep: all,
            distinct: false,
            keys: vec![key(f, true, true)],
            sep: ",",
        },
        Case {
            text: "listagg(s, '-') WITHIN GROUP (ORDER BY length(s) DESC, x) FILTER (WHERE x > -1)",
            var: None,
            keep: |c| matches!(c[0], Value::Int(v) if v > -1),
            distinct: false,
            keys: vec![key(len, true, true), key(x, false, false)],
            sep: "-",
        },
    ]
}

#[test]
fn ordered_string_aggregates_equal_the_brute_force_reference_running_and_final() {
    let cases = cases();
    let compiled: Vec<E> = cases.iter().map(|c| compiled(c.text)).collect();
    let vars = [Arc::from("A"), Arc::from("B")];
    for seed in 0..400u64 {
        let mut rng = Rng(seed);
        let m = random_match(&mut rng);
        // Each prefix: the running value at that row; the whole match: the final one.
        for end in 0..=m.0.len() {
            let prefix = Match(m.0[..end].to_vec());
            for (c, e) in cases.iter().zip(&compiled) {
                let got = eval(e, &prefix, &vars).unwrap_or_else(|err| panic!("{err:?}"));
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
fn rows_of_equal_keys_keep_their_order_in_the_match() {
    let s = |v: &str| Value::Str(v.into());
    let m = Match(vec![
        (0, [Value::Int(2), Value::Null, s("c")]),
        (0, [Value::Int(1), Value::Null, s("a")]),
        (0, [Value::Int(2), Value::Null, s("b")]),
        (0, [Value::Null, Value::Null, s("n")]),
        (0, [Value::Int(1), Value::Null, s("d")]),
    ]);
    let vars = [Arc::from("A"), Arc::from("B")];
    let value = |text: &str| eval(&compiled(text), &m, &vars).expect("evaluates");
    assert_eq!(
        value("listagg(A.s, ',') WITHIN GROUP (ORDER BY A.x)"),
        s("a,d,c,b,n")
    );
    assert_eq!(
        value("listagg(A.s, ',') WITHIN GROUP (ORDER BY A.x DESC)"),
        s("n,c,b,a,d")
    );
    assert_eq!(
        value("listagg(A.s, ',') WITHIN GROUP (ORDER BY A.x DESC NULLS LAST)"),
        s("c,b,a,d,n")
    );
    // Without WITHIN GROUP: the order of the match.
    assert_eq!(value("listagg(A.s, ',')"), s("c,a,b,n,d"));
}

#[test]
fn a_constant_separator_is_computed_once_and_joins_as_its_literal_would() {
    let s = |v: &str| Value::Str(v.into());
    let m = Match(vec![
        (0, [Value::Int(2), Value::Null, s("c")]),
        (0, [Value::Int(1), Value::Null, s("a")]),
        (0, [Value::Null, Value::Null, s("b")]),
    ]);
    let vars = [Arc::from("A"), Arc::from("B")];
    let value = |text: &str| eval(&compiled(text), &m, &vars).expect("evaluates");
    assert_eq!(value("listagg(A.s, ',' || ' ')"), s("c, a, b"));
    assert_eq!(
        value("listagg(A.s, CAST(0 AS VARCHAR)) WITHIN GROUP (ORDER BY A.x)"),
        s("a0c0b")
    );
    assert_eq!(
        value("string_agg(A.s, concat('-', upper('x'), '-'))"),
        s("c-X-a-X-b")
    );
    assert_eq!(
        value("string_agg(A.s, chr(59) ORDER BY A.s DESC)"),
        s("c;b;a")
    );
    // A NULL separator joins without one, as Oracle's default.
    assert_eq!(value("listagg(A.s, CAST(NULL AS VARCHAR))"), s("cab"));
}
