CREATE TABLE t (p BIGINT, ts BIGINT, v BIGINT, s VARCHAR)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT * FROM t MATCH_RECOGNIZE (
  PARTITION BY p ORDER BY ts
  MEASURES CLASSIFIER() AS c
  PATTERN (A B) SUBSET U = () DEFINE A AS true
);
