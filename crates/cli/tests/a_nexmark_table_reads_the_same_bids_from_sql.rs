//! A `'nexmark'` table in SQL reads the same bids as the `nexmark` operator of
//! `examples/nexmark_bids.flow`: Nexmark's q2 (`WHERE auction % 123 = 0`) over the table gives
//! exactly the example's bids with such an auction.

use crate::common;

use common::{anduin_ok, repo};

const Q2: &str = "
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR)
WITH (connector = 'nexmark', events = '50000', event_time = 'dateTime');
CREATE TABLE out WITH (connector = 'file', path = 'q2.csv');
INSERT INTO out SELECT auction, price FROM bid WHERE auction % 123 = 0;
";

#[test]
fn nexmark_q2_over_a_sql_table_keeps_exactly_the_bids_of_every_123rd_auction() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q2.sql"), Q2).expect("script");
    anduin_ok(dir.path(), &["run", "q2.sql", "-q"]);
    let flow = repo().join("examples/nexmark_bids.flow");
    anduin_ok(
        dir.path(),
        &[
            "run",
            flow.to_str().expect("utf-8"),
            "--var",
            "EVENTS=50000",
            "--var",
            "OUTPUT=bids.csv",
            "-q",
        ],
    );
    let bids = std::fs::read_to_string(dir.path().join("bids.csv")).expect("bids");
    let mut lines = bids.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).expect("column");
    let (auction, price) = (col("auction"), col("price"));
    let expected: Vec<String> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[auction].parse::<i64>().expect("an auction id") % 123 == 0)
        .map(|f| format!("{},{}", f[auction], f[price]))
        .collect();
    let got = std::fs::read_to_string(dir.path().join("q2.csv")).expect("q2 output");
    let got: Vec<String> = got.lines().skip(1).map(str::to_string).collect();
    assert!(!expected.is_empty(), "some auctions are multiples of 123");
    assert_eq!(got, expected);
}
