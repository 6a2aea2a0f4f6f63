//! Issue 18: in SQL, `MATCH_RECOGNIZE`'s pattern variables are identifiers as in Trino and
//! Oracle. Unquoted, they are case-insensitive and named in upper case: `PATTERN (a B+)` with
//! `DEFINE A AS …, b AS …` is `A B+`, `CLASSIFIER()` says `'A'` and `'B'`, and `b.value`,
//! `COUNT(B.*)` and `SKIP TO LAST b` name B. Double-quoted, they keep their case: `"b"` is
//! another variable than `B`, classified `'b'`. The script is lowered to the `pattern`
//! operator (as `anduin run` lowers it) and the operator is fed rows.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, DeadLetter, DeadLetterTarget};
use anduin_registry::BuiltinCatalog;
use anduin_types::Watermark;
use arrow::array::{Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

const TABLES: &str = "CREATE TABLE ev (ts TIMESTAMP, k BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
";

/// The rows the `pattern` operator of `sql` (a `MATCH_RECOGNIZE` over `ev`) outputs over
/// rows of key 0 with these values, one millisecond apart.
fn matched(sql: &str, values: &[i64]) -> Vec<String> {
    let spec =
        anduin_spec::parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|e| panic!("{sql}\n{e}"));
    let (graph, _) =
        anduin_graph::check(&spec, &BuiltinCatalog).unwrap_or_else(|e| panic!("{sql}\n{e}"));
    let node = graph
        .nodes
        .iter()
        .find(|n| n.kind() == "pattern")
        .unwrap_or_else(|| panic!("no pattern operator in\n{sql}"));
    let anduin_operator_api::Bound::Operator(factory) = node.bound.clone() else {
        panic!("the pattern is an operator with an input")
    };
    let ctx = BuildContext {
        dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)),
        checkpointing: false,
        restore_epoch: None,
        ..BuildContext::default()
    };
    let mut op = factory(&ctx).expect("builds");
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let n = values.len() as i64;
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from((0..n).collect::<Vec<_>>())),
            Arc::new(Int64Array::from(vec![0; values.len()])),
            Arc::new(Int64Array::from(values.to_vec())),
        ],
    )
    .expect("valid");
    let mut out = crate::common::Formatted::new(" ");
    op.process_batch(0, batch, &mut out).expect("processes");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    op.on_end_of_input(&mut out).expect("ends");
    out.rows
}

#[test]
fn unquoted_variables_are_case_insensitive_and_classified_in_upper_case() {
    let sql = "INSERT INTO out SELECT * FROM ev MATCH_RECOGNIZE (
  PARTITION BY k
  ORDER BY ts
  MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS cls, COUNT(B.*) AS n, a.value AS first_value
  ALL ROWS PER MATCH
  AFTER MATCH SKIP TO LAST b
  PATTERN (a B+)
  DEFINE A AS value < 5, b AS b.value > PREV(value)
)";
    // 0 then the rises 1, 2; skip to the last B (2), which starts nothing (0 is no rise
    // above 2 and 2 is no A); 0 then 5. Each row: ts k value, then the measures.
    assert_eq!(
        matched(sql, &[0, 1, 2, 0, 5]),
        [
            "1970-01-01T00:00:00 0 0 1 A 0 0",
            "1970-01-01T00:00:00.001 0 1 1 B 1 0",
            "1970-01-01T00:00:00.002 0 2 1 B 2 0",
            "1970-01-01T00:00:00.003 0 0 2 A 0 0",
            "1970-01-01T00:00:00.004 0 5 2 B 1 0",
        ]
    );
}

#[test]
fn quoted_variables_keep_their_case() {
    // `"b"` and `B` are two variables: B takes a rise, "b" a fall.
    let sql = r#"INSERT INTO out SELECT * FROM ev MATCH_RECOGNIZE (
  PARTITION BY k
  ORDER BY ts
  MEASURES CLASSIFIER() AS cls, COUNT("b".*) AS falls
  ALL ROWS PER MATCH
  PATTERN (a (B | "b")+)
  DEFINE B AS value > PREV(value), "b" AS value < PREV(value)
)"#;
    assert_eq!(
        matched(sql, &[3, 4, 2, 6]),
        [
            "1970-01-01T00:00:00 0 3 A 0",
            "1970-01-01T00:00:00.001 0 4 B 0",
            "1970-01-01T00:00:00.002 0 2 b 1",
            "1970-01-01T00:00:00.003 0 6 B 1",
        ]
    );
}
