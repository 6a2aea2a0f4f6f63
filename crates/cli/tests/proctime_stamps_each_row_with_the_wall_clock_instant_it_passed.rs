//! `PROCTIME()`, as Flink's: the wall-clock instant at which a row is evaluated, as a
//! timestamp. Every row of a run is stamped with an instant between the run's start and its
//! end, in SQL and in `.flow`, and a query that compares it still runs.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::common;

use common::{anduin_ok, output_rows};

fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(d.as_millis()).expect("fits")
}

#[test]
fn proctime_stamps_each_row_with_the_wall_clock_instant_it_passed() {
    let work = tempfile::tempdir().expect("tempdir");
    let mut input = String::from("ts,sensor,value\n");
    for i in 0..2000 {
        input.push_str(&format!(
            "{},{},{}\n",
            1_700_000_000_000i64 + i,
            i % 7,
            i % 100
        ));
    }
    std::fs::write(work.path().join("in.csv"), input).expect("input");
    std::fs::write(
        work.path().join("q.sql"),
        "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
         WITH (connector = 'file', path = 'in.csv');
         CREATE TABLE stamped WITH (connector = 'file', path = 'out.csv');
         INSERT INTO stamped
         SELECT sensor, CAST(PROCTIME() AS BIGINT) AS seen_ms, PROCTIME() AS seen
         FROM events WHERE value < 42 AND PROCTIME() > TIMESTAMP '2020-01-01 00:00:00';",
    )
    .expect("query");
    let before = now_ms();
    anduin_ok(work.path(), &["run", "q.sql"]);
    let after = now_ms();
    let rows = output_rows(&work.path().join("out.csv"));
    assert_eq!(rows.len(), 2000 * 42 / 100, "{:?}", rows.first());
    for row in &rows {
        // The number and the timestamp (written as a CSV timestamp is: epoch milliseconds).
        for column in [1, 2] {
            let ms: i64 = row
                .split(',')
                .nth(column)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("milliseconds in column {column}: {row}"));
            assert!(
                (before..=after).contains(&ms),
                "{ms} is not within the run, {before}..={after}: {row}"
            );
        }
    }
}
