//! Issue 18, conformance (ISO/IEC 19075-5 §4.12, Trino's "SUBSET"): a union variable `U =
//! (A, C)` names the rows mapped to any of its members: `U.x` and `LAST(U.x)` the last such
//! row, `FIRST(U.x)` the first, aggregates all of them, `CLASSIFIER(U)` the member the last of
//! them is mapped to, in DEFINE as in MEASURES, and `AFTER MATCH SKIP TO FIRST/LAST U` their
//! first / last row.

use crate::common;

/// 10 is A, 8 and 6 fall (B), 9 rises (C); then 7 is A, 5 B, 8 C.
const ROWS: [(i64, i64, i64, &str); 7] = [
    (1, 0, 10, "t"),
    (2, 0, 8, "t"),
    (3, 0, 6, "t"),
    (4, 0, 9, "t"),
    (5, 0, 7, "t"),
    (6, 0, 5, "t"),
    (7, 0, 8, "t"),
];

const DEFINES: &str = r#"param pattern = "A B+ C"
  param subset = "U = (A, C), W = (A, B)"
  param define = "B AS value < PREV(value)"
  param define = "C AS value > PREV(value) AND COUNT(W.*) >= 3""#;

#[test]
fn one_row_per_match_sees_the_rows_of_the_union() {
    let params = format!(
        r#"param order_by = "ts"
  {DEFINES}
  param measures = "LAST(U.value) AS lu, FIRST(U.value) AS fu, U.value AS u, COUNT(U.*) AS nu, SUM(U.value) AS su, CLASSIFIER(U) AS cu, CLASSIFIER(W) AS cw""#
    );
    // The second run has only one B: A, B and C are three rows of which W has two.
    assert_eq!(
        common::pattern_rows(&params, &ROWS),
        ["9, 10, 9, 2, 19, C, B"]
    );
}

#[test]
fn all_rows_per_match_sees_the_union_so_far() {
    let params = format!(
        r#"param order_by = "ts"
  {DEFINES}
  param rows_per_match = "all"
  param measures = "LAST(U.value) AS lu, CLASSIFIER(W) AS cw, FINAL CLASSIFIER(U) AS cu""#
    );
    let got: Vec<String> = common::pattern_rows(&params, &ROWS)
        .into_iter()
        .map(|r| r.split(", ").skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        got,
        ["10 t 10 A C", "8 t 10 B C", "6 t 10 B C", "9 t 9 B C",]
    );
}

#[test]
fn a_skip_to_the_union_goes_to_its_first_or_last_row() {
    // A B+ over 3 2 1 0 with W = (A, B): skip to the last W row (0: no match from it), or to
    // the first (3 itself: the next row instead, as a skip may not stay put), each finding the
    // matches from there.
    let rows = [
        (1, 0, 3, "t"),
        (2, 0, 2, "t"),
        (3, 0, 1, "t"),
        (4, 0, 9, "t"),
        (5, 0, 8, "t"),
    ];
    let run = |skip: &str| {
        let params = format!(
            r#"param order_by = "ts"
  param pattern = "A B+"
  param subset = "W = (A, B)"
  param define = "B AS value < PREV(value)"
  param after_match = "{skip}"
  param measures = "FIRST(W.value) AS f, LAST(W.value) AS l""#
        );
        common::pattern_rows(&params, &rows)
    };
    // From 3: 3 2 1; skip to the last W row (1): 1 9 does not fall, 9 8 does.
    assert_eq!(run("skip to last W"), ["3, 1", "9, 8"]);
    // Skip to the first W row (3): not after the start, so the next row: 2 1, then 9 8.
    assert_eq!(run("skip to first W"), ["3, 1", "2, 1", "9, 8"]);
    let src = r#"type name = "T" { column name = "ts", type = "timestamp" column name = "value", type = "int" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" { input name = "in" param order_by = "ts" param pattern = "A B" param subset = "U = (A, X)" output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let e = anduin_graph::check(&spec, &anduin_registry::BuiltinCatalog)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("`X` in SUBSET `U` is not a variable of the pattern"),
        "{e}"
    );
}
