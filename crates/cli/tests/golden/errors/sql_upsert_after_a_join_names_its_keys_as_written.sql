-- The row key of a join of two updating inputs, named as the query writes it (`y.k`), never
-- by the join's name for its output column (`y_k`, which only `SELECT *` writes).
CREATE TABLE x (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE y (ts TIMESTAMP, k BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE VIEW gx AS SELECT k, COUNT(*) AS n FROM x GROUP BY k;
CREATE VIEW gy AS SELECT k, COUNT(*) AS m FROM y GROUP BY k;
CREATE TABLE renamed WITH (connector = 'file', path = 'renamed.csv', mode = 'upsert', primary_key = 'a');
CREATE TABLE starred WITH (connector = 'file', path = 'starred.csv', mode = 'upsert', primary_key = 'k');
INSERT INTO renamed SELECT x.k AS a, y.k AS b, n, m FROM gx AS x JOIN gy AS y ON x.k = y.k;
INSERT INTO starred SELECT * FROM gx AS x JOIN gy AS y ON x.k = y.k;
