-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 13: Bounded Side Input Join (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Every bid enriched with the value of its auction's row in a bounded side table (keyed by
-- the auction id modulo 10 000): stream enrichment, a lookup join (`JOIN side_input FOR
-- SYSTEM_TIME AS OF B.p_time`) as nexmark-flink writes it. The side table is read once, to
-- its end, before any bid is joined, and kept by key; the bids are not kept (docs/sql.md,
-- "Lookup joins").
-- The side table is nexmark-flink's `side_input.txt` (10 000 rows `i,i`, made by its
-- `side_input_gen.sh`), here benches/nexmark/side_input.txt.
-- Departures from the original text: the side table is declared with anduin's options
-- (connector 'file', `header = 'false'`) instead of Flink's legacy `connector.type`
-- ones, its path a variable (SIDE_INPUT, relative to where anduin runs); `mod(B.auction,
-- 10000)` is computed as a column of the subquery (`side_key`), since a join's keys are
-- columns.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q13.sql.
--
-- Run:   anduin run benches/nexmark/q13.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q13.csv
-- Bench: anduin bench nexmark --query q13 --events 10000000 --rate 1000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default
--        /dev/null), SIDE_INPUT (default benches/nexmark/side_input.txt: run from the
--        repository's root, or give its path; `anduin bench nexmark` sets it to the
--        side_input.txt beside the query file, wherever it runs).
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
CREATE TABLE side_input (
  key  BIGINT,
  value  VARCHAR
) WITH (
  connector = 'file',
  path = '${SIDE_INPUT:-benches/nexmark/side_input.txt}',
  format = 'csv',
  header = 'false'
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
FROM (SELECT auction, bidder, price, dateTime, mod(auction, 10000) AS side_key, PROCTIME() AS p_time FROM bid) AS B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON B.side_key = S.key;
