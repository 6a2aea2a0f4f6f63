//! List columns (a pattern's `array_agg` measure) as the encoders write them: in CSV as Trino
//! prints an array, `[1, 2, NULL]`, quoted as any field holding the delimiter; in JSON Lines
//! as a JSON array.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Builder, Int64Builder, ListBuilder, StringBuilder, TimestampMillisecondBuilder,
};
use arrow::record_batch::RecordBatch;

use super::{CsvEncoder, JsonLinesEncoder, TimestampFormat};

/// Rows: `[1, NULL, 3]` / an empty list / a NULL list, for ints, floats, strings and
/// timestamps.
fn batch() -> RecordBatch {
    let mut ints = ListBuilder::new(Int64Builder::new());
    ints.values().append_value(1);
    ints.values().append_null();
    ints.values().append_value(3);
    ints.append(true);
    ints.append(true);
    ints.append(false);
    let mut floats = ListBuilder::new(Float64Builder::new());
    floats.values().append_value(0.5);
    floats.values().append_null();
    floats.values().append_value(f64::NAN);
    floats.append(true);
    floats.append(true);
    floats.append(false);
    let mut strings = ListBuilder::new(StringBuilder::new());
    strings.values().append_value("a\"b");
    strings.values().append_null();
    strings.values().append_value("");
    strings.append(true);
    strings.append(true);
    strings.append(false);
    let mut times = ListBuilder::new(TimestampMillisecondBuilder::new());
    times.values().append_value(1_700_000_000_123);
    times.values().append_null();
    times.values().append_value(0);
    times.append(true);
    times.append(true);
    times.append(false);
    RecordBatch::try_from_iter([
        ("i", Arc::new(ints.finish()) as ArrayRef),
        ("f", Arc::new(floats.finish())),
        ("s", Arc::new(strings.finish())),
        ("t", Arc::new(times.finish())),
    ])
    .expect("valid batch")
}

#[test]
fn csv_writes_a_list_as_trino_prints_an_array_quoted_as_text() {
    let mut out = Vec::new();
    CsvEncoder::new(b',', true, TimestampFormat::EpochMillis).encode(&batch(), &mut out);
    assert_eq!(
        String::from_utf8(out).expect("UTF-8"),
        "i,f,s,t\n\
         \"[1, NULL, 3]\",\"[0.5, NULL, NaN]\",\"[a\"\"b, NULL, ]\",\"[1700000000123, NULL, 0]\"\n\
         [],[],[],[]\n\
         ,,,\n"
    );
    let mut out = Vec::new();
    CsvEncoder::new(b';', false, TimestampFormat::Rfc3339)
        .encode(&batch().slice(0, 1).project(&[3]).expect("col"), &mut out);
    assert_eq!(
        String::from_utf8(out).expect("UTF-8"),
        "[2023-11-14T22:13:20.123Z, NULL, 1970-01-01T00:00:00.000Z]\n"
    );
}

#[test]
fn json_writes_a_list_as_an_array_of_its_items() {
    let mut out = Vec::new();
    JsonLinesEncoder::new(TimestampFormat::EpochMillis).encode(&batch(), &mut out);
    assert_eq!(
        String::from_utf8(out).expect("UTF-8"),
        "{\"i\":[1,null,3],\"f\":[0.5,null,\"NaN\"],\"s\":[\"a\\\"b\",null,\"\"],\"t\":[1700000000123,null,0]}\n\
         {\"i\":[],\"f\":[],\"s\":[],\"t\":[]}\n\
         {\"i\":null,\"f\":null,\"s\":null,\"t\":null}\n"
    );
    let mut out = Vec::new();
    JsonLinesEncoder::new(TimestampFormat::Rfc3339)
        .encode(&batch().slice(0, 1).project(&[3]).expect("col"), &mut out);
    assert_eq!(
        String::from_utf8(out).expect("UTF-8"),
        "{\"t\":[\"2023-11-14T22:13:20.123Z\",null,\"1970-01-01T00:00:00.000Z\"]}\n"
    );
}
