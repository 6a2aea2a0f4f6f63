-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 17: Auction Statistics Report (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- How many bids does an auction get each day, and at what prices? Per auction and day: the
-- bids in all and at three levels of price, and the lowest, highest, average and total
-- price: a GROUP BY without a window (an updating aggregate).
-- Departures from the original text: `avg_price` is a DOUBLE (anduin's AVG of integers; Flink's AVG
-- of BIGINT truncates to a BIGINT); the sink table writes upserts keyed by the auction and the day
-- (`mode = 'upsert', primary_key = 'auction, day'`; Flink's is a blackhole), since the result is
-- updating. `DATE_FORMAT` takes Flink's pattern letters (of UTC).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q17.sql.
--
-- Run:   anduin run benches/nexmark/q17.sql --var EVENTS=100000 --var OUTPUT=q17.csv
-- Bench: anduin bench nexmark --query q17 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q17 (
  auction  BIGINT,
  day  VARCHAR,
  total_bids  BIGINT,
  rank1_bids  BIGINT,
  rank2_bids  BIGINT,
  rank3_bids  BIGINT,
  min_price  BIGINT,
  max_price  BIGINT,
  avg_price  DOUBLE,
  sum_price  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'auction, day'
);

INSERT INTO nexmark_q17
SELECT
     auction,
     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
     count(*) AS total_bids,
     count(*) filter (where price < 10000) AS rank1_bids,
     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
     count(*) filter (where price >= 1000000) AS rank3_bids,
     min(price) AS min_price,
     max(price) AS max_price,
     avg(price) AS avg_price,
     sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
