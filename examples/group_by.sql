-- A GROUP BY without a window: each customer's running totals, an updating result.
-- Every new order changes its customer's row: the output is a changelog (+I, -U, +U, -D),
-- written with `mode = 'changelog'` (or by primary key with `mode = 'upsert'`). A customer
-- is in the result from their second order on, while no order reached 50 (an order of 50 or
-- more deletes their row: -D).
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE totals
WITH (connector = 'file', path = '${OUTPUT}', mode = 'changelog');
INSERT INTO totals
SELECT customer, COUNT(*) AS orders, SUM(amount) AS total, MAX(amount) AS biggest,
       COUNT(DISTINCT amount) AS amounts, SUM(amount) FILTER (WHERE amount >= 20) AS large
FROM orders
GROUP BY customer
HAVING COUNT(*) >= 2 AND MAX(amount) < 50;
