-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 20: Expand bid with auction (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Every bid on an auction of category 10, with the auction's columns: a regular join (no
-- time condition; every bid and every auction of category 10 kept for as long as the query
-- runs, as in q3), whose filter on the auctions alone (`A.category = 10`) applies before the
-- join. Over these append-only inputs the inner join is append-only. No departure from the
-- original text.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q20.sql.
--
-- Run:   anduin run benches/nexmark/q20.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q20.csv
-- Bench: anduin bench nexmark --query q20 --events 10000000 --rate 1000000   (the sink becomes a discard)
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
  connector = 'nexmark',
  events = '${EVENTS:-10000000}',
  rate = '${RATE:-10000000}',
  seed = '${SEED:-42}',
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
