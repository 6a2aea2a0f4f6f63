//! The CEP queries of the nexmark benchmark (`queries-cep`: q0 `START_ROW PRICE_DOWN+
//! PRICE_UP` skipping to the last PRICE_UP, q1/q2 `A+ B` with a running `AVG(A.price)` under
//! skip past last row and skip to next row, q3 `A B* C` within 5 s) as `pattern` operators over
//! hand-made bid sequences, with the expected matches worked out by hand in the comments.

use crate::common;

use common::anduin_ok;

const BID: &str = r#"
type name = "Bid" {
  column name = "dateTime", type = "timestamp"
  column name = "auction", type = "int"
  column name = "bidder", type = "int"
  column name = "price", type = "int"
}
operator name = "bids", type = "reader" {
  param path = "bids.csv"
  param event_time = "dateTime"
  output name = "bids", type = "Bid"
}
operator name = "out", type = "writer" {
  input name = "matches"
  param path = "out.csv"
}
"#;

/// Runs `pattern` (an operator reading `bids` and writing `matches`, plus `extra` operators)
/// over `bids` (CSV lines `dateTime,auction,bidder,price`) and returns the output's lines
/// without the header, sorted.
fn run(pattern: &str, extra: &str, bids: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("bids.csv"),
        format!("dateTime,auction,bidder,price\n{bids}"),
    )
    .expect("bids");
    std::fs::write(dir.path().join("q.flow"), format!("{BID}{pattern}{extra}")).expect("query");
    anduin_ok(dir.path(), &["run", "q.flow", "-q"]);
    lines(&dir.path().join("out.csv"))
}

fn lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("output");
    let mut rows: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    rows.sort();
    rows
}

#[test]
fn q0_finds_falling_runs_closed_by_a_rise_above_the_second_to_last_fall() {
    let q0 = r#"
operator name = "q0", type = "pattern" {
  input name = "bids"
  param partition_by = "auction, bidder"
  param order_by = "dateTime"
  param pattern = "START_ROW PRICE_DOWN+ PRICE_UP"
  param define = "PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1)"
  param define = "PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)"
  param measures = "START_ROW.dateTime AS start_tstamp, LAST(PRICE_DOWN.dateTime) AS bottom_tstamp, LAST(PRICE_UP.dateTime) AS end_tstamp"
  param after_match = "skip to last PRICE_UP"
  output name = "matches"
}
"#;
    // (1, 10): 100 | 90 80 | 95 (95 > 90, the fall before the last) and, from the PRICE_UP
    // row on, 95 | 94 93 | 96. (1, 11): 50 | 40 | 45 has only one fall, so LAST(…, 1) is NULL
    // and 45 is no PRICE_UP.
    let bids = "1,1,10,100\n2,1,10,90\n3,1,11,50\n4,1,10,80\n5,1,11,40\n6,1,10,95\n\
                7,1,11,45\n8,1,10,94\n9,1,10,93\n10,1,10,96\n";
    assert_eq!(
        run(q0, "", bids),
        ["1,10,1,4,6", "1,10,6,9,10"],
        "auction,bidder,start,bottom,end"
    );
}

fn q1(after_match: &str) -> String {
    format!(
        r#"
operator name = "q1", type = "pattern" {{
  input name = "bids"
  param partition_by = "auction"
  param order_by = "dateTime"
  param pattern = "A+ B"
  param define = "A AS AVG(A.price) < 10000, B AS B.price >= 10000"
  param measures = "FIRST(A.dateTime) AS first_a, B.dateTime AS b_ts, COUNT(A.*) AS n, AVG(A.price) AS avg_a"
  param after_match = "{after_match}"
  output name = "matches"
}}
"#
    )
}

/// Auction 2: 5000 6000 20000 3000 4000 15000 9000 at times 1..7.
const Q1_BIDS: &str = "1,2,1,5000\n2,2,1,6000\n3,2,1,20000\n4,2,1,3000\n5,2,1,4000\n\
                       6,2,1,15000\n7,2,1,9000\n";

#[test]
fn q1_takes_the_longest_cheap_run_before_a_big_bid_and_skips_past_it() {
    // From 1: A 5000, 6000 (avg 5500), then 20000 would lift the average to 10333, so it is
    // the B. From 4: A 3000, 4000; 15000 keeps the average at 7333, so the greedy A+ tries it
    // as an A too, and 9000 as well (7750), but then the input ends without a B: the run
    // backtracks to A 3000 4000, B 15000. From 7: 9000 and no B.
    assert_eq!(
        run(&q1("skip past last row"), "", Q1_BIDS),
        ["2,1,3,2,5500.0", "2,4,6,2,3500.0"],
        "auction,first_a,b_ts,n,avg_a"
    );
}

#[test]
fn q2_is_q1_skipping_to_the_next_row_so_matches_overlap() {
    // Every start row: 1 → A A B (1..3); 2 → A 6000, B 20000; 3 → 20000 is no A; 4 → A A B
    // (4..6); 5 → A 4000, B 15000 (the longer A run never meets a B); 6 → 15000 is no A;
    // 7 → no B.
    assert_eq!(
        run(&q1("skip to next row"), "", Q1_BIDS),
        [
            "2,1,3,2,5500.0",
            "2,2,3,1,6000.0",
            "2,4,6,2,3500.0",
            "2,5,6,1,4000.0"
        ],
        "auction,first_a,b_ts,n,avg_a"
    );
}

#[test]
fn q3_matches_within_5_seconds_and_sends_expired_partial_matches_aside() {
    let q3 = r#"
operator name = "q3", type = "pattern" {
  input name = "bids"
  param partition_by = "auction"
  param order_by = "dateTime"
  param pattern = "A B* C"
  param define = "A AS A.price >= 10000, B AS B.price < A.price, C AS C.price > A.price"
  param measures = "A.dateTime AS a_ts, C.dateTime AS c_ts, COUNT(B.*) AS b_cnt"
  param within = "5s"
  param timeout_output = "expired"
  output name = "matches"
  output name = "expired"
}
"#;
    let expired = r#"
operator name = "outExpired", type = "writer" {
  input name = "expired"
  param path = "expired.csv"
}
"#;
    // Auction 3 at seconds 0, 1, 2, 7, 8, 9: 12000 11000 10500 13000 12500 14000. 13000 at 7 s
    // would close the runs from 0, 1 and 2, but it is 7, 6 and 5 s after them (a row belongs to
    // a match only while it is less than 5 s after the first): those three expire, each with
    // its B rows so far. From 7: A 13000, B 12500, C 14000.
    let bids = "0,3,1,12000\n1000,3,1,11000\n2000,3,1,10500\n7000,3,1,13000\n\
                8000,3,1,12500\n9000,3,1,14000\n";
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("bids.csv"),
        format!("dateTime,auction,bidder,price\n{bids}"),
    )
    .expect("bids");
    std::fs::write(dir.path().join("q.flow"), format!("{BID}{q3}{expired}")).expect("query");
    anduin_ok(dir.path(), &["run", "q.flow", "-q"]);
    assert_eq!(lines(&dir.path().join("out.csv")), ["3,7000,9000,1"]);
    assert_eq!(
        lines(&dir.path().join("expired.csv")),
        ["3,0,,2", "3,1000,,1", "3,2000,,0"]
    );
}
