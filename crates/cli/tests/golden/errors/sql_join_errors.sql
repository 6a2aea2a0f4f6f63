CREATE TABLE orders (ts TIMESTAMP, item BIGINT, qty BIGINT) WITH (connector = 'file', path = 'orders.csv', event_time = 'ts');
CREATE TABLE stock (ts TIMESTAMP, item BIGINT, level BIGINT) WITH (connector = 'file', path = 'stock.csv', event_time = 'ts');
CREATE TABLE prices (ts TIMESTAMP, item BIGINT, price DOUBLE) WITH (connector = 'file', path = 'prices.csv', event_time = 'ts');
CREATE TABLE o1 WITH (connector = 'discard');
CREATE TABLE o2 WITH (connector = 'discard');
CREATE TABLE o3 WITH (connector = 'discard');
CREATE TABLE o4 WITH (connector = 'discard');
CREATE TABLE o5 WITH (connector = 'discard');
CREATE TABLE o6 WITH (connector = 'discard');
CREATE TABLE o7 WITH (connector = 'discard');
CREATE TABLE o8 WITH (connector = 'discard');
CREATE TABLE o9 WITH (connector = 'discard');
INSERT INTO o1 SELECT * FROM orders o RIGHT JOIN stock s ON o.item = s.item AND o.ts = s.ts;
INSERT INTO o2 SELECT * FROM orders o JOIN stock s ON o.qty > s.level;
INSERT INTO o3 SELECT * FROM orders o FULL JOIN stock s ON o.item = s.item AND o.ts BETWEEN s.ts AND s.ts + INTERVAL '5' SECOND;
INSERT INTO o4 SELECT o.ts, s.lvl FROM orders o JOIN stock s ON o.item = s.item AND o.ts BETWEEN s.ts AND s.ts + INTERVAL '5' SECOND;
INSERT INTO o5 SELECT ts, qty FROM orders o JOIN stock s ON o.item = s.item AND o.ts BETWEEN s.ts AND s.ts + INTERVAL '5' SECOND;
INSERT INTO o6 SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND)) o
  JOIN TABLE(TUMBLE(TABLE stock, DESCRIPTOR(ts), INTERVAL '1' SECOND)) s ON o.item = s.item;
INSERT INTO o7 SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) o
  JOIN TABLE(TUMBLE(TABLE stock, DESCRIPTOR(ts), INTERVAL '1' SECOND)) s ON o.item = s.item AND o.window_start = s.window_start;
INSERT INTO o8 SELECT * FROM orders o JOIN stock s ON o.item = s.item AND o.ts = s.ts JOIN prices p ON p.item = o.item AND p.ts = o.ts;
INSERT INTO o9 SELECT o.ts, s.level FROM orders o JOIN stock s ON o.item = s.item + 1;
