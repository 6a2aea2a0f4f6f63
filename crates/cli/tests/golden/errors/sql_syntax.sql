CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv');
INSERT INTO out SELEC ts FROM events;
