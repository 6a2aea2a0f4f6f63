CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out
SELECT ts, sensor FROM events WHERE sensor = 3 AND valeu < 42;
