-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 13: Bounded Side Input Join (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Every bid enriched with the value of its auction's row in a bounded side table (keyed by
-- the auction id modulo 10 000): stream enrichment.
-- nexmark-flink reads the side table from a file, `side_input.txt` (10 000 rows `i,i`, made by
-- its `side_input_gen.sh`), in a lookup join at processing time (`JOIN side_input FOR
-- SYSTEM_TIME AS OF B.p_time`), which anduin refuses (no temporal or lookup joins).
-- Departures from the original text: the join is a regular join (no time condition): every
-- bid and every side row is kept for as long as the query runs (the state grows with the
-- bids), and a bid meets its side row whichever of the two came first; since the side table
-- does not change, its result is the lookup join's. The side table is generated in the query,
-- the same 10 000 rows: a `generator` table whose row i has the timestamp i ms, whose key is
-- that number and whose value is its text. `mod(B.auction, 10000)` is computed as a column
-- of a subquery, since a join's keys are columns.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q13.sql.
--
-- Run:   anduin run benches/nexmark/q13.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q13.csv
-- Bench: anduin bench nexmark --query q13 --events 10000000 --rate 1000000   (the sink becomes a discard)
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

-- nexmark-flink's side_input.txt: rows 0 … 9 999, the key and its text.
CREATE TABLE side_rows (
  n  TIMESTAMP
) WITH (
  connector = 'generator',
  count = '10000',
  start_ts = '0',
  ts_step = '1ms'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP,
  value  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.value
FROM (SELECT auction, bidder, price, dateTime, mod(auction, 10000) AS side_key FROM bid) AS B
JOIN (
    SELECT CAST(n AS BIGINT) AS key, CAST(CAST(n AS BIGINT) AS VARCHAR) AS value FROM side_rows
) AS S
ON B.side_key = S.key;
