-- -------------------------------------------------------------------------------------------------
-- Nexmark q8 over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/q8.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Do not edit: run make.py again.
--
-- Run:   anduin run bench/nexmark-csv/q8.sql --var DATA=/tmp/nexmark --var OUTPUT=q8.csv
-- Bench: anduin bench nexmark --dir bench/nexmark-csv --query q8 --events N --var DATA=/tmp/nexmark
-- -------------------------------------------------------------------------------------------------

CREATE TABLE person (
  id  BIGINT,
  name  VARCHAR,
  emailAddress  VARCHAR,
  creditCard  VARCHAR,
  city  VARCHAR,
  state  VARCHAR,
  dateTime  TIMESTAMP,
  extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${DATA}/person.csv',
  format = 'csv',
  header = 'false',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

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
  connector = 'file',
  path = '${DATA}/auction.csv',
  format = 'csv',
  header = 'false',
  event_time = 'dateTime',
  watermark = '4 seconds'
);

CREATE TABLE nexmark_q8 (
  id  BIGINT,
  name  VARCHAR,
  stime  TIMESTAMP
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name,
         window_start AS starttime,
         window_end AS endtime
  FROM TABLE(
             TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller,
         window_start AS starttime,
         window_end AS endtime
  FROM TABLE(
             TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
