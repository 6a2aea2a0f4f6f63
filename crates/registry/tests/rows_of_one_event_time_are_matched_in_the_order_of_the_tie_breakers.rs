//! Issue 18: `order_by = "ts, value DESC, tag"` (SQL `ORDER BY ts, value DESC, tag`) matches
//! the rows of one event time in the order of the tie-breakers after it, whatever their
//! arrival order; rows equal in every tie-breaker keep their arrival order. A tie-breaker may
//! say where its NULLs go (`NULLS FIRST` / `NULLS LAST`; unit tests in `order.rs` place them).

use crate::common;

/// The params of an `A+` over every row, all rows per match, ordered by `order_by`.
fn params(order_by: &str) -> String {
    format!(
        r#"param order_by = "{order_by}"
  param pattern = "A+"
  param rows_per_match = "all"
  param measures = "MATCH_NUMBER() AS m, COUNT(*) AS n""#
    )
}

#[test]
fn ties_of_event_time_follow_the_tie_breakers_then_arrival() {
    // Two rows at 1 ms, four at 2 ms: arrival order differs from the order of the ties.
    let rows = [
        (2, 0, 5, "x"),
        (1, 0, 1, "b"),
        (2, 0, 9, "z"),
        (1, 0, 3, "a"),
        (2, 0, 5, "w"),
        (2, 0, 5, "w"),
    ];
    let got = common::pattern_rows(&params("ts, value DESC, tag"), &rows);
    // Where NULLs go changes nothing without them.
    assert_eq!(
        common::pattern_rows(&params("ts, value desc nulls last, tag NULLS FIRST"), &rows),
        got
    );
    assert_eq!(
        got,
        [
            "1970-01-01T00:00:00.001, 0, 3, a, 1, 1",
            "1970-01-01T00:00:00.001, 0, 1, b, 1, 2",
            "1970-01-01T00:00:00.002, 0, 9, z, 1, 3",
            "1970-01-01T00:00:00.002, 0, 5, w, 1, 4",
            "1970-01-01T00:00:00.002, 0, 5, w, 1, 5",
            "1970-01-01T00:00:00.002, 0, 5, x, 1, 6",
        ]
    );
}

#[test]
fn a_tie_breaker_that_is_no_column_is_refused() {
    let src = r#"type name = "T" { column name = "ts", type = "timestamp" column name = "v", type = "int" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" { input name = "in" param order_by = "ts, w" param pattern = "A" output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let err = anduin_graph::check(&spec, &anduin_registry::BuiltinCatalog)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("unknown column `w`"), "{err}");
    let err = anduin_graph::check(
        &anduin_spec::parse_flow(&src.replace("ts, w", "ts, v NULLS")).expect("parses"),
        &anduin_registry::BuiltinCatalog,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("expected a column, optionally followed by ASC or DESC and NULLS FIRST or NULLS LAST, found \"v NULLS\""),
        "{err}"
    );
}
