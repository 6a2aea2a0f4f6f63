//! A join key with a null column equals no key, not even another null one (SQL's `NULL = NULL`
//! is not true): for int, double and string keys, and for two-column keys with one null
//! column, in interval and window joins, an inner join drops the row and a left join gives its
//! left row once, with nulls for the right columns (and its window's bounds in a window
//! join), whichever side arrives first. Such a row is not kept in the join's state: a
//! checkpoint of a join that saw only null keys is the checkpoint of a join that saw nothing.

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{
    Array, ArrayRef, Float64Array, Int64Array, StringArray, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

const T0: i64 = 1_700_000_000_000;

/// The type of a key column.
#[derive(Debug, Clone, Copy)]
enum KeyType {
    Int,
    Double,
    Text,
}

impl KeyType {
    fn flow(self) -> &'static str {
        match self {
            KeyType::Int => "int",
            KeyType::Double => "double",
            KeyType::Text => "string",
        }
    }

    /// A column of this type: `Some(n)` a value made from `n`, `None` null.
    fn column(self, values: &[Option<i64>]) -> ArrayRef {
        match self {
            KeyType::Int => Arc::new(Int64Array::from(values.to_vec())),
            KeyType::Double => Arc::new(Float64Array::from(
                values
                    .iter()
                    .map(|v| v.map(|n| n as f64 + 0.5))
                    .collect::<Vec<_>>(),
            )),
            KeyType::Text => Arc::new(StringArray::from(
                values
                    .iter()
                    .map(|v| v.map(|n| format!("k{n}")))
                    .collect::<Vec<_>>(),
            )),
        }
    }

    fn arrow(self) -> DataType {
        match self {
            KeyType::Int => DataType::Int64,
            KeyType::Double => DataType::Float64,
            KeyType::Text => DataType::Utf8,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Interval,
    Window,
}

/// A join of `l` and `r` on the key columns `keys` (named k0, k1, …), `how` inner or left.
fn join(keys: &[KeyType], kind: Kind, how: &str) -> Box<dyn Operator> {
    let columns: String = keys
        .iter()
        .enumerate()
        .map(|(i, t)| format!(r#" column name = "k{i}", type = "{}""#, t.flow()))
        .collect();
    let on = (0..keys.len())
        .map(|i| format!("l.k{i} = r.k{i}"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let kind = match kind {
        Kind::Interval => r#"param kind = "interval" param lower = "-1s" param upper = "1s""#,
        Kind::Window => r#"param kind = "window" param size = "1s""#,
    };
    let src = format!(
        r#"type name = "L" {{ column name = "ts", type = "timestamp"{columns} column name = "v", type = "int" }}
type name = "R" {{ column name = "ts", type = "timestamp"{columns} column name = "w", type = "int" }}
operator name = "gl", type = "generator" {{ output name = "l", type = "L" }}
operator name = "gr", type = "generator" {{ output name = "r", type = "R" }}
operator name = "op", type = "join" {{
  input name = "l" input name = "r" {kind} param how = "{how}"
  param on = "{on}" param left_time = "ts" param right_time = "ts"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator(&src)
}

/// A row: time offset from `T0`, one value per key column (`None` null), and the value.
type Row = (i64, Vec<Option<i64>>, i64);

fn batch(keys: &[KeyType], value: &str, rows: &[Row]) -> RecordBatch {
    let mut fields = vec![Field::new(
        "ts",
        DataType::Timestamp(TimeUnit::Millisecond, None),
        true,
    )];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(TimestampMillisecondArray::from(
        rows.iter().map(|r| T0 + r.0).collect::<Vec<_>>(),
    ))];
    for (i, t) in keys.iter().enumerate() {
        fields.push(Field::new(format!("k{i}"), t.arrow(), true));
        let values: Vec<Option<i64>> = rows.iter().map(|r| r.1[i]).collect();
        columns.push(t.column(&values));
    }
    fields.push(Field::new(value, DataType::Int64, true));
    columns.push(Arc::new(Int64Array::from(
        rows.iter().map(|r| r.2).collect::<Vec<_>>(),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("valid")
}

/// The joined rows as (window start, left value, right value), and whether every row without
/// a right row has nulls in all the right columns.
#[derive(Default)]
struct Collect {
    window: bool,
    rows: Vec<(Option<i64>, i64, Option<i64>)>,
}

impl Collector for Collect {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        assert_eq!(port, 0);
        let schema = b.schema();
        let int = |name: &str| -> Vec<Option<i64>> {
            let c = b.column(schema.index_of(name).expect("a column"));
            if let Some(a) = c.as_any().downcast_ref::<TimestampMillisecondArray>() {
                return a.iter().collect();
            }
            let a = c.as_any().downcast_ref::<Int64Array>().expect("int");
            a.iter().collect()
        };
        let (v, w, rt) = (int("v"), int("w"), int("r_ts"));
        let starts = if self.window {
            int("window_start")
        } else {
            vec![None; b.num_rows()]
        };
        let first_right = schema.index_of("r_ts").expect("the right time");
        for i in 0..b.num_rows() {
            if rt[i].is_none() {
                for c in first_right..b.num_columns() {
                    assert!(
                        b.column(c).is_null(i),
                        "an unpaired left row has nulls on the right: {b:?}"
                    );
                }
            }
            self.rows
                .push((starts[i], v[i].expect("a left value"), w[i]));
        }
        Ok(())
    }
}

/// Runs a join over `arrivals` (side, rows), the end of input last; its sorted results.
fn run(
    keys: &[KeyType],
    kind: Kind,
    how: &str,
    arrivals: &[(usize, Vec<Row>)],
) -> Vec<(Option<i64>, i64, Option<i64>)> {
    let mut op = join(keys, kind, how);
    let mut out = Collect {
        window: matches!(kind, Kind::Window),
        rows: vec![],
    };
    for (side, rows) in arrivals {
        let value = if *side == 0 { "v" } else { "w" };
        op.process_batch(*side, batch(keys, value, rows), &mut out)
            .expect("processes");
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    op.on_end_of_input(&mut out).expect("ends");
    out.rows.sort();
    out.rows
}

/// The key sets to try: one column of each type, and two columns (a string and an int).
fn key_sets() -> Vec<Vec<KeyType>> {
    vec![
        vec![KeyType::Int],
        vec![KeyType::Double],
        vec![KeyType::Text],
        vec![KeyType::Text, KeyType::Int],
    ]
}

/// A key of `n` columns, all `Some(x)`.
fn key(n: usize, x: i64) -> Vec<Option<i64>> {
    vec![Some(x); n]
}

/// The keys of `n` columns with a null in them: all null, and (with two columns or more) one
/// null column in each place.
fn null_keys(n: usize) -> Vec<Vec<Option<i64>>> {
    let mut keys = vec![vec![None; n]];
    if n > 1 {
        for i in 0..n {
            let mut k = key(n, 1);
            k[i] = None;
            keys.push(k);
        }
    }
    keys
}

#[test]
fn an_inner_join_drops_a_row_with_a_null_key_and_a_left_join_gives_it_alone() {
    for keys in key_sets() {
        let n = keys.len();
        let nulls = null_keys(n);
        // Right rows with null keys before and after the left ones, and one pair of key 1.
        let right_before: Vec<Row> = nulls
            .iter()
            .enumerate()
            .map(|(i, k)| (100 + i as i64, k.clone(), 20 + i as i64))
            .collect();
        let left: Vec<Row> = std::iter::once((150, key(n, 1), 1))
            .chain(
                nulls
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (200 + i as i64, k.clone(), 10 + i as i64)),
            )
            .collect();
        let right_after: Vec<Row> = std::iter::once((160, key(n, 1), 99))
            .chain(
                nulls
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (300 + i as i64, k.clone(), 40 + i as i64)),
            )
            .collect();
        let arrivals = vec![(1, right_before), (0, left), (1, right_after)];
        for kind in [Kind::Interval, Kind::Window] {
            let window = match kind {
                Kind::Interval => None,
                Kind::Window => Some(T0 - T0.rem_euclid(1000)),
            };
            assert_eq!(
                run(&keys, kind, "inner", &arrivals),
                vec![(window, 1, Some(99))],
                "{keys:?} {kind:?} inner: only the pair of equal keys that are not null"
            );
            let mut expected = vec![(window, 1, Some(99))];
            expected.extend((0..nulls.len()).map(|i| (window, 10 + i as i64, None)));
            expected.sort();
            assert_eq!(
                run(&keys, kind, "left", &arrivals),
                expected,
                "{keys:?} {kind:?} left: every left row with a null key once, alone"
            );
        }
    }
}

#[test]
fn a_left_row_with_a_null_key_comes_as_it_arrives() {
    for kind in [Kind::Interval, Kind::Window] {
        let keys = [KeyType::Int];
        let mut op = join(&keys, kind, "left");
        let mut out = Collect {
            window: matches!(kind, Kind::Window),
            rows: vec![],
        };
        op.process_batch(
            0,
            batch(&keys, "v", &[(0, vec![None], 7), (1, vec![Some(3)], 8)]),
            &mut out,
        )
        .expect("processes");
        // No partner can come for the null key: it is out before any watermark; the other
        // row waits for one.
        let window = matches!(kind, Kind::Window).then_some(T0 - T0.rem_euclid(1000));
        assert_eq!(out.rows, vec![(window, 7, None)], "{kind:?}");
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("advances");
        out.rows.sort();
        assert_eq!(
            out.rows,
            vec![(window, 7, None), (window, 8, None)],
            "{kind:?}: once"
        );
    }
}

#[test]
fn a_join_keeps_no_state_for_a_null_key() {
    for keys in key_sets() {
        for how in ["inner", "left"] {
            let n = keys.len();
            let mut fresh = join(&keys, Kind::Interval, how);
            let mut op = join(&keys, Kind::Interval, how);
            let mut out = Collect::default();
            for (side, value) in [(0, "v"), (1, "w")] {
                let rows: Vec<Row> = null_keys(n)
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| (i as i64, k, i as i64))
                    .collect();
                op.process_batch(side, batch(&keys, value, &rows), &mut out)
                    .expect("processes");
            }
            let seen = common::checkpoint(&mut op, false);
            let nothing = common::checkpoint(&mut fresh, false);
            assert_eq!(
                seen.bytes, nothing.bytes,
                "{keys:?} {how}: the checkpoint holds rows with null keys"
            );
        }
    }
}
