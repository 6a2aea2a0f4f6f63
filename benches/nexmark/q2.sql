-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 2: Selection
-- -------------------------------------------------------------------------------------------------
-- The bids of every 123rd auction, with their price. (The original suite's Q2 keeps five fixed
-- auction ids, which yields only a few hundred rows over any stream; nexmark-flink takes every
-- 123rd auction instead.)
-- No departure from the original text (`MOD(auction, 123)` is `auction % 123`, the remainder
-- of the sign of the auction id, as Flink's).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q2.sql.
--
-- Run:   anduin run benches/nexmark/q2.sql --var EVENTS=100000 --var OUTPUT=q2.csv
-- Bench: anduin bench nexmark --query q2 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q2 (
  auction  BIGINT,
  price  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
