-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 21: Add channel id (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- The bids of the four hot channels or whose url names a channel id, with the channel's id:
-- CASE WHEN and a regular expression.
-- No departure from the original text: `REGEXP_EXTRACT(s, regex, group)` is Flink's (NULL
-- without a match), in the syntax of Rust's `regex` crate, which reads this regex as Java does.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q21.sql.
--
-- Run:   anduin run benches/nexmark/q21.sql --var EVENTS=100000 --var OUTPUT=q21.csv
-- Bench: anduin bench nexmark --query q21 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q21 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  channel  VARCHAR,
  channel_id  VARCHAR
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q21
SELECT
    auction, bidder, price, channel,
    CASE
        WHEN lower(channel) = 'apple' THEN '0'
        WHEN lower(channel) = 'google' THEN '1'
        WHEN lower(channel) = 'facebook' THEN '2'
        WHEN lower(channel) = 'baidu' THEN '3'
        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
        END
    AS channel_id FROM bid
    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
          lower(channel) in ('apple', 'google', 'facebook', 'baidu');
