-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 9: Winning Bids
-- -------------------------------------------------------------------------------------------------
-- Find the winning bid for each auction: its highest bid (the earliest of equal ones)
-- while it is open.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q9.sql.
--
-- The join `FROM auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND
-- A.expires` is a regular join (every auction and bid kept: its state grows with them, no
-- time-to-live yet) filtered by the time condition, as in Flink; over these append-only
-- inputs it is append-only. `ROW_NUMBER() … WHERE rownum <= 1` is a top-N of one row per
-- auction (a `top_n` that keeps the best bid so far and replaces it, -U/+U, when a higher one
-- comes). Departure from the original text: the sink table writes upserts keyed by the
-- auction (`mode = 'upsert', primary_key = 'id'`; Flink's is a blackhole), since the result
-- is updating.
--
-- Run:   anduin run benches/nexmark/q9.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q9.csv
-- Bench: anduin bench nexmark --query q9 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q9 (
  id  BIGINT,
  itemName  VARCHAR,
  description  VARCHAR,
  initialBid  BIGINT,
  reserve  BIGINT,
  dateTime  TIMESTAMP,
  expires  TIMESTAMP,
  seller  BIGINT,
  category  BIGINT,
  extra  VARCHAR,
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  bid_dateTime  TIMESTAMP,
  bid_extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'id'
);

INSERT INTO nexmark_q9
SELECT
    id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
    auction, bidder, price, bid_dateTime, bid_extra
FROM (
    SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
        ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1;
