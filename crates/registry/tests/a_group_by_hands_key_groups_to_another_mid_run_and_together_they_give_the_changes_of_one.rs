//! Issue 15's live rescale on a GROUP BY (the `aggregate` operator), as the runtime does it
//! for an operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another waits idle; half the key groups
//! move to the idle one with their groups' accumulators; both checkpoint and are restored
//! (the giver's checkpoint must no longer hold what it gave, the taker's must hold what it
//! took); then part of the taker's key groups move back to the first. Fed the rows the
//! exchange sends each (by key group), the two write the changes of one instance that ran
//! straight through: each key's `+I`, `-U`, `+U` in the same values, none lost or doubled.
//! With the heap and the LSM backend, on seeded input.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn aggregate(backend: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "aggregate" {{
  input name = "s" param keys = "k" param state_backend = "{backend}"
  param aggregates = "COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS mean, COUNT(DISTINCT v) AS d"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_group_bys_handing_key_groups_back_and_forth_give_the_changes_of_one() {
    for backend in ["heap", "lsm"] {
        for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
            let input = arrivals(seed, 60, 25, 1);
            let (got, expected) = handed_back_and_forth(&|| aggregate(backend), &input, restore);
            assert!(expected.len() > 100, "a test with output");
            assert_eq!(got, expected, "{backend}, seed {seed}");
        }
    }
}
