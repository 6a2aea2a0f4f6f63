-- -------------------------------------------------------------------------------------------------
-- Nexmark CEP Query 3: Price drop within an interval (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Per auction and bidder, a price drop of more than 50 within 5 seconds: the WITHIN clause.
-- (nexmark-flink's file calls it "Query 4" in its header.)
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries-cep/q3.sql.
--
-- Run:   anduin run benches/nexmark/cep_q3.sql --var EVENTS=100000 --var OUTPUT=cep_q3.csv
-- Bench: anduin bench nexmark --query cep_q3 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_cep_q3 (
  auction  BIGINT,
  bidder  BIGINT,
  drop_time  TIMESTAMP,
  drop_diff  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_cep_q3
SELECT
    auction, bidder, drop_time, drop_diff
FROM bid
MATCH_RECOGNIZE (
    PARTITION BY auction, bidder
    ORDER BY dateTime
    MEASURES
        C.dateTime AS drop_time,
        A.price - C.price AS drop_diff
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B* C) WITHIN INTERVAL '5' SECOND
    DEFINE
        B AS B.price > A.price - 50,
        C AS C.price < A.price - 50
);
