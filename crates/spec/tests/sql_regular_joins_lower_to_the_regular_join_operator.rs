//! A SQL join without a time bound lowers to one `regular_join` operator, of the kind written
//! (INNER, LEFT, RIGHT, FULL): an inner join's conditions on one table alone become a filter
//! of that table before the join, the others a filter after it; an outer join's other
//! conditions in ON are the join's `condition`, its WHERE a filter after it. A time condition
//! bounded one way only makes a regular join too (as in Flink), the comparison filtering the
//! joined rows. Two tables listed in FROM (`FROM a, b WHERE …`) are an inner join whose
//! condition is the WHERE.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const TABLES: &str = "
CREATE TABLE o (ts TIMESTAMP, item BIGINT, qty BIGINT) WITH (connector = 'file', path = 'o.csv');
CREATE TABLE s (ts TIMESTAMP, item BIGINT, level BIGINT) WITH (connector = 'file', path = 's.csv');
CREATE TABLE out WITH (connector = 'discard');
";

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}: {d}"))
}

fn op<'a>(spec: &'a Spec, name: &str) -> &'a OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.name.as_str() == name)
        .unwrap_or_else(|| panic!("no operator {name}: {:?}", names(spec)))
}

fn names(spec: &Spec) -> Vec<String> {
    spec.operators
        .iter()
        .map(|o| format!("{} [{}]", o.name.as_str(), o.kind.as_str()))
        .collect()
}

fn param(op: &OperatorDef, name: &str) -> Option<String> {
    op.param(name).map(|p| match &p.value {
        Value::String(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    })
}

#[test]
fn an_inner_join_filters_each_table_by_its_own_conditions_before_joining() {
    let spec = spec(
        "INSERT INTO out SELECT o.qty, s.level FROM o JOIN s ON o.item = s.item \
         WHERE o.qty > 3 AND (s.level = 1 OR s.level = 2) AND o.qty < s.level;",
    );
    assert_eq!(
        names(&spec),
        [
            "o [reader]",
            "s [reader]",
            "insert1_left_where [filter]",
            "insert1_right_where [filter]",
            "insert1_join [regular_join]",
            "insert1_where [filter]",
            "insert1_select [map]",
            "out [discard]"
        ]
    );
    let join = op(&spec, "insert1_join");
    assert_eq!(
        param(join, "on").as_deref(),
        Some(r#""o"."item" = "s"."item""#)
    );
    assert_eq!(param(join, "how").as_deref(), Some("inner"));
    assert_eq!(param(join, "condition"), None);
    let left = op(&spec, "insert1_left_where");
    assert_eq!(left.inputs[0].as_str(), "o");
    assert_eq!(param(left, "condition").as_deref(), Some(r#"("qty" > 3)"#));
    assert_eq!(
        param(op(&spec, "insert1_right_where"), "condition").as_deref(),
        Some(r#"("level" = 1 OR "level" = 2)"#)
    );
    assert_eq!(
        param(op(&spec, "insert1_where"), "condition").as_deref(),
        Some(r#""qty" < "level""#)
    );
}

#[test]
fn outer_joins_keep_their_on_conditions_in_the_join_and_filter_after_it_by_where() {
    for (kind, how) in [
        ("LEFT", "left"),
        ("LEFT OUTER", "left"),
        ("RIGHT", "right"),
        ("RIGHT OUTER", "right"),
        ("FULL", "full"),
        ("FULL OUTER", "full"),
    ] {
        let spec = spec(&format!(
            "INSERT INTO out SELECT o.qty, s.level FROM o {kind} JOIN s ON o.item = s.item AND o.qty < s.level \
             WHERE s.level IS NULL OR s.level > 0;"
        ));
        let join = op(&spec, "insert1_join");
        assert_eq!(join.kind.as_str(), "regular_join", "{kind}");
        assert_eq!(param(join, "how").as_deref(), Some(how), "{kind}");
        assert_eq!(
            param(join, "on").as_deref(),
            Some(r#""o"."item" = "s"."item""#),
            "{kind}"
        );
        assert_eq!(
            param(join, "condition").as_deref(),
            Some(r#"("qty" < "level")"#),
            "{kind}"
        );
        assert_eq!(
            param(op(&spec, "insert1_where"), "condition").as_deref(),
            Some(r#""level" IS NULL OR "level" > 0"#),
            "{kind}"
        );
    }
}

#[test]
fn a_regular_join_keeps_only_the_columns_read_after_it_and_by_its_condition() {
    let keep = |sql: &str| param(op(&spec(sql), "insert1_join"), "keep");
    assert_eq!(
        keep("INSERT INTO out SELECT o.qty FROM o JOIN s ON o.item = s.item;").as_deref(),
        Some(r#""qty""#)
    );
    // An outer join's condition reads its columns in the join; WHERE reads them after it.
    assert_eq!(
        keep(
            "INSERT INTO out SELECT o.qty FROM o LEFT JOIN s ON o.item = s.item AND o.ts < s.ts WHERE s.level > 1;"
        )
        .as_deref(),
        Some(r#""qty", "level", "ts", "s_ts""#)
    );
    // An inner join's condition on both tables filters after it: read there.
    assert_eq!(
        keep(
            "INSERT INTO out SELECT s.level FROM o JOIN s ON o.item = s.item AND o.qty < s.level;"
        )
        .as_deref(),
        Some(r#""level", "qty""#)
    );
    assert_eq!(
        keep("INSERT INTO out SELECT * FROM o JOIN s ON o.item = s.item;"),
        None
    );
}

#[test]
fn a_time_condition_bounded_one_way_makes_a_regular_join_filtered_by_it() {
    let spec =
        spec("INSERT INTO out SELECT o.qty FROM o JOIN s ON o.item = s.item AND o.ts >= s.ts;");
    assert_eq!(op(&spec, "insert1_join").kind.as_str(), "regular_join");
    assert_eq!(
        param(op(&spec, "insert1_where"), "condition").as_deref(),
        Some(r#""ts" >= "s_ts""#)
    );
}

#[test]
fn a_join_bounded_both_ways_stays_a_time_bounded_join() {
    let spec = spec(
        "INSERT INTO out SELECT o.qty FROM o JOIN s ON o.item = s.item AND o.ts BETWEEN s.ts AND s.ts + INTERVAL '1' SECOND;",
    );
    assert_eq!(op(&spec, "insert1_join").kind.as_str(), "join");
}

#[test]
fn tables_listed_in_from_are_an_inner_join_on_the_where() {
    let spec = spec(
        "INSERT INTO out SELECT o.qty, s.level FROM o, s WHERE o.item = s.item AND o.qty > 2;",
    );
    let join = op(&spec, "insert1_join");
    assert_eq!(join.kind.as_str(), "regular_join");
    assert_eq!(param(join, "how").as_deref(), Some("inner"));
    assert_eq!(
        param(join, "on").as_deref(),
        Some(r#""o"."item" = "s"."item""#)
    );
    assert_eq!(
        param(op(&spec, "insert1_left_where"), "condition").as_deref(),
        Some(r#"("qty" > 2)"#)
    );
    let e = parse_sql(&format!("{TABLES}INSERT INTO out SELECT o.qty FROM o, s;"))
        .expect_err("no condition");
    assert!(e.to_string().contains("from two without WHERE"), "{e}");
}

#[test]
fn a_star_keeps_the_tables_names_so_nothing_is_filtered_before_the_join() {
    let spec = spec("INSERT INTO out SELECT * FROM o JOIN s ON o.item = s.item WHERE o.qty > 2;");
    let join = op(&spec, "insert1_join");
    assert_eq!(
        param(join, "on").as_deref(),
        Some(r#""o"."item" = "s"."item""#)
    );
    assert_eq!(
        param(op(&spec, "insert1_where"), "condition").as_deref(),
        Some(r#""qty" > 2"#)
    );
}

/// Both tables have `ts`: the join's output names the right one `s_ts`. Selected without an
/// alias, `s.ts` is `ts` again, unless an earlier item took that name (Nexmark q20 selects
/// `B.dateTime, …, A.dateTime` into a table that names them apart): then it keeps its join
/// output name, and an INSERT's positional names take each column by the name it has.
#[test]
fn a_column_of_the_right_table_selected_without_an_alias_is_that_column() {
    let spec = spec("INSERT INTO out SELECT s.ts, o.qty FROM o JOIN s ON o.item = s.item;");
    assert_eq!(
        param(op(&spec, "insert1_select"), "columns").as_deref(),
        Some("\"s_ts\" AS \"ts\", \"qty\"")
    );
    let twice = "
CREATE TABLE named (o_ts TIMESTAMP, s_ts TIMESTAMP) WITH (connector = 'discard');
INSERT INTO named SELECT o.ts, s.ts FROM o JOIN s ON o.item = s.item;";
    let spec = parse_sql(&format!("{TABLES}{twice}")).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(
        param(op(&spec, "insert1_select"), "columns").as_deref(),
        Some("\"ts\", \"s_ts\"")
    );
    assert_eq!(
        param(op(&spec, "insert1_insert"), "columns").as_deref(),
        Some("\"ts\" AS \"o_ts\", \"s_ts\" AS \"s_ts\"")
    );
}
