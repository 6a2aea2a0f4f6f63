//! Round-trip properties across the codecs: random batches of all five column types encoded
//! by an encoder and decoded by the matching decoder come back unchanged, whatever the
//! timestamp format and however the bytes are chunked (JSON Lines rejects the two extreme
//! timestamps, which arrow-json cannot tell from saturated ones).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, TimestampMillisecondArray,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

use super::*;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("sensor", DataType::Int64, true),
        Field::new("value", DataType::Float64, true),
        Field::new("ok", DataType::Boolean, true),
        Field::new("name", DataType::Utf8, true),
    ]))
}

type Row = (
    Option<i64>,
    Option<i64>,
    Option<f64>,
    Option<bool>,
    Option<String>,
);

fn finite_f64() -> impl Strategy<Value = f64> {
    use proptest::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        (POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO),
        (-1000i32..1000).prop_map(f64::from),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        proptest::option::of(prop_oneof![
            8 => any::<i64>(),
            8 => -62_167_219_200_000i64..=253_402_300_799_999,
            1 => Just(i64::MIN),
            1 => Just(i64::MAX),
        ]),
        proptest::option::of(any::<i64>()),
        proptest::option::of(finite_f64()),
        proptest::option::of(any::<bool>()),
        proptest::option::of("([a-z ,;\"\\r\\n\\\\é]|\\PC){0,10}"),
    )
}

fn to_batch(rows: &[Row]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampMillisecondArray::from_iter(
            rows.iter().map(|r| r.0),
        )),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.1))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.2))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.3))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.4.as_deref()))),
    ];
    RecordBatch::try_new(schema(), columns).expect("columns match the schema")
}

fn format() -> impl Strategy<Value = TimestampFormat> {
    prop_oneof![
        Just(TimestampFormat::EpochMillis),
        Just(TimestampFormat::Rfc3339)
    ]
}

/// Decodes `bytes` in chunks cut at `cuts` (fractions of the length), then finishes the file.
fn decode_chunked(
    bytes: &[u8],
    cuts: &[f64],
    mut decode: impl FnMut(&[u8]) -> Decoded,
    finish: impl FnOnce() -> Decoded,
) -> (RecordBatch, Vec<Rejected>) {
    let mut positions: Vec<usize> = cuts
        .iter()
        .map(|f| (f * bytes.len() as f64) as usize)
        .collect();
    positions.push(bytes.len());
    positions.sort_unstable();
    let (mut batches, mut rejected, mut start) = (Vec::new(), Vec::new(), 0);
    for end in positions {
        let out = decode(&bytes[start..end]);
        batches.extend(out.batch);
        rejected.extend(out.rejected);
        start = end;
    }
    let out = finish();
    batches.extend(out.batch);
    rejected.extend(out.rejected);
    (
        concat_batches(&schema(), &batches).expect("same schema"),
        rejected,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn csv_encoding_then_decoding_gives_back_the_batch(
        batches in proptest::collection::vec(proptest::collection::vec(row(), 0..20), 1..4),
        format in format(),
        cuts in proptest::collection::vec(0.0f64..1.0, 0..4),
    ) {
        let mut encoder = CsvEncoder::new(b',', true, format);
        let mut bytes = Vec::new();
        for rows in &batches {
            encoder.encode(&to_batch(rows), &mut bytes);
        }
        let mut decoder = CsvDecoder::new(schema(), CsvOptions { delimiter: b',', has_header: true });
        decoder.start_file("roundtrip.csv");
        let decoder = std::cell::RefCell::new(decoder);
        let (decoded, rejected) = decode_chunked(
            &bytes,
            &cuts,
            |chunk| decoder.borrow_mut().decode(chunk).expect("decode"),
            || decoder.borrow_mut().finish_file().expect("finish"),
        );
        prop_assert!(rejected.is_empty(), "{:?}", rejected);
        // CSV cannot tell a null string from an empty one; the decoder reads both as "".
        let expected: Vec<Row> = batches
            .concat()
            .into_iter()
            .map(|mut r| {
                r.4.get_or_insert_with(String::new);
                r
            })
            .collect();
        prop_assert_eq!(decoded, to_batch(&expected));
    }

    #[test]
    fn json_encoding_then_decoding_gives_back_the_batch(
        batches in proptest::collection::vec(proptest::collection::vec(row(), 0..20), 1..4),
        format in format(),
        cuts in proptest::collection::vec(0.0f64..1.0, 0..4),
    ) {
        let mut encoder = JsonLinesEncoder::new(format);
        let mut bytes = Vec::new();
        for rows in &batches {
            encoder.encode(&to_batch(rows), &mut bytes);
        }
        let mut decoder = JsonDecoder::new(schema());
        decoder.start_file("roundtrip.jsonl");
        let decoder = std::cell::RefCell::new(decoder);
        let (decoded, rejected) = decode_chunked(
            &bytes,
            &cuts,
            |chunk| decoder.borrow_mut().decode(chunk).expect("decode"),
            || decoder.borrow_mut().finish_file().expect("finish"),
        );
        prop_assert!(rejected.is_empty(), "{:?}", rejected);
        prop_assert_eq!(decoded, to_batch(&batches.concat()));
    }
}

#[test]
fn json_round_trips_the_extreme_values_of_every_type() {
    let rows: Vec<Row> = vec![
        (
            Some(i64::MIN + 1),
            Some(i64::MIN),
            Some(f64::MAX),
            Some(false),
            Some("\"\\\u{0}\u{1f}\u{7f}\u{2028}\u{10ffff}".into()),
        ),
        (
            Some(i64::MAX - 1),
            Some(i64::MAX),
            Some(-f64::MIN_POSITIVE / 2.0),
            Some(true),
            Some(String::new()),
        ),
        (Some(0), Some(0), Some(-0.0), None, None),
    ];
    let batch = to_batch(&rows);
    for format in [TimestampFormat::EpochMillis, TimestampFormat::Rfc3339] {
        let mut json = Vec::new();
        JsonLinesEncoder::new(format).encode(&batch, &mut json);
        let out = JsonDecoder::new(schema()).decode(&json).expect("decode");
        assert_eq!(out.rejected, [], "{format:?}");
        let decoded = out.batch.expect("three rows");
        assert_eq!(decoded, batch, "{format:?}");
        let values = decoded
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("Float64");
        assert!(values.value(2).is_sign_negative(), "-0.0 keeps its sign");
    }
}

#[test]
fn non_finite_floats_survive_csv_and_json() {
    let rows: Vec<Row> = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
        .into_iter()
        .map(|v| (None, None, Some(v), None, Some("x".into())))
        .collect();
    let batch = to_batch(&rows);

    let mut csv = Vec::new();
    CsvEncoder::new(b',', true, TimestampFormat::EpochMillis).encode(&batch, &mut csv);
    let mut decoder = CsvDecoder::new(schema(), CsvOptions::default());
    let out = decoder.decode(&csv).expect("decode");
    let values = out.batch.expect("three rows");
    let values = values
        .column(2)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("Float64");
    assert!(values.value(0).is_nan());
    assert_eq!(values.value(1), f64::INFINITY);
    assert_eq!(values.value(2), f64::NEG_INFINITY);

    let mut json = Vec::new();
    JsonLinesEncoder::new(TimestampFormat::EpochMillis).encode(&batch, &mut json);
    assert!(
        String::from_utf8_lossy(&json).contains("\"value\":\"-Infinity\""),
        "not null, which is SQL's NULL"
    );
    let out = JsonDecoder::new(schema()).decode(&json).expect("decode");
    let values = out.batch.expect("three rows");
    let values = values
        .column(2)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("Float64");
    assert_eq!(arrow::array::Array::null_count(values), 0);
    assert!(values.value(0).is_nan());
    assert_eq!(values.value(1), f64::INFINITY);
    assert_eq!(values.value(2), f64::NEG_INFINITY);
}
