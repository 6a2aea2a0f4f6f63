//! `PARTITIONED BY (dt, hm)` on a 'file' table (Nexmark q10, Flink's partitioned filesystem
//! sink): its writer gets `partition_by`; a partition column the table lacks, a partitioned
//! table read, and a partitioned table of another connector are refused at the clause.

use anduin_spec::{parse_sql, Value};

fn errors(sql: &str) -> Vec<String> {
    let err = parse_sql(sql).expect_err("refused");
    err.0
        .iter()
        .map(|d| format!("{}:{}: {}", d.pos.line, d.pos.col, d.message))
        .collect()
}

#[test]
fn nexmark_q10_writes_a_directory_per_day_and_minute() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/nexmark/q10.sql");
    let sql = std::fs::read_to_string(path).expect("the query file");
    let spec = parse_sql(&sql).unwrap_or_else(|d| panic!("q10: {d}"));
    let writer = spec
        .operators
        .iter()
        .find(|o| o.name.as_str() == "nexmark_q10")
        .expect("the sink");
    assert_eq!(writer.kind.as_str(), "writer");
    let param = |n: &str| {
        writer
            .params
            .iter()
            .find(|p| p.name.as_str() == n)
            .map(|p| match &p.value {
                Value::String(t) => t.as_str().to_string(),
                other => format!("{other:?}"),
            })
    };
    assert_eq!(param("partition_by").as_deref(), Some("dt, hm"));
    assert_eq!(param("format").as_deref(), Some("csv"));
}

#[test]
fn a_partition_column_must_be_the_table_s_and_the_table_a_written_file() {
    let source =
        "CREATE TABLE t (a BIGINT, d VARCHAR) WITH (connector = 'file', path = 'in.csv');\n";
    assert_eq!(
        errors(&format!(
            "{source}CREATE TABLE o (a BIGINT, d VARCHAR) PARTITIONED BY (day) WITH (connector = 'file', path = 'out');
INSERT INTO o SELECT a, d FROM t;"
        )),
        ["2:38: PARTITIONED BY: `day` is not a column of table `o` (columns: a, d)"]
    );
    assert_eq!(
        errors(&format!(
            "{source}CREATE TABLE o PARTITIONED BY (d) WITH (connector = 'file', path = 'out');
INSERT INTO o SELECT a, d FROM t;"
        )),
        ["2:16: PARTITIONED BY (d): declare the table's columns, the partition columns among them"]
    );
    assert_eq!(
        errors(
            "CREATE TABLE t (a BIGINT, d VARCHAR) PARTITIONED BY (d) WITH (connector = 'file', path = 'in');
CREATE TABLE o WITH (connector = 'discard');
INSERT INTO o SELECT a FROM t;"
        ),
        ["3:29: table `t` is PARTITIONED BY (d): it is written, as a directory per partition; reading it is not supported"]
    );
    assert_eq!(
        errors(&format!(
            "{source}CREATE TABLE o (a BIGINT, d VARCHAR) PARTITIONED BY (d) WITH (connector = 'discard');
INSERT INTO o SELECT a, d FROM t;"
        )),
        ["2:38: PARTITIONED BY: a 'discard' table is not partitioned; a 'file' table is (a directory per partition)"]
    );
}
