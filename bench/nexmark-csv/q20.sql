-- -------------------------------------------------------------------------------------------------
-- Nexmark q20 over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/q20.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Do not edit: run make.py again.
--
-- Run:   anduin run bench/nexmark-csv/q20.sql --var DATA=/tmp/nexmark --var OUTPUT=q20.csv
-- Bench: anduin bench nexmark --dir bench/nexmark-csv --query q20 --events N --var DATA=/tmp/nexmark
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

CREATE TABLE nexmark_q20 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  url  VARCHAR,
  bid_dateTime  TIMESTAMP,
  bid_extra  VARCHAR,
  itemName  VARCHAR,
  description  VARCHAR,
  initialBid  BIGINT,
  reserve  BIGINT,
  auction_dateTime  TIMESTAMP,
  expires  TIMESTAMP,
  seller  BIGINT,
  category  BIGINT,
  auction_extra  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q20
SELECT
    auction, bidder, price, channel, url, B.dateTime, B.extra,
    itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
FROM
    bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10;
