//! Issue 15's live rescale on the pattern operator (MATCH_RECOGNIZE), as the runtime does it
//! for an operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another, idle, sees only the
//! watermarks; half the key groups move to the idle one with their partitions (partial
//! matches in flight, rows kept for `PREV`, MATCH_NUMBER() so far) and the rows still
//! waiting for the watermark; both checkpoint and are restored (the giver's checkpoint must
//! no longer hold what it gave, the taker's must hold what it took); then part of the
//! taker's key groups move back into what the first one still holds. Fed the rows the
//! exchange sends each (by key group), the two give the rows of one instance that ran
//! straight through: no match lost, made twice or numbered otherwise. One and all rows per
//! match, skip strategies, with and without `within`, with the heap and the LSM backend
//! (with few partitions kept in memory, so that idle ones move from the table only), on
//! seeded input a little out of order.

use crate::common;
use crate::common::moves::{arrivals, figure_at_the_first_move, handed_back_and_forth};

use anduin_operator_api::Operator;

/// The cases: a pattern's params besides partition_by, order_by and the backend.
const CASES: [&str; 4] = [
    // One row per match, within: partial matches end by time and move half done.
    r#"param pattern = "A B+ C" param within = "400ms"
  param define = "A AS v < -20, B AS v >= -20, C AS v < -30"
  param measures = "FIRST(A.ts) AS a_ts, LAST(C.ts) AS c_ts, COUNT(B.*) AS bs, SUM(B.v) AS s, MATCH_NUMBER() AS m""#,
    // All rows per match, skip to next row: overlapping matches, running measures.
    r#"param pattern = "A B+ C" param within = "300ms"
  param define = "A AS v < 0, B AS v >= 0, C AS v < 0"
  param rows_per_match = "all" param after_match = "skip to next row"
  param measures = "CLASSIFIER() AS cls, MATCH_NUMBER() AS m, COUNT(B.*) AS bs""#,
    // No within, PREV across rows kept, reluctant and skip to a variable.
    r#"param pattern = "A B+? C+" param after_match = "skip to first C"
  param define = "A AS v < -10, B AS v > PREV(v), C AS v < PREV(v)"
  param measures = "FIRST(A.ts) AS a_ts, LAST(C.ts) AS c_ts, COUNT(*) AS n, MATCH_NUMBER() AS m""#,
    // All rows with unmatched: every row comes out once, matched or not.
    r#"param pattern = "A B+ C" param within = "250ms" param after_match = "skip to last C"
  param define = "A AS v < -25, B AS v > -25, C AS v < 10"
  param rows_per_match = "all with unmatched"
  param measures = "CLASSIFIER() AS cls, MATCH_NUMBER() AS m""#,
];

fn pattern(case: &str, backend: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "s" param partition_by = "k" param order_by = "ts"
  param state_backend = "{backend}" param cache_partitions = 8
  {case}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_patterns_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    for case in CASES {
        for backend in ["heap", "lsm"] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 120, 12, 1);
                let make = || pattern(case, backend);
                let in_flight = figure_at_the_first_move(&make, &input, "partial_matches");
                assert!(
                    in_flight > 0,
                    "{case}: partial matches in flight at the move"
                );
                let (got, expected) = handed_back_and_forth(&make, &input, restore);
                assert!(expected.len() > 50, "{case}: a test with output");
                assert_eq!(got, expected, "{case}, {backend}, seed {seed}");
            }
        }
    }
}
