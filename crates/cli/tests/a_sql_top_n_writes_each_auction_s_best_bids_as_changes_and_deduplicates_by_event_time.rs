//! End-to-end: `examples/top_n.sql` (each auction's two highest bids, `ROW_NUMBER() … WHERE
//! rn <= 2`) run one row per batch over `data/bids.csv` writes every change of the ranks as a
//! changelog, against its golden file, folding to the naive top two of the input. The same
//! bids deduplicated per bidder by event time: keeping the first (`ORDER BY ts`, `rn = 1`)
//! writes each bidder's earliest bid once, append-only, though a bid earlier than one seen
//! comes later (within the watermark's delay); keeping the last (`ORDER BY ts DESC`) writes
//! upserts by bidder that end at each bidder's latest bid. The auctions ranked by their count
//! of bids (`ORDER BY COUNT(*) DESC` in the OVER of a GROUP BY) fold to the naive ranking.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, assert_golden, fold_changes, golden, repo};

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

/// A changelog (`op,…` lines after a header) folded into a multiset of rows.
fn folded(changelog: &str) -> BTreeMap<String, usize> {
    let mut rows: BTreeMap<String, usize> = BTreeMap::new();
    for line in changelog.lines().skip(1) {
        let (op, row) = line.split_once(',').expect("an op");
        if op.starts_with('+') {
            *rows.entry(row.to_string()).or_default() += 1;
        } else {
            let n = rows
                .get_mut(row)
                .unwrap_or_else(|| panic!("{line} retracts no row"));
            *n -= 1;
            if *n == 0 {
                rows.remove(row);
            }
        }
    }
    rows
}

#[test]
fn the_best_two_bids_of_each_auction_change_rank_by_rank_and_fold_to_the_naive_top_two() {
    let written = run("examples/top_n.sql");
    assert_golden(&golden().join("outputs/top_n.changelog.csv"), &written);
    assert!(written.contains("\n-U,"), "a rank changes its bid");
    // Independently of the golden file: per auction, the bids by price, highest first (of
    // equal prices the earlier), the first two with their rank.
    let mut per: BTreeMap<i64, Vec<[i64; 4]>> = BTreeMap::new();
    for b in bids() {
        per.entry(b[1]).or_default().push(b);
    }
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    for (auction, mut bs) in per {
        bs.sort_by_key(|b| std::cmp::Reverse(b[3]));
        for (i, b) in bs.iter().take(2).enumerate() {
            expected.insert(format!("{auction},{},{},{}", b[2], b[3], i + 1), 1);
        }
    }
    assert_eq!(folded(&written), expected);
}

const DEDUP: &str = "CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE per_bidder WITH (connector = 'file', path = '${OUTPUT}'MODE);
INSERT INTO per_bidder
SELECT bidder, auction, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DIRECTION) AS n FROM bids)
WHERE n = 1;";

#[test]
fn keeping_the_first_bid_of_each_bidder_writes_its_earliest_once_though_it_came_late() {
    let written = run(&DEDUP.replace("MODE", "").replace("DIRECTION", "ASC"));
    assert_golden(&golden().join("outputs/top_n.first.csv"), &written);
    let mut first: BTreeMap<i64, [i64; 4]> = BTreeMap::new();
    for b in bids() {
        let held = first.entry(b[2]).or_insert(b);
        if b[0] < held[0] {
            *held = b;
        }
    }
    let mut expected: Vec<String> = first
        .values()
        .map(|b| format!("{},{},{}", b[2], b[1], b[3]))
        .collect();
    expected.sort();
    let mut got: Vec<String> = written.lines().skip(1).map(str::to_string).collect();
    got.sort();
    assert_eq!(got, expected, "each bidder once, at its earliest bid");
    assert!(
        got.contains(&"10,1,4".to_string()),
        "the late earlier bid wins"
    );
}

#[test]
fn keeping_the_last_bid_of_each_bidder_writes_upserts_that_end_at_its_latest() {
    let written = run(&DEDUP
        .replace("MODE", ", mode = 'upsert', primary_key = 'bidder'")
        .replace("DIRECTION", "DESC"));
    assert_golden(&golden().join("outputs/top_n.last.csv"), &written);
    let mut last: BTreeMap<i64, [i64; 4]> = BTreeMap::new();
    for b in bids() {
        let held = last.entry(b[2]).or_insert(b);
        if b[0] >= held[0] {
            *held = b;
        }
    }
    let expected: BTreeMap<String, String> = last
        .values()
        .map(|b| (b[2].to_string(), format!("{},{},{}", b[2], b[1], b[3])))
        .collect();
    let rows: Vec<String> = written.lines().skip(1).map(str::to_string).collect();
    assert_eq!(
        fold_changes(rows.iter().map(String::as_str), true),
        expected
    );
}

#[test]
fn the_auctions_ranked_by_their_count_of_bids_fold_to_the_naive_top_two() {
    // A top-N over aggregated results (Nexmark's hot items): ordered by an aggregate of the
    // GROUP BY, which the query does not select.
    let written = run(
        "CREATE TABLE bids (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE hot WITH (connector = 'file', path = '${OUTPUT}', mode = 'changelog');
INSERT INTO hot
SELECT auction, rn FROM (
  SELECT auction, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, auction) AS rn
  FROM bids GROUP BY auction)
WHERE rn <= 2;",
    );
    assert!(written.starts_with("op,auction,rn\n"), "{written}");
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for b in bids() {
        *counts.entry(b[1]).or_default() += 1;
    }
    let mut ranked: Vec<(i64, i64)> = counts.into_iter().collect();
    ranked.sort_by_key(|(auction, n)| (std::cmp::Reverse(*n), *auction));
    let expected: BTreeMap<String, usize> = ranked
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, (auction, _))| (format!("{auction},{}", i + 1), 1))
        .collect();
    assert_eq!(folded(&written), expected, "{written}");
}
