CREATE TABLE t (ts TIMESTAMP, k BIGINT, a BIGINT, b STRING) WITH (connector = 'file', path = 't.csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE o1 WITH (connector = 'file', path = 'o1.csv', mode = 'changelog');
CREATE TABLE o2 WITH (connector = 'file', path = 'o2.csv', mode = 'changelog');
CREATE TABLE o3 WITH (connector = 'file', path = 'o3.csv', mode = 'changelog');
-- A self-join's messages name the query's aliases (`a`, `b`), never the planner's streams.
INSERT INTO o1 SELECT a.k, b.b + 1 AS x FROM t a JOIN t b ON a.k = b.k;
INSERT INTO o2 SELECT a.k FROM t a JOIN t b ON a.k = b.b;
INSERT INTO o3 SELECT a.k, b.b + 1 AS x FROM t a LEFT JOIN t b ON a.k = b.k AND b.a > 1;

