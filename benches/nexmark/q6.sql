-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 6: Average Selling Price by Seller
-- -------------------------------------------------------------------------------------------------
-- What is the average selling price per seller for their last 10 closed auctions?
-- (nexmark-flink lists it as not supported by Flink either.)
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q6.sql.
--
-- NOT SUPPORTED YET: an OVER window over an updating stream. The OVER window itself (ROWS
-- BETWEEN 10 PRECEDING AND CURRENT ROW, per seller, ordered by the event time) is there: the
-- `over` operator (docs/sql.md, OVER windows). But it reads Q, the winning bid of each
-- auction, a GROUP BY without a window whose results are updated (-U/+U) as higher bids
-- come, and an OVER window takes append-only input only (it writes each row once, when the
-- watermark passes it, and cannot take one back), as in Flink. Q is a GROUP BY over a join,
-- which q4 waits for too. (Q also selects B.dateTime, which it does not group by.)
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
