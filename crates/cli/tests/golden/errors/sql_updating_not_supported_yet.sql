CREATE TABLE a (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE out1 WITH (connector = 'file', path = 'o1.csv', mode = 'changelog');
CREATE TABLE out2 WITH (connector = 'file', path = 'o2.csv', mode = 'changelog');
CREATE TABLE out3 WITH (connector = 'file', path = 'o3.csv', mode = 'changelog');
INSERT INTO out1 SELECT a.k, COUNT(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.k;
INSERT INTO out2 SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM a;
INSERT INTO out3 SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM a) WHERE rn <= 3;
