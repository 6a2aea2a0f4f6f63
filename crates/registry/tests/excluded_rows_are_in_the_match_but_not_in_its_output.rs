//! Issue 18, conformance (ISO/IEC 19075-5 §4.11.4, Trino's "exclusion syntax"): rows matched
//! inside `{- … -}` belong to the match (navigation, aggregates and CLASSIFIER see them) but
//! ALL ROWS PER MATCH does not output them; ONE ROW PER MATCH is unchanged, and WITH
//! UNMATCHED ROWS is refused with an exclusion.

use crate::common;

/// 5 (A), 3 2 falling (B), 4 6 rising (C).
const ROWS: [(i64, i64, i64, &str); 5] = [
    (1, 0, 5, "t"),
    (2, 0, 3, "t"),
    (3, 0, 2, "t"),
    (4, 0, 4, "t"),
    (5, 0, 6, "t"),
];

fn params(rows_per_match: &str) -> String {
    format!(
        r#"param order_by = "ts"
  param pattern = "{{- A -}} B+ {{- C+ -}}"
  param define = "B AS value < PREV(value)"
  param define = "C AS value > PREV(value)"
  param rows_per_match = "{rows_per_match}"
  param measures = "MATCH_NUMBER() AS m, FINAL COUNT(*) AS n, COUNT(*) AS so_far, FINAL LAST(C.value) AS top, FIRST(CLASSIFIER()) AS first_c""#
    )
}

#[test]
fn all_rows_per_match_leaves_the_excluded_rows_out() {
    let got: Vec<String> = common::pattern_rows(&params("all"), &ROWS)
        .into_iter()
        .map(|r| r.split(", ").skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    // The B rows only; the counts and the top see A and the C rows.
    assert_eq!(got, ["3 t 1 5 2 6 A", "2 t 1 5 3 6 A"]);
}

#[test]
fn one_row_per_match_is_unchanged() {
    assert_eq!(
        common::pattern_rows(&params("one"), &ROWS),
        ["1, 5, 5, 6, A"]
    );
}

#[test]
fn unmatched_rows_cannot_be_shown_with_an_exclusion() {
    let result =
        std::panic::catch_unwind(|| common::pattern_rows(&params("all with unmatched"), &ROWS));
    let message = result
        .err()
        .and_then(|e| e.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(
        message.contains("a pattern with an exclusion `{- … -}` cannot show unmatched rows"),
        "{message}"
    );
}
