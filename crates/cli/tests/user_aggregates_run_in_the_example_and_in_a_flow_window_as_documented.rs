//! Issue 21, aggregates, as the documentation shows them: `examples/udaf.sql` (a JavaScript
//! weighted average and the WebAssembly `int_avg` of `examples/udfs/int_avg.wat`) gives its
//! documented output, and a `.flow` window calls the module's aggregate by name once
//! `anduin run --udf` loads it (declared in its `anduin:aggregates` section).

use crate::common;

use common::{anduin_ok, repo};

#[test]
fn the_example_gives_its_documented_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("udaf.csv");
    anduin_ok(
        &repo(),
        &[
            "run",
            "examples/udaf.sql",
            "--no-api",
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            &format!("OUTPUT={}", out.display()),
        ],
    );
    assert_eq!(
        std::fs::read_to_string(out).expect("output"),
        "window_start,customer,wavg,mean\n1699999800000,alice,38.75,38.75\n1699999800000,bob,21.333333333333332,21.333333333333332\n1699999800000,carol,18.0,18.0\n1699999800000,dave,7.0,7.0\n1699999800000,erin,3.0,3.0\n"
    );
}

#[test]
fn a_flow_window_calls_an_aggregate_its_module_declares() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.flow"),
        format!(
            r#"
type name = "Order" {{
  column name = "ts", type = "timestamp"
  column name = "customer", type = "string"
  column name = "amount", type = "int"
}}
operator name = "orders", type = "reader" {{
  param path = "{}"
  param event_time = "ts"
  output name = "orders", type = "Order"
}}
operator name = "w", type = "window" {{
  input name = "orders"
  param kind = "sliding"
  param size = "10m"
  param slide = "5m"
  param time = "ts"
  param keys = "customer"
  param aggregates = "int_avg(amount) AS mean, AVG(CAST(amount AS DOUBLE)) AS builtin"
  output name = "means"
}}
operator name = "out", type = "writer" {{
  input name = "means"
  param path = "out.csv"
}}
"#,
            repo().join("data/orders.csv").display()
        ),
    )
    .expect("query");
    let module = repo().join("examples/udfs/int_avg.wat");
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--no-api",
            "--udf",
            module.to_str().expect("utf-8"),
        ],
    );
    let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    let mut lines = written.lines();
    assert_eq!(
        lines.next(),
        Some("window_start,window_end,customer,mean,builtin")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 10, "two windows of five customers: {written}");
    for row in rows {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!(cols[3], cols[4], "{row}");
    }
}
