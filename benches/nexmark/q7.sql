-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 7: Highest Bid
-- -------------------------------------------------------------------------------------------------
-- What are the highest bids per period? The bids whose price is the highest of their 10-second
-- window: a TUMBLE aggregation joined back to the bids, on the price and on time (the WHERE's
-- BETWEEN, which for an inner join is part of the join condition: an interval join).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q7.sql.
--
-- Run:   anduin run benches/nexmark/q7.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q7.csv
-- Bench: anduin bench nexmark --query q7 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q7 (
  auction  BIGINT,
  price  BIGINT,
  bidder  BIGINT,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;
