//! Issue 15's live rescale on a join, as the runtime does it for an operator that moves key
//! groups itself (`Operator::give_key_groups` and `take_key_groups`): one instance runs
//! alone while another, idle, sees only the watermarks; half the key groups move to the idle
//! one with the rows buffered for them; both checkpoint and are restored (the giver's
//! checkpoint must no longer hold what it gave, the taker's must hold what it took); then
//! part of the taker's key groups move back to the first. Fed the rows the exchange sends
//! each (by key group), the two give the rows of one instance that ran straight through: no
//! pair lost or made twice, no left row of a left join unmatched twice. Interval and window
//! joins, inner and left, with the heap and the LSM backend, on seeded input a little out of
//! order.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn join(kind: &str, backend: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "l", type = "T" }}
operator name = "h", type = "generator" {{ output name = "r", type = "T" }}
operator name = "op", type = "join" {{
  input name = "l" input name = "r" {kind} param state_backend = "{backend}"
  param on = "l.k = r.k" param left_time = "ts" param right_time = "ts"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_joins_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    let kinds = [
        r#"param kind = "interval" param lower = "-30ms" param upper = "20ms" param how = "inner""#,
        r#"param kind = "interval" param lower = "-10ms" param upper = "40ms" param how = "left""#,
        r#"param kind = "window" param size = "50ms" param how = "left""#,
    ];
    for kind in kinds {
        for backend in ["heap", "lsm"] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 120, 12, 2);
                let (got, expected) =
                    handed_back_and_forth(&|| join(kind, backend), &input, restore);
                assert!(expected.len() > 100, "{kind}: a test with output");
                assert_eq!(got, expected, "{kind}, {backend}, seed {seed}");
            }
        }
    }
}
