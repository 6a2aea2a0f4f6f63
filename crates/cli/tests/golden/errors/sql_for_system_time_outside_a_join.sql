-- FOR SYSTEM_TIME AS OF is taken only on the right table of a JOIN.
CREATE TABLE customers (customer VARCHAR, tier VARCHAR)
WITH (connector = 'file', path = 'customers.csv');
CREATE TABLE out WITH (connector = 'discard');
INSERT INTO out SELECT c.tier FROM customers FOR SYSTEM_TIME AS OF PROCTIME() AS c;
