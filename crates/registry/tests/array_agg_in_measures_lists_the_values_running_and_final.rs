//! Issue 18: `array_agg` in MATCH_RECOGNIZE's MEASURES lists the values of a variable's rows
//! (every row's, unqualified; a SUBSET's members'), of any expression, NULLs kept, in the
//! order of the rows in the match (or of `ORDER BY` keys), with `DISTINCT` and `FILTER`;
//! RUNNING over the rows so far, FINAL over the whole match, in ONE ROW and ALL ROWS PER
//! MATCH; NULL where no row is aggregated. The measure is an Arrow list column of the
//! values' type.
//!
//! The rows (ts, key, value, tag): 1 Apple 10, 2 banana −5, 3 Band 7, 4 cherry 20, and
//! `PATTERN (A B+ C)` with B `abs(value) < 10` and C `value = 20` maps them A B B C.

use crate::common;

use arrow::datatypes::DataType;

const ROWS: [(i64, i64, i64, &str); 4] = [
    (1, 0, 10, "Apple"),
    (2, 0, -5, "banana"),
    (3, 0, 7, "Band"),
    (4, 0, 20, "cherry"),
];

/// The output rows of a pattern `A B+ C` with `more` params, cells joined by ` | `, and the
/// output's columns' types.
fn rows(more: &str) -> (Vec<String>, Vec<DataType>) {
    let src = format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" column name = "tag", type = "string" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "in"
  param order_by = "ts"
  param pattern = "A B+ C"
  param subset = "U = (A, C)"
  param define = "B AS abs(value) < 10, C AS value = 20"
  {more}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    let mut op = common::operator(&src);
    let mut out = Collected::default();
    op.process_batch(0, common::pattern_batch(&ROWS), &mut out)
        .expect("matches");
    op.handle_watermark(anduin_types::Watermark::MAX, &mut out)
        .expect("matches");
    op.on_end_of_input(&mut out).expect("ends");
    (out.rows.rows, out.types)
}

struct Collected {
    rows: common::Formatted,
    types: Vec<DataType>,
}

impl Default for Collected {
    fn default() -> Self {
        Collected {
            rows: common::Formatted::new(" | "),
            types: Vec::new(),
        }
    }
}

impl anduin_operator_api::Collector for Collected {
    fn collect(
        &mut self,
        port: usize,
        b: arrow::record_batch::RecordBatch,
    ) -> Result<(), anduin_operator_api::OperatorError> {
        self.types = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        self.rows.collect(port, b)
    }
}

fn list_of(t: DataType) -> DataType {
    DataType::List(std::sync::Arc::new(
        arrow::datatypes::Field::new_list_field(t, true),
    ))
}

#[test]
fn one_row_per_match_lists_a_variables_values_of_any_expression_in_match_order() {
    let (got, types) = rows(
        r#"param measures = "array_agg(B.value) AS bv, array_agg(tag) AS tags, array_agg(B.value * 2) AS doubled, array_agg(U.tag) AS u, array_agg(CLASSIFIER()) AS cls, array_agg(CASE WHEN value > 0 THEN value END) AS pos, array_agg(C.value) FILTER (WHERE C.value > 100) AS none, array_agg(DISTINCT CLASSIFIER()) AS vars, array_agg(tag ORDER BY value DESC) AS by_value""#,
    );
    assert_eq!(
        got,
        ["[-5, 7] | [Apple, banana, Band, cherry] | [-10, 14] | [Apple, cherry] | [A, B, B, C] | [10, NULL, 7, 20] | NULL | [A, B, C] | [cherry, Apple, Band, banana]"]
    );
    assert_eq!(
        types,
        [
            list_of(DataType::Int64),
            list_of(DataType::Utf8),
            list_of(DataType::Int64),
            list_of(DataType::Utf8),
            list_of(DataType::Utf8),
            list_of(DataType::Int64),
            list_of(DataType::Int64),
            list_of(DataType::Utf8),
            list_of(DataType::Utf8),
        ]
    );
}

#[test]
fn all_rows_per_match_lists_the_rows_so_far_running_and_the_whole_match_final() {
    let (got, types) = rows(
        r#"param rows_per_match = "all"
  param measures = "array_agg(B.value) AS so_far, FINAL array_agg(B.value) AS whole, RUNNING array_agg(lower(U.tag || CLASSIFIER())) AS u, FINAL array_agg(CAST(value AS DOUBLE) / 2) AS halves""#,
    );
    let tail: Vec<String> = got
        .iter()
        .map(|r| r.split(" | ").skip(4).collect::<Vec<_>>().join(" | "))
        .collect();
    assert_eq!(
        tail,
        [
            "NULL | [-5, 7] | [applea] | [5.0, -2.5, 3.5, 10.0]",
            "[-5] | [-5, 7] | [applea] | [5.0, -2.5, 3.5, 10.0]",
            "[-5, 7] | [-5, 7] | [applea] | [5.0, -2.5, 3.5, 10.0]",
            "[-5, 7] | [-5, 7] | [applea, cherryc] | [5.0, -2.5, 3.5, 10.0]",
        ]
    );
    assert_eq!(
        types[4..],
        [
            list_of(DataType::Int64),
            list_of(DataType::Int64),
            list_of(DataType::Utf8),
            list_of(DataType::Float64),
        ]
    );
}

#[test]
fn array_agg_inside_an_expression_or_a_define_is_refused_naming_it() {
    let check = |param: &str| {
        common::check_errors(&format!(
            r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "value", type = "int" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "in"
  param order_by = "ts"
  param pattern = "A B"
  {param}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
        ))
    };
    let e = check(r#"param measures = "abs(array_agg(B.value)) AS n""#);
    assert!(e.contains("array_agg must be a measure of its own"), "{e}");
    let e = check(r#"param define = "B AS array_agg(A.value) IS NOT NULL""#);
    assert!(e.contains("array_agg in DEFINE is not supported"), "{e}");
}
