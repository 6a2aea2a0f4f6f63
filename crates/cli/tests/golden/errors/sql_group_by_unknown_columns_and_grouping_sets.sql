CREATE TABLE t (ts TIMESTAMP, k VARCHAR, g BIGINT, v BIGINT) WITH (connector = 'file', path = 't.jsonl', format = 'jsonl', event_time = 'ts');
CREATE TABLE u (ts TIMESTAMP, k VARCHAR, w BIGINT) WITH (connector = 'file', path = 'u.jsonl', format = 'jsonl');
CREATE TABLE o1 WITH (connector = 'discard');
CREATE TABLE o2 WITH (connector = 'discard');
CREATE TABLE o3 WITH (connector = 'discard');
CREATE TABLE o4 WITH (connector = 'discard');
CREATE TABLE o5 WITH (connector = 'discard');
CREATE TABLE o6 WITH (connector = 'discard');
CREATE TABLE o7 WITH (connector = 'discard');
CREATE TABLE o8 WITH (connector = 'discard');
CREATE TABLE o9 WITH (connector = 'file', path = 'o9.csv', mode = 'changelog');
CREATE TABLE o10 WITH (connector = 'file', path = 'o10.csv', mode = 'changelog');
-- A name that is no column of the FROM, in the select list or HAVING of a GROUP BY, is an
-- unknown column (naming the columns there are), not one "neither grouped by nor aggregated".
INSERT INTO o1 SELECT nosuch, COUNT(*) AS n FROM t GROUP BY k;
INSERT INTO o2 SELECT k, COUNT(*) AS n FROM t GROUP BY k HAVING nosuch > 1;
INSERT INTO o3 SELECT q.nosuch, COUNT(*) AS n FROM (SELECT k, v FROM t) q GROUP BY q.k;
INSERT INTO o4 SELECT window_start, window_end, k, nosuch
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k;
-- ROLLUP, CUBE and GROUPING SETS are refused at their keyword.
INSERT INTO o5 SELECT k, COUNT(*) AS n FROM t GROUP BY ROLLUP(k);
INSERT INTO o6 SELECT k, g, COUNT(*) AS n FROM t GROUP BY CUBE(k, g);
INSERT INTO o7 SELECT k, COUNT(*) AS n FROM t GROUP BY GROUPING SETS ((k), ());
INSERT INTO o8 SELECT t.k, COUNT(*) AS n FROM t JOIN u ON t.k = u.k GROUP BY ROLLUP(t.k);
-- A column of the FROM neither grouped by nor aggregated is still named so.
INSERT INTO o9 SELECT k, v, COUNT(*) AS n FROM t GROUP BY k;
-- An aggregate as a GROUP BY key says why it cannot be one.
INSERT INTO o10 SELECT COUNT(*) AS n FROM t GROUP BY COUNT(*);
