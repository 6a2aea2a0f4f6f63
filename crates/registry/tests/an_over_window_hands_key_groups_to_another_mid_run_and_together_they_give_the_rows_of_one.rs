//! Issue 15's live rescale on an OVER window (the `over` operator), as the runtime does it for
//! an operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): half the key groups move to an idle instance with their partitions'
//! waiting rows and frames, both checkpoint and are restored (or not), then part move back.
//! Fed the rows the exchange sends each, the two write the rows of one instance that ran
//! straight through, for a `rows` and a `range` frame, with the heap and the LSM backend.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn over(backend: &str, frame: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "over" {{
  input name = "s" param keys = "k" param time = "ts" param frame = "{frame}"
  param aggregates = "COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top" param state_backend = "{backend}"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_over_windows_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    for backend in ["heap", "lsm"] {
        for frame in ["rows 3", "range 40ms", "rows unbounded"] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 60, 25, 1);
                let (got, expected) =
                    handed_back_and_forth(&|| over(backend, frame), &input, restore);
                assert!(expected.len() > 50, "a test with output: {frame}");
                assert_eq!(got, expected, "{backend}, {frame}, seed {seed}");
            }
        }
    }
}
