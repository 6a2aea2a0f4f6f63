-- The query of `anduin bench nexmark --dump DIR`: the events of the `nexmark` source, written
-- as three CSV files, DIR/person.csv, DIR/auction.csv and DIR/bid.csv, each with every column
-- of its kind in nexmark-flink's order, no header line, timestamps as epoch milliseconds (so
-- that another engine reads the same events: bench/peers/flink_nexmark_all.py,
-- bench/nexmark-csv/). One instance per source, so the rows are in the order of the events and
-- a second dump with the same EVENTS, RATE and SEED is the same bytes.

CREATE TABLE person (
  id  BIGINT, name  VARCHAR, emailAddress  VARCHAR, creditCard  VARCHAR, city  VARCHAR,
  state  VARCHAR, dateTime  TIMESTAMP, extra  VARCHAR
) WITH (
  connector = 'nexmark', events = '${EVENTS}', rate = '${RATE:-10000000}',
  seed = '${SEED:-42}', parallelism = '1'
);

CREATE TABLE auction (
  id  BIGINT, itemName  VARCHAR, description  VARCHAR, initialBid  BIGINT, reserve  BIGINT,
  dateTime  TIMESTAMP, expires  TIMESTAMP, seller  BIGINT, category  BIGINT, extra  VARCHAR
) WITH (
  connector = 'nexmark', events = '${EVENTS}', rate = '${RATE:-10000000}',
  seed = '${SEED:-42}', parallelism = '1'
);

CREATE TABLE bid (
  auction  BIGINT, bidder  BIGINT, price  BIGINT, channel  VARCHAR, url  VARCHAR,
  dateTime  TIMESTAMP, extra  VARCHAR
) WITH (
  connector = 'nexmark', events = '${EVENTS}', rate = '${RATE:-10000000}',
  seed = '${SEED:-42}', parallelism = '1'
);

CREATE TABLE person_csv WITH (connector = 'file', path = '${DIR}/person.csv', format = 'csv', header = 'false');
CREATE TABLE auction_csv WITH (connector = 'file', path = '${DIR}/auction.csv', format = 'csv', header = 'false');
CREATE TABLE bid_csv WITH (connector = 'file', path = '${DIR}/bid.csv', format = 'csv', header = 'false');

INSERT INTO person_csv SELECT * FROM person;
INSERT INTO auction_csv SELECT * FROM auction;
INSERT INTO bid_csv SELECT * FROM bid;
