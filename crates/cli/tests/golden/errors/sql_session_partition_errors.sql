CREATE TABLE t (ts TIMESTAMP, k BIGINT, j BIGINT, v BIGINT) WITH (connector = 'file', path = 't.csv', event_time = 'ts');
CREATE TABLE o1 WITH (connector = 'file', path = 'o1.csv');
CREATE TABLE o2 WITH (connector = 'file', path = 'o2.csv');
CREATE TABLE o3 WITH (connector = 'file', path = 'o3.csv');
INSERT INTO o1 SELECT window_start, k, j, COUNT(*) AS n
FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, k, j;
INSERT INTO o2 SELECT window_start, k, COUNT(*) AS n
FROM TABLE(SESSION(TABLE t PARTITION BY k ORDER BY ts, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, k;
INSERT INTO o3 SELECT window_start, k, COUNT(*) AS n
FROM TABLE(HOP(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)) GROUP BY window_start, window_end, k;
