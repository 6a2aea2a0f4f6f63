-- nexmark-flink's q13.sql as it is (github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries), after
-- its bid table: refused at what anduin lacks (benches/nexmark/q13.sql is what anduin runs, if any).
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR)
WITH (connector = 'nexmark', events = '1000', event_time = 'dateTime', watermark = '4 seconds');
-- -------------------------------------------------------------------------------------------------
-- Query 13: Bounded Side Input Join (Not in original suite)
-- -------------------------------------------------------------------------------------------------
-- Joins a stream to a bounded side input, modeling basic stream enrichment.
-- -------------------------------------------------------------------------------------------------

-- TODO: use the new "filesystem" connector once FLINK-17397 is done
CREATE TABLE side_input (
  key BIGINT,
  `value` VARCHAR
) WITH (
  'connector.type' = 'filesystem',
  'connector.path' = 'file://${FLINK_HOME}/data/side_input.txt',
  'format.type' = 'csv'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  `dateTime`  TIMESTAMP(3),
  `value`  VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.`dateTime`,
    S.`value`
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;