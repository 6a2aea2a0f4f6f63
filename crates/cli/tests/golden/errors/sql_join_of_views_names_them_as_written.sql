-- Views joined without an alias are named by their own names (`gx`), as tables are, never by
-- their streams' (`view_gx_select`).
CREATE TABLE x (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE y (ts TIMESTAMP, k BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE VIEW gx AS SELECT k, COUNT(*) AS n FROM x GROUP BY k;
CREATE VIEW gy AS SELECT k, COUNT(*) AS m FROM y GROUP BY k;
CREATE TABLE o WITH (connector = 'file', path = 'o.csv', mode = 'upsert', primary_key = 'k');
INSERT INTO o SELECT gx.k, n, m FROM gx JOIN gy ON gx.k = gz.k;
