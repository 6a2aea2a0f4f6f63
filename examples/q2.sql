CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
INSERT INTO out
SELECT window_start, sensor, COUNT(*) AS cnt, AVG(CAST(value AS DOUBLE)) AS avg, MAX(value) AS max
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, sensor;
