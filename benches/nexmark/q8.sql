-- -------------------------------------------------------------------------------------------------
-- Nexmark Query 8: Monitor New Users
-- -------------------------------------------------------------------------------------------------
-- Who has entered the system and created an auction in the last period? The people who
-- registered and opened an auction as seller in the same 10-second window: two TUMBLE
-- groupings (each group once) joined on the person and the window.
-- Query text: github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q8.sql.
--
-- Run:   anduin run benches/nexmark/q8.sql --var EVENTS=100000 --var RATE=1000 --var OUTPUT=q8.csv
-- Bench: anduin bench nexmark --query q8 --events 10000000   (the sink becomes a discard)
-- Vars:  EVENTS (all kinds together; default 10000000), RATE (events per second of event
--        time; default 10000000, as nexmark-flink), SEED (default 42), OUTPUT (default /dev/null).
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
