//! Flink's computed column `p_time AS PROCTIME()` in `CREATE TABLE`: the connector does not
//! read it; a map after the source adds it, and a window whose DESCRIPTOR names it is over
//! processing time. Other computed columns, and a table with one written, are refused.

use anduin_spec::{parse_sql, Spec, Value};

const BID: &str =
    "CREATE TABLE bid (auction BIGINT, bidder BIGINT, dateTime TIMESTAMP, p_time AS PROCTIME())
WITH (connector = 'nexmark', event_time = 'dateTime', watermark = '4 seconds');
CREATE TABLE out1 WITH (connector = 'discard');
CREATE TABLE out2 WITH (connector = 'discard');
";

fn param(spec: &Spec, op: &str, name: &str) -> Option<String> {
    let o = spec.operators.iter().find(|o| o.name.as_str() == op)?;
    o.params
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| match &p.value {
            Value::String(t) => t.as_str().to_string(),
            other => format!("{other:?}"),
        })
}

fn errors(sql: &str) -> Vec<String> {
    let err = parse_sql(&format!("{BID}{sql}")).expect_err("refused");
    err.0
        .iter()
        .map(|d| format!("{}:{}: {}", d.pos.line, d.pos.col, d.message))
        .collect()
}

#[test]
fn the_source_reads_the_other_columns_and_a_map_adds_the_processing_time() {
    let spec = parse_sql(&format!(
        "{BID}
INSERT INTO out1 SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
INSERT INTO out2 SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let names: Vec<&str> = spec.operators.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(&names[..2], ["bid", "bid_proctime"]);
    let ty = spec
        .types
        .iter()
        .find(|t| t.name.as_str() == "bid")
        .expect("bid's type");
    let cols: Vec<&str> = ty.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        cols,
        ["auction", "bidder", "dateTime"],
        "the connector's columns"
    );
    assert_eq!(
        param(&spec, "bid_proctime", "columns").as_deref(),
        Some("*, PROCTIME() AS \"p_time\"")
    );
    assert_eq!(
        param(&spec, "insert1_window", "time_kind").as_deref(),
        Some("processing")
    );
    assert_eq!(
        param(&spec, "insert1_window", "time").as_deref(),
        Some("p_time")
    );
    // The table's event time is still its event time.
    assert_eq!(param(&spec, "insert2_window", "time_kind"), None);
    assert_eq!(
        param(&spec, "insert2_window", "time").as_deref(),
        Some("dateTime")
    );
}

#[test]
fn another_computed_column_a_second_processing_time_and_a_written_one_are_refused() {
    let err = parse_sql(
        "CREATE TABLE t (a BIGINT, b AS a + 1) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'discard');
INSERT INTO o SELECT a FROM t;",
    )
    .expect_err("refused");
    assert_eq!(
        err.0.first().map(|d| (d.pos.line, d.pos.col, d.message.as_str())),
        Some((1, 27, "column `b`: a computed column other than `AS PROCTIME()` is not supported: compute it in a view (CREATE VIEW v AS SELECT *, a + 1 AS b FROM t)"))
    );
    let err = parse_sql(
        "CREATE TABLE t (a BIGINT, p AS PROCTIME(), q AS PROCTIME()) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'discard');
INSERT INTO o SELECT a FROM t;",
    )
    .expect_err("refused");
    assert_eq!(
        err.0.first().map(|d| d.message.as_str()),
        Some("column `q`: table `t` has a processing time already (`p`)")
    );
    assert_eq!(
        errors(
            "CREATE TABLE sink (a BIGINT, p AS PROCTIME()) WITH (connector = 'discard');
INSERT INTO sink SELECT auction FROM bid;"
        ),
        ["6:13: table `sink` has a computed column `p`: it can be read, not written"]
    );
}
