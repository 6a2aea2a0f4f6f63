//! A SQL join lowers to one join operator whose params say what the condition says, whichever
//! way round the condition is written; the select list and WHERE refer to the join's output.

use anduin_spec::{parse_sql, Value};

const TABLES: &str = "
CREATE TABLE o (ts TIMESTAMP, item BIGINT, qty BIGINT) WITH (connector = 'file', path = 'o.csv');
CREATE TABLE s (ts TIMESTAMP, item BIGINT, level BIGINT) WITH (connector = 'file', path = 's.csv');
CREATE TABLE out WITH (connector = 'discard');
";

/// The params of the operator of `kind`, as (name, value) text.
fn params(sql: &str, kind: &str) -> Vec<(String, String)> {
    let spec = parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}: {d}"));
    let op = spec
        .operators
        .iter()
        .find(|o| o.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("{sql}: no {kind}"));
    op.params
        .iter()
        .map(|p| {
            let v = match &p.value {
                Value::String(t) => t.as_str().to_string(),
                other => format!("{other:?}"),
            };
            (p.name.as_str().to_string(), v)
        })
        .collect()
}

fn param(ps: &[(String, String)], name: &str) -> String {
    ps.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no param {name} in {ps:?}"))
}

/// (lower, upper) of `right time - left time` for an ON time condition.
fn bounds(time: &str) -> (String, String) {
    let ps = params(
        &format!("INSERT INTO out SELECT o.qty FROM o JOIN s ON o.item = s.item AND {time};"),
        "join",
    );
    assert_eq!(param(&ps, "kind"), "interval");
    (param(&ps, "lower"), param(&ps, "upper"))
}

#[test]
fn every_way_of_writing_the_interval_gives_the_same_bounds() {
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    for (time, expected) in [
        (
            "o.ts BETWEEN s.ts - INTERVAL '5' SECOND AND s.ts + INTERVAL '2' SECOND",
            pair("-2000ms", "5000ms"),
        ),
        (
            "s.ts BETWEEN o.ts - INTERVAL '5' SECOND AND o.ts + INTERVAL '2' SECOND",
            pair("-5000ms", "2000ms"),
        ),
        (
            "o.ts >= s.ts - INTERVAL '5' SECOND AND o.ts <= s.ts + INTERVAL '2' SECOND",
            pair("-2000ms", "5000ms"),
        ),
        (
            "s.ts - INTERVAL '5' SECOND <= o.ts AND s.ts + INTERVAL '2' SECOND >= o.ts",
            pair("-2000ms", "5000ms"),
        ),
        ("o.ts > s.ts - INTERVAL '5' SECOND AND o.ts < s.ts", pair("1ms", "4999ms")),
        ("o.ts = s.ts", pair("0ms", "0ms")),
        ("s.ts = o.ts + INTERVAL '1' MINUTE", pair("60000ms", "60000ms")),
        (
            "s.ts BETWEEN o.ts AND o.ts + INTERVAL '10' SECOND AND s.ts < o.ts + INTERVAL '3' SECOND",
            pair("0ms", "2999ms"),
        ),
    ] {
        assert_eq!(bounds(time), expected, "{time}");
    }
}

#[test]
fn keys_times_and_the_kind_of_join_come_from_the_statement() {
    let ps = params(
        "INSERT INTO out SELECT * FROM o AS a LEFT OUTER JOIN s AS b
           ON b.item = a.item AND a.qty = b.level AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' SECOND;",
        "join",
    );
    assert_eq!(
        param(&ps, "on"),
        r#""a"."item" = "b"."item" AND "a"."qty" = "b"."level""#
    );
    assert_eq!(param(&ps, "how"), "left");
    assert_eq!(param(&ps, "left_time"), "ts");
    assert_eq!(param(&ps, "right_time"), "ts");
}

#[test]
fn columns_are_renamed_to_the_join_outputs() {
    let sql = "INSERT INTO out SELECT o.ts, s.ts AS stock_time, qty + level AS total, s.*
      FROM o JOIN s ON o.item = s.item AND o.ts = s.ts WHERE s.item > 3 AND qty < 10;";
    let map = params(sql, "map");
    assert_eq!(
        param(&map, "columns"),
        r#""ts", "s_ts" AS stock_time, "qty" + "level" AS total, "s_ts", "s_item" AS "item", "level""#
    );
    let filter = params(sql, "filter");
    assert_eq!(
        param(&filter, "condition"),
        r#"("s_item" > 3) AND ("qty" < 10)"#
    );
}

#[test]
fn a_window_join_takes_its_size_and_times_from_the_tumble_windows() {
    let ps = params(
        "INSERT INTO out SELECT l.window_start, l.item, l.qty, r.level
         FROM (SELECT * FROM TABLE(TUMBLE(TABLE o, DESCRIPTOR(ts), INTERVAL '2' SECOND))) l
         JOIN (SELECT * FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '2' SECOND))) r
         ON l.item = r.item AND l.window_start = r.window_start AND l.window_end = r.window_end;",
        "join",
    );
    assert_eq!(param(&ps, "kind"), "window");
    assert_eq!(param(&ps, "size"), "2000ms");
    assert_eq!(param(&ps, "how"), "inner");
}

#[test]
fn the_join_keeps_only_the_columns_the_rest_of_the_query_reads() {
    let keep = |sql: &str| {
        params(sql, "join")
            .into_iter()
            .find(|(n, _)| n == "keep")
            .map(|(_, v)| v)
    };
    let between = "o.ts BETWEEN s.ts - INTERVAL '5' SECOND AND s.ts";
    // The select list and the filter after the join; keys and times are the join's own.
    assert_eq!(
        keep(&format!(
            "INSERT INTO out SELECT o.qty, s.level * 2 AS l FROM o JOIN s ON o.item = s.item AND {between} WHERE o.qty > s.level + 1;"
        ))
        .as_deref(),
        Some("\"qty\", \"level\"")
    );
    // A column of the right side named as one of the left keeps its output name.
    assert_eq!(
        keep(&format!(
            "INSERT INTO out SELECT s.ts, s.item FROM o JOIN s ON o.item = s.item AND {between};"
        ))
        .as_deref(),
        Some("\"s_ts\", \"s_item\"")
    );
    // A wildcard reads every column.
    assert_eq!(
        keep(&format!(
            "INSERT INTO out SELECT * FROM o JOIN s ON o.item = s.item AND {between};"
        )),
        None
    );
    // A GROUP BY over the join reads its keys and its aggregates' arguments.
    assert_eq!(
        keep(&format!(
            "INSERT INTO out SELECT o.item, SUM(o.qty) AS q FROM o JOIN s ON o.item = s.item AND {between} GROUP BY o.item;"
        ))
        .as_deref(),
        Some("\"item\", \"qty\"")
    );
}

/// A table joined with itself (issue 17) is read once: the right side reads its stream
/// through a map `insert1_{alias}` that keeps every column, and the join's condition names
/// that map; a lookup join of a table with itself is refused.
#[test]
fn a_self_join_reads_its_table_once_through_a_copy_for_the_right_side() {
    let t = "CREATE TABLE bid (ts TIMESTAMP, auction BIGINT, price BIGINT) WITH (connector = 'file', path = 'b.csv', event_time = 'ts');
CREATE TABLE o WITH (connector = 'file', path = 'o.csv');
";
    let spec = anduin_spec::parse_sql(&format!(
        "{t}INSERT INTO o SELECT a.auction, a.price, b.price AS later FROM bid a JOIN bid b ON a.auction = b.auction AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let kinds: Vec<(&str, &str)> = spec
        .operators
        .iter()
        .map(|o| (o.name.as_str(), o.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("bid", "reader"),
            ("insert1_b", "map"),
            ("insert1_join", "join"),
            ("insert1_select", "map"),
            ("o", "writer")
        ]
    );
    let join = &spec.operators[2];
    let inputs: Vec<&str> = join.inputs.iter().map(|i| i.as_str()).collect();
    assert_eq!(inputs, ["bid", "insert1_b"]);
    assert_eq!(spec.operators[1].inputs[0].as_str(), "bid");
    // The join knows its inputs by the query's aliases: its `on`, its output's names and its
    // messages say `a` and `b`, not the names of the streams (`insert1_b`).
    let on = join.param("on").expect("on").value.as_text().to_string();
    assert_eq!(on, "\"a\".\"auction\" = \"b\".\"auction\"");
    let names = join
        .param("names")
        .expect("names")
        .value
        .as_text()
        .to_string();
    assert_eq!(names, "a, b");
    let d = anduin_spec::parse_sql(&format!(
        "CREATE TABLE r (ts TIMESTAMP, id BIGINT, v BIGINT) WITH (connector = 'file', path = 'r.csv', event_time = 'ts');
{t}INSERT INTO o SELECT a.id, b.v FROM r a JOIN r FOR SYSTEM_TIME AS OF a.ts AS b ON a.id = b.id;"
    ))
    .expect_err("a lookup self-join");
    assert!(
        d.0[0]
            .message
            .contains("a lookup join of a table with itself"),
        "{d}"
    );
}

/// `b.*` gives the right table's columns under their own names (not the join's `b_ts`, nor,
/// in a self-join, the planner's `insert1_b_ts`), unless an earlier item took a name; `*`
/// names a right column whose name the left took after the right alias.
#[test]
fn a_qualified_star_gives_a_tables_columns_their_own_names() {
    let map = |sql: &str| param(&params(sql, "map"), "columns");
    // The self-join's copy of `o` is a map too: the select list is the last one.
    let last_map = |sql: &str| {
        let spec = parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}: {d}"));
        let op = spec
            .operators
            .iter()
            .rfind(|o| o.kind.as_str() == "map")
            .expect("a map");
        match &op.param("columns").expect("columns").value {
            Value::String(t) => t.as_str().to_string(),
            other => format!("{other:?}"),
        }
    };
    assert_eq!(
        map("INSERT INTO out SELECT b.* FROM o a JOIN s b ON a.item = b.item;"),
        r#""b_ts" AS "ts", "b_item" AS "item", "level""#
    );
    assert_eq!(
        last_map("INSERT INTO out SELECT b.* FROM o a JOIN o b ON a.item = b.item;"),
        r#""b_ts" AS "ts", "b_item" AS "item", "b_qty" AS "qty""#
    );
    assert_eq!(
        last_map("INSERT INTO out SELECT b.*, a.* FROM o a JOIN o b ON a.item = b.item;"),
        r#""b_ts" AS "ts", "b_item" AS "item", "b_qty" AS "qty", "ts" AS "a_ts", "item" AS "a_item", "qty" AS "a_qty""#
    );
    assert_eq!(
        last_map("INSERT INTO out SELECT * FROM o a JOIN o b ON a.item = b.item;"),
        "*"
    );
    let spec = parse_sql(&format!(
        "{TABLES}INSERT INTO out SELECT * FROM o a JOIN o b ON a.item = b.item;"
    ))
    .expect("a self-join");
    let join = spec
        .operators
        .iter()
        .find(|o| o.kind.as_str() == "regular_join")
        .expect("a join");
    assert_eq!(
        join.param("names").map(|p| p.value.as_text().to_string()),
        Some("a, b".to_string())
    );
}
