-- A top-N partitioned by an expression, into an upsert sink without its row number: the
-- refusal says what the partition is, not the hidden column the planner computed for it.
CREATE TABLE t (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 't.csv');
CREATE TABLE up WITH (connector = 'file', path = 'up.csv', mode = 'upsert', primary_key = 'k');
INSERT INTO up SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k % 4 ORDER BY v DESC) AS rn FROM t) WHERE rn <= 2;
