//! Issue 15's live rescale on a window (tumbling, sliding, cumulate, session, count), as the runtime
//! does it for an operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another, idle, sees only the
//! watermarks; half the key groups move to the idle one; both checkpoint and are restored
//! (the giver's checkpoint must no longer hold what it gave, the taker's must hold what it
//! took); then part of the taker's key groups move back into what the first one still
//! holds. Fed the rows the exchange sends each (by key group), the two give the rows of one
//! instance that ran straight through: no window lost, none fired twice, no aggregate off.
//! With the heap and the LSM backend, on seeded input a little out of order, with lateness.

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_operator_api::Operator;

fn window(kind: &str, backend: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind} param time = "ts" param keys = "k" param state_backend = "{backend}"
  param allowed_lateness = "20ms"
  param aggregates = "COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS mean"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_instances_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    let kinds = [
        r#"param kind = "tumbling" param size = "40ms""#,
        r#"param kind = "sliding" param size = "90ms" param slide = "30ms""#,
        r#"param kind = "sliding" param size = "100ms" param slide = "20ms""#,
        r#"param kind = "cumulate" param size = "90ms" param step = "30ms""#,
        r#"param kind = "session" param gap = "15ms""#,
        r#"param kind = "count" param size = 7"#,
    ];
    for kind in kinds {
        for backend in ["heap", "lsm"] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 60, 25, 1);
                let (got, expected) =
                    handed_back_and_forth(&|| window(kind, backend), &input, restore);
                assert!(expected.len() > 100, "{kind}: a test with output");
                assert_eq!(got, expected, "{kind}, {backend}, seed {seed}");
            }
        }
    }
}
