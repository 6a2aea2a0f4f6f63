CREATE TABLE t (ts TIMESTAMP, k VARCHAR, g BIGINT) WITH (connector = 'file', path = 't.jsonl', format = 'jsonl', event_time = 'ts');
CREATE TABLE o1 WITH (connector = 'file', path = 'o1.csv', mode = 'changelog');
CREATE TABLE o2 WITH (connector = 'discard');
CREATE TABLE o3 WITH (connector = 'file', path = 'o3.csv', mode = 'changelog');
CREATE TABLE o4 WITH (connector = 'file', path = 'o4.csv', mode = 'changelog');
-- Flink's LISTAGG, which DataFusion does not have, is refused at its place, saying what to
-- write instead: in a GROUP BY without a window, which aggregates there are; in a window's,
-- STRING_AGG with its separator.
INSERT INTO o1 SELECT g, LISTAGG(k) AS ks FROM t GROUP BY g;
INSERT INTO o2 SELECT window_start, g, listagg(k, ';') AS ks
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, g;
INSERT INTO o3 SELECT g, UPPER(LISTAGG(k)) AS ks FROM t GROUP BY g HAVING COUNT(*) > 1;
INSERT INTO o4 SELECT LISTAGG(k) AS ks FROM t;
