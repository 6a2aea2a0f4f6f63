//! Flink's legacy group windows (`GROUP BY k, SESSION(ts, gap)` with `SESSION_START(…)` and
//! `SESSION_END(…)`, as Nexmark q11 writes them; `TUMBLE(ts, size)`, `HOP(ts, slide, size)`)
//! lower to what the window table function over the same table lowers to; a start or end of
//! another window than the GROUP BY's, or a window over another column than the event time,
//! is refused at its position.

use anduin_spec::{parse_sql, Spec, Value};

const T: &str = "CREATE TABLE bid (ts TIMESTAMP, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = 'bid.csv', event_time = 'ts', watermark = '4 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'o.csv');
";

fn spec(insert: &str) -> Spec {
    parse_sql(&format!("{T}{insert}")).unwrap_or_else(|d| panic!("{insert}\n{d}"))
}

fn error(insert: &str) -> String {
    parse_sql(&format!("{T}{insert}"))
        .map(|_| ())
        .expect_err(insert)
        .to_string()
}

#[test]
fn a_legacy_window_is_its_window_table_function() {
    for (legacy, tvf) in [
        (
            "SELECT B.bidder, count(*) AS n, SESSION_START(B.ts, INTERVAL '10' SECOND) AS s, \
             SESSION_END(B.ts, INTERVAL '10' SECOND) AS e \
             FROM bid B GROUP BY B.bidder, SESSION(B.ts, INTERVAL '10' SECOND)",
            "SELECT bidder, count(*) AS n, window_start AS s, window_end AS e \
             FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)) \
             GROUP BY bidder, window_start, window_end",
        ),
        (
            "SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) AS s, max(price) AS top \
             FROM bid GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)",
            "SELECT window_start AS s, max(price) AS top \
             FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' SECOND)) \
             GROUP BY window_start, window_end",
        ),
        (
            "SELECT bidder, HOP_END(ts, INTERVAL '1' SECOND, INTERVAL '5' SECOND) AS e, count(*) AS n \
             FROM bid GROUP BY HOP(ts, INTERVAL '1' SECOND, INTERVAL '5' SECOND), bidder",
            "SELECT bidder, window_end AS e, count(*) AS n \
             FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '5' SECOND)) \
             GROUP BY window_start, window_end, bidder",
        ),
    ] {
        let (a, b) = (
            spec(&format!("INSERT INTO out {legacy};")),
            spec(&format!("INSERT INTO out {tvf};")),
        );
        assert_eq!(lowered(&a), lowered(&b), "{legacy}");
    }
}

/// Each operator's kind and params (their values' text), without positions.
fn lowered(s: &Spec) -> Vec<(String, Vec<(String, String)>)> {
    (s.operators.iter())
        .map(|o| {
            let params = (o.params.iter())
                .map(|p| {
                    let value = match &p.value {
                        Value::String(t) => t.as_str().to_string(),
                        other => format!("{other:?}"),
                    };
                    (p.name.as_str().to_string(), value)
                })
                .collect();
            (o.kind.as_str().to_string(), params)
        })
        .collect()
}

#[test]
fn the_start_of_another_window_or_a_window_over_another_column_is_refused() {
    let e = error(
        "INSERT INTO out SELECT bidder, SESSION_START(ts, INTERVAL '5' SECOND) AS s, count(*) AS n \
         FROM bid GROUP BY bidder, SESSION(ts, INTERVAL '10' SECOND);",
    );
    assert!(
        e.contains(
            "is not the window of the GROUP BY: write SESSION_START(ts, INTERVAL '10' SECOND)"
        ),
        "{e}"
    );
    let e = error(
        "INSERT INTO out SELECT bidder, count(*) AS n FROM bid GROUP BY bidder, TUMBLE(price, INTERVAL '1' SECOND);",
    );
    assert!(e.contains("are over its event time `ts`"), "{e}");
}
