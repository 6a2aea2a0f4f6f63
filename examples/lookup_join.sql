-- Each order enriched with its customer's rows of a bounded side table, read once (a lookup
-- join, as Flink's `FOR SYSTEM_TIME AS OF`): alice has two rows (each of her orders comes out
-- twice), erin none (her order is kept by the LEFT JOIN, with empty customer columns). The
-- side table is read to its end before any order is joined; orders are not kept.
--   anduin run examples/lookup_join.sql --var ORDERS=data/orders.csv --var CUSTOMERS=data/customers.csv --var OUTPUT=/tmp/enriched.csv
CREATE TABLE orders (ts TIMESTAMP, customer VARCHAR, amount BIGINT)
WITH (connector = 'file', path = '${ORDERS}', event_time = 'ts', watermark = '1 second');
CREATE TABLE customers (customer VARCHAR, tier VARCHAR, region VARCHAR)
WITH (connector = 'file', path = '${CUSTOMERS}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out
SELECT o.ts, o.customer, o.amount, c.tier, c.region
FROM orders AS o
LEFT JOIN customers FOR SYSTEM_TIME AS OF o.ts AS c
  ON o.customer = c.customer;
