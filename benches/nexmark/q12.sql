-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 12: Processing Time Windows (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- How many bids does a user make within a fixed processing time limit? Each bidder's bids
-- grouped into tumbling windows of 10 seconds of processing time (the wall clock at which
-- the window processes them, not the bids' own times), and the number of bids of each.
-- No departure from the original text: the view `B` adds `p_time`, computed as PROCTIME(),
-- and the window's DESCRIPTOR names it. The result is nondeterministic, as in Flink: which
-- window a bid lands in depends on when it is processed (a fast run puts every bid in one
-- or two windows); only each bidder's total over all windows is fixed. See docs/sql.md,
-- "Processing-time windows", for what a checkpoint and a recovery do to them.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q12.sql.
--
-- Run:   anduin run benches/nexmark/q12.sql --var EVENTS=100000 --var OUTPUT=q12.csv
-- Bench: anduin bench nexmark --query q12 --events 10000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default /dev/null).
-- -------------------------------------------------------------------------------------------------

CREATE TABLE bid (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  url  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'nexmark',
  events = '${EVENTS:-10000000}',
  rate = '${RATE:-10000000}',
  seed = '${SEED:-42}',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

CREATE TABLE nexmark_q12 (
  bidder  BIGINT,
  bid_count  BIGINT,
  starttime  TIMESTAMP,
  endtime  TIMESTAMP
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;

INSERT INTO nexmark_q12
SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
