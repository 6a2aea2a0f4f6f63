-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 1: Currency conversion
-- -------------------------------------------------------------------------------------------------
-- Converts every bid price from dollars to euros: a simple transformation.
-- nexmark-flink declares the sink's price DECIMAL(23, 3); anduin has no DECIMAL type, so the
-- price is a DOUBLE here (DataFusion computes `0.908 * price` as one; no cast needed).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q1.sql.
--
-- Run:   anduin run benches/nexmark/q1.sql --var EVENTS=100000 --var OUTPUT=q1.csv
-- Bench: anduin bench nexmark --query q1 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q1 (
  auction  BIGINT,
  bidder  BIGINT,
  price  DOUBLE,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q1
SELECT
    auction,
    bidder,
    0.908 * price AS price, -- convert dollar to euro
    dateTime,
    extra
FROM bid;
