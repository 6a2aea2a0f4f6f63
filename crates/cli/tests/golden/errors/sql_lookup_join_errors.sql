-- What a lookup join (FOR SYSTEM_TIME AS OF) does not take, one refusal per INSERT.
CREATE TABLE orders (ts TIMESTAMP, customer VARCHAR, amount BIGINT)
WITH (connector = 'file', path = 'orders.csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE customers (customer VARCHAR, tier VARCHAR)
WITH (connector = 'file', path = 'customers.csv');
CREATE TABLE endless (customer VARCHAR, tier VARCHAR)
WITH (connector = 'generator');
CREATE TABLE out1 WITH (connector = 'discard');
CREATE TABLE out2 WITH (connector = 'discard');
CREATE TABLE out3 WITH (connector = 'discard');
CREATE TABLE out4 WITH (connector = 'discard');
CREATE TABLE out5 WITH (connector = 'discard');
CREATE TABLE out6 WITH (connector = 'discard');
-- An unbounded side table.
INSERT INTO out1 SELECT o.amount, e.tier
FROM orders AS o JOIN endless FOR SYSTEM_TIME AS OF o.ts AS e ON o.customer = e.customer;
-- A condition that is not an equality of a stream column with a side column.
INSERT INTO out2 SELECT o.amount, c.tier
FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.ts AS c
  ON o.customer = c.customer AND c.tier <> 'gold';
-- A RIGHT join.
INSERT INTO out3 SELECT o.amount, c.tier
FROM orders AS o RIGHT JOIN customers FOR SYSTEM_TIME AS OF o.ts AS c ON o.customer = c.customer;
-- A time that is not the stream's.
INSERT INTO out4 SELECT o.amount, c.tier
FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF c.tier AS c ON o.customer = c.customer;
-- No equal keys.
INSERT INTO out5 SELECT o.amount, c.tier
FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() AS c ON o.amount > 3;
-- The side table is the stream's own table (a self-join is interval, window or regular).
INSERT INTO out6 SELECT a.tier, b.tier AS other
FROM customers AS a JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() AS b ON a.customer = b.customer;
