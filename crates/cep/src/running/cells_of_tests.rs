//! A row keeps only the input columns something reads (the order, the partition, the
//! tie-breakers, the conditions and the measures) when no row is shown whole: the compiled
//! expressions, the partition, the event time and the tie-breakers count among those cells.
//! The rows emitted are those of a pattern that keeps every column (one with a measure that
//! can fail, whose dead letters show the row whole).

use std::sync::Arc;

use anduin_operator_api::{BuildContext, Collector, Operator, OperatorError};
use anduin_spec::OperatorDef;
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::super::compile;
use super::PatternOp;

/// A note nothing reads, the event time, a value, an extra int nothing reads, the sensor,
/// a sequence number (a tie-breaker).
fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("note", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
        Field::new("extra", DataType::Int64, true),
        Field::new("sensor", DataType::Int64, true),
        Field::new("seq", DataType::Int64, true),
    ]))
}

/// Rows (ts, value, sensor, seq).
fn batch(rows: &[(i64, i64, i64, i64)]) -> RecordBatch {
    let col = |f: fn(&(i64, i64, i64, i64)) -> i64| -> Arc<dyn Array> {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
    };
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|_| "n"))),
            col(|r| r.0),
            col(|r| r.1),
            col(|r| r.1 * 1000),
            col(|r| r.2),
            col(|r| r.3),
        ],
    )
    .expect("valid")
}

fn def(measures: &str) -> OperatorDef {
    let src = format!(
        r#"operator name = "p", type = "pattern" {{
  input name = "s"
  param partition_by = "sensor"
  param order_by = "ts, seq DESC"
  param pattern = "UP+ DOWN"
  param define = "UP AS value > 50 AND (COUNT(UP.*) = 1 OR UP.value >= PREV(UP.value)), DOWN AS value < 30 AND LAST(UP.value) > 55"
  param measures = "{measures}"
  output name = "m"
}}
"#
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    spec.operators.into_iter().next().expect("one operator")
}

/// The rows an operator emits, as integer cells (a null as `None`); the other tests of the
/// pattern operator collect with it too.
#[derive(Default)]
pub(super) struct Ints(pub(super) Vec<Vec<Option<i64>>>);

impl Collector for Ints {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        for r in 0..b.num_rows() {
            self.0.push(
                b.columns()
                    .iter()
                    .map(|c| {
                        let c = c.as_any().downcast_ref::<Int64Array>().expect("ints");
                        (!c.is_null(r)).then(|| c.value(r))
                    })
                    .collect(),
            );
        }
        Ok(())
    }
}

const MEASURES: &str = "FIRST(UP.ts) AS up_ts, LAST(UP.value) AS top, DOWN.ts AS down_ts, FIRST(UP.seq) AS seq, NEXT(value) AS nxt";

#[test]
fn rows_keep_only_the_columns_read_and_match_as_whole_rows_do() {
    let lean = compile(&def(MEASURES), &[("s", schema())]).expect("compiles");
    // ts, value, sensor, seq: not the note nor the extra column.
    assert_eq!(lean.cells_of, [1, 2, 4, 5]);
    assert_eq!(
        (lean.order_cell, lean.partition_cells.as_slice()),
        (0, &[2][..])
    );
    // A measure that can overflow: a row it fails on goes to the dead letters whole (the
    // columns nothing reads last: a row taken without ending a match goes without them).
    let whole = compile(
        &def(&format!("{MEASURES}, value + 1 AS v1")),
        &[("s", schema())],
    )
    .expect("compiles");
    assert_eq!(whole.cells_of, [1, 2, 4, 5, 0, 3]);
    assert_eq!(whole.shed, [4, 5]);
    let rows = [
        (1, 60, 1, 2),
        (1, 70, 1, 1),
        (2, 80, 2, 0),
        (3, 20, 1, 0),
        (4, 90, 2, 0),
        (5, 10, 2, 0),
        (5, 60, 1, 0),
        (6, 61, 1, 0),
        (7, 5, 1, 0),
    ];
    let run = |setup| {
        let mut op = PatternOp::new(Arc::new(setup), &BuildContext::default()).expect("builds");
        let mut out = Ints::default();
        for r in rows {
            op.process_batch(0, batch(&[r]), &mut out)
                .expect("takes the row");
            op.handle_watermark(Watermark(r.0), &mut out)
                .expect("takes the watermark");
        }
        op.on_end_of_input(&mut out).expect("ends");
        out.0.sort();
        out.0
    };
    let got = run(lean);
    let reference: Vec<Vec<Option<i64>>> = run(whole)
        .into_iter()
        .map(|mut r| {
            r.pop();
            r
        })
        .collect();
    assert_eq!(got, reference);
    // Sensor 1 (ts 1 seq 2 before seq 1: DESC): 60 70 rise, 20 falls; 60 61 rise, 5 falls.
    // Sensor 2: 80 90 rise, 10 falls. Columns: sensor, up_ts, top, down_ts, seq, nxt.
    assert_eq!(
        got,
        [
            vec![Some(1), Some(1), Some(70), Some(3), Some(2), None],
            vec![Some(1), Some(5), Some(61), Some(7), Some(0), None],
            vec![Some(2), Some(2), Some(90), Some(5), Some(0), None],
        ]
    );
}

#[test]
fn a_checkpoint_whose_rows_hold_other_columns_is_refused_not_misread() {
    use super::rows_fit;
    // Written before rows kept only the columns read: every column.
    assert!(rows_fit(None, &[0, 1, 2], 3).is_ok());
    let why = rows_fit(None, &[0, 2], 3).expect_err("rows of 3 columns read as rows of 2");
    assert!(why.contains("another version of anduin"), "{why}");
    assert!(rows_fit(Some(&[0, 2]), &[0, 2], 3).is_ok());
    assert!(rows_fit(Some(&[0, 1]), &[0, 2], 3).is_err());
}
