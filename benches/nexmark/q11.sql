-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 11: User Sessions (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- How many bids did a user make in each session they were active? Each bidder's bids grouped
-- into sessions that end after 10 seconds without a bid (a SESSION window per bidder), and
-- the number of bids of each session, with its start and end (the end is the last bid's time
-- plus the gap, as in Flink).
-- No departure from the original text: Flink's legacy group window `GROUP BY B.bidder,
-- SESSION(B.dateTime, INTERVAL '10' SECOND)`, with `SESSION_START` and `SESSION_END`, is the window
-- table function `SESSION(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)` grouped by
-- `bidder, window_start, window_end`, as anduin lowers it.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q11.sql.
--
-- Run:   anduin run benches/nexmark/q11.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q11.csv
-- Bench: anduin bench nexmark --query q11 --events 10000000 --rate 1000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q11 (
  bidder  BIGINT,
  bid_count  BIGINT,
  starttime  TIMESTAMP,
  endtime  TIMESTAMP
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q11
SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
