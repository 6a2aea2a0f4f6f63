-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 6: Average Selling Price by Seller
-- -------------------------------------------------------------------------------------------------
-- What is the average selling price per seller for their last 10 closed auctions?
-- (nexmark-flink lists it as not supported by Flink either.)
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q6.sql.
--
-- NOT SUPPORTED YET: an OVER window (ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) over an updating
-- aggregation, and the joins of q4.
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

CREATE TABLE nexmark_q6 (
  seller  BIGINT,
  avg_price  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.final) OVER
        (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
    SELECT MAX(B.price) AS final, A.seller, B.dateTime
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction and B.dateTime between A.dateTime and A.expires
    GROUP BY A.id, A.seller
) AS Q;
