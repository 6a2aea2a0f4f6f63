-- -------------------------------------------------------------------------------------------------
-- Nexmark q14 over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/q14.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Do not edit: run make.py again.
--
-- Run:   anduin run bench/nexmark-csv/q14.sql --var DATA=/tmp/nexmark --var OUTPUT=q14.csv
-- Bench: anduin bench nexmark --dir bench/nexmark-csv --query q14 --events N --var DATA=/tmp/nexmark
-- -------------------------------------------------------------------------------------------------

CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE javascript AS $$
  let n = 0;
  for (const x of s) {
    if (x === c) n++;
  }
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
  connector = 'file',
  path = '${DATA}/bid.csv',
  format = 'csv',
  header = 'false',
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
