CREATE TABLE t (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 't.csv', event_time = 'ts');
CREATE VIEW p AS SELECT *, PROCTIME() AS pt FROM t;
CREATE TABLE o1 WITH (connector = 'file', path = 'o1.csv');
CREATE TABLE o2 WITH (connector = 'file', path = 'o2.csv');
CREATE TABLE o3 WITH (connector = 'file', path = 'o3.csv');
CREATE TABLE o4 WITH (connector = 'file', path = 'o4.csv');
INSERT INTO o1 SELECT window_start, COUNT(*) AS n
FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '5' SECOND)) GROUP BY window_start, window_end;
INSERT INTO o2 SELECT window_start, COUNT(*) AS n
FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '5' SECOND, INTERVAL '1' SECOND)) GROUP BY window_start, window_end;
INSERT INTO o3 SELECT window_start, COUNT(*) AS n
FROM TABLE(CUMULATE(TABLE p, DESCRIPTOR(pt), INTERVAL '1' SECOND, INTERVAL '5' SECOND)) GROUP BY window_start, window_end;
INSERT INTO o4 SELECT * FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) a
  JOIN TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) b ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end;
