-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 4: Average Price for a Category
-- -------------------------------------------------------------------------------------------------
-- Select the average of the winning bid prices for all auctions in each category: the
-- winning bid of an auction is its highest bid while it is open.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q4.sql.
--
-- `FROM auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND
-- A.expires` is a regular join (every auction and bid kept: its state grows with them, no
-- time-to-live yet) filtered by the time condition, as in Flink; the inner GROUP BY over it
-- is an updating aggregate (an auction's MAX rises, -U/+U, as higher bids come), and the
-- outer GROUP BY takes those changes: each -U takes the auction's old maximum out of its
-- category's AVG, each +U puts the new one in.
-- Departures from the original text: the sink table writes upserts keyed by the category
-- (`mode = 'upsert', primary_key = 'id'`; Flink's is a blackhole), since the result is
-- updating, and its `final` is a DOUBLE: anduin's AVG of integers is a DOUBLE (Flink's AVG of
-- BIGINT truncates to a BIGINT).
--
-- Run:   anduin run benches/nexmark/q4.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q4.csv
-- Bench: anduin bench nexmark --query q4 --events 10000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default /dev/null).
-- -------------------------------------------------------------------------------------------------

CREATE TABLE auction (
  id  BIGINT,
  itemName  VARCHAR,
  description  VARCHAR,
  initialBid  BIGINT,
  reserve  BIGINT,
  dateTime  TIMESTAMP,
  expires  TIMESTAMP,
  seller  BIGINT,
  category  BIGINT,
  extra  VARCHAR
) WITH (
  connector = 'nexmark',
  events = '${EVENTS:-10000000}',
  rate = '${RATE:-10000000}',
  seed = '${SEED:-42}',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

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

CREATE TABLE nexmark_q4 (
  id  BIGINT,
  final  DOUBLE
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'id'
);

INSERT INTO nexmark_q4
SELECT
    Q.category,
    AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
