-- Q1 of the peer benchmark: the rows with value < 42.
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE low WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO low SELECT ts, sensor, value FROM events WHERE value < 42;
