-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 4: Average Price for a Category
-- -------------------------------------------------------------------------------------------------
-- Select the average of the winning bid prices for all auctions in each category: the
-- winning bid of an auction is its highest bid while it is open.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q4.sql.
--
-- NOT SUPPORTED YET: a GROUP BY over a join. The rest is there: `FROM auction A, bid B WHERE
-- A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires` is a regular join (every
-- auction and bid kept) filtered by the time condition, as in Flink, and the GROUP BYs over it
-- are updating aggregations (with retractions).
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

CREATE TABLE nexmark_q4 (
  id  BIGINT,
  final  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
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
