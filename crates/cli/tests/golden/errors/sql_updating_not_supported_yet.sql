CREATE TABLE a (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE out1 WITH (connector = 'file', path = 'o1.csv', mode = 'changelog');
CREATE TABLE out2 WITH (connector = 'file', path = 'o2.csv', mode = 'changelog');
CREATE TABLE out3 WITH (connector = 'file', path = 'o3.csv', mode = 'changelog');
CREATE TABLE out4 WITH (connector = 'file', path = 'o4.csv', mode = 'changelog');
CREATE TABLE out5 WITH (connector = 'file', path = 'o5.csv', mode = 'changelog');
-- (a GROUP BY over a join, refused here until Nexmark q4, is supported: out1 stays unused)
INSERT INTO out2 SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM a;
INSERT INTO out3 SELECT k, v FROM (SELECT k, v, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM a) WHERE rn <= 3;
INSERT INTO out4 SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM a) WHERE rn <= v;
INSERT INTO out5 SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM a);
