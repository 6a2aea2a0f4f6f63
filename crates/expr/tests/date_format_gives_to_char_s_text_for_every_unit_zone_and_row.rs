//! `DATE_FORMAT` formats each row itself (chrono's format parsed once a batch, a row in the
//! second of the row before repeating its text): its text is `to_char`'s with the same
//! pattern in chrono's letters, row by row, for timestamps of every unit, with and without a
//! zone, before 1970 and after, in runs of one second and across seconds, nulls among them,
//! and for dates.

use std::sync::Arc;

use anduin_expr::{compile_projection, Scope};
use arrow::array::{Array, ArrayRef, Date32Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

/// Java patterns and the same in chrono's letters.
const PATTERNS: [(&str, &str); 4] = [
    ("yyyy-MM-dd", "%Y-%m-%d"),
    ("HH:mm", "%H:%M"),
    ("yyyy-MM-dd''T''HH:mm:ss.SSS", "%Y-%m-%dT%H:%M:%S.%3f"),
    ("EEE d/M/yy h a ss", "%a %-d/%-m/%y %-I %p %S"),
];

/// Seeded nanoseconds: runs within one second, steps across seconds, far before and after
/// 1970, a null now and then.
fn nanos() -> Vec<Option<i64>> {
    let mut seed: u64 = 0xda7e;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut t: i64 = -86_400_000_000_000 * 400;
    (0..2_000)
        .map(|_| {
            t += match next(10) {
                0 => 1_000_000_000 * next(100_000) as i64,
                1 => -(next(3_000_000_000) as i64),
                _ => next(40_000_000) as i64,
            };
            if next(2_000) == 0 {
                t = -t;
            }
            (next(50) != 0).then_some(t)
        })
        .collect()
}

fn text(out: &ArrayRef) -> Vec<Option<String>> {
    let s = out
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("a text column");
    (0..s.len())
        .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
        .collect()
}

#[test]
fn date_format_gives_to_char_s_text_row_by_row() {
    let ns = Int64Array::from(nanos());
    let zone = Some("+05:30".into());
    let columns: Vec<(&str, DataType)> = vec![
        ("s", DataType::Timestamp(TimeUnit::Second, None)),
        ("ms", DataType::Timestamp(TimeUnit::Millisecond, None)),
        ("us", DataType::Timestamp(TimeUnit::Microsecond, None)),
        ("ns", DataType::Timestamp(TimeUnit::Nanosecond, None)),
        ("zoned", DataType::Timestamp(TimeUnit::Millisecond, zone)),
    ];
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (name, t) in &columns {
        let DataType::Timestamp(unit, _) = t else {
            unreachable!("timestamps")
        };
        let per_ns = match unit {
            TimeUnit::Second => 1_000_000_000,
            TimeUnit::Millisecond => 1_000_000,
            TimeUnit::Microsecond => 1_000,
            TimeUnit::Nanosecond => 1,
        };
        let v: Int64Array = ns.iter().map(|v| v.map(|v| v.div_euclid(per_ns))).collect();
        let v = arrow::compute::cast(&(Arc::new(v) as ArrayRef), t).expect("cast");
        fields.push(Field::new(*name, t.clone(), true));
        arrays.push(v);
    }
    let days: Date32Array = ns
        .iter()
        .map(|v| v.map(|v| i32::try_from(v.div_euclid(86_400_000_000_000)).expect("days")))
        .collect();
    fields.push(Field::new("day", DataType::Date32, true));
    arrays.push(Arc::new(days));
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("a batch");
    let scope = Scope::new("t", schema);
    let mut names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    names.push("day");
    for name in names {
        for (java, chrono) in PATTERNS {
            let projection =
                format!("DATE_FORMAT({name}, '{java}') AS a, to_char({name}, '{chrono}') AS b");
            let compiled = compile_projection(&projection, &scope).expect("compiles");
            let ours = text(&compiled[0].evaluate(&batch).expect("date_format"));
            let theirs = text(&compiled[1].evaluate(&batch).expect("to_char"));
            assert_eq!(ours.len(), 2_000);
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert_eq!(a, b, "{name} row {i} in `{java}`");
            }
        }
    }
}
