-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 0: Pass through (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Every bid goes to the sink unchanged: measures the cost of the source generator and of the
-- engine itself. Bids, as they are the most numerous events (46 in 50).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q0.sql.
--
-- Run:   anduin run benches/nexmark/q0.sql --var EVENTS=100000 --var OUTPUT=q0.csv
-- Bench: anduin bench nexmark --query q0 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q0 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;
