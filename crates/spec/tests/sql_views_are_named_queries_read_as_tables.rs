//! `CREATE VIEW v AS SELECT …` (Nexmark q12's `B`): a view is read in FROM as a table is,
//! lowered once where it is first read and shared by its later readers; views over views;
//! a column computed as `PROCTIME()` makes a window whose DESCRIPTOR names it a
//! processing-time window. What is refused is refused at the view's own position.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const TABLES: &str =
    "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP)
WITH (connector = 'nexmark', event_time = 'dateTime', watermark = '4 seconds');
CREATE TABLE out1 WITH (connector = 'discard');
CREATE TABLE out2 WITH (connector = 'discard');
";

fn param(op: &OperatorDef, name: &str) -> Option<String> {
    op.params
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| match &p.value {
            Value::String(t) => t.as_str().to_string(),
            other => format!("{other:?}"),
        })
}

fn op<'s>(spec: &'s Spec, name: &str) -> &'s OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.name.as_str() == name)
        .unwrap_or_else(|| panic!("no operator {name}: {:?}", names(spec)))
}

fn names(spec: &Spec) -> Vec<&str> {
    spec.operators.iter().map(|o| o.name.as_str()).collect()
}

fn inputs(o: &OperatorDef) -> Vec<&str> {
    o.inputs.iter().map(|i| i.as_str()).collect()
}

/// The errors of `sql` (after [`TABLES`]), each as `line:col: message`.
fn errors(sql: &str) -> Vec<String> {
    let err = parse_sql(&format!("{TABLES}{sql}")).expect_err("refused");
    err.0
        .iter()
        .map(|d| format!("{}:{}: {}", d.pos.line, d.pos.col, d.message))
        .collect()
}

#[test]
fn nexmark_q12_windows_its_view_by_processing_time() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/nexmark/q12.sql");
    let sql = std::fs::read_to_string(path).expect("the query file");
    let spec = parse_sql(&sql).unwrap_or_else(|d| panic!("q12: {d}"));
    let view = op(&spec, "view_B_select");
    assert_eq!(inputs(view), ["bid"]);
    assert_eq!(
        param(view, "columns").as_deref(),
        Some("*, PROCTIME() as p_time")
    );
    let window = op(&spec, "insert1_window");
    assert_eq!(inputs(window), ["view_B_select"]);
    assert_eq!(param(window, "kind").as_deref(), Some("tumbling"));
    assert_eq!(param(window, "size").as_deref(), Some("10000ms"));
    assert_eq!(param(window, "time").as_deref(), Some("p_time"));
    assert_eq!(param(window, "time_kind").as_deref(), Some("processing"));
    assert_eq!(param(window, "keys").as_deref(), Some("bidder"));
}

#[test]
fn a_view_read_by_two_inserts_is_lowered_once_and_a_view_over_a_view_reads_it() {
    let spec = parse_sql(&format!(
        "{TABLES}
CREATE VIEW cheap AS SELECT auction, bidder, price FROM bid WHERE price < 100;
CREATE VIEW cheapest AS SELECT auction, price * 2 AS doubled FROM cheap WHERE price < 10;
INSERT INTO out1 SELECT c.auction FROM cheap c;
INSERT INTO out2 SELECT auction, doubled FROM cheapest;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let lowered: Vec<&str> = names(&spec)
        .into_iter()
        .filter(|n| n.starts_with("view_"))
        .collect();
    assert_eq!(
        lowered,
        [
            "view_cheap_where",
            "view_cheap_select",
            "view_cheapest_where",
            "view_cheapest_select"
        ]
    );
    assert_eq!(
        param(op(&spec, "view_cheap_where"), "condition").as_deref(),
        Some("price < 100")
    );
    assert_eq!(inputs(op(&spec, "insert1_select")), ["view_cheap_select"]);
    assert_eq!(
        inputs(op(&spec, "view_cheapest_where")),
        ["view_cheap_select"]
    );
    assert_eq!(
        inputs(op(&spec, "insert2_select")),
        ["view_cheapest_select"]
    );
    // One source for the table both views read.
    assert_eq!(names(&spec).iter().filter(|n| **n == "bid").count(), 1);
}

#[test]
fn a_view_no_insert_reads_runs_nothing() {
    let spec = parse_sql(&format!(
        "{TABLES}
CREATE TABLE other (x BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE VIEW unused AS SELECT x FROM other;
INSERT INTO out1 SELECT auction FROM bid;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(names(&spec), ["bid", "insert1_select", "out1"]);
}

#[test]
fn a_view_over_an_unknown_table_or_a_later_view_is_refused_at_its_position() {
    assert_eq!(
        errors(
            "CREATE VIEW v AS SELECT x FROM nowhere;
CREATE VIEW early AS SELECT auction FROM late;
CREATE VIEW late AS SELECT auction FROM bid;
INSERT INTO out1 SELECT auction FROM late;"
        ),
        [
            "5:32: unknown table `nowhere`: create it with CREATE TABLE nowhere (…) WITH (…) (tables: bid, out1, out2)",
            "6:42: unknown table `late`: create it with CREATE TABLE late (…) WITH (…) (tables: bid, out1, out2)",
        ]
    );
}

#[test]
fn a_view_with_a_refused_query_is_refused_once_and_its_readers_point_at_it() {
    assert_eq!(
        errors(
            "CREATE VIEW v AS SELECT DISTINCT auction FROM bid;
INSERT INTO out1 SELECT auction FROM v;"
        ),
        [
            "5:18: SELECT DISTINCT is not supported yet",
            "6:38: view `v` cannot be read: its query is refused (at 5:13)",
        ]
    );
}

#[test]
fn a_view_is_neither_created_twice_nor_written_nor_given_column_names() {
    assert_eq!(
        errors(
            "CREATE VIEW bid AS SELECT auction FROM bid;
CREATE VIEW v AS SELECT auction FROM bid;
CREATE VIEW v AS SELECT bidder FROM bid;
CREATE VIEW w (a) AS SELECT auction FROM bid;
CREATE MATERIALIZED VIEW m AS SELECT auction FROM bid;
INSERT INTO v SELECT auction FROM bid;"
        ),
        [
            "5:13: `bid` is created twice (first as a table at 1:14)",
            "7:13: `v` is created twice (first as a view at 6:13)",
            "8:13: column names after a view's name (name the columns with AS in its SELECT) (view `w`) is not supported yet",
            "9:26: CREATE MATERIALIZED VIEW (view `m`) is not supported yet",
            "10:13: view `v` cannot be written: INSERT INTO a table (the view is at 6:13)",
        ]
    );
}

#[test]
fn a_processing_time_takes_no_session_window_and_no_window_join() {
    assert_eq!(
        errors(
            "CREATE VIEW p AS SELECT *, PROCTIME() AS pt FROM bid;
INSERT INTO out1 SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(SESSION(TABLE p, DESCRIPTOR(pt), INTERVAL '1' SECOND))
GROUP BY bidder, window_start, window_end;
INSERT INTO out2 SELECT a.bidder
FROM TABLE(TUMBLE(TABLE p, DESCRIPTOR(pt), INTERVAL '1' SECOND)) a
JOIN TABLE(TUMBLE(TABLE p, DESCRIPTOR(pt), INTERVAL '1' SECOND)) b
ON a.bidder = b.bidder AND a.window_start = b.window_start AND a.window_end = b.window_end;"
        ),
        [
            "7:29: DESCRIPTOR(pt): a SESSION window over a processing time (PROCTIME()) is not supported yet",
            "10:28: DESCRIPTOR(pt): a window join over a processing time (PROCTIME()) is not supported yet",
        ]
    );
}

#[test]
fn an_event_time_window_over_a_view_keeps_the_table_s_event_time() {
    let spec = parse_sql(&format!(
        "{TABLES}
CREATE VIEW b AS SELECT *, PROCTIME() AS pt FROM bid;
INSERT INTO out1 SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(HOP(TABLE b, DESCRIPTOR(dateTime), INTERVAL '1' SECOND, INTERVAL '2' SECOND))
GROUP BY bidder, window_start, window_end;
INSERT INTO out2 SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(HOP(TABLE b, DESCRIPTOR(pt), INTERVAL '1' SECOND, INTERVAL '2' SECOND))
GROUP BY bidder, window_start, window_end;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let event = op(&spec, "insert1_window");
    assert_eq!(param(event, "time").as_deref(), Some("dateTime"));
    assert_eq!(param(event, "time_kind"), None);
    let processing = op(&spec, "insert2_window");
    assert_eq!(param(processing, "kind").as_deref(), Some("sliding"));
    assert_eq!(
        param(processing, "time_kind").as_deref(),
        Some("processing")
    );
}
