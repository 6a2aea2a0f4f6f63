-- -------------------------------------------------------------------------------------------------
-- Nexmark CEP Query 0: Periods of a constantly decreasing price (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Per auction and bidder, a run of falling prices closed by a rise above the fall before the
-- last: a typical MATCH_RECOGNIZE pattern.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries-cep/q0.sql.
--
-- Run:   anduin run benches/nexmark/cep_q0.sql --var EVENTS=100000 --var OUTPUT=cep_q0.csv
-- Bench: anduin bench nexmark --query cep_q0 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_cep_q0 (
  auction  BIGINT,
  bidder  BIGINT,
  start_tstamp  TIMESTAMP,
  bottom_tstamp  TIMESTAMP,
  end_tstamp  TIMESTAMP
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_cep_q0
SELECT
    auction, bidder, start_tstamp, bottom_tstamp, end_tstamp
FROM bid
MATCH_RECOGNIZE (
    PARTITION BY auction, bidder
    ORDER BY dateTime
    MEASURES
        START_ROW.dateTime AS start_tstamp,
        LAST(PRICE_DOWN.dateTime) AS bottom_tstamp,
        LAST(PRICE_UP.dateTime) AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST PRICE_UP
    PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
    DEFINE
        PRICE_DOWN AS
            (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR
                PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
        PRICE_UP AS
            PRICE_UP.price > LAST(PRICE_DOWN.price, 1)
);
