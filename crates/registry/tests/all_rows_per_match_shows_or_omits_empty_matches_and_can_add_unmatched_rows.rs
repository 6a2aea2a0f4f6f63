//! Issue 18, conformance (ISO/IEC 19075-5 §4.14, Trino's "ALL ROWS PER MATCH"): an empty
//! match is one row of nulls (its CLASSIFIER is null, its COUNT 0) with SHOW EMPTY MATCHES,
//! the default, and no row with OMIT EMPTY MATCHES, but it is numbered either way; WITH
//! UNMATCHED ROWS adds every row that is in no match, with null measures, in row order.

use crate::common;

/// Each output row as "value match_number classifier count".
fn rows_out(mode: &str, pattern: &str, skip: &str, values: &[i64]) -> Vec<String> {
    let params = format!(
        r#"param order_by = "ts" param pattern = "{pattern}"
  param define = "A AS value > 3"
  param define = "B AS value > 3"
  param rows_per_match = "{mode}"
  param after_match = "{skip}"
  param measures = "MATCH_NUMBER() AS m, CLASSIFIER() AS c, COUNT(*) AS n""#
    );
    let rows: Vec<(i64, i64, i64, &str)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, 0, *v, "t"))
        .collect();
    let pattern_uses_b = pattern.contains('B');
    let params = if pattern_uses_b {
        params
    } else {
        params.replace("  param define = \"B AS value > 3\"\n", "")
    };
    common::pattern_rows(&params, &rows)
        .into_iter()
        .map(|r| {
            r.split(", ")
                .skip(2)
                .filter(|c| *c != "t")
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn an_empty_match_is_a_row_of_nulls_or_no_row_and_is_numbered_either_way() {
    // 1: an empty match (1); 5: A (2); 2: an empty match (3).
    let values = [1, 5, 2];
    let shown = ["1 1 NULL 0", "5 2 A 1", "2 3 NULL 0"];
    assert_eq!(rows_out("all", "A*", "skip past last row", &values), shown);
    assert_eq!(
        rows_out("all show empty", "A*", "skip past last row", &values),
        shown
    );
    assert_eq!(
        rows_out("all omit empty", "A*", "skip past last row", &values),
        ["5 2 A 1"]
    );
    // Empty matches are matches: WITH UNMATCHED ROWS shows them, and has no row left over.
    assert_eq!(
        rows_out("all with unmatched", "A*", "skip past last row", &values),
        shown
    );
}

#[test]
fn with_unmatched_rows_every_row_in_no_match_comes_with_null_measures() {
    assert_eq!(
        rows_out(
            "all with unmatched",
            "A+",
            "skip past last row",
            &[1, 5, 6, 2]
        ),
        ["1 NULL NULL NULL", "5 1 A 1", "6 1 A 2", "2 NULL NULL NULL"]
    );
    // Skipping to the next row, 6 starts no match of its own but is in the first one; 1
    // and 7 (whose B never comes) are in none.
    assert_eq!(
        rows_out(
            "all with unmatched",
            "A B",
            "skip to next row",
            &[5, 6, 1, 7]
        ),
        ["5 1 A 1", "6 1 B 2", "1 NULL NULL NULL", "7 NULL NULL NULL"]
    );
    // Without it, the same input shows the match alone.
    assert_eq!(
        rows_out("all", "A B", "skip to next row", &[5, 6, 1, 7]),
        ["5 1 A 1", "6 1 B 2"]
    );
}
