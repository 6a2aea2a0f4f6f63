//! Flink's `REGEXP_EXTRACT`, `SPLIT_INDEX`, `HOUR` and `MOD`, which DataFusion lacks, give
//! Flink's results (NULL where Flink's is NULL), as Nexmark q13, q14, q21 and q22 call them;
//! their literal arguments are checked when the expression is compiled.

use std::sync::Arc;

use anduin_expr::{compile_projection, Scope};
use arrow::array::{Array, ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

fn scope() -> Scope {
    Scope::new(
        "bid",
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("n", DataType::Int64, true),
        ])),
    )
}

fn batch() -> RecordBatch {
    let url = StringArray::from(vec![
        Some("https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=123"),
        Some("channel_id=7&x=1"),
        Some("https://x/y?xchannel_id=9"),
        None,
    ]);
    // 12:30:05.5, 23:59:59.999, 00:00 of 2024-03-01 (UTC), NULL.
    let ts = TimestampMillisecondArray::from(vec![
        Some(1_709_296_205_500),
        Some(1_709_337_599_999),
        Some(1_709_251_200_000),
        None,
    ]);
    let n = Int64Array::from(vec![Some(10_007), Some(-7), Some(20_000), None]);
    let columns: Vec<ArrayRef> = vec![Arc::new(url), Arc::new(ts), Arc::new(n)];
    RecordBatch::try_new(scope().schema, columns).expect("a batch")
}

/// Each row of `expr`'s column, as text (`None` for NULL).
fn column(expr: &str) -> Vec<Option<String>> {
    let compiled = compile_projection(&format!("{expr} AS x"), &scope())
        .unwrap_or_else(|e| panic!("{expr}: {}", e.message));
    let out = compiled[0].evaluate(&batch()).expect("evaluates");
    let out = arrow::compute::cast(&out, &DataType::Utf8).expect("as text");
    let texts = out.as_any().downcast_ref::<StringArray>().expect("text");
    (0..texts.len())
        .map(|i| texts.is_valid(i).then(|| texts.value(i).to_string()))
        .collect()
}

fn some(xs: &[Option<&str>]) -> Vec<Option<String>> {
    xs.iter().map(|x| x.map(str::to_string)).collect()
}

#[test]
fn regexp_extract_gives_a_group_of_the_first_match_or_null() {
    assert_eq!(
        column("REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)"),
        some(&[Some("123"), Some("7"), None, None])
    );
    assert_eq!(
        column("regexp_extract(url, 'channel_id=[0-9]+')"),
        some(&[
            Some("channel_id=123"),
            Some("channel_id=7"),
            Some("channel_id=9"),
            None
        ]),
        "without a group: the whole match"
    );
    assert_eq!(
        column("regexp_extract(url, '(x)?channel_id', 1)"),
        some(&[None, None, Some("x"), None]),
        "a group that took no part in the match is NULL"
    );
    assert_eq!(
        column("regexp_extract(url, 'channel_id', 3)"),
        some(&[None, None, None, None]),
        "a group the regex does not have is NULL"
    );
}

#[test]
fn split_index_gives_the_nth_piece_from_0_or_null_past_the_last() {
    assert_eq!(
        column("SPLIT_INDEX(url, '/', 3)"),
        some(&[Some("a"), None, Some("y?xchannel_id=9"), None])
    );
    assert_eq!(
        column("split_index(url, '/', 1)"),
        some(&[Some(""), None, Some(""), None]),
        "empty pieces are kept"
    );
    assert_eq!(
        column("split_index(url, '/', -1)"),
        some(&[None, None, None, None])
    );
}

#[test]
fn hour_is_the_hour_of_utc_and_mod_the_remainder_of_the_sign_of_its_dividend() {
    assert_eq!(
        column("HOUR(ts)"),
        some(&[Some("12"), Some("23"), Some("0"), None])
    );
    assert_eq!(
        column("MOD(n, 10000)"),
        some(&[Some("7"), Some("-7"), Some("0"), None])
    );
}

#[test]
fn a_regex_that_does_not_compile_or_an_argument_that_is_not_a_literal_is_refused() {
    let refused = |expr: &str| {
        compile_projection(&format!("{expr} AS x"), &scope())
            .map(|_| ())
            .expect_err(expr)
            .message
    };
    let e = refused("regexp_extract(url, '(a', 1)");
    assert!(e.contains("the regular expression `(a`"), "{e}");
    let e = refused("regexp_extract(url, url, 1)");
    assert!(e.contains("its second argument is a literal"), "{e}");
    let e = refused("split_index(url, '/', n)");
    assert!(e.contains("its third argument is a literal integer"), "{e}");
}
