-- User-defined functions in WebAssembly: each order's customer shouted and its amount plus
-- one, for the orders whose amount plus one is over 13. The modules are in the text format
-- (examples/udfs/*.wat), translated when loaded; a compiled .wasm works the same. Module
-- paths are relative to this file.
--   anduin run examples/udf.sql --var INPUT=data/orders.csv --var OUTPUT=/tmp/udf.csv
CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wat';
CREATE FUNCTION shout(s VARCHAR) RETURNS VARCHAR LANGUAGE wasm AS 'udfs/shout.wat';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out
SELECT ts, shout(customer) AS who, add_one(amount) AS next
FROM orders
WHERE add_one(amount) > 13;
