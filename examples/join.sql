-- Each alert with the readings of its sensor in the two seconds before it (an interval join);
-- an alert without such a reading still appears, with empty reading columns (a LEFT JOIN).
--   anduin run examples/join.sql --var ALERTS=data/alerts.csv --var READINGS=data/readings.csv --var OUTPUT=/tmp/alerts.csv
CREATE TABLE alerts (ts TIMESTAMP, sensor BIGINT, level VARCHAR)
WITH (connector = 'file', path = '${ALERTS}', event_time = 'ts', watermark = '1 second');
CREATE TABLE readings (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${READINGS}', event_time = 'ts', watermark = '1 second');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out
SELECT a.ts AS alert_ts, a.sensor, a.level, r.ts AS reading_ts, r.value
FROM alerts a LEFT JOIN readings r
  ON a.sensor = r.sensor AND r.ts BETWEEN a.ts - INTERVAL '2' SECOND AND a.ts;
