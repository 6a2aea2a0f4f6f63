-- -------------------------------------------------------------------------------------------------
-- Nexmark CEP Query 1: Longest period of time for average price (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Per auction and bidder, the longest run of bids whose average price stays below 10000, and
-- the bid after it: aggregates in DEFINE and MEASURES, with AFTER MATCH SKIP PAST LAST ROW.
-- nexmark-flink's sink declares avg_price BIGINT (Flink's AVG of a BIGINT is a BIGINT,
-- truncated); anduin's AVG is a DOUBLE, so the select list casts it (CAST truncates too).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries-cep/q1.sql.
--
-- Run:   anduin run benches/nexmark/cep_q1.sql --var EVENTS=100000 --var OUTPUT=cep_q1.csv
-- Bench: anduin bench nexmark --query cep_q1 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_cep_q1 (
  auction  BIGINT,
  bidder  BIGINT,
  start_tstamp  TIMESTAMP,
  end_tstamp  TIMESTAMP,
  avg_price  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_cep_q1
SELECT
    auction, bidder, start_tstamp, end_tstamp, CAST(avg_price AS BIGINT) AS avg_price
FROM bid
MATCH_RECOGNIZE (
    PARTITION BY auction, bidder
    ORDER BY dateTime
    MEASURES
        FIRST(A.dateTime) AS start_tstamp,
        LAST(A.dateTime) AS end_tstamp,
        AVG(A.price) AS avg_price
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A+ B)
    DEFINE
        A AS AVG(A.price) < 10000
);
