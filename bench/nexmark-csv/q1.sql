-- -------------------------------------------------------------------------------------------------
-- Nexmark q1 over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/q1.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Do not edit: run make.py again.
--
-- Run:   anduin run bench/nexmark-csv/q1.sql --var DATA=/tmp/nexmark --var OUTPUT=q1.csv
-- Bench: anduin bench nexmark --dir bench/nexmark-csv --query q1 --events N --var DATA=/tmp/nexmark
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
  connector = 'file',
  path = '${DATA}/bid.csv',
  format = 'csv',
  header = 'false',
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
