-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 15: Bidding Statistics Report (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- How many distinct users bid at each level of price, each day? Per day: the bids, the
-- distinct bidders and the distinct auctions, in all and at three levels of price: several
-- COUNT(DISTINCT …) with FILTER (WHERE …) in one GROUP BY without a window (an updating
-- aggregate: each day's counts change, -U/+U, as its bids come).
-- Departure from the original text: the sink table writes upserts keyed by the day (`mode =
-- 'upsert', primary_key = 'day'`; Flink's is a blackhole), since the result is updating.
-- `DATE_FORMAT` takes Flink's pattern letters (the day of UTC); the expression of the GROUP BY is
-- computed before the aggregate, and the select item written as it is reads it.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q15.sql.
--
-- Run:   anduin run benches/nexmark/q15.sql --var EVENTS=100000 --var OUTPUT=q15.csv
-- Bench: anduin bench nexmark --query q15 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q15 (
  day  VARCHAR,
  total_bids  BIGINT,
  rank1_bids  BIGINT,
  rank2_bids  BIGINT,
  rank3_bids  BIGINT,
  total_bidders  BIGINT,
  rank1_bidders  BIGINT,
  rank2_bidders  BIGINT,
  rank3_bidders  BIGINT,
  total_auctions  BIGINT,
  rank1_auctions  BIGINT,
  rank2_auctions  BIGINT,
  rank3_auctions  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'day'
);

INSERT INTO nexmark_q15
SELECT
     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
     count(*) AS total_bids,
     count(*) filter (where price < 10000) AS rank1_bids,
     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
     count(*) filter (where price >= 1000000) AS rank3_bids,
     count(distinct bidder) AS total_bidders,
     count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
     count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
     count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
     count(distinct auction) AS total_auctions,
     count(distinct auction) filter (where price < 10000) AS rank1_auctions,
     count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
     count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
