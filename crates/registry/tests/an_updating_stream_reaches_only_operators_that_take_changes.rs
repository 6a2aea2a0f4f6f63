//! The planner knows which streams are updating and which operator made each so: a `filter`
//! and a `map` after an `aggregate` pass its changes on (the map keeps the change kind as its
//! last column, a declared output type names only the row's columns), a writer takes them
//! only in `changelog` or `upsert` mode, and a window, join with a time bound or union is
//! refused with the operator that makes its input updating and where it is. A regular join
//! and an OVER window take changes (their output updating because of that operator); an outer
//! join makes its append-only inputs' join updating.

use anduin_graph::check;
use anduin_registry::BuiltinCatalog;
use anduin_types::is_updating;

const HEAD: &str = r#"
type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }
type name = "Counts" { column name = "k", type = "int" column name = "n", type = "int" column name = "ts", type = "timestamp" }
operator name = "src", type = "reader" { param path = "in.csv" output name = "rows", type = "T" }
operator name = "per_key", type = "aggregate" {
  input name = "rows" param keys = "k" param aggregates = "COUNT(*) AS n, MAX(ts) AS ts"
  output name = "counts", type = "Counts" }
operator name = "big", type = "filter" { input name = "counts" param condition = "n > 1" output name = "big" }
operator name = "shown", type = "map" { input name = "big" param columns = "k, n * 10 AS tens" output name = "shown" }
"#;

fn errors(tail: &str) -> String {
    let spec = anduin_spec::parse_flow(&format!("{HEAD}{tail}")).expect("parses");
    match check(&spec, &BuiltinCatalog) {
        Ok(_) => String::new(),
        Err(d) => d.to_string(),
    }
}

#[test]
fn changes_flow_through_filters_and_maps_to_a_changelog_writer() {
    let tail = r#"operator name = "out", type = "writer" { input name = "shown" param path = "o.csv" param mode = "changelog" }"#;
    let spec = anduin_spec::parse_flow(&format!("{HEAD}{tail}")).expect("parses");
    let (graph, _) = check(&spec, &BuiltinCatalog).unwrap_or_else(|d| panic!("{d}"));
    let maker = graph
        .nodes
        .iter()
        .position(|n| n.name() == "per_key")
        .expect("the aggregate");
    for s in &graph.streams {
        let updating = s.name != "rows";
        assert_eq!(is_updating(&s.schema), updating, "{}", s.name);
        assert_eq!(
            s.updating_from.map(|n| n.0),
            updating.then_some(maker),
            "{}",
            s.name
        );
    }
    let shown = graph
        .streams
        .iter()
        .find(|s| s.name == "shown")
        .expect("the map's output");
    let names: Vec<&str> = shown
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["k", "tens", "__op"]);
}

#[test]
fn an_append_only_writer_window_join_or_union_is_refused_naming_the_aggregate() {
    let writer = errors(
        r#"operator name = "out", type = "writer" { input name = "shown" param path = "o.csv" }"#,
    );
    assert!(
        writer.contains(r#"operator "out" (writer) cannot take the updating stream "shown""#)
            && writer.contains("mode = 'changelog'")
            && writer.contains(r#"because of operator "per_key" (aggregate) at 5:1"#),
        "{writer}"
    );
    let window = errors(
        r#"operator name = "w", type = "window" { input name = "big" param kind = "tumbling" param size = "1s" param time = "ts" param aggregates = "COUNT(*) AS c" output name = "w" }
operator name = "out", type = "discard" { input name = "w" }"#,
    );
    assert!(
        window.contains(r#"operator "w" (window) cannot take"#),
        "{window}"
    );
    let union = errors(
        r#"operator name = "u", type = "union" { input name = "big" input name = "big" output name = "u" }
operator name = "out", type = "writer" { input name = "u" param path = "o.csv" param mode = "changelog" }"#,
    );
    assert!(
        union.contains("a union of updating streams is not supported yet"),
        "{union}"
    );
    let join = errors(
        r#"operator name = "j", type = "join" { input name = "rows" input name = "big" param kind = "interval" param on = "rows.k = big.k" param left_time = "ts" param right_time = "ts" param lower = "-1s" param upper = "1s" output name = "j" }
operator name = "out", type = "discard" { input name = "j" }"#,
    );
    assert!(
        join.contains("a join with a time bound of an updating stream is not supported yet"),
        "{join}"
    );
}

#[test]
fn an_over_window_takes_changes_and_its_results_are_updating_because_of_the_aggregate() {
    let over = errors(
        r#"operator name = "o", type = "over" { input name = "big" param keys = "k" param time = "ts" param frame = "rows 3" param aggregates = "SUM(n) AS s" output name = "o" }
operator name = "out", type = "writer" { input name = "o" param path = "o.csv" }"#,
    );
    assert!(
        over.contains(r#"operator "out" (writer) cannot take the updating stream "o""#)
            && over.contains(r#"because of operator "per_key" (aggregate) at 5:1"#),
        "{over}"
    );
}

#[test]
fn a_regular_join_takes_changes_and_an_outer_one_makes_them() {
    // Over the aggregate's changes: updating, made so by the aggregate.
    let tail = r#"operator name = "j", type = "regular_join" { input name = "rows" input name = "big" param on = "rows.k = big.k" output name = "j" }
operator name = "out", type = "writer" { input name = "j" param path = "o.csv" }"#;
    let e = errors(tail);
    assert!(
        e.contains(r#"cannot take the updating stream "j""#)
            && e.contains(r#"because of operator "per_key" (aggregate)"#),
        "{e}"
    );
    // An outer join of append-only streams: updating, made so by the join.
    let tail = r#"operator name = "src2", type = "reader" { param path = "in2.csv" output name = "more", type = "T" }
operator name = "j", type = "regular_join" { input name = "rows" input name = "more" param on = "rows.k = more.k" param how = "left" output name = "j" }
operator name = "out", type = "writer" { input name = "j" param path = "o.csv" }"#;
    let e = errors(tail);
    assert!(
        e.contains(r#"cannot take the updating stream "j""#)
            && e.contains(r#"because of operator "j" (regular_join)"#),
        "{e}"
    );
    // An inner join of append-only streams stays append-only.
    let tail = r#"operator name = "src2", type = "reader" { param path = "in2.csv" output name = "more", type = "T" }
operator name = "j", type = "regular_join" { input name = "rows" input name = "more" param on = "rows.k = more.k" output name = "j" }
operator name = "out", type = "writer" { input name = "j" param path = "o.csv" }
operator name = "out2", type = "writer" { input name = "shown" param path = "o2.csv" param mode = "changelog" }"#;
    assert_eq!(errors(tail), "");
}

#[test]
fn an_upsert_writer_needs_a_primary_key_of_the_rows_columns() {
    let e = errors(
        r#"operator name = "out", type = "writer" { input name = "shown" param path = "o.csv" param mode = "upsert" param primary_key = "k, nope" }"#,
    );
    assert!(
        e.contains("unknown column `nope` in the primary key: the input has k, tens"),
        "{e}"
    );
    let ok = errors(
        r#"operator name = "out", type = "writer" { input name = "shown" param path = "o.csv" param mode = "upsert" param primary_key = "k" }"#,
    );
    assert_eq!(ok, "");
}
