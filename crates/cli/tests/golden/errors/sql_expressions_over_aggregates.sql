CREATE TABLE a (ts TIMESTAMP, k BIGINT, v BIGINT, w BIGINT) WITH (connector = 'file', path = 'a.csv', event_time = 'ts');
CREATE TABLE out1 WITH (connector = 'file', path = 'o1.csv', mode = 'changelog');
CREATE TABLE out2 WITH (connector = 'file', path = 'o2.csv');
CREATE TABLE out3 WITH (connector = 'file', path = 'o3.csv', mode = 'changelog');
CREATE TABLE out4 WITH (connector = 'file', path = 'o4.csv', mode = 'changelog');
CREATE TABLE out5 WITH (connector = 'file', path = 'o5.csv', mode = 'changelog');
CREATE TABLE out6 WITH (connector = 'file', path = 'o6.csv', mode = 'changelog');
INSERT INTO out1 SELECT k, SUM(v) / COUNT(*) + w AS x FROM a GROUP BY k;
INSERT INTO out2 SELECT window_start, k, MAX(v) - MIN(v) AS spread
FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, k HAVING SUM(v) > w;
INSERT INTO out3 SELECT k, n FROM (
  SELECT k, n, ROW_NUMBER() OVER (ORDER BY SUM(v) / COUNT(*) DESC) AS rn FROM (SELECT k, COUNT(*) AS n FROM a GROUP BY k) g
) WHERE rn <= 3;
INSERT INTO out4 SELECT k, COUNT(*) FILTER (WHERE w > MAX(v)) AS n FROM a GROUP BY k;
INSERT INTO out5 SELECT k, COUNT(*) AS n FROM a GROUP BY k HAVING COUNT(*) > 1 AND (SELECT 1) = 1;
INSERT INTO out6 SELECT k, SUM(SUM(v)) AS n FROM a GROUP BY k;
