-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 22: Get URL Directories (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- The first three directories of each bid's url: string splitting.
-- Departure from the original text: DataFusion has no SPLIT_INDEX. Flink's `SPLIT_INDEX(url,
-- '/', n)` (the n-th piece from 0, NULL past the last) is DataFusion's `split_part(url, '/',
-- n + 1)` (the pieces counted from 1; an empty string past the last). Every generated url
-- has the three directories (`https://www.nexmark.com/a/b/c/item.htm?query=1…`), so the two
-- give the same pieces here.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q22.sql.
--
-- Run:   anduin run benches/nexmark/q22.sql --var EVENTS=100000 --var OUTPUT=q22.csv
-- Bench: anduin bench nexmark --query q22 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q22 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  dir1  VARCHAR,
  dir2  VARCHAR,
  dir3  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q22
SELECT
    auction, bidder, price, channel,
    split_part(url, '/', 4) AS dir1,
    split_part(url, '/', 5) AS dir2,
    split_part(url, '/', 6) AS dir3
FROM bid;
