-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 10: Log to File System (nexmark-flink; not in the original suite)
-- -------------------------------------------------------------------------------------------------
-- Every bid, with the day (`dt`) and the minute (`hm`) of its time, to a filesystem sink
-- partitioned by `dt` and `hm`: a directory per day and minute,
-- `OUTPUT/dt=2015-07-15/hm=00:00/part-….csv`, each file holding the other columns.
-- Departures from the original text: the connector is anduin's 'file' (Flink's 'filesystem'),
-- and the sink's partition-commit and rolling options are left out: a partition's part
-- files are committed with the checkpoint that covers them (at the end of input without
-- checkpoints), with no success file. `DATE_FORMAT` takes Flink's (Java's) pattern letters,
-- the time in UTC.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q10.sql.
--
-- Run:   anduin run benches/nexmark/q10.sql --var EVENTS=100000 --var OUTPUT=q10
-- Bench: anduin bench nexmark --query q10 --events 10000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (a directory;
--        default /dev/null, as the bench's discard).
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

CREATE TABLE nexmark_q10 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP,
  extra  VARCHAR,
  dt  VARCHAR,
  hm  VARCHAR
) PARTITIONED BY (dt, hm) WITH (
  connector = 'file',
  path = '${OUTPUT:-/dev/null}',
  format = 'csv'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, dateTime, extra,
    DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm')
FROM bid;
