CREATE TABLE orders (ts TIMESTAMP, item BIGINT, qty BIGINT) WITH (connector = 'file', path = 'orders.csv', event_time = 'ts');
CREATE TABLE stock (ts TIMESTAMP, item BIGINT, level BIGINT) WITH (connector = 'file', path = 'stock.csv', event_time = 'ts');
CREATE TABLE o1 WITH (connector = 'discard');
CREATE TABLE o2 WITH (connector = 'discard');
CREATE TABLE o3 WITH (connector = 'discard');
CREATE TABLE o4 WITH (connector = 'discard');
CREATE TABLE o5 WITH (connector = 'file', path = 'o5.csv', mode = 'changelog');
-- GROUP BY names the columns of the FROM, not the select list's aliases (as Flink): each is
-- an error at the alias in the GROUP BY, naming the select item it aliases and where.
INSERT INTO o1 SELECT item % 10 AS bucket, COUNT(*) AS n FROM orders GROUP BY bucket;
INSERT INTO o2 SELECT item AS product, SUM(qty) AS total FROM orders GROUP BY product;
INSERT INTO o3 SELECT o.item AS product, MAX(s.level) AS top FROM orders o JOIN stock s ON o.item = s.item GROUP BY product;
INSERT INTO o4 SELECT window_start, qty / 10 AS size, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, size;
-- A column of a self-join neither grouped nor aggregated is named as the query writes it.
INSERT INTO o5 SELECT b.item, COUNT(*) AS n FROM orders a JOIN orders b ON a.item = b.item GROUP BY a.item;
