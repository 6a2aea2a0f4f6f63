-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 22: Get URL Directories (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- The first three directories of each bid's url: string splitting.
-- No departure from the original text: `SPLIT_INDEX(s, delimiter, n)` is Flink's (the n-th
-- piece from 0, NULL past the last).
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
    SPLIT_INDEX(url, '/', 3) as dir1,
    SPLIT_INDEX(url, '/', 4) as dir2,
    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
