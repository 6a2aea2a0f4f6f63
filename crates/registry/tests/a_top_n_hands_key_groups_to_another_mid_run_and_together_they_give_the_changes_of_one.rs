//! Issue 15's live rescale on a top-N (the `top_n` operator), as the runtime does it for an
//! operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another waits idle; half the key groups
//! move to the idle one with their partitions' rows; both checkpoint and are restored (or
//! not); then part of the taker's key groups move back to the first. Fed the rows the
//! exchange sends each (by key group), the two write the changes of one instance that ran
//! straight through — a ranked top three per key, and keep-first deduplication by event time
//! (whose held rows wait for the watermark on either side of a move). With the heap and the
//! LSM backend, on seeded input.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn top_n(backend: &str, params: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "top_n" {{
  input name = "s" param keys = "k" param state_backend = "{backend}" {params}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_top_ns_handing_key_groups_back_and_forth_give_the_changes_of_one() {
    let ranked = r#"param order = "v DESC, ts" param limit = 3 param rank_column = "rn""#;
    let first = r#"param order = "ts" param limit = 1 param time = "ts""#;
    for backend in ["heap", "lsm"] {
        let with_ttl = format!(r#"{ranked} param state_ttl = "1h""#);
        for params in [ranked, first, with_ttl.as_str()] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 60, 25, 1);
                let (got, expected) =
                    handed_back_and_forth(&|| top_n(backend, params), &input, restore);
                assert!(expected.len() > 50, "a test with output: {params}");
                assert_eq!(got, expected, "{backend}, {params}, seed {seed}");
            }
        }
    }
}
