-- Q3 of the peer benchmark: per sensor, a drop (B+), a partial recovery (C) and a rise above
-- the start (D+, closed by the first row E that does not continue it), within 10 seconds of
-- the start. As in Flink, LAST(B.`value`, 1) stands for the previous row's value.
--   anduin run examples/q3.sql --var INPUT=events.csv --var OUTPUT=/tmp/q3.csv
CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
INSERT INTO out
SELECT sensor, a_ts, first_ts, last_ts, b_cnt, d_cnt
FROM ev
MATCH_RECOGNIZE (
  PARTITION BY sensor
  ORDER BY ts
  MEASURES
    A.ts          AS a_ts,
    FIRST(A.ts)   AS first_ts,
    LAST(D.ts)    AS last_ts,
    COUNT(B.ts)   AS b_cnt,
    COUNT(D.ts)   AS d_cnt
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C D+ E) WITHIN INTERVAL '10' SECOND
  DEFINE
    B AS (LAST(B.`value`, 1) IS NULL AND B.`value` < A.`value`)
         OR B.`value` < LAST(B.`value`, 1),
    C AS C.`value` > LAST(B.`value`) AND C.`value` < A.`value`,
    D AS D.`value` > A.`value`
         AND (LAST(D.`value`, 1) IS NULL OR D.`value` > LAST(D.`value`, 1)),
    E AS NOT (E.`value` > A.`value` AND E.`value` > LAST(D.`value`))
);
