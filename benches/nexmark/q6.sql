-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 6: Average Selling Price by Seller
-- -------------------------------------------------------------------------------------------------
-- What is the average selling price per seller for their last 10 closed auctions?
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q6.sql
-- (which nexmark-flink lists as not supported by Flink: its OVER window does not take
-- retractions).
--
-- Q, the winning bid of each auction (its highest price, the earliest of equal ones, while it
-- is open), is a top-N of one row per auction over the regular join of q4 and q9: an updating
-- stream, a new winner replacing the old one (-U/+U) as higher bids come. The OVER window
-- over it (ROWS BETWEEN 10 PRECEDING AND CURRENT ROW, per seller, ordered by the winning
-- bid's time) is the `over` operator over an updating stream: its result is the OVER window
-- of Q as it stands, and each change of Q takes back the averages it alters (of its auction
-- and of the seller's next 10) and emits them anew, as RisingWave does.
-- Departures from the original text: Q is written as nexmark-flink's current text means it
-- (its `ROW_NUMBER() … WHERE rownum <= 1` over the join, with the inner SELECT's columns in
-- scope; the older text's `MAX(B.price) … B.dateTime … GROUP BY A.id, A.seller` selects a
-- column it does not group by), ties of price broken by the earliest bid as in q9; the sink
-- table writes a changelog (`mode = 'changelog'`; Flink's is a blackhole), since the result is
-- updating, and its `avg_price` is a DOUBLE (anduin's AVG of integers) and `seller` a BIGINT.
--
-- Run:   anduin run benches/nexmark/q6.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q6.csv
-- Bench: anduin bench nexmark --query q6 --events 10000000   (the sink becomes a discard)
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
  avg_price  DOUBLE
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'changelog'
);

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.final) OVER
        (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
    SELECT seller, price AS final, bid_dateTime AS dateTime
    FROM (
        SELECT A.id, A.seller, B.price, B.dateTime AS bid_dateTime,
            ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
        FROM auction AS A, bid AS B
        WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
    )
    WHERE rownum <= 1
) AS Q;
