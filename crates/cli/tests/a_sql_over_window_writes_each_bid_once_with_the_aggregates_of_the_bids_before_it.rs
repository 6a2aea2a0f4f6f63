//! End-to-end: `examples/over.sql` (each bid with the average and highest price of its
//! auction's last three bids, `ROWS BETWEEN 2 PRECEDING AND CURRENT ROW`) run one row per
//! batch over `data/bids.csv` writes every bid once, against its golden file, and equal to a
//! naive recomputation: per auction, the bids in event-time order (bid 10's at :00.5 comes
//! after one at :01.0 but within the watermark's delay, so it counts, first). A `RANGE` frame
//! counts the bids of the half second up to each, peers of equal time included. An OVER
//! window over an updating stream (a LEFT join) is updating too: an append-only sink is
//! refused naming the join, a changelog sink takes it.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin, anduin_ok, assert_golden, golden, repo};

/// `data/bids.csv` as `(ts, auction, bidder, price)`, in order.
fn bids() -> Vec<[i64; 4]> {
    let text = std::fs::read_to_string(repo().join("data/bids.csv")).expect("input");
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Vec<i64> = l.split(',').map(|c| c.parse().expect("an int")).collect();
            [v[0], v[1], v[2], v[3]]
        })
        .collect()
}

/// Per auction, its bids in event-time order (of equal times, in arrival order).
fn per_auction() -> BTreeMap<i64, Vec<[i64; 4]>> {
    let mut per: BTreeMap<i64, Vec<[i64; 4]>> = BTreeMap::new();
    for b in bids() {
        per.entry(b[1]).or_default().push(b);
    }
    for bs in per.values_mut() {
        bs.sort_by_key(|b| b[0]);
    }
    per
}

/// Runs `query` (a file of the repository, or SQL text) one row per batch; its output.
fn run(query: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = if query.ends_with(".sql") {
        repo().join(query)
    } else {
        let p = dir.path().join("q.sql");
        std::fs::write(&p, query).expect("query");
        p
    };
    let out = dir.path().join("out.csv");
    anduin_ok(
        &repo(),
        &[
            "run",
            path.to_str().expect("utf-8"),
            "--var",
            "INPUT=data/bids.csv",
            "--var",
            &format!("OUTPUT={}", out.display()),
            "--batch-size",
            "1",
        ],
    );
    std::fs::read_to_string(&out).expect("output")
}

fn sorted_rows(written: &str) -> Vec<String> {
    let mut rows: Vec<String> = written.lines().skip(1).map(str::to_string).collect();
    rows.sort();
    rows
}

#[test]
fn each_bid_comes_once_with_the_average_and_highest_of_its_auction_s_last_three() {
    let written = run("examples/over.sql");
    assert_golden(&golden().join("outputs/over.rows.csv"), &written);
    let mut expected = Vec::new();
    for bs in per_auction().values() {
        for (i, b) in bs.iter().enumerate() {
            let frame = &bs[i.saturating_sub(2)..=i];
            let sum: i64 = frame.iter().map(|f| f[3]).sum();
            let max = frame.iter().map(|f| f[3]).max().expect("a row");
            let avg = sum as f64 / frame.len() as f64;
            expected.push(format!("{},{},{},{},{avg:?},{max}", b[0], b[1], b[2], b[3]));
        }
    }
    expected.sort();
    assert_eq!(sorted_rows(&written), expected);
    assert_eq!(written.lines().count(), bids().len() + 1, "every bid once");
}

#[test]
fn a_range_frame_counts_the_bids_of_the_half_second_up_to_each() {
    let written = run("CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE counts WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO counts
SELECT b.auction, b.ts,
  COUNT(*) OVER (PARTITION BY b.auction ORDER BY b.ts RANGE BETWEEN INTERVAL '500' MILLISECOND PRECEDING AND CURRENT ROW) AS n,
  SUM(b.price) OVER (PARTITION BY b.auction ORDER BY b.ts RANGE BETWEEN INTERVAL '500' MILLISECOND PRECEDING AND CURRENT ROW) AS total
FROM bids AS b WHERE b.price > 1;");
    let mut expected = Vec::new();
    for bs in per_auction().values() {
        let bs: Vec<&[i64; 4]> = bs.iter().filter(|b| b[3] > 1).collect();
        for b in &bs {
            let frame: Vec<_> = bs
                .iter()
                .filter(|f| f[0] <= b[0] && f[0] >= b[0] - 500)
                .collect();
            let total: i64 = frame.iter().map(|f| f[3]).sum();
            expected.push(format!("{},{},{},{total}", b[1], b[0], frame.len()));
        }
    }
    expected.sort();
    assert_eq!(sorted_rows(&written), expected);
}

#[test]
fn an_over_window_over_an_updating_stream_is_updating_and_needs_a_changelog_sink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("q.sql");
    let query = |mode: &str| {
        format!(
            "CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = 'data/bids.csv', event_time = 'ts');
CREATE TABLE people (ts TIMESTAMP, id BIGINT, name VARCHAR)
WITH (connector = 'file', path = 'data/bids.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'o.csv'{mode});
INSERT INTO out
SELECT j.bidder, COUNT(*) OVER (PARTITION BY j.bidder ORDER BY j.ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS n
FROM (SELECT b.ts, b.bidder, p.name FROM bids b LEFT JOIN people p ON b.bidder = p.id) j;"
        )
    };
    std::fs::write(&q, query("")).expect("query");
    let out = anduin(&repo(), &["check", q.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "refused: {err}");
    assert!(
        err.contains("cannot take the updating stream") && err.contains("(regular_join)"),
        "{err}"
    );
    std::fs::write(&q, query(", mode = 'changelog'")).expect("query");
    let out = anduin(&repo(), &["check", q.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}
