//! SQL's top-N (`SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) AS rn
//! FROM t) WHERE rn <= N`) lowers to the subquery without its number, a `top_n` and the
//! select list over it: `rn <= N`, `rn < N`, `rn = 1` (either way round) set its limit, the
//! other conditions of that WHERE filter its output, and the number is a column only if the
//! outer query reads it. `rn = 1` ordered by the table's event time is a deduplication (the
//! `time` param). What the OVER partitions or orders by that the subquery does not select (an
//! aggregate of its GROUP BY, an expression, a column) is computed there under a hidden name
//! and dropped after the top-N. Everything else with a ranking function is refused at its
//! position.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const TABLES: &str = "CREATE TABLE b (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT, seen TIMESTAMP) WITH (connector = 'file', path = 'b.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'discard');
";

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}: {d}"))
}

fn error(sql: &str) -> String {
    match parse_sql(&format!("{TABLES}{sql}")) {
        Ok(_) => panic!("{sql} is refused"),
        Err(d) => d.to_string(),
    }
}

fn top(spec: &Spec) -> &OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.kind.as_str() == "top_n")
        .expect("a top_n")
}

fn param(op: &OperatorDef, name: &str) -> Option<String> {
    op.param(name).map(|p| match &p.value {
        Value::String(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    })
}

fn kinds(spec: &Spec) -> Vec<String> {
    spec.operators
        .iter()
        .map(|o| format!("{} [{}]", o.name.as_str(), o.kind.as_str()))
        .collect()
}

#[test]
fn a_top_n_whose_number_is_read_ranks_its_rows_and_filters_by_the_other_conditions() {
    let spec = spec(
        "INSERT INTO out SELECT q.auction, q.price, q.rn FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC NULLS FIRST, ts) AS rn
           FROM b WHERE bidder > 0) AS q
         WHERE q.rn <= 3 AND 5 > rn AND q.price > 4;",
    );
    assert_eq!(
        kinds(&spec),
        [
            "b [reader]",
            "insert1_q_where [filter]",
            "insert1_q_select [map]",
            "insert1_q_top [top_n]",
            "insert1_where [filter]",
            "insert1_select [map]",
            "out [discard]"
        ]
    );
    let t = top(&spec);
    assert_eq!(param(t, "keys").as_deref(), Some("\"auction\""));
    assert_eq!(
        param(t, "order").as_deref(),
        Some("\"price\" DESC NULLS FIRST, \"ts\"")
    );
    assert_eq!(param(t, "limit").as_deref(), Some("3"));
    assert_eq!(param(t, "rank_column").as_deref(), Some("\"rn\""));
    assert_eq!(
        param(t, "time"),
        None,
        "two order columns: no deduplication"
    );
    let filter = spec
        .operators
        .iter()
        .find(|o| o.name.as_str() == "insert1_where")
        .expect("a filter");
    assert_eq!(param(filter, "condition").as_deref(), Some("(price > 4)"));
}

#[test]
fn a_number_the_outer_query_does_not_read_is_no_column_and_rn_lt_n_keeps_n_minus_one() {
    let spec = spec(
        "INSERT INTO out SELECT auction, bidder FROM (
           SELECT auction, bidder, price, ROW_NUMBER() OVER (ORDER BY price) AS rn FROM b)
         WHERE rn < 3;",
    );
    let t = top(&spec);
    assert_eq!(param(t, "rank_column"), None);
    assert_eq!(param(t, "keys"), None, "one partition");
    assert_eq!(param(t, "limit").as_deref(), Some("2"));
}

#[test]
fn rn_1_ordered_by_the_event_time_is_a_deduplication_and_by_another_time_is_not() {
    let first = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT bidder, ts AS t, price, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY b.ts) AS n FROM b)
         WHERE 1 = n;",
    );
    assert_eq!(param(top(&first), "time").as_deref(), Some("\"t\""));
    assert_eq!(param(top(&first), "order").as_deref(), Some("\"t\""));
    let other = spec(
        "INSERT INTO out SELECT bidder FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY seen DESC) AS n FROM b)
         WHERE n = 1;",
    );
    assert_eq!(param(top(&other), "time"), None);
}

#[test]
fn an_aggregate_the_over_orders_by_is_computed_by_the_group_by_and_dropped_after_the_top_n() {
    let ranked = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT auction, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, MAX(price)) AS rn
           FROM b GROUP BY auction)
         WHERE rn <= 3;",
    );
    assert_eq!(
        kinds(&ranked),
        [
            "b [reader]",
            "insert1_subquery1_group [aggregate]",
            "insert1_subquery1_select [map]",
            "insert1_subquery1_top [top_n]",
            "insert1_subquery1_ranked [map]",
            "insert1_select [map]",
            "out [discard]"
        ]
    );
    let group = &ranked.operators[1];
    assert_eq!(
        param(group, "aggregates").as_deref(),
        Some("COUNT(*) AS __over_1, MAX(price) AS __over_2")
    );
    let t = top(&ranked);
    assert_eq!(
        param(t, "order").as_deref(),
        Some("\"__over_1\" DESC, \"__over_2\"")
    );
    assert_eq!(param(t, "rank_column").as_deref(), Some("\"rn\""));
    assert_eq!(
        param(&ranked.operators[4], "columns").as_deref(),
        Some("\"auction\", \"rn\""),
        "the hidden columns go after the top-N"
    );
    // An aggregate the subquery selects too is its column.
    let selected = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT auction, COUNT(*) AS n, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC) AS rn
           FROM b GROUP BY auction)
         WHERE rn <= 3;",
    );
    assert_eq!(
        param(top(&selected), "order").as_deref(),
        Some("\"n\" DESC")
    );
    assert!(!kinds(&selected).iter().any(|k| k.contains("_ranked")));
}

#[test]
fn an_expression_or_a_column_the_subquery_does_not_select_is_computed_there() {
    let computed = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT auction, ROW_NUMBER() OVER (PARTITION BY bidder % 2 ORDER BY price + 1) AS rn
           FROM b)
         WHERE rn <= 3;",
    );
    assert_eq!(
        param(&computed.operators[1], "columns").as_deref(),
        Some("auction, bidder % 2 AS __over_1, price + 1 AS __over_2")
    );
    assert_eq!(
        param(top(&computed), "keys").as_deref(),
        Some("\"__over_1\"")
    );
    // The event time, not selected: still a deduplication.
    let first = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT bidder, price, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts) AS n FROM b)
         WHERE n = 1;",
    );
    assert_eq!(param(top(&first), "time").as_deref(), Some("\"__over_1\""));
}

#[test]
fn what_is_not_a_top_n_is_refused_at_its_position() {
    let sub = |over: &str, rest: &str| {
        format!("INSERT INTO out SELECT * FROM (SELECT *, {over} FROM b) {rest};")
    };
    let row_number = "ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS rn";
    for (sql, at, says) in [
        (sub(row_number, ""), "3:42", "without `WHERE rn <= N`"),
        (
            sub("RANK() OVER (ORDER BY price) AS rn", "WHERE rn <= 2"),
            "3:42",
            "`RANK() OVER (…)`",
        ),
        (
            sub(row_number, "WHERE rn <= price"),
            "3:124",
            "comparing the row number with `price`",
        ),
        (
            sub(row_number, "WHERE rn > 2"),
            "3:118",
            "the condition `rn > 2` on the row number",
        ),
        (sub(row_number, "WHERE rn = 2"), "3:118", "`rn = 2`"),
        (sub(row_number, "WHERE rn < 1"), "3:118", "keeps no row"),
        (
            sub(
                "ROW_NUMBER() OVER (PARTITION BY auction) AS rn",
                "WHERE rn <= 2",
            ),
            "3:42",
            "needs an ORDER BY",
        ),
        (
            "INSERT INTO out SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (ORDER BY SUM(price) / COUNT(*)) AS rn FROM b GROUP BY auction) WHERE rn <= 2;".into(),
            "3:76",
            "`SUM(price) / COUNT(*)`, an expression over aggregates",
        ),
        (
            "INSERT INTO out SELECT ROW_NUMBER() OVER (ORDER BY price) AS rn FROM b;".into(),
            "3:24",
            "outside top-N",
        ),
    ] {
        let e = error(&sql);
        assert!(
            e.contains(&format!("{at}: ")) && e.contains(says),
            "{sql}\n{e}"
        );
    }
}

#[test]
fn a_top_n_partitioned_by_a_window_s_bounds_is_a_window_top_n_naming_its_end() {
    // Over a window aggregate's results (issue 17's window top-N).
    let s = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT window_start, window_end, auction, c,
                  ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC) AS rn
           FROM (SELECT window_start, window_end, auction, COUNT(*) AS c
                 FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                 GROUP BY window_start, window_end, auction))
         WHERE rn <= 2;",
    );
    let t = top(&s);
    assert_eq!(
        param(t, "keys").as_deref(),
        Some("\"window_start\", \"window_end\"")
    );
    assert_eq!(param(t, "window_end").as_deref(), Some("\"window_end\""));
    // Its bounds under other names, with another key: a window deduplication.
    let s = spec(
        "INSERT INTO out SELECT s, e, auction, c FROM (
           SELECT window_start AS s, window_end AS e, auction, c,
                  ROW_NUMBER() OVER (PARTITION BY window_start, window_end, auction ORDER BY c DESC) AS rn
           FROM (SELECT window_start, window_end, auction, bidder, COUNT(*) AS c
                 FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                 GROUP BY window_start, window_end, auction, bidder))
         WHERE rn = 1;",
    );
    assert_eq!(param(top(&s), "window_end").as_deref(), Some("\"e\""));
    // One bound alone is no window partition.
    let s = spec(
        "INSERT INTO out SELECT * FROM (
           SELECT window_end, auction, c,
                  ROW_NUMBER() OVER (PARTITION BY window_end ORDER BY c DESC) AS rn
           FROM (SELECT window_start, window_end, auction, COUNT(*) AS c
                 FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                 GROUP BY window_start, window_end, auction))
         WHERE rn <= 3;",
    );
    assert_eq!(param(top(&s), "window_end"), None);
}

/// Two tables with the same columns, for a top-N over their join.
const JOINED: &str = "CREATE TABLE l (ts TIMESTAMP, k BIGINT, s VARCHAR, v BIGINT) WITH (connector = 'file', path = 'l.jsonl', format = 'jsonl');
CREATE TABLE r (ts TIMESTAMP, k BIGINT, s VARCHAR, v BIGINT) WITH (connector = 'file', path = 'r.jsonl', format = 'jsonl');
CREATE TABLE out WITH (connector = 'discard');
";

fn joined(sql: &str) -> Result<Spec, String> {
    parse_sql(&format!("{JOINED}{sql}")).map_err(|d| d.to_string())
}

/// The text of the select item (of any map of `spec`) that computes the hidden column
/// `column`.
fn computed(spec: &Spec, column: &str) -> String {
    let quoted = format!("AS \"{column}\"");
    let bare = format!("AS {column}");
    spec.operators
        .iter()
        .filter_map(|o| param(o, "columns"))
        .flat_map(|c| c.split(", ").map(str::to_string).collect::<Vec<_>>())
        .find(|item| item.ends_with(&quoted) || item.ends_with(&bare))
        .unwrap_or_else(|| panic!("no map computes {column}: {:?}", kinds(spec)))
}

#[test]
fn the_over_of_a_top_n_reads_the_columns_of_its_from_clause_by_their_qualifiers_not_the_select_lists_names(
) {
    // Issue 17's probe: over a join, `r.v` and `l.s` were read as the selected `l.v` and
    // `r.s` (by their bare names); `ORDER BY v` as the alias `v` of `s`.
    let s = joined(
        "INSERT INTO out SELECT lk, lv, rs FROM (
           SELECT l.k AS lk, l.v AS lv, r.s AS rs,
                  ROW_NUMBER() OVER (PARTITION BY l.k ORDER BY r.v DESC, l.s) AS rn
           FROM l JOIN r ON l.k = r.k)
         WHERE rn = 1;",
    )
    .expect("plans");
    let t = top(&s);
    assert_eq!(param(t, "keys").as_deref(), Some("\"lk\""));
    assert_eq!(
        param(t, "order").as_deref(),
        Some("\"__over_1\" DESC, \"__over_2\"")
    );
    // The join names the right table's `v` `r_v` (the left's is `v`), and the left's `s`
    // `s` (the right's is `r_s`).
    assert!(
        computed(&s, "__over_1").starts_with("\"r_v\""),
        "{}",
        computed(&s, "__over_1")
    );
    assert!(
        computed(&s, "__over_2").starts_with("\"s\""),
        "{}",
        computed(&s, "__over_2")
    );
    // `PARTITION BY r.s` beside a selected `l.s`.
    let s = joined(
        "INSERT INTO out SELECT ls, lv FROM (
           SELECT l.s AS ls, l.v AS lv, ROW_NUMBER() OVER (PARTITION BY r.s ORDER BY l.v) AS rn
           FROM l JOIN r ON l.k = r.k)
         WHERE rn = 1;",
    )
    .expect("plans");
    assert_eq!(param(top(&s), "keys").as_deref(), Some("\"__over_1\""));
    assert_eq!(param(top(&s), "order").as_deref(), Some("\"lv\""));
    assert!(computed(&s, "__over_1").starts_with("\"r_s\""));
    // One table: `ORDER BY v` is the table's `v`, not the alias `v` of `s`…
    let s = joined(
        "INSERT INTO out SELECT k, v FROM (
           SELECT k, s AS v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM l)
         WHERE rn = 1;",
    )
    .expect("plans");
    assert_eq!(
        param(top(&s), "order").as_deref(),
        Some("\"__over_1\" DESC")
    );
    assert!(
        computed(&s, "__over_1").starts_with('v'),
        "{}",
        computed(&s, "__over_1")
    );
    // …and with the aliases swapped, it is the item that passes `v` on as `s`.
    let s = joined(
        "INSERT INTO out SELECT a, b FROM (
           SELECT s AS v, v AS s, s AS a, v AS b,
                  ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM l)
         WHERE rn = 1;",
    )
    .expect("plans");
    assert_eq!(param(top(&s), "order").as_deref(), Some("\"s\" DESC"));
}

#[test]
fn a_column_of_a_top_ns_over_that_both_joined_tables_have_is_refused_at_its_position() {
    let e = joined(
        "INSERT INTO out SELECT lk FROM (
  SELECT l.k AS lk, ROW_NUMBER() OVER (PARTITION BY l.k ORDER BY v DESC) AS rn
  FROM l JOIN r ON l.k = r.k)
WHERE rn = 1;",
    )
    .expect_err("ambiguous");
    assert!(
        e.contains("5:66: ") && e.contains("column `v` is in both joined tables"),
        "{e}"
    );
}
