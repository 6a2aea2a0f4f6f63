//! The seeded input tables, as JSON Lines for anduin and as Arrow batches for DataFusion.
//!
//! `t (ts TIMESTAMP, k BIGINT, g VARCHAR, a BIGINT, x DOUBLE, late BOOLEAN)`: rows 50–150 ms
//! apart, written up to `DISORDER_MS` out of their time order (less than the watermark's
//! delay, so that no row of them is late), and a few `late` rows far behind the watermark;
//! keys 0..8, NULL in a few rows of `k`, `g`, `a` and `x`.
//! `u (ts TIMESTAMP, k BIGINT, name VARCHAR, v BIGINT)`: a few rows per key 3..12 (keys 0..2
//! only in `t`, 9..12 only in `u`), a NULL key now and then.

use std::fmt::Write as _;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use crate::common::Rng;

/// How far (ms) a row of `t` may come after rows later than it.
const DISORDER_MS: i64 = 1_500;
/// The watermark's delay of both tables: more than `DISORDER_MS`.
pub const WATERMARK: &str = "2 seconds";
/// How far (ms) behind the rows before it a late row of `t` is: past the watermark.
const LATE_BY_MS: i64 = 5_000;

const START: i64 = 1_767_225_600_000;
const NAMES: [&str; 5] = ["ann", "bob", "cy", "dee", "eve"];
const GROUPS: [&str; 4] = ["x", "y", "z", "w"];

/// One row of `t`.
struct TRow {
    ts: i64,
    k: Option<i64>,
    g: Option<&'static str>,
    a: Option<i64>,
    x: Option<f64>,
    late: bool,
}

/// One row of `u`.
struct URow {
    ts: i64,
    k: Option<i64>,
    name: &'static str,
    v: i64,
}

/// Both tables of one seed.
pub struct Input {
    t: Vec<TRow>,
    u: Vec<URow>,
}

/// `Some(v)` but one time in `one_in`.
fn sometimes_null<T>(rng: &mut Rng, one_in: u64, v: T) -> Option<T> {
    (rng.next(one_in) != 0).then_some(v)
}

impl Input {
    /// `rows` rows of `t` and about `rows / 8` of `u` from `seed`.
    pub fn generate(seed: u64, rows: usize) -> Input {
        let mut rng = Rng(seed);
        let mut times: Vec<i64> = Vec::with_capacity(rows);
        // Every time of `t` is distinct, so that an order by time has no ties.
        let mut used = std::collections::HashSet::new();
        let mut ts = START;
        for _ in 0..rows {
            ts += 50 + rng.next(100) as i64;
            times.push(ts);
            used.insert(ts);
        }
        // Out of order: each row moves up to DISORDER_MS earlier in the file (a row only
        // ever waits behind rows less than DISORDER_MS later than it).
        let mut order: Vec<(i64, i64)> = times
            .iter()
            .map(|&ts| (ts - rng.next(DISORDER_MS as u64) as i64, ts))
            .collect();
        order.sort();
        let mut t = Vec::with_capacity(rows + rows / 20);
        for (i, (_, ts)) in order.into_iter().enumerate() {
            // Every 20th row a late one, first: far behind the rows before it.
            if i % 20 == 19 {
                let late_ts = ts - LATE_BY_MS - rng.next(1_000) as i64;
                if used.insert(late_ts) {
                    t.push(TRow::random(&mut rng, late_ts, true));
                }
            }
            t.push(TRow::random(&mut rng, ts, false));
        }
        let mut u = Vec::new();
        let mut uts = START;
        for _ in 0..rows / 8 {
            uts += 200 + rng.next(1_000) as i64;
            let k = 3 + rng.next(10) as i64;
            u.push(URow {
                ts: uts,
                k: sometimes_null(&mut rng, 15, k),
                name: NAMES[rng.next(NAMES.len() as u64) as usize],
                v: rng.next(60) as i64 - 10,
            });
        }
        Input { t, u }
    }

    /// `t.jsonl` and `u.jsonl`: JSON Lines, whose `null` is NULL for every type (an empty
    /// CSV field is an empty string for a `VARCHAR` column).
    pub fn jsonl(&self) -> (String, String) {
        let mut t = String::new();
        for r in &self.t {
            let row = serde_json::json!({
                "ts": r.ts, "k": r.k, "g": r.g, "a": r.a, "x": r.x, "late": r.late,
            });
            writeln!(t, "{row}").expect("writes to a string");
        }
        let mut u = String::new();
        for r in &self.u {
            let row = serde_json::json!({"ts": r.ts, "k": r.k, "name": r.name, "v": r.v});
            writeln!(u, "{row}").expect("writes to a string");
        }
        (t, u)
    }

    /// The tables as Arrow batches, with DataFusion's types for anduin's: `t`, then `u`.
    pub fn batches(&self) -> (RecordBatch, RecordBatch) {
        let ts = || DataType::Timestamp(TimeUnit::Millisecond, None);
        let t_schema = Arc::new(Schema::new(vec![
            Field::new("ts", ts(), false),
            Field::new("k", DataType::Int64, true),
            Field::new("g", DataType::Utf8, true),
            Field::new("a", DataType::Int64, true),
            Field::new("x", DataType::Float64, true),
            Field::new("late", DataType::Boolean, false),
        ]));
        let t_columns: Vec<ArrayRef> = vec![
            Arc::new(TimestampMillisecondArray::from_iter_values(
                self.t.iter().map(|r| r.ts),
            )),
            Arc::new(Int64Array::from_iter(self.t.iter().map(|r| r.k))),
            Arc::new(StringArray::from_iter(self.t.iter().map(|r| r.g))),
            Arc::new(Int64Array::from_iter(self.t.iter().map(|r| r.a))),
            Arc::new(Float64Array::from_iter(self.t.iter().map(|r| r.x))),
            Arc::new(BooleanArray::from_iter(self.t.iter().map(|r| Some(r.late)))),
        ];
        let u_schema = Arc::new(Schema::new(vec![
            Field::new("ts", ts(), false),
            Field::new("k", DataType::Int64, true),
            Field::new("name", DataType::Utf8, false),
            Field::new("v", DataType::Int64, false),
        ]));
        let u_columns: Vec<ArrayRef> = vec![
            Arc::new(TimestampMillisecondArray::from_iter_values(
                self.u.iter().map(|r| r.ts),
            )),
            Arc::new(Int64Array::from_iter(self.u.iter().map(|r| r.k))),
            Arc::new(StringArray::from_iter_values(self.u.iter().map(|r| r.name))),
            Arc::new(Int64Array::from_iter_values(self.u.iter().map(|r| r.v))),
        ];
        (
            RecordBatch::try_new(t_schema, t_columns).expect("t's columns fit its schema"),
            RecordBatch::try_new(u_schema, u_columns).expect("u's columns fit its schema"),
        )
    }
}

impl TRow {
    fn random(rng: &mut Rng, ts: i64, late: bool) -> TRow {
        let k = rng.next(9) as i64;
        let g = GROUPS[rng.next(GROUPS.len() as u64) as usize];
        let a = rng.next(100) as i64 - 40;
        let x = (rng.next(20_000) as f64 - 10_000.0) / 100.0;
        TRow {
            ts,
            k: sometimes_null(rng, 30, k),
            g: sometimes_null(rng, 20, g),
            a: sometimes_null(rng, 12, a),
            x: sometimes_null(rng, 15, x),
            late,
        }
    }
}
