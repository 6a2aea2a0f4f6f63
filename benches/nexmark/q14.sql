-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 14: Calculation (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- The bids whose price in euros is between 1 M and 50 M, with the part of the day they came
-- in and the number of `c`s in their `extra`: repeated expressions and a user-defined
-- function.
-- Departures from the original text: nexmark-flink's `count_char` is a Java class
-- (`CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'`); here it is the
-- same function in JavaScript (`CREATE FUNCTION … LANGUAGE javascript`: the number of
-- occurrences of the character `c` in `s`, found by JavaScript's own `indexOf`; a loop over
-- the characters, as the Java class has, runs 2.5× slower in the JavaScript interpreter). The sink's `price` is a DOUBLE (anduin has no
-- DECIMAL, as in q1). `HOUR(dateTime)` is the hour of UTC.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q14.sql.
--
-- Run:   anduin run benches/nexmark/q14.sql --var EVENTS=100000 --var OUTPUT=q14.csv
-- Bench: anduin bench nexmark --query q14 --events 10000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default /dev/null).
-- -------------------------------------------------------------------------------------------------

CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE javascript AS $$
  let n = 0;
  for (let i = s.indexOf(c); i !== -1; i = s.indexOf(c, i + 1)) n++;
  return n;
$$;

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

CREATE TABLE nexmark_q14 (
  auction  BIGINT,
  bidder  BIGINT,
  price  DOUBLE,
  bidTimeType  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR,
  c_counts  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q14
SELECT
    auction,
    bidder,
    0.908 * price AS price,
    CASE
        WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
        WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    dateTime,
    extra,
    count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
