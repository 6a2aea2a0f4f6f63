//! Subqueries in FROM (Nexmark's q5, q7 and q8): a window aggregation's subquery keeps its
//! window bounds under their aliases; a GROUP BY over them groups its windows; a join of
//! subqueries pairs rows of one window (or within a time interval), with the conditions that
//! are neither keys nor times filtering the joined rows; an INSERT is positional.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

fn nexmark(q: &str) -> Spec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../benches/nexmark")
        .join(format!("{q}.sql"));
    let sql = std::fs::read_to_string(&path).expect("the query file");
    parse_sql(&sql).unwrap_or_else(|d| panic!("{q}: {d}"))
}

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
        .unwrap_or_else(|| {
            let names: Vec<&str> = spec.operators.iter().map(|o| o.name.as_str()).collect();
            panic!("no operator {name}: {names:?}")
        })
}

fn inputs(o: &OperatorDef) -> Vec<&str> {
    o.inputs.iter().map(|i| i.as_str()).collect()
}

#[test]
fn q5_groups_the_windows_of_a_subquery_and_joins_on_the_window_end() {
    let spec = nexmark("q5");
    let max = op(&spec, "insert1_MaxBids_window");
    assert_eq!(inputs(max), ["insert1_MaxBids_CountBids_select"]);
    assert_eq!(param(max, "kind").as_deref(), Some("tumbling"));
    assert_eq!(param(max, "size").as_deref(), Some("1ms"));
    // The window end, under its alias, is the time; both bounds are keys.
    assert_eq!(param(max, "time").as_deref(), Some("endtime"));
    assert_eq!(param(max, "keys").as_deref(), Some("starttime, endtime"));
    assert_eq!(
        param(max, "aggregates").as_deref(),
        Some("max(num) AS maxn")
    );
    let join = op(&spec, "insert1_join");
    assert_eq!(
        inputs(join),
        ["insert1_AuctionBids_select", "insert1_MaxBids_select"]
    );
    assert_eq!(param(join, "left_time").as_deref(), Some("endtime"));
    assert_eq!(param(join, "right_time").as_deref(), Some("endtime"));
    assert_eq!(param(join, "lower").as_deref(), Some("0ms"));
    assert_eq!(param(join, "upper").as_deref(), Some("0ms"));
    assert_eq!(
        param(join, "on").as_deref(),
        Some("\"AuctionBids\".\"starttime\" = \"MaxBids\".\"starttime\"")
    );
    // `num >= maxn` is neither a key nor a time: it filters the joined rows.
    let filter = op(&spec, "insert1_where");
    assert_eq!(inputs(filter), ["insert1_join"]);
    assert_eq!(
        param(filter, "condition").as_deref(),
        Some("\"num\" >= \"maxn\"")
    );
}

#[test]
fn q7_takes_the_time_bounds_of_an_inner_join_from_its_where() {
    let spec = nexmark("q7");
    let join = op(&spec, "insert1_join");
    assert_eq!(inputs(join), ["bid", "insert1_B1_select"]);
    assert_eq!(param(join, "kind").as_deref(), Some("interval"));
    // B.dateTime BETWEEN B1.dateTime - 10 s AND B1.dateTime: right - left in [0, 10 s].
    assert_eq!(param(join, "lower").as_deref(), Some("0ms"));
    assert_eq!(param(join, "upper").as_deref(), Some("10000ms"));
    assert_eq!(param(join, "right_time").as_deref(), Some("dateTime"));
    assert!(
        !spec.operators.iter().any(|o| o.kind.as_str() == "filter"),
        "the WHERE is all join condition"
    );
}

#[test]
fn q8_groups_without_aggregates_and_inserts_by_position() {
    let spec = nexmark("q8");
    let people = op(&spec, "insert1_P_window");
    assert_eq!(param(people, "keys").as_deref(), Some("id, name"));
    assert_eq!(
        param(people, "aggregates").as_deref(),
        Some("COUNT(*) AS \"__rows\"")
    );
    assert_eq!(
        param(op(&spec, "insert1_P_select"), "columns").as_deref(),
        Some("id, name, window_start AS starttime, window_end AS endtime")
    );
    // The sink's third column is `stime`: the selected `starttime` is renamed into it.
    let insert = op(&spec, "insert1_insert");
    assert_eq!(
        param(insert, "columns").as_deref(),
        Some("\"id\" AS \"id\", \"name\" AS \"name\", \"starttime\" AS \"stime\"")
    );
    assert_eq!(inputs(op(&spec, "nexmark_q8")), ["insert1_insert"]);
}

const BIDS: &str = "CREATE TABLE bid (auction BIGINT, price BIGINT, dateTime TIMESTAMP)
WITH (connector = 'file', path = 'b.csv', event_time = 'dateTime', watermark = '1 second');
CREATE TABLE out WITH (connector = 'file', path = 'o.csv');
";

fn error(sql: &str) -> String {
    match parse_sql(&format!("{BIDS}{sql}")) {
        Ok(_) => panic!("accepted: {sql}"),
        Err(d) => d.to_string(),
    }
}

#[test]
fn a_group_by_over_a_subquery_without_windows_is_an_updating_aggregate_and_one_without_its_window_end_says_what_it_needs(
) {
    // No windows in the subquery: a GROUP BY without a window (an updating aggregate).
    let spec = parse_sql(&format!(
        "{BIDS}INSERT INTO out SELECT max(p) AS m, a FROM (SELECT auction AS a, price AS p FROM bid) q GROUP BY q.a;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let group = op(&spec, "insert1_group");
    assert_eq!(group.kind.as_str(), "aggregate");
    assert_eq!(inputs(group), ["insert1_q_select"]);
    // Windows in the subquery, but not grouped by their end.
    let e = error(
        "INSERT INTO out SELECT max(n) AS m, s FROM (SELECT count(*) AS n, window_start AS s, window_end AS e FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' SECOND)) GROUP BY auction, window_start, window_end) q GROUP BY q.s;",
    );
    assert!(e.contains("window end `e`"), "{e}");
}

#[test]
fn a_subquery_without_a_name_gets_one() {
    let spec = parse_sql(&format!(
        "{BIDS}INSERT INTO out SELECT a FROM (SELECT auction AS a FROM bid) WHERE a > 1;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let inner = op(&spec, "insert1_subquery1_select");
    assert_eq!(inputs(inner), ["bid"]);
    assert_eq!(
        inputs(op(&spec, "insert1_where")),
        ["insert1_subquery1_select"]
    );
}

#[test]
fn a_left_join_refuses_a_condition_it_cannot_use_for_pairing() {
    let e = error(
        "INSERT INTO out SELECT b.auction FROM bid b LEFT JOIN (SELECT MAX(price) AS m, window_end AS t FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' SECOND)) GROUP BY window_start, window_end) w ON b.price = w.m AND b.dateTime = w.t AND b.price > 10;",
    );
    assert!(e.contains("b.price > 10"), "{e}");
    assert!(e.contains("LEFT JOIN"), "{e}");
}

#[test]
fn a_comparison_of_another_pair_of_times_filters_an_inner_join() {
    let spec = parse_sql(&format!(
        "{BIDS}CREATE TABLE auction (id BIGINT, dateTime TIMESTAMP, expires TIMESTAMP)
WITH (connector = 'file', path = 'a.csv', event_time = 'dateTime', watermark = '1 second');
INSERT INTO out SELECT B.price FROM auction A JOIN bid B ON A.id = B.auction
AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '10' SECOND
WHERE B.dateTime <= A.expires;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let join = op(&spec, "insert1_join");
    assert_eq!(param(join, "left_time").as_deref(), Some("dateTime"));
    assert_eq!(param(join, "upper").as_deref(), Some("10000ms"));
    assert_eq!(
        param(op(&spec, "insert1_where"), "condition").as_deref(),
        Some("\"B_dateTime\" <= \"expires\"")
    );
}
