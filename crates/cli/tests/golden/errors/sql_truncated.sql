CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out
SELECT ts, sensor FROM events
WHERE value >
