CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH ('connector' = 'kafkaa', 'topic' = 'events');
CREATE TABLE out WITH ('connector' = 'fille', 'path' = 'out.csv');
INSERT INTO out SELECT ts, sensor FROM events WHERE value > 1;
