//! Issue 18 (H2): ALL ROWS PER MATCH's measures grow their running aggregates row by row and
//! compute a `FINAL` one once per match, instead of walking the match at every row output.

use anduin_operator_api::Operator;
use anduin_types::Watermark;

use super::super::eval::rows_walked;
use super::test_op::{batch, pattern, Event, Seen};

#[test]
fn all_rows_per_match_computes_running_measures_row_by_row_and_final_ones_once() {
    let n = 1_000i64;
    // One sensor; values 0..10 repeating, the last row -1 ends the match.
    let rows: Vec<(i64, i64, i64)> = (0..n)
        .map(|i| (i, 1, if i + 1 == n { -1 } else { i % 10 }))
        .collect();
    let mut op = pattern(
        r#"  param pattern = "A+ B"
  param define = "A AS value >= 0, B AS value < 0"
  param rows_per_match = "all"
  param measures = "FINAL count(DISTINCT value) AS fd, count(DISTINCT value) AS d, CAST(avg(value) * 10 AS BIGINT) AS a, FINAL sum(value) AS fs""#,
    );
    let mut out = Seen::default();
    let before = rows_walked();
    op.process_batch(0, batch(&rows), &mut out).expect("rows");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("the end");
    op.on_end_of_input(&mut out).expect("the end");
    let walked = rows_walked() - before;
    let rows: Vec<&Vec<Option<i64>>> = out
        .0
        .iter()
        .filter_map(|e| match e {
            Event::Row(0, r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rows.len() as i64, n);
    // ts, sensor, value, then fd, d, a, fs.
    let total: i64 = (0..n - 1).map(|i| i % 10).sum::<i64>() - 1;
    assert_eq!(rows[0][3..], [Some(11), Some(1), Some(0), Some(total)]);
    assert_eq!(rows[4][3..], [Some(11), Some(5), Some(20), Some(total)]);
    assert_eq!(rows[(n - 1) as usize][4], Some(11));
    // The two FINAL aggregates walk the match once each; the running ones never.
    assert_eq!(walked, 2 * n as u64, "rows walked by the aggregates");
}
