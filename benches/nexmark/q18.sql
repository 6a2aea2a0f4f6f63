-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 18: Find last bid (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- What is each bidder's last bid on each auction? A deduplication: `ROW_NUMBER() OVER
-- (PARTITION BY bidder, auction ORDER BY dateTime DESC) … WHERE rank_number <= 1` keeps the
-- latest bid of each (bidder, auction), replacing it (-U/+U) when a later one comes (a `top_n`
-- of one row ordered by the event time: keep last).
-- Departure from the original text: the sink table writes upserts keyed by the bidder and
-- the auction (`mode = 'upsert', primary_key = 'auction, bidder'`; Flink's is a blackhole),
-- since the result is updating.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q18.sql.
--
-- Run:   anduin run benches/nexmark/q18.sql --var EVENTS=100000 --var OUTPUT=q18.csv
-- Bench: anduin bench nexmark --query q18 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q18 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  url  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'auction, bidder'
);

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, dateTime, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
       FROM bid)
 WHERE rank_number <= 1;
