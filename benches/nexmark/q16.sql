-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 16: Channel Statistics Report (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- q15 per channel: per channel and day, the bids, distinct bidders and distinct auctions in
-- all and at three levels of price, and the latest minute of the day that had a bid: several
-- COUNT(DISTINCT …) with FILTER (WHERE …) for a key of two columns, in a GROUP BY without a
-- window (an updating aggregate).
-- Departure from the original text: the sink table writes upserts keyed by the channel and the day
-- (`mode = 'upsert', primary_key = 'channel, day'`; Flink's is a blackhole), since the result is
-- updating. `DATE_FORMAT` takes Flink's pattern letters (of UTC).
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q16.sql.
--
-- Run:   anduin run benches/nexmark/q16.sql --var EVENTS=100000 --var OUTPUT=q16.csv
-- Bench: anduin bench nexmark --query q16 --events 10000000   (the sink becomes a discard)
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

CREATE TABLE nexmark_q16 (
  channel  VARCHAR,
  day  VARCHAR,
  minute  VARCHAR,
  total_bids  BIGINT,
  rank1_bids  BIGINT,
  rank2_bids  BIGINT,
  rank3_bids  BIGINT,
  total_bidders  BIGINT,
  rank1_bidders  BIGINT,
  rank2_bidders  BIGINT,
  rank3_bidders  BIGINT,
  total_auctions  BIGINT,
  rank1_auctions  BIGINT,
  rank2_auctions  BIGINT,
  rank3_auctions  BIGINT
) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv',
  mode = 'upsert',
  primary_key = 'channel, day'
);

INSERT INTO nexmark_q16
SELECT
    channel,
    DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
    max(DATE_FORMAT(`dateTime`, 'HH:mm')) as `minute`,
    count(*) AS total_bids,
    count(*) filter (where price < 10000) AS rank1_bids,
    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
    count(*) filter (where price >= 1000000) AS rank3_bids,
    count(distinct bidder) AS total_bidders,
    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
    count(distinct auction) AS total_auctions,
    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
