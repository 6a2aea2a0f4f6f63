-- Q4 of the peer benchmark: per sensor, the average value over sliding windows of 10 s every 1 s.
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
INSERT INTO out
SELECT window_start, sensor, AVG(CAST(value AS DOUBLE)) AS avg
FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor;
