CREATE TABLE a (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE counts WITH (connector = 'file', path = 'counts.csv');
CREATE TABLE spread WITH (connector = 'file', path = 'spread.csv', mode = 'changelog');
CREATE TABLE keyed WITH (connector = 'file', path = 'keyed.csv', mode = 'upsert');
INSERT INTO counts SELECT k, COUNT(*) AS n FROM a GROUP BY k;
INSERT INTO keyed SELECT k, MAX(v) AS hi FROM a GROUP BY k;
INSERT INTO spread SELECT k, STDDEV(v) AS sd, SUM(DISTINCT v) AS s FROM a GROUP BY k;
