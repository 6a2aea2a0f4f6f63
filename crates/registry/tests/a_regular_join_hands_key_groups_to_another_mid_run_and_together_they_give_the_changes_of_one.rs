//! Issue 15's live rescale on a regular join (the `regular_join` operator), as the runtime
//! does it for an operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another waits idle; half the key groups
//! move to the idle one with both sides' rows of their keys; both checkpoint and are
//! restored; then part of the taker's key groups move back to the first. Fed the rows the
//! exchange sends each (by key group), the two write the changes of one instance that ran
//! straight through, inner and full outer (whose padded rows are retracted and come back),
//! with the heap and the LSM backend, on seeded input.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn join(how: &str, backend: &str, ttl: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "gl", type = "generator" {{ output name = "l", type = "T" }}
operator name = "gr", type = "generator" {{ output name = "r", type = "T" }}
operator name = "op", type = "regular_join" {{
  input name = "l" input name = "r" param on = "l.k = r.k" param how = "{how}"
  param condition = "v < r_v + 40" param state_backend = "{backend}" {ttl}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_regular_joins_handing_key_groups_back_and_forth_give_the_changes_of_one() {
    // With a state time-to-live the keys' write times move and are restored with them
    // (an hour: nothing expires on the real clock in this test).
    for (how, ttl) in [
        ("inner", ""),
        ("full", ""),
        ("full", r#"param state_ttl = "1h""#),
    ] {
        for backend in ["heap", "lsm"] {
            for (seed, restore) in [(3u64, false), (11, true)] {
                let input = arrivals(seed, 60, 20, 2);
                let (got, expected) =
                    handed_back_and_forth(&|| join(how, backend, ttl), &input, restore);
                assert!(
                    expected.len() > 1000,
                    "a test with output: {}",
                    expected.len()
                );
                assert_eq!(got, expected, "{how} {ttl}, {backend}, seed {seed}");
            }
        }
    }
}
