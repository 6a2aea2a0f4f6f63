-- -------------------------------------------------------------------------------------------------
-- Nexmark q13 over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/q13.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Do not edit: run make.py again.
--
-- Run:   anduin run bench/nexmark-csv/q13.sql --var DATA=/tmp/nexmark --var OUTPUT=q13.csv
-- Bench: anduin bench nexmark --dir bench/nexmark-csv --query q13 --events N --var DATA=/tmp/nexmark
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

-- nexmark-flink's side_input.txt: rows 0 … 9 999, the key and its text.
CREATE TABLE side_input (
  key  BIGINT,
  value  VARCHAR
) WITH (
  connector = 'file',
  path = '${SIDE_INPUT:-benches/nexmark/side_input.txt}',
  format = 'csv',
  header = 'false'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP,
  value  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.value
FROM (SELECT auction, bidder, price, dateTime, mod(auction, 10000) AS side_key, PROCTIME() AS p_time FROM bid) AS B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON B.side_key = S.key;
