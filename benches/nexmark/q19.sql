-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 19: Auction TOP-10 Price (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- What are the 10 highest bids of each auction? A top-N: `ROW_NUMBER() OVER (PARTITION BY
-- auction ORDER BY price DESC) … WHERE rank_number <= 10`, with the rank of each bid: a bid
-- that enters an auction's top 10 pushes the ones below it down a rank (-U/+U) and the 10th
-- out (-D).
-- Departure from the original text: the sink table writes a changelog (`mode =
-- 'changelog'`; Flink's is a blackhole), since the result is updating. Bids of one auction
-- at one price are ranked in an order of anduin's choosing (as in Flink, which leaves it
-- undefined too).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q19.sql.
--
-- Run:   anduin run benches/nexmark/q19.sql --var EVENTS=100000 --var OUTPUT=q19.csv
-- Bench: anduin bench nexmark --query q19 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q19 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  url  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR,
  rank_number  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'changelog'
);

INSERT INTO nexmark_q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10;
