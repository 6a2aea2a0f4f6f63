CREATE TABLE a (ts TIMESTAMP, k BIGINT, b STRING) WITH (connector = 'file', path = 'a.csv', event_time = 'ts');
CREATE TABLE b (ts TIMESTAMP, k BIGINT, a BIGINT, b STRING) WITH (connector = 'file', path = 'b.csv', event_time = 'ts');
CREATE TABLE o1 WITH (connector = 'discard');
CREATE TABLE o2 WITH (connector = 'discard');
CREATE TABLE o3 WITH (connector = 'discard');
CREATE TABLE o4 WITH (connector = 'discard');
CREATE TABLE o5 WITH (connector = 'discard');
-- Type errors over a join's columns name them as the query writes them (`b.b`), not as the join's output does (`b_b`).
INSERT INTO o1 SELECT a.k, b.b + 1 AS x FROM a JOIN b ON a.k = b.k;
INSERT INTO o2 SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.b = 1;
INSERT INTO o3 SELECT a.k FROM a JOIN b ON a.k = b.k WHERE a.b = b.b AND b.b < 2;
-- A bound of another type than the time column's: a type error naming the expression, not DataFusion's internal error.
INSERT INTO o4 SELECT a.k FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts AND b.a;
INSERT INTO o5 SELECT a.k FROM a JOIN b ON a.k = b.k WHERE a.ts BETWEEN b.ts AND b.a;
