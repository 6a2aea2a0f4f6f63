-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 15: Bidding Statistics Report (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- How many distinct users bid at each level of price, each day? Per day: the bids, the
-- distinct bidders and the distinct auctions, in all and at three levels of price: several
-- COUNT(DISTINCT …) with FILTER (WHERE …) in one GROUP BY without a window (an updating
-- aggregate: each day's counts change, -U/+U, as its bids come).
-- Departures from the original text: the day, `DATE_FORMAT(dateTime, 'yyyy-MM-dd')` (of UTC), is
-- computed as `day` in a subquery, since anduin groups by columns, not by expressions (`GROUP BY
-- DATE_FORMAT(…)` is refused); the sink table writes upserts keyed by the day (`mode = 'upsert',
-- primary_key = 'day'`; Flink's is a blackhole), since the result is updating.
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
    day,
    count(*) AS total_bids,
    count(*) FILTER (WHERE price < 10000) AS rank1_bids,
    count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
    count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
    count(DISTINCT bidder) AS total_bidders,
    count(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
    count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
    count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
    count(DISTINCT auction) AS total_auctions,
    count(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
    count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
    count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions
FROM (SELECT bidder, auction, price, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day FROM bid)
GROUP BY day;
