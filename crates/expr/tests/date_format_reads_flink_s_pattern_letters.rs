//! `DATE_FORMAT(ts, 'yyyy-MM-dd')` formats as Flink does (Java's pattern letters, the time of
//! UTC), where DataFusion's `date_format` (an alias of `to_char`, chrono's `%Y`) would return
//! the letters unchanged; `to_char` keeps chrono's format. A pattern that is not a literal, or
//! has a letter it does not know, is refused when the expression is compiled.

use std::sync::Arc;

use anduin_expr::{compile_projection, Scope};
use arrow::array::{Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

fn scope() -> Scope {
    Scope::new(
        "bid",
        Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("pattern", DataType::Utf8, true),
        ])),
    )
}

/// The texts `projection` gives for 2024-03-01T12:30:05.5Z and a null.
fn texts(projection: &str) -> Vec<Vec<Option<String>>> {
    let ts = TimestampMillisecondArray::from(vec![Some(1_709_296_205_500), None]);
    let pattern = StringArray::from(vec![Some("yyyy"), Some("yyyy")]);
    let batch = RecordBatch::try_new(scope().schema, vec![Arc::new(ts), Arc::new(pattern)])
        .expect("a batch");
    let compiled = compile_projection(projection, &scope()).expect("compiles");
    (compiled.iter())
        .map(|e| {
            let out = e.evaluate(&batch).expect("evaluates");
            let s = out.as_any().downcast_ref::<StringArray>().expect("text");
            (0..s.len())
                .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn flink_s_patterns_give_the_day_the_minute_and_the_milliseconds() {
    let got = texts(
        "DATE_FORMAT(ts, 'yyyy-MM-dd') AS d, date_format(ts, 'HH:mm') AS m, \
         DATE_FORMAT(ts, 'yyyy-MM-dd''T''HH:mm:ss.SSS') AS t, to_char(ts, '%Y/%m') AS c",
    );
    let some = |s: &str| vec![Some(s.to_string()), None];
    assert_eq!(
        got,
        [
            some("2024-03-01"),
            some("12:30"),
            some("2024-03-01T12:30:05.500"),
            some("2024/03")
        ]
    );
}

#[test]
fn a_pattern_that_is_not_a_literal_or_has_an_unknown_letter_is_refused() {
    let e = compile_projection("DATE_FORMAT(ts, pattern) AS d", &scope()).expect_err("a column");
    assert!(
        e.message.contains("takes its pattern as a literal"),
        "{}",
        e.message
    );
    let e = compile_projection("DATE_FORMAT(ts, 'yyyy-ww') AS d", &scope()).expect_err("week");
    assert!(
        e.message
            .contains("`ww` in the pattern `yyyy-ww` is not supported"),
        "{}",
        e.message
    );
}
