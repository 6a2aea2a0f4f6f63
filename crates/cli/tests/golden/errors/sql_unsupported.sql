CREATE TABLE a (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE out1 WITH (connector = 'file', path = 'o1.csv');
CREATE TABLE out2 WITH (connector = 'file', path = 'o2.csv');
CREATE TABLE out3 WITH (connector = 'file', path = 'o3.csv');
INSERT INTO out1 SELECT a.ts, v, w FROM a JOIN b ON a.k < b.k;
INSERT INTO out2 SELECT k, COUNT(*) FROM a GROUP BY k;
INSERT INTO out3 SELECT window_start, k, v, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, k;
DELETE FROM a;
