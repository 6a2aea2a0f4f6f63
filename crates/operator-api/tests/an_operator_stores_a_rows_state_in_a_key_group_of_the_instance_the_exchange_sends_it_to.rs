//! Routing and storage agree: for every column type anduin streams carry (Int64, Float64,
//! Boolean, Utf8, Timestamp(ms), with nulls, alone and in multi-column keys), the key group a
//! keyed operator stores a row's state under belongs to the instance the hash exchange sends
//! the row to. A live rescale moves key groups between instances and relies on it.
//!
//! The exchange (anduin-runtime's `HashRoute`) builds its [`KeyEncoder`] from the key columns
//! of the batches it splits and sends each row to [`KeyEncoder::instance`]; an operator
//! (window, join, pattern) builds its encoder from the key columns' declared types, encodes
//! the rows it receives (the exchange's share of the batch) and stores their state in a
//! [`KeyedTable`] under those bytes.
//!
//! Every NaN is one key (a negative NaN, as `0.0 / 0.0` gives on x86, and a NaN with a payload
//! are the NaN `'NaN'` parses to), so that a window groups them, a join pairs them and the
//! exchange sends them to one instance; `-0.0` and `0.0` are two keys.

use std::num::NonZeroU16;
use std::sync::Arc;

use anduin_operator_api::keys::KeyEncoder;
use anduin_state::{assign_ranges, BackendKind, KeyedTable, TableError, DEFAULT_MAX_KEY_GROUPS};
use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray,
    TimestampMillisecondArray, UInt32Array,
};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

/// A small deterministic generator (xorshift64*), so that a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `None` one time in `n`.
    fn null_one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

const ROWS: usize = 500;

fn int64(rng: &mut Rng) -> ArrayRef {
    let edge = [0, -1, 1, i64::MIN, i64::MAX];
    Arc::new(Int64Array::from_iter((0..ROWS).map(|_| {
        if rng.null_one_in(7) {
            None
        } else if rng.null_one_in(5) {
            Some(edge[rng.below(5) as usize])
        } else {
            Some(rng.next() as i64 % 50)
        }
    })))
}

/// A NaN with the sign bit set: what `0.0 / 0.0` gives on x86.
fn negative_nan() -> f64 {
    f64::from_bits(f64::NAN.to_bits() | (1 << 63))
}

/// A quiet NaN with a payload.
fn payload_nan() -> f64 {
    f64::from_bits(f64::NAN.to_bits() | 0x2a)
}

fn float64(rng: &mut Rng) -> ArrayRef {
    let edge = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        negative_nan(),
        payload_nan(),
    ];
    Arc::new(Float64Array::from_iter((0..ROWS).map(|_| {
        if rng.null_one_in(7) {
            None
        } else if rng.null_one_in(3) {
            Some(edge[rng.below(edge.len() as u64) as usize])
        } else {
            Some((rng.next() as i64 % 1000) as f64 / 8.0)
        }
    })))
}

fn boolean(rng: &mut Rng) -> ArrayRef {
    Arc::new(BooleanArray::from_iter((0..ROWS).map(|_| {
        if rng.null_one_in(5) {
            None
        } else {
            Some(rng.below(2) == 1)
        }
    })))
}

fn utf8(rng: &mut Rng) -> ArrayRef {
    let words = [
        "",
        "a",
        "alice",
        "bob",
        "héllo",
        "日本",
        "a\u{0}b",
        "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
    ];
    Arc::new(StringArray::from_iter((0..ROWS).map(|_| {
        if rng.null_one_in(7) {
            None
        } else {
            let w = words[rng.below(words.len() as u64) as usize];
            Some(format!("{w}{}", rng.below(20)))
        }
    })))
}

fn timestamp_ms(rng: &mut Rng) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from_iter((0..ROWS).map(|_| {
        if rng.null_one_in(7) {
            None
        } else {
            Some(1_700_000_000_000 + (rng.next() % 100_000) as i64 * 1000)
        }
    })))
}

type Gen = fn(&mut Rng) -> ArrayRef;

fn column(name: &str, rng: &mut Rng) -> (Field, ArrayRef) {
    let (t, g): (DataType, Gen) = match name {
        "int64" => (DataType::Int64, int64),
        "float64" => (DataType::Float64, float64),
        "boolean" => (DataType::Boolean, boolean),
        "utf8" => (DataType::Utf8, utf8),
        "timestamp_ms" => (
            DataType::Timestamp(TimeUnit::Millisecond, None),
            timestamp_ms,
        ),
        other => panic!("no generator for {other}"),
    };
    (Field::new(name, t, true), g(rng))
}

#[test]
fn every_row_is_stored_in_a_key_group_of_the_instance_it_is_routed_to() -> Result<(), TableError> {
    let keys: [&[&str]; 9] = [
        &["int64"],
        &["float64"],
        &["boolean"],
        &["utf8"],
        &["timestamp_ms"],
        &["utf8", "int64"],
        &["int64", "utf8"],
        &["timestamp_ms", "boolean", "float64"],
        &[
            "utf8",
            "utf8",
            "int64",
            "boolean",
            "timestamp_ms",
            "float64",
        ],
    ];
    for (case, names) in keys.iter().enumerate() {
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (case as u64 + 1);
        let mut rng = Rng(seed);
        let (fields, columns): (Vec<Field>, Vec<ArrayRef>) =
            names.iter().map(|n| column(n, &mut rng)).unzip();
        let schema = Schema::new(fields);

        // The exchange: an encoder from the batch's columns, one instance per row.
        let exchange =
            KeyEncoder::new(columns.iter().map(|c| c.data_type().clone())).expect("an encoder");
        let routed = exchange.encode(&columns).expect("encodes");
        // The operator: an encoder from the declared key columns.
        let operator = KeyEncoder::new(schema.fields().iter().map(|f| f.data_type().clone()))
            .expect("an encoder");

        for parallelism in [1u16, 2, 3, 4, 7, 16] {
            let p = NonZeroU16::new(parallelism).expect("not zero");
            let ranges = assign_ranges(DEFAULT_MAX_KEY_GROUPS, p).expect("p <= max");
            let instances: Vec<usize> = (0..ROWS)
                .map(|i| KeyEncoder::instance(routed.row(i).as_ref(), p))
                .collect();
            for (instance, range) in ranges.iter().enumerate() {
                // What the exchange sends this instance, as it cuts the batch.
                let mine: Vec<u32> = (0..ROWS)
                    .filter(|i| instances[*i] == instance)
                    .map(|i| u32::try_from(i).expect("few rows"))
                    .collect();
                let indices = UInt32Array::from(mine.clone());
                let share: Vec<ArrayRef> = columns
                    .iter()
                    .map(|c| take(c.as_ref(), &indices, None).expect("takes"))
                    .collect();
                let stored = operator.encode(&share).expect("encodes");
                let mut table = KeyedTable::new("op", BackendKind::Heap, None);
                for (j, i) in mine.iter().enumerate() {
                    let bytes = stored.row(j);
                    let i = *i as usize;
                    assert_eq!(
                        bytes.as_ref(),
                        routed.row(i).as_ref(),
                        "{names:?} row {i}: the operator's key bytes differ from the exchange's (seed {seed:#x})"
                    );
                    let kg = table.key_group(bytes.as_ref());
                    assert_eq!(kg, KeyEncoder::key_group(bytes.as_ref()));
                    assert!(
                        range.contains(kg),
                        "{names:?} row {i}: stored in {kg}, outside {range} of instance {instance} of {parallelism} that receives it (seed {seed:#x})"
                    );
                    table.put(bytes.as_ref(), b"s", b"v")?;
                }
                // Everything the instance stores lies in its own range: nothing elsewhere.
                let mut inside = 0usize;
                table.scan(*range, |_| {
                    inside += 1;
                    Ok::<(), TableError>(())
                })?;
                let mut everywhere = 0usize;
                table.scan(table.all_key_groups(), |_| {
                    everywhere += 1;
                    Ok::<(), TableError>(())
                })?;
                assert_eq!(
                    inside, everywhere,
                    "{names:?} instance {instance} of {parallelism} (seed {seed:#x})"
                );
            }
        }
        // The operator reads stored keys back as the columns they came from.
        let parser = operator.parser();
        let mut parsed = operator.empty_rows();
        for row in routed.iter() {
            parsed.push(parser.parse(row.as_ref()));
        }
        let back = operator.decode(parsed.iter()).expect("decodes");
        let again = operator.encode(&back).expect("encodes");
        assert!(
            (0..ROWS).all(|i| again.row(i).as_ref() == routed.row(i).as_ref()),
            "{names:?}: keys do not survive decoding (seed {seed:#x})"
        );
    }
    Ok(())
}

#[test]
fn every_nan_is_one_key_and_the_zeros_are_two() {
    let nans = [
        f64::NAN,
        negative_nan(),
        payload_nan(),
        -f64::NAN,
        // Computed at run time, by the hardware: negative on x86.
        std::hint::black_box(0.0f64) / std::hint::black_box(0.0f64),
    ];
    let float: ArrayRef = Arc::new(Float64Array::from(
        nans.iter().copied().chain([0.0, -0.0]).collect::<Vec<_>>(),
    ));
    let text: ArrayRef = Arc::new(StringArray::from(vec!["k"; nans.len() + 2]));
    let encoder = KeyEncoder::new([DataType::Utf8, DataType::Float64]).expect("an encoder");
    let keys = encoder
        .encode(&[Arc::clone(&text), Arc::clone(&float)])
        .expect("encodes");
    for (i, nan) in nans.iter().enumerate().skip(1) {
        assert_eq!(
            keys.row(i).as_ref(),
            keys.row(0).as_ref(),
            "NaN {:#x} is a key of its own",
            nan.to_bits()
        );
        for p in [2u16, 3, 4, 16] {
            let p = NonZeroU16::new(p).expect("not zero");
            assert_eq!(
                KeyEncoder::instance(keys.row(i).as_ref(), p),
                KeyEncoder::instance(keys.row(0).as_ref(), p)
            );
        }
    }
    let (zero, negative_zero) = (nans.len(), nans.len() + 1);
    assert_ne!(
        keys.row(zero).as_ref(),
        keys.row(negative_zero).as_ref(),
        "-0.0 and 0.0 are two keys"
    );
    // Decoded, every NaN is the canonical one.
    let back = encoder.decode(keys.iter()).expect("decodes");
    let back = back[1]
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("a float column");
    for i in 0..nans.len() {
        assert_eq!(back.value(i).to_bits(), f64::NAN.to_bits());
    }
    assert_eq!(back.value(negative_zero).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn a_key_encoder_needs_a_key_column() {
    assert!(KeyEncoder::new(Vec::<DataType>::new()).is_err());
}
