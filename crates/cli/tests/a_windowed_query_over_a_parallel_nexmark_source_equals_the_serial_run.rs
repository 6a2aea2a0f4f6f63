//! Keyed and global windows over a `nexmark` source run as several instances give exactly the
//! serial run's results: the instances' rows reach a single window instance (every source
//! instance feeds it) or parallel window instances (hashed by key), and the watermark, the
//! smallest over the source instances, never makes a row late.

use crate::common;

use common::{anduin_ok, sorted_rows};

const QUERY: &str = r#"
operator name = "bids", type = "nexmark" {
  param events = 60000
  param seed = 3
  param event_time = "dateTime"
  param parallelism = "${SOURCE}"
  output name = "bid"
}
operator name = "per_auction", type = "window" {
  input name = "bid"
  param kind = "tumbling"
  param size = "500ms"
  param time = "dateTime"
  param keys = "auction"
  param aggregates = "COUNT(*) AS n, MAX(price) AS top, SUM(bidder) AS bidders"
  param parallelism = "${WINDOW}"
  output name = "by_auction"
}
operator name = "by_auction_out", type = "writer" {
  input name = "by_auction"
  param path = "by_auction-${SOURCE}-${WINDOW}.csv"
}
operator name = "everything", type = "window" {
  input name = "bid"
  param kind = "sliding"
  param size = "1s"
  param slide = "250ms"
  param time = "dateTime"
  param aggregates = "COUNT(*) AS n, MIN(price) AS low, MAX(auction) AS newest"
  output name = "totals"
}
operator name = "totals_out", type = "writer" {
  input name = "totals"
  param path = "totals-${SOURCE}-${WINDOW}.csv"
}
"#;

/// The sorted rows of both windows with the source and the keyed window at these
/// parallelisms.
fn run(dir: &std::path::Path, source: usize, window: usize) -> (Vec<String>, Vec<String>) {
    let (s, w) = (format!("SOURCE={source}"), format!("WINDOW={window}"));
    anduin_ok(dir, &["run", "q.flow", "-q", "--var", &s, "--var", &w]);
    let read = |name: &str| {
        let path = dir.join(format!("{name}-{source}-{window}.csv"));
        sorted_rows(&std::fs::read_to_string(path).expect("an output"))
    };
    (read("by_auction"), read("totals"))
}

#[test]
fn a_windowed_query_over_a_parallel_nexmark_source_equals_the_serial_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let (by_auction, totals) = run(dir.path(), 1, 1);
    assert!(by_auction.len() > 1000, "{} keyed rows", by_auction.len());
    assert!(totals.len() > 20, "{} global rows", totals.len());
    for (source, window) in [(2, 1), (2, 2), (3, 2)] {
        let (k, g) = run(dir.path(), source, window);
        assert!(
            k == by_auction,
            "keyed windows, source at {source}, window at {window}: {} rows, serial {}",
            k.len(),
            by_auction.len()
        );
        assert!(
            g == totals,
            "global windows, source at {source}, window at {window}: {} rows, serial {}",
            g.len(),
            totals.len()
        );
    }
}
