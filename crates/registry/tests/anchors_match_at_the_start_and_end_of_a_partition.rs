//! Issue 18, conformance (ISO/IEC 19075-5 §4.11.2, Trino's "anchors"): `^` matches only
//! before the first row of a partition and `$` only after its last, which for a stream is when
//! the input ends (the watermark reaches +∞): a row arriving after a partial match waiting
//! at `$` ends it, and `within` does not (`$` consumes no row).

use crate::common;

/// Partition 0: 5 1 6 7; partition 1: 1 5; partition 2: 4 4.
const ROWS: [(i64, i64, i64, &str); 8] = [
    (1, 0, 5, "t"),
    (1, 1, 1, "t"),
    (1, 2, 4, "t"),
    (2, 0, 1, "t"),
    (2, 1, 5, "t"),
    (2, 2, 4, "t"),
    (3, 0, 6, "t"),
    (4, 0, 7, "t"),
];

/// Each output row as "partition value match_number classifier", sorted.
fn matched(pattern: &str, extra: &str) -> Vec<String> {
    let params = format!(
        r#"param partition_by = "k" param order_by = "ts" param pattern = "{pattern}"
  param define = "A AS value > 3"
  param rows_per_match = "all"
  param measures = "MATCH_NUMBER() AS m, CLASSIFIER() AS c"
  {extra}"#
    );
    let mut out: Vec<String> = common::pattern_rows(&params, &ROWS)
        .into_iter()
        .map(|r| {
            let cells: Vec<&str> = r.split(", ").collect();
            format!("{} {} {} {}", cells[1], cells[2], cells[4], cells[5])
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_start_anchor_matches_only_at_a_partitions_first_row() {
    // Partition 0 starts with 5 (A) then 1; 6 7 are not at the start. Partition 1 starts
    // with 1. Partition 2 is 4 4.
    assert_eq!(matched("^ A+", ""), ["0 5 1 A", "2 4 1 A", "2 4 1 A"]);
}

#[test]
fn the_end_anchor_matches_only_after_a_partitions_last_row() {
    // 5 of partition 0 is followed by 1; 6 7 end it. 5 ends partition 1.
    let expected = ["0 6 1 A", "0 7 1 A", "1 5 1 A", "2 4 1 A", "2 4 1 A"];
    assert_eq!(matched("A+ $", ""), expected);
    // `within` does not end a partial match waiting for the end; a row does.
    assert_eq!(
        matched("A+ $", r#"param within = "1ms""#),
        ["0 7 1 A", "1 5 1 A", "2 4 1 A"]
    );
    // Both: the whole partition.
    assert_eq!(matched("^ A+ $", ""), ["2 4 1 A", "2 4 1 A"]);
}
