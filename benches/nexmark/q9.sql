-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 9: Winning Bids
-- -------------------------------------------------------------------------------------------------
-- Find the winning bid for each auction: its highest bid (the earliest of equal ones)
-- while it is open.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q9.sql.
--
-- NOT SUPPORTED YET: top-N (ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) with rownum <= 1), over the
-- join of q4.
-- `anduin run` and `anduin bench` refuse it with the position of what is missing; see
-- docs/benchmarks.md (Nexmark) for the capability each unsupported query waits for.
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
  format = 'csv'
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
